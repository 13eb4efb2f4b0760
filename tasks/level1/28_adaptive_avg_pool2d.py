import torch
import torch.nn as nn


class Model(nn.Module):
    """Adaptive 2D average pooling to a fixed square output size."""

    def __init__(self, output_size: int):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(output_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 64
channels = 512
height = 56
width = 56
output_size = 7
KFORGE_CPU_SIZES = {"batch_size": 2, "channels": 8, "height": 14, "width": 14, "output_size": 4}


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [output_size]
