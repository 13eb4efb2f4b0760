import torch
import torch.nn as nn


class Model(nn.Module):
    """Group norm over rows long enough to split: the statistics come from many programs per
    (image, group) row, merged with Chan's formula, and one pointwise pass normalizes and applies
    the per-channel affine. The input sits far from zero (mean 1000, spread 3), where a sum of
    squares minus the squared mean would lose every digit of the variance."""

    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=2, num_channels=8)
        with torch.no_grad():
            self.gn.weight.uniform_(0.5, 2.0)
            self.gn.bias.uniform_(-1.0, 1.0)

    def forward(self, x):
        return self.gn(x)


def get_inputs():
    return [torch.randn(1, 8, 128, 256) * 3.0 + 1000.0]


def get_init_inputs():
    return []
