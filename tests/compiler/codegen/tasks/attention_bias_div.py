import math

import torch
import torch.nn as nn


class Model(nn.Module):
    """Attention written out with torch.matmul: scores divided by sqrt(d), no mask, and a learned
    additive bias per head broadcast over the batch."""

    def __init__(self, heads=3, seq_len=29):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(heads, seq_len, seq_len))

    def forward(self, q, k, v):
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        return torch.matmul(torch.softmax(scores + self.bias, dim=-1), v)


def get_inputs():
    return [torch.randn(2, 3, 29, 32), torch.randn(2, 3, 29, 32), torch.randn(2, 3, 29, 32)]


def get_init_inputs():
    return []
