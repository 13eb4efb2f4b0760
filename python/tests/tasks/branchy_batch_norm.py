import torch
import torch.nn as nn


class Model(nn.Module):
    """A training-mode conv + batch norm block behind data-dependent control flow: torch.export
    cannot capture the whole Model (the `if` reads a tensor's value), but the block exports on its
    own, and its forward updates the batch norm's running statistics."""

    def __init__(self, channels):
        super(Model, self).__init__()
        self.block = nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1), nn.BatchNorm2d(channels))

    def forward(self, x):
        y = self.block(x)
        if x.mean() > 0:
            y = y * 2.0
        return y


batch, channels, size = 16, 64, 64
KFORGE_CPU_SIZES = {"batch": 2, "channels": 4, "size": 8}


def get_inputs():
    return [torch.randn(batch, channels, size, size)]


def get_init_inputs():
    return [channels]
