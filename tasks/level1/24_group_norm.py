import torch
import torch.nn as nn


class Model(nn.Module):
    """Group normalization over NCHW input with a learned per-channel affine transform."""

    def __init__(self, num_groups: int, num_features: int):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gn(x)


batch_size = 16
features = 64
num_groups = 8
height = 256
width = 256
KFORGE_CPU_SIZES = {"batch_size": 2, "features": 8, "num_groups": 4, "height": 16, "width": 16}


def get_inputs():
    return [torch.randn(batch_size, features, height, width)]


def get_init_inputs():
    return [num_groups, features]
