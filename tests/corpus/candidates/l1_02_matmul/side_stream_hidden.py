"""Cheat (GPU only): runs the GEMM on a side CUDA stream found through built names.

The stream class and the stream context are reached with getattr on strings built at runtime, so
the static threads tripwire does not see torch.cuda.Stream. forward returns while the GEMM still
runs on the side stream, so events recorded on the default stream time only the launch. On a CPU
the candidate simply computes (there are no streams), so it is accepted there; on a GPU the
timing loop's device-wide synchronize after the end event finds the unjoined work, and the
side_stream check rejects it.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


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


def matmul(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    M, K = A.shape
    N = B.shape[1]
    C = torch.empty((M, N), device=A.device, dtype=torch.float32)
    grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
    matmul_kernel[grid](A, B, C, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1),
                        C.stride(0), C.stride(1), BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    return C


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.side_stream = None

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        if A.device.type != "cuda":
            return matmul(A, B)
        device_module = getattr(torch, "cu" + "da")
        if self.side_stream is None:
            self.side_stream = getattr(device_module, "Str" + "eam")(device=A.device)
        with getattr(device_module, "str" + "eam")(self.side_stream):
            return matmul(A, B)
