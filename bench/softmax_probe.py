#!/usr/bin/env python3
"""Times ModelNew variants of one task side by side on the GPU, interleaved, on one input (the
median of triton.testing.do_bench's runs per round, rounds alternating between the variants).

  python3 bench/softmax_probe.py TASK.py VARIANT.py...   (each VARIANT defines ModelNew)"""
from __future__ import annotations

import importlib.util
import statistics
import sys

import torch
import triton.testing


def load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    task = load(sys.argv[1], "task")
    torch.manual_seed(0)
    inputs = [x.cuda() for x in task.get_inputs()]
    reference = task.Model(*task.get_init_inputs()).cuda()
    expected = reference(*inputs)
    variants = {path: load(path, f"variant{i}").ModelNew(*task.get_init_inputs()).cuda() for i, path in enumerate(sys.argv[2:])}
    variants["eager"] = reference
    times: dict[str, list[float]] = {name: [] for name in variants}
    for name, model in variants.items():
        out = model(*inputs)
        err = (out - expected).abs().max().item()
        print(f"{name}: max abs error {err:.3g}")
    for _ in range(5):
        for name, model in variants.items():
            times[name].append(triton.testing.do_bench(lambda: model(*inputs), warmup=50, rep=300))
    for name, samples in times.items():
        print(f"{statistics.median(samples):8.4f} ms  {name}")


if __name__ == "__main__":
    main()
