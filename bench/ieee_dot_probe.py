"""IEEE fp32 dots (FMA units) on a GPU: tile configurations of a generated model's GEMM and
attention kernels, timed and checked bit for bit against the first configuration and against
cuBLAS (TF32 off). Written for level3/43_MinGPTCausalAttention, whose scaled-up inputs pass only
with IEEE dots: does another configuration run them faster, and do they round as cuBLAS does?

  python3 bench/ieee_dot_probe.py --gemm MODEL_NEW.py --attention MODEL_NEW.py --out DIR

--gemm: a model_new.py generated at the task's size (B=128: its two matmul kernels are launched
here on [65536, 768] inputs); --attention: one whose attention kernel reads [B, 512, 2304] q/k/v
(the batch only sets the grid, so a small-batch generation serves).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os

import torch
import triton
from triton.testing import do_bench

GEMM_CONFIGS = [  # BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, warps, stages
    (64, 128, 32, 8, 4, 4), (128, 128, 32, 8, 8, 3), (128, 128, 16, 8, 8, 3), (128, 128, 8, 8, 8, 3),
    (128, 128, 16, 8, 4, 3), (128, 64, 16, 8, 4, 3), (64, 64, 16, 8, 4, 3), (64, 64, 32, 8, 2, 3),
    (128, 256, 16, 8, 8, 3), (256, 128, 16, 8, 8, 3), (128, 128, 32, 8, 8, 2), (64, 128, 16, 8, 4, 4),
    (64, 256, 16, 8, 8, 3), (128, 128, 64, 8, 8, 2), (32, 128, 32, 8, 4, 4), (128, 32, 32, 8, 4, 4),
]
ATTENTION_CONFIGS = [  # BLOCK_M, BLOCK_N, warps, stages
    (64, 32, 4, 3), (64, 64, 4, 3), (128, 64, 8, 2), (128, 32, 8, 2), (128, 64, 8, 3), (64, 64, 8, 3),
    (128, 128, 8, 2), (32, 64, 4, 3), (64, 32, 8, 3), (128, 32, 4, 2), (32, 32, 4, 3), (64, 128, 8, 2),
]


def load(path: str, precision: str | None = None):
    source = open(path, encoding="utf-8").read()
    if precision:
        source = source.replace('input_precision="ieee"', f'input_precision="{precision}"')
    name = f"probe_{abs(hash((path, precision)))}"
    target = os.path.join("/tmp", name + ".py")
    with open(target, "w", encoding="utf-8") as handle:
        handle.write(source)
    spec = importlib.util.spec_from_file_location(name, target)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kernel_named(module, prefix: str):
    return next(getattr(module, n) for n in dir(module) if n.startswith(prefix) and isinstance(getattr(module, n), triton.JITFunction))


def probe_gemms(path: str, rows: list) -> None:
    torch.manual_seed(0)
    x = torch.rand(65536, 768, device="cuda") * 1000.0
    shapes = {"matmul_addmm_mm": 2304, "matmul_addmm_1_mm": 768}
    for precision in ("ieee", "tf32x3"):
        module = load(path, None if precision == "ieee" else precision)
        for prefix, n in shapes.items():
            kernel = kernel_named(module, prefix)
            w = torch.randn(n, 768, device="cuda") / 768 ** 0.5
            bias = torch.randn(n, device="cuda") * 0.01
            reference = torch.addmm(bias, x, w.t())
            cublas_ms = do_bench(lambda: torch.addmm(bias, x, w.t()), warmup=5, rep=30)
            first = None
            for config in GEMM_CONFIGS if precision == "ieee" else GEMM_CONFIGS[:3]:
                bm, bn, bk, g, warps, stages = config
                out = torch.empty(65536, n, device="cuda")
                grid = (triton.cdiv(65536, bm) * triton.cdiv(n, bn), 1)
                launch = lambda: kernel[grid](x, w, bias, out, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=g,
                                              num_warps=warps, num_stages=stages)
                try:
                    launch()
                    torch.cuda.synchronize()
                    ms = do_bench(launch, warmup=5, rep=30)
                except Exception as error:  # a configuration that does not compile or fit
                    rows.append({"kernel": prefix, "precision": precision, "config": config, "error": str(error)[:200]})
                    continue
                first = out.clone() if first is None else first
                rows.append({"kernel": prefix, "precision": precision, "config": config, "ms": ms, "cublas_ms": cublas_ms,
                             "tflops": 2 * 65536 * n * 768 / ms / 1e9,
                             "max_diff_cublas": (out - reference).abs().max().item(),
                             "equal_cublas_share": (out == reference).float().mean().item(),
                             "equal_first": bool(torch.equal(out, first))})
                print(rows[-1], flush=True)


def probe_attention(path: str, rows: list) -> None:
    module = load(path)
    kernel = kernel_named(module, "attention_")
    torch.manual_seed(0)
    qkv = torch.randn(128, 512, 2304, device="cuda") * 1.0
    q, k, v = qkv.split(768, dim=2)
    view = lambda t: t.view(128, 512, 8, 96).permute(0, 2, 1, 3)
    bias = torch.tril(torch.ones(1024, 1024, device="cuda")).view(1, 1, 1024, 1024)
    first = None
    for config in ATTENTION_CONFIGS:
        bm, bn, warps, stages = config
        out = torch.empty(128, 8, 512, 96, device="cuda")
        grid = (triton.cdiv(512, bm), 1024)
        launch = lambda: kernel[grid](bias, view(q), view(k), view(v), out, BLOCK_M=bm, BLOCK_N=bn, num_warps=warps,
                                      num_stages=stages)
        try:
            launch()
            torch.cuda.synchronize()
            ms = do_bench(launch, warmup=5, rep=30)
        except Exception as error:
            rows.append({"kernel": "attention", "config": config, "error": str(error)[:200]})
            continue
        first = out.clone() if first is None else first
        rows.append({"kernel": "attention", "precision": "ieee", "config": config, "ms": ms,
                     "tflops_causal": 2 * 2 * 1024 * 512 * 512 / 2 * 96 / ms / 1e9,
                     "equal_first": bool(torch.equal(out, first)), "max_diff_first": (out - first).abs().max().item()})
        print(rows[-1], flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gemm", required=True)
    parser.add_argument("--attention", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rows: list = []
    probe_gemms(args.gemm, rows)
    probe_attention(args.attention, rows)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "ieee_dot_probe.json"), "w", encoding="utf-8") as handle:
        json.dump(rows, handle, indent=1)
    print("| kernel | precision | config (BLOCK_M, N, K, GROUP_M, warps, stages) | ms | TFLOP/s | cuBLAS ms | equal to cuBLAS | equal to first |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        if "error" in row:
            print(f"| {row['kernel']} | {row.get('precision', '')} | {row['config']} | failed: {row['error'][:60]} | | | | |")
            continue
        flops = row.get("tflops", row.get("tflops_causal", 0.0))
        print(f"| {row['kernel']} | {row['precision']} | {row['config']} | {row['ms']:.3f} | {flops:.1f} | "
              f"{row.get('cublas_ms', float('nan')):.3f} | {row.get('equal_cublas_share', float('nan')):.3f} | {row['equal_first']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
