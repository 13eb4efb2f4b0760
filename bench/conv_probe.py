"""Probe: implicit-GEMM convolution layouts and tiles on the GPU, at the project's level-1 shapes.
    python3 bench/conv_probe.py [--out DIR]
For each convolution it times torch (eager, cuDNN) and these Triton variants, each autotuned over
the same tile space, with tl.dot in tf32x3:
  nchw       the input gathered in place (NCHW: positions contiguous along M)
  nhwc       the input first rewritten channels-last by a transpose kernel (included in the time),
             so each tap's [positions, channels] tile is contiguous along K; weights as given
  nhwc_wk    as nhwc, weights also rewritten [out channels, taps, in channels] (K contiguous)
  subpixel   transposed convolutions only: one GEMM per output phase (stride^2 of them), over the
             taps that reach that phase, so no tap is masked away
Checks every variant against torch in fp64 and prints a table (and JSON with --out)."""
from __future__ import annotations

import argparse
import json
import math
import os

import torch
import triton
import triton.language as tl

CONFIGS = [
    triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}, num_warps=w, num_stages=s)
    for bm, bn, bk, w, s in [
        (128, 128, 32, 8, 3), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (64, 64, 32, 4, 4),
        (128, 128, 16, 8, 4), (128, 32, 32, 4, 4), (256, 64, 32, 8, 3), (128, 64, 64, 4, 3),
        (64, 32, 16, 4, 4), (256, 128, 16, 8, 3),
    ]
]


@triton.jit
def to_channels_last(x_ptr, y_ptr, C: tl.constexpr, P: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr):
    # x [images, C, P] -> y [images, P, C]
    img = tl.program_id(2).to(tl.int64)
    p = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (p[:, None] < P) & (c[None, :] < C)
    tile = tl.load(x_ptr + img * C * P + c[None, :] * P + p[:, None], mask=mask)
    tl.store(y_ptr + img * C * P + p[:, None] * C + c[None, :], tile, mask=mask)


