import torch
import torch.nn as nn


class Model(nn.Module):
    """Convolutions the direct form takes (at most 16 outputs per group, at most 256 input
    channels x taps): LeNet's first two, a grouped, strided, dilated one with an epilogue, a 1-D and
    a 3-D one; transposed ones by output phase (3-D with a stride of 2 as level-2's upsampling
    layers, with output padding and an epilogue; 2-D grouped with unequal strides, a stride larger
    than the kernel and padding); and one with 24 outputs over 3 channels, which stays an implicit
    GEMM (flat K)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.grouped = nn.Conv2d(8, 10, 3, stride=2, padding=2, dilation=2, groups=2, bias=False)
        self.line = nn.Conv1d(4, 3, 5, stride=2, padding=1)
        self.cube = nn.Conv3d(2, 5, 3, padding=1)
        self.wide = nn.Conv2d(3, 24, 3, padding=1)
        self.up = nn.ConvTranspose3d(3, 16, 3, stride=2, padding=1, output_padding=1)
        self.up_grouped = nn.ConvTranspose2d(4, 6, (3, 2), stride=(2, 3), padding=(1, 0), groups=2)

    def forward(self, x, y, s, v):
        a = torch.relu(self.conv1(x))
        b = self.conv2(a)
        g = torch.tanh(self.grouped(y)) + 1.0
        u = torch.sigmoid(self.up(v[:, :1].expand(-1, 3, -1, -1, -1) * 2.0)) - 0.5
        return b, g, self.line(s), self.cube(v), self.wide(x), u, self.up_grouped(y[:, :4])


def get_inputs():
    return [torch.randn(2, 3, 14, 13), torch.randn(2, 8, 9, 11), torch.randn(2, 4, 17), torch.randn(1, 2, 4, 5, 6)]


def get_init_inputs():
    return []
