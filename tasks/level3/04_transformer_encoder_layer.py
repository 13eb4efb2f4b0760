import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Pre-norm transformer encoder layer: multi-head self-attention and a GELU MLP, each with a residual."""

    def __init__(self, d_model: int, num_heads: int, ffn_dim: int):
        super().__init__()
        self.num_heads = num_heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq_len, d_model = x.shape
        head_dim = d_model // self.num_heads
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        q = q.reshape(batch, seq_len, self.num_heads, head_dim).transpose(1, 2)
        k = k.reshape(batch, seq_len, self.num_heads, head_dim).transpose(1, 2)
        v = v.reshape(batch, seq_len, self.num_heads, head_dim).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(head_dim)
        attention = torch.softmax(scores, dim=-1)
        context = torch.matmul(attention, v).transpose(1, 2).reshape(batch, seq_len, d_model)
        x = x + self.out_proj(context)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


batch_size = 8
seq_len = 1024
d_model = 1024
num_heads = 16
ffn_dim = 4096
KFORGE_CPU_SIZES = {"batch_size": 2, "seq_len": 8, "d_model": 32, "num_heads": 4, "ffn_dim": 64}


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model)]


def get_init_inputs():
    return [d_model, num_heads, ffn_dim]
