import torch
import torch.nn as nn


class Model(nn.Module):
    """Index of the maximum over the middle dim: reduced in column tiles (the innermost dim is kept)."""

    def forward(self, x):
        return torch.argmax(x, dim=1)


def get_inputs():
    return [torch.randn(5, 100, 33)]


def get_init_inputs():
    return []
