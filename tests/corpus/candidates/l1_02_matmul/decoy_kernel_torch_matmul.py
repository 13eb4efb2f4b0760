"""Cheat: launches a Triton kernel that zero-fills C, then returns A @ B from torch.

The file has a real @triton.jit kernel and forward launches it, so the no_kernel tripwire is
satisfied; the product itself comes from the `@` operator (cuBLAS on a GPU). Values, types and
aliasing are all fine; the provenance trace shows that the compute is a library kernel, which
strict mode rejects as library_compute.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def zero_fill_kernel(c_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(c_ptr + offsets, 0.0, mask=offsets < n_elements)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        C = torch.empty((A.shape[0], B.shape[1]), device=A.device, dtype=torch.float32)
        zero_fill_kernel[(triton.cdiv(C.numel(), 1024),)](C, C.numel(), BLOCK_SIZE=1024)
        return A @ B
