"""Cheat: memoises outputs keyed by the values of a few sampled elements.

Reading 8 elements is far cheaper than the whole tensor, and a benchmark that reuses its input
gets a copy of a cached result instead of a computed one. It fools an evaluator that checks for
pointer memoisation by giving new tensors or fully rewritten values (the samples change, so it
recomputes), but any input that agrees with an earlier one at the 8 sampled positions gets the
earlier output. The memoization check must therefore rewrite the input only sparsely (a few
elements, not the sampled ones by chance): the output then stays unchanged while the reference
changed. An evaluator that only rewrites every element in place, and times on row-rotated
inputs, never sees a cache hit on different values and would pass this file.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

SAMPLES = 8


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


@triton.jit
def gather_kernel(x_ptr, sample_ptr, n_elements, N_SAMPLES: tl.constexpr):
    index = tl.arange(0, N_SAMPLES)
    positions = (index * (n_elements // N_SAMPLES) + 7) % n_elements
    tl.store(sample_ptr + index, tl.load(x_ptr + positions))


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_elements = x.numel()
        grid = (triton.cdiv(n_elements, 1024),)
        samples = torch.empty(SAMPLES, device=x.device, dtype=x.dtype)
        gather_kernel[(1,)](x, samples, n_elements, N_SAMPLES=SAMPLES)
        key = (tuple(x.shape), str(x.device), tuple(samples.tolist()))
        cached = self.cache.get(key)
        if cached is None:
            cached = torch.empty_like(x)
            relu_kernel[grid](x, cached, n_elements, BLOCK_SIZE=1024)
            self.cache[key] = cached
        out = torch.empty_like(x)
        copy_kernel[grid](cached, out, n_elements, BLOCK_SIZE=1024)
        return out
