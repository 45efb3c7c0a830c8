"""viz.attention_lines: attention as lines (queries left, keys right). Every line is one softmax weight,
in the opacity band of that weight; a weight of exactly 0 (a masked key) has no line; long inputs keep
each query's strongest keys; the coloured query's lines and hover values are its own weights."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import plotly.colors
import pytest

import viz
from lab.compute import load_model
from lab.spec import FigureSpec
from lab.views import Models, build_view, head_arrays, record
from viz.attention import LINE_BANDS, LINES_ALL_UP_TO, LINES_TOP
from viz.theme import THEMES


def softmax_rows(rng, n_q, n_k, mask=None):
    s = rng.normal(size=(n_q, n_k)) * 2
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def drawn(fig, role: str) -> dict[tuple[int, int], tuple[int, str, float]]:
    """{(query, key): (band, colour, width)} of every line segment of the traces with `role`, read back
    from the coordinates (queries at x=0, keys at x=1, tokens spread over y in [0, 1])."""
    out = {}
    for t in fig.data:
        if (t.meta or {}).get("role") != role:
            continue
        x, y = list(t.x), list(t.y)
        assert len(x) % 3 == 0
        for s in range(0, len(x), 3):
            assert x[s:s + 3] == [0.0, 1.0, None] and y[s + 2] is None
            pair = (y[s], y[s + 1])
            assert pair not in out, "a pair drawn twice"
            out[pair] = (t.meta["band"], t.line.color, t.line.width)
    return out


def notes(fig) -> str:
    """The note lines apply_theme puts under the title (a "notes" annotation)."""
    return " ".join(a.text for a in fig.layout.annotations or () if a.name == "notes")


def index(pos: float, n: int) -> int:
    return 0 if n == 1 else int(round(pos * (n - 1)))


def as_pairs(lines, n_q, n_k):
    return {(index(a, n_q), index(b, n_k)): v for (a, b), v in lines.items()}


def alpha(colour: str) -> float:
    return float(re.fullmatch(r"rgba\(\d+,\d+,\d+,([0-9.]+)\)", colour).group(1))


@pytest.mark.parametrize("n_q, n_k", [(5, 7), (4, 4), (1, 3)])  # cross attention too (Tq != Tk)
def test_every_nonzero_weight_is_one_line_in_its_band_and_masked_keys_have_none(n_q, n_k):
    rng = np.random.default_rng(n_q * 10 + n_k)
    mask = np.tril(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q)  # a causal-style mask, every row keeps a key
    W = softmax_rows(rng, n_q, n_k, mask)
    fig = viz.attention_lines(W, query_labels=[f"q{i}" for i in range(n_q)],
                              key_labels=[f"k{j}" for j in range(n_k)], mask=mask)
    lines = as_pairs(drawn(fig, "lines"), n_q, n_k)
    assert set(lines) == {(i, j) for i in range(n_q) for j in range(n_k) if W[i, j] > 0}
    assert not any(not mask[i, j] for i, j in lines)  # masked: weight exactly 0, no line
    for (i, j), (band, colour, _) in lines.items():
        assert band == min(int(W[i, j] * LINE_BANDS), LINE_BANDS - 1)
        assert alpha(colour) == pytest.approx((band + 0.5) / LINE_BANDS, abs=1e-3)  # heavier = more opaque
    assert ("no line" in notes(fig)) == (not mask.all())  # the figure says masked keys draw nothing
    unmasked = viz.attention_lines(W, query_labels=None, key_labels=None)  # the zeros alone draw no line
    assert as_pairs(drawn(unmasked, "lines"), n_q, n_k) == lines


def test_the_chosen_querys_lines_are_its_own_weights_in_colour_and_on_hover():
    rng = np.random.default_rng(1)
    W = softmax_rows(rng, 6, 6)
    q = 2
    fig = viz.attention_lines(W, query_labels=list("abcdef"), key_labels=list("abcdef"), query=q)
    background = as_pairs(drawn(fig, "lines"), 6, 6)
    coloured = as_pairs(drawn(fig, "query-lines"), 6, 6)
    assert {i for i, _ in coloured} == {q} and {j for _, j in coloured} == set(range(6))
    assert not any(i == q for i, _ in background)  # drawn once, on top
    widths = {j: width for (_, j), (_, _, width) in coloured.items()}
    order = np.argsort(W[q])
    assert all(widths[a] <= widths[b] for a, b in zip(order, order[1:], strict=False))  # wider = heavier
    (keys,) = [t for t in fig.data if t.meta["role"] == "query-keys"]
    np.testing.assert_allclose(np.asarray(keys.customdata), W[q], rtol=1e-6)
    assert list(keys.text) == [f"2:c → {k}" for k in fig.layout.yaxis2.ticktext]


def test_a_vanishing_weight_of_the_chosen_query_draws_no_line_and_small_weights_still_differ():
    """A researcher's walk: a weight of 1e-10 drew a line as plain as 0.099's (one opacity band for (0, 0.1)),
    and at 73 keys, where every weight is small, 0.02 and 0.097 looked the same. The chosen query's lines now
    go by weight over its largest, and none under 1% of that."""
    W = np.array([[0.9, 0.0999999999, 1e-10, 1e-12 + 1e-10]])  # one query, four keys (rows need not sum to 1 here)
    fig = viz.attention_lines(W, query_labels=["q"], key_labels=list("abcd"), query=0)
    coloured = as_pairs(drawn(fig, "query-lines"), 1, 4)
    assert set(coloured) == {(0, 0), (0, 1)}  # the 1e-10 weights: no line
    assert "2 of its weights under 1% of that: no line" in notes(fig)
    (keys,) = [t for t in fig.data if t.meta["role"] == "query-keys"]
    np.testing.assert_allclose(np.asarray(keys.customdata), W[0], rtol=1e-6)  # every weight still on hover
    n = 73  # the strongest keys drawn, all small: 0.02 .. 0.097, the rest ~0.008 each
    top = np.linspace(0.02, 0.097, LINES_TOP)
    row = np.full(n, (1 - top.sum()) / (n - LINES_TOP))
    row[:LINES_TOP] = top
    W = np.tile(row, (2, 1))
    fig = viz.attention_lines(W, query_labels=None, key_labels=None, query=0)
    coloured = as_pairs(drawn(fig, "query-lines"), 2, n)
    assert {j for _, j in coloured} == set(range(LINES_TOP))
    first, last = coloured[(0, 0)], coloured[(0, LINES_TOP - 1)]
    assert alpha(first[1]) < alpha(last[1]) - 0.3 and first[2] < last[2]  # lighter and thinner, clearly
    # a regression walk: 1.1% and 9% of the largest drew one line (ten steps); now in steps of 5%
    W = np.array([[1.0, 0.09, 0.011, 0.5]])
    coloured = as_pairs(drawn(viz.attention_lines(W, query_labels=["q"], key_labels=list("abcd"), query=0),
                              "query-lines"), 1, 4)
    assert alpha(coloured[(0, 2)][1]) < alpha(coloured[(0, 1)][1]) < alpha(coloured[(0, 3)][1])


@pytest.mark.parametrize("theme", ["default", "dark", "slide"])
def test_the_chosen_querys_lines_stand_out_from_every_other_line(theme):
    """Even its lightest line is more opaque than the heaviest line of another query: on a dark page
    the others' near-white lines at full weight outshone the chosen colour."""
    W = np.full((4, 4), 0.02)
    W[1:, 0] = 0.94  # the other queries put nearly all their weight on one key
    W[0] = [0.25, 0.25, 0.25, 0.25]  # the chosen one spreads evenly: every line light
    fig = viz.attention_lines(W, query_labels=list("abcd"), key_labels=list("abcd"), query=0, theme=theme)
    others = [alpha(c) for _, c, _ in drawn(fig, "lines").values()]
    chosen = [alpha(c) for _, c, _ in drawn(fig, "query-lines").values()]
    assert len(chosen) == 4 and max(others) < min(chosen)
    alone = viz.attention_lines(W, query_labels=list("abcd"), key_labels=list("abcd"), theme=theme)
    assert max(alpha(c) for _, c, _ in drawn(alone, "lines").values()) > 0.9  # no query chosen: full range


