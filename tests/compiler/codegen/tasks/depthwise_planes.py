import torch
import torch.nn as nn


class Model(nn.Module):
    """Depthwise convolutions, each program one (image, channel) plane: MBConv's 5x5 stride 2
    with a bias and an epilogue reading a per-channel scale and the input's residual, a dilated
    asymmetric one, and one whose output planes (3 x 2 positions) fill less than a program."""

    def __init__(self):
        super().__init__()
        self.mb = nn.Conv2d(6, 6, 5, stride=2, padding=2, groups=6)
        self.dilated = nn.Conv2d(6, 6, (3, 5), padding=(2, 2), dilation=(2, 1), groups=6, bias=False)
        self.small = nn.Conv2d(6, 6, 3, stride=3, groups=6)
        self.scale = nn.Parameter(torch.randn(1, 6, 1, 1))

    def forward(self, x):
        mb = torch.clamp(self.mb(x) * self.scale, 0.0, 6.0)
        dilated = self.dilated(x) + x[:, :, :, :]
        return mb, dilated, torch.relu(self.small(x[:, :, :9, :8]))


def get_inputs():
    return [torch.randn(3, 6, 13, 11)]


def get_init_inputs():
    return []
