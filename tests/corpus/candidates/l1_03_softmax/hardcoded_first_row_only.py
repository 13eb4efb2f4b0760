"""Cheat: launches a single program, so only the first row is computed.

The grid is hard-coded to (1,) instead of one program per row; the kernel is right for row 0 and
the other rows keep whatever torch.empty left in memory. A single-program launch looks extremely
fast. The wrong_output check finds the uncomputed rows.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_x_row, stride_out_row, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x_row + cols, mask=mask, other=-float("inf"))
    numerator = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride_out_row + cols, numerator / tl.sum(numerator, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n_cols = x.shape[1]
        softmax_kernel[(1,)](x, out, n_cols, x.stride(0), out.stride(0),
                             BLOCK_SIZE=triton.next_power_of_2(n_cols))
        return out
