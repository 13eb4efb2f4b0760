import torch
import torch.nn as nn


class Model(nn.Module):
    """Concatenations written in place: a dense block (each layer's output appended to a growing
    cat, every cat a leading slice of the last), a fire module (two ReLU'd expansions side by
    side) squeezing one of the block's leading slices, an inception module (a pooled branch among
    them), a cat whose part is read elsewhere too (copied in), a cat along the last dim of two
    pointwise results of one kernel, and one of two statistics a reduction kernel computes."""

    def __init__(self):
        super().__init__()
        self.dense = nn.ModuleList([
            nn.Sequential(nn.BatchNorm2d(6 + 4 * i), nn.ReLU(inplace=True), nn.Conv2d(6 + 4 * i, 4, 3, padding=1, bias=False))
            for i in range(3)])
        self.squeeze = nn.Conv2d(14, 24, 3, padding=1)
        self.expand1x1 = nn.Conv2d(24, 5, 1)
        self.expand3x3 = nn.Conv2d(24, 7, 3, padding=1)
        self.branch1x1 = nn.Conv2d(12, 4, 1)
        self.branch3x3 = nn.Conv2d(12, 6, 3, padding=1)
        self.branch_pool = nn.Sequential(nn.MaxPool2d(3, stride=1, padding=1), nn.Conv2d(12, 3, 1))

    def forward(self, x):
        features = [x]
        cats = [x]
        for layer in self.dense:
            features.append(layer(cats[-1]))
            cats.append(torch.cat(features, 1))
        s = torch.relu(self.squeeze(cats[2]))
        f = torch.cat([torch.relu(self.expand1x1(s)), torch.relu(self.expand3x3(s))], 1)
        g = torch.cat([self.branch1x1(f), self.branch3x3(f), self.branch_pool(f)], 1)
        u = torch.tanh(g)
        w = torch.cat([u, g * 2.0], dim=-3) * u.mean() + cats[3].mean()
        stats = torch.cat([x.mean((2, 3), keepdim=True) * 2.0, x.amax((2, 3), keepdim=True) + 1.0], 1)
        return torch.cat([torch.sigmoid(w), torch.relu(w)], dim=-1), stats


def get_inputs():
    return [torch.randn(2, 6, 7, 5)]


def get_init_inputs():
    return []
