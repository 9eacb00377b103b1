"""Synthetic classification data and a small model, both fixed by a seed."""

from __future__ import annotations

import torch
from torch import nn

FEATURES = 32
CLASSES = 4
SAMPLES = 6144
SEED = 1234


def dataset(seed: int = SEED) -> tuple[torch.Tensor, torch.Tensor]:
    """``(inputs, labels)``: Gaussian inputs labelled by a fixed random linear teacher."""
    generator = torch.Generator().manual_seed(seed)
    inputs = torch.randn(SAMPLES, FEATURES, generator=generator)
    teacher = torch.randn(FEATURES, CLASSES, generator=generator)
    labels = (inputs @ teacher).argmax(dim=1)
    return inputs, labels


def shard(
    inputs: torch.Tensor, labels: torch.Tensor, rank: int, world: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Every ``world``-th sample starting at ``rank``: disjoint shards, one per process."""
    return inputs[rank::world], labels[rank::world]


def model(seed: int = SEED) -> nn.Module:
    """A two-layer MLP, initialised identically on every replica."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, CLASSES))
