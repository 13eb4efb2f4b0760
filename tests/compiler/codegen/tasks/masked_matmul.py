import torch
import torch.nn as nn


class Model(nn.Module):
    """Products masked to a triangle: the mask (index arithmetic, a bool tensor) and the `where`
    join the GEMM's epilogue."""

    def forward(self, a, b):
        return torch.triu(torch.matmul(a, b)), torch.tril(torch.matmul(b, a), diagonal=-1)


def get_inputs():
    return [torch.triu(torch.rand(24, 24)), torch.triu(torch.rand(24, 24))]


def get_init_inputs():
    return []