def test_long_inputs_keep_each_querys_strongest_keys():
    n = LINES_ALL_UP_TO + 24
    rng = np.random.default_rng(2)
    W = softmax_rows(rng, n, n)
    fig = viz.attention_lines(W, query_labels=None, key_labels=None, query=0)
    lines = as_pairs(drawn(fig, "lines"), n, n) | as_pairs(drawn(fig, "query-lines"), n, n)
    for i in range(n):
        keys = {j for r, j in lines if r == i}
        assert keys == set(np.argsort(-W[i])[:LINES_TOP]), i
    assert f"{LINES_TOP} strongest of {n} keys" in notes(fig)


def test_equal_weights_keep_the_lowest_key_indices_like_a_stable_sort():
    """Uniform rows and coarse weights tie at the LINES_TOP-th place: the earlier keys are kept, each
    query keeps exactly LINES_TOP keys (or all its non-zero ones), and zeros are never drawn."""
    n = LINES_ALL_UP_TO + 14
    rng = np.random.default_rng(3)
    W = rng.integers(0, 4, size=(n, n)) / 4.0  # many ties, some zeros
    W[0] = 1.0 / n  # a uniform row
    W[1, :] = 0.0
    W[1, 5:7] = 0.5  # only two live keys
    fig = viz.attention_lines(W, query_labels=None, key_labels=None)
    lines = as_pairs(drawn(fig, "lines"), n, n)
    for i in range(n):
        live = np.flatnonzero(W[i] > 0)
        expected = live[np.argsort(-W[i, live], kind="stable")[:LINES_TOP]]  # ties: lower index first
        assert {j for r, j in lines if r == i} == set(expected.tolist()), i
    assert {j for r, j in lines if r == 0} == set(range(LINES_TOP))
    assert {j for r, j in lines if r == 1} == {5, 6}


