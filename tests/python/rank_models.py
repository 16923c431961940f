"""Models for the DDP ranks' tests (--from-python rank_models:NAME): vectors of 64 features, 10
classes (the data: a tensors:FILE the tests save). Some misbehave on one rank, as a real job's
faults do: a crash, a hang, a parameter that never gets a gradient."""

import os
import time

import torch
from torch import nn


def _rank():
    return int(os.environ.get("RANK", "0"))


class Blocks(nn.Module):
    """A stem, six repeated blocks in a ModuleList (what checkpoint=blocks recomputes), a head."""

    def __init__(self, width=256, depth=6):
        super().__init__()
        self.stem = nn.Linear(64, width)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU())
            for _ in range(depth))
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        for block in self.blocks:
            x = x + block(x)
        return self.head(x)


class Unused(Blocks):
    """A head that is never called: DDP must find its parameters unused."""

    def __init__(self):
        super().__init__(width=32, depth=2)
        self.spare = nn.Linear(32, 10)


class CrashOnRank1(Blocks):
    def forward(self, x):
        if _rank() == 1:
            os.abort()
        return super().forward(x)


class HangOnRank1(Blocks):
    def forward(self, x):
        if _rank() == 1:
            time.sleep(3600)
        return super().forward(x)


class RaiseOnRank1(Blocks):
    def forward(self, x):
        if _rank() == 1:
            raise ValueError("rank 1 cannot take this batch")
        return super().forward(x)


class HeavyUnlessCheckpointed(Blocks):
    """Holds 128 MiB a sample (1 GiB at batch 8) through a training forward unless its blocks are
    checkpointed (wrapped, with the original as .inner): the loop as given passes a memory cap
    the checkpointed loop fits."""

    def forward(self, x):
        ballast = None
        if self.training and not hasattr(self.blocks[0], "inner"):
            ballast = torch.ones(x.shape[0] << 25)  # written: resident
        out = super().forward(x)
        del ballast
        return out


class AlwaysHeavy(Blocks):
    """Holds 128 MiB a sample through every training forward, checkpointed or not."""

    def forward(self, x):
        ballast = torch.ones(x.shape[0] << 25) if self.training else None
        out = super().forward(x)
        del ballast
        return out
