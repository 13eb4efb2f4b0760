"""Max-pooling kernel forms side by side on the GPU: the [outputs, taps] row tile the compiler
emits against tap-by-tap loads, over block sizes and warps, for a 3x3 stride-2 pad-1 window on
[16, 64, 256, 256] (the project's level-1 max-pooling task). Prints one line per variant with its
median time (triton.testing.do_bench, L2 flushed) and the fraction of the memory roofline.

Usage (on the GPU machine): python3 bench/pool_probe.py
"""
import torch
import triton
import triton.language as tl
from triton.testing import do_bench

N, C, H, W = 16, 64, 256, 256
K, S, P = 3, 2, 1
OH, OW = (H + 2 * P - K) // S + 1, (W + 2 * P - K) // S + 1


@triton.jit
def window_origin(numel, OH: tl.constexpr, OW: tl.constexpr, S: tl.constexpr, P: tl.constexpr, BLOCK: tl.constexpr):
    """The program's outputs: flat offsets, their mask, image plane and top-left input tap."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ow = offs % OW
    oh = (offs // OW) % OH
    return offs, offs < numel, offs // (OW * OH), oh * S - P, ow * S - P


@triton.jit
def pool_tile(x_ptr, y_ptr, numel, H: tl.constexpr, W: tl.constexpr, OH: tl.constexpr, OW: tl.constexpr,
              K: tl.constexpr, S: tl.constexpr, P: tl.constexpr, TAPS: tl.constexpr, BLOCK: tl.constexpr):
    offs, mask, plane, h0, w0 = window_origin(numel, OH, OW, S, P, BLOCK)
    acc = tl.full([BLOCK], float("-inf"), tl.float32)
    taps = tl.arange(0, TAPS)[None, :]
    for i in tl.static_range(K):
        h = h0 + i
        w = w0[:, None] + taps
        m = (mask & (h >= 0) & (h < H))[:, None] & (taps < K) & (w >= 0) & (w < W)
        v = tl.load(x_ptr + (plane * H * W + h * W)[:, None] + w, mask=m, other=float("-inf"))
        acc = tl.maximum(acc, tl.max(v, axis=1))
    tl.store(y_ptr + offs, acc, mask=mask)


@triton.jit
def pool_taps(x_ptr, y_ptr, numel, H: tl.constexpr, W: tl.constexpr, OH: tl.constexpr, OW: tl.constexpr,
              K: tl.constexpr, S: tl.constexpr, P: tl.constexpr, BLOCK: tl.constexpr):
    offs, mask, plane, h0, w0 = window_origin(numel, OH, OW, S, P, BLOCK)
    acc = tl.full([BLOCK], float("-inf"), tl.float32)
    for i in tl.static_range(K):
        for j in tl.static_range(K):
            h = h0 + i
            w = w0 + j
            m = mask & (h >= 0) & (h < H) & (w >= 0) & (w < W)
            v = tl.load(x_ptr + plane * H * W + h * W + w, mask=m, other=float("-inf"))
            acc = tl.maximum(acc, v)
    tl.store(y_ptr + offs, acc, mask=mask)


def main():
    x = torch.randn(N, C, H, W, device="cuda")
    reference = torch.nn.functional.max_pool2d(x, K, S, P)
    numel = reference.numel()
    floor_ms = (x.numel() + numel) * 4 / 4.3e12 * 1e3
    compiled = torch.compile(lambda t: torch.nn.functional.max_pool2d(t, K, S, P))
    rows = [("eager", lambda: torch.nn.functional.max_pool2d(x, K, S, P), None),
            ("torch.compile", lambda: compiled(x), None)]
    for block in (256, 512, 1024):
        for warps in (4, 8):
            y = torch.empty_like(reference)
            rows.append((f"tile  BLOCK={block:4d} warps={warps}", lambda y=y, b=block, w=warps: pool_tile[(triton.cdiv(numel, b),)](
                x, y, numel, H, W, OH, OW, K, S, P, TAPS=4, BLOCK=b, num_warps=w), y))
            y2 = torch.empty_like(reference)
            rows.append((f"taps  BLOCK={block:4d} warps={warps}", lambda y=y2, b=block, w=warps: pool_taps[(triton.cdiv(numel, b),)](
                x, y, numel, H, W, OH, OW, K, S, P, BLOCK=b, num_warps=w), y2))
    for name, fn, buffer in rows:
        out = fn()
        out = buffer if buffer is not None else out
        torch.cuda.synchronize()
        ok = torch.equal(out, reference)
        ms = do_bench(fn, warmup=25, rep=200, return_mode="median")
        print(f"{name:30s} {ms:8.4f} ms  {floor_ms / ms:5.0%} of roofline  {'ok' if ok else 'WRONG'}", flush=True)


if __name__ == "__main__":
    main()
