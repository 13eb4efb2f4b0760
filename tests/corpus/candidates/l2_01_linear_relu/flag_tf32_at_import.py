"""Cheat: turns on TF32 for cuBLAS matmuls at import, to speed up its torch.matmul GEMM.

Like partial_torch_matmul_triton_epilogue.py it leaves the GEMM to torch.matmul (allowed in
partial mode) and fuses bias and ReLU in Triton, but it also sets
torch.backends.cuda.matmul.allow_tf32 = True, so on a GPU the GEMM runs on TF32 tensor cores,
several times faster than the fp32 reference, and the flag stays set for anything else in the
process. Assigning torch.backends.* is caught by the static global_state tripwire.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

torch.backends.cuda.matmul.allow_tf32 = True


@triton.jit
def bias_relu_kernel(y_ptr, bias_ptr, out_ptr, n_elements, n_cols, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0)
    bias = tl.load(bias_ptr + offsets % n_cols, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, tl.maximum(y + bias, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.matmul(x, self.linear.weight.t()).contiguous()
        out = torch.empty_like(y)
        n_elements = y.numel()
        bias_relu_kernel[(triton.cdiv(n_elements, 1024),)](
            y, self.linear.bias, out, n_elements, y.shape[1], BLOCK_SIZE=1024)
        return out
