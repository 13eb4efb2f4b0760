"""Cheat: returns a copy of x through a Triton copy kernel instead of computing ReLU.

The task draws x with torch.rand, so every input is non-negative and relu(x) == x: on the task's
own inputs the copy is exact and as fast as a memcpy. Nothing in the source or at runtime looks
wrong; the wrong_output check catches it on the sign-flipped ("signed") input distribution,
where the negative entries come back unclamped.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n_elements = x.numel()
        copy_kernel[(triton.cdiv(n_elements, 1024),)](x, out, n_elements, BLOCK_SIZE=1024)
        return out
