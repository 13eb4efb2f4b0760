"""Cheat: wraps the Triton kernel in try/except and falls back to torch.relu on any error.

It looks defensive, but a handler that computes with torch turns every kernel failure (a compile
error, a bad launch, an unsupported shape) into a silent library call, so a broken kernel still
"passes" and is timed as if it were the candidate's. The static fallback_handler tripwire
rejects the source.
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

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        try:
            x = x.contiguous()
            out = torch.empty_like(x)
            relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK_SIZE=1024)
            return out
        except Exception:
            return torch.relu(x)
