"""A model whose batch a memory cap limits (bench section 22's checkpointing half): a stack of
residual MLP blocks over sequences of 256 positions, each block keeping activations of every
position for backward, so that activations, not weights, fill memory. --from-python
memory_models:SequenceMLP; its data: tensors of [N, 256, 128] features and [N] classes."""

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 2 * width)
        self.down = nn.Linear(2 * width, width)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


class SequenceMLP(nn.Module):
    def __init__(self, width=128, depth=8, classes=10):
        super().__init__()
        self.blocks = nn.Sequential(*[Block(width) for _ in range(depth)])
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(self.blocks(x).mean(dim=1))
