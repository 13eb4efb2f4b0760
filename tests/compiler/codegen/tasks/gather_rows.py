import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Cross-entropy with an ignored class over rows longer than a register block (the row kernel
    loops), plus a plain gather of one element per row from the input."""

    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        picked = torch.gather(logits, 1, targets[:, None])
        return F.cross_entropy(logits, targets, ignore_index=3) + picked.mean()


def get_inputs():
    return [torch.randn(6, 20000), torch.randint(0, 8, (6,))]


def get_init_inputs():
    return []
