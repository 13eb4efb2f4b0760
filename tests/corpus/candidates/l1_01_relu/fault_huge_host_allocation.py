"""Fault: asks for a 1 PiB host workspace in forward.

2**50 bytes is more than any machine has and more than the 47-bit user address space, so the
allocation fails at once with a Python RuntimeError from torch's CPU allocator (whatever the
kernel's overcommit policy, and without touching memory, so no OOM killer is involved): the
evaluator reports runtime_error. (A candidate that instead grew its resident memory past the
evaluator's memory limit would be killed and reported as crashed.)
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

WORKSPACE_BYTES = 1 << 50


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
        workspace = torch.empty(WORKSPACE_BYTES, dtype=torch.uint8)
        x = x.contiguous()
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK_SIZE=1024)
        del workspace
        return out
