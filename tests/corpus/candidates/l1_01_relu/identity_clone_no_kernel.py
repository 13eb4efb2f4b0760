"""Cheat: returns x.clone(), relying on the task's inputs being non-negative.

relu(x) == x for the torch.rand inputs the task draws, so a clone is right on them and costs one
copy. The file defines no Triton kernel and builds no CUDA extension at all, so the static
no_kernel tripwire rejects it before it runs (it would also fail wrong_output on signed inputs).
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.clone()
