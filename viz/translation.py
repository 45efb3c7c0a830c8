"""Encoder-decoder figures: decoder self-attention, cross-attention, the training loss curve."""

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
        x_title="source token (encoder)",
        y_title="target token (decoder)" if step_labels is None else STEP_AXIS,
        row_sums=row_sums,
        theme=theme,
    )


def loss_curve(
    train_loss: Sequence[float],
    *,
    steps: Sequence[float] | None = None,
    val_loss: Sequence[float] | None = None,
    val_steps: Sequence[float] | None = None,
    log_y: bool = False,
    title: str | None = "Training loss",
    y_title: str = "cross-entropy loss",
    theme: str = "default",
) -> go.Figure:
    """Loss over training steps (and validation loss, possibly at other steps) as lines."""
    y = np.asarray(train_loss, dtype=np.float64).ravel()
    x = np.arange(y.size) if steps is None else np.asarray(steps, dtype=np.float64).ravel()
    if x.size != y.size:
        raise ValueError(f"{x.size} steps for {y.size} losses")
    fig = Fig(
        vf.scatter(
            x=x,
            y=y.astype(np.float32),
            mode="lines",
            name="train",
            line=dict(color=QUALITATIVE[0]),
            meta={"role": "line"},
            hovertemplate="step %{x}<br>train loss %{y:.4g}<extra></extra>",
        )
    )
    if val_loss is not None:
        vy = np.asarray(val_loss, dtype=np.float64).ravel()
        if val_steps is not None:
            vx = np.asarray(val_steps, dtype=np.float64).ravel()
        else:
            vx = x if vy.size == y.size else np.arange(vy.size)
        if vx.size != vy.size:
            raise ValueError(f"{vx.size} validation steps for {vy.size} losses")
        fig.add_trace(
            vf.scatter(
                x=vx,
                y=vy.astype(np.float32),
                mode="lines+markers",
                name="validation",
                line=dict(color=QUALITATIVE[1], dash="dash"),
                meta={"role": "line"},
                hovertemplate="step %{x}<br>validation loss %{y:.4g}<extra></extra>",
            )
        )
    if x.size and np.all(x == np.round(x)) and np.ptp(x) <= 12:
        fig.update_xaxes(dtick=1)  # few integer steps: no 0.5 ticks
    fig.update_layout(
        title=title_layout(title),
        xaxis_title="training step",
        yaxis=dict(title_text=y_title, type="log" if log_y else "linear"),
    )
    return apply_theme(fig, theme)


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
            meta={"role": "line"}, hovertemplate=f"{escape_text(name)}<br>step %{{x}}<br>loss %{{y:.4g}}<extra></extra>",
        ))
    fig.update_layout(title=title_layout(title), xaxis_title="training step", yaxis_title=y_title,
                      legend=dict(orientation="h", x=0, xanchor="left", y=-0.25, yanchor="top"))
    return apply_theme(fig, theme)
