import torch
import torch.nn as nn


def segment_sums(x):
    """Mamba2's segment sums: a lower-triangular mask built from `tril` of a boolean `ones`, its
    complement filled with -inf."""
    steps = x.size(-1)
    cumsum = torch.cumsum(x, dim=-1)
    sums = cumsum[..., :, None] - cumsum[..., None, :]
    mask = torch.tril(torch.ones(steps, steps, device=x.device, dtype=bool), diagonal=0)
    return sums.masked_fill(~mask, -torch.inf)


class Model(nn.Module):
    """Boolean and integer logic in kernels: the mask above (a comparison, logical and, bitwise not
    of a boolean, `where` into -inf, exp), logical xor, and bitwise not/and/or/xor of integers."""

    def forward(self, x, k):
        twice = k * 2
        bits = (~k) ^ ((k | twice) & twice)
        either = torch.logical_xor(x > 0, k > 50)
        return torch.exp(segment_sums(x)), bits.float(), either.float()


def get_inputs():
    return [torch.randn(2, 3, 16) * 0.1, torch.randint(0, 100, (2, 3, 16))]


def get_init_inputs():
    return []
