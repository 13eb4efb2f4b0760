import torch
import torch.nn as nn


class Model(nn.Module):
    """Convolutions over more than 32 input channels: one flat loop over (tap, channel block)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(40, 8, 3, padding=1)
        self.conv1d = nn.Conv1d(8, 6, 4, stride=2)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        return self.conv1d(y.flatten(2))


def get_inputs():
    return [torch.randn(2, 40, 6, 7)]


def get_init_inputs():
    return []
