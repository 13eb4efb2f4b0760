import os
import socket

import pytest
import torch

from kforge_worker import shared_memory
from kforge_worker.shared_memory import Arena, DescriptorOffer
from kforge_worker.tensor_files import load_values, save_values

CPU = torch.device("cpu")


def test_tensors_round_trip_through_an_arena_and_come_back_as_copies(tmp_path):
    arena = Arena.create("inputs", CPU, 1 << 16)
    values = [torch.randn(3, 4), torch.arange(5), torch.randn(4, 3).t(), torch.empty(0, 3), 7, None,
              torch.randn(9).bfloat16()]
    described = save_values(str(tmp_path), "x", values, arena)
    assert all("arena" in meta for meta, v in zip(described, values) if isinstance(v, torch.Tensor))
    assert os.listdir(tmp_path) == []  # nothing went through the file system
    loaded = load_values(str(tmp_path), described, "cpu", {"inputs": arena})
    for original, back in zip(values, loaded):
        if isinstance(original, torch.Tensor):
            assert back.dtype == original.dtype and torch.equal(back, original)
            back.fill_(0) if back.numel() else None  # a copy: the arena keeps its values
        else:
            assert back == original
    again = load_values(str(tmp_path), described, "cpu", {"inputs": arena})
    assert torch.equal(again[0], values[0])


def test_a_full_arena_leaves_the_rest_to_files(tmp_path):
    arena = Arena.create("outputs", CPU, 1024)
    described = save_values(str(tmp_path), "x", [torch.randn(200), torch.randn(200)], arena)
    assert "arena" in described[0] and "file" in described[1]
    loaded = load_values(str(tmp_path), described, "cpu", {"outputs": arena})
    assert [t.shape[0] for t in loaded] == [200, 200]


@pytest.mark.parametrize("meta, problem", [
    ({"arena": "outputs", "offset": 512, "shape": [1 << 20], "dtype": "float32"}, "outside"),
    ({"arena": "outputs", "offset": -512, "shape": [4], "dtype": "float32"}, "malformed"),
    ({"arena": "outputs", "offset": 3, "shape": [4], "dtype": "float32"}, "malformed"),
    ({"arena": "outputs", "offset": 0, "shape": [-4], "dtype": "float32"}, "malformed"),
    ({"arena": "outputs", "offset": 0, "shape": [4], "dtype": "object"}, "dtype"),
    ({"arena": "inputs", "offset": 0, "shape": [4], "dtype": "float32"}, "no shared arena"),
])
def test_untrusted_descriptions_are_checked(tmp_path, meta, problem):
    arena = Arena.create("outputs", CPU, 4096)
    with pytest.raises(ValueError, match=problem):
        load_values(str(tmp_path), [meta], "cpu", {"outputs": arena})


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
