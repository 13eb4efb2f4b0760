import torch
import torch.nn as nn


class Model(nn.Module):
    """Convolutions of few input channels in the padded-rows layout (forced on by the test): an
    image's stem (7x7, stride 2, padded, with an epilogue), AlexNet's first layer in small (11x11,
    stride 4), 5 channels padded to 8 in 1-D, 12 channels in 2-D, and a 3-D one dilated and padded
    along its outer dims; and two that stay in place: one dilated along its last dim, and a 3-D one
    with a single tap along its last dim (a row of one quad, as level1/59's 3 x 3 x 1 kernel)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 40, 7, stride=2, padding=3)
        self.alex = nn.Conv2d(3, 36, 11, stride=4, padding=2)
        self.line = nn.Conv1d(5, 34, 4, padding=1)
        self.twelve = nn.Conv2d(12, 40, 3, padding=1, bias=False)
        self.cube = nn.Conv3d(3, 33, (2, 3, 3), stride=(1, 2, 2), padding=(1, 1, 0), dilation=(2, 1, 1))
        self.wide = nn.Conv2d(3, 48, 3, dilation=(1, 2))
        self.column = nn.Conv3d(3, 20, (3, 3, 1))

    def forward(self, x, s, t, v):
        stem = torch.relu(self.stem(x)) * 0.5
        return stem, self.alex(x), self.line(s), self.twelve(t), self.cube(v), self.wide(x), self.column(v)


def get_inputs():
    return [torch.randn(2, 3, 35, 37), torch.randn(2, 5, 19), torch.randn(1, 12, 9, 10), torch.randn(1, 3, 5, 9, 11)]


def get_init_inputs():
    return []
