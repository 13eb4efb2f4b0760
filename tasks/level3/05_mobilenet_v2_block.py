import torch
import torch.nn as nn


class Model(nn.Module):
    """MobileNetV2 inverted residual block: 1x1 expand, 3x3 depthwise, 1x1 project, each with batchnorm, plus identity shortcut."""

    def __init__(self, channels: int, expand_ratio: int):
        super().__init__()
        hidden_channels = channels * expand_ratio
        self.expand = nn.Sequential(
            nn.Conv2d(channels, hidden_channels, kernel_size=1, bias=False),
            nn.BatchNorm2d(hidden_channels),
            nn.ReLU6(),
        )
        self.depthwise = nn.Sequential(
            nn.Conv2d(hidden_channels, hidden_channels, kernel_size=3, padding=1, groups=hidden_channels, bias=False),
            nn.BatchNorm2d(hidden_channels),
            nn.ReLU6(),
        )
        self.project = nn.Sequential(
            nn.Conv2d(hidden_channels, channels, kernel_size=1, bias=False),
            nn.BatchNorm2d(channels),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.project(self.depthwise(self.expand(x)))


batch_size = 32
channels = 64
expand_ratio = 6
height = 56
width = 56
KFORGE_CPU_SIZES = {"batch_size": 2, "channels": 4, "expand_ratio": 2, "height": 12, "width": 12}


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, expand_ratio]
