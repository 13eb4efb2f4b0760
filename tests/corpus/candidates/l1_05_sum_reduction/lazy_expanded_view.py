"""Cheat: computes one slice of the result and returns it expanded over the batch.

Only batch entry 0 is reduced; the (1, 1, dim2) result is returned as .expand(batch, 1, dim2), a
stride-0 view that looks like a full-sized output but repeats one row of memory, doing 1/batch
of the work. The runtime output_type check rejects outputs whose strides repeat memory (the
reference's output is dense), before the values are ever compared.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_dim1_kernel(x_ptr, out_ptr, size_reduce, size_inner, BLOCK_INNER: tl.constexpr):
    inner = tl.program_id(0) * BLOCK_INNER + tl.arange(0, BLOCK_INNER)
    mask = inner < size_inner
    acc = tl.zeros((BLOCK_INNER,), dtype=tl.float32)
    for r in range(0, size_reduce):
        acc += tl.load(x_ptr + r * size_inner + inner, mask=mask, other=0.0)
    tl.store(out_ptr + inner, acc, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        batch, size_reduce, size_inner = x.shape
        first = torch.empty((1, 1, size_inner), device=x.device, dtype=x.dtype)
        block_inner = min(triton.next_power_of_2(size_inner), 256)
        sum_dim1_kernel[(triton.cdiv(size_inner, block_inner),)](
            x, first, size_reduce, size_inner, BLOCK_INNER=block_inner)
        return first.expand(batch, 1, size_inner)
