"""The one heatmap engine every matrix figure uses.

It keeps tick labels unique (numeric axes + tickvals/ticktext, so Plotly can never merge rows),
draws masked cells as grey hatched patches with "−∞" (not just a colour), explains every NaN,
keeps large inputs under ~1 MB of JSON (float32, block means above MAX_CELLS per side) and says
so in the title, and hands plotly.js only evenly spaced cells, which it paints fast (even_pieces).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import plotly.graph_objects as go

from viz import fig as vf
from viz.fig import Fig
from viz.labels import display_labels, escape_text, num
from viz.theme import (
    MAGNITUDE_COLORSCALE,
    PLOT_FRACTION,
    SCORES_COLORSCALE,
    WEIGHTS_COLORSCALE,
    apply_theme,
    cell_type_px,
    design_size,
    edge_px,
    fit_cell_values,
    note_size,
    text_width,
    theme_spec,
    widest,
)

LARGE_ABOVE = 128  # more rows or columns than this is a "large input" (said in the title)
MAX_CELLS = 256  # at most this many cells per side are sent; beyond it, block means
MAX_SIDE = 4 * MAX_CELLS  # ... unless the matrix has no more cells than MAX_CELLS² in all, and no side above this
MAX_TICKS = 48  # more cells than this per side: label every k-th one only
HOVER_LABELS = "hover_labels"  # trace meta: each cell's axis labels for the hover (grid_heatmaps)
VALUES_MAX = 24  # per-cell value text only for matrices up to this size
AUTO_VALUES_MAX = 12  # the paper theme turns value text on by itself up to this size
MASK_TEXT_MAX = 24  # "−∞" written in masked cells up to this size
MAX_PATCHES = 1500  # more hatched rectangles than this: plain grey cells instead
TALL_ROWS = 40  # a matrix of up to this many rows grows taller (to ~900 px) so that every row is labelled

KINDS = ("weights", "scores", "values", "magnitude")


@dataclass
class Grid:
    """A matrix ready to draw; cells may be blocks of the original when it was large."""

    z: np.ndarray  # (R, C) float32; NaN where masked or not a number
    masked: np.ndarray  # (R, C) bool, True = may NOT attend (grey, hatched)
    bad: np.ndarray  # (R, C) bool, non-finite values that are not masked
    y: np.ndarray  # (R,) row centres, in original row positions
    x: np.ndarray  # (C,) column centres, in original column positions
    y_edges: np.ndarray  # (R + 1,) row boundaries
    x_edges: np.ndarray  # (C + 1,) column boundaries
    row_text: list[str]  # one display label per row of cells
    col_text: list[str]
    shape: tuple[int, int]  # the original matrix shape
    notes: list[str] = field(default_factory=list)
    bad_value: np.ndarray | None = None  # (R, C) where bad: what the cell holds, NaN, +inf or -inf (None: no bad cell)

    @property
    def downsampled(self) -> bool:
        return self.z.shape != self.shape


def _blocks(n: int, factor: int, text: list[str]):
    """Centres, edges and labels of ceil(n / factor) blocks of `factor` positions."""
    if factor == 1 and n:  # one cell per position (most figures): no block arithmetic
        centres = np.arange(n, dtype=np.float64)
        return centres, np.arange(-0.5, n, 1.0), text
    centres, edges, ranges = _block_ranges(n, factor)
    labels = list(ranges)
    if n and n % factor == 1:  # a last block of one position is named by its token
        labels[-1] = text[n - 1]
    return centres, edges, labels


@lru_cache(maxsize=256)
def _block_ranges(n: int, factor: int) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """_blocks' arithmetic for factor > 1, once per (n, factor): centres, edges and "a–b" labels (a
    grid of heads at 128 tokens asks for the same ones a dozen times)."""
    starts = np.arange(0, n, factor)
    ends = np.minimum(starts + factor, n) - 1
    centres = (starts + ends) / 2.0
    edges = np.append(starts - 0.5, ends[-1] + 0.5) if n else np.array([-0.5, 0.5])
    centres.flags.writeable = edges.flags.writeable = False  # shared by every later call
    return centres, edges, tuple(f"{a}–{b}" for a, b in zip(starts.tolist(), ends.tolist(), strict=True))


def _block_sums(a: np.ndarray, fr: int, fc: int) -> np.ndarray:
    """Sum of every fr x fc block of (R, C), edge blocks partial: (ceil(R/fr), ceil(C/fc)).

    Whole rows are added first (long contiguous runs), then the fc neighbours of each block as fc
    strided slices: numpy's reduce over a tiny inner axis costs ~10x more per element.
    """
    R, C = a.shape
    Rb, Cb = -(-R // fr), -(-C // fc)
    if (Rb * fr, Cb * fc) != (R, C):
        padded = np.zeros((Rb * fr, Cb * fc), dtype=a.dtype)
        padded[:R, :C] = a
        a = padded
    rows = a.reshape(Rb, fr, Cb * fc).sum(axis=1)  # (Rb, Cb * fc): fr rows of each block added
    cols = rows.reshape(Rb, Cb, fc)  # (Rb, Cb, fc)
    out = cols[:, :, 0].copy()
    for j in range(1, fc):
        out += cols[:, :, j]
    return out


def _block_cells(n: int, factor: int) -> np.ndarray:
    """How many of the n positions each block of `factor` holds (the last one may hold fewer)."""
    starts = np.arange(0, n, factor)
    return np.minimum(factor, n - starts)


def _block_means(z: np.ndarray, masked: np.ndarray, hole: np.ndarray, fr: int, fc: int):
    """(means, masked) of fr x fc blocks: the mean of a block's cells that are not holes (NaN when
    it has none), and True where every cell of the block is masked."""
    cells = np.outer(_block_cells(z.shape[0], fr), _block_cells(z.shape[1], fc)).astype(z.dtype)
    if not hole.any():
        return _block_sums(z, fr, fc) / cells, np.zeros(cells.shape, dtype=bool)
    total = _block_sums(np.where(hole, z.dtype.type(0), z), fr, fc)
    count = cells - _block_sums(hole.astype(z.dtype), fr, fc)  # counts are exact in float32 (< 2**24)
    all_masked = _block_sums(masked.astype(z.dtype), fr, fc) == cells
    with np.errstate(invalid="ignore", divide="ignore"):
        return total / count, all_masked  # NaN where a block holds no value (0 / 0)


def prepare_grid(
    matrix: np.ndarray,
    *,
    row_text: list[str],
    col_text: list[str],
    mask: np.ndarray | None = None,
    panels: int = 1,
    boolean: bool = False,
) -> Grid:
    """Split a matrix into drawable values, masked cells and unexplained non-finite cells.

    mask: boolean, True = may attend (broadcast to the matrix). Without a mask, -inf cells count
    as masked (scores masked with -inf).
    panels: how many such matrices share one figure; the cell budget per side shrinks by
    sqrt(panels), so a whole multi-panel figure stays within one panel's payload (~1 MB).
    boolean: the matrix drawn is the mask itself (True/False): a large one's note speaks of blocks where any
    cell may attend, not of means and float32 digits.
    """
    z = np.asarray(matrix)
    if z.ndim != 2 or 0 in z.shape:
        raise ValueError(f"expected a non-empty 2-D matrix, got shape {z.shape}")
    return prepare_grids(z[None], row_text=row_text, col_text=col_text, mask=mask, panels=panels, boolean=boolean)[0]


def prepare_grids(
    stack: np.ndarray,
    *,
    row_text: list[str],
    col_text: list[str],
    mask: np.ndarray | None = None,
    panels: int | None = None,
    boolean: bool = False,
) -> list[Grid]:
    """prepare_grid of each matrix of `stack` (n, R, C): matrices of the same rows and columns (a grid of heads),
    whose labels, cell edges and cell budget are made once, and whose mask and NaN checks run over the whole
    stack at once where the matrices are drawn cell by cell (large ones, drawn as block means, a matrix at a time).
    mask: broadcast to the stack; panels: how many matrices share the figure (n by default)."""
    z = np.asarray(stack)
    if z.ndim != 3 or 0 in z.shape:
        raise ValueError(f"expected a non-empty stack of 2-D matrices (n, R, C), got shape {z.shape}")
    n, R, C = z.shape
    if len(row_text) != R or len(col_text) != C:
        raise ValueError(f"{len(row_text)}x{len(col_text)} labels for a {R}x{C} matrix")
    if mask is not None:
        mask = np.broadcast_to(np.asarray(mask, dtype=bool), z.shape)
    side = max(16, int(MAX_CELLS / math.sqrt(max(n if panels is None else panels, 1))))  # cells per side, per panel
    if R * C <= side * side and max(R, C) <= MAX_SIDE:
        # a long, thin matrix within a square's cells (tokens × d_model: embeddings, PE, Q/K/V, outputs) is
        # drawn whole: a block mean over dimensions averaged each sin with its cos at d_model 256, a flat wash
        fr = fc = 1
    else:
        fr, fc = max(1, math.ceil(R / side)), max(1, math.ceil(C / side))
    y, y_edges, row_text = _blocks(R, fr, list(row_text))
    x, x_edges, col_text = _blocks(C, fc, list(col_text))
    if fr > 1 or fc > 1:  # (values, masked, bad, bad_value) of each matrix's blocks, a matrix at a time: the
        # checks of a whole stack of large ones (8 x 512 x 512) ran out of the cache (the heads view at 512 tokens
        # took 20 % longer than with each matrix alone)
        cells, masked = [], []
        for i in range(n):
            zi = _float(z[i])
            masked_i, hole = _holes(zi, None if mask is None else mask[i])
            cells.append(_block_cells_of(zi, masked_i, hole, fr, fc))
            masked.append(masked_i)  # before the block means: the note says whether any cell was left out
    else:
        z = _float(z)
        masked, hole = _holes(z, mask)
        bad = hole & ~masked
        if hole.any():
            values, has_bad = np.where(hole, np.nan, z), bad.any(axis=(1, 2)).tolist()
        else:
            values, has_bad = z, [False] * n  # a bad cell is a hole
        values = values.astype(np.float32)
        cells = [(values[i], masked[i], bad[i], z[i] if has_bad[i] else None) for i in range(n)]
    return [
        Grid(z=v, masked=m, bad=b, y=y, x=x, y_edges=y_edges, x_edges=x_edges, row_text=row_text, col_text=col_text,
             shape=(R, C), notes=_large_note(R, C, v.shape, fr, fc, masked[i], boolean), bad_value=bad_value)
        for i, (v, m, b, bad_value) in enumerate(cells)
    ]


def _float(z: np.ndarray) -> np.ndarray:
    """float32 stays float32 (what is sent); everything else as float64 (a copy)."""
    return z if z.dtype == np.float32 else z.astype(np.float64)


def _holes(z: np.ndarray, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(masked, hole) of `z`: its masked cells (mask False; without a mask, its -inf cells, as scores masked with
    -inf) and its cells without a value to draw (masked, or NaN/inf)."""
    masked = np.isneginf(z) if mask is None else ~mask
    return masked, masked | ~np.isfinite(z)


