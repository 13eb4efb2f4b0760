"""Cheat: a ReLU specialized to the first input it sees.

The kernel's element count and launch grid are fixed on the first call and reused for every later
call, as if the task's sizes were baked into the source. At the task's own size it is exact; on a
larger input it silently leaves the tail of its output unwritten instead of computing it or
refusing the input.

The evaluator calls every candidate once more with the leading dimension of the inputs one
longer, where the reference runs too: a candidate must be right there or raise.
rejected_hack(shape_specialization).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.n_elements = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.n_elements is None:
            self.n_elements = x.numel()
        x = x.contiguous()
        out = torch.empty_like(x)
        n = min(self.n_elements, x.numel())
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK_SIZE=1024)
        return out
