import torch
import torch.nn as nn


class Model(nn.Module):
    """Matrix multiplication C = A @ B with A (M, K) and B (K, N)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 4096
K = 4096
N = 4096
KFORGE_CPU_SIZES = {"M": 64, "K": 48, "N": 32}


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
