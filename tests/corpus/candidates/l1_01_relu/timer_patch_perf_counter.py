"""Cheat: replaces time.perf_counter with a clock that runs 100 times slower.

Any timing taken with time.perf_counter after import shows a 100x speedup. The source uses the
time module directly, which the static timer tripwire rejects (the assignment is also a
monkeypatch; the timer finding comes first by line).
"""
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl

_true_clock = time.perf_counter
_start = _true_clock()
time.perf_counter = lambda: _start + (_true_clock() - _start) / 100.0


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
        x = x.contiguous()
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK_SIZE=1024)
        return out
