"""The CUDA C++ kernels of a generated ModelNew on the GPU: for each KfCudaKernel GEMM launch of
one forward (its operands as the forward made them), the kernel's time and cuBLAS's fp32 product on
the same operands (TF32 off), their TFLOP/s, and how many outputs differ from cuBLAS's (each output
of both is one FMA chain along K, so none should); each attention kernel's time and rate alone.

Usage: python3 bench/cuda_gemm_probe.py TASK.py MODEL_NEW.py [--out DIR] [--repeats 20]
Prints a table; writes cuda_gemm_probe.json under --out.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys

import torch

from cuda_kernel_sweep import timed_ms  # bench/ is the script's folder, first on sys.path


def load(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task")
    parser.add_argument("model_new")
    parser.add_argument("--out", default=".")
    parser.add_argument("--repeats", type=int, default=20)
    options = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    task = load("task", options.task)
    generated = load("generated", options.model_new)
    torch.manual_seed(0)
    reference = task.Model(*task.get_init_inputs())
    model = generated.ModelNew(*task.get_init_inputs())
    model.load_state_dict(reference.state_dict())  # ModelNew's own parameters are uninitialized
    model = model.cuda()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in task.get_inputs()]
    launches = []
    for name, value in vars(generated).items():
        if type(value).__name__ == "KfCudaKernel":
            original = value.launch

            def recording(grid, args, name=name, original=original, kernel=value):
                launches.append((name, kernel, grid, args))
                original(grid, args)
            value.launch = recording
    with torch.no_grad():
        model(*inputs)
    torch.cuda.synchronize()
    if not launches:
        print("no CUDA kernel launched")
        return 1

    rows = []
    for name, kernel, grid, args in launches:
        launch = lambda: kernel.compiled_for(args[0].device)(grid=grid, block=(kernel.threads, 1, 1), args=list(args),  # noqa: E731
                                                             shared_mem=kernel.shared)
        if name.startswith("attention"):
            # q, k, v[, bias], out: timed alone; the rate counts every score (a causal mask's skipped
            # blocks included), so it is a lower bound on what the kernel does per second.
            q, k, out = args[0], args[1], args[-1]
            flops = 4.0 * q.numel() / q.shape[-1] * k.shape[-2] * q.shape[-1]
            ours = timed_ms(launch, options.repeats)
            rows.append({"kernel": name, "shape": f"q {tuple(q.shape)} k {tuple(k.shape)}", "ms": ours, "tflops": flops / ours / 1e9,
                         "cublas_ms": None, "cublas_tflops": None, "differing": None, "outputs": out.numel()})
            continue
        a, b, c = args[0], args[1], args[-1]
        bias = args[2] if len(args) == 4 else None
        flops = 2.0 * c.numel() * a.shape[-1]
        ours = timed_ms(launch, options.repeats)
        if bias is None:
            product = lambda: torch.matmul(a, b)  # noqa: E731
        elif a.dim() == 2:
            product = lambda: torch.addmm(bias, a, b)  # noqa: E731  (cuBLASLt's bias epilogue)
        else:
            product = lambda: torch.matmul(a, b) + bias  # noqa: E731
        cublas = timed_ms(product, options.repeats)
        launch()
        expected = product()
        torch.cuda.synchronize()
        differing = int((c != expected).sum().item())
        rows.append({"kernel": name, "shape": f"{tuple(a.shape)} x {tuple(b.shape)}", "ms": ours, "tflops": flops / ours / 1e9,
                     "cublas_ms": cublas, "cublas_tflops": flops / cublas / 1e9, "differing": differing,
                     "max_abs_diff": float((c - expected).abs().max().item()), "outputs": c.numel()})
    os.makedirs(options.out, exist_ok=True)
    with open(os.path.join(options.out, "cuda_gemm_probe.json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "task": options.task, "kernels": rows}, f, indent=1)
    print(f"{'kernel':44} {'operands':34} {'ms':>8} {'TFLOP/s':>8} {'cuBLAS ms':>10} {'TFLOP/s':>8} {'differ':>8}")
    for r in rows:
        theirs = "-" if r["cublas_ms"] is None else f"{r['cublas_ms']:10.3f} {r['cublas_tflops']:8.1f} {r['differing']:8d}"
        print(f"{r['kernel'][:44]:44} {r['shape'][:34]:34} {r['ms']:8.3f} {r['tflops']:8.1f} {theirs:>28}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
