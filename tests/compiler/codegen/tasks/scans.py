import torch
import torch.nn as nn


class Model(nn.Module):
    """Scans and flips: a cumulative product, a reverse cumulative sum (flip, scan, flip), a flip
    over two dims of a permuted tensor followed by arithmetic; and scans over rows longer than a
    block holds (folded a block at a time with a carry), along the innermost dim and down columns,
    with a masked sum (level1/93's form)."""

    def forward(self, x, y, long_rows, mask, columns):
        product = torch.cumprod(1.0 + 0.1 * x, dim=1)
        reverse = torch.cumsum(y.flip(0), 0).flip(0)
        both = torch.relu(y.permute(1, 0, 2).flip([0, 2])) * 2.0
        masked = torch.cumsum(long_rows * mask, dim=1)
        long_product = torch.cumprod(1.0 + 1e-5 * long_rows, dim=1)
        down = torch.cumsum(columns, dim=0) * 0.5
        return product, reverse, both, masked, long_product, down


def get_inputs():
    return [torch.randn(5, 37), torch.randn(9, 4, 6), torch.randn(2, 20000), torch.rand(2, 20000) > 0.5,
            torch.randn(17000, 12)]


def get_init_inputs():
    return []
