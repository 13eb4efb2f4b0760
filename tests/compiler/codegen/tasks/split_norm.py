import torch
import torch.nn as nn


class Model(nn.Module):
    """A tensor divided by its Frobenius norm: the norm is a split reduction, the division a
    separate pointwise kernel over the whole tensor."""

    def forward(self, x):
        return x / torch.norm(x, p="fro")


def get_inputs():
    return [torch.randn(2, 65536)]


def get_init_inputs():
    return []
