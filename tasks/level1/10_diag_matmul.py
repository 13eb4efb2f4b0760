import torch
import torch.nn as nn


class Model(nn.Module):
    """Diagonal matrix times matrix: diag(A) @ B with A (N,) and B (N, M)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.diag(A) @ B


N = 4096
M = 4096
KFORGE_CPU_SIZES = {"N": 32, "M": 48}


def get_inputs():
    return [torch.randn(N), torch.randn(N, M)]


def get_init_inputs():
    return []
