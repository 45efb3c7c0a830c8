"""Block means of large matrices (viz.heatmap.prepare_grid) against a plain per-block loop.

Above MAX_CELLS cells per side a heatmap shows fr x fc block means: the mean of the block's cells
that hold a value (masked, NaN and inf cells left out), NaN for a block without any, and a block is
masked only when every one of its cells is. Edge blocks are partial. The fast path (whole rows
added, then strided columns) must give exactly what the definition gives.

A grid whose last block is partial is drawn as up to four heatmap pieces, each evenly spaced (what
plotly.js needs to paint it fast): together they must draw every block, exactly where it lies, each
piece's hover label naming its blocks' positions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from viz.fig import Fig
from viz.heatmap import MAX_CELLS, add_heatmap, prepare_grid, prepare_grids

RNG = np.random.default_rng(7)


def reference(z: np.ndarray, allowed: np.ndarray | None, panels: int = 1):
    """(means, masked, bad) by the definition, one block at a time."""
    R, C = z.shape
    masked = np.isneginf(z) if allowed is None else ~allowed
    side = max(16, int(MAX_CELLS / math.sqrt(panels)))
    fr, fc = max(1, math.ceil(R / side)), max(1, math.ceil(C / side))
    if R * C <= side * side and max(R, C) <= 4 * MAX_CELLS:  # a thin matrix within a square's cells: whole
        fr = fc = 1
    Rb, Cb = -(-R // fr), -(-C // fc)
    means = np.full((Rb, Cb), np.nan)
    blk_masked = np.zeros((Rb, Cb), dtype=bool)
    for i in range(Rb):
        for j in range(Cb):
            cells = z[i * fr:(i + 1) * fr, j * fc:(j + 1) * fc]
            m = masked[i * fr:(i + 1) * fr, j * fc:(j + 1) * fc]
            ok = np.isfinite(cells) & ~m
            if ok.any():
                means[i, j] = cells[ok].astype(np.float64).mean()
            blk_masked[i, j] = m.all()
    return means, blk_masked, np.isnan(means) & ~blk_masked


def labels(n: int) -> list[str]:
    return [str(i) for i in range(n)]


@pytest.mark.parametrize(
    ("shape", "panels"),
    [((300, 300), 1), ((511, 512), 1), ((257, 300), 1), ((512, 130), 4), ((400, 400), 8)],
)
@pytest.mark.parametrize("holes", ["none", "causal", "causal+nan+inf", "neginf"])
def test_block_means_match_the_definition(shape, panels, holes):
    R, C = shape
    z = RNG.normal(size=shape).astype(np.float32)
    allowed = None
    if holes.startswith("causal"):
        allowed = np.tril(np.ones(shape, dtype=bool))
        allowed[:, C // 2:C // 2 + 7] = False  # a band of whole masked blocks
    if holes.endswith("nan+inf"):
        z[RNG.random(shape) < 0.05] = np.nan
        z[5, 0:40] = np.inf  # a row of bad cells across several blocks
        z[-8:, :8] = np.nan  # a corner of blocks (allowed by the mask) without any value
    if holes == "neginf":  # no mask given: -inf cells count as masked
        z[:, :12] = -np.inf  # whole blocks at every factor used here (<= 6)
        z[:, 12] = -np.inf  # and a partly masked column of blocks
    grid = prepare_grid(z, row_text=labels(R), col_text=labels(C), mask=allowed, panels=panels)
    means, masked, bad = reference(z, allowed, panels)
    assert grid.z.dtype == np.float32
    assert grid.z.shape == means.shape and grid.downsampled
    np.testing.assert_allclose(grid.z, means, rtol=2e-5, atol=2e-6, equal_nan=True)
    np.testing.assert_array_equal(grid.masked, masked)
    np.testing.assert_array_equal(grid.bad, bad)
    if holes != "none":
        assert masked.any()  # the case really has masked blocks
    if holes == "causal+nan+inf":
        assert bad.any()  # a block of nothing but inf/NaN cells: bad, not masked


@pytest.mark.parametrize(("shape", "panels", "whole"), [((5, 256), 3, True), ((511, 16), 3, True), ((64, 1024), 1, True),
                                                     ((5, 1100), 1, False), ((300, 300), 1, False)])
def test_a_thin_matrix_within_a_squares_cells_is_drawn_whole(shape, panels, whole):
    """A researcher's walk: at d_model 256 the embedding + PE figure showed 5×128 block means, each the mean of a
    dimension's sin and its cos, a flat wash. Tokens × d_model matrices within MAX_CELLS² cells are drawn whole."""
    z = RNG.normal(size=shape).astype(np.float32)
    grid = prepare_grid(z, row_text=labels(shape[0]), col_text=labels(shape[1]), panels=panels)
    if whole:
        np.testing.assert_array_equal(grid.z, z)
        assert not [n for n in grid.notes if "mean of" in n]
    else:
        assert grid.z.shape != z.shape and any("mean of" in n for n in grid.notes)


