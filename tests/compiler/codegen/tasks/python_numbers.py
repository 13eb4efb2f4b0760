import torch
import torch.nn as nn


class Model(nn.Module):
    """Numbers passed as Python scalars (a float and an int): the graph reads them as inputs, so the
    generated model computes with the values it is given, not the captured ones."""

    def forward(self, x, scale, shift):
        return torch.relu(x * scale + shift)


def get_inputs():
    return [torch.randn(6, 40), 2.5, 3]


def get_init_inputs():
    return []
