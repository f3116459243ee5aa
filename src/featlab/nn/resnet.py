"""CIFAR-style ResNet-18 (He et al. 2016, as in Kuang Liu's pytorch-cifar, which Midpoint Mixup's code uses).

3×3 stride-1 stem, no max-pool, four stages of two BasicBlocks (64, 128, 256, 512 channels, strides 1, 2, 2, 2),
global average pooling and a linear head. Any number of input channels (1 for MNIST/FMNIST, 6 for spurious-channel
CIFAR) and classes. Global average pooling equals the original ``avg_pool2d(out, 4)`` on 32×32 and 28×28 inputs
(the last feature map is 4×4 for both) and also accepts smaller inputs such as 8×8 digits.

``width`` scales every stage (64 is the paper's ResNet-18; smaller widths are for tests on CPU).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin: int, cout: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, blocks=(2, 2, 2, 2), in_channels: int = 3, num_classes: int = 10, width: int = 64):
        super().__init__()
        if in_channels < 1 or num_classes < 1 or width < 1:
            raise ValueError(f"ResNet needs in_channels, num_classes, width >= 1; got {in_channels}, {num_classes}, "
                             f"{width}")
        self.conv1 = nn.Conv2d(in_channels, width, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        layers, cin = [], width
        for i, n in enumerate(blocks):
            cout = width * 2**i
            for j in range(n):
                layers.append(BasicBlock(cin, cout, stride=(1 if i == 0 or j > 0 else 2)))
                cin = cout
        self.layers = nn.Sequential(*layers)
        self.linear = nn.Linear(cin, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layers(out)
        out = F.adaptive_avg_pool2d(out, 1).flatten(1)
        return self.linear(out)


def resnet18(in_channels: int = 3, num_classes: int = 10, width: int = 64) -> ResNet:
    return ResNet((2, 2, 2, 2), in_channels, num_classes, width)


class Normalize(nn.Module):
    """(x − mean)/std per channel inside the model, so attack radii live in [0, 1] pixel space."""

    mean: torch.Tensor  # buffers
    std: torch.Tensor

    def __init__(self, mean, std):
        super().__init__()
        # built on the CPU like the layers' weights; .to(device) moves the buffers with them
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32, device="cpu").reshape(1, -1, 1, 1))
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32, device="cpu").reshape(1, -1, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std
