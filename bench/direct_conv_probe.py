"""Probe: convolutions with few input channels (K = channels x taps <= 256) on the GPU, at KernelBench's
level-2 shapes, where the implicit GEMM ran at 0.5-0.8x of eager.
    python3 bench/direct_conv_probe.py [--out DIR]
For each convolution it times torch (eager, cuDNN, TF32 off) and these Triton forms, each autotuned:
  gemm       the compiler's implicit GEMM for few channels: one flat K loop over channels x taps, the
             input gathered in place (NCHW), tl.dot in tf32x3
  direct_mn  one fp32 FMA per channel and tap (both unrolled), accumulator [positions, channels]
  direct_nm  the same, accumulator [channels, positions] (positions along the lanes, as stored)
Checks every form against torch in fp64 and prints a table (and JSON with --out)."""
from __future__ import annotations

import argparse
import json
import math
import os

import torch
import triton
import triton.language as tl

GEMM_CONFIGS = [
    triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk}, num_warps=w, num_stages=s)
    for bm, bn, bk, w, s in [
        (128, 128, 32, 8, 3), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (64, 64, 32, 4, 4), (32, 32, 32, 4, 2),
        (128, 64, 16, 4, 3), (256, 64, 16, 8, 3), (64, 32, 16, 4, 4),
    ]
]
DIRECT_CONFIGS = [
    triton.Config({"BLOCK_M": bm, "SPLIT_N": sn}, num_warps=w, num_stages=1)
    for bm, sn, w in [(64, 1, 4), (128, 1, 4), (256, 1, 8), (128, 1, 8), (256, 2, 4), (512, 2, 8)]
]


@triton.jit
def positions(m, OD: tl.constexpr, OH: tl.constexpr, OW: tl.constexpr):
    ow = m % OW
    rem = m // OW
    oh = rem % OH
    rem = rem // OH
    return rem // OD, rem % OD, oh, ow


