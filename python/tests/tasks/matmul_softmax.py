import torch
import torch.nn as nn


class Model(nn.Module):
    """A matrix product, then a softmax over its rows: two fusion groups (a matmul, a reduction)."""

    def forward(self, a, b):
        return torch.softmax(a @ b, dim=1)


m, k, n = 2048, 1024, 4096
KFORGE_CPU_SIZES = {"m": 16, "k": 32, "n": 64}


def get_inputs():
    return [torch.randn(m, k), torch.randn(k, n)]


def get_init_inputs():
    return []
