"""Fault: a ReLU kernel whose stores land far outside the output buffer (no mask, a wild offset),
so the GPU raises an illegal memory access. The CUDA context of that process is unusable
afterwards; the evaluation must end in runtime_error and the next candidate, in a process of its
own, must not notice."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def wild_store_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    values = tl.maximum(tl.load(x_ptr + offsets, mask=offsets < n_elements, other=0.0), 0.0)
    tl.store(out_ptr + offsets + (1 << 40), values)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        wild_store_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK_SIZE=1024)
        return out
