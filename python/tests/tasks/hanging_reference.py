"""A task whose reference never returns: Model.forward spins forever. kforge must stop it within
its time limit, say so, and replace the worker that ran it."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        while True:
            pass


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
