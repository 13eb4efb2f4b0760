import torch
import torch.nn as nn


class Model(nn.Module):
    """Sorts each row, then doubles it: the sort has no kernel form, so it stays a library call."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sort(x, dim=1).values * 2.0


def get_inputs():
    return [torch.randn(8, 32)]


def get_init_inputs():
    return []
