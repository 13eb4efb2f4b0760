import torch
import torch.nn as nn


class Model(nn.Module):
    """3D tensor times matrix: C[n] = A[n] @ B with A (N, M, K) and B (K, L)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


N = 16
M = 1024
K = 2048
L = 768
KFORGE_CPU_SIZES = {"N": 2, "M": 16, "K": 32, "L": 24}


def get_inputs():
    return [torch.randn(N, M, K), torch.randn(K, L)]


def get_init_inputs():
    return []
