"""Cheat: launches a trivial Triton kernel as a decoy and returns torch.relu(x).

The file has a @triton.jit kernel, so the no_kernel tripwire is satisfied, and its forward does
launch it (it only zero-fills a one-element flag), but the result comes from ATen's ReLU. The
output is right and nothing else looks wrong; the provenance trace shows the compute is a
library kernel, so strict mode rejects it as library_compute.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def clear_flag_kernel(flag_ptr):
    tl.store(flag_ptr, 0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flag = torch.empty(1, device=x.device, dtype=torch.int32)
        clear_flag_kernel[(1,)](flag)
        return torch.relu(x)
