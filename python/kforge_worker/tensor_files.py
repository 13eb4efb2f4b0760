"""Tensors between processes: in a shared arena (shared_memory) when the evaluation has one with
room, else as raw files: one file of contiguous bytes per tensor plus a small JSON description
(shape, dtype). No pickling, so loading cannot run code; device tensors move through one reused
page-locked buffer, so a large tensor costs a DMA and one write (or read). Non-tensor values
(numbers, None) travel in the description. Not thread-safe."""
from __future__ import annotations

import os
from typing import Any, Mapping

import torch

from .shared_memory import Arena, as_bytes, described_nbytes, dtype_name, dtype_named


_staging: list[torch.Tensor] = []  # one pinned host buffer per process, grown on demand


def _staging_buffer(nbytes: int) -> torch.Tensor:
    """Page-locked host memory for device copies: DMA at full speed, no page faults per call."""
    if not _staging or _staging[0].numel() < nbytes:
        _staging.clear()
        _staging.append(torch.empty(nbytes, dtype=torch.uint8, pin_memory=True))
    return _staging[0][:nbytes]


def save_tensor(folder: str, name: str, tensor: torch.Tensor, arena: Arena | None = None) -> dict[str, Any]:
    """The tensor in `arena` when it has room there, else in folder/name."""
    dtype = dtype_name(tensor.dtype)
    if arena is not None and arena.room_for(tensor.numel() * tensor.element_size()):
        return arena.put(tensor)
    path = os.path.join(folder, name)
    raw = as_bytes(tensor)
    if raw.is_cuda:
        staged = _staging_buffer(raw.numel())
        staged.copy_(raw)
        raw = staged
    with open(path, "wb") as handle:
        handle.write(memoryview(raw.numpy()))
    os.chmod(path, 0o644)
    return {"file": name, "shape": list(tensor.shape), "dtype": dtype}


def load_tensor(folder: str, meta: dict[str, Any], device: torch.device | str = "cpu",
                arenas: Mapping[str, Arena] | None = None) -> torch.Tensor:
    """A tensor of this process's own (never a view of shared memory) from its description."""
    if "arena" in meta:
        arena = (arenas or {}).get(str(meta["arena"]))
        if arena is None:
            raise ValueError(f"no shared arena {meta['arena']!r} in this evaluation")
        return arena.view(meta).to(device, copy=True)
    dtype = dtype_named(str(meta["dtype"]))
    shape = [int(s) for s in meta["shape"]]
    nbytes = described_nbytes(shape, dtype)
    if nbytes == 0:
        return torch.empty(shape, dtype=dtype, device=device)
    path = os.path.join(folder, os.path.basename(meta["file"]))
    if os.path.getsize(path) != nbytes:
        raise ValueError(f"{meta['file']} holds {os.path.getsize(path)} bytes; {shape} {meta['dtype']} needs {nbytes}")
    on_device = torch.device(device).type == "cuda"
    host = _staging_buffer(nbytes) if on_device else torch.empty(nbytes, dtype=torch.uint8)
    with open(path, "rb", buffering=0) as handle:
        view, done = memoryview(host.numpy()), 0
        while done < nbytes:
            got = handle.readinto(view[done:])
            if not got:
                raise ValueError(f"{meta['file']} ended early")
            done += got
    raw = host.to(device, copy=True) if on_device else host
    return raw.view(dtype).reshape(shape)


def save_values(folder: str, stem: str, values: list, arena: Arena | None = None) -> list[dict[str, Any]]:
    """A list of tensors and plain values as descriptions: tensors in `arena` while it has room,
    else as files named <stem>_<index>.bin."""
    described = []
    for index, value in enumerate(values):
        if isinstance(value, torch.Tensor):
            described.append(save_tensor(folder, f"{stem}_{index}.bin", value, arena))
        elif value is None or isinstance(value, (bool, int, float)):
            described.append({"value": value})
        else:
            raise ValueError(f"cannot pass a {type(value).__name__} between processes")
    return described


def load_values(folder: str, described: list[dict[str, Any]], device: torch.device | str = "cpu",
                arenas: Mapping[str, Arena] | None = None) -> list:
    return [load_tensor(folder, meta, device, arenas) if "file" in meta or "arena" in meta else meta.get("value")
            for meta in described]
