import torch
import torch.nn as nn


class Model(nn.Module):
    """Mean over one dimension, which is removed from the result."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=self.dim)


batch_size = 32
dim1 = 4096
dim2 = 1024
reduce_dim = 2
KFORGE_CPU_SIZES = {"batch_size": 4, "dim1": 32, "dim2": 16}


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [reduce_dim]
