import os

import pytest

from kforge_worker.protocol import ProtocolError, read_message, write_message


def test_round_trip_and_end_of_file():
    read_fd, write_fd = os.pipe()
    write_message(write_fd, {"id": 1, "text": "héllo", "value": float("nan")})
    os.close(write_fd)
    assert read_message(read_fd) == {"id": 1, "text": "héllo", "value": None}
    assert read_message(read_fd) is None
    os.close(read_fd)


def test_truncated_frame_is_an_error():
    read_fd, write_fd = os.pipe()
    os.write(write_fd, (100).to_bytes(4, "big") + b'{"a"')
    os.close(write_fd)
    with pytest.raises(ProtocolError):
        read_message(read_fd)
    os.close(read_fd)
