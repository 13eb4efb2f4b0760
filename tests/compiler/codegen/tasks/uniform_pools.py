import torch
import torch.nn as nn


class Model(nn.Module):
    """Pooling windows in row tiles: uniform adaptive windows, padding counted and not, whole windows
    (a constant divisor), dilated max, and max windows in ceil mode (SqueezeNet's), whose last
window hangs past the input."""

    def __init__(self):
        super().__init__()
        self.adaptive = nn.AdaptiveAvgPool2d(4)
        self.counted = nn.AvgPool2d(3, stride=2, padding=1)
        self.uncounted = nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False)
        self.dilated = nn.MaxPool2d(3, stride=2, padding=1, dilation=2)
        self.whole = nn.AvgPool2d(3, stride=2)
        self.ceiled = nn.MaxPool2d(3, stride=2, ceil_mode=True)

    def forward(self, x):
        return self.adaptive(x), self.counted(x) + self.uncounted(x), self.dilated(x), self.whole(x), self.ceiled(x)


def get_inputs():
    return [torch.randn(2, 3, 16, 12)]


def get_init_inputs():
    return []
