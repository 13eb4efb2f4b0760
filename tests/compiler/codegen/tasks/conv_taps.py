import torch
import torch.nn as nn


class Model(nn.Module):
    """Grouped, strided, dilated 2-D convolution with 16 input channels per group, then a 1-D one."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(32, 24, 3, stride=2, padding=2, dilation=2, groups=2)
        self.conv1d = nn.Conv1d(24, 8, 5, padding=1)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        return self.conv1d(y.flatten(2))


def get_inputs():
    return [torch.randn(2, 32, 11, 13)]


def get_init_inputs():
    return []
