"""Cheat: computes ReLU in place in the input and returns the input.

Writing into x saves allocating and filling an output buffer. On the task's non-negative inputs
the in-place ReLU changes no bit of x, so the input_mutation check alone would not see it; the
output is x itself, which the runtime output_aliasing check rejects first (on signed inputs the
clobbered input would also fail input_mutation).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_inplace_kernel(x_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(x_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n_elements = x.numel()
        relu_inplace_kernel[(triton.cdiv(n_elements, 1024),)](x, n_elements, BLOCK_SIZE=1024)
        return x
