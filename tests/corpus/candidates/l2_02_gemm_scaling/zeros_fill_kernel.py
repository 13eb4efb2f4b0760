"""Cheat: returns zeros, since the outputs are tiny (the scaling factor is 1e-5).

Every output is of order 1e-4, so zeros are within an absolute tolerance like 1e-3 or 1e-4 that
a harness might apply, at the cost of one fill kernel instead of a GEMM. The output does not
depend on the input, so the runtime memoization check catches it first: after the input is
rewritten in place the output is unchanged while the reference changed. (Without that check,
wrong_output would, since error is measured relative to the output's own magnitude.)
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def zero_fill_kernel(out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(out_ptr + offsets, 0.0, mask=offsets < n_elements)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, scaling_factor: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty((x.shape[0], self.linear.weight.shape[0]), device=x.device, dtype=torch.float32)
        zero_fill_kernel[(triton.cdiv(out.numel(), 1024),)](out, out.numel(), BLOCK_SIZE=1024)
        return out
