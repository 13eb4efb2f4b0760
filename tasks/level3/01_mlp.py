import torch
import torch.nn as nn


class Model(nn.Module):
    """Multi-layer perceptron: a stack of Linear+ReLU layers followed by a Linear output layer."""

    def __init__(self, input_size: int, hidden_size: int, num_hidden_layers: int, output_size: int):
        super().__init__()
        layers = []
        current_size = input_size
        for _ in range(num_hidden_layers):
            layers.append(nn.Linear(current_size, hidden_size))
            layers.append(nn.ReLU())
            current_size = hidden_size
        layers.append(nn.Linear(current_size, output_size))
        self.network = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x)


batch_size = 1024
input_size = 4096
hidden_size = 4096
num_hidden_layers = 3
output_size = 1000
KFORGE_CPU_SIZES = {"batch_size": 4, "input_size": 64, "hidden_size": 32, "num_hidden_layers": 2, "output_size": 10}


def get_inputs():
    return [torch.randn(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_hidden_layers, output_size]
