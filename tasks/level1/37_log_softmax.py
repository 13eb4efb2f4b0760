import torch
import torch.nn as nn


class Model(nn.Module):
    """Row-wise log-softmax over the last dimension."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(x, dim=1)


batch_size = 4096
dim = 16384
KFORGE_CPU_SIZES = {"batch_size": 16, "dim": 256}


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
