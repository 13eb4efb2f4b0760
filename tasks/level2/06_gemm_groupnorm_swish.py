import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer, group normalization over features, then swish (x * sigmoid(x))."""

    def __init__(self, in_features: int, out_features: int, num_groups: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.group_norm = nn.GroupNorm(num_groups, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.group_norm(self.linear(x))
        return x * torch.sigmoid(x)


batch_size = 1024
in_features = 8192
out_features = 8192
num_groups = 16
KFORGE_CPU_SIZES = {"batch_size": 8, "in_features": 64, "out_features": 32, "num_groups": 4}


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, num_groups]
