"""Measuring a CUDA kernel's tiles on the GPU: the op of kforge's tuner worker.

The compiler offers some of its CUDA C++ kernels in several tiles (a GEMM's 256 x 128, 128 x 128
and 64 x 64 blocks; attention's 128 or 64 queries a block) and runs the one its rules choose until
they are measured. A candidate's own process may not time anything (the evaluator's static rules),
so the tiles are timed here, in a worker of kforge's own that runs nothing but the compiler's
kernels: each kernel on fresh random operands laid out as its launch has them (the last argument
is its output), every tile's output checked against the first tile's (all compute the same thing;
a tile that differs is not chosen), and the tile with the fastest median kept. kforge stores the
choice by the kernel's tuning key and bakes it into the candidate, which the evaluator then judges
like any other: nothing measured here is trusted beyond which tile to write.

A job: {"kernel", "key", "args": [{"shape", "stride"}], "variants": [{"tile", "threads",
"shared_bytes", "grid", "source"}]}. Its answer: {"kernel", "key", "chosen": index or None,
"variants": [{"tile", "ms" | "error" | "differs"}], "skipped": why, when it was not measured}.
"""
from __future__ import annotations

import math
import statistics
import time
from typing import Any, Callable

import torch

# Operands larger than this in all are not allocated beside whatever else holds the GPU: such a
# kernel keeps its rules' tile.
MAX_OPERAND_BYTES = 8 << 30
# Each tile is timed for about this long after two warm-up calls (at least 3 calls, at most 50).
BUDGET_MS = 25.0
MIN_CALLS, MAX_CALLS = 3, 50
# How far another tile's output may stray from the first tile's (attention's tiles change the order
# in which its online softmax rescales; a GEMM's tiles give the same bits).
RTOL, ATOL = 1e-4, 1e-5


class CudaBackend:
    """Compiles a tile with NVRTC as the generated module's KfCudaKernel does, launches it on the
    current stream and times calls with CUDA events."""

    def compile(self, name: str, variant: dict[str, Any]) -> Any:
        kernel = torch.cuda._compile_kernel(variant["source"], name)
        if variant.get("shared_bytes"):
            kernel.set_shared_memory_config(variant["shared_bytes"])
        return kernel

    def launch(self, kernel: Any, variant: dict[str, Any], args: list[torch.Tensor]) -> None:
        grid = tuple(variant["grid"]) + (1,) * (3 - len(variant["grid"]))
        kernel(grid=grid, block=(variant["threads"], 1, 1), args=args, shared_mem=variant.get("shared_bytes", 0))

    def times_ms(self, call: Callable[[], None], calls: int) -> list[float]:
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(calls)]
        for start, end in events:
            start.record()
            call()
            end.record()
        torch.cuda.synchronize()
        return [start.elapsed_time(end) for start, end in events]

    def synchronize(self) -> None:
        torch.cuda.synchronize()


def extent(shape: list[int], stride: list[int]) -> int:
    """The elements of storage a tensor of this layout spans (at least 1)."""
    if not all(size > 0 for size in shape):
        return 1
    return 1 + sum((size - 1) * step for size, step in zip(shape, stride))


def operand(shape: list[int], stride: list[int], device: torch.device, generator: torch.Generator) -> torch.Tensor:
    """An fp32 tensor of this layout over fresh standard-normal storage (a stride of 0 broadcasts)."""
    storage = torch.randn(extent(shape, stride), generator=generator, device=device)
    return storage.as_strided(shape, stride)


def operand_bytes(job: dict[str, Any]) -> int:
    return sum(4 * extent(arg["shape"], arg["stride"]) for arg in job["args"])


def tune_one(job: dict[str, Any], device: torch.device, backend: Any) -> dict[str, Any]:
    answer: dict[str, Any] = {"kernel": job["kernel"], "key": job["key"], "chosen": None, "variants": []}
    size = operand_bytes(job)
    if size > MAX_OPERAND_BYTES:
        answer["skipped"] = f"operands of {size / 2**30:.1f} GiB (at most {MAX_OPERAND_BYTES / 2**30:.0f})"
        return answer
    generator = torch.Generator(device=device)
    generator.manual_seed(0)
    args = [operand(a["shape"], a["stride"], device, generator) for a in job["args"]]
    output = args[-1]
    expected: torch.Tensor | None = None
    best = math.inf
    for index, variant in enumerate(job["variants"]):
        row: dict[str, Any] = {"tile": variant["tile"]}
        answer["variants"].append(row)
        try:
            kernel = backend.compile(job["kernel"], variant)
            output.fill_(math.nan)
            launch = lambda: backend.launch(kernel, variant, args)  # noqa: E731
            launch()
            backend.synchronize()
            if expected is None:
                expected = output.clone()
            elif not torch.allclose(output, expected, rtol=RTOL, atol=ATOL, equal_nan=True):
                row["differs"] = float((output - expected).abs().nan_to_num(math.inf).max())
                continue
            estimate = statistics.median(backend.times_ms(launch, 2))
            calls = int(min(MAX_CALLS, max(MIN_CALLS, BUDGET_MS / max(estimate, 1e-3))))
            row["ms"] = statistics.median(backend.times_ms(launch, calls))
        except Exception as error:  # a tile that fails to build or run is not chosen; the others may be
            row["error"] = f"{type(error).__name__}: {error}"[:300]
            continue
        if row["ms"] < best:
            best, answer["chosen"] = row["ms"], index
    return answer


def tune(request: dict[str, Any], device: torch.device, backend: Any = None) -> dict[str, Any]:
    """The answer to {"jobs": [...]}: one entry per job, in order."""
    if device.type != "cuda" and backend is None:
        raise ValueError("CUDA kernels are tuned on a GPU; this worker's device is " + str(device))
    backend = backend or CudaBackend()
    started = time.perf_counter()
    kernels = []
    for job in request.get("jobs", []):
        kernels.append(tune_one(job, device, backend))
        if device.type == "cuda":
            torch.cuda.empty_cache()  # the operands' memory goes back before the next task runs
    return {"kernels": kernels, "seconds": time.perf_counter() - started}
