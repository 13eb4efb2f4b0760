import torch
import torch.nn as nn


class Model(nn.Module):
    """Transposed convolutions whose taps are looped over in place: strided and dilated with output
    padding and no bias; grouped (2-D, and 3-D with a bias and an asymmetric kernel)."""

    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(6, 5, 3, stride=2, padding=1, output_padding=1, dilation=2, bias=False)
        self.grouped = nn.ConvTranspose2d(6, 4, (3, 2), stride=(2, 3), padding=(1, 0), dilation=(2, 1), groups=2)
        self.grouped_3d = nn.ConvTranspose3d(4, 6, (3, 1, 2), stride=2, padding=(1, 0, 1), output_padding=1, groups=2)

    def forward(self, x, z):
        return self.up(x), torch.relu(self.grouped(x)), self.grouped_3d(z)


def get_inputs():
    return [torch.randn(2, 6, 7, 9), torch.randn(1, 4, 3, 4, 5)]


def get_init_inputs():
    return []
