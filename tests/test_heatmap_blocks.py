"""Block means of large matrices (viz.heatmap.prepare_grid) against a plain per-block loop.

Above MAX_CELLS cells per side a heatmap shows fr x fc block means: the mean of the block's cells
that hold a value (masked, NaN and inf cells left out), NaN for a block without any, and a block is
masked only when every one of its cells is. Edge blocks are partial. The fast path (whole rows
added, then strided columns) must give exactly what the definition gives.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from viz.heatmap import MAX_CELLS, prepare_grid

RNG = np.random.default_rng(7)


def reference(z: np.ndarray, allowed: np.ndarray | None, panels: int = 1):
    """(means, masked, bad) by the definition, one block at a time."""
    R, C = z.shape
    masked = np.isneginf(z) if allowed is None else ~allowed
    side = max(16, int(MAX_CELLS / math.sqrt(panels)))
    fr, fc = max(1, math.ceil(R / side)), max(1, math.ceil(C / side))
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


def test_grid_does_not_share_memory_with_the_input():
    z = RNG.normal(size=(8, 8)).astype(np.float32)
    grid = prepare_grid(z, row_text=labels(8), col_text=labels(8))
    z[0, 0] = 99.0
    assert grid.z[0, 0] != 99.0
