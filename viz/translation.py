"""Encoder-decoder figures: decoder self-attention, cross-attention, the training runs' loss curves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from viz import fig as vf
from viz.attention import weights_heatmap
from viz.fig import Fig
from viz.heatmap import title_layout
from viz.labels import escape_text
from viz.theme import QUALITATIVE, apply_theme

STEP_AXIS = "decoding step (reads → writes)"  # a row labelled "[BOS]→she": the step that read [BOS] wrote "she"
# a cell's hover names its row and column as the axes do: with decoding steps for rows, "query 1:you→like" and "key 0:你"
# beside view 7's grid of every head, whose hover said "decoding step (reads → writes) 1:you→like", "source token 0:你"
STEP_HOVER = {"source": (STEP_AXIS, "source token"), "target": (STEP_AXIS, "target token")}


def decoder_self_attention_heatmap(
    weights: np.ndarray,
    *,
    target_labels: Sequence[str] | None,
    mask: np.ndarray | None,
    step_labels: Sequence[str] | None = None,
    title: str | None = "Decoder self-attention (causal: each token sees itself and the past)",
    row_sums: bool = True,
    theme: str = "default",
) -> go.Figure:
    """Decoder self-attention weights (target × target), masked cells (mask False) drawn as masked.

    The mask is the one the model used (model/masks.py: True = may attend), never one made up here;
    None draws every cell as attendable. step_labels: each row as the decoding step it is, "read → written"
    (lab.compute.Sentence.step_labels), where a model translates; the keys stay the tokens read."""
    w = np.asarray(weights)
    return weights_heatmap(
        w,
        row_labels=target_labels if step_labels is None else step_labels,
        col_labels=target_labels,
        mask=mask,
        title=title,
        x_title="target token (attended to)",
        y_title="target token (attending)" if step_labels is None else STEP_AXIS,
        axis_names=("query", "key") if step_labels is None else STEP_HOVER["target"],
        row_sums=row_sums,
        theme=theme,
    )


def cross_attention_heatmap(
    weights: np.ndarray,
    *,
    target_labels: Sequence[str] | None,
    source_labels: Sequence[str] | None,
    mask: np.ndarray | None = None,
    step_labels: Sequence[str] | None = None,
    title: str | None = "Cross-attention: each target token over the source",
    row_sums: bool = True,
    theme: str = "default",
) -> go.Figure:
    """Cross-attention weights (target × source); mask (True = may attend) marks source padding. step_labels:
    each row as "read → written" (see decoder_self_attention_heatmap). row_sums: "Σ = 1.000" beside each row
    (off in a chart half a page wide, where its ~85 px came out of the plot's)."""
    return weights_heatmap(
        np.asarray(weights),
        row_labels=target_labels if step_labels is None else step_labels,
        col_labels=source_labels,
        mask=mask,
        title=title,
        x_title="source token",  # as view 7's grid of every head and every hover of them say
        y_title="target token (decoder)" if step_labels is None else STEP_AXIS,
        axis_names=("query", "key") if step_labels is None else STEP_HOVER["source"],
        row_sums=row_sums,
        theme=theme,
    )


def loss_curves(
    runs: Mapping[str, Sequence[float]],
    *,
    title: str | None = "Training loss",
    y_title: str = "cross-entropy loss",
    theme: str = "default",
) -> go.Figure:
    """Several training runs' losses over their steps (1, 2, ...), one line each, named by `runs`' keys: the
    "train it yourself" runs with and without positional encoding, side by side. Told apart by dash too, not
    by colour alone."""
    if not runs:
        raise ValueError("no training run to draw")
    fig = Fig()
    for i, (name, losses) in enumerate(runs.items()):
        y = np.asarray(losses, dtype=np.float64).ravel()
        fig.add_trace(vf.scatter(
            x=np.arange(1, y.size + 1), y=y.astype(np.float32), mode="lines", name=escape_text(name),
            line=dict(color=QUALITATIVE[i % len(QUALITATIVE)], dash=("solid", "dash", "dot")[i % 3]),
            meta={"role": "line"}, hovertemplate=f"{escape_text(name)}<br>step %{{x}}<br>loss %{{y:.4~g}}<extra></extra>",
        ))
    fig.update_layout(title=title_layout(title), xaxis_title="training step", yaxis_title=y_title,
                      legend=dict(orientation="h", x=0, xanchor="left", y=-0.25, yanchor="top"))
    return apply_theme(fig, theme)
