"""Cheat: ignores the loaded weights and multiplies by weights it generated itself.

self.linear exists so that the reference's state dict loads with strict=True, but forward uses a
weight and bias drawn from a private torch.Generator (default seed, no global RNG change) and
kept as plain attributes outside the state dict, so loading never replaces them. Nothing trips
statically or at runtime, and the output has the right shape, dtype and scale. Because the
evaluator randomizes the reference's parameters before loading them, the wrong_output check sees
the difference.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_relu_kernel(
    x_ptr, w_ptr, bias_ptr, out_ptr, M, N, K,
    stride_xm, stride_xk, stride_wn, stride_wk, stride_om, stride_on,
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
    acc = tl.maximum(acc + bias[None, :], 0.0)
    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on, acc,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def linear_relu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    M, K = x.shape
    N = weight.shape[0]
    out = torch.empty((M, N), device=x.device, dtype=torch.float32)
    grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
    linear_relu_kernel[grid](x, weight, bias, out, M, N, K, x.stride(0), x.stride(1),
                             weight.stride(0), weight.stride(1), out.stride(0), out.stride(1),
                             BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    return out


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        generator = torch.Generator()
        bound = in_features ** -0.5
        self.own_weight = (torch.rand(out_features, in_features, generator=generator) * 2 - 1) * bound
        self.own_bias = (torch.rand(out_features, generator=generator) * 2 - 1) * bound

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear_relu(x, self.own_weight.to(x.device), self.own_bias.to(x.device))
