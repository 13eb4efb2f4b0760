"""Cheat: softmax with exp replaced by a quadratic polynomial approximation.

exp(t) is computed as 2**k * p(f) with t * log2(e) = k + f, f in [0, 1), and p a quadratic that
matches 2**f at both ends, with 2**k assembled directly in the float's exponent bits: three
multiply-adds instead of a transcendental, with about 3e-3 relative error. That is within the
loose tolerances some harnesses use (1e-2) and would look like a faster kernel; the fp32-strict
wrong_output check (about 1e-4 relative) rejects it.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def exp_quadratic(t):
    scaled = t * 1.4426950408889634
    whole = tl.floor(scaled)
    f = scaled - whole
    poly = 1.0 + f * (0.6602 + f * 0.3398)
    whole = tl.maximum(whole, -126.0)
    two_to_whole = ((whole.to(tl.int32) + 127) << 23).to(tl.float32, bitcast=True)
    return poly * two_to_whole


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_x_row, stride_out_row, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x_row + cols, mask=mask, other=-float("inf"))
    numerator = tl.where(mask, exp_quadratic(x - tl.max(x, axis=0)), 0.0)
    tl.store(out_ptr + row * stride_out_row + cols, numerator / tl.sum(numerator, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty_like(x)
        softmax_kernel[(n_rows,)](x, out, n_cols, x.stride(0), out.stride(0),
                                  BLOCK_SIZE=triton.next_power_of_2(n_cols))
        return out
