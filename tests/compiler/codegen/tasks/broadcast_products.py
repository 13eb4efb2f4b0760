import torch
import torch.nn as nn


class Model(nn.Module):
    """A linear layer over a permuted view of an image (nn.MultiheadAttention's in-projection of its
    [L, N, E] sequence): the view cannot be flattened to rows, so matmul writes the product as a
    bmm over L of N x E rows by the weight expanded along L. Run along L, it is one product of
    L rows for each of the N images."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(40, 96)

    def forward(self, x):
        sequence = x.flatten(2).permute(2, 0, 1)  # [L, N, E] = [24, 2, 40]
        return self.proj(sequence)


def get_inputs():
    return [torch.randn(2, 40, 4, 6)]


def get_init_inputs():
    return []
