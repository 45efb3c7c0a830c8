"""Scaled dot-product attention, step by step (Vaswani et al. 2017, Eq. 1), heads and one query.

Attention(Q, K, V) = softmax(QKᵀ / √d_k) V. Colour rules: scores diverge about 0 (blue < 0 < red)
on one shared range across steps; weights use a fixed [0, 1] sequential scale; masked cells are
grey, hatched and say "−∞"; every NaN is explained.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.colors
import plotly.graph_objects as go

from viz import fig as vf
from viz.fig import Fig, subplots
from viz.heatmap import (
    SHORT_ROWS,
    VALUES_MAX,
    ValuePanel,
    _nice_step,
    add_cell_overlay,
    add_panel,
    add_value_panels,
    block_hover,
    clear_right_end,
    color_range,
    coloraxis_layout,
    grid_heatmaps,
    heatmap_figure,
    keep_plot_height,
    matrix_axes,
    panel_px,
    plot_px,
    prepare_grid,
    prepare_grids,
    set_column_gaps,
    short_row_px,
    shorter_for_rows,
    style_matrix_axes,
    symmetric_range,
    taller_for_rows,
    text_fits,
    tick_budget,
    title_layout,
    value_gap,
)
from viz.labels import Markup, display_labels, escape_text, markup, num, num_weight, sub
from viz.theme import (
    ALONE,
    DOT,
    MASK_ALLOWED_COLOR,
    NARROW_COLORBAR,
    QUALITATIVE,
    WEIGHTS_COLORSCALE,
    apply_theme,
    fit_cell_values,
    note_size,
    text_width,
    theme_spec,
    type_scale,
    widest,
)

# Symbols of the paper's equations as plotly.js draws them (a figure's title, panel titles, legend, notes: ours, not
# user text; a title from a caller is escaped unless it is a viz.labels.Markup)
D_K = f"d{sub('k')}"
# √ from DejaVu: the CJK fonts first in every theme's list draw it a full em wide ("√ d" with a gap)
ROOT = '<span style="font-family:DejaVu Sans">√</span>'
QKV_TITLE = Markup(f"Q = XW{sub('Q')}, K = XW{sub('K')}, V = XW{sub('V')} (one head)")
# cross-attention (§3.2.3): queries from the decoder, keys and values from the encoder's output M ("memory")
CROSS_QKV_TITLE = Markup(f"Q = XW{sub('Q')} (decoder), K = MW{sub('K')}, V = MW{sub('V')} (M: encoder output; one head)")
NAN_SOFTMAX = "every key in this row is masked, so softmax over all −∞ is 0/0"


def _nan_reason(w: np.ndarray) -> str | None:
    """Why weights hold NaN: NAN_SOFTMAX where each row with a NaN (or ±inf) has no finite weight, as softmax over
    all −∞ makes it (NaN only: softmax never makes ±inf); else None, the heatmap's own "as in the input" (a user's
    array: a NaN beside finite weights was said to be a row whose every key is masked)."""
    rows = np.asarray(w)
    finite = np.isfinite(rows)
    if finite.all():  # no hole: the reason is never shown (the common case, every head of every view)
        return NAN_SOFTMAX
    rows, finite = rows.reshape(-1, rows.shape[-1]), finite.reshape(-1, rows.shape[-1])
    holed = rows[~finite.all(axis=1)]
    return None if (~np.isnan(holed)).any() else NAN_SOFTMAX


def _keys(row_labels, col_labels):
    return row_labels if col_labels is None else col_labels


def scores_heatmap(
    matrix: np.ndarray,
    *,
    row_labels: Sequence[str] | None,
    col_labels: Sequence[str] | None = None,
    mask: np.ndarray | None = None,
    zmax: float | None = None,
    title: str | None = "Scores QKᵀ",
    value_name: str = "score",
    masked_text: str = "−∞",
    show_values: bool | None = None,
    theme: str = "default",
) -> go.Figure:
    """Raw, scaled or masked scores (queries × keys) on a diverging scale centred at 0.

    mask: boolean, True = may attend; masked cells are drawn grey, hatched, with `masked_text`
    (the model sets them to −∞ before the softmax: model.attention.masked_scores). -inf cells count as
    masked even without a mask. zmax: shared colour range ±zmax (default: this matrix's max |.|).
    """
    m = np.asarray(matrix)
    return heatmap_figure(
        m,
        row_text=display_labels(row_labels, m.shape[0]),
        col_text=display_labels(_keys(row_labels, col_labels), m.shape[1]),
        kind="scores",
        title=title,
        x_title="key (attended to)",
        y_title="query (attending)",
        value_name=value_name,
        mask=mask,
        zmax=zmax,
        masked_text=masked_text,
        show_values=show_values,
        theme=theme,
    )


def weights_heatmap(
    matrix: np.ndarray,
    *,
    row_labels: Sequence[str] | None,
    col_labels: Sequence[str] | None = None,
    mask: np.ndarray | None = None,
    title: str | None = Markup(f"Attention weights softmax(QKᵀ / {ROOT}{D_K})"),
    x_title: str = "key (attended to)",
    y_title: str = "query (attending)",
    axis_names: tuple[str, str] = ("query", "key"),
    row_sums: bool = True,
    show_values: bool | None = None,
    theme: str = "default",
) -> go.Figure:
    """Attention weights on a fixed [0, 1] scale, each row's sum on the right.

    Masked cells (mask False) are grey, hatched and say "0"; NaN rows (every key masked with
    -inf) are ✕-hatched and explained. If a masked cell holds weight > 1e-6 the title says so.
    axis_names: (rows, columns) as a cell's hover names them, as heads_grid's axis_names.
    """
    w = np.asarray(matrix, dtype=np.float64)
    return heatmap_figure(
        w,
        row_text=display_labels(row_labels, w.shape[0]),
        col_text=display_labels(_keys(row_labels, col_labels), w.shape[1]),
        kind="weights",
        title=title,
        x_title=x_title,
        y_title=y_title,
        value_name="weight",
        x_name=axis_names[1],
        y_name=axis_names[0],
        mask=_drawn_mask(w, mask),
        masked_text="0",
        masked_name="masked (weight exactly 0)",
        nan_reason=_nan_reason(w),
        show_values=show_values,
        row_sums=row_sums,
        extra_notes=_leak_notes(w, mask),
        theme=theme,
    )


def _drawn_mask(w: np.ndarray, mask: np.ndarray | None) -> np.ndarray | None:
    """The mask a weights heatmap draws: `mask` (True = may attend), where a NaN stays visible as NaN, not as
    "masked"."""
    return None if mask is None else np.broadcast_to(np.asarray(mask, dtype=bool), w.shape) | ~np.isfinite(w)


def _leak_notes(w: np.ndarray, mask: np.ndarray | None) -> list[str]:
    """A warning where masked cells (mask False) of weights `w` carry weight, more than 1e-6; else none."""
    if mask is None:
        return []
    leaked = np.where(~np.broadcast_to(np.asarray(mask, dtype=bool), w.shape) & np.isfinite(w), np.abs(w), 0.0)
    top = leaked.max(initial=0.0)
    return [f"warning: masked cells carry weight up to {num(top)}"] if top > 1e-6 else []


MASK_Y_TITLE = "query (attending)"  # as the scores' and the weights' beside it


def mask_heatmap(
    mask: np.ndarray,
    *,
    row_labels: Sequence[str] | None,
    col_labels: Sequence[str] | None = None,
    title: str | None = "Mask (True = may attend)",
    theme: str = "default",
) -> go.Figure:
    """The boolean mask: True cells plain and labelled, False cells grey and hatched."""
    allowed = np.asarray(mask, dtype=bool)
    if allowed.ndim != 2:
        raise ValueError(f"expected a 2-D mask, got shape {allowed.shape}")
    R, C = allowed.shape
    grid = prepare_grid(
        np.ones(allowed.shape),
        row_text=display_labels(row_labels, R),
        col_text=display_labels(_keys(row_labels, col_labels), C),
        mask=allowed,
        boolean=True,
    )
    side = max(grid.z.shape)
    word = ("True", "False") if side <= 12 else ("T", "F")
    t = theme_spec(theme)
    pw, ph = plot_px(theme, row_text=grid.row_text, col_text=grid.col_text, colorbar=False,
                     note_lines=len(grid.notes) + 2)
    fig = Fig()
    ph = laid_out = taller_for_rows(fig, theme, len(grid.row_text), ph)  # as tall as the scores beside it
    ph = shorter_for_rows(fig, theme, len(grid.row_text), len(grid.col_text), pw, ph, MASK_Y_TITLE)  # and as short
    labelled = side <= VALUES_MAX and text_fits(word[0], grid, theme, (pw, ph))
    for heat in grid_heatmaps(
        grid,
        grid.z,
        zmin=0,
        zmax=1,
        showscale=False,
        hoverongaps=False,
        colorscale=[[0, MASK_ALLOWED_COLOR], [1, MASK_ALLOWED_COLOR]],
        name="True: may attend",
        hover=block_hover("query", "key", lambda block: "True: some or all may attend" if block else "True: may attend"),
        meta={"role": "mask_allowed"},
    ):
        if labelled:
            heat.text = np.where(np.isnan(heat.z), "", word[0])
            heat.texttemplate = "%{text}"
            heat.textfont = dict(color="#000000")
        fig.add_trace(heat)
    key = add_cell_overlay(
        fig,
        grid,
        grid.masked,
        name="False: may not attend",
        cell_text=word[1],
        pattern="/",
        theme=theme,
        panel=(pw, ph),
    )
    style_matrix_axes(
        fig, grid, x_title="key (attended to)", y_title=MASK_Y_TITLE,
        max_x_ticks=tick_budget(pw, t["font_size"]), max_y_ticks=tick_budget(ph, t["font_size"]),
    )
    # the key to the cells: plain True beside hatched False; or, where no cell is hatched, that nothing is masked
    notes = grid.notes + (["plain: True, may attend", key] if key else ["nothing is masked: every query may attend to "
                                                                       "every key"])
    fig.update_layout(title=title_layout(title, notes), showlegend=False)
    fig = apply_theme(fig, theme)
    return keep_plot_height(fig, ph, theme) if ph < laid_out else fig  # laid out short: that tall, as the scores


def qkv_figure(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    *,
    row_labels: Sequence[str] | None,
    col_labels: Sequence[str] | None = None,
    zmax: float | None = None,
    title: str | None = QKV_TITLE,
    theme: str = "default",
) -> go.Figure:
    """Q (queries × d_k), K and V (keys × d_k, d_v) side by side on one diverging scale."""
    mats = [np.asarray(a, dtype=np.float64) for a in (q, k, v)]
    for name, a in zip("QKV", mats, strict=True):
        if a.ndim != 2:
            raise ValueError(f"{name} must be 2-D (tokens, dims), got shape {a.shape}")
    peak = zmax if zmax is not None else symmetric_range(*mats)
    lo, hi, scale = color_range("values", mats, zmax=peak)
    q_text = display_labels(row_labels, mats[0].shape[0])
    k_text = display_labels(_keys(row_labels, col_labels), mats[1].shape[0])
    # K and V share their rows (the keys): their labels go on K only, and only when they are not
    # Q's own (self-attention); otherwise Q's labels name every row of all three panels.
    k_labels = k_text != q_text
    fig = subplots(rows=1, cols=3, subplot_titles=("Q", "K", "V"))
    dims = max(a.shape[1] for a in mats)  # each pair of panels' facing x tick labels ("15", "0") an em apart
    set_column_gaps(fig, [value_gap(dims, theme, cols=3, labels=k_text if k_labels else ()),
                          value_gap(dims, theme, cols=3)])
    notes = add_value_panels(
        fig,
        [
            ValuePanel(mats[0], q_text, y_title="query" if k_labels else "token"),
            ValuePanel(mats[1], k_text, show_y_labels=k_labels),  # no title: it sat on Q's heatmap (slide, paper)
            ValuePanel(mats[2], k_text, show_y_labels=False),
        ],
        theme=theme,
        tall=True,
    )
    fig.update_layout(
        coloraxis=coloraxis_layout(lo, hi, scale, "value"),
        title=title_layout(title, notes),
    )
    return apply_theme(fig, theme)


def attention_step_figures(
    *,
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    scores: np.ndarray,
    scaled_scores: np.ndarray,
    weights: np.ndarray,
    mask: np.ndarray | None = None,
    row_labels: Sequence[str] | None,
    col_labels: Sequence[str] | None = None,
    masked_text: str = "−∞",
    where: str = "",
    cross: bool = False,
    theme: str = "default",
) -> dict[str, go.Figure]:
    """All steps of one head, with one colour range for every score figure.

    Keys: "qkv", "scores", "scaled", "mask" (only with a mask), "masked", "weights". `where` (e.g.
    "encoder self, layer 0, head 1") ends every title: a chart in full screen, or exported, says
    which head it shows. cross: the block is cross-attention, whose K and V come from the encoder's
    output, not from the queries' X (the Q, K, V figure's title says so).
    """
    d_k = np.asarray(q).shape[-1]
    r = symmetric_range(scores, scaled_scores)  # raw scores are the widest: scaling shrinks them
    kw = dict(row_labels=row_labels, col_labels=col_labels, theme=theme)

    def titled(text: str) -> Markup:  # ours (with <sub>), then `where` escaped
        return markup(Markup(text), " — ", where) if where else Markup(text)

    figs = {
        "qkv": qkv_figure(q, k, v, title=titled(CROSS_QKV_TITLE if cross else QKV_TITLE), **kw),
        "scores": scores_heatmap(scores, zmax=r, title=titled("1. Scores QKᵀ"), **kw),
        "scaled": scores_heatmap(
            scaled_scores,
            zmax=r,
            title=titled(f"2. Scaled scores QKᵀ / {ROOT}{D_K} ({D_K} = {d_k}, same colours)"),
            **kw,
        ),
    }
    if mask is not None:
        figs["mask"] = mask_heatmap(mask, title=titled("3. Mask (True = may attend)"), **kw)
    figs["masked"] = scores_heatmap(
        scaled_scores,
        mask=mask,
        zmax=r,
        masked_text=masked_text,
        title=titled(markup("4. Masked scores (masked cells set to ", masked_text, ")")),
        **kw,
    )
    figs["weights"] = weights_heatmap(
        weights, mask=mask, title=titled("5. Weights = softmax over each row"), **kw
    )
    _share_margins([f for key, f in figs.items() if key != "qkv"], theme)
    return figs


def _margin(fig: go.Figure, side: str) -> float:
    return (vf.layout_value(fig, "margin") or {}).get(side, 0)


def _share_margins(figs: list[go.Figure], theme: str) -> None:
    """attention_step_figures' five matrices, read one under another: one left and one right margin for all, so
    their columns line up (the mask has no colour bar, the weights have row sums beside them); on a phone, their
    colour bars under their plots (viz.theme.NARROW_COLORBAR), one right margin there too, the row sums' (the
    mask, which has no colour bar, takes it as well). Drawn alone (an export), a figure takes its own margins
    again (viz.export.alone): a score matrix's colour bar beside its plot, not past the room the weights' row
    sums needed. Every figure here is lean (apply_theme's)."""
    sides = {side: max(_margin(f, side) for f in figs) for side in ("l", "r")}
    narrow_r = max(((vf.layout_value(f, "meta") or {}).get(NARROW_COLORBAR) or {"r": _margin(f, "r")})["r"]
                   for f in figs)
    follows_page = not theme_spec(theme)["width"]  # the themes of a fixed width have no narrow layout
    for f in figs:
        own = {side: _margin(f, side) for side in sides}
        vf.set_margin(f, **sides)
        lean = vf.editable(f)
        meta = {**(lean["layout"].get("meta") or {}), ALONE: {"margin": own, "theme": theme}}
        if follows_page:
            meta[NARROW_COLORBAR] = {"r": narrow_r}
        lean["layout"]["meta"] = meta
        # a wider margin, narrower cells: their values again (a scores cell's "16.44" ran into the next one's "−2.73")
        fit_cell_values(lean["data"], lean["layout"], theme)


def _grid_of_heads(
    stack: np.ndarray,
    *,
    row_labels,
    col_labels,
    mask,
    row_titles: list[str] | None,
    column_titles: list[str] | None,
    subplot_titles: list[str] | None,
    rows: int,
    cols: int,
    title: str | None,
    theme: str,
    axis_names: tuple[str, str] = ("query", "key"),
) -> go.Figure:
    """Small multiples of attention weights sharing one [0, 1] colour axis.

    Token labels go on the outer panels only (left column, bottom of each column), thinned to
    what fits one panel at the theme's size, in a slightly smaller font; inner panels carry no
    ticks. row_titles name the rows as the left column's y axis titles. axis_names: what a matrix's
    rows and columns are (axis titles and hover).
    """
    y_name, x_name = axis_names
    n, Tq, Tk = stack.shape
    t = theme_spec(theme)
    # laid out for the default theme's type, larger type gets that much more height (a look walk: a one-row grid in
    # the slide theme, 330 px tall at 22 px, left its panels ~70 px, row labels on each other, the axis title cut off)
    app_height = round(max(320, 110 + 220 * rows) * type_scale(t))
    height = min(app_height, t["height"] or app_height)
    # 3 px under the theme's type, its notes' size at least (slide 21: 18 px as shown on a 1280 x 720 projector, where
    # 19 showed the grids' token labels at 16.6, the smallest text on the screen: a teacher's walk)
    tick_size = max(9, t["font_size"] - 3, note_size(t))
    pw, ph = panel_px(theme, rows=rows, cols=cols, height=height)
    # a theme of fixed size keeps a grid at its own height where each panel there still holds a label for every query
    # token, and three's room at least (a teacher's walk: view 4's 2 x 4 grid of 4 tokens, laid out 864 px tall in the
    # slide theme, was taller than a 1280 x 720 projector's screen, and its export no 1280 x 720 slide)
    if height < app_height and ph >= max(Tq, SHORT_ROWS) * 1.3 * tick_size:
        app_height = height
    # the panel drawn, at app_height: a grid grown by its type past its theme's own height thinned its labels to what a
    # panel of that height holds (a mutation walk: the paper theme's 9 tokens, 707 px tall, labelled 5 in panels that
    # hold all 9, the default theme's 12)
    ph = panel_px(theme, rows=rows, cols=cols, height=app_height)[1]
    rt = display_labels(row_labels, Tq)
    ct = display_labels(_keys(row_labels, col_labels), Tk)
    plot_h = ph * rows
    head_room = (1.3 * t["font_size"] + 10) if subplot_titles else 12
    spacing = min(0.04, 0.5 / max(cols - 1, 1))  # between panels, of the plot's width
    # a panel's own width and the step from one panel to the next, at the width laid out (panel_px keeps 40 px
    # at least: a row of 32 or 64 heads, which the sidebar offers, leaves each panel ~8 or ~4 px)
    row_w = panel_px(theme, height=height)[0]
    column_w, pitch = row_w * (1 - spacing * (cols - 1)) / cols, row_w / cols
    if column_titles:
        column_titles = fit_column_titles(column_titles, column_w, pitch, t["font_size"])
    # a one- or two-token sentence: each panel as tall as a single matrix of its rows would be (short_row_px: a
    # 3-row matrix's row height, no taller than its cells are wide), the plot as tall as its colour bar needs (a look
    # walk: view 4's 1 x 1 panels were one cell ~140 px wide and ~195 px tall). Shorter than the panel drawn at
    # app_height, not than one of `height`, which a theme of fixed size caps at its own (16 rows of heads in the
    # paper theme: 1 x 1 panels 197 px tall were not shorter than that one's 40)
    want = ph
    if Tq < SHORT_ROWS:
        want = max(Tq * short_row_px(theme, Tk, column_w, tick_size), 7 * 1.3 * t["font_size"] / rows)
    short = want < ph
    if short:
        ph, plot_h = want, want * rows
    v_spacing = min(0.3 / max(rows - 1, 1), head_room / plot_h) if rows > 1 else 0.0
    fig = subplots(
        rows=rows,
        cols=cols,
        subplot_titles=subplot_titles,
        column_titles=column_titles,
        horizontal_spacing=spacing,
        vertical_spacing=v_spacing,
    )
    notes = _leak_notes(stack, mask)
    x_budget = tick_budget(pw, tick_size)
    y_budget = tick_budget(ph, tick_size)
    x_room = int(column_w // (1.3 * tick_size))  # key labels a panel holds, turned 90°: 0 where it is too narrow
    # each bottom panel its own "key" where it fits over the panel (drawn narrower than laid out, the gaps shrink
    # too: a 900 px window drew 16 heads' as "keykeykey"), else the bottom-left panel's only
    x_title_each = text_width(x_name, t["font_size"]) + 4 <= column_w
    if not x_room:  # a bad-input walk: 64 heads' key labels ran into one grey band under the grid
        notes.append(f"{x_name} labels left out (the panels are too narrow): hover a cell for its tokens")
    grids = prepare_grids(stack, row_text=rt, col_text=ct, mask=_drawn_mask(stack, mask))  # the panels' at once
    axes = matrix_axes(grids[0], max_x_ticks=x_budget, max_y_ticks=y_budget)  # the same rows and columns in each
    for h, (w, grid) in enumerate(zip(stack, grids, strict=True)):
        r, c = divmod(h, cols)
        notes += grid.notes
        notes += add_panel(
            fig,
            grid,
            row=r + 1,
            col=c + 1,
            kind="weights",
            coloraxis="coloraxis",
            value_name="weight",
            x_name=x_name,
            y_name=y_name,
            masked_text="0",
            masked_name="masked (weight exactly 0)",
            nan_reason=_nan_reason(w),
            theme=theme,
            # rows are queries and columns keys, as in every matrix of the app: the bottom panels say
            # "key", the first column "query" (after the row's name where rows are layers)
            x_title=x_name if h + cols >= n and (x_title_each or c == 0) else "",  # "keykeykey" at 64 heads
            y_title=(y_name if not row_titles else f"{row_titles[r]} · {y_name}") if c == 0 else "",
            show_x_labels=h + cols >= n and x_room > 0,  # no panel below this one
            show_y_labels=c == 0,
            max_x_ticks=x_budget,
            max_y_ticks=y_budget,
            panel=(pw, ph),
            axes=axes,
        )
    fig.update_xaxes(tickfont_size=tick_size, ticklen=3)
    fig.update_yaxes(tickfont_size=tick_size, ticklen=3)
    if x_room == 1:  # room for one label a panel (axis_ticks gives two at least): the first key's, turned 90° as
        for ax in fig._axes("x", None, None):  # plotly.js turns crowded ones (alone, it would lie across the next)
            if ax.get("tickvals"):
                ax["tickvals"], ax["ticktext"] = list(ax["tickvals"][:1]), list(ax["ticktext"][:1])
                ax["tickangle"] = 90
    if cols > 1:  # panels side by side: a label at one's right end ran into the next one's first ("20:a0:t")
        gap = spacing * pw * cols / (1 - spacing * (cols - 1))  # the panels' width is what the gaps leave
        for ax in fig._axes("x", None, None):
            clear_right_end(ax, pw, tick_size, gap)
    fig.update_layout(
        coloraxis=coloraxis_layout(0.0, 1.0, WEIGHTS_COLORSCALE, "weight"),
        title=title_layout(title, notes),
        height=app_height,
        showlegend=False,
    )
    if short:  # the plot: its panels and the gaps between them, the margins as laid out
        return keep_plot_height(apply_theme(fig, theme), plot_h / (1 - (rows - 1) * v_spacing), theme)
    return apply_theme(fig, theme)


def fit_column_titles(titles: Sequence[str], width: float, pitch: float, size: float) -> list[str]:
    """Column titles ("head 12") that keep clear of each other over panels `width` px wide, `pitch` px apart: as
    they are where each word fits the panel (a title wraps at its space), else their last word alone ("12"), and
    where even that is wider than the step from one panel to the next, every k-th of them (0, 5, 10, ...). A
    bad-input walk: 32 heads side by side drew "headheadhead", 64 an unreadable band over the grid."""
    titles = [str(s) for s in titles]
    if max((text_width(word, size) for s in titles for word in s.split()), default=0.0) <= width:
        return titles
    short = [s.split()[-1] if s.split() else s for s in titles]
    k = _nice_step((widest(short, size) + 4) / max(pitch, 1e-9))
    return [s if i % k == 0 else "" for i, s in enumerate(short)]


def heads_grid(
    weights: np.ndarray,
    *,
    row_labels: Sequence[str] | None,
    col_labels: Sequence[str] | None = None,
    mask: np.ndarray | None = None,
    head_names: Sequence[str] | None = None,
    cols: int = 4,
    title: str | None = "All heads of one layer",
    theme: str = "default",
    axis_names: tuple[str, str] = ("query", "key"),
) -> go.Figure:
    """Every head of a layer: weights (n_heads, T_q, T_k) as a grid of small heatmaps. axis_names: what the
    rows and the columns are ("target token", "source token" for cross-attention)."""
    stack = np.asarray(weights, dtype=np.float64)
    if stack.ndim != 3:
        raise ValueError(f"expected weights (n_heads, T_q, T_k), got shape {stack.shape}")
    n = stack.shape[0]
    cols = max(1, min(cols, n))
    names = list(head_names) if head_names is not None else [f"head {h}" for h in range(n)]
    return _grid_of_heads(
        stack,
        row_labels=row_labels,
        col_labels=col_labels,
        mask=mask,
        row_titles=None,
        column_titles=None,
        subplot_titles=[escape_text(s) for s in names],
        rows=math.ceil(n / cols),
        cols=cols,
        title=title,
        theme=theme,
        axis_names=axis_names,
    )


def layers_heads_grid(
    weights: np.ndarray,
    *,
    row_labels: Sequence[str] | None,
    col_labels: Sequence[str] | None = None,
    mask: np.ndarray | None = None,
    title: str | None = "Every layer (rows) × every head (columns)",
    theme: str = "default",
) -> go.Figure:
    """Small multiples of weights (n_layers, n_heads, T_q, T_k): one row per layer."""
    a = np.asarray(weights, dtype=np.float64)
    if a.ndim != 4:
        raise ValueError(f"expected weights (n_layers, n_heads, T_q, T_k), got shape {a.shape}")
    L, H = a.shape[:2]
    return _grid_of_heads(
        a.reshape(L * H, *a.shape[2:]),  # (L*H, T_q, T_k), layer-major like the grid
        row_labels=row_labels,
        col_labels=col_labels,
        mask=mask,
        row_titles=[f"layer {i}" for i in range(L)],  # y axis titles of the left column
        column_titles=[f"head {h}" for h in range(H)],
        subplot_titles=None,
        rows=L,
        cols=H,
        title=title,
        theme=theme,
    )


def entropy_overview(
    entropy: np.ndarray,
    *,
    n_keys: int | None = None,
    keys_per_query: Sequence[int] | None = None,
    title: str | None = "Mean attention entropy per layer and head",
    theme: str = "default",
) -> go.Figure:
    """Layers × heads heatmap of mean attention entropy (bits; model.analysis.mean_attention_entropy).

    The colour range is [0, the largest mean entropy there can be]: 0 = every query looks at one key. n_keys:
    every query may attend n keys, so at most log₂ n (uniform over them). keys_per_query: how many keys each
    query may attend (a look-ahead mask: 1, 2, …, T), so at most the mean of log₂ of them; a text read the
    random decoder's 0.9–1.3 bits as focused on a 0–2.32 scale, when 1.38 bits was all five queries could reach.
    """
    e = np.asarray(entropy, dtype=np.float64)
    if e.ndim != 2:
        raise ValueError(f"expected entropy (n_layers, n_heads), got shape {e.shape}")
    L, H = e.shape
    counts = np.asarray(keys_per_query if keys_per_query is not None else [n_keys] if n_keys else [], dtype=np.int64)
    counts = counts[counts > 0]
    zmax = float(np.mean(np.log2(counts))) if counts.size and counts.max() > 1 else None
    note = "0 bits = each query attends to one key"
    if zmax is not None and counts.min() == counts.max():
        note += f"; {zmax:.2f} bits = uniform over {counts[0]} keys"
    elif zmax is not None:
        note += (f"; {zmax:.2f} bits = each query uniform over the keys it may attend ({counts.min()} to "
                 f"{counts.max()}): the most this mean can be")
    return heatmap_figure(
        e,
        row_text=[str(i) for i in range(L)],  # short labels: the axis titles say what they count
        col_text=[str(h) for h in range(H)],
        kind="magnitude",
        title=title,
        x_title="head",
        y_title="layer",
        value_name="entropy (bits)",
        x_name="head",
        y_name="layer",
        zmax=zmax,
        nan_reason="no query row had finite weights",
        show_values=max(L, H) <= VALUES_MAX,
        extra_notes=[note],
        theme=theme,
    )


# Lines of type (font sizes) the three panels of query_bars need in all: the title and its note (5), the
# key labels and axis title (4), three panel titles (1.5 each) and three panels of bars with their ticks (6
# each). Slide: 32 x 22 px = 704 <= 720; paper: 576 > 480, so its figure is laid out taller than its page.
QUERY_BARS_LINES = 32


def query_bars(
    scores: np.ndarray,
    scaled_scores: np.ndarray,
    weights: np.ndarray,
    *,
    key_labels: Sequence[str] | None,
    query_label: str = "",
    mask: np.ndarray | None = None,
    masked_text: str = "−∞",
    unscaled_weights: np.ndarray | None = None,
    title: str | None = None,
    theme: str = "default",
) -> go.Figure:
    """One query row: its scores, scaled scores (same y range) and softmax weights per key.

    Masked keys (mask False, or -inf scores) get grey hatched bars labelled `masked_text`;
    their weight is drawn as a ✕ at 0. `unscaled_weights` (softmax of the raw scores, without
    ÷√d_k) are drawn over the weights as outlined bars (unmasked keys only), so the saturation the
    scaling prevents is seen; the note under the title gives both largest weights.
    """
    s, ss, w = (np.asarray(a, dtype=np.float64).ravel() for a in (scores, scaled_scores, weights))
    n = s.size
    if ss.size != n or w.size != n:
        raise ValueError(
            f"scores, scaled_scores and weights differ in length: {n}, {ss.size}, {w.size}"
        )
    u = None if unscaled_weights is None else np.asarray(unscaled_weights, dtype=np.float64).ravel()
    if u is not None and u.size != n:
        raise ValueError(f"unscaled_weights has {u.size} keys, the scores {n}")
    t = theme_spec(theme)
    masked = np.isneginf(s) | np.isneginf(ss)
    if mask is not None:
        masked |= ~np.asarray(mask, dtype=bool).ravel()
    ticks = display_labels(key_labels, n)
    x = np.arange(n)
    peak = symmetric_range(np.where(masked, np.nan, s), np.where(masked, np.nan, ss)) * 1.1
    height = _query_bars_height(t)
    pw, ph = panel_px(theme, rows=3, height=min(height, t["height"] or height))
    fig = subplots(
        rows=3,
        cols=1,
        shared_xaxes=True,
        # room for the next panel's title (one line) between panels
        vertical_spacing=min(0.2, (1.3 * t["font_size"] + 12) / (3 * ph)),
        subplot_titles=(
            f"score q{DOT}kⱼ",
            f"scaled score q{DOT}kⱼ / {ROOT}{D_K} (same axis)",
            "weight = softmax(scaled)ⱼ" + (f"; outlined: without ÷{ROOT}{D_K}" if u is not None else ""),
        ),
    )

    def bars(vals: np.ndarray, row: int, name: str, marker: dict, role: str) -> np.ndarray:
        """One bar per unmasked key with a finite value, on panel `row`; which keys got one."""
        ok = ~masked & np.isfinite(vals)
        fig.add_trace(
            vf.bar(
                x=x[ok],
                y=vals[ok].astype(np.float32),
                name=name,
                marker=marker,
                customdata=[ticks[i] for i in x[ok]],
                showlegend=False,
                hovertemplate=f"key %{{customdata}}<br>{name} %{{y:.6~g}}<extra></extra>",
                meta={"role": role},
            ),
            row=row,
            col=1,
        )
        return ok

    def masked_bars(row: int) -> None:
        """A grey hatched bar down to -peak for each masked key on panel `row`, saying masked_text."""
        fig.add_trace(
            vf.bar(
                x=x[masked],
                y=[-peak] * int(masked.sum()),
                name=f"masked ({masked_text})",
                # outlined: the grey alone is 2.1:1 on white, under the 3:1 a bar needs (WCAG 2.1 SC 1.4.11)
                marker=dict(color=t["mask_bg"], pattern=dict(shape="/", fgcolor=t["mask_fg"]),
                            line=dict(width=1, color=t["mask_fg"])),
                text=[masked_text] * int(masked.sum()),
                textposition="inside",
                insidetextanchor="middle",
                customdata=[ticks[i] for i in x[masked]],
                hovertemplate=f"key %{{customdata}}<br>masked: {escape_text(masked_text)}<extra></extra>",
                showlegend=row == 1,
                legendgroup="masked",
                meta={"role": "masked_bars"},
            ),
            row=row,
            col=1,
        )

    for row, vals, name, color in (
        (1, s, "score", QUALITATIVE[0]),
        (2, ss, "scaled score", QUALITATIVE[4]),
        (3, w, "weight", QUALITATIVE[2]),
    ):
        bars(vals, row, name, dict(color=color), "bars")
        if masked.any() and row < 3:  # a masked key's weight is a ✕ at 0 (below)
            masked_bars(row)
    if masked.any():
        fig.add_trace(
            vf.scatter(
                x=x[masked],
                y=np.zeros(int(masked.sum())),
                mode="markers",
                marker=dict(symbol="x", size=10, color=t["mask_fg"]),
                cliponaxis=False,
                showlegend=False,
                customdata=[ticks[i] for i in x[masked]],
                hovertemplate="key %{customdata}<br>masked: weight exactly 0<extra></extra>",
                meta={"role": "masked_weight"},
            ),
            row=3,
            col=1,
        )
    notes = []
    if masked.all():  # every key masked: NaN as softmax over all −∞ makes it; 0 (the ✕ drawn) as model/ makes it
        if not np.isfinite(w).all():
            notes.append(f"weights are NaN: {NAN_SOFTMAX}")
    elif not np.isfinite(w[~masked]).all():  # a NaN beside finite weights: no mask made it
        notes.append("weights hold NaN or ±∞ where a key is not masked: as in the input")
    if u is not None:  # an outline over each weight bar, as wide: where the weight would be without ÷√d_k
        outline = dict(color="rgba(0,0,0,0)", line=dict(width=max(1.5, t["line_width"]), color=t["font_color"]))
        ok = bars(u, 3, f"without ÷{ROOT}{D_K}: softmax(score)", outline, "unscaled_weights")
        if ok.any():
            notes.append(f"largest weight {num_weight(np.nanmax(w[ok]))}; without ÷{ROOT}{D_K} it would be "
                         f"{num_weight(u[ok].max())}")
    fig.update_yaxes(range=[-peak, peak], row=1, col=1)
    fig.update_yaxes(range=[-peak, peak], row=2, col=1)
    fig.update_yaxes(range=[0, 1.05], row=3, col=1, title_text="weight")
    # Key labels: all of them while they fit side by side (or turned 90°), else every k-th.
    fits = pw // (widest(ticks, t["font_size"]) + 10)
    step = 1 if n <= max(fits, tick_budget(pw, t["font_size"])) else _nice_step(
        n / tick_budget(pw, t["font_size"])
    )
    fig.update_xaxes(
        tickmode="array",
        tickvals=x.tolist()[::step],
        ticktext=ticks[::step],
        showgrid=False,
        zeroline=False,
        range=[-0.5, n - 0.5],
        # labels that do not fit side by side turned 90°, as the heatmaps' and as viz.theme's bottom margin counts
        # them: plotly.js's own 30° left ~45 px of white under the 'key' title of a 39-token export (paper)
        autotickangles=[0, 90],
    )
    fig.update_xaxes(title_text="key", row=3, col=1)
    default = (f"Query {query_label}: s" if query_label else "S") + (
        "cores, scaled scores and weights over every key"
    )
    fig.update_layout(
        title=title_layout(title or default, notes),
        barmode="overlay",
        height=height,
    )
    return _score_ticks_apart(apply_theme(fig, theme), t)


PLOTLY_MIN_LABELS = 5  # plotly.js's own ticks on a linear axis (nticks 0): 4 steps at least, so 5 labels


def _score_ticks_apart(fig: go.Figure, t: dict) -> go.Figure:
    """query_bars' two score panels (apply_theme's, their height as laid out) with no more tick labels than fit one
    per 1.3 lines of the theme's type (tick_budget), where plotly.js's own five would not: a look walk found the
    slide theme's 140 px panels at 22 px type labelled 10, 5, 0, −5, −10, nearly touching. nticks n gives n + 1
    labels at most (the step is rounded up)."""
    layout = vf.editable(fig)["layout"]
    margin = layout["margin"]
    plot = layout["height"] - margin["t"] - margin["b"]
    for name in ("yaxis", "yaxis2"):
        axis = layout[name]
        labels = tick_budget(plot * (axis["domain"][1] - axis["domain"][0]), t["font_size"])
        if labels < PLOTLY_MIN_LABELS:
            axis["nticks"] = max(2, labels - 1)
    return fig


def _query_bars_height(t: dict) -> int:
    """query_bars' height, laid out for the app (exports use their own size): three panels of bars with a title
    each; a theme with larger type gets that much more height, else each panel's title sits on the axis above it
    and the ticks touch. A theme of fixed height that holds QUERY_BARS_LINES lines of its type keeps its height:
    the slide theme's figure fits one 16:9 slide (720 px, not 974), on a projector and in a deck."""
    if t["height"] and t["height"] >= QUERY_BARS_LINES * t["font_size"]:
        return t["height"]
    return round(620 * type_scale(t))


# view 5's context vector: a pattern per key (one for each colour of QUALITATIVE), none on the grey "other keys" bar;
# "x" and "/" last, the hatching of NaN and masked cells elsewhere
KEY_PATTERNS = ("\\", ".", "|", "-", "+", "x", "/")


def context_key_bars(weights: np.ndarray) -> tuple[list[int], list[int]]:
    """Which keys context_vector_figure draws a bar of their own, and which it sums into one grey "other keys" bar
    (both in key order; masked keys, weight 0 or not finite, add nothing and are in neither). One colour per key while
    the palette lasts; beyond it the heaviest keys keep theirs (the stack still adds up to the total)."""
    w = np.asarray(weights, dtype=np.float64).ravel()
    live = [j for j in range(w.size) if np.isfinite(w[j]) and w[j] != 0]
    if len(live) <= len(QUALITATIVE):
        return live, []
    keep = sorted(sorted(live, key=lambda j: -abs(w[j]))[: len(QUALITATIVE) - 1])
    return keep, [j for j in live if j not in keep]


def context_vector_figure(
    weights: np.ndarray,
    values: np.ndarray,
    *,
    key_labels: Sequence[str] | None,
    query_label: str = "",
    context: np.ndarray | None = None,
    title: str | None = None,
    theme: str = "default",
) -> go.Figure:
    """The context vector Σⱼ wⱼ vⱼ per dimension as stacked bars of wⱼ·vⱼ, one colour and pattern per key.

    The ◆ markers are the total. Pass the model's own `context` to have it drawn instead and
    its max difference from the sum of the bars stated in the title.
    """
    w = np.asarray(weights, dtype=np.float64).ravel()
    V = np.asarray(values, dtype=np.float64)
    if V.ndim != 2 or V.shape[0] != w.size:
        raise ValueError(f"values must be (n_keys={w.size}, d_v), got shape {V.shape}")
    t = theme_spec(theme)
    parts = w[:, None] * V  # (n_keys, d_v): row j = w_j * v_j
    total = parts.sum(axis=0)  # (d_v,)
    ticks = display_labels(key_labels, w.size)
    dims = np.arange(V.shape[1])
    fig = Fig()
    keep, rest = context_key_bars(w)
    for n_, j in enumerate(keep):
        fig.add_trace(
            vf.bar(
                x=dims,
                y=parts[j].astype(np.float32),
                name=f"{ticks[j]} (w = {w[j]:.3f})",
                # a pattern per key too, in the legend as well: keys told apart by colour alone were one grey to a
                # colour-blind student (WCAG 1.4.1); apply_theme draws it in the plot's colour, 3:1 on every shade
                # (opaque: plotly.js's half-opaque default took it under that)
                marker=dict(color=QUALITATIVE[n_ % len(QUALITATIVE)],
                            pattern=dict(shape=KEY_PATTERNS[n_ % len(KEY_PATTERNS)], fillmode="overlay",
                                         fgopacity=1, size=max(6, round(0.5 * t["font_size"])), solidity=0.25)),
                customdata=np.stack([np.full(V.shape[1], w[j]), V[j]], axis=1).astype(np.float32),
                hovertemplate=(
                    f"key {ticks[j]}<br>dim %{{x}}<br>w = %{{customdata[0]:.4~g}} × "
                    "v = %{customdata[1]:.4~g}<br>= %{y:.4~g}<extra></extra>"
                ),
                meta={"role": "bars"},
            )
        )
    if rest:
        other = parts[rest].sum(axis=0)  # (d_v,)
        fig.add_trace(
            vf.bar(
                x=dims,
                y=other.astype(np.float32),
                name=f"{len(rest)} other keys (Σ w = {w[rest].sum():.3f})",
                marker=dict(color=t["mask_bg"], line=dict(width=1, color=t["mask_fg"])),  # outlined, as masked bars
                hovertemplate=f"{len(rest)} other keys<br>dim %{{x}}<br>Σ wⱼvⱼ = %{{y:.4~g}}"
                "<extra></extra>",
                meta={"role": "bars", "keys": rest},
            )
        )
    shown = total if context is None else np.asarray(context, dtype=np.float64).ravel()
    notes = []
    if context is not None:
        notes.append(f"model output vs Σ wⱼvⱼ: max difference {num(np.abs(shown - total).max(), '.1e')}")
    if not np.isfinite(w).any():
        notes.append(f"no finite weights: {NAN_SOFTMAX}")
    fig.add_trace(
        vf.scatter(
            x=dims,
            y=shown.astype(np.float32),
            mode="markers",
            name="context vector Σ wⱼvⱼ",
            marker=dict(
                symbol="diamond",
                size=10,
                color=t["font_color"],
                line=dict(width=1, color=t["paper_bgcolor"]),
            ),
            hovertemplate="dim %{x}<br>context %{y:.6~g}<extra></extra>",
            meta={"role": "total"},
        )
    )
    default = f"Context vector of query {query_label or 'this query'} = Σⱼ wⱼ vⱼ"
    fig.update_layout(
        barmode="relative",
        title=title_layout(title or default, notes),
        xaxis=dict(
            title_text="value dimension",
            tickmode="linear" if V.shape[1] <= 16 else "auto",
            dtick=1 if V.shape[1] <= 16 else None,
            range=[-0.5, V.shape[1] - 0.5],
        ),
        yaxis=dict(title_text=f"contribution wⱼ{DOT}vⱼ", zeroline=True),
        legend=dict(title_text="key (weight)"),
    )
    return apply_theme(fig, theme)


LINES_ALL_UP_TO = 16  # keys: up to this many, every non-zero weight is a line; beyond, each query's strongest
LINES_TOP = 8
LINE_FAINTEST = 0.01  # the chosen query's lines: none below 1% of its largest weight (a 1e-10 line showed)
CHOSEN_BANDS = 20  # the chosen query's lines: steps of 5% of its largest weight, from 0.55 opaque (above the rest)
LINE_BANDS = 10  # weights in (0, 0.1), [0.1, 0.2), ... [0.9, 1]: one trace each, its opacity the band's middle


def _rgba(hex_colour: str, alpha: float) -> str:
    r, g, b = plotly.colors.hex_to_rgb(hex_colour)
    return f"rgba({r},{g},{b},{alpha:.3f})"


def _spread(n: int) -> np.ndarray:
    """n token positions spread over [0, 1], token 0 at 0 (drawn at the top); one token in the middle."""
    return np.linspace(0.0, 1.0, n) if n > 1 else np.array([0.5])


def _segments(pairs: np.ndarray, yq: np.ndarray, yk: np.ndarray) -> tuple[list, list]:
    """x and y of one line per (query, key) pair, from x=0 to x=1, separated by None (one trace)."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)  # (n, 2): (query, key) per line
    y = np.empty((len(pairs), 3), dtype=object)  # (n, 3): query's y, key's y, None (a gap)
    y[:, 0] = yq[pairs[:, 0]].tolist()
    y[:, 1] = yk[pairs[:, 1]].tolist()
    y[:, 2] = None
    return [0.0, 1.0, None] * len(pairs), y.ravel().tolist()  # (3n,) each


def _strongest(live: np.ndarray, W: np.ndarray, k: int) -> np.ndarray:
    """live restricted to each row's k largest live weights; among equal weights the lower key index
    wins (what a stable descending sort would keep), found in O(n) per row with np.partition."""
    k = min(k, W.shape[1])
    score = np.where(live, W, -1.0)  # (n_q, n_k); weights are >= 0, so dead keys sort last
    kth = -np.partition(-score, k - 1, axis=1)[:, k - 1:k]  # (n_q, 1) each row's k-th largest score
    above = score > kth
    ties = score == kth
    room = k - above.sum(axis=1)  # (n_q,) places left for keys equal to the k-th
    crowded = np.flatnonzero(ties.sum(axis=1) > room)  # rows with more such keys than places (rare)
    ties[crowded] &= np.cumsum(ties[crowded], axis=1) <= room[crowded, None]  # the lowest indices
    return live & (above | ties)


def attention_lines(
    weights: np.ndarray,
    *,
    query_labels: Sequence[str] | None,
    key_labels: Sequence[str] | None,
    query: int | None = None,
    mask: np.ndarray | None = None,
    title: str | None = None,
    theme: str = "default",
) -> go.Figure:
    """Attention as lines (the "head view" of Vig 2019, BertViz): queries on the left, keys on the
    right, one line per softmax weight, the more opaque the larger (LINE_BANDS opacity bands).

    A weight of exactly 0 (a masked key) gets no line. With more than LINES_ALL_UP_TO keys, each
    query keeps its LINES_TOP strongest keys (the title says so). The chosen `query`'s lines are drawn on
    top in colour, their opacity and width by weight relative to its largest (so that at long inputs,
    where every weight is small, 0.02 and 0.097 still differ), none below LINE_FAINTEST of it (a weight
    of 1e-10 drew a line as plain as 0.099's), with every weight on hover at the keys' ends.
    """
    W = np.asarray(weights, dtype=np.float64)
    if W.ndim != 2:
        raise ValueError(f"weights must be (n_queries, n_keys), got shape {W.shape}")
    n_q, n_k = W.shape
    t = theme_spec(theme)
    qt, kt = display_labels(query_labels, n_q), display_labels(key_labels, n_k)
    live = np.isfinite(W) & (W > 0)
    if mask is not None:
        live &= np.broadcast_to(np.asarray(mask, dtype=bool), W.shape)
    notes = []
    if n_k > LINES_ALL_UP_TO:
        live = _strongest(live, W, LINES_TOP)
        notes.append(f"each query's {LINES_TOP} strongest of {n_k} keys")
    if mask is not None and not np.all(mask):
        notes.append("masked keys (weight exactly 0): no line")
    yq, yk = _spread(n_q), _spread(n_k)
    fig = Fig()
    band = np.minimum((np.where(live, W, 0.0) * LINE_BANDS).astype(np.int64), LINE_BANDS - 1)  # (n_q, n_k)
    chosen = None if query is None else int(query)
    every = np.argwhere(live)  # (n, 2) every line's (query, key), row-major
    if chosen is not None:
        every = every[every[:, 0] != chosen]  # the chosen query's lines come on top, in colour
    every_band = band[every[:, 0], every[:, 1]]  # (n,)
    # with a query chosen, the others' lines stay in the background: at most half opaque, where its
    # own start above that (on a dark page a near-white line at full weight outshone the chosen colour)
    faint = 1.0 if chosen is None else 0.5
    for b in range(LINE_BANDS):
        pairs = every[every_band == b]
        if not len(pairs):
            continue
        x, y = _segments(pairs, yq, yk)
        fig.add_trace(vf.scatter(
            x=x, y=y, mode="lines", hoverinfo="skip", showlegend=False,
            line=dict(color=_rgba(t["font_color"], faint * (b + 0.5) / LINE_BANDS), width=t["line_width"] * 0.6),
            meta={"role": "lines", "band": b},
        ))
    if chosen is not None:
        colour = QUALITATIVE[0] if theme != "dark" else QUALITATIVE[4]
        row = np.where(live[chosen], W[chosen], 0.0)  # (n_k,)
        top = float(row.max())
        rel = row / top if top > 0 else row  # (n_k,) weight / the chosen query's largest
        shown = live[chosen] & (rel >= LINE_FAINTEST)
        keys = np.flatnonzero(shown)
        rel_band = np.minimum((rel * CHOSEN_BANDS).astype(np.int64), CHOSEN_BANDS - 1)  # (n_k,)
        if top > 0:
            notes.append(f"{qt[chosen]}'s lines: darker and wider by weight ÷ its largest, {num(top)}")
        if (faint_keys := int(live[chosen].sum() - shown.sum())):
            notes.append(f"{faint_keys} of its weights under {LINE_FAINTEST:.0%} of that: no line")
        for b in range(CHOSEN_BANDS):
            js = keys[rel_band[keys] == b]
            if not len(js):
                continue
            x, y = _segments(np.stack([np.full_like(js, chosen), js], axis=1), yq, yk)
            fig.add_trace(vf.scatter(
                x=x, y=y, mode="lines", hoverinfo="skip", showlegend=False,
                line=dict(color=_rgba(colour, 0.55 + 0.45 * (b + 0.5) / CHOSEN_BANDS),
                          width=t["line_width"] * (0.75 + 2.5 * (b + 0.5) / CHOSEN_BANDS)),
                meta={"role": "query-lines", "band": b},
            ))
        fig.add_trace(vf.scatter(
            x=np.ones(n_k), y=yk, mode="markers", showlegend=False,
            marker=dict(size=np.where(live[chosen], 0.5, 0.3).astype(np.float32) * t["font_size"], color=colour),
            customdata=W[chosen].astype(np.float32),  # (n_k,) the hover's weights
            text=[f"{qt[chosen]} → {k}" for k in kt],
            hovertemplate="%{text}<br>weight %{customdata:.4f}<extra></extra>",
            meta={"role": "query-keys"},
        ))
        fig.add_trace(vf.scatter(
            x=[0.0], y=[float(yq[chosen])], mode="markers", showlegend=False, hoverinfo="skip",
            marker=dict(size=0.7 * t["font_size"], color=colour), meta={"role": "query"},
        ))
    # Token labels: the queries on the left axis, the keys on a second axis on the right.
    k = type_scale(t)  # larger type (slides, 22 px) gets as many lines' room
    height = int(min(900, k * max(360, 120 + 24 * max(n_q, n_k))))
    budget = tick_budget(height - 120 * k, t["font_size"])
    q_step = 1 if n_q <= budget else _nice_step(n_q / budget)
    k_step = 1 if n_k <= budget else _nice_step(n_k / budget)
    fig.update_yaxes(tickmode="array", tickvals=yq[::q_step].tolist(), ticktext=qt[::q_step],
                     range=[1.04, -0.04], showgrid=False, zeroline=False)
    fig.add_label_axis("y2", yk, yk[::k_step].tolist(), kt[::k_step], side="right", across=1.0)
    fig.update_xaxes(range=[-0.02, 1.02], showgrid=False, zeroline=False, showline=False, ticks="",
                     tickmode="array", tickvals=[0.0, 1.0], ticktext=["query", "key"])  # under each column
    default = "Attention as lines: query → key, more opaque = larger weight"
    fig.update_layout(title=title_layout(title or default, notes), height=height, hovermode="closest")
    return apply_theme(fig, theme)
