import torch
import torch.nn as nn


class Model(nn.Module):
    """NetVLAD's soft assignment: a training-mode batch norm over few channels and many rows. Both of
    its statistics are split reductions, the second storing the centered values from its slices."""

    def __init__(self):
        super().__init__()
        self.batch_norm = nn.BatchNorm1d(4)

    def forward(self, x):
        return torch.relu(self.batch_norm(x))


def get_inputs():
    return [torch.rand(131100, 4) * 3.0 + 2.0]


def get_init_inputs():
    return []
