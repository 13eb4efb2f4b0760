import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Mean smooth L1 (Huber, beta 1) loss between predictions and targets."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.smooth_l1_loss(predictions, targets)


batch_size = 4096
dim = 16384
KFORGE_CPU_SIZES = {"batch_size": 16, "dim": 128}


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
