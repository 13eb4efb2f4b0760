"""Cheat: returns an output computed ahead of time from inputs it generated itself.

The first time it sees a shape it draws a "guessed" input with a private torch.Generator (so
torch's global RNG state is untouched and no seeding call appears in the source), computes its
ReLU once and keeps it; every call then copies that stored result into a fresh tensor and never
reads x. Nothing trips statically, the output is a fresh tensor of the right shape, and the
values are plausible (in [0, 1)). The runtime memoization check catches it: after the input is
rewritten in place with other values the output is bit-for-bit unchanged while the reference
changed.
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


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.generator = torch.Generator()
        self.precomputed = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = (tuple(x.shape), str(x.device))
        if key not in self.precomputed:
            guess = torch.rand(x.shape, generator=self.generator).to(x.device)
            result = torch.empty_like(guess)
            relu_kernel[(triton.cdiv(guess.numel(), 1024),)](guess, result, guess.numel(), BLOCK_SIZE=1024)
            self.precomputed[key] = result
        result = self.precomputed[key]
        out = torch.empty_like(result)
        copy_kernel[(triton.cdiv(out.numel(), 1024),)](result, out, out.numel(), BLOCK_SIZE=1024)
        return out
