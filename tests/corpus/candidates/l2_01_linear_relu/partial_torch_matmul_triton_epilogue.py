"""Linear + ReLU with the GEMM left to torch.matmul (cuBLAS on a GPU) and a Triton epilogue.

The Triton kernel adds the bias and applies the ReLU in one pass over the GEMM's output. The
GEMM is library compute: partial mode accepts this and reports the library share; strict mode
rejects it as library_compute.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


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
        block_size = 1024
        bias_relu_kernel[(triton.cdiv(n_elements, block_size),)](
            y, self.linear.bias, out, n_elements, y.shape[1], BLOCK_SIZE=block_size)
        return out
