import torch
import torch.nn as nn


class Model(nn.Module):
    """3-D max and average pooling (as level-2 tasks use them after 3-D convolutions): plain 2x2x2
    windows, padded and dilated max windows, padded average windows with and without the padding
    counted, odd sizes that leave a remainder, and an activation after."""

    def __init__(self):
        super().__init__()
        self.max_plain = nn.MaxPool3d(2)
        self.max_padded = nn.MaxPool3d(3, stride=2, padding=1, dilation=(1, 2, 1))
        self.avg_counted = nn.AvgPool3d((2, 3, 2), stride=(2, 1, 2), padding=(1, 1, 0))
        self.avg_uncounted = nn.AvgPool3d(3, stride=2, padding=1, count_include_pad=False)

    def forward(self, x):
        return (torch.relu(self.max_plain(x)), self.max_padded(x), self.avg_counted(x), self.avg_uncounted(x),
                self.max_plain(self.max_plain(x - 1.0)))


def get_inputs():
    return [torch.randn(2, 3, 7, 8, 9)]


def get_init_inputs():
    return []