def test_small_matrix_keeps_every_cell_and_its_holes():
    z = RNG.normal(size=(6, 5))
    z[1, 2] = np.nan
    z[2, 2] = np.inf
    allowed = np.ones((6, 5), dtype=bool)
    allowed[0, 4] = False
    grid = prepare_grid(z, row_text=labels(6), col_text=labels(5), mask=allowed)
    assert not grid.downsampled
    assert grid.masked[0, 4] and grid.masked.sum() == 1
    assert grid.bad[1, 2] and grid.bad[2, 2] and grid.bad.sum() == 2
    expect = z.astype(np.float32).copy()
    expect[[0, 1, 2], [4, 2, 2]] = np.nan
    np.testing.assert_array_equal(grid.z, expect)


@pytest.mark.parametrize("shape", [(300, 300), (511, 511), (257, 513), (400, 130)])
def test_block_labels_centres_and_edges_name_the_positions_each_block_holds(shape):
    """Each block is labelled "a–b" by the first and last positions it holds, a last block of one
    position by that position's token; its centre is their midpoint and its edges half a cell outside.
    Asked twice (the block arithmetic is kept per size), a grid still names the tokens it was given."""
    R, C = shape
    rows, cols = [f"r{i}" for i in range(R)], [f"c{j}" for j in range(C)]
    z = RNG.normal(size=shape).astype(np.float32)
    for _ in range(2):
        grid = prepare_grid(z, row_text=rows, col_text=cols)
        for n, text, centres, edges, shown, blocks in (
            (R, rows, grid.y, grid.y_edges, grid.row_text, grid.z.shape[0]),
            (C, cols, grid.x, grid.x_edges, grid.col_text, grid.z.shape[1]),
        ):
            factor = -(-n // blocks)
            spans = [(a, min(a + factor, n) - 1) for a in range(0, n, factor)]
            assert shown == [text[a] if a == b else f"{a}–{b}" for a, b in spans]
            np.testing.assert_array_equal(centres, [(a + b) / 2 for a, b in spans])
            np.testing.assert_array_equal(edges, [a - 0.5 for a, _ in spans] + [n - 0.5])
        rows, cols = [f"s{i}" for i in range(R)], [f"d{j}" for j in range(C)]
    if R == 511:  # in blocks of 2, the last holds one position: named by the second call's token
        assert grid.row_text[-1] == "s510"


def test_grid_does_not_share_memory_with_the_input():
    z = RNG.normal(size=(8, 8)).astype(np.float32)
    grid = prepare_grid(z, row_text=labels(8), col_text=labels(8))
    z[0, 0] = 99.0
    assert grid.z[0, 0] != 99.0


@pytest.mark.parametrize("shape, masks, boolean", [
    ((4, 6, 7), "none", False),  # small: every cell, -inf cells masked
    ((3, 6, 7), "per matrix", False),
    ((2, 300, 200), "shared", False),  # large: block means, a note each
    ((2, 300, 200), "none", False),
    ((3, 150, 40), "shared", True),
])
def test_a_stack_is_prepared_as_each_of_its_matrices_alone(shape, masks, boolean):
    """prepare_grids (a grid of heads: one figure's panels of the same tokens) makes the labels and cell edges once
    and checks the mask and the NaN cells over the whole stack at once: each grid is prepare_grid's of its matrix
    with the figure's cell budget, holes, notes and all."""
    n, R, C = shape
    stack = RNG.normal(size=shape)
    stack[0, 1, 2], stack[-1, 0, 0], stack[-1, 2, 3], stack[0, 3, 1] = np.nan, np.inf, -np.inf, -np.inf
    allowed = {"none": None, "shared": RNG.random((R, C)) > 0.3, "per matrix": RNG.random(shape) > 0.3}[masks]
    if boolean:
        stack = (RNG.random(shape) > 0.5).astype(float)
    grids = prepare_grids(stack, row_text=labels(R), col_text=labels(C), mask=allowed, boolean=boolean)
    assert len(grids) == n
    for i, got in enumerate(grids):
        mask = None if allowed is None else allowed if allowed.ndim == 2 else allowed[i]
        want = prepare_grid(stack[i], row_text=labels(R), col_text=labels(C), mask=mask, panels=n, boolean=boolean)
        for name in ("z", "masked", "bad", "y", "x", "y_edges", "x_edges"):
            a, b = getattr(got, name), getattr(want, name)
            assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True), (i, name)
        assert (got.row_text, got.col_text, got.shape, got.notes) == (want.row_text, want.col_text, want.shape,
                                                                      want.notes), i
        assert (got.bad_value is None) == (want.bad_value is None), i
        if want.bad_value is not None:
            assert np.array_equal(got.bad_value, want.bad_value, equal_nan=True), i
    if not boolean and R < 100:  # every cell drawn: the NaN and ±inf cells above are there to see
        assert any(g.bad.any() for g in grids) and any(g.masked.any() for g in grids)


