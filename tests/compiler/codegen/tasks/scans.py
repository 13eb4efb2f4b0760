import torch
import torch.nn as nn


class Model(nn.Module):
    """Scans and flips: a cumulative product, a reverse cumulative sum (flip, scan, flip), and a
    flip over two dims of a permuted tensor followed by arithmetic."""

    def forward(self, x, y):
        product = torch.cumprod(1.0 + 0.1 * x, dim=1)
        reverse = torch.cumsum(y.flip(0), 0).flip(0)
        both = torch.relu(y.permute(1, 0, 2).flip([0, 2])) * 2.0
        return product, reverse, both


def get_inputs():
    return [torch.randn(5, 37), torch.randn(9, 4, 6)]


def get_init_inputs():
    return []