def test_repeated_tokens_keep_a_label_each_and_the_dark_theme_draws_light_lines():
    W = np.full((4, 4), 0.25)
    fig = viz.attention_lines(W, query_labels=["I", " ", "I", "I"], key_labels=["I", " ", "I", "I"],
                              theme="dark")
    assert len(set(fig.layout.yaxis.ticktext)) == 4 and len(set(fig.layout.yaxis2.ticktext)) == 4
    (trace,) = [t for t in fig.data if t.meta["role"] == "lines"]
    text = plotly.colors.hex_to_rgb(THEMES["dark"]["font_color"])  # the dark theme's text colour, not black
    assert trace.line.color.startswith("rgba({},{},{},".format(*text))
    assert min(text) > 200  # light: visible on the dark background


def test_the_query_views_lines_are_the_models_weights():
    spec = FigureSpec(sentence_a="我爱我家", sentence_b="我家爱我", d_model=16, n_heads=2, n_layers=2, d_ff=32,
                      views=("query",), query=1, head=1, layer=1)
    models = Models(load_model)
    result = build_view("query", spec, models)
    p = {panel.key: panel for panel in result.panels}
    run = models.run(spec)
    a = head_arrays(record(run.trace, spec.block, 1), 0, 1)
    np.testing.assert_allclose(p["query-lines"].table.to_numpy(), a["weights"], rtol=1e-6)
    fig = p["query-lines"].figure
    (keys,) = [t for t in fig.data if t.meta["role"] == "query-keys"]
    np.testing.assert_allclose(np.asarray(keys.customdata), p["query-bars"].table["weight"], rtol=1e-6)
    lines = as_pairs(drawn(fig, "lines"), 4, 4) | as_pairs(drawn(fig, "query-lines"), 4, 4)
    assert set(lines) == {(i, j) for i in range(4) for j in range(4) if a["weights"][i, j] > 0}
    causal = dataclasses.replace(spec, block="decoder self")  # [BOS] + tokens: a look-ahead mask
    fig = {panel.key: panel for panel in build_view("query", causal, models).panels}["query-lines"].figure
    n = len(fig.layout.yaxis.ticktext)
    lines = as_pairs(drawn(fig, "lines"), n, n) | as_pairs(drawn(fig, "query-lines"), n, n)
    assert lines and all(j <= i for i, j in lines)  # no line to a future token


def test_slide_type_gets_a_taller_chart_so_that_the_lines_keep_their_spread():
    # at 360 px a slide (22 px type, the figure shown at about 0.64 on a laptop) drew 4 tokens in ~130 px
    W = np.full((4, 4), 0.25)
    heights = {theme: viz.attention_lines(W, query_labels=list("abcd"), key_labels=list("abcd"), theme=theme)
               .layout.height for theme in ("default", "paper", "slide")}
    assert heights["default"] == 360
    size = viz.THEMES["slide"]["font_size"]
    assert heights["slide"] >= 360 * size / 14 - 1 and heights["slide"] > heights["default"]
    many = viz.attention_lines(np.full((60, 60), 1 / 60), query_labels=None, key_labels=None, theme="slide")
    assert many.layout.height <= 900


def test_the_query_views_caption_says_how_opaque_the_other_querys_lines_are():
    """A numbers walk: the caption said each line was "as opaque as its weight", and the others' were drawn at half
    that once a query is chosen (which the app always does). The caption and the drawing agree."""
    models = Models(load_model)
    spec = FigureSpec(sentence_a="the cat sat on the mat", d_model=32, n_heads=4, n_layers=2, d_ff=64, query=2)
    panel = {p.key: p for p in build_view("query", spec, models).panels}["query-lines"]
    assert "every other query's line half as opaque as its weight" in panel.caption
    W = panel.table.to_numpy()
    lines = as_pairs(drawn(panel.figure, "lines"), *W.shape)
    assert lines and all(i != 2 for i, _ in lines)
    for (i, j), (band, colour, _) in lines.items():
        assert band == min(int(W[i, j] * LINE_BANDS), LINE_BANDS - 1)
        assert alpha(colour) == pytest.approx(0.5 * (band + 0.5) / LINE_BANDS, abs=1e-3)
