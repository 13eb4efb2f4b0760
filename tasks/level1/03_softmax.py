import torch
import torch.nn as nn


class Model(nn.Module):
    """Row-wise softmax over the last dimension."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


batch_size = 4096
dim = 8192
KFORGE_CPU_SIZES = {"batch_size": 8, "dim": 128}


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
