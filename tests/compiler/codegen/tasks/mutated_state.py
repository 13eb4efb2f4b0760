import torch
import torch.nn as nn


class Model(nn.Module):
    """State forward() updates besides batch norm's: a parameter decayed in place (no_grad), an int64
    step counter and a moving average of the batch's column means; the output reads the decayed
    parameter."""

    def __init__(self, features):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(features))
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))
        self.register_buffer("average", torch.zeros(features))

    def forward(self, x):
        with torch.no_grad():
            self.scale.mul_(0.5)
        self.steps.add_(1)
        self.average.mul_(0.9).add_(0.1 * x.mean(0))
        return x * self.scale


def get_inputs():
    return [torch.randn(16, 32)]


def get_init_inputs():
    return [32]
