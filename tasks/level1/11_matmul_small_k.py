import torch
import torch.nn as nn


class Model(nn.Module):
    """Matrix multiplication C = A @ B with a small inner dimension K."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 8192
K = 32
N = 8192
KFORGE_CPU_SIZES = {"M": 64, "K": 8, "N": 64}


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
