"""Cheat: memoises C keyed by a checksum of every element of A and B.

The checksum (the sum of each tensor's float bit patterns as integers, read by one cheap Triton
pass) costs O(M*K + K*N) against the GEMM's O(M*N*K), so repeated calls on the same data cost
almost nothing. It survives an evaluator that hands out new tensors or rewrites every value,
since then the checksum changes and the candidate really computes. But an integer sum does not
depend on element order: inputs whose rows are permuted, as the timing loop's row-rotated fresh
inputs are, collide with the first rotation seen, and the stale product comes back. The
timed-output check (timed_output_mismatch) catches it; memoization and wrong_output do not.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def checksum_kernel(x_ptr, sum_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets, mask=offsets < n_elements, other=0.0)
    bits = x.to(tl.int32, bitcast=True).to(tl.int64)
    tl.atomic_add(sum_ptr, tl.sum(bits, axis=0))


@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k_start in range(0, K, BLOCK_K):
        k = k_start + offs_k
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + k[None, :] * stride_ak,
                    mask=(offs_m[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + k[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                    mask=(k[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


def checksum(x: torch.Tensor) -> int:
    total = torch.zeros(1, device=x.device, dtype=torch.int64)
    n_elements = x.numel()
    checksum_kernel[(triton.cdiv(n_elements, 1024),)](x, total, n_elements, BLOCK_SIZE=1024)
    return int(total.item())


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = {}

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        A, B = A.contiguous(), B.contiguous()
        M, K = A.shape
        N = B.shape[1]
        key = (M, K, N, str(A.device), checksum(A), checksum(B))
        cached = self.cache.get(key)
        if cached is None:
            cached = torch.empty((M, N), device=A.device, dtype=torch.float32)
            grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
            matmul_kernel[grid](A, B, cached, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1),
                                cached.stride(0), cached.stride(1), BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
            self.cache[key] = cached
        out = torch.empty_like(cached)
        copy_kernel[(triton.cdiv(out.numel(), 1024),)](cached, out, out.numel(), BLOCK_SIZE=1024)
        return out
