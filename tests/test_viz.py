"""viz/: figure contents, not pictures. Each test names the rule it holds the figures to."""

from __future__ import annotations

import io
import itertools
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import plotly.colors
import plotly.graph_objects as go
import pytest

import viz
import viz.theme
from viz.export import find_browser
from viz.labels import cell_texts
from viz.theme import cell_text

I_LIKE_HER = list("I like her")  # repeated "I"/" "/"e": Plotly would merge repeated categories
XSS = "<img src=x onerror=alert(1)>"
RNG = np.random.default_rng(0)


# ---------------------------------------------------------------- helpers


def softmax_rows(scores: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    s = np.where(mask, scores, -np.inf) if mask is not None else scores
    with np.errstate(invalid="ignore"):
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


def causal(n: int) -> np.ndarray:
    return np.tril(np.ones((n, n), dtype=bool))


def header(fig: go.Figure) -> str:
    """Title plus the notes annotation under it, as one line each (soft line breaks undone)."""
    notes = [a.text for a in fig.layout.annotations if a.name == "notes"]
    return viz.theme.unwrap("<br>".join([fig.layout.title.text or "", *notes]))


def values_traces(fig: go.Figure) -> list:
    return [t for t in fig.data if isinstance(t.meta, dict) and t.meta.get("role") == "values"]


def role_traces(fig: go.Figure, role: str) -> list:
    return [t for t in fig.data if isinstance(t.meta, dict) and t.meta.get("role") == role]


def rectangles(trace) -> list[tuple[float, float, float, float]]:
    """(x0, x1, y0, y1) of each NaN-separated closed polygon of a fill='toself' trace."""
    xs, ys = np.asarray(trace.x, float), np.asarray(trace.y, float)
    out, start = [], 0
    for i in range(len(xs) + 1):
        if i == len(xs) or np.isnan(xs[i]):
            if i > start:
                px, py = xs[start:i], ys[start:i]
                out.append((px.min(), px.max(), py.min(), py.max()))
            start = i + 1
    return out


def covered(rects, x: float, y: float) -> bool:
    return any(x0 < x < x1 and y0 < y < y1 for x0, x1, y0, y1 in rects)


def all_strings(obj):
    """Every string anywhere in a figure's JSON-able dict."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from all_strings(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from all_strings(v)
    elif isinstance(obj, np.ndarray) and obj.dtype.kind in "OUS":
        for v in obj.ravel():
            yield from all_strings(v)


def scale_colors(scale) -> list[str]:
    return (
        [c for _, c in plotly.colors.get_colorscale(scale)]
        if isinstance(scale, str)
        else [c for _, c in scale]
    )


# ---------------------------------------------------------------- labels


def test_unique_labels_keep_every_repeated_piece_apart():
    labels = viz.unique_labels(I_LIKE_HER)
    assert labels[:3] == ["0:I", "1: ", "2:l"]
    assert len(set(labels)) == len(I_LIKE_HER) == 10


def test_heatmap_over_repeated_characters_keeps_every_row_and_column():
    n = len(I_LIKE_HER)
    w = softmax_rows(RNG.normal(size=(n, n)))
    fig = viz.weights_heatmap(w, row_labels=I_LIKE_HER)
    heat = values_traces(fig)[0]
    assert np.asarray(heat.z).shape == (n, n)
    # Numeric coordinates: Plotly cannot merge categories it never sees.
    assert np.issubdtype(np.asarray(heat.y).dtype, np.number) and len(set(heat.y)) == n
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        assert len(axis.ticktext) == n and len(set(axis.ticktext)) == n
        assert list(axis.tickvals) == list(range(n))
    assert fig.layout.yaxis.ticktext[1] == "1:␣"  # the space is visible, not blank


def test_labels_length_must_match_matrix():
    with pytest.raises(ValueError):
        viz.weights_heatmap(np.eye(3), row_labels=["a", "b"])


# ---------------------------------------------------------------- colour rules


def test_weights_use_fixed_unit_range_and_colour_blind_safe_sequential_scale():
    w = np.full((3, 3), 0.1)  # max 0.1: an auto range would stretch 0.1 to the top colour
    heat = values_traces(viz.weights_heatmap(w, row_labels=list("abc"), row_sums=False))[0]
    assert (heat.zmin, heat.zmax) == (0.0, 1.0)
    assert scale_colors(heat.colorscale) == scale_colors("Viridis")


def test_scores_use_diverging_scale_centred_at_zero():
    s = np.array([[3.0, -1.0], [0.5, 2.0]])
    heat = values_traces(viz.scores_heatmap(s, row_labels=["a", "b"]))[0]
    assert heat.zmin == -heat.zmax == -3.0  # symmetric about 0 from max |score|
    colors = scale_colors(heat.colorscale)
    assert colors == scale_colors("RdBu_r")
    assert colors[0] != colors[-1]


def test_colour_bars_are_labelled():
    heat = values_traces(viz.scores_heatmap(np.eye(2), row_labels=["a", "b"]))[0]
    assert heat.colorbar.title.text == "score"
    grid = viz.heads_grid(np.full((2, 2, 2), 0.5), row_labels=["a", "b"])
    assert grid.layout.coloraxis.colorbar.title.text == "weight"


def test_step_figures_share_one_score_range():
    n, d_k = 4, 8
    q, k, v = RNG.normal(size=(3, n, d_k))
    scores = q @ k.T
    scaled = scores / math.sqrt(d_k)
    mask = causal(n)
    figs = viz.attention_step_figures(
        q=q,
        k=k,
        v=v,
        scores=scores,
        scaled_scores=scaled,
        weights=softmax_rows(scaled, mask),
        mask=mask,
        row_labels=list("你喜欢她"),
    )
    assert set(figs) == {"qkv", "scores", "scaled", "mask", "masked", "weights"}
    ranges = [values_traces(figs[key])[0].zmax for key in ("scores", "scaled", "masked")]
    assert ranges == [pytest.approx(np.abs(scores).max())] * 3
    assert values_traces(figs["weights"])[0].zmax == 1.0
    # read one under another, the five matrices' columns line up: one left and one right margin for all
    # (the mask has no colour bar, the weights have their row sums beside it)
    margins = {key: (figs[key].layout.margin.l, figs[key].layout.margin.r) for key in figs if key != "qkv"}
    assert len(set(margins.values())) == 1, margins
    alone = viz.scores_heatmap(scores, row_labels=list("你喜欢她"))
    assert margins["scores"][1] > alone.layout.margin.r  # room kept for the weights' row sums


# ---------------------------------------------------------------- masking and NaN


def test_masked_cells_are_hatched_grey_patches_with_minus_infinity():
    n = 5
    mask = causal(n)
    s = RNG.normal(size=(n, n))
    fig = viz.scores_heatmap(np.where(mask, s, -np.inf), row_labels=list("abcde"), mask=mask)
    z = np.asarray(values_traces(fig)[0].z)
    assert np.isnan(z[~mask]).all() and np.isfinite(z[mask]).all()
    (overlay,) = role_traces(fig, "mask")
    assert overlay.fill == "toself" and overlay.fillpattern.shape == "/"  # pattern, not colour only
    rects = rectangles(overlay)
    for i in range(n):
        for j in range(n):
            assert covered(rects, j, i) == (not mask[i, j])
    (text,) = role_traces(fig, "mask_text")
    assert np.array_equal(np.array(text.text), np.where(mask, "", "−∞"))  # in each masked cell, and only there
    assert "masked (−∞)" in header(fig)


def test_minus_inf_counts_as_masked_even_without_mask():
    s = np.array([[1.0, -np.inf], [0.5, 2.0]])
    fig = viz.scores_heatmap(s, row_labels=["a", "b"])
    rects = rectangles(role_traces(fig, "mask")[0])
    assert covered(rects, 1, 0) and not covered(rects, 0, 0)


def test_large_negative_masking_can_say_so():
    s = np.array([[1.0, -1e9], [0.5, 2.0]])
    mask = np.array([[True, False], [True, True]])
    fig = viz.scores_heatmap(s, row_labels=["a", "b"], mask=mask, masked_text="−1e9")
    assert values_traces(fig)[0].zmax == 2.0  # -1e9 does not swamp the colour range
    assert np.array_equal(np.array(role_traces(fig, "mask_text")[0].text), np.where(mask, "", "−1e9"))


def test_fully_masked_row_shows_nan_with_its_reason():
    n = 4
    mask = causal(n)
    mask[0] = False  # query 0 may attend to nothing: softmax of all -inf is 0/0
    w = softmax_rows(RNG.normal(size=(n, n)), mask)
    assert np.isnan(w[0]).all()
    fig = viz.weights_heatmap(w, row_labels=list("abcd"), mask=mask)
    (nan_overlay,) = role_traces(fig, "nan")
    rects = rectangles(nan_overlay)
    assert all(covered(rects, j, 0) for j in range(n))
    assert "0/0" in nan_overlay.name and "NaN" in header(fig)
    assert fig.layout.yaxis2.ticktext[0] == "Σ = NaN"


def test_a_nan_weight_beside_finite_ones_is_not_said_to_be_a_fully_masked_row():
    """A bad-input walk (viz draws a user's own arrays): a NaN weight in a row of finite weights was named "every key
    in this row is masked, so softmax over all −∞ is 0/0", which that row shows is not so; the softmax reason is kept
    for rows with no finite weight (the test above), in a grid of heads too."""
    w = np.full((3, 3), 1 / 3)
    w[1, 2] = np.nan
    for fig in (viz.weights_heatmap(w, row_labels=list("abc")), viz.heads_grid(w[None], row_labels=list("abc"))):
        (nan_overlay,) = role_traces(fig, "nan")
        assert "0/0" not in nan_overlay.name and "NaN" in nan_overlay.name, nan_overlay.name


def cell_marks(fig: go.Figure, role: str) -> dict[tuple[int, int], str]:
    """The marks an overlay writes in its cells, by (row, column)."""
    return {(i, j): text for trace in role_traces(fig, role) for i, row in enumerate(trace.text)
            for j, text in enumerate(row) if text}


def test_an_infinite_cell_says_so_not_nan():
    """A bad-input walk (viz draws a user's own arrays): a +inf score was cross-hatched with "NaN" written in it,
    under the key "NaN (not a number): the input holds NaN or ±inf here". Each such cell now says what it holds,
    and the key names what the cells hold."""
    fig = viz.scores_heatmap(np.array([[1, np.inf], [-np.inf, np.nan]]), row_labels=["a", "b"])
    assert cell_marks(fig, "mask_text") == {(1, 0): "−∞"}  # -inf scores count as masked (the model's −∞)
    assert cell_marks(fig, "nan_text") == {(0, 1): "+∞", (1, 1): "NaN"}
    (nan,) = role_traces(fig, "nan")
    assert "+∞" in nan.name and "NaN" in nan.name
    only_inf = viz.matrix_heatmap(np.array([[1, np.inf], [-np.inf, 2]]), row_labels=None, mask=np.ones((2, 2), bool))
    assert cell_marks(only_inf, "nan_text") == {(0, 1): "+∞", (1, 0): "−∞"}
    (nan,) = role_traces(only_inf, "nan")
    assert "NaN" not in nan.name and "+∞" in nan.name and "−∞" in nan.name, nan.name
    w = np.array([[1.0, 0.0], [0.5, 0.5]])
    w[1, 1] = -np.inf
    weights = viz.weights_heatmap(w, row_labels=["a", "b"], mask=np.tril(np.ones((2, 2), bool)))
    assert cell_marks(weights, "nan_text") == {(1, 1): "−∞"} and cell_marks(weights, "mask_text") == {(0, 1): "0"}
    (nan,) = role_traces(viz.weights_heatmap(np.array([[np.inf, np.inf], [0.5, 0.5]]), row_labels=["a", "b"]), "nan")
    assert nan.name.startswith("+∞") and "0/0" not in nan.name, nan.name  # softmax makes NaN, never +∞


def test_a_block_of_infinite_cells_says_what_its_mean_is():
    """A block of cells (a large matrix in many panels) holds the mean of its cells that are not masked: +∞ where
    they are +∞, NaN where +∞ meets −∞ (or a NaN)."""
    from viz.heatmap import prepare_grid

    z = np.zeros((20, 20))
    mask = np.ones((20, 20), dtype=bool)
    z[0:2, 0:2] = np.inf
    mask[0, 0] = False  # a masked cell is left out of its block's mean
    z[2:4, 2:4] = [[np.inf, -np.inf], [np.inf, np.inf]]
    z[4:6, 4:6] = -np.inf
    grid = prepare_grid(z, row_text=[""] * 20, col_text=[""] * 20, mask=mask, panels=1024)
    assert grid.z.shape == (10, 10)
    assert grid.bad[0, 0] and grid.bad[1, 1] and grid.bad[2, 2] and grid.bad.sum() == 3
    assert np.isposinf(grid.bad_value[0, 0]) and np.isnan(grid.bad_value[1, 1]) and np.isneginf(grid.bad_value[2, 2])


def test_every_nan_cell_is_covered_by_an_explained_overlay():
    """NaN is never shown unexplained, whatever made it."""
    z = RNG.normal(size=(6, 6))
    z[1, 2] = np.nan
    z[4, 4] = np.inf
    mask = np.ones((6, 6), dtype=bool)
    mask[:, 5] = False
    figs = [
        viz.scores_heatmap(z, row_labels=list("abcdef"), mask=mask),
        viz.matrix_heatmap(z, row_labels=list("abcdef")),
        viz.order_difference_heatmap(z, row_labels=list("abcdef")),
        viz.heads_grid(np.stack([z, z]), row_labels=list("abcdef"), mask=mask),
    ]
    for fig in figs:
        rects_by_axes = {}
        for t in fig.data:
            if isinstance(t.meta, dict) and t.meta.get("role") in ("mask", "nan"):
                rects_by_axes.setdefault((t.xaxis, t.yaxis), []).extend(rectangles(t))
        for heat in values_traces(fig):
            zz = np.asarray(heat.z, float)
            rects = rects_by_axes.get((heat.xaxis, heat.yaxis), [])
            for i, j in zip(*np.nonzero(np.isnan(zz)), strict=True):
                assert covered(rects, heat.x[j], heat.y[i]), (i, j)
        assert "NaN" in header(fig)


@pytest.mark.parametrize("theme", viz.THEME_NAMES)
def test_a_nan_cell_is_a_hole_in_the_plots_own_colour_not_a_white_box_and_not_masked_grey(theme):
    """viz draws a user's own arrays too, where NaN can be (the model never makes one): a NaN cell was #f2f2f2
    cross-hatched black in every theme, a white box on the dark plot with its "NaN" in white on it (1.1:1)."""
    t = viz.THEMES[theme]
    z = RNG.normal(size=(4, 4))
    z[1, 2] = np.nan
    mask = np.ones((4, 4), dtype=bool)
    mask[:, 3] = False
    built = viz.scores_heatmap(z, row_labels=list("abcd"), mask=mask, theme=theme)
    themed = viz.apply_theme(viz.scores_heatmap(z, row_labels=list("abcd"), mask=mask,  # themed again
                                                theme="dark" if theme != "dark" else "default"), theme)
    dense = np.where(np.indices((80, 80)).sum(axis=0) % 2, np.nan, 1.0)  # 3,200 NaN cells: too many patches
    plain = viz.matrix_heatmap(dense, row_labels=None, theme=theme)
    (nan_cells,) = role_traces(plain, "nan_cells")
    assert not role_traces(plain, "mask_cells")  # not drawn as masked
    assert {c for _, c in nan_cells.colorscale} == {t["nan_bg"]}
    for fig in (built, themed):
        (nan,), (masked,) = role_traces(fig, "nan"), role_traces(fig, "mask")
        (text,) = role_traces(fig, "nan_text")
        bg, plot = nan.fillpattern.bgcolor, fig.layout.plot_bgcolor
        assert nan.fillcolor == bg and nan.fillpattern.shape == "x" and masked.fillpattern.shape == "/"
        assert _contrast(bg, plot) < 1.3  # a hole in the matrix, in the plot's own colour (the dark one: 16:1)
        assert _contrast(nan.fillpattern.fgcolor, bg) >= 3 and nan.line.color == nan.fillpattern.fgcolor  # its x
        assert _contrast(nan.line.color, plot) >= 3  # and its edge stand out (WCAG 2.1 SC 1.4.11)
        assert _contrast(bg, masked.fillcolor) >= 1.5  # not the masked cells' grey
        assert [x for row in text.text for x in row if x] == ["NaN"] and text.text[1][2] == "NaN"
        assert _contrast(text.textfont.color, bg) >= 4.5


@pytest.mark.parametrize("theme", viz.THEME_NAMES)
@pytest.mark.parametrize("n_keys", [7, 9])  # every colour of the palette; six and the grey "other keys"
def test_the_context_vectors_keys_differ_by_pattern_not_by_colour_alone(theme, n_keys):
    """View 5's stacked bars told their keys apart by colour alone (the legend and the hover name them): to a
    colour-blind student two keys were one grey (WCAG 1.4.1). Each key's bars carry a pattern of their own too, in
    the plot's colour, 3:1 or more on the bar's (opaque: plotly.js draws it half-opaque unless told)."""
    w = softmax_rows(RNG.normal(size=(1, n_keys)))[0]
    fig = viz.context_vector_figure(w, RNG.normal(size=(n_keys, 6)), key_labels=list("abcdefghi")[:n_keys],
                                    theme=theme)
    bars = [t for t in fig.data if t.type == "bar"]
    shapes = [t.marker.pattern.shape or "" for t in bars]
    assert len(bars) == 7 and len(set(shapes)) == len(bars), shapes  # one each; "other keys" (grey) none
    assert ("" in shapes) == (n_keys > 7)
    for bar in bars:
        pattern = bar.marker.pattern
        if pattern.shape:
            assert pattern.fillmode == "overlay" and pattern.fgopacity == 1  # the bar's colour under its pattern
            assert pattern.fgcolor == fig.layout.plot_bgcolor
            assert _contrast(pattern.fgcolor, bar.marker.color) >= 3


def test_weights_show_row_sums():
    w = softmax_rows(RNG.normal(size=(3, 3)))
    fig = viz.weights_heatmap(w, row_labels=list("abc"))
    assert list(fig.layout.yaxis2.ticktext) == ["Σ = 1.000"] * 3
    assert fig.layout.yaxis2.matches == "y"


def test_weights_warn_when_masked_cells_carry_weight():
    w = np.full((2, 2), 0.5)  # a wrong model: the masked cell (0, 1) has weight 0.5
    mask = causal(2)
    assert "warning" in header(viz.weights_heatmap(w, row_labels=["a", "b"], mask=mask))
    ok = np.array([[1.0, 0.0], [0.5, 0.5]])
    assert "warning" not in header(viz.weights_heatmap(ok, row_labels=["a", "b"], mask=mask))


def test_mask_figure_draws_false_cells_as_hatched_and_says_true_means_may_attend():
    mask = causal(3)
    fig = viz.mask_heatmap(mask, row_labels=list("abc"))
    rects = rectangles(role_traces(fig, "mask")[0])
    assert [covered(rects, j, i) for i in range(3) for j in range(3)] == list(~mask.ravel())
    assert "True = may attend" in header(fig)
    assert "plain: True, may attend" in header(fig) and "hatched" in header(fig)  # a key to both kinds of cell


def test_a_mask_figure_with_nothing_masked_says_so_rather_than_keying_plain_cells():
    """Every cell True: "plain: True, may attend" keyed nothing that stands out (it read as gibberish to a
    class); the note says instead that nothing is masked."""
    fig = viz.mask_heatmap(np.ones((3, 3), dtype=bool), row_labels=list("abc"))
    assert "nothing is masked" in header(fig)
    assert "plain:" not in header(fig) and "hatched" not in header(fig)


# ---------------------------------------------------------------- large inputs


@pytest.mark.parametrize("builder", ["weights", "masked_scores", "checkerboard"])
def test_512_tokens_stay_under_one_megabyte_and_say_so(builder):
    n = 512
    labels = [str(i % 7) for i in range(n)]
    if builder == "weights":
        fig = viz.weights_heatmap(softmax_rows(RNG.normal(size=(n, n))), row_labels=labels)
    elif builder == "masked_scores":
        fig = viz.scores_heatmap(RNG.normal(size=(n, n)), row_labels=labels, mask=causal(n))
    else:  # worst case for merged hatch patches
        mask = (np.add.outer(np.arange(n), np.arange(n)) // 2) % 2 == 0
        fig = viz.scores_heatmap(RNG.normal(size=(n, n)), row_labels=labels, mask=mask)
    assert len(fig.to_json()) < 1_000_000
    assert "Large input (512×512)" in header(fig)
    heat = values_traces(fig)[0]
    assert np.asarray(heat.z).dtype == np.float32
    assert max(np.asarray(heat.z).shape) <= viz.MAX_CELLS


def test_downsampled_cells_are_block_means():
    n = 300
    m = RNG.normal(size=(n, n))
    heat = values_traces(viz.matrix_heatmap(m))[0]
    z = np.asarray(heat.z)
    assert z.shape == (150, 150)
    assert z[0, 0] == pytest.approx(m[:2, :2].mean(), rel=1e-5)
    assert z[-1, 3] == pytest.approx(m[-2:, 6:8].mean(), rel=1e-5)


def test_between_128_and_256_tokens_full_resolution_with_a_note():
    n = 200
    fig = viz.weights_heatmap(softmax_rows(RNG.normal(size=(n, n))), row_labels=None)
    assert np.asarray(values_traces(fig)[0].z).shape == (n, n)
    assert "Large input (200×200)" in header(fig)
    assert len(fig.to_json()) < 1_000_000
    assert fig.layout.xaxis.tickmode == "auto"  # bare positions: Plotly spaces the ticks itself
    words = viz.weights_heatmap(
        softmax_rows(RNG.normal(size=(n, n))), row_labels=[chr(0x4E00 + i) for i in range(n)]
    )
    assert len(words.layout.xaxis.tickvals) <= 48  # thinned token labels
    step = int(words.layout.xaxis.tickvals[1])  # a nice step: every 5th, 10th, 20th, ...
    assert step in (2, 5, 10, 20, 50)
    assert words.layout.xaxis.ticktext[1] == f"{step}:{chr(0x4E00 + step)}"


def test_a_large_masks_note_speaks_of_blocks_where_any_cell_may_attend_not_of_means_and_digits():
    """A 0/1 mask was "each the mean of a 2×2 block; values drawn in float32" (a regression walk). Each drawn cell
    is True where any cell of its block may attend: checked against the mask itself."""
    n = 300
    mask = causal(n)
    fig = viz.mask_heatmap(mask, row_labels=None)
    text = header(fig)
    assert "Large input (300×300): shown as 150×150 cells, each a 2×2 block, True where any of its cells may " \
           "attend" in text and "float32" not in text and "mean" not in text, text
    allowed = next(t for t in fig.data if (t.meta or {}).get("role") == "mask_allowed")
    drawn = ~np.isnan(np.asarray(allowed.z, dtype=float))
    np.testing.assert_array_equal(drawn, mask.reshape(150, 2, 150, 2).any(axis=(1, 3)))
    assert "float32" in header(viz.weights_heatmap(softmax_rows(RNG.normal(size=(n, n))), row_labels=None))


def test_small_inputs_carry_no_large_input_note():
    assert "Large input" not in header(viz.weights_heatmap(np.eye(4), row_labels=list("abcd")))


# ---------------------------------------------------------------- user text stays text


def _no_live_html(fig: go.Figure) -> None:
    strings = list(all_strings(fig.to_plotly_json()))
    assert not any("<img" in s for s in strings)
    assert any("&lt;img" in s and "alert(1)&gt;" in s for s in strings)


def test_user_text_is_escaped_in_every_builder():
    n = 3
    toks = ["a", XSS, "b"]
    w = softmax_rows(RNG.normal(size=(n, n)))
    s = RNG.normal(size=(n, n))
    v = RNG.normal(size=(n, 4))
    figs = [
        viz.weights_heatmap(w, row_labels=toks, title=XSS),
        viz.scores_heatmap(s, row_labels=toks, title=XSS),
        viz.mask_heatmap(causal(n), row_labels=toks),
        viz.matrix_heatmap(s, row_labels=toks, col_labels=toks, title=XSS),
        viz.qkv_figure(v, v, v, row_labels=toks),
        viz.heads_grid(np.stack([w, w]), row_labels=toks, head_names=[XSS, "h"]),
        viz.layers_heads_grid(w[None, None], row_labels=toks),
        viz.query_bars(s[0], s[0], w[0], key_labels=toks, query_label=XSS),
        viz.context_vector_figure(w[0], v, key_labels=toks, query_label=XSS),
        viz.pe_heatmap(RNG.normal(size=(5, 4)), labels=toks),
        viz.pe_curves(
            np.arange(5),
            RNG.normal(size=(5, 4)),
            dims=[0, 1],
            marked_positions=[0, 1, 2],
            marked_labels=toks,
        ),
        viz.pe_dot_matrix(s @ s.T, labels=toks),
        viz.embedding_pe_figure(v, v, labels=toks),
        viz.order_difference_heatmap(v, row_labels=toks),
        viz.aligned_outputs_figure(
            v, v, labels_a=toks, labels_b=toks, positions_b=[2, 1, 0], name_a=XSS
        ),
        viz.pooled_outputs_figure(v[0], v[1], name_a=XSS),
        viz.cross_attention_heatmap(w, target_labels=toks, source_labels=toks),
        viz.decoder_self_attention_heatmap(w, target_labels=toks, mask=causal(len(toks))),
        viz.loss_curves({XSS: [3.0, 2.0, 1.0]}, title=XSS),
        viz.pe_dot_curve(np.arange(-3, 4), np.cos(np.arange(-3, 4)), title=XSS),
        viz.entropy_overview(np.ones((2, 2)), title=XSS),
    ]
    for fig in figs:
        _no_live_html(fig)


def test_only_our_markup_renders_in_titles_and_user_text_beside_it_stays_text():
    """The paper's symbols as plotly.js draws them (XW<sub>Q</sub>, d<sub>k</sub>), not "XW_Q" and "d_k"; what
    a title says about the user's run (the `where`, a masked cell's text) is escaped beside them, and a
    Markup that a str operation touched is a plain str again, escaped in full."""
    from viz.labels import Markup, markup

    assert viz.escape_text(Markup("d<sub>k</sub>")) == "d<sub>k</sub>"
    assert markup(Markup("XW<sub>Q</sub> — "), XSS) == "XW<sub>Q</sub> — " + viz.escape_text(XSS)
    assert viz.escape_text(Markup("<sub>k</sub>") + "x") == "&lt;sub&gt;k&lt;/sub&gt;x"
    assert viz.escape_text(f"{Markup('<b>')}") == "&lt;b&gt;"
    n, d_k = 3, 4
    q = RNG.normal(size=(n, d_k))
    s = q @ q.T
    figs = viz.attention_step_figures(q=q, k=q, v=q, scores=s, scaled_scores=s / 2, weights=softmax_rows(s / 2),
                                      mask=causal(n), row_labels=list("abc"), where=XSS, masked_text="<i>x</i>")
    titles = {key: fig.layout.title.text for key, fig in figs.items()}
    assert titles["qkv"].startswith("Q = XW<sub>Q</sub>, K = XW<sub>K</sub>, V = XW<sub>V</sub>")
    assert "d<sub>k</sub> = 4" in titles["scaled"] and ">√</span>d<sub>k</sub>" in titles["scaled"]
    assert "&lt;i&gt;x&lt;/i&gt;" in titles["masked"]
    for title in titles.values():
        assert "_" not in title and "<img" not in title and viz.escape_text(XSS) in title.replace(
            viz.theme.SOFT_BREAK, "")
    bars = viz.query_bars(s[0], s[0] / 2, softmax_rows(s / 2)[0], key_labels=list("abc"), query_label="a",
                          unscaled_weights=softmax_rows(s)[0])
    strings = list(all_strings(bars.to_plotly_json()))
    assert not any("d_k" in t for t in strings) and any("√</span>d<sub>k</sub>" in t for t in strings)


def test_query_bars_say_nan_only_where_the_weights_hold_one_and_why():
    """A row whose every key is masked: model/'s weights are 0 there (drawn as ✕ at 0, "weight exactly 0"),
    so no note says NaN; softmax over all −∞ as written (torch's own) gives NaN, said to be 0/0. A NaN beside
    finite weights (a user's array) is said to be in the input, not blamed on a mask: the figure said
    "weights are NaN: every key in this row is masked" in all three."""
    import torch

    from model.attention import attention_weights

    q, k = torch.randn(1, 1, 2, 4), torch.randn(1, 1, 3, 4)
    mask = torch.tensor([[True, True, False], [False, False, False]])  # query 1 may attend to nothing
    w = attention_weights(q, k, mask)[0, 0].numpy()
    scores = np.where(mask.numpy(), (q @ k.transpose(-1, -2))[0, 0].numpy(), -np.inf)
    keys = ["a", "b", "c"]
    said = header  # title and notes
    zeros = viz.query_bars(scores[1], scores[1] / 2, w[1], key_labels=keys, mask=mask[1].numpy())
    assert np.array_equal(w[1], np.zeros(3)) and "NaN" not in said(zeros)
    marks = next(t for t in zeros.data if t.meta == {"role": "masked_weight"})
    assert list(marks.y) == [0, 0, 0] and "weight exactly 0" in marks.hovertemplate
    nan = viz.query_bars(scores[1], scores[1] / 2, torch.softmax(torch.tensor(scores[1]), -1).numpy(),
                         key_labels=keys, mask=mask[1].numpy())
    assert f"weights are NaN: {viz.attention.NAN_SOFTMAX}" in said(nan)
    holed = np.array([0.25, np.nan, 0.75])
    user = viz.query_bars(np.array([1.0, np.nan, 2.0]), np.array([0.5, np.nan, 1.0]), holed, key_labels=keys)
    assert "as in the input" in said(user) and viz.attention.NAN_SOFTMAX not in said(user)
    assert "NaN" not in said(viz.query_bars(scores[0], scores[0] / 2, w[0], key_labels=keys, mask=mask[0].numpy()))


def test_invisible_characters_in_a_token_are_shown_as_marks_or_code_points():
    """A token table or a query label must let a teacher point at every token: a space, a newline, a tab and
    an ideographic space get a mark; any other control, format or separator character (a zero-width space, a
    bell, a no-break space, a line separator, a right-to-left override) is named by its code point."""
    assert viz.visible_whitespace(" \n\t\r\u3000") == "␣⏎⇥␍□"
    assert (viz.visible_whitespace("a\u200bb\x07\u00a0c\u2028\u202e你")
            == "a⟨U+200B⟩b⟨U+0007⟩⟨U+00A0⟩c⟨U+2028⟩⟨U+202E⟩你")
    assert viz.visible_whitespace("é😀") == "é😀"  # letters and symbols as they are


def test_characters_drawn_as_nothing_that_are_not_controls_are_named_by_code_point_too():
    """A tokens walk: "I ❤️ you" typed on a phone holds U+FE0F (a variation selector, category Mn) after the heart,
    and Korean text a Hangul filler (U+3164, a letter): both draw as nothing, so view 1's text column showed an empty
    cell for their [UNK] rows. Every default-ignorable character (Unicode's Default_Ignorable_Code_Point) is named,
    as the controls are; a combining mark that shows, an accent, stays as it is."""
    for ch in "\u034f\u115f\u1160\u17b4\u180b\u180f\u3164\ufe00\ufe0f\uffa0\U000e0100\U000e01ef":
        assert viz.visible_whitespace(f"a{ch}") == f"a⟨U+{ord(ch):04X}⟩", ch
    assert viz.visible_whitespace("❤\ufe0f") == "❤⟨U+FE0F⟩"
    assert viz.visible_whitespace("e\u0301") == "e\u0301" and viz.visible_whitespace("\ufe10") == "\ufe10"


def test_dollar_signs_cannot_start_latex():
    fig = viz.weights_heatmap(np.eye(2), row_labels=["$x$", "y"], title="$E=mc^2$")
    assert "$" not in fig.layout.title.text and "$" not in "".join(fig.layout.xaxis.ticktext)


def test_matrix_frame_keeps_raw_text_for_csv():
    frame = viz.matrix_frame(np.eye(2), [XSS, "b"], ["c", "c"])
    assert list(frame.index) == [f"0:{XSS}", "1:b"]
    assert list(frame.columns) == ["0:c", "1:c"]


# ---------------------------------------------------------------- fonts, themes, config


def test_fonts_include_chinese_glyphs():
    fig = viz.weights_heatmap(np.eye(2), row_labels=list("你她"))
    assert "Noto Sans CJK SC" in fig.layout.font.family
    paper = viz.weights_heatmap(np.eye(2), row_labels=list("你她"), theme="paper")
    assert "Noto Serif CJK SC" in paper.layout.font.family
    for name in viz.THEME_NAMES:
        family = viz.THEMES[name]["font_family"]
        assert "CJK SC" in family


def _luminance(color: str) -> float:
    """WCAG 2 relative luminance of "#rrggbb" or "rgb(r, g, b)"."""
    rgb = [c / 255 for c in plotly.colors.unlabel_rgb(plotly.colors.convert_colors_to_same_type(color, "rgb")[0][0])]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_themes_differ_as_promised():
    w = softmax_rows(RNG.normal(size=(4, 4)))
    figs = {
        name: viz.weights_heatmap(w, row_labels=list("abcd"), theme=name)
        for name in viz.THEME_NAMES
    }
    paper, slide, default, dark = (figs[k] for k in ("paper", "slide", "default", "dark"))
    for fig in (paper,):
        axes = [fig.layout[k] for k in fig.layout if k.startswith(("xaxis", "yaxis"))]
        assert all(a.showgrid is False for a in axes)
        assert values_traces(fig)[0].colorbar.title.text == "weight"
        assert values_traces(fig)[0].colorbar.thickness <= 12
    assert slide.layout.font.size >= default.layout.font.size + 6
    assert _contrast(slide.layout.font.color, slide.layout.paper_bgcolor) >= 15
    assert _contrast(dark.layout.font.color, dark.layout.paper_bgcolor) >= 7
    assert _luminance(dark.layout.paper_bgcolor) < 0.05


def test_apply_theme_restyles_a_finished_figure_and_rejects_unknown_names():
    fig = viz.loss_curves({"run": [3.0, 2.0, 1.0]})
    viz.apply_theme(fig, "slide")
    assert fig.layout.font.size == viz.THEMES["slide"]["font_size"]
    assert fig.data[0].line.width == viz.THEMES["slide"]["line_width"]
    # a teacher's walk: hover labels kept plotly's 13 px on a projector, the only place view 4's numbers show
    assert fig.layout.hoverlabel.font.size == viz.THEMES["slide"]["font_size"] >= 20
    with pytest.raises(ValueError, match="unknown theme"):
        viz.apply_theme(fig, "neon")
    with pytest.raises(ValueError, match="unknown theme"):
        viz.weights_heatmap(np.eye(2), row_labels=None, theme="neon")


@pytest.mark.parametrize("name", viz.THEME_NAMES)
def test_hover_labels_read_at_aa_contrast_whatever_the_traces_colour(name):
    """An accessibility walk: a hover box took its trace's colour and plotly.js picked white or grey text on it,
    3.1:1 on the Okabe-Ito pink, 3.4:1 on its green (view 5's context vector, view 2's curves). The box is now in
    the figure's own colours, in every theme, for every trace (none sets a box colour of its own)."""
    w, v = np.array([0.1, 0.2, 0.3, 0.4]), RNG.normal(size=(4, 6))
    fig = viz.context_vector_figure(w, v, key_labels=list("abcd"), theme=name)
    assert {t.marker.color for t in fig.data if t.type == "bar"} >= set(viz.THEMES[name]["palette"][:4])
    box = fig.layout.hoverlabel
    assert box.bgcolor == viz.THEMES[name]["paper_bgcolor"]
    assert _contrast(box.font.color, box.bgcolor) >= 4.5
    assert _contrast(box.bordercolor, box.bgcolor) >= 3  # the box's edge, over cells of any colour
    assert box.font.size == viz.THEMES[name]["font_size"]
    assert all(t.hoverlabel.bgcolor is None and t.hoverlabel.font.color is None for t in fig.data)


@pytest.mark.parametrize("theme", viz.THEME_NAMES)
def test_paper_and_slide_write_values_in_small_matrices_only_the_screen_themes_leave_them_to_the_hover(theme):
    # a projector's class reads the 4 x 4 weights of 你喜欢她 off the cells (no mouse to hover with), and so does a page
    w = softmax_rows(RNG.normal(size=(4, 4)))
    heat = values_traces(viz.weights_heatmap(w, row_labels=None, theme=theme))[0]
    if theme in ("default", "dark"):
        assert not heat.texttemplate and not heat.text
        return
    assert heat.texttemplate == "%{text}"
    shown = [[float(cell_text(cell)[0]) for cell in row] for row in heat.text]
    assert np.allclose(shown, w, atol=0.005)
    big = softmax_rows(RNG.normal(size=(20, 20)))
    assert not values_traces(viz.weights_heatmap(big, row_labels=None, theme=theme))[0].texttemplate


def test_cell_values_are_written_with_a_true_minus_sign_and_leave_gaps_empty():
    # plotly.js writes %{z:.2f} with a hyphen ("-0.25") while its axes and colour bars write "−0.25"
    z = np.array([[-0.25, 1.5, -1e-9], [0.125, -3.0, 2.0], [-1.75, 0.0, 0.5]])
    mask = np.ones((3, 3), dtype=bool)
    mask[0, 2] = False
    fig = viz.scores_heatmap(z, row_labels=["a", "b", "c"], mask=mask, show_values=True)
    heat = values_traces(fig)[0]
    assert heat.texttemplate == "%{text}"
    text = [[cell_text(cell)[0] for cell in row] for row in heat.text]
    assert text[0][:2] == ["\u22120.25", "1.50"] and text[1][1] == "\u22123.00"
    assert text[0][2] == ""  # masked: the overlay writes "−∞" there
    assert not any("-" in cell for row in text for cell in row)
    shown = [[float(c.replace("\u2212", "-")) for c in row if c] for row in text]
    kept = [[v for v, ok in zip(row, keep, strict=True) if ok] for row, keep in zip(z, mask, strict=True)]
    assert np.allclose(sum(shown, []), sum(kept, []), atol=0.005)
    assert cell_texts([[3.6e-7, -1.25e-8, np.nan]], ".1e") == [["3.6e\u221207", "\u22121.2e\u221208", ""]]


@pytest.mark.parametrize("theme", ["paper", "slide", "dark"])
def test_cell_values_read_at_least_4_5_to_1_against_their_cells_in_every_colour_scale(theme):
    # plotly.js's own choice (#444 or white by brightness) gave 2.7:1 on Cividis's olive: seen on a projector
    z = np.linspace(-1, 1, 25).reshape(5, 5)
    figs = {
        "scores (RdBu)": viz.scores_heatmap(z * 9, row_labels=list("abcde"), show_values=True, theme=theme),
        "weights (Viridis)": viz.weights_heatmap((z + 1) / 2, row_labels=list("abcde"), show_values=True,
                                                 theme=theme),
        "entropy (Cividis)": viz.entropy_overview((z + 1), n_keys=4, theme=theme),
    }
    colours = set()
    for name, fig in figs.items():
        heat = values_traces(fig)[0]
        lo, hi = heat.zmin, heat.zmax
        scale = [[stop, plotly.colors.convert_colors_to_same_type(c, "rgb")[0][0]] for stop, c in heat.colorscale]
        for zrow, trow in zip(heat.z, heat.text, strict=True):
            for value, text in zip(zrow, trow, strict=True):
                shown, colour = cell_text(text)
                assert float(shown.replace("\u2212", "-")) == pytest.approx(value, abs=0.006), (name, text)
                cell = plotly.colors.sample_colorscale(scale, [(value - lo) / (hi - lo)])[0]
                assert _contrast(colour, cell) >= 4.5, (name, value, colour, cell)
                colours.add(colour)
        viz.apply_theme(fig, theme)  # restyled again: each text keeps one colour
        assert all(t.count("<span") == 1 for row in values_traces(fig)[0].text for t in row)
    assert colours == {"#000000", "#ffffff"}  # both are needed: dark and light cells


@pytest.mark.parametrize("theme", ["default", "paper", "slide", "dark"])
def test_line_and_bar_charts_keep_their_axis_titles_after_the_theme(theme):
    # a title given as a string (xaxis_title="dimension") lost its text when the theme set its font
    from viz.order import pooled_outputs_figure
    from viz.positional import pe_curves, pe_dot_curve

    def titles(fig):
        return fig.layout.xaxis.title.text, fig.layout.yaxis.title.text

    assert titles(pooled_outputs_figure(RNG.normal(size=8), RNG.normal(size=8), theme=theme)) == (
        "dimension", "pooled output")
    k = np.arange(-5, 6)
    assert titles(pe_dot_curve(k, np.cos(k / 3.0), theme=theme)) == ("offset k = n − m", f"PE(m){viz.theme.DOT}PE(m+k)")
    pos = np.arange(6)
    assert titles(pe_curves(pos, RNG.normal(size=(6, 8)), dims=[0, 1], theme=theme))[0] == "position"
    assert titles(viz.loss_curves({"run": [3.0, 2.0, 1.0]}, theme=theme))[0] == "training step"


@pytest.mark.parametrize("theme", ["default", "paper", "paper-sans", "slide", "dark"])
def test_thin_bars_are_not_covered_by_their_outline(theme):
    """The plotly templates outline every bar, 0.5 px each side in white (dark: the page's colour): the base
    model's pooled outputs (512 dimensions, A and B side by side, ~0.35 px a bar at paper's 600 px) exported as
    an empty plot (an export walk). A bar narrower than viz.theme.THIN_BAR_PX keeps no outline; wide ones keep
    theirs, and a trace's own outline (view 5's unscaled weights) stays."""
    from viz.order import pooled_outputs_figure

    def outlines(fig):
        return [b.marker.line.width for b in fig.data if b.type == "bar"]

    base = pooled_outputs_figure(RNG.normal(size=512), RNG.normal(size=512), theme=theme)
    assert outlines(base) == [0, 0]
    assert outlines(pooled_outputs_figure(RNG.normal(size=4), RNG.normal(size=4), theme=theme)) == [None, None]
    n = 511  # view 5's bars at 511 keys: the scores' and weights' bars lose the outline, the unscaled ones keep it
    s = RNG.normal(size=n) * 4
    fig = viz.query_bars(s, s / 4, softmax_rows(s / 4), key_labels=[f"k{i}" for i in range(n)], theme=theme,
                         unscaled_weights=softmax_rows(s))
    widths = {b.meta["role"]: b.marker.line.width for b in fig.data if b.type == "bar"}
    assert widths["bars"] == 0 and widths["unscaled_weights"] >= 1.5


@pytest.mark.parametrize("theme", ["default", "slide"])
def test_a_bar_loses_its_outline_by_its_own_width(theme):
    """View 6's pooled outputs draw B's bar half as wide as A's, over it (overlay): a bar's outline goes where that
    bar, at its own width, is under THIN_BAR_PX, so there is a size where A keeps its outline and B has none, and
    none where B keeps one that A lost (judged both at bargap 0.2's share, the two were kept or dropped together)."""
    from viz.order import pooled_outputs_figure

    def outlines(d):
        fig = pooled_outputs_figure(RNG.normal(size=d), RNG.normal(size=d), theme=theme)
        return tuple(0 if b.marker.line.width == 0 else 1 for b in fig.data)

    seen = {outlines(d) for d in range(4, 400, 6)}
    assert (1, 0) in seen and (0, 1) not in seen, seen


def test_every_heads_grid_says_rows_are_queries_and_columns_keys():
    w = softmax_rows(RNG.normal(size=(6, 5, 5)))
    grid = viz.heads_grid(w, row_labels=ZH[:5], cols=4)  # 2 rows: heads 0-3, then 4-5
    lay = grid.layout
    assert [lay[f"xaxis{i if i > 1 else ''}"].title.text for i in range(1, 7)] == [None, None, "key", "key",
                                                                                  "key", "key"]
    assert lay.yaxis.title.text == "query" and lay.yaxis5.title.text == "query" and not lay.yaxis2.title.text
    layers = viz.layers_heads_grid(softmax_rows(RNG.normal(size=(2, 3, 4, 4))), row_labels=ZH[:4])
    ys = [layers.layout[f"yaxis{i if i > 1 else ''}"].title.text for i in (1, 4)]
    assert ys == ["layer 0 · query", "layer 1 · query"]
    assert layers.layout.xaxis4.title.text == "key" and not layers.layout.xaxis.title.text
    cross = viz.heads_grid(w, row_labels=ZH[:5], cols=4, axis_names=("target token", "source token"))
    assert cross.layout.yaxis.title.text == "target token" and cross.layout.xaxis3.title.text == "source token"


def test_hover_shows_exact_values():
    heat = values_traces(viz.scores_heatmap(np.eye(2), row_labels=["a", "b"]))[0]
    assert "%{z:.6~g}" in heat.hovertemplate and "%{y}" in heat.hovertemplate


def test_figure_config_saves_svg_at_three_times_scale():
    config = viz.figure_config("attention weights/你喜欢她")
    opts = config["toImageButtonOptions"]
    assert opts["format"] == "svg" and opts["scale"] == 3
    assert "/" not in opts["filename"] and opts["filename"]


# ---------------------------------------------------------------- tables


def test_token_table_shows_spans_and_utf8_bytes():
    table = viz.token_table(
        ["你", "喜欢", "她"], [5, 9, 7], [(0, 1), (1, 3), (3, 4)], text="你喜欢她"
    )
    assert list(table["position"]) == [0, 1, 2]
    assert table.loc[0, "bytes"] == "e4 bd a0" and table.loc[0, "n_bytes"] == 3
    assert table.loc[1, "text"] == "喜欢" and table.loc[1, "n_bytes"] == 6
    assert (table.loc[2, "start"], table.loc[2, "end"]) == (3, 4)
    with pytest.raises(ValueError):
        viz.token_table(["a"], [1, 2], [(0, 1)])


def test_token_diff_marks_positions_that_differ():
    assert viz.token_diff(list("你喜欢她"), list("她喜欢你")) == [True, False, False, True]
    assert viz.token_diff(["a", "b"], ["a"]) == [False, True]
    frame = viz.token_comparison(list("你喜欢她"), [1, 2, 3, 4], list("她喜欢你"), [4, 2, 3, 1])
    assert list(frame["differs"]) == [True, False, False, True]
    css = viz.highlight_differences(frame).to_html().split("</style>")[0]
    assert "#ffe08a" in css
    styled_rows = {r for r in range(4) if f"_row{r}_col0" in css}
    assert styled_rows == {0, 3}


def test_differing_rows_are_styled_in_one_pass_over_the_table_by_position(monkeypatch):
    """The styles of every cell are made at once, not by a row-wise DataFrame.apply, which built a Series per row:
    ~25 ms of every rerun of view 1 at 511 tokens (its comparison table; bench figure page). A flagged row's cells
    each get the style, the others none, by position whatever the index (a slide table's is its first column)."""
    import pandas as pd

    frame = viz.token_comparison(list("你喜欢她"), [1, 2, 3, 4], list("她喜欢你"), [4, 2, 3, 1])
    frame.index = ["d", "b", "c", "a"]
    applied = []
    real = pd.DataFrame.apply
    monkeypatch.setattr(pd.DataFrame, "apply", lambda self, *a, **k: applied.append(k) or real(self, *a, **k))
    styler = viz.highlight_differences(frame, differs=[False, True, True, False])
    styler._compute()  # what st.dataframe and st.table run (streamlit marshall_styler)
    assert applied == []
    assert {cell for cell, css in styler.ctx.items() if css} == {(r, c) for r in (1, 2) for c in range(6)}
    assert styler.ctx[(1, 0)] == [("background-color", "#ffe08a"), ("color", "#000000"), ("font-weight", "bold")]


def test_a_shown_table_draws_gaps_as_a_dash_and_keeps_its_numbers_readable():
    import pandas as pd

    frame = pd.DataFrame({"piece": ["a", None], "weight": np.array([0.1, np.nan], dtype=np.float32)})
    shown = viz.shown_table(frame)
    assert list(shown["piece"]) == ["a", "—"] and list(shown["weight"]) == ["0.1", "—"]  # not 0.10000000149
    assert frame["weight"].isna().iloc[1] and pd.isna(frame["piece"].iloc[1])  # the CSV's frame is untouched
    whole = pd.DataFrame({"weight": [0.5, 0.25]})
    assert viz.shown_table(whole) is whole
    # token ids where B is shorter than A: one type per column, or st.dataframe's Arrow conversion fails (the
    # server logged "ArrowInvalid: Could not convert '—'" and drew the column another way)
    import pyarrow as pa

    ids = viz.token_comparison(["你", "喜", "欢"], [5, 9, 7], ["她"], [8])
    shown = viz.shown_table(ids)
    assert list(shown["B id"]) == ["8", "—", "—"] and list(shown["A id"]) == [5, 9, 7]
    pa.Table.from_pandas(shown)  # raises ArrowInvalid / ArrowTypeError on a column of ints and text
    # True/False as words (st.dataframe's ticked boxes were 1.9:1 on white); the CSV's frame keeps the bools
    assert list(shown["differs"]) == ["True", "True", "True"] and ids["differs"].dtype == bool
    flags = pd.DataFrame({"equivariant": [False, True]})
    assert list(viz.shown_table(flags)["equivariant"]) == ["False", "True"]


def test_a_turned_table_holds_every_value_as_the_page_writes_it_a_row_per_column():
    """View 6's numbers turned for a phone (ui/panels.py): a row per quantity, a column per model, each value as
    the verdicts write it (3 significant digits, a true minus), True/False in words, a missing one a dash."""
    import pandas as pd

    frame = pd.DataFrame([{"model": "with PE", "equivariant": False, "max": 2.5414, "pooled": None},
                          {"model": "without PE", "equivariant": True, "max": 2.384e-07, "pooled": 0.5}])
    turned = viz.turned_table(frame)
    assert list(turned.columns) == ["with PE", "without PE"] and list(turned.index) == ["equivariant", "max", "pooled"]
    assert turned.loc["equivariant"].tolist() == ["False", "True"]
    assert turned.loc["max"].tolist() == ["2.54", "2.38e−07"] and turned.loc["pooled"].tolist() == ["—", "0.5"]
    assert frame["equivariant"].dtype == bool and frame.shape == (2, 4)  # the CSV's frame as it was


@pytest.mark.parametrize("dark", [False, True])
def test_highlighted_rows_are_legible_on_a_light_and_on_a_dark_page(dark):
    """Bold text on the highlight reads (WCAG AA, 4.5:1); on a dark page the table draws its check marks
    (the "differs" column) in the page's light text colour, which must stand out from the highlight too
    (3:1, WCAG's figure for non-text marks): a pale yellow there hid them."""
    from viz.theme import THEMES

    frame = viz.token_comparison(list("你喜欢她"), [1, 2, 3, 4], list("她喜欢你"), [4, 2, 3, 1])
    css = viz.highlight_differences(frame, dark=dark).to_html().split("</style>")[0]
    background = re.search(r"background-color: (#[0-9a-f]{6})", css).group(1)
    text = re.search(r"[^-]color: (#[0-9a-f]{6})", css).group(1)
    assert "font-weight: bold" in css and {r for r in range(4) if f"_row{r}_col0" in css} == {0, 3}
    assert _contrast(text, background) >= 4.5
    if dark:
        assert _contrast(THEMES["dark"]["font_color"], background) >= 3
        assert _contrast(THEMES["dark"]["paper_bgcolor"], background) >= 1.5  # the row stands out


def test_matrix_frame_has_unique_labels_and_the_numbers():
    m = RNG.normal(size=(10, 3))
    frame = viz.matrix_frame(m, I_LIKE_HER, None)
    assert frame.index.is_unique and frame.shape == (10, 3)
    np.testing.assert_array_equal(frame.to_numpy(), m)
    assert list(viz.matrix_frame(np.arange(3.0), ["a", "b", "a"]).columns) == ["value"]


# ---------------------------------------------------------------- positional encoding


def _pe(P, d):
    pos = np.arange(P)[:, None]
    freq = 1 / 10000 ** (2 * np.arange(d // 2) / d)
    pe = np.zeros((P, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(pos * freq), np.cos(pos * freq)
    return pe


def test_pe_heatmap_uses_fixed_unit_range():
    heat = values_traces(viz.pe_heatmap(_pe(10, 8)))[0]
    assert (heat.zmin, heat.zmax) == (-1.0, 1.0)


def test_the_pe_gram_matrix_spans_its_own_values_where_all_are_positive():
    """Over a short sentence PE(m)·PE(n) is positive everywhere: a sequential scale from its smallest to
    its largest value shows the equal diagonals; where it has both signs, a scale about 0."""
    from model.positional import sinusoidal_encoding

    pe = sinusoidal_encoding(4, 64).numpy()  # (4, 64)
    gram = pe @ pe.T
    assert gram.min() > 0
    heat = values_traces(viz.pe_dot_matrix(gram))[0]
    assert (heat.zmin, heat.zmax) == (pytest.approx(gram.min()), pytest.approx(gram.max()))
    assert heat.colorscale != values_traces(viz.scores_heatmap(gram, row_labels=None))[0].colorscale  # not the diverging one
    signed = gram - gram.mean()
    heat = values_traces(viz.pe_dot_matrix(signed))[0]
    assert heat.zmin == pytest.approx(-np.abs(signed).max()) and heat.zmax == pytest.approx(np.abs(signed).max())


def test_pe_dot_curve_marks_its_local_peaks_and_never_says_strictly():
    d = 128
    ks = np.arange(-40, 41)
    freq = 1 / 10000 ** (2 * np.arange(d // 2) / d)
    dots = np.cos(np.outer(ks, freq)).sum(axis=1)
    fig = viz.pe_dot_curve(ks, dots)
    bumps = viz.local_maxima(ks, dots)
    assert bumps and all(dots[ks == b][0] > dots[ks == b - 1][0] for b in bumps)
    assert list(role_traces(fig, "marks")[0].x) == bumps
    text = header(fig)
    assert "decays overall" in text and "strictly" not in text and "not monotonic" in text
    # the note names the peaks themselves (above both neighbours), not where the curve starts to rise
    assert f"local peaks at k = {bumps[0]:g}, {bumps[1]:g}" in text
    assert all(dots[ks == b][0] > dots[ks == b + 1][0] for b in bumps)


def test_pe_curves_draw_chosen_dims_and_mark_sentence_positions():
    pos = np.arange(0, 10, 0.5)  # three tokens ~60 px apart: room for each label side by side
    pe = np.array([_pe(1, 8)[0] * 0 + np.sin(p) for p in pos])  # any table of the right shape
    fig = viz.pe_curves(
        pos, pe, dims=[0, 3], marked_positions=[0, 1, 2], marked_labels=list("你喜她")
    )
    lines = role_traces(fig, "line")
    assert [t.name.split(",")[0] for t in lines] == ["dim 0 sin", "dim 3 cos"]
    assert list(fig.layout.xaxis2.ticktext) == ["0:你", "1:喜", "2:她"]
    with pytest.raises(ValueError):
        viz.pe_curves(pos, pe, dims=[8])


def test_pe_curves_tell_sin_from_cos_without_colour():
    # the legend's colours alone told dim 2 sin (#009E73) from dim 3 cos (#CC79A7), grey alike to a deuteranope
    pos = np.arange(0, 20, 0.5)
    pe = np.array([_pe(1, 8)[0] * 0 + np.sin(p) for p in pos])
    fig = viz.pe_curves(pos, pe, dims=[0, 1, 2, 3], marked_positions=[0, 1, 2], marked_labels=list("你喜她"))
    dashes = {t.legendgroup: t.line.dash for t in role_traces(fig, "line")}
    symbols = {t.legendgroup: t.marker.symbol for t in role_traces(fig, "marks")}
    assert dashes == {"0": "solid", "1": "dash", "2": "solid", "3": "dash"}
    assert symbols == {"0": "circle", "1": "diamond", "2": "circle", "3": "diamond"}


def test_embedding_pe_sum_panels_share_one_scale_and_sum_correctly():
    e, p = RNG.normal(size=(2, 3, 6))
    fig = viz.embedding_pe_figure(e, p, labels=list("abc"))
    z = [np.asarray(t.z, float) for t in values_traces(fig)]
    np.testing.assert_allclose(z[2], e + p, rtol=1e-6, atol=1e-6)
    assert {t.coloraxis for t in values_traces(fig)} == {"coloraxis"}
    assert fig.layout.coloraxis.cmin == -fig.layout.coloraxis.cmax


# ---------------------------------------------------------------- heads, one query


def test_heads_grid_has_one_panel_per_head_on_a_shared_unit_scale():
    w = softmax_rows(RNG.normal(size=(6, 4, 4)))
    fig = viz.heads_grid(w, row_labels=list("abcd"), cols=4)
    heats = values_traces(fig)
    assert len(heats) == 6 and {t.coloraxis for t in heats} == {"coloraxis"}
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0.0, 1.0)
    for h, t in enumerate(heats):
        np.testing.assert_allclose(np.asarray(t.z, float), w[h], rtol=1e-6)


def test_the_entropy_overview_spans_one_key_to_uniform():
    n = 8
    e = np.array([[math.log2(n), 0.0]])  # uniform over n keys, one key (model.analysis computes them)
    heat = values_traces(viz.entropy_overview(e, n_keys=n))[0]
    assert heat.zmax == pytest.approx(math.log2(n)) and heat.zmin == 0.0


def test_the_entropy_overview_tops_at_uniform_weights_under_a_look_ahead_mask():
    """Query i may attend keys 0..i: uniform weights over them are the most spread these queries can be, and the
    colour range ends there (log₂ T, 2.32 bits for T = 5, is out of their reach: 1.38 bits)."""
    from model.analysis import mean_attention_entropy

    T = 5
    uniform = np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]  # row i: 1/(i+1) on keys 0..i
    e = mean_attention_entropy(uniform)[None, None]  # (1, 1)
    fig = viz.entropy_overview(e, keys_per_query=np.arange(1, T + 1))
    heat = values_traces(fig)[0]
    assert heat.zmax == pytest.approx(float(e[0, 0])) and heat.zmax < math.log2(T) - 0.9
    assert "each query uniform over the keys it may attend (1 to 5)" in fig.layout.annotations[0].text


def test_query_bars_share_the_score_axis_and_mark_masked_keys():
    s = np.array([2.0, -1.0, 0.5, -np.inf])
    ss = s / 2
    w = softmax_rows(ss[None])[0]
    fig = viz.query_bars(s, ss, w, key_labels=list("abcd"), query_label="0:a")
    assert fig.layout.yaxis.range == fig.layout.yaxis2.range  # scaling shrinks visibly
    assert tuple(fig.layout.yaxis3.range) == (0, 1.05)
    masked = role_traces(fig, "masked_bars")
    assert masked and all(list(t.x) == [3] and list(t.text) == ["−∞"] for t in masked)


def test_context_vector_bars_add_up_to_weights_times_values():
    w = softmax_rows(RNG.normal(size=(1, 4)))[0]
    v = RNG.normal(size=(4, 5))
    fig = viz.context_vector_figure(w, v, key_labels=list("abcd"), query_label="1:b")
    bars = role_traces(fig, "bars")
    assert len(bars) == 4
    np.testing.assert_allclose(sum(np.asarray(b.y, float) for b in bars), w @ v, atol=1e-5)
    np.testing.assert_allclose(np.asarray(role_traces(fig, "total")[0].y, float), w @ v, atol=1e-5)


# ---------------------------------------------------------------- order, translation


def test_order_difference_reference_sets_the_range_and_the_max_is_stated():
    diff = np.full((3, 4), 2e-7)
    fig = viz.order_difference_heatmap(diff, row_labels=list("abc"), reference=3.0)
    heat = values_traces(fig)[0]
    assert (heat.zmin, heat.zmax) == (0.0, 3.0)  # rounding noise stays at the dark end
    assert "max |f(B) − P f(A)| = 2e−07" in header(fig)  # a true minus, as the colour bar writes


def test_a_difference_larger_than_the_reference_widens_the_range_rather_than_being_clipped():
    diff = np.zeros((3, 4))
    diff[1, 2] = 2.54  # e.g. the trained model with PE: differences larger than its outputs
    fig = viz.order_difference_heatmap(diff, row_labels=list("abc"), reference=1.53)
    heat = values_traces(fig)[0]
    assert (heat.zmin, heat.zmax) == (0.0, 2.54)
    assert "max |f(B) − P f(A)| = 2.54 (colour range 0 … 2.54)" in header(fig)


def test_aligned_outputs_share_one_top_and_state_the_max_difference():
    """A and B on one diverging colour axis, |A − B| on a magnitude one from 0 to the same top (its zero dark, as
    the |f(B) − P f(A)| map's: test_views' view 6 colour test)."""
    a = RNG.normal(size=(4, 6))
    perm = [3, 1, 2, 0]
    fig = viz.aligned_outputs_figure(
        a,
        a + 1e-3,
        labels_a=list("你喜欢她"),
        labels_b=list("她喜欢你"),
        positions_b=perm,
    )
    heats = values_traces(fig)
    assert len(heats) == 3 and [t.coloraxis for t in heats] == ["coloraxis", "coloraxis", "coloraxis2"]
    assert fig.layout.coloraxis2.cmin == 0 and fig.layout.coloraxis2.cmax == fig.layout.coloraxis.cmax
    # B's row i is B's token at perm[i], labelled with B's own position: the same piece as A's row i
    assert list(fig.layout.yaxis2.ticktext) == ["3:你", "1:喜", "2:欢", "0:她"]
    assert "max |A − B| = 0.001" in header(fig)


def test_pooled_outputs_state_their_difference():
    fig = viz.pooled_outputs_figure(
        np.ones(4), np.ones(4) + 0.5, name_a="你喜欢她", name_b="她喜欢你"
    )
    assert [t.name for t in fig.data] == ["你喜欢她", "她喜欢你"]
    assert "max |A − B| = 0.5" in header(fig)
    assert "each 她喜欢你 bar is drawn inside its 你喜欢她 bar" in header(fig)  # which bar is whose in the overlay


def test_decoder_self_attention_draws_the_mask_it_is_given():
    """The model's own mask (True = may attend), never one the figure makes up."""
    w = softmax_rows(RNG.normal(size=(3, 3)), causal(3))
    rects = rectangles(
        role_traces(viz.decoder_self_attention_heatmap(w, target_labels=list("abc"), mask=causal(3)), "mask")[0]
    )
    assert covered(rects, 2, 0) and not covered(rects, 0, 2)
    none = viz.decoder_self_attention_heatmap(w, target_labels=list("abc"), mask=None)
    assert not role_traces(none, "mask") or not rectangles(role_traces(none, "mask")[0])


def test_cross_attention_is_target_by_source():
    w = softmax_rows(RNG.normal(size=(2, 5)))
    fig = viz.cross_attention_heatmap(w, target_labels=["我", "她"], source_labels=list("I her"))
    assert np.asarray(values_traces(fig)[0].z).shape == (2, 5)
    assert len(fig.layout.xaxis.ticktext) == 5 and "source" in fig.layout.xaxis.title.text


@pytest.mark.parametrize("theme", list(viz.THEMES))
def test_the_query_bars_panel_titles_fit_one_line_the_room_left_between_panels(theme):
    """The panels leave one line between them for the next one's title: a title wrapped to two lines
    would sit on the axis above (paper theme, 600 px: it did)."""
    n = 8
    s = RNG.normal(size=n) * 4
    fig = viz.query_bars(s, s / 4, softmax_rows(s[None] / 4)[0], key_labels=list("我爱我家你喜欢她"),
                         unscaled_weights=softmax_rows(s[None])[0], theme=theme)
    titles = [a.text for a in fig.layout.annotations if a.name != "notes"]
    assert len(titles) == 3 and not [t for t in titles if "<br" in t], titles  # apply_theme wraps with <br class=…>


@pytest.mark.parametrize("theme", list(viz.THEMES))
def test_the_query_bars_fit_a_slide_and_leave_every_panel_room_for_its_ticks(theme):
    """The slide theme's three panels fit its 16:9 slide (they were laid out 974 px tall: on a 720 px
    projector the weights were below the fold); in every theme each panel's plot is at least five lines
    of the theme's type tall (three y ticks with room between them) and the panels fill the plot area."""
    n = 12
    s = RNG.normal(size=n) * 4
    fig = viz.query_bars(s, s / 4, softmax_rows(s[None] / 4)[0], key_labels=ZH[:n],
                         unscaled_weights=softmax_rows(s[None])[0], theme=theme)
    t = viz.theme.theme_spec(theme)
    if theme == "slide":
        assert fig.layout.height == t["height"] == 720
    plot = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    heights = [plot * (axis.domain[1] - axis.domain[0]) for axis in (fig.layout.yaxis, fig.layout.yaxis2,
                                                                     fig.layout.yaxis3)]
    assert min(heights) >= 5 * t["font_size"], (theme, heights)


@pytest.mark.parametrize("theme", list(viz.THEMES))
def test_the_query_bars_score_panels_keep_their_tick_labels_apart(theme):
    """A look walk: in the slide theme the two score panels (140 px each at 22 px type) carried five tick labels,
    10, 5, 0, −5, −10, nearly touching: plotly.js's own choice puts 5 at least on a linear axis (nticks 0: from
    4 to 9 steps by its length, the step rounded up, so at most that + 2 labels; with nticks n, at most n + 1).
    Every score panel labels no more ticks than fit one per 1.3 lines of the theme's type (tick_budget)."""
    s = np.array([9.5, -3.0, 7.2, -10.1])
    fig = viz.query_bars(s, s / 4, softmax_rows(s[None] / 4)[0], key_labels=list("你喜欢她"),
                         unscaled_weights=softmax_rows(s[None])[0], theme=theme)
    t = viz.theme.theme_spec(theme)
    plot = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    for axis in (fig.layout.yaxis, fig.layout.yaxis2):
        px = plot * (axis.domain[1] - axis.domain[0])
        most = axis.nticks + 1 if axis.nticks else math.floor(min(max(px / 40, 4), 9) + 2)
        assert most * 1.3 * t["font_size"] <= px + 1, (theme, px, axis.nticks)


# ---------------------------------------------------------------- layering


def test_viz_imports_neither_streamlit_nor_torch():
    code = "import sys, viz; print(sorted({'streamlit', 'torch'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_no_viz_module_imports_the_app_side_not_even_inside_a_function():
    """app -> viz, lab -> viz: never back. An import inside a function escapes the test above."""
    import ast

    back = []
    for path in sorted(Path(viz.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            back += [f"{path.name}:{node.lineno} {n}" for n in names
                     if n.split(".")[0] in ("lab", "ui", "app", "model", "streamlit", "torch", "bench")]
    assert back == []


# ---------------------------------------------------------------- layout at export sizes
# Each theme is laid out for its size (viz.theme.design_size): paper 600×480, slide 1280×720,
# the app 700 px wide. Widths below use the same rough text measure as viz (text_width), which
# errs on the wide side; the rendered checks at the end look at real pixels.

ZH = list("我们今天在北京大学的图书馆里认真地学习注意力机制和位置编码") * 3  # 87 pieces


def _lines(text: str) -> list[str]:
    return re.split(r"<br(?:\s[^>]*)?>", text or "")


def _widest(ann) -> float:
    size = ann.font.size
    return max(viz.theme.text_width(line, size) for line in _lines(ann.text))


def _multi_panel_figures(theme: str) -> dict[str, go.Figure]:
    n, d = 10, 64
    x = RNG.normal(size=(n, d))
    w = softmax_rows(RNG.normal(size=(8, n, n)))
    s = RNG.normal(size=n)
    return {
        "embedding_pe": viz.embedding_pe_figure(x, x, labels=ZH[:n], theme=theme),
        "qkv": viz.qkv_figure(x[:, :16], x[:, :16], x[:, :16], row_labels=ZH[:n], theme=theme),
        "aligned": viz.aligned_outputs_figure(
            x, x, labels_a=ZH[:n], labels_b=ZH[:n], positions_b=list(range(n)), theme=theme
        ),
        "heads": viz.heads_grid(w, row_labels=ZH[:n], theme=theme),
        "layers": viz.layers_heads_grid(w.reshape(1, 8, n, n), row_labels=ZH[:n], theme=theme),
        "query": viz.query_bars(s, s / 4, softmax_rows(s[None] / 4)[0], key_labels=ZH[:n],
                                theme=theme),
    }


@pytest.mark.parametrize("theme", viz.THEME_NAMES)
def test_subplot_titles_never_run_into_each_other_or_the_notes(theme):
    plot_w = viz.theme.design_size(theme)[0] * viz.theme.PLOT_FRACTION
    for name, fig in _multi_panel_figures(theme).items():
        titles = [a for a, _ in viz.theme.subplot_titles(fig)]
        assert titles, name
        for a in titles:
            for b in titles:
                if a is not b and a.y == b.y:  # neighbours in one row
                    room = abs(a.x - b.x) * plot_w
                    assert (_widest(a) + _widest(b)) / 2 <= room, (name, a.text, b.text)
        notes = [a for a in fig.layout.annotations if a.name == "notes"]
        top = [a for a in titles if a.y >= 0.98]
        for note in notes:  # the notes sit above the top row's (possibly wrapped) titles
            need = max(1.3 * a.font.size * len(_lines(a.text)) for a in top)
            assert note.yshift >= need, name


def test_embedding_pe_subplot_titles_wrap_one_paper_column_wide():
    e = RNG.normal(size=(4, 64))
    titles = [a.text for a, _ in viz.theme.subplot_titles(
        viz.embedding_pe_figure(e, e, labels=list("你喜欢她"), theme="paper"))]
    assert viz.theme.SOFT_BREAK in titles[1]  # "+ positional encoding" is wider than its panel
    assert [viz.theme.unwrap(t) for t in titles] == [
        "token embedding", "+ positional encoding", "= sum"
    ]
    slide = viz.embedding_pe_figure(e, e, labels=list("你喜欢她"), theme="slide")
    assert all(viz.theme.SOFT_BREAK not in a.text for a, _ in viz.theme.subplot_titles(slide))


@pytest.mark.parametrize("theme", viz.THEME_NAMES)
def test_qkv_names_the_rows_once_unless_keys_differ_from_queries(theme):
    q = RNG.normal(size=(6, 8))
    fig = viz.qkv_figure(q, q, q, row_labels=ZH[:6], theme=theme)
    shown = [fig.layout[k].showticklabels is not False for k in ("yaxis", "yaxis2", "yaxis3")]
    assert shown == [True, False, False]  # K and V rows are the same tokens as Q's
    # Cross-attention: K/V rows are the source tokens, labelled on K with room for them.
    src = ["我", "们", "今天", "在", "北京大学", "的", "图书馆"]
    k = RNG.normal(size=(len(src), 8))
    cross = viz.qkv_figure(q, k, k, row_labels=["[BOS]", "we", "study", "here", "today", "."],
                           col_labels=src, theme=theme)
    shown = [cross.layout[k].showticklabels is not False for k in ("yaxis", "yaxis2", "yaxis3")]
    assert shown == [True, True, False]
    assert list(cross.layout.yaxis2.ticktext) == [f"{i}:{p}" for i, p in enumerate(src)]
    size = viz.THEMES[theme]["font_size"]
    gap = (cross.layout.xaxis2.domain[0] - cross.layout.xaxis.domain[1]) * (
        viz.theme.design_size(theme)[0] * viz.theme.PLOT_FRACTION
    )
    assert gap >= max(viz.theme.text_width(t, size) for t in cross.layout.yaxis2.ticktext)


def test_aligned_outputs_label_b_and_do_not_repeat_a_on_the_difference_panel():
    a = RNG.normal(size=(4, 64))
    fig = viz.aligned_outputs_figure(a, a, labels_a=list("你喜欢她"), labels_b=list("她喜欢你"),
                                     positions_b=[3, 1, 2, 0], theme="paper")
    assert [fig.layout[k].showticklabels is not False for k in ("yaxis", "yaxis2", "yaxis3")] == [
        True, True, False
    ]
    # 64 dimensions: Plotly picks the dimension ticks for the width it is drawn at.
    assert fig.layout.xaxis.tickmode == "auto"


def test_long_titles_wrap_to_the_figure_width_and_stay_escaped():
    title = "Attention <b>weights</b> of layer 3, head 7 over a sentence far too long for one line"
    w = softmax_rows(RNG.normal(size=(4, 4)))
    fig = viz.weights_heatmap(w, row_labels=list("你喜欢她"), title=title, theme="paper")
    text = fig.layout.title.text
    lines = _lines(text)
    size = viz.THEMES["paper"]["title_size"]
    assert len(lines) >= 2 and all(viz.theme.text_width(x, size) <= 600 for x in lines)
    assert "<b>" not in text and viz.theme.unwrap(text) == viz.escape_text(title)
    assert fig.layout.margin.t >= len(lines) * 1.3 * size  # room for every line
    viz.apply_theme(fig, "paper")
    assert fig.layout.title.text == text  # re-applying the theme wraps the same way
    viz.apply_theme(fig, "slide")
    assert len(_lines(fig.layout.title.text)) < len(lines)  # a slide is wider
    short = viz.weights_heatmap(w, row_labels=None, title="Weights", theme="paper")
    assert short.layout.title.text == "Weights"
    zh = viz.weights_heatmap(w, row_labels=None, title="注意力权重" * 12, theme="paper")
    assert len(_lines(zh.layout.title.text)) >= 2  # Chinese breaks between characters
    assert viz.theme.unwrap(zh.layout.title.text) == "注意力权重" * 12


def test_long_notes_wrap_to_the_figure_width():
    n = 300
    fig = viz.weights_heatmap(softmax_rows(RNG.normal(size=(n, n))), row_labels=None,
                              theme="paper")
    note = next(a for a in fig.layout.annotations if a.name == "notes")
    size = note.font.size
    assert all(viz.theme.text_width(x, size) <= 600 for x in _lines(note.text))
    assert "Large input (300×300)" in header(fig)


@pytest.mark.parametrize("theme", viz.THEME_NAMES)
def test_pe_curves_legend_is_horizontal_below_the_plot(theme):
    pos = np.arange(0, 50, 0.5)
    pe = np.tile(np.sin(pos)[:, None], (1, 64))
    fig = viz.pe_curves(pos, pe, dims=[0, 1, 2, 3, 32, 62], marked_positions=[0, 1, 2, 3],
                        marked_labels=list("你喜欢她"), theme=theme)
    legend = fig.layout.legend
    assert legend.orientation == "h" and legend.yanchor == "bottom" and legend.y == 0
    names = [t.name for t in role_traces(fig, "line")]
    size = legend.font.size or viz.THEMES[theme]["font_size"]
    # Two entries (name + 40 px sample) side by side fit the plot area (one paper column).
    width = viz.theme.design_size(theme)[0]
    assert 2 * (max(viz.theme.text_width(x, size) for x in names) + 40) <= width * 0.8


def test_pe_curves_name_crowded_tokens_in_a_note_instead_of_stacking_labels():
    pos = np.arange(0, 50, 0.1)
    pe = np.tile(np.sin(pos)[:, None], (1, 8))
    fig = viz.pe_curves(pos, pe, dims=[0, 1], marked_positions=[0, 1, 2, 3],
                        marked_labels=list("你喜欢她"), theme="paper")
    assert "xaxis2" not in fig.to_plotly_json()["layout"]  # 4 tokens in 50 positions: ~8 px apart
    assert "0:你" in header(fig) and "3:她" in header(fig)
    long = np.arange(0, 200, 0.5)
    many = viz.pe_curves(long, np.tile(np.sin(long)[:, None], (1, 8)), dims=[0],
                         marked_positions=list(range(200)),
                         marked_labels=[ZH[i % len(ZH)] for i in range(200)], theme="paper")
    ticks = list(many.layout.xaxis2.tickvals)
    assert 1 < len(ticks) <= 20 and ticks[1] - ticks[0] >= 5  # every k-th token


@pytest.mark.parametrize("theme", viz.THEME_NAMES)
@pytest.mark.parametrize("n", [13, 40, 73])
@pytest.mark.parametrize("unknown", [False, True])
def test_pe_curves_token_labels_lie_side_by_side_and_never_touch(theme, n, unknown):
    """A researcher's walk: at 40 and 73 tokens Plotly turned the touching top labels 90°, and they ran up into
    the title. They are now never turned, and each keeps its own width of the axis; one wide label ("[UNK]")
    does not thin all the others (a regression walk: 13 tokens kept only the first)."""
    pos = np.arange(0, n, 0.25)
    pe = np.tile(np.sin(pos)[:, None], (1, 8))
    words = list("Attention is all you need, said the paper in 2017, and the field changed. " * 2)[:n]
    if unknown:
        words[6] = "[UNK]"
    fig = viz.pe_curves(pos, pe, dims=[0, 1], marked_positions=list(range(n)), marked_labels=words, theme=theme)
    if "xaxis2" not in fig.to_dict()["layout"]:  # fewer than half of up to 24 fit: every token named in a note
        said = viz.theme.unwrap(header(fig))
        assert n <= 24 and all(f"{i}:{viz.visible_whitespace(w)}" in said for i, w in enumerate(words)), said
        return
    top = fig.layout.xaxis2
    assert top.tickangle == 0
    size = viz.THEMES[theme]["font_size"]
    per = viz.heatmap.panel_px(theme)[0] / (pos.max() - pos.min())
    ticks = list(zip(top.tickvals, top.ticktext, strict=True))
    for (a, ta), (b, tb) in itertools.pairwise(ticks):  # room for each, beside its neighbour
        width = viz.theme.text_width
        assert (b - a) * per >= (width(ta, size) + width(tb, size)) / 2 + 0.5 * size, (ta, tb)
    assert len(ticks) >= min(n, (pos.max() - pos.min()) * per // (6 * size))  # about a label per 6 em at least


@pytest.mark.parametrize("theme", viz.THEME_NAMES)
@pytest.mark.parametrize("heads,tokens", [(4, 10), (8, 30)])
def test_heads_grid_labels_outer_panels_only_and_thins_them_to_fit(theme, heads, tokens):
    w = softmax_rows(RNG.normal(size=(heads, tokens, tokens)))
    fig = viz.heads_grid(w, row_labels=ZH[:tokens], cols=4, theme=theme)
    rows = math.ceil(heads / 4)
    for h in range(heads):
        r, c = divmod(h, 4)
        xa = fig.layout["xaxis" if h == 0 else f"xaxis{h + 1}"]
        ya = fig.layout["yaxis" if h == 0 else f"yaxis{h + 1}"]
        assert (ya.showticklabels is not False) == (c == 0)
        assert (xa.showticklabels is not False) == (r == rows - 1)
        if ya.showticklabels is False:
            assert ya.ticks == ""  # no comb of tick marks on inner panels
    ya = fig.layout.yaxis
    height = min(fig.layout.height, viz.THEMES[theme]["height"] or fig.layout.height)
    panel_h = (height - 100) / rows  # generous: the title and x labels take more than 100 px
    assert len(ya.ticktext) * ya.tickfont.size <= panel_h  # labels cannot overlap
    assert len(ya.ticktext) >= min(tokens, 4)  # ... and some are always there


@pytest.mark.parametrize("theme", viz.THEME_NAMES)
@pytest.mark.parametrize("grid", ["heads", "layers"])
def test_a_grid_of_heads_is_as_tall_for_its_type_as_in_the_default_theme(theme, grid):
    """The grids are laid out for the default theme's 14 px type: a theme of larger type (slide 22 px, paper 18 px)
    gets as much more height, so its panels hold as many of its labels. A look walk: a one-row grid in the slide
    theme kept the default's 330 px, its panels ~70 px tall under 22 px type, its row labels drawn over each other
    and view 7's axis title "decoding step (reads → writes)" cut off at the top."""
    w = softmax_rows(RNG.normal(size=(2, 4, 31, 31)))
    labels = [f"{i}:[UNK]" for i in range(31)]

    def drawn(theme):
        if grid == "heads":
            return viz.heads_grid(w[0], row_labels=labels, theme=theme)
        return viz.layers_heads_grid(w, row_labels=labels, theme=theme)

    size = viz.THEMES[theme]["font_size"]
    default = drawn("default").layout.height
    assert drawn(theme).layout.height >= default * size / viz.THEMES["default"]["font_size"] - 1


@pytest.mark.parametrize("theme", viz.THEME_NAMES)
@pytest.mark.parametrize("grid", ["heads", "layers"])
@pytest.mark.parametrize("layers_heads", [(2, 4), (1, 64), (12, 8)])
def test_a_grid_of_one_or_two_token_matrices_keeps_a_short_matrix_row_height(theme, grid, layers_heads):
    """A look walk (view 4, a one-token sentence): each head's 1 x 1 matrix was a panel ~140 px wide and ~195 px
    tall, one cell, where a single matrix of one row keeps a 3-row matrix's row height (viz.heatmap.shorter_for_rows,
    127 px in all in the default theme, the 7 lines its colour bar needs). A grid of matrices of fewer than 3 rows
    does too: each panel no taller than the single matrix of its tokens, the plot still as tall as its colour bar
    needs and each row two lines of its labels at least. So does a grid of many rows (64 heads, 16 rows of 4; 12
    layers) in a theme of fixed size (paper, slide), drawn far taller than the theme's height: a review found its
    1 x 1 panels 197 px tall (paper) and 241 (slide), as at 3 tokens, where the panel was compared with one laid out
    for the theme's 480 or 720 px."""
    t = viz.theme.theme_spec(theme)

    def panels(tokens):
        w = softmax_rows(RNG.normal(size=(*layers_heads, tokens, tokens)))
        labels = list("你喜欢她")[:tokens]
        fig = (viz.heads_grid(w[0], row_labels=labels, theme=theme) if grid == "heads"
               else viz.layers_heads_grid(w, row_labels=labels, theme=theme))
        layout = fig.layout
        plot = (layout.height or viz.theme.design_size(theme, fig)[1]) - layout.margin.t - layout.margin.b
        spans = [ax["domain"][1] - ax["domain"][0] for name, ax in layout.to_plotly_json().items()
                 if name.startswith("yaxis")]
        return plot, plot * min(spans)

    for tokens in (1, 2):
        plot, panel = panels(tokens)
        single = viz.weights_heatmap(softmax_rows(RNG.normal(size=(tokens, tokens))), row_labels=list("你喜")[:tokens],
                                     theme=theme).layout
        assert panel <= single.height - single.margin.t - single.margin.b + 1, (tokens, panel)
        assert plot >= 7 * 1.3 * t["font_size"] - 1, (tokens, plot)
        assert panel / tokens >= 2 * 1.3 * max(9, t["font_size"] - 3) - 1, (tokens, panel)


@pytest.mark.parametrize("theme", [name for name, t in viz.THEMES.items() if t["height"]])
@pytest.mark.parametrize("grid", ["heads", "layers"])
def test_a_grid_that_labels_every_token_at_its_themes_own_height_is_that_tall(theme, grid):
    """A teacher's walk on a 1280 x 720 projector: lesson step 5's every layer x head (2 rows of 4 heads at 4 tokens)
    was laid out 864 px tall in the slide theme (the default's 550 grown by its type), shown 756 px tall where the
    screen has 660 under Streamlit's header, so the class never saw its title and its bottom row at once, and its
    export was no 1280 x 720 slide. A theme of fixed size keeps a grid at its own height where each panel there still
    holds a label for every query token (and three's room at least): 720 in the slide theme, as its full-screen view
    draws it; with more tokens than that, it grows by its type as before."""
    t = viz.THEMES[theme]
    w = softmax_rows(RNG.normal(size=(2, 4, 4, 4)))
    labels = list("你喜欢她")
    if grid == "heads":  # 8 heads: 2 rows of 4
        fig = viz.heads_grid(w.reshape(8, 4, 4), row_labels=labels, theme=theme)
    else:
        fig = viz.layers_heads_grid(w, row_labels=labels, theme=theme)
    assert fig.layout.height == t["height"], fig.layout.height
    left = [ax for name, ax in fig.layout.to_plotly_json().items()
            if name.startswith("yaxis") and ax.get("ticktext") and ax.get("showticklabels", True)]
    assert len(left) == 2 and all(list(ax["ticktext"]) == ["0:你", "1:喜", "2:欢", "3:她"] for ax in left)  # both rows
    many = softmax_rows(RNG.normal(size=(2, 4, 31, 31)))  # more rows than a panel labels at 720: taller
    assert viz.layers_heads_grid(many, row_labels=[f"{i}:a" for i in range(31)], theme=theme).layout.height > t["height"]


@pytest.mark.parametrize("theme", viz.THEME_NAMES)
@pytest.mark.parametrize("grid", ["heads", "layers"])
def test_a_grid_of_heads_writes_its_token_labels_no_smaller_than_its_themes_notes(theme, grid):
    """A teacher's walk on a 1280 x 720 projector (a slide link: charts shown at ~0.87): the token labels of lesson
    step 5's grids and step 7's every head were drawn 3 px under the slide's 22 px type, 19 px, shown at 16.6 px, the
    smallest text on the screen and under the 18 px the slide's notes and cell values are sized for (21 px laid out).
    A grid's labels are its theme's note size at least (slide 21); the other themes' already were (default 11 = 14 - 3,
    paper 15 over 14)."""
    t = viz.THEMES[theme]
    w = softmax_rows(RNG.normal(size=(2, 4, 4, 4)))
    labels = list("你喜欢她")
    fig = (viz.heads_grid(w[0], row_labels=labels, theme=theme) if grid == "heads"
           else viz.layers_heads_grid(w, row_labels=labels, theme=theme))
    axes = [ax for name, ax in fig.layout.to_plotly_json().items() if name[1:5] == "axis" and ax.get("ticktext")]
    assert axes and all(ax["tickfont"]["size"] >= viz.theme.note_size(t) for ax in axes), theme


def test_layers_grid_names_layers_on_the_left_not_beside_the_colour_bar():
    w = softmax_rows(RNG.normal(size=(2, 8, 20, 20)))
    fig = viz.layers_heads_grid(w, row_labels=ZH[:20], theme="paper")
    assert fig.layout.yaxis.title.text == "layer 0 · query" and fig.layout.yaxis9.title.text == "layer 1 · query"
    assert not [a for a in fig.layout.annotations if a.textangle == 90]


def test_query_bars_thin_key_labels_to_the_width():
    n = 30
    s = RNG.normal(size=n)
    fig = viz.query_bars(s, s / 4, softmax_rows(s[None] / 4)[0], key_labels=ZH[:n], theme="paper")
    axis = fig.layout.xaxis3
    assert 2 <= len(axis.ticktext) < n and len(axis.ticktext) * 18 * 1.3 <= 600 * 0.75
    assert list(axis.tickvals) == list(range(0, n, int(axis.tickvals[1])))
    few = viz.query_bars(s[:6], s[:6], softmax_rows(s[None, :6])[0], key_labels=ZH[:6],
                         theme="paper")
    assert len(few.layout.xaxis3.ticktext) == 6


def test_context_vector_with_many_keys_keeps_the_heaviest_and_sums_the_rest():
    n = 30
    w = softmax_rows(RNG.normal(size=(1, n)) * 2)[0]
    v = RNG.normal(size=(n, 16))
    fig = viz.context_vector_figure(w, v, key_labels=ZH[:n], theme="paper")
    bars = role_traces(fig, "bars")
    assert len(bars) <= 7  # one colour each, no repeats from a 7-colour palette
    assert len({b.marker.color for b in bars}) == len(bars)
    np.testing.assert_allclose(sum(np.asarray(b.y, float) for b in bars), w @ v, atol=1e-5)
    heaviest = np.argsort(-w)[0]
    assert any(b.name.startswith(f"{heaviest}:") for b in bars)
    assert "other keys" in bars[-1].name
    assert tuple(fig.layout.xaxis.range) == (-0.5, 15.5)


def test_cell_text_only_where_it_fits():
    w = softmax_rows(RNG.normal(size=(6, 20, 20)), causal(20))
    grid = viz.heads_grid(w, row_labels=ZH[:20], mask=causal(20), theme="paper")
    assert not role_traces(grid, "mask_text")  # "0" in 10-px cells would be a grey smear
    single = viz.weights_heatmap(w[0, :6, :6], row_labels=ZH[:6], mask=causal(6), theme="paper")
    assert role_traces(single, "mask_text")
    q = RNG.normal(size=(4, 12))  # 12 dims in a third of a column: no room for "−0.00"
    assert not values_traces(viz.qkv_figure(q, q, q, row_labels=ZH[:4], theme="paper"))[
        0
    ].texttemplate


def test_entropy_overview_uses_short_labels_that_stay_level():
    fig = viz.entropy_overview(RNG.uniform(0, 3, size=(6, 8)), n_keys=10, theme="paper")
    assert list(fig.layout.xaxis.ticktext) == [str(h) for h in range(8)]
    assert fig.layout.xaxis.title.text == "head" and fig.layout.yaxis.title.text == "layer"


def test_wrap_text_breaks_between_words_and_cjk_and_never_inside_an_entity():
    text = "PE(m)&#183;PE(n) &lt;depends&gt; only on j &#8722; i 注意力机制和位置编码的原理"
    lines = viz.theme.wrap_text(text, 120, 18)
    assert "".join(lines) == text and len(lines) > 2
    for line in lines:
        assert not re.search(r"&[^;\s]*$", line)  # no entity cut in half
    assert all(viz.theme.text_width(x.rstrip(), 18) <= 120 or " " not in x.strip()
               for x in lines)


def test_wrapping_never_leaves_a_number_alone_at_the_start_of_a_line():
    """A slide title wrapped as "… layer" / "0, head 0": the number belongs to the word before it."""
    text = "Query 0:你: scores and weights over every key — encoder self, layer 0, head 12 (step 3)"
    for width in range(60, 900, 7):
        lines = viz.theme.wrap_text(text, width, 22)
        assert "".join(lines) == text
        for before, line in zip(lines, lines[1:], strict=False):  # a number starts a line only after a
            assert not re.match(r"\d", line) or len(before.split()) == 1, (width, lines)  # lone word
    title = "Query 0:你: scores, scaled scores and weights over every key — encoder self, layer 0, head 0"
    for room in range(900, 1200, 5):  # the slide title (28 px) that read "… layer" / "0, head 0"
        lines = viz.theme.wrap_text(title, room, 28)
        assert len(lines) == 2 and not re.match(r"\d", lines[1]), (room, lines)


# ---------------------------------------------------------------- rendered pixels

needs_browser = pytest.mark.skipif(find_browser() is None, reason="no Chromium for kaleido")


def _pixels(fig: go.Figure, width: int, height: int) -> np.ndarray:
    from PIL import Image

    from viz.export import render

    png = render(fig, "png", width=width, height=height, scale=1)
    return np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=np.int16)


@needs_browser
@pytest.mark.parametrize("theme", ["paper", "paper-sans", "slide"])
def test_rendered_title_is_cut_neither_at_the_right_nor_at_the_top(theme):
    t = viz.THEMES[theme]
    title = ("Scaled dot-product attention weights of layer 3, head 7, for the sentence "
             "我们今天在北京大学的图书馆里学习 (every row sums to one)")
    w = softmax_rows(RNG.normal(size=(5, 5)))
    fig = viz.weights_heatmap(w, row_labels=ZH[:5], title=title, theme=theme)
    img = _pixels(fig, t["width"], t["height"])
    ink = img < 200  # dark text on white
    band = ink[: int(fig.layout.margin.t)]  # the title and notes live in the top margin
    assert band.any()
    assert not band[:, -3:].any()  # nothing runs into the right edge
    assert not ink[:2].any()  # nor off the top


@needs_browser
def test_rendered_embedding_pe_subplot_titles_stay_over_their_own_panels():
    e = RNG.normal(size=(4, 64))
    fig = viz.embedding_pe_figure(e, e, labels=list("你喜欢她"), theme="paper")
    from PIL import Image

    from viz.export import render

    png = render(fig, "png", width=600, height=480, scale=1)
    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    top = int(fig.layout.margin.t)  # the plot area starts here
    painted = (rgb[top + 10] < 253).any(axis=1)  # one pixel row through the three heatmaps
    edges = np.flatnonzero(np.diff(painted.astype(int)))  # where panels start and end
    runs = list(zip(edges[::2] + 1, edges[1::2] + 1, strict=False))
    panels = [r for r in runs if r[1] - r[0] > 40][:3]  # the three panels (not the colour bar)
    assert len(panels) == 3
    band = (rgb[top - 60 : top] < 120).all(axis=2)  # dark title text just above the plot
    for (_, end), (start, _) in zip(panels, panels[1:], strict=False):
        middle = (end + start) // 2
        assert not band[:, middle - 1 : middle + 2].any()  # white between neighbouring titles


def test_multi_panel_figures_stay_under_one_megabyte_at_512_tokens():
    # each panel alone is capped; a grid of many panels must share one figure's budget
    rng = np.random.default_rng(0)
    w = rng.random((6, 8, 512, 512)).astype(np.float32)
    w /= w.sum(-1, keepdims=True)
    labels = [f"t{i}" for i in range(512)]
    grid = viz.layers_heads_grid(w, row_labels=labels, col_labels=labels)
    heads = viz.heads_grid(w[0], row_labels=labels, col_labels=labels)
    e = rng.standard_normal((512, 512))
    emb = viz.embedding_pe_figure(e, e, labels=labels, summed=e)
    for fig in (grid, heads, emb):
        assert len(fig.to_json()) < 1_000_000


@pytest.mark.parametrize("n", [17, 28, 40])
def test_a_matrix_of_up_to_40_tokens_grows_taller_so_that_every_row_is_labelled(n):
    # at the app's 450 px a 28-token matrix labelled every other row: half the sentence was missing
    labels = (ZH * 10)[:n]
    w = softmax_rows(RNG.normal(size=(n, n)))
    qkv = [RNG.normal(size=(n, 8)) for _ in range(3)]
    figs = {
        "scores": viz.scores_heatmap(RNG.normal(size=(n, n)), row_labels=labels),
        "weights": viz.weights_heatmap(w, row_labels=labels),
        "mask": viz.mask_heatmap(np.tril(np.ones((n, n), dtype=bool)), row_labels=labels),
        "qkv": viz.qkv_figure(*qkv, row_labels=labels),
    }
    for name, fig in figs.items():
        assert len(fig.layout.yaxis.ticktext) == n, name
        assert fig.layout.height is None or viz.theme.APP_HEIGHT < fig.layout.height <= 1000, name
    if n >= 28:  # grown, all to about one height (their notes differ)
        heights = [f.layout.height for f in figs.values()]
        assert None not in heights and max(heights) - min(heights) < 120, heights


def test_small_many_row_and_fixed_size_matrices_keep_their_height():
    for n in (4, 16, 41, 64):  # 64: a thinned axis shows at most 16 labels however tall
        fig = viz.scores_heatmap(RNG.normal(size=(n, n)), row_labels=(ZH * 20)[:n])
        assert fig.layout.height is None, n
    paper = viz.scores_heatmap(RNG.normal(size=(28, 28)), row_labels=(ZH * 10)[:28], theme="paper")
    assert paper.layout.height is None  # an export's size is the theme's


def test_a_query_key_matrix_of_one_or_two_rows_is_not_drawn_330_px_tall():
    """A teacher's walk: the decoder's first step, [BOS] reading itself, was one cell 500 x 330 px. In the app's
    themes a weights or scores matrix of one or two rows keeps a 3-row matrix's row height (or its cells'
    width, if narrower); a matrix of values (positions x dimensions) keeps its. So do the themes of a fixed
    size (slide, paper): lesson step 7, in the slide theme, opened on one cell 766 x 315 px (a later walk)."""
    def plot_height(fig) -> float:
        layout = fig.layout
        height = layout.height or viz.theme.design_size("default")[1]
        return height - layout.margin.t - layout.margin.b

    three = plot_height(viz.weights_heatmap(softmax_rows(RNG.normal(size=(3, 3))), row_labels=list("abc")))
    for rows, cols in ((1, 1), (1, 4), (2, 2), (2, 4), (1, 21)):  # 21 narrow keys: room for the colour bar
        w = softmax_rows(RNG.normal(size=(rows, cols)))
        keys = [f"k{i}" for i in range(cols)]
        fig = viz.weights_heatmap(w, row_labels=list("abc")[:rows], col_labels=keys)
        assert fig.layout.height < viz.theme.APP_HEIGHT, (rows, cols)  # shrunk by what its plot sheds
        font = viz.theme.theme_spec("default")["font_size"]  # (margins as laid out, not as estimated: 1.1)
        assert plot_height(fig) <= 1.1 * max(rows * three / 3, 7 * 1.3 * font), (rows, cols)  # 7 lines: the bar
        assert plot_height(fig) >= 0.9 * 7 * 1.3 * font, (rows, cols)
        assert plot_height(fig) / rows >= 2 * 1.3 * viz.theme.theme_spec("default")["font_size"] - 1
        scores = viz.scores_heatmap(RNG.normal(size=(rows, cols)), row_labels=list("abc")[:rows],
                                    col_labels=keys)
        assert scores.layout.height == fig.layout.height
        mask = viz.mask_heatmap(np.ones((rows, cols), bool), row_labels=list("abc")[:rows], col_labels=keys)
        assert plot_height(mask) == pytest.approx(plot_height(fig), rel=0.2)  # about as tall as the scores beside it
        for theme in ("paper", "slide"):
            fixed = viz.weights_heatmap(w, row_labels=list("abc")[:rows], col_labels=keys, theme=theme)
            assert fixed.layout.height < viz.theme.theme_spec(theme)["height"], (theme, rows, cols)
    assert plot_height(viz.pe_heatmap(RNG.normal(size=(2, 16)), labels=["a", "b"])) > three * 0.9  # values: as before


@pytest.mark.parametrize("theme", viz.THEME_NAMES)
@pytest.mark.parametrize("rows", [1, 2])
def test_the_step_figures_of_a_short_matrix_are_as_tall_whatever_their_titles_and_notes(theme, rows):
    """A look walk (view 3, a one-token sentence): the five step matrices are read one under another, each laid out
    short, but "2. Scaled scores ..." wraps to two lines and the mask has notes, and a laid-out height less an
    estimate of the margins left the scaled scores' plot 102 px where the others had 124 (the mask's 138): its one
    row shorter than the row above it, its colour bar ~70 px with five ticks crowded on it. Each step's plot is the
    height its rows want (the margins as laid out), and at least the 7 lines its colour bar needs."""
    n, d_k = rows, 16
    q, k, v = RNG.normal(size=(3, n, d_k))
    scores = q @ k.T
    figs = viz.attention_step_figures(q=q, k=k, v=v, scores=scores, scaled_scores=scores / 4,
                                      weights=softmax_rows(scores / 4), mask=np.ones((n, n), bool),
                                      row_labels=list("你我")[:n], where="encoder self, layer 0, head 0", theme=theme)
    font = viz.THEMES[theme]["font_size"]
    plots = {}
    for key, fig in figs.items():
        if key == "qkv":
            continue
        layout = fig.layout
        assert layout.height, key  # laid out short
        plots[key] = layout.height - layout.margin.t - layout.margin.b
    assert max(plots.values()) - min(plots.values()) <= 1, plots
    assert min(plots.values()) >= 7 * 1.3 * font - 1, plots


def test_a_block_mean_note_says_masked_cells_are_left_out_only_where_some_are():
    """A numbers walk: the raw and scaled scores at 301 tokens, which have no masked cell, said "(masked cells
    left out)"."""
    n = 301
    plain = viz.scores_heatmap(RNG.normal(size=(n, n)), row_labels=None)
    assert "each the mean of a 2×2 block" in header(plain) and "masked cells left out" not in header(plain)
    masked = viz.scores_heatmap(RNG.normal(size=(n, n)), row_labels=None, mask=causal(n))
    assert "each the mean of a 2×2 block (masked cells left out)" in header(masked)


def test_a_weight_in_a_note_is_never_rounded_to_exactly_one_or_zero():
    from viz.labels import num_weight

    assert num_weight(np.float32(0.9999995)) == "0.9999995"  # 3 digits read "1" (a numbers walk)
    assert num_weight(1.0) == "1" and num_weight(0.0) == "0" and num_weight(0.25) == "0.25"
    assert num_weight(4e-7) == "4e−07"
    bars = viz.query_bars(np.array([9.0, -9.0]), np.array([2.25, -2.25]), np.array([0.98901, 0.01099]),
                          key_labels=["a", "b"], query_label="a", unscaled_weights=np.array([1 - 1.5e-8, 1.5e-8]))
    assert "it would be 0.999999985" in header(bars) and "largest weight 0.989; without" in header(bars)


def test_a_tokens_label_is_never_broken_after_its_position_and_few_fitting_labels_become_a_note():
    """The PE curves at 14 tokens in the paper theme labelled 2 tokens on the 0-49 axis; they are named in a note
    instead, and a wrapped note broke "8:丸" after "8:". The chart's script wraps with the same pieces."""
    from viz.theme import wrap_text

    note = "● the sentence's tokens: " + "  ".join(f"{i}:{chr(0x4E00 + 7 * i)}" for i in range(14))
    for width in (150, 230, 400):
        lines = wrap_text(note, width, 18)
        assert "".join(lines) == note and len(lines) > 1
        assert not any(re.search(r"\d:\s*$", line) for line in lines), lines  # "8:" never ends a line
    assert wrap_text("你喜欢她你喜欢她", 40, 18)[0] == "你喜"  # CJK still breaks between characters
    pos = np.arange(0, 50, 0.1)
    table = np.stack([np.sin(pos), np.cos(pos)], axis=1)
    labels = [chr(0x4E00 + 7 * i) for i in range(14)]
    fig = viz.pe_curves(pos, table, dims=[0, 1], marked_positions=list(range(14)), marked_labels=labels,
                        theme="paper")
    assert "xaxis2" not in fig.to_dict()["layout"] and "13:" + labels[13] in header(fig)
    many = viz.pe_curves(pos, table, dims=[0, 1], marked_positions=list(range(40)),
                         marked_labels=[chr(0x4E00 + 7 * i) for i in range(40)], theme="paper")
    assert "xaxis2" in many.to_dict()["layout"]  # 40 tokens: every k-th on the top axis, as before
    script = (Path(__file__).resolve().parents[1] / "ui" / "chart.js").read_text(encoding="utf-8")
    js = re.search(r"const BREAKABLE = /(.*)/gu;", script).group(1)
    assert f'r"{js}"' in Path(viz.theme.__file__).read_text(encoding="utf-8")  # the very same pattern in both


@pytest.mark.parametrize("theme", ["paper", "slide", "default"])
def test_a_short_matrix_is_still_as_tall_as_its_turned_y_title(theme):
    """A regression walk: view 7's first step in the paper theme, one row laid out short, ran its y title
    "decoding step (reads → writes)" off the figure's top (and out of its export)."""
    from viz.translation import STEP_AXIS

    fig = viz.cross_attention_heatmap(np.array([[0.2, 0.8]]), target_labels=["[BOS]"], source_labels=["你", "她"],
                                      step_labels=["[BOS]→you"], row_sums=False, theme=theme)
    layout = fig.layout
    height = layout.height or viz.theme.design_size(theme)[1]
    plot = height - layout.margin.t - layout.margin.b
    title = viz.theme.text_width(STEP_AXIS, viz.THEMES[theme]["font_size"])
    assert (title - plot) / 2 <= layout.margin.t, (title, plot, layout.margin.t)  # its top end inside the figure
    assert (title - plot) / 2 <= layout.margin.b


def test_a_count_agrees_with_its_number_in_one_wording_every_layer_uses():
    """One wording for "N thing(s)" (app.py's model line, lab.export's refusals, ui/look.py's note, the views' titles and
    captions and lab.compute's notices each had their own): 1 is singular, 0 and 2 plural, a consonant and y takes
    -ies, thousands are grouped as the notices group them."""
    from viz.labels import count_of

    for noun, plural in (("head", "heads"), ("layer", "layers"), ("token", "tokens"), ("query", "queries"),
                         ("entry", "entries"), ("key", "keys"), ("query token", "query tokens"),
                         ("whitespace character", "whitespace characters")):
        assert [count_of(n, noun) for n in (0, 1, 2)] == [f"0 {plural}", f"1 {noun}", f"2 {plural}"]
    assert count_of(20_000, "token") == "20,000 tokens" and count_of(np.int64(1), "head") == "1 head"


def test_the_key_to_masked_weights_says_what_they_are_in_one_phrase():
    """A look walk: the key over a masked weights matrix read "▨ grey hatched: masked: weight exactly 0", two colons
    in a row; it says "masked (weight exactly 0)", as the scores' key says "masked (−∞)", over one matrix and a grid."""
    mask = np.tril(np.ones((3, 3), dtype=bool))
    w = softmax_rows(np.where(mask, 0.0, -np.inf))
    for fig in (viz.weights_heatmap(w, row_labels=list("abc"), mask=mask),
                viz.heads_grid(np.stack([w, w]), row_labels=list("abc"), mask=mask)):
        notes = [a.text for a in fig.layout.annotations if a.name == "notes"]
        keys = [line for text in notes for line in text.split("<br>") if "grey hatched" in line]
        assert keys == ["▨ grey hatched: masked (weight exactly 0)"], notes


# ---------------------------------------------------------------- grids of heads: rules a mutation walk planted bugs in


def _grid(theme: str, heads: int, rows: int, keys: int | None = None, grid: str = "heads"):
    """A heads grid of `heads` heads (4 a row), or a layers x heads grid of heads // 4 layers of 4, `rows` query tokens
    over `keys` key tokens (as many as the queries where None)."""
    keys = rows if keys is None else keys
    w = softmax_rows(RNG.normal(size=(heads, rows, keys)))
    q, k = [f"{i}:q" for i in range(rows)], [f"{i}:k" for i in range(keys)]
    if grid == "heads":
        return viz.heads_grid(w, row_labels=q, col_labels=k, theme=theme)
    return viz.layers_heads_grid(w.reshape(heads // 4, 4, rows, keys), row_labels=q, col_labels=k, theme=theme)


def _first_panel(fig, theme: str) -> tuple[float, float]:
    """The top-left panel's (width, height) in px as drawn: the figure's size less its margins, times its domains."""
    layout = fig.layout
    width, height = viz.theme.design_size(theme, fig)
    plot_w, plot_h = width - layout.margin.l - layout.margin.r, height - layout.margin.t - layout.margin.b
    return (plot_w * (layout.xaxis.domain[1] - layout.xaxis.domain[0]),
            plot_h * (layout.yaxis.domain[1] - layout.yaxis.domain[0]))


@pytest.mark.parametrize("theme", viz.THEME_NAMES)
@pytest.mark.parametrize("grid", ["heads", "layers"])
def test_a_grid_grown_for_its_type_labels_every_token_its_drawn_panels_hold(theme, grid):
    """A mutation walk: a grid of heads in a theme of fixed size grows by its type past the theme's height where a
    panel there cannot label every query token (paper 480 -> 707 px at 9 tokens, slide 720 -> 864 at 10), so that its
    panels hold as many labels as the default theme's do; but it thinned its labels to what a panel of the theme's own
    height holds: 9 tokens in the paper theme's 266 px panels were labelled 0, 2, 4, 6, 8, where all nine fit (the
    default theme labels 12 in 185 px). Where a panel as drawn holds every token, one per 1.3 lines of the labels' type
    (less 5%: the panel is laid out before its margins are known), every token is labelled."""
    for tokens in (9, 10, 12):
        fig = _grid(theme, 8, tokens, grid=grid)
        _, panel = _first_panel(fig, theme)
        size = fig.layout.yaxis.tickfont.size
        if tokens * 1.3 * size <= 0.95 * panel:
            assert len(fig.layout.yaxis.ticktext) == tokens, (tokens, panel, list(fig.layout.yaxis.ticktext))


@pytest.mark.parametrize("theme", [name for name, t in viz.THEMES.items() if t["height"]])
@pytest.mark.parametrize("keys", [None, 30])
def test_a_fixed_size_grid_keeps_its_height_exactly_where_a_panel_there_labels_every_query_token(theme, keys):
    """The rule lesson step 5's slide grid keeps 720 px by (dd87b47), at its edge: a grid of heads in a theme of fixed
    size keeps the theme's height where a panel laid out at that height labels every query token (and three's room at
    least) in the grid's own tick type, which is not the theme's text type (slide 21 px, not 22; paper 15, not 18), and
    grows by its type where it would not. The queries are the rows: a cross-attention grid of 4 target tokens over 30
    source tokens (view 7's) keeps its height as one of 4 over 4 does."""
    t = viz.THEMES[theme]
    for tokens in range(3, 14):
        fig = _grid(theme, 8, tokens, keys)
        size = fig.layout.yaxis.tickfont.size
        holds = viz.heatmap.tick_budget(viz.heatmap.panel_px(theme, rows=2, cols=4, height=t["height"])[1], size)
        assert (fig.layout.height == t["height"]) == (tokens <= holds), (tokens, holds, fig.layout.height)
        if tokens <= holds:
            assert len(fig.layout.yaxis.ticktext) == tokens


@pytest.mark.parametrize("theme", viz.THEME_NAMES)
@pytest.mark.parametrize("grid", ["heads", "layers"])
def test_a_grid_of_three_tokens_is_laid_out_as_one_of_four_not_short(theme, grid):
    """The short rule (a panel no taller than its cells are wide, viz.heatmap.short_row_px) is for matrices of fewer than
    3 rows, a one- or two-token sentence: a grid of 3-token matrices is as tall as one of 4, its panels no shorter, as a
    single 3 x 40 matrix is as tall as a 4 x 40 one (a decoding step's cross-attention over 40 source tokens: its third
    row is not shrunk to 40 narrow cells' width)."""
    three, four = _grid(theme, 8, 3, grid=grid), _grid(theme, 8, 4, grid=grid)
    assert three.layout.height == four.layout.height
    assert _first_panel(three, theme)[1] >= _first_panel(four, theme)[1] - 1  # (its margins may differ: not shorter)
    keys = [f"k{i}" for i in range(40)]
    heights = [viz.weights_heatmap(softmax_rows(RNG.normal(size=(n, 40))), row_labels=list("abcd")[:n], col_labels=keys,
                                   theme=theme).layout.height for n in (3, 4)]
    assert heights[0] == heights[1], heights


@pytest.mark.parametrize("theme", viz.THEME_NAMES)
@pytest.mark.parametrize("queries", [1, 2])
def test_a_short_grid_of_many_keys_keeps_its_rows_no_taller_than_its_cells_are_wide(theme, queries):
    """View 7's cross-attention heads at the first decoding steps: 1 or 2 target tokens over 12 source tokens, 32 heads
    (8 rows of 4). Each panel's rows are no taller than its cells are wide (the keys are the columns), nor than two lines
    of the grid's tick labels where those are taller; and the plot, not each panel, is as tall as its colour bar needs
    (7 lines of the theme's type): 8 rows of panels need not each be 7 lines tall. (10% for a panel laid out before its
    margins are known.)"""
    t = viz.THEMES[theme]
    fig = _grid(theme, 32, queries, 12)
    width, height = _first_panel(fig, theme)
    size = fig.layout.yaxis.tickfont.size
    row = max(width / 12, 2 * 1.3 * size)
    assert height <= 1.1 * max(queries * row, 7 * 1.3 * t["font_size"] / 8), (height, width / 12, size)
    assert height >= queries * 2 * 1.3 * size - 1  # each row holds its label


def test_an_exact_zero_in_a_note_is_written_0_as_the_other_notes_write_it():
    """A words walk: view 5's context vector of the decoder's first query (one key, weight 1) said "model output vs
    Σ wⱼvⱼ: max difference 0.0e+00", where view 6 writes the same exact agreement "max |A − B| = 0"; an exact 0 is
    "0" in any format, a nonzero difference as before ("7.7e−08")."""
    from viz.labels import num

    assert num(0.0, ".1e") == num(-0.0, ".1e") == num(0.0) == "0"
    assert num(7.7e-08, ".1e") == "7.7e−08" and num(0.0, ".2f") == "0.00"
    fig = viz.context_vector_figure(np.array([1.0]), np.array([[0.5, -2.0]]), key_labels=["0:[BOS]"],
                                    context=np.array([0.5, -2.0]))
    said = " ".join(a.text for a in fig.layout.annotations)
    assert "max difference 0" in said and "e+00" not in said, said


def test_a_large_number_in_a_note_is_written_in_digits_not_e_notation():
    """A numbers walk: view 5 at d_model 512 (1 head, d_k 512) said "This head's raw scores have variance 1.23e+03",
    an e-notation with an ASCII plus a student reads as something other than the 1,230 it is, where the notes write
    small numbers "7.7e−08" and counts "20,000 tokens". A value num's significant digits would write with e+ is
    written as the whole number they round it to, grouped as counts are; small ones as before."""
    from viz.labels import num

    assert num(1234.5) == "1,230" and num(10_600.0) == "10,600" and num(-2149.6) == "−2,150"
    assert num(999.6) == "1,000" and num(123.4) == "123" and num(3.58e-07) == "3.58e−07"
    assert num(61_234.0, ".2g") == "61,000" and num(1234.5, ".6g") == "1234.5"
    assert num(1234.5, ".1e") == "1.2e+03"  # e notation asked for by name stays


@pytest.mark.parametrize("spec", [".3g", ".2g", ".4g"])
def test_a_large_number_of_any_size_is_its_rounded_digits_grouped_and_its_negative_the_same_with_a_minus(spec):
    """num's rule for a value a "g" spec writes with e+: the digits it rounds to, grouped in threes as counts are, at
    every size a note may meet (a variance of 10⁵ or 10¹¹ as of 10³), and a negative value the same digits after a true
    minus: −x reads as x does."""
    from viz.labels import num

    for x in (123_456.0, 9_876_543.0, 3.3e11, 4.44e13):
        assert "e+" in format(x, spec)  # a value the rule is for
        text = num(x, spec)
        assert re.fullmatch(r"[1-9]\d{0,2}(,\d{3})*", text), (x, spec, text)
        assert float(text.replace(",", "")) == float(format(x, spec))  # its significant digits, the rest zeros
        assert num(-x, spec) == f"−{text}", (x, spec)
    for x in (2.5e20, 7.0e-9, 0.5, 1234.5):  # any size a note may hold, in whatever form it takes
        assert num(-x, spec) == f"−{num(x, spec)}", (x, spec)


def test_the_context_bars_hover_names_each_keys_weight_w_and_value_v_whose_product_is_the_bar():
    """View 5's w × v bars: the hover of key j's bar at dimension d says "w = wⱼ × v = vⱼ[d] = the bar": w its
    weight (the same on every dimension), v its value vector's dimension d, not one named for the other."""
    w = np.array([0.7, 0.2, 0.1])
    v = np.array([[1.5, -2.0, 3.0], [4.0, 0.5, -1.0], [-3.0, 2.5, 0.25]])
    fig = viz.context_vector_figure(w, v, key_labels=list("abc"))
    bars = [t for t in fig.data if (t.meta or {}).get("role") == "bars" and "keys" not in t.meta]
    assert bars
    for trace in bars:
        j = "abc".index(re.search(r"key (?:\d+:)?(\w)", trace.hovertemplate)[1])
        named = dict(re.findall(r"(\w) = %\{customdata\[(\d)\]", trace.hovertemplate))
        data = np.asarray(trace.customdata, dtype=float)
        np.testing.assert_allclose(data[:, int(named["w"])], w[j], rtol=1e-6)
        np.testing.assert_allclose(data[:, int(named["v"])], v[j], rtol=1e-6)
        np.testing.assert_allclose(np.asarray(trace.y, dtype=float), w[j] * v[j], rtol=1e-6)
