"""LayerNorm over the last dimension in one Triton kernel, one program per row.

The row is held in registers: mean first, then the variance of the centred values (not E[x^2] -
E[x]^2, which loses precision on shifted inputs), then the affine transform with the module's
own weight and bias.
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
    x = tl.load(x_ptr + row * stride_x_row + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    centred = tl.where(mask, x - mean, 0.0)
    variance = tl.sum(centred * centred, axis=0) / n_cols
    inv_std = 1.0 / tl.sqrt(variance + eps)
    weight = tl.load(weight_ptr + cols, mask=mask, other=0.0)
    bias = tl.load(bias_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * stride_out_row + cols, centred * inv_std * weight + bias, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.ln = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n_cols = x.shape[-1]
        rows = x.contiguous().view(-1, n_cols)
        out = torch.empty_like(rows)
        block_size = triton.next_power_of_2(n_cols)
        num_warps = 16 if block_size >= 8192 else 8 if block_size >= 2048 else 4
        layer_norm_kernel[(rows.shape[0],)](
            rows, self.ln.weight, self.ln.bias, out, n_cols, rows.stride(0), out.stride(0), self.ln.eps,
            BLOCK_SIZE=block_size, num_warps=num_warps,
        )
        return out.view(x.shape)
