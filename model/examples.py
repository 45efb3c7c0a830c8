"""Worked examples from the seed tutorials, reproduced exactly."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from model.attention import SelfAttention

JOURNEY_TEXT = "Your journey starts with one step"


@dataclass(frozen=True)
class JourneyExample:
    """Seed 002 (Raschka, ch. 3.4): six words, 3-d embeddings, W_q, W_k, W_v from torch.rand(3, 2)."""

    words: tuple[str, ...]
    inputs: torch.Tensor  # (6, 3)
    attention: SelfAttention  # d_in=3 -> d_out=2, holding the seed's matrices


def journey_example() -> JourneyExample:
    inputs = torch.tensor(
        [[0.43, 0.15, 0.89],  # Your     (x^1)
         [0.55, 0.87, 0.66],  # journey  (x^2)
         [0.57, 0.85, 0.64],  # starts   (x^3)
         [0.22, 0.58, 0.33],  # with     (x^4)
         [0.77, 0.25, 0.10],  # one      (x^5)
         [0.05, 0.80, 0.55]]  # step     (x^6)
    )
    generator = torch.Generator().manual_seed(123)  # the seed's torch.manual_seed(123), without touching global state
    W_query, W_key, W_value = (torch.rand(3, 2, generator=generator) for _ in range(3))
    return JourneyExample(tuple(JOURNEY_TEXT.split()), inputs, SelfAttention.from_matrices(W_query, W_key, W_value))
