import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Layer normalization over the hidden dimension, GELU, then multiplication by a constant."""

    def __init__(self, hidden_size: int, scaling_factor: float):
        super().__init__()
        self.layer_norm = nn.LayerNorm(hidden_size)
        self.scaling_factor = scaling_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.layer_norm(x)) * self.scaling_factor


batch_size = 16
seq_len = 1024
hidden_size = 4096
scaling_factor = 2.0
KFORGE_CPU_SIZES = {"batch_size": 2, "seq_len": 8, "hidden_size": 64}


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden_size)]


def get_init_inputs():
    return [hidden_size, scaling_factor]
