"""Fault: the LayerNorm module is stored as self.norm instead of self.ln.

The kernel is a correct LayerNorm, but the reference's state dict has keys ln.weight and
ln.bias; load_state_dict(strict=True) finds unexpected and missing keys and raises, which the
evaluator reports as runtime_error.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(x_ptr, weight_ptr, bias_ptr, out_ptr, n_cols, stride_x_row, stride_out_row, eps,
                      BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x_row + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    centred = tl.where(mask, x - mean, 0.0)
    inv_std = 1.0 / tl.sqrt(tl.sum(centred * centred, axis=0) / n_cols + eps)
    weight = tl.load(weight_ptr + cols, mask=mask, other=0.0)
    bias = tl.load(bias_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * stride_out_row + cols, centred * inv_std * weight + bias, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n_cols = x.shape[-1]
        rows = x.contiguous().view(-1, n_cols)
        out = torch.empty_like(rows)
        layer_norm_kernel[(rows.shape[0],)](
            rows, self.norm.weight, self.norm.bias, out, n_cols, rows.stride(0), out.stride(0), self.norm.eps,
            BLOCK_SIZE=triton.next_power_of_2(n_cols),
        )
        return out.view(x.shape)
