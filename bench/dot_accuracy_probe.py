"""Probe: accuracy and speed of fp32 matmul forms on the GPU against an fp64 reference.
    python3 bench/dot_accuracy_probe.py [--out DIR]
Forms: cuBLAS fp32 (TF32 off); Triton tl.dot with input_precision "tf32x3" accumulating inside the
dot (acc = tl.dot(a, b, acc)) or outside it (acc += tl.dot(a, b): tensor cores sum one BLOCK_K
slice, the running sum is plain fp32 adds); Triton "ieee". Prints the error (max |C - C64| over
max |C64|, and its rms over C64's rms) and the time of each, as a table (JSON with --out)."""
from __future__ import annotations

import argparse
import json
import os

import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BM": 128, "BN": 128, "BK": 32}, num_warps=8, num_stages=3),
                          triton.Config({"BM": 128, "BN": 64, "BK": 32}, num_warps=4, num_stages=4)], key=[])
@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, PRECISION: tl.constexpr,
           OUTSIDE: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    grid_n = tl.cdiv(N, BN)
    m = (pid // grid_n) * BM + tl.arange(0, BM)
    n = (pid % grid_n) * BN + tl.arange(0, BN)
    k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + m[:, None] * K + (k0 + k)[None, :], mask=(m[:, None] < M) & ((k0 + k)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k0 + k)[:, None] * N + n[None, :], mask=((k0 + k)[:, None] < K) & (n[None, :] < N), other=0.0)
        if OUTSIDE:
            acc += tl.dot(a, b, input_precision=PRECISION)
        else:
            acc = tl.dot(a, b, acc, input_precision=PRECISION)
    tl.store(c_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))


def errors(c: torch.Tensor, want: torch.Tensor) -> tuple[float, float]:
    diff = (c.double() - want)
    return float(diff.abs().max() / want.abs().max()), float(diff.pow(2).mean().sqrt() / want.pow(2).mean().sqrt())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    for m, n, k, scale in [(1024, 8192, 8192, 1.0), (1024, 8192, 8192, 1000.0), (4096, 4096, 4096, 1.0)]:
        torch.manual_seed(0)
        a = torch.randn(m, k, device="cuda") * scale
        b = torch.randn(k, n, device="cuda") / k ** 0.5
        want = a.double() @ b.double()
        row = {"shape": f"{m}x{n}x{k} x{scale:g}"}
        c = a @ b
        row["cublas_err"] = errors(c, want)
        row["cublas_ms"] = triton.testing.do_bench(lambda: a @ b)
        for label, precision, outside in [("tf32x3_in", "tf32x3", False), ("tf32x3_out", "tf32x3", True),
                                          ("ieee", "ieee", False)]:
            c = torch.empty(m, n, device="cuda")
            grid = lambda meta: (triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"]),)
            run = lambda: matmul[grid](a, b, c, m, n, k, precision, outside)
            run()
            row[label + "_err"] = errors(c, want)
            row[label + "_ms"] = triton.testing.do_bench(run)
            matmul.cache.clear()
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"\n{'shape':28s} " + " ".join(f"{f:>26s}" for f in ("cublas", "tf32x3_in", "tf32x3_out", "ieee")))
    for r in rows:
        cells = [f"{r[f + '_ms']:7.3f}ms {r[f + '_err'][0]:.1e}/{r[f + '_err'][1]:.1e}" for f in ("cublas", "tf32x3_in", "tf32x3_out", "ieee")]
        print(f"{r['shape']:28s} " + " ".join(f"{c:>26s}" for c in cells))
    if args.out:
        with open(os.path.join(args.out, "dot_accuracy_probe.json"), "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
