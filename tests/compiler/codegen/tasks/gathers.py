import torch
import torch.nn as nn


class Model(nn.Module):
    """Reads at computed positions: torch.roll over two dims (index arithmetic with fmod, then a
    gather along each dim), a relative-position table read by its index buffer (2-D, as Swin's),
    rows picked by an index with negative entries, and integer remainders of negative values; ops
    after a gather or a flip that read its input too (one kernel: the input loaded both at the
    computed positions and at the output's own)."""

    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.randn(25, 3))
        coords = torch.stack(torch.meshgrid(torch.arange(3), torch.arange(3), indexing="ij")).flatten(1)
        relative = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + 2
        self.register_buffer("position_index", relative[:, :, 0] * 5 + relative[:, :, 1])
        self.register_buffer("picks", torch.tensor([-1, 0, 3, -4]))
        self.register_buffer("perm", torch.tensor([4, 2, 0, 8, 1, 7, 3, 5, 6]))

    def forward(self, x, y, n):
        rolled = torch.roll(x, shifts=(2, -3), dims=(1, 2)) * 2.0
        bias = self.table[self.position_index].permute(2, 0, 1) + 1.0
        rows = y[self.picks]
        shuffled = y[self.perm] - y * 0.5
        mirrored = torch.tanh(y.flip(-1) + y)
        return rolled, bias, torch.relu(rows), torch.remainder(n, 7), torch.fmod(n, -3), shuffled, mirrored


def get_inputs():
    return [torch.randn(2, 6, 5, 4), torch.randn(9, 8), torch.arange(-12, 12).reshape(4, 6)]


def get_init_inputs():
    return []
