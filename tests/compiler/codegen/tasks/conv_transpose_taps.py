import torch
import torch.nn as nn


class Model(nn.Module):
    """A strided, dilated transposed convolution with output padding and no bias."""

    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(6, 5, 3, stride=2, padding=1, output_padding=1, dilation=2, bias=False)

    def forward(self, x):
        return self.up(x)


def get_inputs():
    return [torch.randn(2, 6, 7, 9)]


def get_init_inputs():
    return []
