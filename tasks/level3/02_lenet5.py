import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """LeNet-5 classifier: two 5x5 conv+ReLU+max-pool stages and three fully connected layers."""

    def __init__(
        self,
        in_channels: int,
        image_size: int,
        conv1_channels: int,
        conv2_channels: int,
        fc1_features: int,
        fc2_features: int,
        num_classes: int,
    ):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, conv1_channels, kernel_size=5)
        self.conv2 = nn.Conv2d(conv1_channels, conv2_channels, kernel_size=5)
        feature_size = ((image_size - 4) // 2 - 4) // 2
        self.fc1 = nn.Linear(conv2_channels * feature_size * feature_size, fc1_features)
        self.fc2 = nn.Linear(fc1_features, fc2_features)
        self.fc3 = nn.Linear(fc2_features, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.conv1(x)), kernel_size=2, stride=2)
        x = F.max_pool2d(F.relu(self.conv2(x)), kernel_size=2, stride=2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


batch_size = 4096
in_channels = 3
image_size = 32
conv1_channels = 6
conv2_channels = 16
fc1_features = 120
fc2_features = 84
num_classes = 10
KFORGE_CPU_SIZES = {
    "batch_size": 4,
    "in_channels": 1,
    "image_size": 16,
    "conv1_channels": 4,
    "conv2_channels": 8,
    "fc1_features": 32,
    "fc2_features": 16,
}


def get_inputs():
    return [torch.randn(batch_size, in_channels, image_size, image_size)]


def get_init_inputs():
    return [in_channels, image_size, conv1_channels, conv2_channels, fc1_features, fc2_features, num_classes]
