import os
import socket

import pytest
import torch

from kforge_worker import shared_memory
from kforge_worker.shared_memory import Arena, DescriptorOffer, put_values, view_values

CPU = torch.device("cpu")


def test_values_round_trip_through_an_arena_as_views():
    arena = Arena.create("inputs", CPU, 1 << 16)
    values = [torch.randn(3, 4), torch.arange(5), torch.randn(4, 3).t(), torch.empty(0, 3), 7, None,
              torch.randn(9).bfloat16()]
    described = put_values(arena, values)
    assert all("arena" in meta for meta, v in zip(described, values) if isinstance(v, torch.Tensor))
    viewed = view_values(arena, described)
    for original, back in zip(values, viewed):
        if isinstance(original, torch.Tensor):
            assert back.dtype == original.dtype and torch.equal(back, original)
        else:
            assert back == original
    viewed[0].fill_(0)  # a view: the arena holds what was written through it
    assert torch.equal(view_values(arena, described)[0], torch.zeros(3, 4))


def test_a_rewound_arena_hands_the_same_range_out_again():
    arena = Arena.create("outputs", CPU, 4096)
    first = arena.put(torch.randn(200))
    arena.rewind(0)
    second = arena.put(torch.full((100,), 2.0))
    assert first["offset"] == second["offset"] == 0
    with pytest.raises(MemoryError):
        arena.put(torch.randn(2000))


@pytest.mark.parametrize("meta, problem", [
    ({"arena": "outputs", "offset": 512, "shape": [1 << 20], "dtype": "float32"}, "outside"),
    ({"arena": "outputs", "offset": -512, "shape": [4], "dtype": "float32"}, "malformed"),
    ({"arena": "outputs", "offset": 3, "shape": [4], "dtype": "float32"}, "malformed"),
    ({"arena": "outputs", "offset": 0, "shape": [-4], "dtype": "float32"}, "malformed"),
    ({"arena": "outputs", "offset": 0, "shape": [4], "dtype": "object"}, "dtype"),
])
def test_untrusted_descriptions_are_checked(meta, problem):
    arena = Arena.create("outputs", CPU, 4096)
    with pytest.raises(ValueError, match=problem):
        view_values(arena, [meta])


def test_another_process_sees_and_writes_the_same_memory():
    arena = Arena.create("outputs", CPU, 4096)
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        try:
            ours.close()
            [descriptor] = shared_memory.receive_descriptors(theirs.fileno(), 1)
            mapped = Arena.open("outputs", CPU, descriptor, 4096)
            meta = mapped.put(mapped.view({"offset": 0, "shape": [4], "dtype": "float32"}) * 2)
            os._exit(0 if meta["offset"] == 0 else 1)
        except BaseException:
            os._exit(2)
    theirs.close()
    arena.view({"offset": 0, "shape": [4], "dtype": "float32"}).copy_(torch.arange(4.0))
    shared_memory.send_descriptors(ours.fileno(), [arena.descriptor])
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    assert torch.equal(arena.view({"offset": 0, "shape": [4], "dtype": "float32"}), torch.arange(4.0) * 2)


def test_a_descriptor_offer_serves_once_and_goes(tmp_path):
    arena = Arena.create("inputs", CPU, 4096)
    arena.put(torch.full((8,), 3.0))
    offer = DescriptorOffer(str(tmp_path), [arena.descriptor], timeout_s=10)
    [descriptor] = shared_memory.fetch_descriptors(offer.path, 1)
    mapped = Arena.open("inputs", CPU, descriptor, 4096)
    assert torch.equal(mapped.view({"offset": 0, "shape": [8], "dtype": "float32"}), torch.full((8,), 3.0))
    offer.thread.join(timeout=10)
    assert not os.path.exists(offer.path)
    with pytest.raises(OSError):
        shared_memory.fetch_descriptors(offer.path, 1, timeout_s=1)


def test_a_descriptor_offer_in_a_folder_deeper_than_a_socket_address_may_be(tmp_path):
    # A Unix socket address holds at most 107 bytes; a deep workspace's exchange folder is longer.
    folder = tmp_path / ("d" * 60) / ("e" * 60)
    folder.mkdir(parents=True)
    arena = Arena.create("inputs", CPU, 4096)
    arena.put(torch.full((8,), 5.0))
    offer = DescriptorOffer(str(folder), [arena.descriptor], timeout_s=10)
    assert len(offer.path) > 108
    [descriptor] = shared_memory.fetch_descriptors(offer.path, 1)
    mapped = Arena.open("inputs", CPU, descriptor, 4096)
    assert torch.equal(mapped.view({"offset": 0, "shape": [8], "dtype": "float32"}), torch.full((8,), 5.0))
    offer.thread.join(timeout=10)
    assert not os.path.exists(offer.path)
