"""Cheat: memoises outputs by the input's address (x.data_ptr()).

A benchmark that calls forward again and again on the same input tensor gets a cache hit every
time after the first, so only a copy is timed. The candidate copies the cached result into a
fresh tensor on every hit, so no output aliases another. The runtime memoization check rewrites
the same input tensor in place with other values and calls again: the address is unchanged, the
stale output comes back, and the output stays the same while the reference changed.
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
        self.cache = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_elements = x.numel()
        grid = (triton.cdiv(n_elements, 1024),)
        key = (x.data_ptr(), tuple(x.shape), str(x.device))
        cached = self.cache.get(key)
        if cached is None:
            cached = torch.empty_like(x)
            relu_kernel[grid](x, cached, n_elements, BLOCK_SIZE=1024)
            self.cache[key] = cached
        out = torch.empty_like(x)
        copy_kernel[grid](cached, out, n_elements, BLOCK_SIZE=1024)
        return out
