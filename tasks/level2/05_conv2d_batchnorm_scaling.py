import torch
import torch.nn as nn


class Model(nn.Module):
    """2D convolution, batch normalization (training mode), then multiplication by a constant."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, scaling_factor: float):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bn = nn.BatchNorm2d(out_channels)
        self.scaling_factor = scaling_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(self.conv(x)) * self.scaling_factor


batch_size = 16
in_channels = 32
out_channels = 64
height = 128
width = 128
kernel_size = 3
scaling_factor = 2.0
KFORGE_CPU_SIZES = {"batch_size": 2, "in_channels": 4, "out_channels": 8, "height": 12, "width": 12}


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, scaling_factor]
