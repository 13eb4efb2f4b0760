import torch
import torch.nn as nn


class Model(nn.Module):
    """2D convolution, average pooling, tanh, then a sum over channels."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, pool_kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.avg_pool = nn.AvgPool2d(pool_kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.tanh(self.avg_pool(self.conv(x)))
        return torch.sum(x, dim=1)


batch_size = 16
in_channels = 32
out_channels = 64
height = 128
width = 128
kernel_size = 3
pool_kernel_size = 2
KFORGE_CPU_SIZES = {"batch_size": 2, "in_channels": 4, "out_channels": 8, "height": 12, "width": 12}


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, pool_kernel_size]
