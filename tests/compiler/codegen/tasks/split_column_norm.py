import torch
import torch.nn as nn


class Model(nn.Module):
    """NetVLAD's batch norm at its channel count: 48 channels over many rows. Each slice of the split
    statistics reads [rows, 64 channels] tiles (the last 16 masked) along the rows' contiguous
    channels, and the variance's slices store the centered values the same way."""

    def __init__(self):
        super().__init__()
        self.batch_norm = nn.BatchNorm1d(48)

    def forward(self, x):
        return torch.softmax(self.batch_norm(x), dim=1)


def get_inputs():
    return [torch.rand(131100, 48) * 3.0 + 2.0]


def get_init_inputs():
    return []
