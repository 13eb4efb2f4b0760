import torch
import torch.nn as nn


class Model(nn.Module):
    """Inclusive prefix sum along one dimension of x, counting only elements where mask is true."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x * mask, dim=self.dim)


batch_size = 4096
length = 16384
scan_dim = 1
KFORGE_CPU_SIZES = {"batch_size": 8, "length": 128}


def get_inputs():
    return [torch.randn(batch_size, length), torch.randint(0, 2, (batch_size, length)).bool()]


def get_init_inputs():
    return [scan_dim]
