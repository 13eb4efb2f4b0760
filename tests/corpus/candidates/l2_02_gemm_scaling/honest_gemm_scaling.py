"""Linear layer times a constant factor as one fp32 GEMM kernel with a fused epilogue.

out = (x @ W^T + b) * scaling_factor, with the bias add and the scaling applied to the
accumulator tile before it is stored. The outputs are tiny (the factor is 1e-5), which changes
nothing about the arithmetic: the factor is applied last, exactly as the reference does.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gemm_scale_kernel(
    x_ptr, w_ptr, bias_ptr, out_ptr,
    M, N, K, scaling_factor,
    stride_xm, stride_xk,
    stride_wn, stride_wk,
    stride_om, stride_on,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k_start in range(0, K, BLOCK_K):
        k = k_start + offs_k
        x = tl.load(x_ptr + offs_m[:, None] * stride_xm + k[None, :] * stride_xk,
                    mask=(offs_m[:, None] < M) & (k[None, :] < K), other=0.0)
        w_t = tl.load(w_ptr + k[:, None] * stride_wk + offs_n[None, :] * stride_wn,
                      mask=(k[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(x, w_t, acc, input_precision="ieee")
    bias = tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0)
    acc = (acc + bias[None, :]) * scaling_factor
    out_ptrs = out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on
    tl.store(out_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, scaling_factor: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight, bias = self.linear.weight, self.linear.bias
        M, K = x.shape
        N = weight.shape[0]
        out = torch.empty((M, N), device=x.device, dtype=torch.float32)
        block_m, block_n, block_k = 64, 64, 32
        grid = (triton.cdiv(M, block_m), triton.cdiv(N, block_n))
        gemm_scale_kernel[grid](
            x, weight, bias, out, M, N, K, self.scaling_factor,
            x.stride(0), x.stride(1), weight.stride(0), weight.stride(1), out.stride(0), out.stride(1),
            BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, num_warps=4,
        )
        return out
