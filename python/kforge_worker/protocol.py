"""Length-prefixed JSON messages over pipe file descriptors.

A frame is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON. Tensors never
travel in frames: messages name files instead.
"""
from __future__ import annotations

import json
import math
import os
import struct
from typing import Any

MAX_FRAME_BYTES = 64 << 20


class ProtocolError(Exception):
    """The peer sent something that is not a valid frame."""


def _read_exactly(fd: int, count: int) -> bytes | None:
    chunks: list[bytes] = []
    remaining = count
    while remaining:
        chunk = os.read(fd, remaining)
        if not chunk:
            if remaining == count:
                return None
            raise ProtocolError("pipe closed in the middle of a frame")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_message(fd: int) -> dict[str, Any] | None:
    """The next message, or None when the peer closed the pipe."""
    header = _read_exactly(fd, 4)
    if header is None:
        return None
    (length,) = struct.unpack(">I", header)
    if length > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {length} bytes exceeds the limit")
    body = _read_exactly(fd, length) if length else b""
    if body is None:
        raise ProtocolError("pipe closed before the frame body")
    message = json.loads(body.decode("utf-8"))
    if not isinstance(message, dict):
        raise ProtocolError("a message must be a JSON object")
    return message


def finite_json(value: Any) -> Any:
    """JSON has no NaN or Infinity: non-finite floats travel as null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(item) for item in value]
    return value


def write_message(fd: int, message: dict[str, Any]) -> None:
    body = json.dumps(finite_json(message), allow_nan=False, default=str).encode("utf-8")
    data = struct.pack(">I", len(body)) + body
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