def _block_cells_of(z: np.ndarray, masked: np.ndarray, hole: np.ndarray, fr: int, fc: int):
    """prepare_grids' (values as float32, masked, bad, bad_value) of one matrix's fr x fc blocks."""
    values, block_masked = _block_means(z, masked, hole, fr, fc)
    bad = np.isnan(values) & ~block_masked
    bad_value = None
    if bad.any():  # a block without a finite cell: the sum (so the mean's sign) of its cells not masked
        with np.errstate(invalid="ignore"):  # +inf + -inf: NaN, as their mean is
            bad_value = _block_sums(np.where(masked, z.dtype.type(0), z), fr, fc)
    return values.astype(np.float32), block_masked, bad, bad_value


def _large_note(R: int, C: int, shown: tuple[int, int], fr: int, fc: int, masked: np.ndarray,
                boolean: bool) -> list[str]:
    """The title note of a large matrix (R x C, drawn as `shown` cells of fr x fc positions; `masked`: its masked
    cells, before any block means), or none."""
    if max(R, C) <= LARGE_ABOVE:
        return []
    blocked = fr > 1 or fc > 1
    note = f"Large input ({R}×{C})"
    if blocked and boolean:
        note += f": shown as {shown[0]}×{shown[1]} cells, each a {fr}×{fc} block, True where any of its cells may attend"
    elif blocked:
        note += (
            f": shown as {shown[0]}×{shown[1]} cells, each the mean of a "
            f"{fr}×{fc} block" + (" (masked cells left out)" if masked.any() else "")
        )
    if not boolean:
        note += "; values drawn in float32 (about 7 significant digits)"
    if max(shown) > MAX_TICKS:  # more labels than that: a label per cell
        note += "; not every label shown"
    return [note]


def _nice_step(raw: float) -> int:
    """Smallest of 1, 2, 5, 10, 20, 50, ... that is >= raw."""
    step = 1
    while True:
        for m in (1, 2, 5):
            if m * step >= raw:
                return m * step
        step *= 10


def axis_ticks(
    centres: np.ndarray, text: list[str], *, numbers: bool = False, max_ticks: int = MAX_TICKS
) -> dict:
    """tickvals/ticktext for a numeric axis: every cell up to max_ticks, else a nice step.

    numbers=True labels thinned ticks with the bare position (block labels "0–1" are long): the
    block's first position, and the tick sits there (inside its block's cell), not at the block's centre.
    """
    max_ticks = max(2, min(max_ticks, MAX_TICKS))
    step = 1 if len(text) <= max_ticks else _nice_step(len(text) / max_ticks)
    idx = range(0, len(text), step)
    if not numbers:  # every step-th cell (tolist: the same floats as float() of each, in one call)
        return dict(tickmode="array", tickvals=np.asarray(centres, dtype=np.float64)[::step].tolist(),
                    ticktext=list(text[::step]))
    # a block's label is "0–2" (positions 0..2, _blocks); a one-position block keeps its token's label
    blocks = [_BLOCK.fullmatch(text[i]) for i in idx]
    return dict(
        tickmode="array",
        tickvals=[float(b[1]) if b else float(centres[i]) for b, i in zip(blocks, idx, strict=True)],
        ticktext=[b[1] if b else text[i] for b, i in zip(blocks, idx, strict=True)],
    )


