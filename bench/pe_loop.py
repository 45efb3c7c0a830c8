"""The double Python loop of seed 004's "first way", written correctly, as the baseline for the
vectorised sinusoidal table (model.positional).

Seed 004 loops i over all d dimensions and uses 2*i/d, which is wrong; here i runs over the
d/2 (sin, cos) pairs: PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(same angle).
"""

from __future__ import annotations

import math

import torch


def looped_sinusoidal(max_len: int, d_model: int) -> torch.Tensor:
    """As the seed does it: one Python float per cell, written element by element into a tensor."""
    pe = torch.zeros(max_len, d_model)
    for pos in range(max_len):
        for i in range(d_model // 2):  # i over pairs
            angle = pos / 10000.0 ** (2 * i / d_model)
            pe[pos, 2 * i] = math.sin(angle)
            pe[pos, 2 * i + 1] = math.cos(angle)
    return pe


def looped_sinusoidal_lists(max_len: int, d_model: int) -> torch.Tensor:
    """The same loop into Python lists, one tensor at the end: the fairest pure-Python baseline."""
    rows = []
    for pos in range(max_len):
        row = [0.0] * d_model
        for i in range(d_model // 2):
            angle = pos / 10000.0 ** (2 * i / d_model)
            row[2 * i] = math.sin(angle)
            row[2 * i + 1] = math.cos(angle)
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float32)
