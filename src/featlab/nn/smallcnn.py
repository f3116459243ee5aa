"""A small CNN for CPU presets (8×8 digits, or any size): three 3×3 conv layers, a 2×2 max-pool after the second
(from 4×4 up) and one after the first too on images of 16×16 or more (28×28 FashionMNIST: 28 → 14 → 7, a LeNet-like
reach; 8×8 digits keep the one pool), global average pooling and a linear head. About 30k parameters at width 32."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class SmallCNN(nn.Module):
    def __init__(self, in_channels: int = 1, num_classes: int = 10, width: int = 32):
        super().__init__()
        if in_channels < 1 or num_classes < 1 or width < 1:
            raise ValueError(f"SmallCNN needs in_channels, num_classes, width >= 1; got {in_channels}, "
                             f"{num_classes}, {width}")
        self.conv1 = nn.Conv2d(in_channels, width, 3, padding=1)
        self.conv2 = nn.Conv2d(width, 2 * width, 3, padding=1)
        self.conv3 = nn.Conv2d(2 * width, 2 * width, 3, padding=1)
        self.linear = nn.Linear(2 * width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x))
        if min(x.shape[-2:]) >= 16:  # larger images: the later layers see more of the image, at a quarter the cost
            x = F.max_pool2d(x, 2)
        x = F.relu(self.conv2(x))
        if min(x.shape[-2:]) >= 4:
            x = F.max_pool2d(x, 2)
        x = F.relu(self.conv3(x))
        return self.linear(F.adaptive_avg_pool2d(x, 1).flatten(1))
