"""The tuner worker's choice among a CUDA kernel's tiles, with NVRTC and CUDA events replaced by a
backend that runs each "tile" as a PyTorch function on the CPU and reports times it is given: the
fastest tile whose output agrees is chosen, tiles that fail or disagree are not, operands take the
kernel's layout (broadcast strides included), and a CPU worker refuses the op with a clear error."""
import math
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from kforge_worker import cuda_tuner  # noqa: E402
from worker_client import WorkerProcess  # noqa: E402


class FakeBackend:
    """A tile's source names what it does: "product" writes a @ b (+ bias) into the last argument,
    "wrong" writes a @ b + 1, "broken" fails to compile, "crash" fails at launch. Times come from
    `ms`, by tile."""

    def __init__(self, ms):
        self.ms, self.compiled, self.launched = ms, [], []

    def compile(self, name, variant):
        self.compiled.append((name, tuple(variant["tile"])))
        if variant["source"] == "broken":
            raise RuntimeError("NVRTC: error: identifier undefined")
        return variant

    def launch(self, kernel, variant, args):
        self.launched.append(tuple(variant["tile"]))
        if kernel["source"] == "crash":
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        product = args[0] @ args[1]
        if len(args) == 4:
            product = product + args[2]
        args[-1].copy_(product + (1 if kernel["source"] == "wrong" else 0))
        self.current = tuple(variant["tile"])

    def times_ms(self, call, calls):
        call()
        return [self.ms[self.current]] * calls

    def synchronize(self):
        pass


def job(sources, bias=False):
    args = [{"shape": [8, 16], "stride": [16, 1]}, {"shape": [16, 4], "stride": [1, 16]}]
    if bias:
        args.append({"shape": [8, 4], "stride": [0, 1]})
    args.append({"shape": [8, 4], "stride": [4, 1]})
    tiles = [[128, 128, 8], [256, 128, 8], [64, 64, 16]]
    return {"kernel": "matmul_g1", "key": "k" * 64, "args": args,
            "variants": [{"tile": tiles[i], "threads": 256, "shared_bytes": 0, "grid": [1, 1, 1], "source": source}
                         for i, source in enumerate(sources)]}


def test_the_fastest_tile_whose_output_agrees_is_chosen():
    backend = FakeBackend({(128, 128, 8): 2.0, (256, 128, 8): 1.2, (64, 64, 16): 3.0})
    answer = cuda_tuner.tune({"jobs": [job(["product", "product", "product"], bias=True)]}, torch.device("cpu"), backend)
    kernel = answer["kernels"][0]
    assert kernel["chosen"] == 1
    assert [row["ms"] for row in kernel["variants"]] == [2.0, 1.2, 3.0]
    assert kernel["key"] == "k" * 64 and "skipped" not in kernel
    assert [name for name, _ in backend.compiled] == ["matmul_g1"] * 3


def test_tiles_that_fail_or_disagree_are_not_chosen():
    backend = FakeBackend({(128, 128, 8): 2.0, (256, 128, 8): 0.5, (64, 64, 16): 0.1})
    answer = cuda_tuner.tune({"jobs": [job(["product", "wrong", "broken"])]}, torch.device("cpu"), backend)
    kernel = answer["kernels"][0]
    assert kernel["chosen"] == 0
    assert kernel["variants"][1]["differs"] == pytest.approx(1.0)
    assert "NVRTC" in kernel["variants"][2]["error"]
    backend = FakeBackend({(128, 128, 8): 2.0, (256, 128, 8): 0.5, (64, 64, 16): 0.1})
    answer = cuda_tuner.tune({"jobs": [job(["crash", "product", "product"])]}, torch.device("cpu"), backend)
    kernel = answer["kernels"][0]
    assert "illegal memory access" in kernel["variants"][0]["error"]
    assert kernel["chosen"] == 2  # the first tile that ran is the others' reference


def test_no_tile_that_runs_chooses_nothing():
    backend = FakeBackend({})
    answer = cuda_tuner.tune({"jobs": [job(["broken", "crash"])]}, torch.device("cpu"), backend)
    assert answer["kernels"][0]["chosen"] is None


def test_operands_take_the_kernels_layout_and_too_large_ones_are_skipped():
    generator = torch.Generator().manual_seed(0)
    broadcast = cuda_tuner.operand([8, 4], [0, 1], torch.device("cpu"), generator)
    assert broadcast.stride() == (0, 1) and torch.equal(broadcast[0], broadcast[7])
    transposed = cuda_tuner.operand([16, 4], [1, 16], torch.device("cpu"), generator)
    assert transposed.stride() == (1, 16) and math.isfinite(float(transposed.sum()))
    huge = job(["product"])
    huge["args"][0] = {"shape": [1 << 20, 1 << 12], "stride": [1 << 12, 1]}
    backend = FakeBackend({})
    answer = cuda_tuner.tune({"jobs": [huge]}, torch.device("cpu"), backend)
    assert "GiB" in answer["kernels"][0]["skipped"] and answer["kernels"][0]["chosen"] is None
    assert backend.compiled == []


def test_a_cpu_tuner_worker_refuses_with_a_clear_error():
    worker = WorkerProcess("tuner")
    try:
        assert worker.call("hello")["role"] == "tuner"
        with pytest.raises(RuntimeError, match="tuned on a GPU"):
            worker.call("tune_cuda", jobs=[job(["product"])])
    finally:
        worker.close()
