import torch
import torch.nn as nn


class Model(nn.Module):
    """Group norm inside a chain (level 2's pattern): a convolution, group norm, then pointwise ops
    (a GELU with its `approximate` keyword among them) that read a per-channel parameter and the
    convolution's output. The norm runs over x viewed [N, group, C/group, H*W]; the ops after it
    run in that view too, so the statistics, the affine and the tail are one kernel. The last op
    divides by a row over W alone, which that view (H*W as one dim) cannot express: the division
    is a pointwise pass of its own after the view back."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3)
        self.gn = nn.GroupNorm(4, 16)
        self.scale = nn.Parameter(torch.rand(16, 1, 1) + 0.5)
        self.row = nn.Parameter(torch.rand(1, 1, 1, 32) + 0.5)

    def forward(self, x):
        y = self.conv(x)
        z = nn.functional.gelu(self.gn(y), approximate="tanh") * self.scale + y
        return torch.nn.functional.hardswish(z) / self.row


def get_inputs():
    return [torch.randn(4, 3, 34, 34)]


def get_init_inputs():
    return []
