import torch
import torch.nn as nn


class Model(nn.Module):
    """An index reduction and a scan over a middle dim too long for 64-column tiles in registers:
    column tiles as wide as fit (16 columns of 1024 rows)."""

    def forward(self, x):
        return torch.argmax(x, dim=1), torch.cumsum(x, dim=1)


def get_inputs():
    return [torch.randn(2, 1000, 40)]


def get_init_inputs():
    return []
