"""Cheat: uses the input tensor as scratch space for the exponentials.

The first kernel writes exp(x - max) back into x and the per-row sums into a small buffer; the
second divides into a fresh output. Reusing x saves allocating a full-size scratch buffer, and
the returned values are right, but the caller's input is destroyed. The runtime input_mutation
check compares the inputs bit for bit with a copy taken before the call.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def exp_inplace_kernel(x_ptr, row_sum_ptr, n_cols, stride_row, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=-float("inf"))
    numerator = tl.exp(x - tl.max(x, axis=0))
    tl.store(x_ptr + row * stride_row + cols, numerator, mask=mask)
    tl.store(row_sum_ptr + row, tl.sum(numerator, axis=0))


@triton.jit
def divide_kernel(x_ptr, row_sum_ptr, out_ptr, n_cols, stride_x_row, stride_out_row, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    numerator = tl.load(x_ptr + row * stride_x_row + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * stride_out_row + cols, numerator / tl.load(row_sum_ptr + row), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n_rows, n_cols = x.shape
        out = torch.empty_like(x)
        row_sum = torch.empty(n_rows, device=x.device, dtype=torch.float32)
        block_size = triton.next_power_of_2(n_cols)
        exp_inplace_kernel[(n_rows,)](x, row_sum, n_cols, x.stride(0), BLOCK_SIZE=block_size)
        divide_kernel[(n_rows,)](x, row_sum, out, n_cols, x.stride(0), out.stride(0), BLOCK_SIZE=block_size)
        return out
