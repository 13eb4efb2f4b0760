import torch
import torch.nn as nn


class Model(nn.Module):
    """Multi-head self-attention with a learned relative-position bias per head, gathered from its table through a precomputed index buffer (sequence length 256)."""

    def __init__(self, d_model: int, num_heads: int, seq_len: int):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.relative_bias_table = nn.Parameter(torch.randn(2 * seq_len - 1, num_heads) * 0.02)
        position = torch.arange(seq_len)
        self.register_buffer("relative_position_index", position[:, None] - position[None, :] + seq_len - 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, d_model = x.shape
        head_dim = d_model // self.num_heads
        qkv = self.qkv(x).reshape(batch, length, 3, self.num_heads, head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = (q @ k.transpose(-2, -1)) * head_dim**-0.5
        bias = self.relative_bias_table[self.relative_position_index.view(-1)].view(length, length, -1).permute(2, 0, 1)
        attention = torch.softmax(scores + bias.unsqueeze(0), dim=-1)
        context = (attention @ v).transpose(1, 2).reshape(batch, length, d_model)
        return self.out_proj(context)


batch_size = 8
seq_len = 256
d_model = 512
num_heads = 8
KFORGE_CPU_SIZES = {"batch_size": 2, "seq_len": 16, "d_model": 32, "num_heads": 2}


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model)]


def get_init_inputs():
    return [d_model, num_heads, seq_len]
