import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """F.scaled_dot_product_attention with a boolean mask per batch, broadcast over heads. Query 5
    of the first batch attends to nothing: SDPA gives zeros there, not softmax's NaN."""

    def forward(self, q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def get_inputs():
    mask = torch.rand(2, 1, 37, 37) > 0.3
    mask[0, 0, 5, :] = False
    return [torch.randn(2, 2, 37, 24), torch.randn(2, 2, 37, 24), torch.randn(2, 2, 37, 24), mask]


def get_init_inputs():
    return []