_BLOCK = re.compile(r"(\d+)–(\d+)")  # a block label of _blocks: first–last position


def clear_right_end(axis: dict, panel_px: float, font_px: float, gap_px: float) -> None:
    """An x axis of a panel with another panel `gap_px` right of it: its last tick label goes where it and
    the next panel's first label (the same labels) would reach into each other across the gap. Only where
    the labels lie side by side (ticks further apart than the widest label; plotly.js turns crowded labels
    90°, and then they do not reach sideways)."""
    vals, text, span = axis.get("tickvals"), axis.get("ticktext"), axis.get("range")
    if axis.get("showticklabels") is False or not vals or not text or not span or len(vals) < 2:
        return
    per = panel_px / abs(span[1] - span[0])  # px per position
    if min(b - a for a, b in itertools.pairwise(vals)) * per < widest(text, font_px) + 4:
        return  # turned 90°
    right = text_width(text[-1], font_px) / 2 - (max(span) - vals[-1]) * per  # past this panel's right end
    left = text_width(text[0], font_px) / 2 - (vals[0] - min(span)) * per  # the next one's, before its left end
    if max(0.0, right) + max(0.0, left) + 4 > gap_px:
        axis["tickvals"], axis["ticktext"] = list(vals[:-1]), list(text[:-1])


def is_index_axis(text: Sequence[str]) -> bool:
    """Labels that are just the positions "0", "1", ...: Plotly may place ticks by itself."""
    return tuple(text) == _index_labels(len(text))


@lru_cache(maxsize=64)
def _index_labels(n: int) -> tuple[str, ...]:
    return tuple(str(i) for i in range(n))


def taller_for_rows(fig: Fig, theme: str, n_rows: int, ph: float) -> float:
    """The plot height at which n_rows row labels all fit (tick_budget), `fig` grown by what its plot lacks,
    for the themes laid out at the app's height (default, dark), up to TALL_ROWS rows (about 900 px). `ph`
    and `fig` as they are where it need not grow, has more rows (a thinned axis is labelled every k-th
    row however tall), or for a theme of fixed size (paper, slide: an export's size)."""
    t = theme_spec(theme)
    need = (n_rows + 1) * 1.3 * t["font_size"]
    if t["height"] or ph >= need or n_rows > TALL_ROWS:  # past it, axis_ticks labels every k-th row
        return ph
    fig.update_layout(height=round(design_size(theme)[1] + need - ph))
    return need


SHORT_ROWS = 3  # a query x key matrix of fewer rows keeps the row height of one of this many


def short_row_px(theme: str, n_cols: int, width: float, line_px: float) -> float:
    """A row's height in a matrix of fewer than SHORT_ROWS rows, `width` px wide: no taller than a SHORT_ROWS-row
    matrix's rows (the theme's, not this figure's: its notes and bars vary, mask, weights), nor than its cells are
    wide, and two lines of `line_px` type at least (its label)."""
    return max(min(width / max(1, n_cols), panel_px(theme)[1] / SHORT_ROWS), 2 * 1.3 * line_px)


def shorter_for_rows(fig: Fig, theme: str, n_rows: int, n_cols: int, pw: float, ph: float, y_title: str = "") -> float:
    """The plot height for a query x key matrix of fewer than SHORT_ROWS rows (a decoding step's first rows:
    1 x 1, 1 x 4): each row no taller than a SHORT_ROWS-row matrix's, nor than its cells are wide (two lines
    of text at least, and seven in all for the colour bar beside it), `fig` shrunk by what its plot sheds. A
    teacher's walk found the decoder's first step, [BOS] reading itself, drawn as one cell 500 x 330 px; a later
    one, in the slide theme (which lesson step 7 opens), as one cell 766 x 315 px: every theme, those with an
    export size of their own too (the figure is then shorter than it). `ph` and `fig` as they are where nothing
    would change."""
    t = theme_spec(theme)
    if n_rows >= SHORT_ROWS:
        return ph
    row = short_row_px(theme, n_cols, pw, t["font_size"])
    # and room for its colour bar's ticks and the y axis's title beside it (a row of 21 narrow keys: 36 px), the
    # title turned along the plot and the margins above and below it (a regression walk: the paper theme's
    # "decoding step (reads → writes)" ran off the figure's top at view 7's first step)
    want = max(n_rows * row, 7 * 1.3 * t["font_size"], text_width(y_title, t["font_size"]) - 4 * t["font_size"])
    if want >= ph:
        return ph
    fig.update_layout(height=round(design_size(theme, fig)[1] - (ph - want)))
    return want


def keep_plot_height(fig: go.Figure, plot_h: float, theme: str) -> go.Figure:
    """`fig` (apply_theme's, laid out short by shorter_for_rows to a plot `plot_h` px tall) made that tall from its
    margins as laid out, not as plot_px estimated them: a title that wraps to two lines or a note took its line from
    the plot (a look walk, view 3 at one token: the scaled scores' one row 102 px where the scores' above it had 124,
    their colour bar ~70 px, five ticks crowded on it). Its cell values fitted again to the cells' new size."""
    lean = vf.editable(fig)
    layout = lean["layout"]
    margin = layout.get("margin") or {}
    layout["height"] = round(plot_h + margin.get("t", 0) + margin.get("b", 0))
    fit_cell_values(lean["data"], layout, theme)
    return fig


