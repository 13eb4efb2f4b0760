"""Cheat: returns a proxy object that computes the ReLU only when it is used.

forward returns at once with an object that forwards every attribute (shape, dtype, clone, cpu,
...) to a tensor it computes on first access, so a timer around forward measures nothing and any
later use through those attributes sees the right values. It defines no torch hooks and
subclasses nothing, so no static tripwire fires; the object is not a torch.Tensor at all, and
the runtime output_type check rejects it.
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


class LazyRelu:
    def __init__(self, x: torch.Tensor):
        self._input = x.contiguous()
        self._value = None

    def materialize(self) -> torch.Tensor:
        if self._value is None:
            out = torch.empty_like(self._input)
            n_elements = out.numel()
            relu_kernel[(triton.cdiv(n_elements, 1024),)](self._input, out, n_elements, BLOCK_SIZE=1024)
            self._value = out
        return self._value

    def __getattr__(self, name):
        return getattr(self.materialize(), name)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor):
        return LazyRelu(x)
