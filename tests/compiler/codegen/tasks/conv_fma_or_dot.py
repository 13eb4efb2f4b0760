import torch
import torch.nn as nn


class Model(nn.Module):
    """Convolutions whose kernel offers both forms, the tuner choosing by DIRECT (at most 32 outputs
    per group and 128 input channels x taps; large ones on a GPU, any size in the test): 3 -> 24
    channels, a grouped, strided, dilated one with an epilogue, a 3-D one; and one with 32 input
    channels x 9 taps, which is only an implicit GEMM."""

    def __init__(self):
        super().__init__()
        self.wide = nn.Conv2d(3, 24, 3, padding=1)
        self.grouped = nn.Conv2d(8, 40, 3, stride=2, padding=2, dilation=2, groups=2)
        self.cube = nn.Conv3d(4, 32, 3, bias=False)
        self.deep = nn.Conv2d(32, 20, 3)

    def forward(self, x, y, v, z):
        w = self.wide(x)
        g = torch.tanh(self.grouped(y)) * 2.0 - 0.5
        return w, g, torch.sigmoid(self.cube(v)), self.deep(z)


def get_inputs():
    return [torch.randn(2, 3, 10, 9), torch.randn(2, 8, 9, 11), torch.randn(1, 4, 5, 6, 5), torch.randn(2, 32, 10, 9)]


def get_init_inputs():
    return []
