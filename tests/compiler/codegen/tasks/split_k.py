import torch
import torch.nn as nn


class Model(nn.Module):
    """GEMMs of few output tiles over a long K, which may split their K loop over programs: a
    linear layer with a bias and ReLU epilogue (K = 2000, not a multiple of the K tile), a batched
    product (3 batches along grid axis 1), a convolution over 96 input channels (a flat loop over
    taps and channel blocks) and one over 12 (a flat loop over K)."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(2000, 40)
        self.wide = nn.Conv2d(96, 8, 3, padding=1)
        self.narrow = nn.Conv2d(12, 8, 5)

    def forward(self, x, u, v, image, small):
        return torch.relu(self.linear(x)), torch.bmm(u, v), self.wide(image) * 0.5, self.narrow(small)


def get_inputs():
    return [torch.randn(24, 2000), torch.randn(3, 20, 1000), torch.randn(3, 1000, 12), torch.randn(2, 96, 5, 5),
            torch.randn(2, 12, 9, 9)]


def get_init_inputs():
    return []
