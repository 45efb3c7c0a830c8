"""Word order: permutation equivariance of self-attention without PE, as pictures and numbers.

Without positional information and without a causal mask, f(Px) = P f(x) (equivariance) and a
pooled output is the same for every order (invariance). With B = PA (B reorders A's tokens), these figures
show |f(B) − P f(A)| (as the app's tables write it), the two sentences' outputs and self-attention weights
aligned token by token, and the pooled outputs, each with its largest difference as a number in the title.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from viz import fig as vf
from viz.fig import Fig, subplots
from viz.heatmap import (
    ValuePanel,
    add_panel,
    add_value_panels,
    color_range,
    coloraxis_layout,
    heatmap_figure,
    label_gap,
    panel_px,
    prepare_grid,
    set_column_gaps,
    symmetric_range,
    tick_budget,
    title_layout,
    value_gap,
)
from viz.labels import display_labels, escape_text, num
from viz.theme import QUALITATIVE, WEIGHTS_COLORSCALE, apply_theme, theme_spec


def order_difference_heatmap(
    matrix: np.ndarray,
    *,
    row_labels: Sequence[str] | None,
    reference: float | None = None,
    title: str | None = "|f(B) − P f(A)| per token and dimension",
    theme: str = "default",
) -> go.Figure:
    """Absolute differences (tokens × d_model) on a sequential scale from 0.

    reference: the top of the colour range, e.g. max |f(x)|, so float rounding (~1e-7) stays
    dark instead of filling the scale; never below the largest difference (no cell is clipped),
    which is also the default.
    """
    diff = np.abs(np.asarray(matrix, dtype=np.float64))
    if diff.ndim != 2:
        raise ValueError(f"expected differences (tokens, d_model), got shape {diff.shape}")
    finite = diff[np.isfinite(diff)]
    top = float(finite.max()) if finite.size else float("nan")
    note = f"max |f(B) − P f(A)| = {num(top)}"
    if reference is not None:
        reference = max(reference, top) if finite.size else reference
        note += f" (colour range 0 … {num(reference)})"
    return heatmap_figure(
        diff,
        row_text=display_labels(row_labels, diff.shape[0]),
        col_text=[str(j) for j in range(diff.shape[1])],
        kind="magnitude",
        title=title,
        x_title="dimension",
        y_title="token",
        value_name="|difference|",
        x_name="dim",
        y_name="token",
        zmax=reference,
        value_format=".1e",
        extra_notes=[note],
        theme=theme,
    )


def aligned_outputs_figure(
    outputs_a: np.ndarray,
    outputs_b: np.ndarray,
    *,
    labels_a: Sequence[str] | None,
    labels_b: Sequence[str] | None,
    positions_b: Sequence[int] | None = None,
    name_a: str = "A",
    name_b: str = "B",
    title: str | None = "Outputs per token, B reordered to A's token order",
    zmax: float | None = None,
    theme: str = "default",
) -> go.Figure:
    """A's outputs, B's outputs aligned to A's tokens, and |A − B| (tokens × d_model): A and B on one diverging
    scale, ±zmax where given and it holds every value (a figure beside it, of another model, uses the same), else
    the values' own; |A − B| on the magnitude scale from 0 to the same top, as order_difference_heatmap draws the
    same numbers (zero dark in both: on the diverging scale it was white, a bright block on a dark page).

    outputs_b row i must be the output of the token that matches A's token i; positions_b gives
    each such row's original position in B. labels_b are B's pieces in B's own order, so row i is
    labelled with B's label at positions_b[i] ("position:piece" of B: the same piece as A's row i).
    """
    a = np.asarray(outputs_a, dtype=np.float64)
    b = np.asarray(outputs_b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"outputs {a.shape} and {b.shape} must both be (tokens, d_model)")
    diff = np.abs(a - b)
    rows_a = display_labels(labels_a, a.shape[0])
    if labels_b is not None and positions_b is not None:
        own = display_labels(labels_b, b.shape[0])  # B's labels in B's order: "position:piece"
        rows_b = [own[int(p)] for p in positions_b]  # (T,) in A's order
    else:
        rows_b = display_labels(labels_b, b.shape[0])
    # One top for all three panels: |A − B| is in the outputs' own units, so float rounding (~1e-7) stays at the
    # colour of 0 instead of filling a scale of its own (and the scale holds it). A and B diverge about 0; |A − B|,
    # never negative, on the magnitude scale of the |f(B) − P f(A)| map, which holds the same numbers
    lo, hi, scale = color_range("values", [a, b], zmax=max(zmax or 0.0, symmetric_range(a, b, diff)))
    _, _, magnitude = color_range("magnitude", [diff], zmax=hi)
    # B's labels differ from A's (its own positions): they sit between panels 1 and 2. The
    # |A − B| panel's rows are A's, so it repeats no labels.
    fig = subplots(
        rows=1,
        cols=3,
        subplot_titles=(escape_text(name_a), escape_text(f"{name_b} (aligned)"), "|A − B|"),
    )
    dims = max(a.shape[1], b.shape[1])  # each pair of panels' facing x tick labels ("60", "0") an em apart
    set_column_gaps(fig, [value_gap(dims, theme, cols=3, labels=rows_b), value_gap(dims, theme, cols=3)])
    panels = [(a, rows_a, "output", "coloraxis", "values"), (b, rows_b, "output", "coloraxis", "values"),
              (diff, rows_a, "|A − B|", "coloraxis2", "magnitude")]
    notes = add_value_panels(
        fig,
        [ValuePanel(m, rows, y_title="token" if c == 0 else "", show_y_labels=c < 2, value_name=name,
                    coloraxis=axis, kind=kind)
         for c, (m, rows, name, axis, kind) in enumerate(panels)],
        theme=theme,
        cell_values=False,
    )
    largest = float(np.nanmax(diff)) if np.isfinite(diff).any() else float("nan")
    notes.append(f"max |A − B| = {num(largest)}")
    # the two colour bars one above the other, at the right edge where one stood
    half = dict(len=0.46, lenmode="fraction", yref="paper")
    outputs, difference = coloraxis_layout(lo, hi, scale, "output"), coloraxis_layout(0.0, hi, magnitude, "|A − B|")
    outputs["colorbar"].update(half, y=1.0, yanchor="top")
    difference["colorbar"].update(half, y=0.0, yanchor="bottom")
    fig.update_layout(coloraxis=outputs, coloraxis2=difference, title=title_layout(title, notes))
    return apply_theme(fig, theme)


def aligned_attention_figure(
    weights_a: np.ndarray,
    weights_b: np.ndarray,
    *,
    labels_a: Sequence[str] | None,
    labels_b: Sequence[str] | None,
    positions_b: Sequence[int],
    name_a: str = "A",
    name_b: str = "B",
    title: str | None = "Self-attention weights, B in A's order",
    theme: str = "default",
) -> go.Figure:
    """A's self-attention weights W(A), B's aligned to A's tokens, and |A − B|, on the weights' [0, 1] axis.

    weights_b must already be aligned: its row and column i are B's for the token that matches A's token i
    (Pᵀ W(B) P where B = P A), so without positional information it equals W(A) (W(B) = P W(A) Pᵀ) and the
    third panel is dark. positions_b[i] is that token's position in B: B's panel labels its rows and keys
    with B's own "position:piece" (as aligned_outputs_figure does), the other two with A's.
    """
    a = np.asarray(weights_a, dtype=np.float64)
    b = np.asarray(weights_b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"weights {a.shape} and {b.shape} must both be (tokens, tokens)")
    diff = np.abs(a - b)
    T = a.shape[0]
    own_a, own_b = display_labels(labels_a, T), display_labels(labels_b, T)
    rows_b = [own_b[int(p)] for p in positions_b]  # (T,) B's labels in A's order
    t = theme_spec(theme)
    pw, ph = panel_px(theme, cols=3)
    fig = subplots(rows=1, cols=3, subplot_titles=(
        escape_text(name_a), escape_text(f"{name_b} (aligned)"), escape_text(f"|{name_a} − {name_b}|")))
    # B's own row labels sit between panels 1 and 2; between 2 and 3 a key label's width, so that B's last key
    # label and the next panel's first never meet, turned or not (a regression walk: "2:宜0:春", 12 tokens, paper)
    gaps = [label_gap(rows_b, theme, cols=3), max(0.04, label_gap(own_a + rows_b, theme, cols=3))]
    set_column_gaps(fig, gaps)
    notes: list[str] = []
    panels = [(a, own_a, "weight"), (b, rows_b, "weight"), (diff, own_a, "|difference|")]
    for c, (m, labels, value_name) in enumerate(panels):
        grid = prepare_grid(m, row_text=labels, col_text=labels, panels=len(panels))
        notes += grid.notes
        notes += add_panel(
            fig, grid, row=1, col=c + 1, kind="weights", coloraxis="coloraxis", value_name=value_name,
            x_name="key", y_name="query", x_title="key", y_title="query" if c == 0 else "",
            show_y_labels=c < 2, max_x_ticks=tick_budget(pw, t["font_size"]),
            max_y_ticks=tick_budget(ph, t["font_size"]), panel=(pw, ph), theme=theme,
        )
    notes.append(f"max |{name_a} − {name_b}| = {num(float(diff.max()))}")
    fig.update_layout(
        coloraxis=coloraxis_layout(0.0, 1.0, WEIGHTS_COLORSCALE, "weight, |A − B|"),
        title=title_layout(title, notes),
    )
    return apply_theme(fig, theme)


POOLED_BAR_WIDTH = 0.9  # A's bar, of a dimension's slot (B's: half of it, over A's middle)


def pooled_outputs_figure(
    pooled_a: np.ndarray,
    pooled_b: np.ndarray,
    *,
    name_a: str = "A",
    name_b: str = "B",
    title: str | None = "Pooled outputs (mean over tokens)",
    theme: str = "default",
) -> go.Figure:
    """Two pooled vectors (d_model,), one bar each per dimension at the same x: A's wide, B's half as wide over its
    middle, so an equal pair reads as one bar with a core of B's colour and a difference as a core longer or shorter
    than its frame; max |A − B| in the title. Side by side, 64 dimensions made 128 bars of ~1.8 px on a 390 px phone
    (~4 px at 1280), A's and B's told apart by the colour of a line; each dimension's bar is now twice as wide."""
    a = np.asarray(pooled_a, dtype=np.float64).ravel()
    b = np.asarray(pooled_b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"pooled outputs differ in length: {a.size} vs {b.size}")
    dims = np.arange(a.size)
    fig = Fig()
    for vec, name, color, width in ((a, name_a, QUALITATIVE[0], POOLED_BAR_WIDTH),
                                    (b, name_b, QUALITATIVE[1], POOLED_BAR_WIDTH / 2)):
        fig.add_trace(
            vf.bar(
                x=dims,
                y=vec.astype(np.float32),
                width=width,
                name=escape_text(name),
                marker_color=color,
                # whose bar, and what its number is: "B", "dim 0", "0.400000" said neither (a words walk)
                hovertemplate=f"sentence {escape_text(name)}<br>dim %{{x}}<br>pooled output %{{y:.6~g}}<extra></extra>",
                meta={"role": "bars"},
            )
        )
    # which bar is whose, beside the legend's colours: the overlay's inner bar is B's (a words check of the overlay);
    # a line of its own, so that twins with and without PE keep as many note lines as each other on a phone, where
    # one line of both ("max |A − B| = 0.223; each B bar ...") wrapped for one twin only and left their plots unlevel
    notes = [f"max |A − B| = {num(np.abs(a - b).max(initial=0.0))}",
             f"each {escape_text(name_b)} bar is drawn inside its {escape_text(name_a)} bar"]
    fig.update_layout(
        barmode="overlay",
        title=title_layout(title, notes),
        xaxis_title="dimension",
        yaxis_title="pooled output",
    )
    fig = apply_theme(fig, theme)
    # B's outline (where the theme keeps one) in A's colour, as the theme shades it: in the page's, it drew a stripe
    # each side of B's bar inside A's, a bar of three colours ~1 px apart at 480 px. Set in the lean figure's dict:
    # fig.data built its plotly tree, and the app then made its payload again on every rerun of view 6 (two figures,
    # ~3 ms each at 64 dimensions)
    a_trace, b_trace = vf.editable(fig)["data"]
    marker = b_trace.get("marker") or {}
    b_trace["marker"] = {**marker, "line": {**(marker.get("line") or {}), "color": a_trace["marker"]["color"]}}
    return fig
