import torch
import torch.nn as nn


class Model(nn.Module):
    """Matrix multiplication C = A.T @ B with A stored as (K, M) and B as (K, N)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A.T, B)


M = 2048
K = 8192
N = 4096
KFORGE_CPU_SIZES = {"M": 32, "K": 48, "N": 16}


def get_inputs():
    return [torch.randn(K, M), torch.randn(K, N)]


def get_init_inputs():
    return []
