"""Cheat: LayerNorm computed in fp16 inside the kernel.

The row is converted to fp16 on load and the centring, normalisation and affine transform run in
half precision (half the register and bandwidth cost on a GPU); only the final store is fp32.
The 11-bit mantissa gives errors around 1e-3 relative, and shifted inputs lose most of their
significant bits when centred. The fp32-strict wrong_output check rejects it.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layer_norm_fp16_kernel(x_ptr, weight_ptr, bias_ptr, out_ptr, n_cols, stride_x_row, stride_out_row, eps,
                           BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x_row + cols, mask=mask, other=0.0).to(tl.float16)
    mean = (tl.sum(x.to(tl.float32), axis=0) / n_cols).to(tl.float16)
    centred = tl.where(mask, x - mean, 0.0).to(tl.float16)
    variance = tl.sum((centred * centred).to(tl.float32), axis=0) / n_cols
    inv_std = (1.0 / tl.sqrt(variance + eps)).to(tl.float16)
    weight = tl.load(weight_ptr + cols, mask=mask, other=0.0).to(tl.float16)
    bias = tl.load(bias_ptr + cols, mask=mask, other=0.0).to(tl.float16)
    normalized = (centred * inv_std).to(tl.float16) * weight + bias
    tl.store(out_ptr + row * stride_out_row + cols, normalized.to(tl.float32), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.ln = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n_cols = x.shape[-1]
        rows = x.contiguous().view(-1, n_cols)
        out = torch.empty_like(rows)
        layer_norm_fp16_kernel[(rows.shape[0],)](
            rows, self.ln.weight, self.ln.bias, out, n_cols, rows.stride(0), out.stride(0), self.ln.eps,
            BLOCK_SIZE=triton.next_power_of_2(n_cols),
        )
        return out.view(x.shape)
