import torch
import torch.nn as nn


class Model(nn.Module):
    """Swin's window attention: a learned relative-position bias gathered from its table through a
    precomputed index buffer, added to the scores of each head."""

    def __init__(self, dim=48, heads=2, window=5):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.table = nn.Parameter(torch.randn((2 * window - 1) ** 2, heads))
        coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij")).flatten(1)
        relative = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (window - 1)
        self.register_buffer("relative_position_index", relative[:, :, 0] * (2 * window - 1) + relative[:, :, 1])

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        q = q * (c // self.heads) ** -0.5
        attn = q @ k.transpose(-2, -1)
        bias = self.table[self.relative_position_index.view(-1)].view(n, n, -1).permute(2, 0, 1).contiguous()
        attn = (attn + bias.unsqueeze(0)).softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(b, n, c)


def get_inputs():
    return [torch.randn(3, 25, 48)]


def get_init_inputs():
    return []