def plotly_edges(coords: np.ndarray, cells: int) -> np.ndarray:
    """The brick edges plotly.js draws for one axis of a heatmap trace (heatmap/make_bound_array):
    `cells` + 1 coordinates are the edges themselves; one per cell are centres, the edges halfway
    between them and half a step beyond the first and the last."""
    coords = np.asarray(coords, dtype=np.float64)
    if len(coords) == cells + 1:
        return coords
    assert len(coords) == cells >= 2, (len(coords), cells)
    mid = (coords[:-1] + coords[1:]) / 2
    return np.concatenate([[coords[0] - (mid[0] - coords[0])], mid, [coords[-1] + (coords[-1] - mid[-1])]])


def evenly_spaced(coords: np.ndarray) -> bool:
    """plotly.js's own test before it paints a heatmap one pixel per cell (heatmap/calc.js): every
    step within 1% of the mean step."""
    steps = np.diff(np.asarray(coords, dtype=np.float64))
    return len(steps) < 1 or bool(np.all(np.abs(steps - steps.mean()) <= abs(steps.mean()) / 100))


def hover_of(y_edges: np.ndarray, x_edges: np.ndarray) -> str:
    """The hover label a piece must have: a one-position axis shows its label (%{y}); a block axis
    shows centre ± half its width, which must name exactly the block's first and last position."""
    parts, block = [], False
    for name, axis, edges in (("query", "y", y_edges), ("key", "x", x_edges)):
        width = int(round(edges[1] - edges[0]))
        assert np.allclose(np.diff(edges), width)  # one width per piece
        if width == 1:
            parts.append(f"{name} %{{{axis}}}")
            continue
        block = True
        half = (width - 1) / 2
        centres = (edges[:-1] + edges[1:]) / 2
        np.testing.assert_array_equal(centres - half, edges[:-1] + 0.5)  # the first position of each block
        np.testing.assert_array_equal(centres + half, edges[1:] - 0.5)  # and the last
        parts.append(f"{name} %{{{axis}:.1~f}} ± {half:g}")
    return "<br>".join(parts) + f"<br>{'mean ' if block else ''}score %{{z:.6~g}}<extra></extra>"


