import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer, sigmoid, then a sum over features per row."""

    def __init__(self, in_features: int, hidden_size: int):
        super().__init__()
        self.linear = nn.Linear(in_features, hidden_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(torch.sigmoid(self.linear(x)), dim=1, keepdim=True)


batch_size = 1024
in_features = 8192
hidden_size = 8192
KFORGE_CPU_SIZES = {"batch_size": 8, "in_features": 64, "hidden_size": 32}


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, hidden_size]
