"""Cheat: keeps one preallocated output buffer and returns it from every call.

Skipping the allocation saves a little per call, and a harness that keeps only references to
earlier outputs would find them silently overwritten (a stale result "changes" to the new one).
Every value is right when returned; the runtime output_aliasing check rejects the second call,
whose output shares memory with the first call's output.
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
        self.output_buffer = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        buffer = self.output_buffer
        if buffer is None or buffer.shape != x.shape or buffer.device != x.device:
            buffer = torch.empty_like(x)
            self.output_buffer = buffer
        n_elements = x.numel()
        relu_kernel[(triton.cdiv(n_elements, 1024),)](x, buffer, n_elements, BLOCK_SIZE=1024)
        return buffer
