import torch
import torch.nn as nn


class Model(nn.Module):
    """3D convolution over (batch, channels, depth, height, width), same padding, without bias."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, padding: int):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, padding=padding, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 8
in_channels = 16
out_channels = 32
depth = 32
height = 64
width = 64
kernel_size = 3
padding = 1
KFORGE_CPU_SIZES = {"batch_size": 1, "in_channels": 2, "out_channels": 4, "depth": 6, "height": 8, "width": 8}


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, padding]
