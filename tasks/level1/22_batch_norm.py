import torch
import torch.nn as nn


class Model(nn.Module):
    """2D batch normalization in training mode: normalizes with batch statistics and updates running statistics."""

    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)


batch_size = 16
features = 64
height = 256
width = 256
KFORGE_CPU_SIZES = {"batch_size": 2, "features": 4, "height": 16, "width": 16}


def get_inputs():
    return [torch.randn(batch_size, features, height, width)]


def get_init_inputs():
    return [features]
