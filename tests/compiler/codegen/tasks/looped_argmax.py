import torch
import torch.nn as nn


class Model(nn.Module):
    """Index reductions over rows too long for registers, folded R_BLOCK at a time: over a middle
    dim in column tiles, and over the innermost dim. Rounded values make ties (the first index must
    win) and a few NaNs (ranked highest, the first one wins)."""

    def forward(self, x, y):
        return torch.argmax(x, dim=1), torch.argmax(y, dim=1)


def get_inputs():
    x = torch.randn(2, 3000, 40).round()
    x[0, 2500, 3] = float("nan")
    x[1, 10, 7] = float("nan")
    x[1, 20, 7] = float("nan")
    y = torch.randn(3, 20000).round()
    y[2, 19999] = float("nan")
    return [x, y]


def get_init_inputs():
    return []
