import torch
import torch.nn as nn


class Model(nn.Module):
    """One-element parameters read by a GEMM's epilogue, a reduction and a pointwise kernel (as
    level-2 tasks scale by nn.Parameter(torch.ones(1))): each is one scalar load, which Triton's
    compiler accepts only without a block mask."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(16, 24)
        self.scale = nn.Parameter(torch.full((1,), 1.5))
        self.shift = nn.Parameter(torch.full((1,), -0.25))
        self.gain = nn.Parameter(torch.full((), 2.0))

    def forward(self, x):
        y = self.linear(x) * self.scale
        return y, (y + self.shift).amax(dim=1), torch.tanh(x) * self.gain, (x * x + self.shift).sum(dim=1)


def get_inputs():
    return [torch.randn(8, 16)]


def get_init_inputs():
    return []
