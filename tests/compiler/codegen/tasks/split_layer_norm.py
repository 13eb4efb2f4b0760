import torch
import torch.nn as nn


class Model(nn.Module):
    """Layer norm over two rows of 2^17 elements, far from zero: split statistics (var_mean), then
    a separate normalizing pass with the elementwise affine."""

    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm([4, 128, 256])
        with torch.no_grad():
            self.ln.weight.uniform_(0.5, 2.0)
            self.ln.bias.uniform_(-1.0, 1.0)

    def forward(self, x):
        return self.ln(x)


def get_inputs():
    return [torch.randn(2, 4, 128, 256) * 2.0 - 500.0]


def get_init_inputs():
    return []