def tick_budget(axis_px: float, font_px: float) -> int:
    """How many tick labels fit along an axis axis_px long: one per 1.3 lines of text (labels
    on a crowded x axis are turned 90°, so the same holds there)."""
    return max(2, int(axis_px // (1.3 * font_px)))


def panel_px(theme: str, *, rows: int = 1, cols: int = 1, height: int | None = None,
             width: int | None = None) -> tuple[float, float]:
    """Estimated (width, height) in px of one panel of a rows x cols grid when the figure is
    drawn at its theme's size (see viz.theme.design_size)."""
    t = theme_spec(theme)
    w0, h0 = design_size(theme)
    w, h = width or w0, height or h0
    plot_w = w * PLOT_FRACTION - 4 * t["font_size"]  # y labels and title left of the plot
    plot_h = h - 2.4 * t["title_size"] - 4 * t["font_size"]  # title above, x labels below
    plot_w -= (cols - 1) * 0.04 * plot_w  # gaps between panels
    plot_h -= (rows - 1) * 1.6 * t["font_size"]  # a panel title between rows
    return max(40.0, plot_w / cols), max(40.0, plot_h / rows)


def color_range(kind: str, values: Sequence[np.ndarray], zmin=None, zmax=None):
    """(zmin, zmax, colorscale) for a kind of matrix; shared `values` give one shared range.

    weights: fixed [0, 1]. scores/values: symmetric about 0 (diverging). magnitude: [0, max].
    """
    if kind == "weights":
        return 0.0, 1.0, WEIGHTS_COLORSCALE
    finite = [np.abs(v[np.isfinite(v)]) for v in (np.asarray(a, float) for a in values)]
    peak = max((float(f.max()) for f in finite if f.size), default=0.0)
    if kind in ("scores", "values"):
        m = float(zmax) if zmax is not None else (peak or 1.0)
        return -m, m, SCORES_COLORSCALE
    if kind == "magnitude":
        lo = 0.0 if zmin is None else float(zmin)
        return lo, float(zmax) if zmax is not None else (peak or 1.0), MAGNITUDE_COLORSCALE
    raise ValueError(f"unknown kind {kind!r}; choose one of {', '.join(KINDS)}")


def symmetric_range(*matrices: np.ndarray, mask: np.ndarray | None = None) -> float:
    """max |value| over the finite, allowed cells of all matrices: one colour range for a set."""
    peak = 0.0
    for m in matrices:
        a = np.asarray(m, dtype=np.float64)
        ok = np.isfinite(a)
        if mask is not None and a.ndim >= 2:
            ok &= np.broadcast_to(np.asarray(mask, dtype=bool), a.shape)
        if ok.any():
            peak = max(peak, float(np.abs(a[ok]).max()))
    return peak or 1.0


def _runs(row: np.ndarray) -> tuple[tuple[int, int], ...]:
    """(first, last) column of each run of True in a boolean row."""
    padded = np.concatenate(([False], row, [False]))
    d = np.diff(padded.astype(np.int8))
    return tuple(zip(np.flatnonzero(d == 1), np.flatnonzero(d == -1) - 1, strict=True))


def _rectangles(cells: np.ndarray, x_edges: np.ndarray, y_edges: np.ndarray):
    """Merge True cells into rectangles (runs per row, equal runs in adjacent rows joined)."""
    rects = []
    r = 0
    R = cells.shape[0]
    while r < R:
        runs = _runs(cells[r])
        r_end = r
        while r_end + 1 < R and _runs(cells[r_end + 1]) == runs:
            r_end += 1
        for c0, c1 in runs:
            rects.append((x_edges[c0], x_edges[c1 + 1], y_edges[r], y_edges[r_end + 1]))
        r = r_end + 1
    return rects


def _polygon_xy(rects) -> tuple[np.ndarray, np.ndarray]:
    """Closed rectangles as one NaN-separated path (float32: small payload)."""
    xs, ys = [], []
    for x0, x1, y0, y1 in rects:
        xs += [x0, x1, x1, x0, x0, np.nan]
        ys += [y0, y0, y1, y1, y0, np.nan]
    return np.asarray(xs, np.float32), np.asarray(ys, np.float32)


def add_cell_overlay(
    fig: Fig,
    grid: Grid,
    cells: np.ndarray,
    *,
    name: str,
    cell_text: str | np.ndarray | None,
    pattern: str,
    theme: str,
    row: int | None = None,
    col: int | None = None,
    legendgroup: str | None = None,
    panel: tuple[float, float] | None = None,
) -> str | None:
    """Hatched patches over `cells` (plus `cell_text` in each when it fits: one text, or each cell's own in an
    (R, C) array), hover = name: pattern "/" masked cells, grey; "x" NaN ones, in the theme's colour for them, near
    its plot's own (a hole in the matrix).

    panel: the (width, height) px of the plot at the theme's size (default: one plot).
    Returns the key to print under the title (e.g. "▨ grey hatched: masked (−∞)"), or None.
    """
    if not cells.any():
        return None
    t = theme_spec(theme)
    where = dict(row=row, col=col) if row is not None else {}
    rects = _rectangles(cells, grid.x_edges, grid.y_edges)
    role = "mask" if pattern == "/" else "nan"
    bg, fg = t[f"{role}_bg"], t[f"{role}_fg"]  # the theme's: NaN cells were a white box on the dark plot
    if len(rects) <= MAX_PATCHES:
        xs, ys = _polygon_xy(rects)
        fig.add_trace(
            vf.scatter(
                x=xs,
                y=ys,
                mode="lines",
                fill="toself",
                fillcolor=bg,
                fillpattern=dict(shape=pattern, bgcolor=bg, fgcolor=fg, size=7, solidity=0.2),
                line=dict(width=0.5, color=fg),
                hoveron="fills",
                hoverinfo="name",
                hoverlabel=dict(namelength=-1),
                name=name,
                showlegend=False,
                legendgroup=legendgroup or name,
                meta={"role": role},
            ),
            **where,
        )
    else:  # too many separate patches: one plain cell per masked (or NaN) cell instead of hatching
        for trace in grid_heatmaps(
            grid,
            np.where(cells, 1.0, np.nan).astype(np.float32),
            colorscale=[[0, bg], [1, bg]],
            showscale=False,
            hoverongaps=False,
            hovertemplate=f"{name}<extra></extra>",
            name=name,
            meta={"role": f"{role}_cells"},
        ):
            fig.add_trace(trace, **where)
    key = ("▨ grey hatched: " if role == "mask" else "⊠ cross-hatched: ") + name
    if cell_text is None or max(cells.shape) > MASK_TEXT_MAX:
        return key
    each = cell_text if isinstance(cell_text, np.ndarray) else np.full(cells.shape, cell_text, dtype=object)
    texts = sorted(set(each[cells].tolist()))
    if all(texts) and all(text_fits(x, grid, theme, panel) for x in texts):
        which = np.full(cells.shape, np.nan, dtype=np.float32)  # each cell's text, as its index in texts
        for i, text in enumerate(texts):
            which[cells & (each == text)] = i
        # a see-through heatmap's cell text, not a scatter's: plotly.js writes a scatter's text 0.25 em below its
        # point and a heatmap's 0.35 em below its cell's centre, so a "0" sat ~2 px above its row's "0.37" (paper)
        for trace in grid_heatmaps(
            grid,
            which,
            colorscale=[[0, CLEAR], [1, CLEAR]],
            showscale=False,
            texttemplate="%{text}",
            textfont=dict(color=t[f"{role}_text"]),
            hoverinfo="skip",
            showlegend=False,
            legendgroup=legendgroup or name,
            zorder=1,  # over the hatched patches (plotly.js draws every heatmap under every scatter otherwise)
            meta={"role": f"{role}_text"},
        ):
            trace.text = [["" if np.isnan(i) else texts[int(i)] for i in row] for row in trace["z"]]  # the piece's cells
            fig.add_trace(trace, **where)
    return key


def add_overlays(
    fig: Fig,
    grid: Grid,
    *,
    masked_text: str,
    masked_name: str | None,
    nan_reason: str | None,
    theme: str,
    panel: tuple[float, float] | None,
    row: int | None = None,
    col: int | None = None,
    groups: bool = False,
) -> list[str | None]:
    """The grid's two overlays: masked cells hatched "/" with masked_text (e.g. "−∞"), and cells that
    are NaN or ±inf hatched "x" (only where there are any), each saying what it holds ("NaN", "+∞", "−∞"),
    as the name does. groups: one legend group each ("masked", "nan"), so that the panels of a subplot figure
    share one legend entry. Returns their title notes."""
    notes = [
        add_cell_overlay(fig, grid, grid.masked, name=escape_text(masked_name or f"masked ({masked_text})"),
                         cell_text=escape_text(masked_text), pattern="/", theme=theme, row=row, col=col,
                         legendgroup="masked" if groups else None, panel=panel)
    ]
    if grid.bad.any():
        held = np.full(grid.bad.shape, "NaN", dtype=object)  # a +inf score was written "NaN"
        with np.errstate(invalid="ignore"):
            held[grid.bad & (grid.bad_value > 0)] = "+∞"
            held[grid.bad & (grid.bad_value < 0)] = "−∞"
        kinds = [k for k in ("NaN", "+∞", "−∞") if (held[grid.bad] == k).any()]
        what = " or ".join(NAN_NAME if k == "NaN" else k for k in kinds)
        notes.append(
            add_cell_overlay(fig, grid, grid.bad, name=escape_text(f"{what}: {nan_reason or 'as in the input'}"),
                             cell_text=held, pattern="x", theme=theme, row=row, col=col,
                             legendgroup="nan" if groups else None, panel=panel)
        )
    return notes


def text_fits(text: str, grid: Grid, theme: str, panel: tuple[float, float] | None = None) -> bool:
    """Whether `text` fits inside one cell of `grid` drawn in a panel (w, h px) at the theme's
    size (default: a single plot), in the cell-text font."""
    w, h = panel or panel_px(theme)
    size = cell_type_px(theme)
    R, C = grid.z.shape
    return w / C >= text_width(text, size) + 4 and h / R >= size + 2


NAN_NAME = "NaN (not a number)"
CLEAR = "rgba(0,0,0,0)"  # the colour of a heatmap that only writes text in its cells


def add_heatmap(
    fig: Fig,
    grid: Grid,
    *,
    kind: str,
    value_name: str,
    x_name: str,
    y_name: str,
    show_values: bool,
    value_format: str,
    zmin: float | None = None,
    zmax: float | None = None,
    colorscale=None,
    coloraxis: str | None = None,
    row: int | None = None,
    col: int | None = None,
) -> None:
    """The value heatmap itself (NaN/masked cells left as gaps for the overlays): one trace, or up to
    four pieces where a downsampled axis ends in a smaller block (even_pieces says why); the pieces
    share one colour scale, and only the first draws the colour bar. Its colours: zmin, zmax and
    colorscale, or a layout coloraxis shared with other panels (which holds them)."""
    where = dict(row=row, col=col) if row is not None else {}
    value = escape_text(value_name)
    traces = grid_heatmaps(
        grid,
        grid.z,
        hover=block_hover(y_name, x_name, lambda block: f"{'mean ' if block else ''}{value} %{{z:.6~g}}"),
        hoverongaps=False,
        name=value_name,
        meta={"role": "values", "kind": kind},
    )
    for i, trace in enumerate(traces):
        if coloraxis:
            trace.coloraxis = coloraxis
        else:
            trace.update(zmin=zmin, zmax=zmax, colorscale=colorscale)
            if i == 0:
                trace.colorbar = colorbar_layout(value_name)
            else:
                trace.showscale = False
        if show_values:  # the text itself, not plotly.js's %{z:...}: its d3-format writes a hyphen for minus
            # written by viz.theme.fit_cell_values (apply_theme, which every builder runs last), which may write fewer
            # decimals, or none, where they do not fit the cells as laid out
            trace.texttemplate = "%{text}"
            trace.meta = {**trace.meta, "format": value_format}
        fig.add_trace(trace, **where)


def grid_heatmaps(grid: Grid, z: np.ndarray, hover: Callable[[int, int], str] | None = None,
                  **props) -> list:
    """Heatmap traces of `z` (one value per cell of the grid) with `props` each: one trace, or one per
    evenly spaced piece of the grid (even_pieces says why), which together draw every cell once.
    hover(rows, cols): the hovertemplate of a piece whose cells are blocks of rows x cols positions
    (1 x 1 where nothing is downsampled; every cell of a piece is the same size).

    A piece with hover gets its cells' labels on each axis of one position per cell, in
    meta[HOVER_LABELS] ({"y": [...], "x": [...]}): plotly.js's hover shows %{y} as a tick's text only
    at a tick, so where ticks are thinned (over ~48 tokens a side, fewer in a small panel) it said
    "query 30" for 30:家. The app's chart script (ui/chart.js) puts each cell's labels in customdata
    and the hover shows them: T labels travel, not T² cell texts (~650 KB a heatmap at 256 tokens)."""
    ys, xs = even_pieces(grid.y, grid.y_edges), even_pieces(grid.x, grid.x_edges)

    def template(rows: slice, cols: slice) -> dict:
        if hover is None:
            return {}
        r, c = _block_size(grid.y_edges, rows), _block_size(grid.x_edges, cols)
        if not any(block == 1 and not is_index_axis(text) for block, text in ((r, grid.row_text),
                                                                               (c, grid.col_text))):
            return {"hovertemplate": hover(r, c)}  # positions only, or blocks: plotly.js's own numbers
        labels = {"y": grid.row_text[rows], "x": grid.col_text[cols]}  # both: the script sizes customdata by them
        return {"hovertemplate": hover(r, c), "meta": {**props.get("meta", {}), HOVER_LABELS: labels}}

    if len(ys) == len(xs) == 1:  # most figures: one trace
        return [vf.heatmap(z=z, x=grid.x, y=grid.y, **{**props, **template(slice(None), slice(None))})]
    return [vf.heatmap(z=z[rows, cols], x=x, y=y, **{**props, **template(rows, cols)})
            for rows, y in ys for cols, x in xs]


def _block_size(edges: np.ndarray, cells: slice) -> int:
    """How many positions each cell of a piece covers (its first cell's width)."""
    first = cells.start or 0
    return int(round(edges[first + 1] - edges[first]))


def block_hover(y_name: str, x_name: str, what: Callable[[bool], str]) -> Callable[[int, int], str]:
    """grid_heatmaps' hover for a piece of rows x cols blocks: the cell's place on each axis
    (cell_hover), then what(block), block being True where a cell covers more than one position."""
    return lambda rows, cols: (f"{cell_hover('y', y_name, rows)}<br>{cell_hover('x', x_name, cols)}<br>"
                               f"{what(rows * cols > 1)}<extra></extra>")


def cell_hover(axis: str, name: str, block: int) -> str:
    """A heatmap cell's place in its hover label: the axis's label (the token, where the axis labels
    every cell) for one position; for a block of positions (a downsampled axis) its centre ± half its
    width, "query 2.5 ± 0.5" for queries 2 and 3 (plotly.js's own label is a bare centre, or at a
    tick the tick's text: "query 0" for the block of queries 0 and 1)."""
    if block == 1:
        return f"{escape_text(name)} %{{{axis}}}"
    return f"{escape_text(name)} %{{{axis}:.1~f}} ± {(block - 1) / 2:g}"


def even_pieces(centres: np.ndarray, edges: np.ndarray) -> list[tuple[slice, np.ndarray]]:
    """One axis of a grid cut where its cells stop being evenly spaced: (which cells, the coordinates
    Plotly gets for them) per piece.

    plotly.js paints a heatmap whose cells are evenly spaced on both axes as one pixel per cell, which
    the browser scales up (256 × 256 cells: 25-70 ms in Chromium here); any other heatmap it paints
    with one fillRect per cell at the plot's size (150-210 ms, one long task that blocks the page).
    Cells are evenly spaced except on a downsampled axis whose length is not a multiple of the block
    size (511 tokens in blocks of 2): its last block is smaller. That axis becomes two pieces: the
    whole blocks (their centres) and the last block, given as its two edges (Plotly's bin edges, so
    it is drawn exactly as wide as it is, and hover shows its centre)."""
    n = len(centres)
    # _blocks makes every block `factor` wide but the last; two cells are always evenly spaced
    if n < 3 or edges[n] - edges[n - 1] == edges[1] - edges[0]:
        return [(slice(None), centres)]
    return [(slice(0, n - 1), centres[:-1]), (slice(n - 1, n), edges[-2:])]


def plot_px(
    theme: str,
    *,
    row_text: Sequence[str],
    col_text: Sequence[str],
    right_px: float = 0.0,
    colorbar: bool = True,
    note_lines: int = 0,
) -> tuple[float, float]:
    """Estimated (width, height) px of a single plot at the theme's size, from what surrounds
    it: the y labels and title on the left, the colour bar (and right_px more, e.g. row sums)
    on the right, the title and note lines above, the x labels (turned 90° when they do not
    fit side by side) and title below."""
    t = theme_spec(theme)
    W, H = design_size(theme)
    f = t["font_size"]
    edge = edge_px(f)
    left = widest(row_text, f) + 1.5 * f + 12
    right = right_px + ((t["colorbar_thickness"] + 3.5 * f) if colorbar else 0.0)
    w = W - 2 * edge - left - right
    wide = widest(col_text, f)
    shown = min(len(col_text), tick_budget(max(w, 40.0), f))
    below = 1.3 * f if shown * (wide + 8) <= w else wide + 6
    top = 32 + 1.4 * t["title_size"] + 1.3 * note_size(t) * note_lines
    h = H - top - below - 1.5 * f - edge - 6
    return max(40.0, w), max(40.0, h)


def want_values(
    show_values: bool | None, grid: Grid, theme: str, panel: tuple[float, float] | None = None
) -> bool:
    """Per-cell value text: asked for and small enough, or automatic on paper up to 12 cells
    per side, and (automatic) only where a cell of the panel (w, h px) is wide enough for it."""
    side = max(grid.z.shape)
    if show_values is None:
        t = theme_spec(theme)
        if not (t.get("auto_values", False) and side <= AUTO_VALUES_MAX):
            return False
        return text_fits("−0.00", grid, theme, panel)
    return bool(show_values) and side <= VALUES_MAX


def compose_title(title: str | None, notes: Sequence[str] = ()) -> str:
    """Escaped user title, then each note (ours, not user text) on a line of its own.

    apply_theme keeps the first line as the title and moves the note lines into a "notes"
    annotation under it, wrapping both to the figure's width.
    """
    lines = [escape_text(title) if title else ""]
    lines += [note for note in notes if note]
    return "<br>".join(lines) if len(lines) > 1 else lines[0]


def title_layout(title: str | None, notes: Sequence[str | None] = ()) -> dict:
    """layout.title from compose_title, the notes without repeats or Nones; apply_theme sizes the top margin to
    its lines."""
    return dict(text=compose_title(title, unique_notes(notes)))


def matrix_axes(grid: Grid, *, max_x_ticks: int = MAX_TICKS, max_y_ticks: int = MAX_TICKS) -> tuple[dict, dict]:
    """The x and y axis properties style_matrix_axes gives a panel of `grid`: ticks, range (row 0 on top), no
    gridlines; the same for every panel of the same rows and columns (a grid of heads makes them once).

    An axis labelled by bare positions ("0", "1", ... e.g. dimensions) with more than 10 cells
    gets Plotly's own ticks (0, 20, 40, ...), spaced for whatever width it is drawn at.
    """
    if is_index_axis(grid.col_text) and len(grid.col_text) > 10:
        x_ticks = dict(tickmode="auto", nticks=min(8, max(3, max_x_ticks)))
    else:
        x_ticks = axis_ticks(grid.x, grid.col_text, numbers=grid.downsampled, max_ticks=max_x_ticks)
    if is_index_axis(grid.row_text) and len(grid.row_text) > 10:
        y_ticks = dict(tickmode="auto", nticks=min(10, max(3, max_y_ticks)))
    else:
        y_ticks = axis_ticks(grid.y, grid.row_text, numbers=grid.downsampled, max_ticks=max_y_ticks)
    return (dict(x_ticks, range=[float(grid.x_edges[0]), float(grid.x_edges[-1])], showgrid=False, zeroline=False),
            dict(y_ticks, range=[float(grid.y_edges[-1]), float(grid.y_edges[0])], showgrid=False, zeroline=False))


def style_matrix_axes(
    fig: Fig,
    grid: Grid,
    *,
    x_title: str,
    y_title: str,
    row: int | None = None,
    col: int | None = None,
    show_x_labels: bool = True,
    show_y_labels: bool = True,
    max_x_ticks: int = MAX_TICKS,
    max_y_ticks: int = MAX_TICKS,
    axes: tuple[dict, dict] | None = None,
) -> None:
    """Numeric axes labelled through tickvals/ticktext; row 0 on top; no gridlines (matrix_axes, or `axes`: what
    it gave for a panel of the same rows and columns; each axis gets copies of its lists)."""
    x_props, y_props = axes or matrix_axes(grid, max_x_ticks=max_x_ticks, max_y_ticks=max_y_ticks)
    # Plain property names only (no magic underscores): set directly, as update_xaxes would.
    # crowded x labels turn a full 90°, never plotly.js's first choice of 30°: the margins below the plot and
    # tick_budget are laid out for 90°, and at 30° a label runs under the next panel's (a grid of heads)
    x_props = dict(x_props, showticklabels=show_x_labels, autotickangles=[0, 90])
    y_props = dict(y_props, showticklabels=show_y_labels)
    for letter, props, title in (("x", x_props, x_title), ("y", y_props, y_title)):
        for ax in fig._axes(letter, row, col):
            dict.update(ax, props)
            if axes is not None:  # shared with other panels: lists of its own, as if made for it alone
                dict.update(ax, {key: list(props[key]) for key in ("tickvals", "ticktext", "range") if key in props})
            if title:
                ax.child("title")["text"] = escape_text(title)
            elif isinstance(ax.get("title"), dict):
                ax["title"].pop("text", None)


ROW_SUM_TOLERANCE = 1e-3  # a row of softmax weights in float16 sums to 1 within ~1e-3


def _row_sums_axis(
    fig: Fig, grid: Grid, sums: np.ndarray, max_ticks: int = MAX_TICKS
) -> str | None:
    """Row sums as a right-hand y axis ("Σ = 1.000"), or a note when not every row has room."""
    finite = sums[np.isfinite(sums)]
    if grid.downsampled or len(sums) > min(max_ticks, MAX_TICKS):
        if not finite.size:
            return None
        off = float(np.abs(finite - 1).max())
        if off <= ROW_SUM_TOLERANCE:
            return f"every row sums to 1 (max |Σ − 1| = {num(off, '.1e')})"
        # said only of what holds (a mutation walk: rows of 0.5 were said to sum to 1, max |Σ − 1| = 5.0e−01)
        return f"rows sum to {num(float(finite.min()), '.3g')} … {num(float(finite.max()), '.3g')}, not all to 1"
    fig.add_label_axis(
        "y2", grid.y, [float(v) for v in grid.y],
        [f"Σ = {s:.3f}" if np.isfinite(s) else "Σ = NaN" for s in sums],
        side="right", across=grid.x[0], showline=False, ticks="",
    )
    return None


def heatmap_figure(
    matrix: np.ndarray,
    *,
    row_text: list[str],
    col_text: list[str],
    kind: str,
    title: str | None,
    x_title: str,
    y_title: str,
    value_name: str,
    x_name: str = "key",
    y_name: str = "query",
    mask: np.ndarray | None = None,
    zmin: float | None = None,
    zmax: float | None = None,
    masked_text: str = "−∞",
    masked_name: str | None = None,
    nan_reason: str | None = None,
    show_values: bool | None = None,
    value_format: str = ".2f",
    row_sums: bool = False,
    extra_notes: Sequence[str] = (),
    theme: str = "default",
) -> go.Figure:
    """Internal: one matrix as a heatmap with every rule of this module applied."""
    t = theme_spec(theme)
    grid = prepare_grid(matrix, row_text=row_text, col_text=col_text, mask=mask)
    n_notes = len(grid.notes) + len(extra_notes) + int(grid.masked.any()) + int(grid.bad.any())
    sums_px = text_width("Σ = 1.000", t["font_size"]) + 8 if row_sums else 0.0
    pw, ph = plot_px(
        theme,
        row_text=grid.row_text,
        col_text=grid.col_text,
        right_px=sums_px,
        note_lines=n_notes + int(row_sums and max(grid.z.shape) > MAX_TICKS),
    )
    fig = Fig()
    ph = laid_out = taller_for_rows(fig, theme, len(grid.row_text), ph)
    if kind in ("weights", "scores"):  # query x key: a row or two is not drawn 330 px tall
        ph = shorter_for_rows(fig, theme, len(grid.row_text), len(grid.col_text), pw, ph, y_title)
    # the keys' labels are budgeted as if the row sums took no width: the attention view's five step matrices
    # share the weights' margins (viz.attention.attention_step_figures), so all five label their keys alike
    x_budget, y_budget = tick_budget(pw + sums_px, t["font_size"]), tick_budget(ph, t["font_size"])
    lo, hi, scale = color_range(kind, [grid.z], zmin, zmax)
    add_heatmap(
        fig,
        grid,
        kind=kind,
        zmin=lo,
        zmax=hi,
        colorscale=scale,
        value_name=value_name,
        x_name=x_name,
        y_name=y_name,
        show_values=want_values(show_values, grid, theme, (pw, ph)),
        value_format=value_format,
    )
    notes = list(grid.notes) + list(extra_notes)
    notes += add_overlays(fig, grid, masked_text=masked_text, masked_name=masked_name, nan_reason=nan_reason,
                          theme=theme, panel=(pw, ph))
    style_matrix_axes(fig, grid, x_title=x_title, y_title=y_title, max_x_ticks=x_budget, max_y_ticks=y_budget)
    if row_sums:  # after the main axes: fig.update_yaxes would restyle yaxis2 as well
        sums = np.asarray(matrix, dtype=np.float64).sum(axis=1)  # (R,) NaN where a row is NaN
        note = _row_sums_axis(fig, grid, sums, y_budget)
        if note:
            notes.append(note)
    fig.update_layout(title=title_layout(title, notes), showlegend=False)
    fig = apply_theme(fig, theme)
    return keep_plot_height(fig, ph, theme) if ph < laid_out else fig  # laid out short: that tall


def matrix_heatmap(
    matrix: np.ndarray,
    *,
    row_labels: Sequence[object] | None = None,
    col_labels: Sequence[object] | None = None,
    kind: str = "values",
    title: str | None = None,
    x_title: str = "",
    y_title: str = "",
    value_name: str = "value",
    mask: np.ndarray | None = None,
    zmin: float | None = None,
    zmax: float | None = None,
    masked_text: str = "−∞",
    show_values: bool | None = None,
    theme: str = "default",
) -> go.Figure:
    """Any matrix as a heatmap; labels are token pieces (made "i:piece") or None (indices).

    kind: "weights" (fixed [0, 1], sequential), "scores"/"values" (diverging, symmetric about 0;
    zmax sets the range), "magnitude" (sequential from 0).
    """
    m = np.asarray(matrix)
    if m.ndim != 2:
        raise ValueError(f"expected a 2-D matrix, got shape {m.shape}")
    return heatmap_figure(
        m,
        row_text=display_labels(row_labels, m.shape[0]),
        col_text=display_labels(col_labels, m.shape[1]),
        kind=kind,
        title=title,
        x_title=x_title,
        y_title=y_title,
        value_name=value_name,
        x_name=x_title or "column",
        y_name=y_title or "row",
        mask=mask,
        zmin=zmin,
        zmax=zmax,
        masked_text=masked_text,
        show_values=show_values,
        theme=theme,
    )


def add_panel(
    fig: Fig,
    grid: Grid,
    *,
    row: int,
    col: int,
    kind: str,
    coloraxis: str,
    value_name: str,
    x_name: str,
    y_name: str,
    x_title: str = "",
    y_title: str = "",
    show_values: bool = False,
    value_format: str = ".2f",
    masked_text: str = "−∞",
    masked_name: str | None = None,
    nan_reason: str | None = None,
    theme: str = "default",
    show_x_labels: bool = True,
    show_y_labels: bool = True,
    max_x_ticks: int = MAX_TICKS,
    max_y_ticks: int = MAX_TICKS,
    panel: tuple[float, float] | None = None,
    axes: tuple[dict, dict] | None = None,
) -> list[str]:
    """One heatmap panel of a make_subplots figure (colours from a shared coloraxis).

    panel: its estimated (width, height) px (panel_px), to write text in cells only if it fits.
    axes: matrix_axes of a panel of the same rows and columns, made once for all of them (else made here).
    Returns the notes the panel needs in the figure title (keys to the overlays).
    """
    add_heatmap(
        fig,
        grid,
        kind=kind,
        value_name=value_name,
        x_name=x_name,
        y_name=y_name,
        show_values=show_values,
        value_format=value_format,
        coloraxis=coloraxis,
        row=row,
        col=col,
    )
    notes = add_overlays(fig, grid, masked_text=masked_text, masked_name=masked_name, nan_reason=nan_reason,
                         theme=theme, panel=panel, row=row, col=col, groups=True)
    style_matrix_axes(
        fig,
        grid,
        x_title=x_title,
        y_title=y_title,
        row=row,
        col=col,
        show_x_labels=show_x_labels,
        show_y_labels=show_y_labels,
        max_x_ticks=max_x_ticks,
        max_y_ticks=max_y_ticks,
        axes=axes,
    )
    return [n for n in notes if n]


def label_gap(labels: Sequence[str], theme: str, *, cols: int) -> float:
    """make_subplots horizontal_spacing that leaves room for `labels` as y tick labels of a
    panel that is not the first (a fraction of the plot width, at the theme's size)."""
    f = theme_spec(theme)["font_size"]
    longest = widest(labels, f)
    return min(0.6 / max(cols - 1, 1), max(0.04, (longest + 0.5 * f + 16) / _gap_plot_px(longest, theme)))


def _gap_plot_px(longest: float, theme: str) -> float:
    """The plot's width in px that label_gap and value_gap take their fractions of, as plot_px estimates it: the
    theme's figure less its edges, y labels `longest` px wide left of it and a colour bar (not a fixed fraction of the
    figure: that was 0.75 of it, where paper's 600 px leave 0.64, a 15% smaller gap, and B's labels touched A's
    heatmap); at least 40."""
    t = theme_spec(theme)
    f = t["font_size"]
    plot_w = design_size(theme)[0] - 2 * edge_px(f) - (longest + 1.5 * f + 12) - (t["colorbar_thickness"] + 3.5 * f)
    return max(plot_w, 40.0)


def value_gap(dims: int, theme: str, *, cols: int, labels: Sequence[str] = ()) -> float:
    """make_subplots horizontal_spacing between two panels of values (tokens × dims) whose x axes are both labelled
    (plotly.js's few ticks: "0 20 40 60"): room for the one's last tick label and the next one's "0", which stand at
    or near the panels' ends, an em apart (0.04 of the plot left "15 0" and "60 0" ~8 px apart in the paper theme's
    QKV, token outputs and embedding + PE figures, read as "150" and "600"), and for `labels` as y tick labels of the
    second panel where it has any (label_gap). A fraction of the plot's width, at least label_gap's."""
    f = theme_spec(theme)["font_size"]
    longest = widest(labels, f) if labels else 0.0
    ticks = (text_width(str(max(dims - 1, 0)), f) + text_width("0", f)) / 2 + f  # half of each, an em between
    floor = label_gap(labels, theme, cols=cols) if labels else 0.04
    return min(0.6 / max(cols - 1, 1), max(floor, ticks / _gap_plot_px(longest, theme)))


def set_column_gaps(fig: Fig, gaps: Sequence[float]) -> None:
    """Re-space a one-row make_subplots figure: gaps[i] (a fraction of the plot width) between
    columns i and i + 1, panels equally wide; subplot titles move with their panels."""
    n = len(gaps) + 1
    width = (1.0 - sum(gaps)) / n
    moved = {}
    x0 = 0.0
    for i in range(n):
        axis = fig.layout["xaxis" if i == 0 else f"xaxis{i + 1}"]
        d0, d1 = axis["domain"]
        moved[round((d0 + d1) / 2, 6)] = x0 + width / 2
        axis["domain"] = [x0, min(1.0, x0 + width)]
        x0 += width + (gaps[i] if i < len(gaps) else 0.0)
    for ann in fig.layout["annotations"]:
        x = ann.get("x")
        if ann.get("xref") == "paper" and x is not None and round(x, 6) in moved:
            ann["x"] = moved[round(x, 6)]


def colorbar_layout(title: str) -> dict:
    """A colour bar labelled `title` (escaped) along its right side, at the figure's right edge."""
    return dict(title=dict(text=escape_text(title), side="right"), xref="container", x=1.0, xanchor="right")


def coloraxis_layout(lo: float, hi: float, scale, title: str) -> dict:
    """A shared layout.coloraxis with a labelled colour bar."""
    return dict(colorscale=scale, cmin=lo, cmax=hi, colorbar=colorbar_layout(title))


def unique_notes(notes: Sequence[str | None]) -> list[str]:
    """Notes in first-seen order without repeats or Nones."""
    return list(dict.fromkeys(n for n in notes if n))


@dataclass
class ValuePanel:
    """One (tokens × dimensions) matrix of a row of panels sharing one colour axis (or its own: coloraxis, kind)."""

    matrix: np.ndarray
    rows: list[str]  # display labels of the matrix rows
    y_title: str = ""
    show_y_labels: bool = True
    value_name: str = "value"
    coloraxis: str = "coloraxis"
    kind: str = "values"  # color_range's kind of the matrix: "magnitude" for a |difference|


def add_value_panels(fig: Fig, panels: Sequence[ValuePanel], *, theme: str, cell_values: bool = True,
                     tall: bool = False) -> list[str]:
    """Draw panels side by side in row 1 (tokens × dimension, one "coloraxis"); returns their notes.

    The cell budget is shared by all panels (prepare_grid(panels=...)), so the figure as a whole
    stays within one heatmap's payload. tall=True: the figure grows so that every row is labelled
    (taller_for_rows), as the score matrices of the same tokens do.
    """
    t = theme_spec(theme)
    pw, ph = panel_px(theme, cols=len(panels))
    if tall:
        ph = taller_for_rows(fig, theme, max(len(p.rows) for p in panels), ph)
    notes: list[str] = []
    for c, p in enumerate(panels):
        dims = [str(j) for j in range(p.matrix.shape[1])]
        grid = prepare_grid(p.matrix, row_text=p.rows, col_text=dims, panels=len(panels))
        notes += grid.notes
        notes += add_panel(
            fig,
            grid,
            row=1,
            col=c + 1,
            kind=p.kind,
            coloraxis=p.coloraxis,
            value_name=p.value_name,
            x_name="dim",
            y_name="token",
            x_title="dimension",
            y_title=p.y_title,
            max_x_ticks=tick_budget(pw, t["font_size"]),
            max_y_ticks=tick_budget(ph, t["font_size"]),
            panel=(pw, ph),
            show_values=cell_values and want_values(None, grid, theme, (pw, ph)),
            value_format=".2f",
            theme=theme,
            show_y_labels=p.show_y_labels,
        )
    return notes
