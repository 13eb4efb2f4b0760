"""LayerNorm as two kernels: per-row statistics, then a 2-D normalize-and-scale pass.

The statistics kernel walks each row in blocks twice (sum for the mean, then the sum of squared
deviations from it) and writes mean and 1/std per row into small scratch tensors. The second
kernel, one program per (row, column block), applies them with the module's weight and bias.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_stats_kernel(x_ptr, mean_ptr, inv_std_ptr, n_cols, stride_row, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    row_start = x_ptr + row * stride_row
    partial_sum = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for col_start in range(0, n_cols, BLOCK_SIZE):
        cols = col_start + tl.arange(0, BLOCK_SIZE)
        partial_sum += tl.load(row_start + cols, mask=cols < n_cols, other=0.0)
    mean = tl.sum(partial_sum, axis=0) / n_cols
    partial_squares = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for col_start in range(0, n_cols, BLOCK_SIZE):
        cols = col_start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(row_start + cols, mask=mask, other=0.0)
        centred = tl.where(mask, x - mean, 0.0)
        partial_squares += centred * centred
    variance = tl.sum(partial_squares, axis=0) / n_cols
    tl.store(mean_ptr + row, mean)
    tl.store(inv_std_ptr + row, 1.0 / tl.sqrt(variance + eps))


@triton.jit
def normalize_kernel(x_ptr, weight_ptr, bias_ptr, mean_ptr, inv_std_ptr, out_ptr, n_cols,
                     stride_x_row, stride_out_row, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    mean = tl.load(mean_ptr + row)
    inv_std = tl.load(inv_std_ptr + row)
    x = tl.load(x_ptr + row * stride_x_row + cols, mask=mask, other=0.0)
    weight = tl.load(weight_ptr + cols, mask=mask, other=0.0)
    bias = tl.load(bias_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * stride_out_row + cols, (x - mean) * inv_std * weight + bias, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.ln = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n_cols = x.shape[-1]
        rows = x.contiguous().view(-1, n_cols)
        n_rows = rows.shape[0]
        out = torch.empty_like(rows)
        mean = torch.empty(n_rows, device=x.device, dtype=torch.float32)
        inv_std = torch.empty(n_rows, device=x.device, dtype=torch.float32)
        block_size = min(triton.next_power_of_2(n_cols), 1024)
        row_stats_kernel[(n_rows,)](rows, mean, inv_std, n_cols, rows.stride(0), self.ln.eps,
                                    BLOCK_SIZE=block_size)
        grid = (n_rows, triton.cdiv(n_cols, block_size))
        normalize_kernel[grid](rows, self.ln.weight, self.ln.bias, mean, inv_std, out, n_cols,
                               rows.stride(0), out.stride(0), BLOCK_SIZE=block_size)
        return out.view(x.shape)