@triton.jit
def weight_k_major(w_ptr, y_ptr, CO: tl.constexpr, C: tl.constexpr, T: tl.constexpr, BLOCK: tl.constexpr):
    # w [CO, C, T] -> y [CO, T, C]
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    c = i % C
    t = (i // C) % T
    co = i // (C * T)
    tl.store(y_ptr + i, tl.load(w_ptr + co * C * T + c * T + t, mask=i < CO * C * T), mask=i < CO * C * T)


@triton.jit
def grouped_tile(M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    # This program's rows and columns, programs grouped GROUP_M row tiles at a time (L2 reuse).
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    width = GROUP_M * tl.cdiv(N, BLOCK_N)
    first_m = (pid // width) * GROUP_M
    size_m = tl.minimum(grid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % width) % size_m
    pid_n = (pid % width) // size_m
    return pid_m * BLOCK_M + tl.arange(0, BLOCK_M), pid_n * BLOCK_N + tl.arange(0, BLOCK_N)


@triton.autotune(configs=CONFIGS, key=[])
@triton.jit
def conv_kernel(x_ptr, w_ptr, y_ptr,
                IMG: tl.constexpr, C: tl.constexpr, D: tl.constexpr, H: tl.constexpr, W: tl.constexpr,
                CO: tl.constexpr, OD: tl.constexpr, OH: tl.constexpr, OW: tl.constexpr,
                KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, S: tl.constexpr,
                PD: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr, X_LAYOUT: tl.constexpr, W_LAYOUT: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    M: tl.constexpr = IMG * OD * OH * OW
    m, n = grouped_tile(M, CO, BLOCK_M, BLOCK_N, GROUP_M)
    ow = m % OW
    rem = m // OW
    oh = rem % OH
    rem = rem // OH
    od = rem % OD
    img = rem // OD
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    CIB: tl.constexpr = (C + BLOCK_K - 1) // BLOCK_K
    T: tl.constexpr = KD * KH * KW
    for kk in range(0, T * CIB):
        tap = kk // CIB
        ci = (kk % CIB) * BLOCK_K + tl.arange(0, BLOCK_K)
        tw = tap % KW
        th = (tap // KW) % KH
        td = tap // (KW * KH)
        idd = od * S - PD + td
        ih = oh * S - PH + th
        iw = ow * S - PW + tw
        valid = (m < M) & (idd >= 0) & (idd < D) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        pos = (idd * H + ih) * W + iw
        if X_LAYOUT == 0:
            a = tl.load(x_ptr + img[:, None] * (C * D * H * W) + ci[None, :] * (D * H * W) + pos[:, None],
                        mask=valid[:, None] & (ci[None, :] < C), other=0.0)
        else:
            a = tl.load(x_ptr + (img[:, None] * (D * H * W) + pos[:, None]) * C + ci[None, :],
                        mask=valid[:, None] & (ci[None, :] < C), other=0.0)
        if W_LAYOUT == 0:
            b = tl.load(w_ptr + n[None, :] * (C * T) + ci[:, None] * T + tap,
                        mask=(ci[:, None] < C) & (n[None, :] < CO), other=0.0)
        else:
            b = tl.load(w_ptr + n[None, :] * (C * T) + tap * C + ci[:, None],
                        mask=(ci[:, None] < C) & (n[None, :] < CO), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="tf32x3")
    P: tl.constexpr = OD * OH * OW
    out = y_ptr + img[:, None] * (CO * P) + n[None, :] * P + ((od * OH + oh) * OW + ow)[:, None]
    tl.store(out, acc, mask=(m[:, None] < M) & (n[None, :] < CO))


@triton.autotune(configs=CONFIGS, key=[])
@triton.jit
def conv_transpose_subpixel(x_ptr, w_ptr, bias_ptr, y_ptr,
                            IMG: tl.constexpr, C: tl.constexpr, H: tl.constexpr, W: tl.constexpr,
                            CO: tl.constexpr, OH: tl.constexpr, OW: tl.constexpr,
                            KH: tl.constexpr, KW: tl.constexpr, S: tl.constexpr, PAD: tl.constexpr,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # x channels-last [IMG, H, W, C]; w as given [C, CO, KH, KW]; one phase (rh, rw) per axis-1 program.
    QH: tl.constexpr = (OH + S - 1) // S
    QW: tl.constexpr = (OW + S - 1) // S
    M: tl.constexpr = IMG * QH * QW
    phase = tl.program_id(1)
    rh = phase // S
    rw = phase % S
    m, n = grouped_tile(M, CO, BLOCK_M, BLOCK_N, GROUP_M)
    qw = m % QW
    rem = m // QW
    qh = rem % QH
    img = rem // QH
    oh = qh * S + rh
    ow = qw * S + rw
    # Output o takes tap t = (o + PAD) % S + j * S from input (o + PAD - t) / S.
    th0 = (rh + PAD) % S
    tw0 = (rw + PAD) % S
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    CIB: tl.constexpr = (C + BLOCK_K - 1) // BLOCK_K
    JH: tl.constexpr = (KH + S - 1) // S
    JW: tl.constexpr = (KW + S - 1) // S
    for kk in range(0, JH * JW * CIB):
        j = kk // CIB
        ci = (kk % CIB) * BLOCK_K + tl.arange(0, BLOCK_K)
        th = th0 + (j // JW) * S
        tw = tw0 + (j % JW) * S
        ih = (oh + PAD - th) // S
        iw = (ow + PAD - tw) // S
        valid = (m < M) & (oh < OH) & (ow < OW) & (oh + PAD - th >= 0) & (ih < H) & (ow + PAD - tw >= 0) & (iw < W)
        a = tl.load(x_ptr + ((img[:, None] * H + ih[:, None]) * W + iw[:, None]) * C + ci[None, :],
                    mask=valid[:, None] & (ci[None, :] < C), other=0.0)
        b = tl.load(w_ptr + ci[:, None] * (CO * KH * KW) + n[None, :] * (KH * KW) + th * KW + tw,
                    mask=(ci[:, None] < C) & (n[None, :] < CO) & (th < KH) & (tw < KW), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="tf32x3")
    acc += tl.load(bias_ptr + n, mask=n < CO, other=0.0)[None, :]
    out = y_ptr + img[:, None] * (CO * OH * OW) + n[None, :] * (OH * OW) + (oh * OW + ow)[:, None]
    tl.store(out, acc, mask=(m[:, None] < M) & (n[None, :] < CO) & (oh[:, None] < OH) & (ow[:, None] < OW))


def channels_last(x: torch.Tensor) -> torch.Tensor:
    img, c = x.shape[0], x.shape[1]
    p = x[0, 0].numel()
    y = torch.empty((img, p, c), device=x.device, dtype=x.dtype)
    to_channels_last[(triton.cdiv(p, 64), triton.cdiv(c, 32), img)](x, y, c, p, 32, 64)
    return y


def conv_variant(x, w, stride, pad, x_layout, w_layout):
    spatial = x.dim() - 2
    shape5 = [1] * (3 - spatial)
    img, c = x.shape[:2]
    d, h, wd = shape5 + list(x.shape[2:])
    co = w.shape[0]
    kd, kh, kw = shape5 + list(w.shape[2:])
    pads = [0] * (3 - spatial) + [pad] * spatial
    od, oh, ow = [(s + 2 * p - k) // stride + 1 for s, p, k in zip((d, h, wd), pads, (kd, kh, kw))]
    y = torch.empty((img, co) + tuple([od, oh, ow][3 - spatial:]), device=x.device, dtype=x.dtype)

    def run():
        xs = channels_last(x) if x_layout else x
        ws = w
        if w_layout:
            ws = torch.empty_like(w)
            total = w.numel()
            weight_k_major[(triton.cdiv(total, 1024),)](w, ws, co, c, kd * kh * kw, 1024)
        grid = lambda meta: (triton.cdiv(img * od * oh * ow, meta["BLOCK_M"]) * triton.cdiv(co, meta["BLOCK_N"]),)
        conv_kernel[grid](xs, ws, y, img, c, d, h, wd, co, od, oh, ow, kd, kh, kw, stride, *pads, x_layout, w_layout)
        return y
    return run


def conv_transpose_variant(x, w, bias, stride, pad):
    img, c, h, wd = x.shape
    co, kh, kw = w.shape[1], w.shape[2], w.shape[3]
    oh, ow = (h - 1) * stride - 2 * pad + kh, (wd - 1) * stride - 2 * pad + kw
    y = torch.empty((img, co, oh, ow), device=x.device, dtype=x.dtype)

    def run():
        xs = channels_last(x)
        qh, qw = triton.cdiv(oh, stride), triton.cdiv(ow, stride)
        grid = lambda meta: (triton.cdiv(img * qh * qw, meta["BLOCK_M"]) * triton.cdiv(co, meta["BLOCK_N"]), stride * stride)
        conv_transpose_subpixel[grid](xs, w, bias, y, img, c, h, wd, co, oh, ow, kh, kw, stride, pad)
        return y
    return run


def time_ms(fn) -> float:
    return triton.testing.do_bench(fn, warmup=50, rep=200)


def check(got, want) -> float:
    return float((got.double() - want).abs().max() / (want.abs().max() + 1e-12))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--pointwise", action="store_true",
                        help="only 1x1 convolutions at KernelBench level-3 shapes (ResNet bottlenecks, EfficientNet)")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    dev = "cuda"
    rows = []
    cases = [
        ("conv2d 16x64x128x128 k3 ->128", (16, 64, 128, 128), (128, 64, 3, 3), 1, 1),
        ("conv1d 32x64x8192 k3 ->128", (32, 64, 8192), (128, 64, 3), 1, 0),
        ("conv3d 8x16x32x64x64 k3 ->32", (8, 16, 32, 64, 64), (32, 16, 3, 3, 3), 1, 1),
        ("lenet conv 2: 64x6x14x14 k5 ->16", (64, 6, 14, 14), (16, 6, 5, 5), 1, 0),
        ("resnet conv 3x3 64ch 56x56 b10", (10, 64, 56, 56), (64, 64, 3, 3), 1, 1),
    ]
    if args.pointwise:
        cases = [
            ("resnet 1x1 256->64 56x56 b10", (10, 256, 56, 56), (64, 256, 1, 1), 1, 0),
            ("resnet 1x1 64->256 56x56 b10", (10, 64, 56, 56), (256, 64, 1, 1), 1, 0),
            ("resnet 1x1 1024->256 14x14 b10", (10, 1024, 14, 14), (256, 1024, 1, 1), 1, 0),
            ("efficientnet 1x1 96->24 56x56 b10", (10, 96, 56, 56), (24, 96, 1, 1), 1, 0),
        ]
    for name, xs, ws, stride, pad in cases:
        x = torch.randn(xs, device=dev)
        w = torch.randn(ws, device=dev) / math.sqrt(ws[1] * math.prod(ws[2:]))
        conv = {3: torch.nn.functional.conv1d, 4: torch.nn.functional.conv2d, 5: torch.nn.functional.conv3d}[x.dim()]
        want = conv(x.double(), w.double(), stride=stride, padding=pad)
        row = {"case": name, "eager_ms": time_ms(lambda: conv(x, w, stride=stride, padding=pad))}
        for label, xl, wl in [("nchw", 0, 0), ("nhwc", 1, 0), ("nhwc_wk", 1, 1)]:
            run = conv_variant(x, w, stride, pad, xl, wl)
            err = check(run(), want)
            row[label + "_ms"] = time_ms(run)
            row[label + "_err"] = err
            row[label + "_config"] = str(conv_kernel.best_config)
            conv_kernel.cache.clear()
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.pointwise:
        return finish(rows, args.out)
    x = torch.randn(32, 64, 64, 64, device=dev)
    w = torch.randn(64, 32, 4, 4, device=dev) / 32
    bias = torch.randn(32, device=dev)
    want = torch.nn.functional.conv_transpose2d(x.double(), w.double(), bias.double(), stride=2, padding=1)
    row = {"case": "conv_transpose2d 32x64x64x64 k4 s2 ->32",
           "eager_ms": time_ms(lambda: torch.nn.functional.conv_transpose2d(x, w, bias, stride=2, padding=1))}
    run = conv_transpose_variant(x, w, bias, 2, 1)
    row["subpixel_err"] = check(run(), want)
    row["subpixel_ms"] = time_ms(run)
    row["subpixel_config"] = str(conv_transpose_subpixel.best_config)
    row["channels_last_ms"] = time_ms(lambda: channels_last(x))
    rows.append(row)
    print(json.dumps(row), flush=True)
    finish(rows, args.out)


def finish(rows, out) -> None:
    print(f"\n{'case':42s} {'eager':>8s} {'nchw':>8s} {'nhwc':>8s} {'nhwc_wk':>8s} {'subpixel':>8s}")
    for r in rows:
        cells = [f"{r.get(k + '_ms', float('nan')):8.3f}" for k in ("eager", "nchw", "nhwc", "nhwc_wk", "subpixel")]
        print(f"{r['case']:42s} " + " ".join(cells))
    if out:
        with open(os.path.join(out, "conv_probe.json"), "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
