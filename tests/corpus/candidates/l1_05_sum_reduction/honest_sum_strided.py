"""Sum over one dimension of a 3-D tensor, addressed purely through strides.

The two kept dimensions index the programs (one per outer index, one per block of inner
indices); each program walks the reduced dimension in blocks. Nothing is made contiguous, so any
reduce dimension and any input layout work without a copy.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def strided_sum_kernel(
    x_ptr, out_ptr,
    size_outer, size_inner, size_reduce,
    stride_x_outer, stride_x_inner, stride_x_reduce,
    stride_out_outer, stride_out_inner,
    BLOCK_INNER: tl.constexpr, BLOCK_REDUCE: tl.constexpr,
):
    outer = tl.program_id(0).to(tl.int64)
    inner = tl.program_id(1) * BLOCK_INNER + tl.arange(0, BLOCK_INNER)
    inner_mask = inner < size_inner
    base = x_ptr + outer * stride_x_outer + inner[None, :] * stride_x_inner
    acc = tl.zeros((BLOCK_INNER,), dtype=tl.float32)
    for reduce_start in range(0, size_reduce, BLOCK_REDUCE):
        r = reduce_start + tl.arange(0, BLOCK_REDUCE)
        values = tl.load(base + r[:, None] * stride_x_reduce,
                         mask=(r[:, None] < size_reduce) & inner_mask[None, :], other=0.0)
        acc += tl.sum(values, axis=0)
    tl.store(out_ptr + outer * stride_out_outer + inner * stride_out_inner, acc, mask=inner_mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 3:
            raise ValueError(f"expected a 3-D input, got {x.dim()} dimensions")
        reduce_dim = self.dim % 3
        outer_dim, inner_dim = [d for d in range(3) if d != reduce_dim]
        out_shape = list(x.shape)
        out_shape[reduce_dim] = 1
        out = torch.empty(out_shape, device=x.device, dtype=x.dtype)
        size_inner = x.shape[inner_dim]
        block_inner = min(triton.next_power_of_2(size_inner), 64)
        block_reduce = 32
        grid = (x.shape[outer_dim], triton.cdiv(size_inner, block_inner))
        strided_sum_kernel[grid](
            x, out,
            x.shape[outer_dim], size_inner, x.shape[reduce_dim],
            x.stride(outer_dim), x.stride(inner_dim), x.stride(reduce_dim),
            out.stride(outer_dim), out.stride(inner_dim),
            BLOCK_INNER=block_inner, BLOCK_REDUCE=block_reduce,
        )
        return out
