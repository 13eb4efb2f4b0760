import torch
import torch.nn as nn


class Model(nn.Module):
    """Products a GPU runs as CUDA C++ FMA kernels under IEEE dots (a linear layer with its bias, a
    batched product of a split's views) beside ones left to Triton (an activation in the epilogue)."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(40, 96)
        self.proj = nn.Linear(32, 40)

    def forward(self, x):
        q, k, v = self.qkv(x).split(32, dim=-1)
        scores = torch.tanh(torch.matmul(q, k.transpose(-1, -2)))
        return torch.relu(self.proj(torch.matmul(scores, v)))


def get_inputs():
    return [torch.randn(2, 24, 40)]


def get_init_inputs():
    return []
