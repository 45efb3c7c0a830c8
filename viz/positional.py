"""Sinusoidal positional encoding (Vaswani et al. 2017, §3.5) as figures.

PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d)). These builders
only draw: the table, the Gram matrix and the dot-product curve come from model/.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from viz import fig as vf
from viz.fig import Fig, subplots
from viz.heatmap import (
    ValuePanel,
    add_value_panels,
    color_range,
    coloraxis_layout,
    heatmap_figure,
    panel_px,
    symmetric_range,
    title_layout,
    value_gap,
)
from viz.labels import display_labels, num
from viz.theme import DOT, NARROW_WIDTH, QUALITATIVE, ROUND, apply_theme, text_width, theme_spec


def _position_text(n: int, labels: Sequence[str] | None) -> list[str]:
    """Row labels "i" for positions, "i:piece" for the first len(labels) (the sentence)."""
    text = [str(i) for i in range(n)]
    if labels is not None:
        for i, lab in enumerate(display_labels(labels, len(labels))[:n]):
            text[i] = lab
    return text


def pe_heatmap(
    pe: np.ndarray,
    *,
    labels: Sequence[str] | None = None,
    title: str | None = "Positional encoding PE (positions × dimensions)",
    theme: str = "default",
) -> go.Figure:
    """The PE table (max_len, d_model) on a fixed [-1, 1] diverging scale.

    labels: the sentence's pieces, to name its positions on the position axis.
    """
    table = np.asarray(pe, dtype=np.float64)
    if table.ndim != 2:
        raise ValueError(f"expected PE (positions, d_model), got shape {table.shape}")
    P, d = table.shape
    return heatmap_figure(
        table,
        row_text=_position_text(P, labels),
        col_text=[str(j) for j in range(d)],
        kind="values",
        title=title,
        x_title="dimension (even = sin, odd = cos)",
        y_title="position",
        value_name="PE",
        x_name="dim",
        y_name="position",
        zmax=1.0,
        value_format=".2f",
        theme=theme,
    )


def pe_curves(
    positions: np.ndarray,
    pe: np.ndarray,
    *,
    dims: Sequence[int],
    marked_positions: Sequence[int] | None = None,
    marked_labels: Sequence[str] | None = None,
    title: str | None = "PE over positions for chosen dimensions",
    theme: str = "default",
    d_model: int | None = None,
) -> go.Figure:
    """Curves PE(pos, dim) for chosen dims; the sentence's own positions marked on each curve.

    positions (P,) may be a fine grid (e.g. step 0.1) for smooth curves; pe is the matching
    table (P, d_model), from which the `dims` columns are drawn. With d_model given, pe holds
    only the `dims` columns, in that order: (P, len(dims)).
    """
    pos = np.asarray(positions, dtype=np.float64).ravel()
    table = np.asarray(pe, dtype=np.float64)
    if table.ndim != 2 or table.shape[0] != pos.size:
        raise ValueError(f"pe must be (len(positions)={pos.size}, d_model), got {table.shape}")
    d = table.shape[1] if d_model is None else d_model
    if d_model is not None and table.shape[1] != len(dims):
        raise ValueError(f"pe must hold the {len(dims)} dims columns, got {table.shape[1]}")
    for j in dims:
        if not 0 <= j < d:
            raise ValueError(f"dimension {j} is outside 0..{d - 1}")
    marks = np.asarray(list(marked_positions or []), dtype=np.float64)
    mark_text = (
        display_labels(marked_labels, len(marks))
        if marked_labels is not None
        else [str(int(p)) for p in marks]
    )
    t = theme_spec(theme)
    pw, _ = panel_px(theme)
    span = max(float(pos.max() - pos.min()), 1e-9)
    gaps = np.diff(np.sort(marks))
    gap_px = pw * (float(gaps.min()) if gaps.size else span) / span  # between two marked tokens
    dense = gap_px < 6  # small dots without outline, no dotted lines
    fig = Fig()
    for n, j in enumerate(dims):
        curve = table[:, j if d_model is None else n]  # PE(positions, j)
        sine = j % 2 == 0
        period = 2 * math.pi * 10000 ** (2 * (j // 2) / d)
        # Short names: a horizontal legend fits two per row one paper column wide.
        length = f"{period:.3g}" if period < 100 else f"{period:.0f}"
        name = f"dim {j} {'sin' if sine else 'cos'}, period {length}"
        color = QUALITATIVE[n % len(QUALITATIVE)]
        # sin solid with round marks, cos dashed with diamonds: told apart without the colours (which a
        # colour-blind student may not: #009E73 and #CC79A7, dims 2 and 3, grey alike under deuteranopia)
        fig.add_trace(
            vf.scatter(
                x=pos.astype(np.float32),
                y=curve.astype(np.float32),
                mode="lines",
                name=name,
                line=dict(color=color, dash="solid" if sine else "dash"),
                legendgroup=str(j),
                hovertemplate=f"dim {j}<br>position %{{x:.3~g}}<br>PE %{{y:.4f}}<extra></extra>",
                meta={"role": "line"},
            )
        )
        if marks.size:
            fig.add_trace(
                vf.scatter(
                    x=marks,
                    y=np.interp(marks, pos, curve),
                    mode="markers",
                    marker=dict(color=color, size=4 if dense else 9, symbol="circle" if sine else "diamond",
                                line=dict(width=0 if dense else 1, color="#000")),
                    customdata=mark_text,
                    showlegend=False,
                    legendgroup=str(j),
                    hovertemplate=f"token %{{customdata}}<br>dim {j}<br>PE %{{y:.4f}}"
                    "<extra></extra>",
                    meta={"role": "marks"},
                )
            )
    notes = []
    if marks.size:
        if not dense and marks.size <= 64:  # a dotted guide at each token: one path, under the curves
            guide_x = np.column_stack([marks, marks, np.full(marks.size, np.nan)]).ravel()  # p, p, gap, ...
            guide_y = np.tile([-1.1, 1.1, np.nan], marks.size)
            fig.data.insert(0, vf.scatter(x=guide_x, y=guide_y, mode="lines", hoverinfo="skip", showlegend=False,
                                          line=dict(color=t["axis_line_color"], width=0.6, dash="dot"),
                                          meta={"role": "guides"}))
        # The tokens label a second x axis on top, every k-th one where they would crowd, and always
        # side by side: Plotly turned touching labels 90°, and turned they ran up into the title (a
        # researcher's walk, 40 tokens and more), which the top margin leaves one line's room under.
        shown = _labels_that_fit(marks, mark_text, pw / span, float(pos.min()), t["font_size"])
        if len(shown) < marks.size and (marks.size <= 12 or (marks.size <= 24 and 2 * len(shown) < marks.size)):
            # A few tokens squeezed into a long axis: name them in a note instead (up to 24 of them where fewer than
            # half fit: 14 tokens in the paper theme kept 2 labels on the 0-49 axis).
            notes.append("● the sentence's tokens: " + "  ".join(mark_text))
        else:
            fig.add_label_axis("x2", marks, [float(marks[i]) for i in shown], [mark_text[i] for i in shown],
                               side="top", tickangle=0)
    fig.update_layout(
        title=title_layout(title, notes),
        xaxis_title="position (the sentence's tokens marked)" if marks.size else "position",
        yaxis=dict(title_text="PE value", range=[-1.1, 1.1]),
        # Below the plot in every theme: six long names beside it would halve a narrow plot.
        legend=dict(orientation="h", x=0, xanchor="left", xref="container", y=0,
                    yanchor="bottom", yref="container", traceorder="normal"),
    )
    return apply_theme(fig, theme)


def _labels_that_fit(marks: np.ndarray, text: list[str], px_per_pos: float, start: float, font_px: float) -> list[int]:
    """Which of the marks' labels go on the top axis: from the first, each one that starts a gap (0.6 em) after
    the last one kept ends, by its own width. One wide label ("6:[UNK]") no longer sets the spacing of all (a
    regression walk: 13 tokens kept only "0:我")."""
    kept, end = [], -math.inf
    for i, (p, label) in enumerate(zip(marks.tolist(), text, strict=True)):
        x, half = (p - start) * px_per_pos, text_width(label, font_px) / 2
        if x - half >= end + 0.6 * font_px:
            kept.append(i)
            end = x + half
    return kept


def pe_dot_matrix(
    gram: np.ndarray,
    *,
    labels: Sequence[str] | None = None,
    title: str | None = f"PE(m){DOT}PE(n): the same along every diagonal (depends only on n − m)",
    theme: str = "default",
) -> go.Figure:
    """The Gram matrix PE·PEᵀ (positions × positions): diverging about 0 where it has both signs, else
    sequential from its smallest value to its largest. Over a short sentence every PE(m)·PE(n) is
    positive (26 to 32 for d_model 64, 4 positions), and on a scale about 0 the diagonals, the point
    of the figure, were shades of one dark red."""
    g = np.asarray(gram, dtype=np.float64)
    if g.ndim != 2 or g.shape[0] != g.shape[1]:
        raise ValueError(f"expected a square Gram matrix, got shape {g.shape}")
    text = _position_text(g.shape[0], labels)
    finite = g[np.isfinite(g)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
    span = dict(kind="magnitude", zmin=lo, zmax=hi) if 0 <= lo < hi else dict(kind="values")
    return heatmap_figure(
        g,
        row_text=text,
        col_text=text,
        **span,
        title=title,
        x_title="position n",
        y_title="position m",
        value_name=f"PE(m){DOT}PE(n)",
        x_name="n",
        y_name="m",
        value_format=".1f",
        theme=theme,
    )


def local_maxima(offsets: np.ndarray, values: np.ndarray) -> list[float]:
    """Offsets k > 0 where the curve peaks again: values[k] above both neighbours (local maxima)."""
    k = np.asarray(offsets, dtype=np.float64).ravel()
    v = np.asarray(values, dtype=np.float64).ravel()
    order = np.argsort(k)
    k, v = k[order], v[order]
    inner = (v[1:-1] > v[:-2]) & (v[1:-1] > v[2:]) & (k[1:-1] > 0)
    return k[1:-1][inner].tolist()


def pe_dot_curve(
    offsets: np.ndarray,
    values: np.ndarray,
    *,
    title: str | None = f"PE(m){DOT}PE(m+k) over the offset k: symmetric, decays overall",
    theme: str = "default",
) -> go.Figure:
    """PE(m)·PE(m+k) = Σᵢ cos(ωᵢ k) as a curve over k; its local peaks (k > 0) are marked.

    It decays overall with |k| but not monotonically, so the figure never says "strictly".
    """
    k = np.asarray(offsets, dtype=np.float64).ravel()
    v = np.asarray(values, dtype=np.float64).ravel()
    if k.size != v.size:
        raise ValueError(f"{k.size} offsets for {v.size} values")
    order = np.argsort(k)
    k, v = k[order], v[order]
    t = theme_spec(theme)
    fig = Fig(
        vf.scatter(
            x=k,
            y=v.astype(np.float32),
            mode="lines+markers" if k.size <= 80 else "lines",
            name=f"PE(m){DOT}PE(m+k)",
            line=dict(color=QUALITATIVE[0]),
            marker=dict(size=4),
            hovertemplate="k = %{x}<br>dot %{y:.4~g}<extra></extra>",
            meta={"role": "line"},
        )
    )
    bumps = local_maxima(k, v)
    notes = []
    if bumps:
        kb = np.asarray(bumps)
        fig.add_trace(
            vf.scatter(
                x=kb,
                y=np.interp(kb, k, v),
                mode="markers",
                name="local peak",
                marker=dict(
                    symbol="triangle-up",
                    size=11,
                    color=QUALITATIVE[1],
                    line=dict(width=1, color=t["font_color"]),
                ),
                hovertemplate="k = %{x}: a local peak<extra></extra>",
                meta={"role": "marks"},
            )
        )
        shown = ", ".join(f"{b:g}" for b in bumps[:6]) + (", …" if len(bumps) > 6 else "")
        notes.append(f"not monotonic: local peaks at k = {shown}")
    fig.update_layout(
        title=title_layout(title, notes),
        xaxis_title="offset k = n − m",
        yaxis_title=f"PE(m){DOT}PE(m+k)",
    )
    return apply_theme(fig, theme)


def embedding_pe_figure(
    embedding: np.ndarray,
    pe: np.ndarray,
    *,
    labels: Sequence[str] | None,
    summed: np.ndarray | None = None,
    title: str | None = "Token embedding + positional encoding = input to layer 0 (the first)",
    theme: str = "default",
) -> go.Figure:
    """Three aligned heatmaps (tokens × d_model) on one diverging scale: embedding, PE, sum.

    summed defaults to embedding + pe; pass the model's own input to show exactly what it adds
    (e.g. with the embedding scaled by √d_model, §3.4).
    """
    e = np.asarray(embedding, dtype=np.float64)
    p = np.asarray(pe, dtype=np.float64)
    if e.shape != p.shape or e.ndim != 2:
        raise ValueError(f"embedding {e.shape} and pe {p.shape} must both be (tokens, d_model)")
    s = e + p if summed is None else np.asarray(summed, dtype=np.float64)
    mats = [e, p, s]
    lo, hi, scale = color_range("values", mats, zmax=symmetric_range(*mats))
    fig = subplots(
        rows=1,
        cols=3,
        # the facing x tick labels of two panels ("60", "0") an em apart (0.05 left "60 0" ~9 px apart in paper)
        horizontal_spacing=max(0.05, value_gap(e.shape[1], theme, cols=3)),
        subplot_titles=("token embedding", "+ positional encoding", "= sum"),
    )
    rows = display_labels(labels, e.shape[0])
    notes = add_value_panels(
        fig, [ValuePanel(m, rows, y_title="token" if c == 0 else "", show_y_labels=c == 0) for c, m in enumerate(mats)],
        theme=theme,
    )
    fig.update_layout(
        coloraxis=coloraxis_layout(lo, hi, scale, "value"),
        title=title_layout(title, notes),
    )
    return apply_theme(fig, theme)


ROTATION_POINTS = 24  # positions drawn on each circle: beyond, the hands wrap around too often to follow
ROTATION_HEIGHT = 420
ROTATION_SPAN = 2.8  # units across a panel's narrower side (x: -1.4 … 1.4)
LABEL_RADIUS = 1.15  # units from the centre to a number (outside the unit circle)
LABEL_EMS = 1.5  # a number of two digits, with room around it, in ems of the type


def spaced(angles: np.ndarray, unit_px: float, font_px: float) -> list[bool]:
    """Which of the numbers at these angles (radians round the circle, in position order) to write: each one
    whose arc to every number written before it is at least a number's width (LABEL_EMS), drawn LABEL_RADIUS
    units from the centre at unit_px px a unit (see pe_rotation). The first is always written."""
    gap = LABEL_EMS * font_px / (LABEL_RADIUS * unit_px)  # radians
    kept: list[float] = []
    out = []
    for a in np.asarray(angles, dtype=np.float64):
        ok = all(abs((a - b + math.pi) % (2 * math.pi) - math.pi) >= gap for b in kept)
        if ok:
            kept.append(float(a))
        out.append(ok)
    return out


def _outward(sin: np.ndarray, cos: np.ndarray) -> list[str]:
    """Where each point's number goes: away from the circle's centre (above a point near the top, to the
    right of one on the right, ...), so that no number sits on the circle, the hand, or the title above."""
    out = []
    for x, y in zip(sin, cos, strict=True):
        if abs(y) >= abs(x):
            out.append("top center" if y >= 0 else "bottom center")
        else:
            out.append("middle right" if x > 0 else "middle left")
    return out


CLOCK_SPAN = (1.4, 1.6)  # the least the axes span each side of the centre: ±1.4, 1.6 above (under the title)


def _clock_ranges(written, marker: np.ndarray, pw: float, ph: float, font_px: float) -> tuple[list[float], list[float]]:
    """The x and y ranges of every clock panel: at least CLOCK_SPAN, and wide enough that each number written
    beside a point (written: per panel (sin, cos, numbers, textposition)) lies inside the axes, its x axis line
    under it and its y axis line left of it, and under the panel's title, at the px a unit the panel then has
    (pw x ph px, the circles kept round: the narrower of pw / x span and ph / y span). A number takes its line of
    type (1.3 em) past its marker's edge, and its digits' width beside it (a researcher's walk: ±1.4 held the
    numbers at the default theme's 14 px and ~51 px a unit; at the paper's 18 px and ~41 px "3" and "10" crossed
    the x axis line and "0" touched the title). The same ranges on every panel, so the circles are one size."""
    lo_x, hi_y, lo_y = -CLOCK_SPAN[0], CLOCK_SPAN[1], -CLOCK_SPAN[0]
    for _ in range(4):  # the px a unit shrinks as the ranges grow: a few rounds settle it
        unit = min(pw / (CLOCK_SPAN[0] - lo_x), ph / (hi_y - lo_y))
        need = {"left": -lo_x, "top": hi_y, "bottom": -lo_y}
        for sin, cos, numbers, where in written:
            for x, y, number, side, size in zip(sin, cos, numbers, where, marker, strict=True):
                if not number:
                    continue
                clear = size / 2 + 1.3 * font_px  # px past the point: the marker's edge, then a line of type
                if side == "bottom center":
                    need["bottom"] = max(need["bottom"], -y + clear / unit)
                elif side == "top center":  # and under the panel's title, whose box reaches ~0.4 em into the plot
                    need["top"] = max(need["top"], y + (clear + 0.5 * font_px) / unit)
                elif side == "middle left":
                    need["left"] = max(need["left"], -x + (size / 2 + 4 + text_width(number, font_px)) / unit)
        lo_x, hi_y, lo_y = -need["left"], need["top"], -need["bottom"]
    return [round(float(lo_x), 3), CLOCK_SPAN[0]], [round(float(lo_y), 3), round(float(hi_y), 3)]


def pe_rotation(
    pe: np.ndarray,
    *,
    pairs: Sequence[int],
    omegas: Sequence[float],
    labels: Sequence[str] | None = None,
    error: float | None = None,
    offset: int = 1,
    title: str | None = "Each (sin, cos) pair turns by ωᵢ per position",
    theme: str = "default",
) -> go.Figure:
    """One circle per (sin, cos) pair i: the point (PE(pos, 2i), PE(pos, 2i+1)) of every position,
    joined in position order, so the hand's turn of ωᵢ radians per position is seen.

    pe: (positions, d_model) sinusoidal encodings; pairs: the pair indices i to draw; omegas: their
    ωᵢ; error: max |PE(pos + offset) − R_offset·PE(pos)| as the model's functions measure it in float64
    (the note says it, and says float64: the table the model adds is float32, off by ~1e−7).
    Positions beyond ROTATION_POINTS are not drawn (the note says so).
    """
    p = np.asarray(pe, dtype=np.float64)
    if p.ndim != 2:
        raise ValueError(f"pe must be (positions, d_model), got shape {p.shape}")
    if len(pairs) != len(omegas) or not pairs:
        raise ValueError(f"one ω per pair: {len(pairs)} pairs, {len(omegas)} ω")
    n = min(p.shape[0], ROTATION_POINTS)
    text = _position_text(p.shape[0], labels)[:n]
    t = theme_spec(theme)
    notes = ["position 0 is the larger dot, at the top (sin 0 = 0, cos 0 = 1)"]
    if error is not None:
        angle = "ωᵢ" if offset == 1 else f"ωᵢ{DOT}{offset}"
        notes.append(f"PE(pos + {offset}) = R<sub>{offset}</sub>{DOT}PE(pos), one 2×2 rotation by {angle} per pair: "
                     f"max |difference| {num(error, '.1e')} in float64")
    if p.shape[0] > n:
        notes.append(f"the first {n} of {p.shape[0]} positions")
    pw, ph = panel_px(theme, cols=len(pairs), height=ROTATION_HEIGHT)
    ph -= 1.3 * t["font_size"] * (len(notes) + 1)  # the note lines and the panels' titles above them
    # a position's number is written where it keeps clear of the numbers before it (spaced): the axes span
    # ROTATION_SPAN units in a square panel of the theme's size, unit_px px a unit
    unit_px = min(pw, ph) / ROTATION_SPAN
    circle = np.linspace(0.0, 2 * math.pi, 181)
    # between panels: a number beside the circle before, then the y title and tick labels (~5.5 font sizes), as a
    # fraction of the narrowest width the figure is drawn at (its theme's own size; the page's themes NARROW_WIDTH,
    # a phone: shrunk below)
    fig = subplots(
        rows=1,
        cols=len(pairs),
        horizontal_spacing=5.5 * t["font_size"] / (t["width"] or NARROW_WIDTH),
        subplot_titles=[f"ω = {math.degrees(w):.3g}°" for w in omegas],  # the axis titles name the dims
    )
    marker = np.where(np.arange(n) == 0, 1.6, 1.0) * 0.55 * t["font_size"]  # px across: position 0's larger
    written = []  # each panel's numbers, their points and where each goes
    for i, omega in zip(pairs, omegas, strict=True):
        sin, cos = p[:n, 2 * i], p[:n, 2 * i + 1]  # PE(pos, 2i), PE(pos, 2i+1)
        # position numbers, each only where it keeps clear of those before it on its circle (see unit_px)
        numbers = [s.split(":", 1)[0] if keep else ""
                   for s, keep in zip(text, spaced(omega * np.arange(n), unit_px, t["font_size"]), strict=True)]
        written.append((sin, cos, numbers, _outward(sin, cos)))
    x_range, y_range = _clock_ranges(written if n <= 12 else [], marker, pw, ph, t["font_size"])
    for c, ((i, omega), (sin, cos, numbers, where)) in enumerate(zip(zip(pairs, omegas, strict=True), written,
                                                                      strict=True), start=1):
        fig.add_trace(vf.scatter(x=np.sin(circle), y=np.cos(circle), mode="lines", hoverinfo="skip",
                                 showlegend=False, line=dict(color=t["grid_color"] if t["grid"] else "#d0d0d0",
                                                             width=1), meta={"role": "circle"}),
                      row=1, col=c)
        fig.add_trace(vf.scatter(
            x=sin.astype(np.float32), y=cos.astype(np.float32),
            mode="lines+markers+text" if n <= 12 else "lines+markers",
            text=numbers,
            textposition=where, cliponaxis=False,
            customdata=text, showlegend=False,
            line=dict(color=QUALITATIVE[c % len(QUALITATIVE)], width=t["line_width"] * 0.6),
            marker=dict(size=marker.astype(np.float32)),
            hovertemplate=f"position %{{customdata}}, ω = {omega:.4g} rad"
                          f"<br>PE(pos, {2 * i}) = sin = %{{x:.4f}}"
                          f"<br>PE(pos, {2 * i + 1}) = cos = %{{y:.4f}}<extra></extra>",
            meta={"role": "positions", "pair": int(i)},
        ), row=1, col=c)
        # room for the numbers outside the unit circle, inside the axes and below the panel's title (_clock_ranges);
        # both axes keep their range and give up domain instead, so a wide panel draws a round circle, not ±2 of x.
        # Ticks at ±1 only: a "0" tick beside the circle read as part of the number next to it ("011").
        fig.update_xaxes(range=x_range, zeroline=True, showgrid=False, title_text=f"sin (dim {2 * i})",
                         constrain="domain", tickvals=[-1, 1], row=1, col=c)
        fig.update_yaxes(range=y_range, zeroline=True, showgrid=False, scaleanchor=f"x{'' if c == 1 else c}",
                         scaleratio=1, constrain="domain", constraintoward="top",  # under its title
                         title_text=f"cos (dim {2 * i + 1})", tickvals=[-1, 1],
                         row=1, col=c)
    # round: the app's chart script makes the plot only as tall as the round panels need at the width drawn
    fig.update_layout(title=title_layout(title, notes), height=ROTATION_HEIGHT, meta={ROUND: True})
    return apply_theme(fig, theme)
