"""The CUDA kernels' tiles side by side on the GPU: every source that
tests/compiler/codegen/cuda_kernel_variants wrote (GEMMs on the product shapes of KernelBench's
attention networks and a square one; attention on minGPT's and the vision attention's shapes; a
set of tiles each), and the CUDA kernels of generated ModelNew files (--model-new, "as
generated"), timed on random operands: a GEMM against cuBLAS's fp32 product (TF32 off), counting
the outputs that differ from cuBLAS's (each output of both is one FMA chain along K, so none
should); an attention against PyTorch's fp32 scaled_dot_product_attention, with the largest
difference. Each row gives the kernel's registers a thread.

Usage: python3 bench/cuda_kernel_sweep.py VARIANTS.json [--model-new FILE ...] [--out DIR] [--only TEXT]
Prints a table; writes cuda_kernel_sweep.json under --out.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import sys

import torch

CU_FUNC_ATTRIBUTE_NUM_REGS = 4


def timed_ms(fn, repeats: int) -> float:
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(repeats):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def registers(kernel) -> int:
    value = ctypes.c_int()
    torch.cuda._utils._get_gpu_runtime_library().cuFuncGetAttribute(ctypes.byref(value), CU_FUNC_ATTRIBUTE_NUM_REGS, kernel.func)
    return value.value


def generated_variants(path: str) -> tuple[list[dict], list[dict]]:
    """The GEMM and attention kernels of a generated ModelNew, their shapes and tiles read from
    their comments."""
    text = open(path).read()
    gemms, attentions = [], []
    for match in re.finditer(r'KfCudaKernel\("(\w+)", (\d+), r"""(.*?)"""(?:, shared=(\d+))?\)', text, re.S):
        name, threads, source, shared = match.group(1), int(match.group(2)), match.group(3), int(match.group(4) or 0)
        head = source.split("\n")[1]
        dims = re.search(r"// (\d+) x (\d+) x (\d+) \(M x N x K\).*?a (\d+) x (\d+) tile", source)
        if name.startswith("matmul_") and dims and "batches" not in head:
            m, n, k, bm, bn = (int(x) for x in dims.groups())
            gemms.append({"shape": None, "m": m, "n": n, "k": k, "linear": "bias" in head, "tile": "as generated",
                          "threads": threads, "grid": [(n + bn - 1) // bn, (m + bm - 1) // bm, 1], "name": name, "source": source})
        problem = re.search(r"for (\d+) x (\d+) heads of (\d+) queries and \d+ keys, head dims (\d+)", source)
        block = re.search(r"constexpr int BM = (\d+)", source)
        if name.startswith("attention_") and problem and block:
            batch, heads, t, d = (int(x) for x in problem.groups())
            attentions.append({"shape": None, "batch": batch, "heads": heads, "t": t, "d": d, "causal_mask": " + bias) @ v for " in source,
                               "tile": "as generated", "threads": threads,
                               "grid": [(t + int(block.group(1)) - 1) // int(block.group(1)), batch * heads, 1], "shared": shared,
                               "name": name, "source": source})
    return gemms, attentions


def attention_operands(v: dict):
    """q, k, v, [mask bias, its 32 x 32 tiles' flags,] o laid out as the variant's kernel reads them, and
    SDPA's output in o's layout."""
    torch.manual_seed(0)
    if v["causal_mask"]:  # minGPT: views of one projection, a [T, T] mask of -inf above the diagonal
        b, h, t, d = v["batch"], v["heads"], v["t"], v["d"]
        qkv = torch.randn(b, t, 3 * h * d, device="cuda")
        q, k, val = (x.view(b, t, h, d).transpose(1, 2) for x in qkv.split(h * d, dim=2))
        bias = torch.full((t, t), float("-inf"), device="cuda").triu(1)
        tiles = (bias.view(t // 32, 32, t // 32, 32) != float("-inf")).any(dim=3).any(dim=1).float()  # as the bias kernel writes them
        out = torch.full((b, t, h * d), float("nan"), device="cuda")
        expected = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, val, is_causal=True).transpose(1, 2).reshape(b, t, h * d)  # noqa: E731
        return [q, k, val, bias, tiles, out], expected
    # The vision attention: [T, problems, D]
    problems, t, d = v["batch"] * v["heads"], v["t"], v["d"]
    q, k, val = (torch.randn(t, problems, d, device="cuda") for _ in range(3))
    out = torch.full((t, problems, d), float("nan"), device="cuda")
    expected = lambda: torch.nn.functional.scaled_dot_product_attention(q.transpose(0, 1), k.transpose(0, 1), val.transpose(0, 1)).transpose(0, 1)  # noqa: E731
    return [q, k, val, out], expected


def sweep_attention(variants: list[dict], repeats: int) -> list[dict]:
    rows, operands = [], {}
    for v in variants:
        key = v["shape"]
        if key not in operands:
            args, expected = attention_operands(v)
            operands[key] = (args, expected(), timed_ms(expected, repeats))
        args, expected, sdpa_ms = operands[key]
        flops = 4.0 * v["batch"] * v["heads"] * v["t"] * v["t"] * v["d"] / (2 if v["causal_mask"] else 1)
        row = {"shape": v["shape"], "tile": v["tile"], "threads": v["threads"], "cublas_ms": sdpa_ms, "cublas_tflops": flops / sdpa_ms / 1e9}
        try:
            kernel = torch.cuda._compile_kernel(v["source"], v["name"])
            if v["shared"]:
                kernel.set_shared_memory_config(v["shared"])
            args[-1].fill_(float("nan"))
            launch = lambda: kernel(grid=tuple(v["grid"]), block=(v["threads"], 1, 1), args=args, shared_mem=v["shared"])  # noqa: E731
            ms = timed_ms(launch, repeats)
            torch.cuda.synchronize()
            row.update(ms=ms, tflops=flops / ms / 1e9, registers=registers(kernel), differing=int(args[-1].isnan().sum().item()),
                       max_abs_diff=float((args[-1] - expected).abs().max().item()))
        except Exception as error:  # a tile that fails to build or launch is a row, not the end
            row.update(error=f"{type(error).__name__}: {error}"[:300])
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def print_table(first: str, versus: str, wrong: str, rows: list[dict]) -> None:
    """One line a variant: its registers, time, rate, speed against the library's, the outputs
    that are wrong (`wrong` names how they are counted) and the largest difference."""
    print(f"\n{first:16} {'tile':30} {'regs':>5} {'ms':>8} {'TFLOP/s':>8} {versus:>9} {wrong:>8} {'max diff':>9}")
    for r in rows:
        if "error" in r:
            print(f"{r['shape'][:16]:16} {r['tile'][:30]:30} {r['error'][:60]}")
            continue
        print(f"{r['shape'][:16]:16} {r['tile'][:30]:30} {r['registers']:5d} {r['ms']:8.3f} {r['tflops']:8.1f} "
              f"{r['cublas_ms'] / r['ms']:9.2f} {r['differing']:8d} {r['max_abs_diff']:9.2e}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("variants")
    parser.add_argument("--model-new", action="append", default=[])
    parser.add_argument("--out", default=".")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--only", help='the variants whose "shape tile" contains this (e.g. for a profiler)')
    options = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    everything = json.load(open(options.variants))
    variants, attentions = everything["gemm"], everything["attention"]
    shapes = {(v["m"], v["n"], v["k"], v["linear"]): v["shape"] for v in variants}
    problems = {(v["batch"], v["heads"], v["t"], v["d"]): v for v in attentions}
    for path in options.model_new:
        gemms, generated = generated_variants(path)
        for v in gemms:
            v["shape"] = shapes.get((v["m"], v["n"], v["k"], v["linear"]), f"{v['m']}x{v['n']}x{v['k']}")
            variants.append(v)
        for v in generated:
            like = problems.get((v["batch"], v["heads"], v["t"], v["d"]))
            if like:  # only where its operands' layout is the variants' (the same network's)
                attentions.append({**like, **{key: v[key] for key in ("tile", "threads", "grid", "shared", "name", "source")}})
    if options.only:
        variants = [v for v in variants if options.only in f"{v['shape']} {v['tile']}"]
        attentions = [v for v in attentions if options.only in f"{v['shape']} {v['tile']}"]
    attention_rows = sweep_attention(attentions, options.repeats)

    rows, operands = [], {}
    for v in variants:
        key = (v["m"], v["n"], v["k"], v["linear"])
        if key not in operands:
            torch.manual_seed(0)
            m, n, k = key[:3]
            a = torch.randn(m, k, device="cuda")
            if v["linear"]:
                weight, bias = torch.randn(n, k, device="cuda"), torch.randn(n, device="cuda")
                b, args = weight.t(), [a, weight, bias]
                reference = lambda a=a, b=b, bias=bias: torch.addmm(bias, a, b)  # noqa: E731
            else:
                b = torch.randn(k, n, device="cuda")
                args = [a, b]
                reference = lambda a=a, b=b: torch.matmul(a, b)  # noqa: E731
            expected = reference()
            operands[key] = (args, reference, expected, timed_ms(reference, options.repeats))
        args, reference, expected, cublas_ms = operands[key]
        flops = 2.0 * v["m"] * v["n"] * v["k"]
        row = {"shape": v["shape"], "tile": v["tile"], "threads": v["threads"], "cublas_ms": cublas_ms,
               "cublas_tflops": flops / cublas_ms / 1e9}
        try:
            kernel = torch.cuda._compile_kernel(v["source"], v["name"])
            out = torch.full_like(expected, float("nan"))
            launch = lambda: kernel(grid=tuple(v["grid"]), block=(v["threads"], 1, 1), args=args + [out])  # noqa: E731
            ms = timed_ms(launch, options.repeats)
            torch.cuda.synchronize()
            row.update(ms=ms, tflops=flops / ms / 1e9, registers=registers(kernel), differing=int((out != expected).sum().item()),
                       max_abs_diff=float((out - expected).abs().max().item()))
        except Exception as error:  # a tile that fails to build or launch is a row, not the end
            row.update(error=f"{type(error).__name__}: {error}"[:300])
        rows.append(row)
        print(json.dumps(row), flush=True)

    os.makedirs(options.out, exist_ok=True)
    with open(os.path.join(options.out, "cuda_kernel_sweep.json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "gemm": rows, "attention": attention_rows}, f, indent=1)
    print_table("shape", "of cuBLAS", "differ", rows)
    print_table("attention", "of SDPA", "NaNs", attention_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
