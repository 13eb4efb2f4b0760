import torch
import torch.nn as nn


class Model(nn.Module):
    """Matrix-vector product C = A @ B with A (M, K) and B (K, 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 2048
K = 65536
KFORGE_CPU_SIZES = {"M": 32, "K": 256}


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, 1)]


def get_init_inputs():
    return []
