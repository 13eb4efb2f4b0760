import torch
import torch.nn as nn


class Model(nn.Module):
    """Data-dependent control flow between exportable submodules: torch.export cannot capture the
    whole Model (the `if` reads a tensor's value), but the MLP and the norm export on their own."""

    def __init__(self, features, hidden):
        super(Model, self).__init__()
        self.mlp = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, features))
        self.norm = nn.LayerNorm(features)

    def forward(self, x):
        y = self.mlp(x)
        if y.mean() > 0:
            y = y * 2.0
        return self.norm(y)


batch, features, hidden = 512, 1024, 4096
KFORGE_CPU_SIZES = {"batch": 4, "features": 8, "hidden": 16}


def get_inputs():
    return [torch.randn(batch, features)]


def get_init_inputs():
    return [features, hidden]
