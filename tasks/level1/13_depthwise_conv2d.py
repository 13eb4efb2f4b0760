import torch
import torch.nn as nn


class Model(nn.Module):
    """Depthwise 2D convolution (one filter per channel), without bias."""

    def __init__(self, channels: int, kernel_size: int, padding: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=padding, groups=channels, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 16
channels = 64
height = 256
width = 256
kernel_size = 3
padding = 1
KFORGE_CPU_SIZES = {"batch_size": 2, "channels": 4, "height": 16, "width": 16}


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, kernel_size, padding]