@triton.autotune(configs=GEMM_CONFIGS, key=[])
@triton.jit
def gemm_flat_k(x_ptr, w_ptr, y_ptr, IMG: tl.constexpr, C: tl.constexpr, D: tl.constexpr, H: tl.constexpr,
                W: tl.constexpr, CO: tl.constexpr, OD: tl.constexpr, OH: tl.constexpr, OW: tl.constexpr,
                KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, PAD: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    M: tl.constexpr = IMG * OD * OH * OW
    T: tl.constexpr = KD * KH * KW
    K: tl.constexpr = C * T
    m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    img, od, oh, ow = positions(m, OD, OH, OW)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        tw = k % KW
        th = (k // KW) % KH
        td = (k // (KW * KH)) % KD
        ci = k // T
        idd = od[:, None] - PAD * (KD > 1) + td[None, :]
        ih = oh[:, None] - PAD + th[None, :]
        iw = ow[:, None] - PAD + tw[None, :]
        valid = (m[:, None] < M) & (k[None, :] < K) & (idd >= 0) & (idd < D) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        a = tl.load(x_ptr + img[:, None] * (C * D * H * W) + ci[None, :] * (D * H * W) + (idd * H + ih) * W + iw,
                    mask=valid, other=0.0)
        b = tl.load(w_ptr + n[None, :] * K + k[:, None], mask=(k[:, None] < K) & (n[None, :] < CO), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="tf32x3")
    P: tl.constexpr = OD * OH * OW
    pos = (od * OH + oh) * OW + ow
    tl.store(y_ptr + img[:, None] * (CO * P) + n[None, :] * P + pos[:, None], acc, mask=(m[:, None] < M) & (n[None, :] < CO))


@triton.autotune(configs=DIRECT_CONFIGS, key=[])
@triton.jit
def direct(x_ptr, w_ptr, y_ptr, IMG: tl.constexpr, C: tl.constexpr, D: tl.constexpr, H: tl.constexpr,
           W: tl.constexpr, CO: tl.constexpr, OD: tl.constexpr, OH: tl.constexpr, OW: tl.constexpr,
           KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, PAD: tl.constexpr, CO_POW2: tl.constexpr,
           CHANNELS_FIRST: tl.constexpr, BLOCK_M: tl.constexpr, SPLIT_N: tl.constexpr):
    M: tl.constexpr = IMG * OD * OH * OW
    T: tl.constexpr = KD * KH * KW
    BLOCK_N: tl.constexpr = CO_POW2 // SPLIT_N
    m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    img, od, oh, ow = positions(m, OD, OH, OW)
    if CHANNELS_FIRST:
        acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for td in tl.static_range(KD):
        for th in tl.static_range(KH):
            for tw in tl.static_range(KW):
                idd = od - PAD * (KD > 1) + td
                ih = oh - PAD + th
                iw = ow - PAD + tw
                valid = (m < M) & (idd >= 0) & (idd < D) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                x_tap = x_ptr + img * (C * D * H * W) + (idd * H + ih) * W + iw
                w_tap = w_ptr + n * (C * T) + (td * KH + th) * KW + tw
                for ci in tl.static_range(C):
                    xv = tl.load(x_tap + ci * (D * H * W), mask=valid, other=0.0)
                    wv = tl.load(w_tap + ci * T, mask=n < CO, other=0.0)
                    if CHANNELS_FIRST:
                        acc += wv[:, None] * xv[None, :]
                    else:
                        acc += xv[:, None] * wv[None, :]
    P: tl.constexpr = OD * OH * OW
    pos = (od * OH + oh) * OW + ow
    if CHANNELS_FIRST:
        tl.store(y_ptr + img[None, :] * (CO * P) + n[:, None] * P + pos[None, :], acc,
                 mask=(m[None, :] < M) & (n[:, None] < CO))
    else:
        tl.store(y_ptr + img[:, None] * (CO * P) + n[None, :] * P + pos[:, None], acc,
                 mask=(m[:, None] < M) & (n[None, :] < CO))


def dims5(x, w, pad):
    spatial = x.dim() - 2
    ones = [1] * (3 - spatial)
    d, h, wd = ones + list(x.shape[2:])
    kd, kh, kw = ones + list(w.shape[2:])
    pads = [0] * (3 - spatial) + [pad] * spatial
    od, oh, ow = [s + 2 * p - k + 1 for s, p, k in zip((d, h, wd), pads, (kd, kh, kw))]
    return (d, h, wd), (kd, kh, kw), (od, oh, ow)


def form(name, x, w, pad):
    img, c = x.shape[:2]
    co = w.shape[0]
    (d, h, wd), (kd, kh, kw), (od, oh, ow) = dims5(x, w, pad)
    y = torch.empty((img, co) + tuple([od, oh, ow][5 - x.dim():]), device=x.device, dtype=x.dtype)
    m = img * od * oh * ow
    args = (x, w, y, img, c, d, h, wd, co, od, oh, ow, kd, kh, kw, pad)
    if name == "gemm":
        def run():
            gemm_flat_k[lambda meta: (triton.cdiv(m, meta["BLOCK_M"]), triton.cdiv(co, meta["BLOCK_N"]))](*args)
            return y
        return run, gemm_flat_k
    channels_first = 1 if name == "direct_nm" else 0

    def run():
        direct[lambda meta: (triton.cdiv(m, meta["BLOCK_M"]), meta["SPLIT_N"])](*args, triton.next_power_of_2(co), channels_first)
        return y
    return run, direct


def time_ms(fn) -> float:
    return triton.testing.do_bench(fn, warmup=25, rep=100)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    dev = "cuda"
    cases = [
        ("level2/87 conv2d 128x8x256x256 k3 ->64", (128, 8, 256, 256), (64, 8, 3, 3)),
        ("level2/71 conv2d 128x8x128x128 k3 ->64", (128, 8, 128, 128), (64, 8, 3, 3)),
        ("level2/90 conv3d 128x8x16x64x64 k3 ->64", (128, 8, 16, 64, 64), (64, 8, 3, 3, 3)),
        ("level2/7 conv3d 64x8x32x64x64 k3 ->32", (64, 8, 32, 64, 64), (32, 8, 3, 3, 3)),
        ("level2/24 conv3d 128x3x24x32x32 k3 ->24", (128, 3, 24, 32, 32), (24, 3, 3, 3, 3)),
        ("level1/54 conv3d 16x3x64x64x64 k3 ->64", (16, 3, 64, 64, 64), (64, 3, 3, 3, 3)),
        ("level2/25 conv2d 128x16x256x256 k3 ->64", (128, 16, 256, 256), (64, 16, 3, 3)),
    ]
    forms = ["gemm", "direct_mn", "direct_nm"]
    rows = []
    for name, xs, ws in cases:
        x = torch.randn(xs, device=dev)
        w = torch.randn(ws, device=dev) / math.sqrt(math.prod(ws[1:]))
        conv = {4: torch.nn.functional.conv2d, 5: torch.nn.functional.conv3d}[x.dim()]
        want = conv(x.double(), w.double())
        row = {"case": name, "eager_ms": time_ms(lambda: conv(x, w))}
        for label in forms:
            run, kernel = form(label, x, w, 0)
            try:
                got = run()
                row[label + "_err"] = float((got.double() - want).abs().max() / want.abs().max())
                row[label + "_ms"] = time_ms(run)
                row[label + "_config"] = str(kernel.best_config)
            except Exception as error:  # a form that does not compile or run is a row, not a crash
                row[label + "_error"] = f"{type(error).__name__}: {error}"[:300]
            kernel.cache.clear()
        del want
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"\n{'case':44s} {'eager':>8s} " + " ".join(f"{f:>9s}" for f in forms))
    for r in rows:
        cells = [f"{r.get(k + '_ms', float('nan')):9.3f}" for k in ["eager"] + forms]
        print(f"{r['case']:44s} " + " ".join(cells))
    if args.out:
        with open(os.path.join(args.out, "direct_conv_probe.json"), "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
