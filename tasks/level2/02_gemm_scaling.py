import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer followed by multiplication with a small constant factor."""

    def __init__(self, in_features: int, out_features: int, scaling_factor: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x) * self.scaling_factor


batch_size = 1024
in_features = 8192
out_features = 8192
scaling_factor = 1e-5
KFORGE_CPU_SIZES = {"batch_size": 8, "in_features": 64, "out_features": 32}


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scaling_factor]