@pytest.mark.parametrize(("shape", "panels", "pieces"), [
    ((511, 511), 1, 4),  # blocks of 2, the last of 1 position, on both axes
    ((512, 511), 1, 2),  # rows even, columns not (cross-attention: [BOS] + 511 against 511)
    ((701, 300), 1, 2),  # rows: blocks of 3, the last of 2 positions
    ((511, 300), 4, 2),  # a 4-panel figure: blocks of 4 rows, the last of 3
    ((510, 510), 1, 1),  # whole blocks: one trace
    ((40, 33), 1, 1),  # one cell per position: one trace
])
def test_the_heatmap_pieces_are_evenly_spaced_and_draw_every_block_where_it_lies(shape, panels, pieces):
    R, C = shape
    z = RNG.normal(size=shape).astype(np.float32)
    z[: R // 3, : C // 5] = np.nan  # holes stay holes in whichever piece they fall
    grid = prepare_grid(z, row_text=[f"{i}:字" for i in range(R)], col_text=[f"{j}:词" for j in range(C)],
                        panels=panels)
    fig = Fig()
    add_heatmap(fig, grid, kind="scores", zmin=-3.0, zmax=3.0, colorscale="RdBu", value_name="score",
                x_name="key", y_name="query", show_values=False, value_format=".2f")
    traces = fig.to_dict()["data"]
    assert len(traces) == pieces
    scale = traces[0]["colorscale"]
    drawn = np.full(grid.z.shape, np.inf, dtype=np.float32)  # inf: no piece drew this block
    for t in traces:
        piece = np.asarray(t["z"], dtype=np.float32)
        assert evenly_spaced(t["x"]) and evenly_spaced(t["y"]), (t["x"], t["y"])
        x_edges, y_edges = plotly_edges(t["x"], piece.shape[1]), plotly_edges(t["y"], piece.shape[0])
        cols = np.searchsorted(grid.x_edges, x_edges[:-1])  # the blocks this piece draws
        rows = np.searchsorted(grid.y_edges, y_edges[:-1])
        np.testing.assert_array_equal(x_edges, grid.x_edges[cols[0]:cols[-1] + 2])  # exactly their extent
        np.testing.assert_array_equal(y_edges, grid.y_edges[rows[0]:rows[-1] + 2])
        assert np.all(np.isinf(drawn[np.ix_(rows, cols)]))  # no block drawn twice
        drawn[np.ix_(rows, cols)] = piece
        assert t["hovertemplate"] == hover_of(y_edges, x_edges)
        # a one-position axis: the hover names each cell's token through the chart script (ui/chart.js),
        # which pairs these labels cell by cell; blocks keep plotly.js's numbers and carry none
        one = [np.allclose(np.diff(e), 1) for e in (y_edges, x_edges)]
        if any(one):
            assert t["meta"]["hover_labels"] == {"y": [grid.row_text[i] for i in rows],
                                                 "x": [grid.col_text[j] for j in cols]}
        else:
            assert "hover_labels" not in t["meta"]
        assert t["meta"]["role"] == "values"
        assert (t["zmin"], t["zmax"], t["colorscale"]) == (-3.0, 3.0, scale)  # one colour scale
    np.testing.assert_array_equal(drawn, grid.z)  # every block, its own value (NaN where a hole)
    assert sum("colorbar" in t for t in traces) == 1 and all(t.get("showscale") is False for t in traces[1:])


@pytest.mark.parametrize("piece", ["x", "–"])  # a token may hold the dash of a block's label "0–2"
@pytest.mark.parametrize("n", [301, 511, 260])
def test_a_block_axis_tick_sits_at_the_position_it_names(n, piece):
    """Thinned block ticks name the block's first position: the tick stands on that position, inside its
    block's cell, not half a block further at the block's centre."""
    from viz.heatmap import axis_ticks

    grid = prepare_grid(RNG.normal(size=(n, n)), row_text=[f"{i}:{piece}" for i in range(n)],
                        col_text=[f"{i}:{piece}" for i in range(n)])
    assert grid.downsampled
    ticks = axis_ticks(grid.y, grid.row_text, numbers=True)
    assert ticks["tickvals"] == [float(t.split(":")[0]) for t in ticks["ticktext"]]
    for value in ticks["tickvals"]:  # each inside a block's cell
        cell = np.searchsorted(grid.y_edges, value) - 1
        assert grid.y_edges[cell] < value < grid.y_edges[cell + 1]


@pytest.mark.parametrize(("n", "budget"), [(35, 30), (49, 48), (100, 40), (17, 12)])
def test_a_thinned_axis_labels_as_many_cells_as_its_budget_allows(n, budget):
    """A thinned axis is labelled at the smallest nice step (1, 2, 5, 10, ...) that fits the labels in the
    budget (tick_budget: what fits along the axis), not at a fixed cap of 16 labels whatever the room."""
    from viz.heatmap import _nice_step, axis_ticks

    text = [f"t{i}" for i in range(n)]
    ticks = axis_ticks(np.arange(n, dtype=float), text, max_ticks=budget)
    shown = len(ticks["ticktext"])
    assert shown <= budget
    step = int(ticks["tickvals"][1] - ticks["tickvals"][0])
    assert ticks["ticktext"] == text[::step]
    finer = [s for s in (1, 2, 5, 10, 20) if s < step]
    assert finer and _nice_step(n / budget) == step  # the next finer nice step would overflow the budget:
    assert len(text[:: finer[-1]]) > budget


def test_axes_of_bare_positions_carry_no_hover_labels():
    """Where both axes are just positions, plotly.js's own %{y} is the label: nothing extra travels."""
    grid = prepare_grid(RNG.normal(size=(60, 60)), row_text=labels(60), col_text=labels(60))
    fig = Fig()
    add_heatmap(fig, grid, kind="scores", zmin=-3.0, zmax=3.0, colorscale="RdBu", value_name="score",
                x_name="key", y_name="query", show_values=False, value_format=".2f")
    (trace,) = fig.to_dict()["data"]
    assert trace["meta"] == {"role": "values", "kind": "scores"} and "%{y}" in trace["hovertemplate"]
