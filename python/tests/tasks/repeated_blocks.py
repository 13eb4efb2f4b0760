import torch
import torch.nn as nn


class Model(nn.Module):
    """Four identical residual blocks (linear, ReLU, add) between an input and an output layer:
    the blocks' kernels are the same kernel under four names."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(24, 32)
        self.blocks = nn.ModuleList(nn.Linear(32, 32) for _ in range(4))
        self.head = nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        for block in self.blocks:
            x = x + torch.relu(block(x))
        return self.head(x)


def get_inputs():
    return [torch.randn(16, 24)]


def get_init_inputs():
    return []
