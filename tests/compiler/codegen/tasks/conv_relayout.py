import torch
import torch.nn as nn


class Model(nn.Module):
    """Convolutions for the channels-last and subpixel layouts (forced on by the test): a grouped,
    strided, dilated 2-D one; a 3-D one; transposed ones (more than 16 outputs, so not in direct
    form) in 2-D (strided, with output padding and an epilogue; and with a stride of 1, one
    phase), 1-D (stride 3, taps not a multiple of it) and 3-D; and one on a non-dense view, which
    stays in place."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(32, 24, 3, stride=2, padding=2, dilation=2, groups=2)
        self.conv3d = nn.Conv3d(16, 6, 3, padding=1)
        self.up = nn.ConvTranspose2d(24, 20, 4, stride=2, padding=1, output_padding=1)
        self.same = nn.ConvTranspose2d(24, 18, 3, padding=1)
        self.up1d = nn.ConvTranspose1d(16, 18, 5, stride=3, padding=2)
        self.up3d = nn.ConvTranspose3d(16, 17, 3, stride=2, padding=1, bias=False)
        self.strided = nn.Conv2d(16, 4, 3)

    def forward(self, x, v, s):
        y = torch.relu(self.conv(x))
        up = torch.sigmoid(self.up(y)) * 2.0
        cube = self.conv3d(v)
        line = self.up1d(s)
        up3d = self.up3d(v)
        view = self.strided(v[:, :, 1, :, ::2])
        return up, cube, line, up3d, view, torch.tanh(self.same(y))


def get_inputs():
    return [torch.randn(2, 32, 11, 13), torch.randn(1, 16, 4, 5, 6), torch.randn(2, 16, 7)]


def get_init_inputs():
    return []
