import torch
import torch.nn as nn


class Model(nn.Module):
    """Instance norm, with and without affine parameters, after a convolution (as level-2 tasks
    use it), then a division; captured as batch norm without running statistics."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.plain = nn.InstanceNorm2d(8)
        self.affine = nn.InstanceNorm2d(8, affine=True)

    def forward(self, x):
        y = self.conv(x)
        return self.plain(y) / 2.0, self.affine(y + 3.0)


def get_inputs():
    return [torch.randn(4, 3, 12, 10)]


def get_init_inputs():
    return []
