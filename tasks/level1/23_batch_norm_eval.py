import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """2D batch normalization in inference form: normalizes with the stored running statistics."""

    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.batch_norm(
            x,
            self.bn.running_mean,
            self.bn.running_var,
            self.bn.weight,
            self.bn.bias,
            training=False,
            eps=self.bn.eps,
        )


batch_size = 16
features = 64
height = 256
width = 256
KFORGE_CPU_SIZES = {"batch_size": 2, "features": 4, "height": 16, "width": 16}


def get_inputs():
    return [torch.randn(batch_size, features, height, width)]


def get_init_inputs():
    return [features]
