import torch
import torch.nn as nn


class Model(nn.Module):
    """Mean squared error plus the largest absolute error over a whole tensor: rows long enough to be
    split over many programs and combined by a second kernel."""

    def forward(self, predictions, targets):
        diff = predictions - targets
        return torch.mean(diff * diff) + torch.amax(torch.abs(diff))


def get_inputs():
    return [torch.randn(4, 65536), torch.randn(4, 65536)]


def get_init_inputs():
    return []
