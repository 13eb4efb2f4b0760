import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """F.scaled_dot_product_attention with is_causal=True and an explicit scale."""

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3)


def get_inputs():
    return [torch.randn(2, 2, 37, 24), torch.randn(2, 2, 37, 24), torch.randn(2, 2, 37, 24)]


def get_init_inputs():
    return []
