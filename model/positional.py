"""Positional encodings, selectable by name ("Attention Is All You Need" §3.5).

Each kind is a module whose forward(T) returns the (T, d_model) table that is ADDED to the token
embeddings. A new additive kind registers itself in POSITIONAL_ENCODINGS with a constructor taking
(max_len, d_model). RoPE or ALiBi cannot be one: they act inside attention (rotating q and k, or
biasing Q K^T by the offset), so they would change model/attention.py, not add a table here.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch
from torch import nn


def sinusoidal_at(positions: torch.Tensor, d_model: int, dims: list[int] | None = None) -> torch.Tensor:
    """PE at any (also fractional) positions, float64: (N,) -> (N, d_model). Used for smooth curves.

    dims: only these dimensions, in this order: (N,) -> (N, len(dims)), equal to [:, dims] of the
    whole table (a curve plot shows a few of d_model dimensions at thousands of positions).
    """
    position = positions.to(torch.float64).reshape(-1, 1)  # (N, 1)
    if dims is not None:
        j = torch.as_tensor(dims, dtype=torch.int64)  # (D,)
        if j.numel() and (j.min() < 0 or j.max() >= d_model):
            raise ValueError(f"dims {dims} must lie in 0..{d_model - 1}")
        # dimension j belongs to pair i = j // 2 (frequency omega_i); even j is the sin, odd j the cos
        angle = position * frequencies(d_model)[j // 2]  # (N, D)
        return torch.where(j % 2 == 0, torch.sin(angle), torch.cos(angle))
    # omega_i = 1 / 10000^(2i / d_model), i = 0 .. d_model/2 - 1: one frequency per (sin, cos) pair
    angle = position * frequencies(d_model)  # (N, d_model/2)
    pe = torch.empty(position.size(0), d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)  # PE(pos, 2i)   = sin(pos / 10000^(2i/d_model))
    pe[:, 1::2] = torch.cos(angle)  # PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model))
    return pe


@functools.lru_cache(maxsize=16)
def _sinusoidal_table(max_len: int, d_model: int) -> torch.Tensor:
    pe = sinusoidal_at(torch.arange(max_len), d_model).to(torch.float32)  # §3.5 table: (max_len, d_model)
    pe.requires_grad_(False)
    return pe


def offset_dot_products(offsets: torch.Tensor, d_model: int) -> torch.Tensor:
    """PE(m) . PE(m + k) = sum_i cos(omega_i k): depends on the offset k only (float64)."""
    k = offsets.to(torch.float64).reshape(-1, 1)  # (N, 1)
    return torch.cos(k * frequencies(d_model)).sum(-1)  # (N, 1) * (d_model/2,) -> (N, d_model/2) -> (N,)


def sinusoidal_encoding(max_len: int, d_model: int) -> torch.Tensor:
    """The (max_len, d_model) sinusoidal table of §3.5, computed once per (max_len, d_model).

    Computed in float64 and rounded once to float32, so large positions stay accurate.
    """
    if not isinstance(max_len, int) or max_len < 1:
        raise ValueError(f"max_len must be a positive integer, got {max_len!r}")
    if not isinstance(d_model, int) or d_model < 2 or d_model % 2:
        raise ValueError(
            f"d_model={d_model!r} must be an even integer >= 2: sinusoidal encoding pairs "
            "dimensions 2i (sin) and 2i+1 (cos)"
        )
    return _sinusoidal_table(max_len, d_model).clone()


def frequencies(d_model: int) -> torch.Tensor:
    """omega_i = 10000^(-2i/d_model) for each (sin, cos) pair i; shape (d_model/2,)."""
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # 2i = 0, 2, ..., d_model - 2: (d_model/2,)
    # §3.5: 1 / 10000^(2i/d_model), as exp(-ln(10000) * 2i / d_model)
    return torch.exp(-math.log(10000.0) * two_i / d_model)


def relative_rotation(k: int, d_model: int) -> torch.Tensor:
    """The fixed (d_model, d_model) map R_k with PE(pos + k) = R_k @ PE(pos) for every pos (§3.5: PE_{pos+k}
    is a linear function of PE_pos).

    Block diagonal: one 2x2 rotation by angle omega_i * k per (sin, cos) pair.
    """
    rot = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i, w in enumerate(frequencies(d_model).tolist()):
        c, s = math.cos(w * k), math.sin(w * k)
        # sin(a + b) = sin a cos b + cos a sin b ; cos(a + b) = cos a cos b - sin a sin b
        # the (2, 2) block of pair i on the diagonal
        rot[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor([[c, s], [-s, c]], dtype=torch.float64)
    return rot


class SinusoidalEncoding(nn.Module):
    """Fixed sin/cos table, kept as a (non-persistent) buffer so it moves with .to(device)."""

    def __init__(self, max_len: int, d_model: int) -> None:
        super().__init__()
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model), persistent=False)

    def forward(self, length: int) -> torch.Tensor:
        return self.pe[:length]  # (T, d_model)


class LearnedEncoding(nn.Module):
    """One trainable vector per position (the paper's §3.5 alternative, Table 3 row E)."""

    def __init__(self, max_len: int, d_model: int) -> None:
        super().__init__()
        self.table = nn.Embedding(max_len, d_model)
        nn.init.normal_(self.table.weight, std=0.02)

    def forward(self, length: int) -> torch.Tensor:
        return self.table.weight[:length]  # (T, d_model)


class NoEncoding(nn.Module):
    """No position information at all: the encoder (without a look-ahead mask, which leaks order) becomes
    permutation-equivariant."""

    def __init__(self, max_len: int, d_model: int) -> None:
        super().__init__()
        self.d_model = d_model
        self.register_buffer("_anchor", torch.zeros(()), persistent=False)  # carries device/dtype

    def forward(self, length: int) -> torch.Tensor:
        return self._anchor.new_zeros(length, self.d_model)  # (T, d_model)


POSITIONAL_ENCODINGS: dict[str, Callable[[int, int], nn.Module]] = {
    "sinusoidal": SinusoidalEncoding,
    "learned": LearnedEncoding,
    "none": NoEncoding,
}


def build_positional(kind: str, max_len: int, d_model: int) -> nn.Module:
    """The POSITIONAL_ENCODINGS module named `kind`; an unknown name is a ValueError listing the known ones."""
    try:
        factory = POSITIONAL_ENCODINGS[kind]
    except KeyError:
        raise ValueError(
            f"positional={kind!r} is unknown: choose one of {sorted(POSITIONAL_ENCODINGS)}"
        ) from None
    return factory(max_len, d_model)
