"""View 4's "every layer x every head" grid with as many heads as the sidebar offers (64): its column titles, key
labels and axis titles keep clear of each other (a bad-input walk: 32 heads drew "headheadhead" over the grid and
"keykeykey" under it, 64 heads an unreadable band of labels)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import viz
from viz.theme import design_size, text_width


def layout(n_heads: int, theme: str, n_layers: int = 2) -> dict:
    rng = np.random.default_rng(0)
    weights = rng.dirichlet(np.ones(4), size=(n_layers, n_heads, 4))
    return viz.layers_heads_grid(weights, row_labels=list("你喜欢她"), theme=theme).to_plotly_json()["layout"]


def plot_width(lay: dict, theme: str) -> float:
    margin = lay.get("margin", {})
    return (lay.get("width") or design_size(theme)[0]) - margin.get("l", 0) - margin.get("r", 0)


def lines(text: str) -> list[str]:
    return [s for s in re.split(r"<br[^>]*>", text) if s.strip()]


@pytest.mark.parametrize("theme", ["default", "paper", "slide"])
@pytest.mark.parametrize("n_heads", [4, 16, 32, 64])
def test_a_row_of_many_heads_keeps_its_titles_and_key_labels_apart(n_heads, theme):
    lay = layout(n_heads, theme)
    plot = plot_width(lay, theme)
    size = lay.get("font", {}).get("size", 12)
    axes = {k: v for k, v in lay.items() if re.fullmatch(r"xaxis\d*", k)}
    columns = [a for a in lay.get("annotations", []) if a.get("name") != "notes" and a.get("y", 0) >= 0.98
               and a.get("xanchor") == "center" and a.get("xref") == "paper"]
    shown = [(a["x"] * plot, max(text_width(s, a.get("font", {}).get("size", size)) for s in lines(a["text"])))
             for a in columns if a.get("text")]
    assert shown and shown[0][0] < plot / n_heads  # the first column is named
    for (x0, w0), (x1, w1) in zip(shown, shown[1:], strict=False):
        assert x1 - x0 >= (w0 + w1) / 2 + 2, f"column titles run together: {[a['text'] for a in columns][:6]}"
    bottom = [ax for ax in axes.values() if ax.get("showticklabels") is not False and ax.get("tickvals")]
    for ax in bottom:  # key labels are turned 90°: each takes 1.3 lines of its font across the panel
        d0, d1 = ax["domain"]
        tick = ax.get("tickfont", {}).get("size", size)
        assert len(ax["tickvals"]) * 1.3 * tick <= (d1 - d0) * plot + 1, "key labels run together"
        if len(ax["tickvals"]) == 1:  # plotly.js turns only crowded labels: one alone lies across the next panel
            assert ax.get("tickangle") == 90 or text_width(ax["ticktext"][0], tick) <= (d1 - d0) * plot
    titled = sorted((ax["domain"], ax["title"]["text"]) for ax in axes.values() if (ax.get("title") or {}).get("text"))
    assert titled, "no axis says the columns are keys"
    for (d0, d1), text in titled if len(titled) > 1 else ():  # each over its own panel (a narrower window: the
        assert text_width(text, size) + 4 <= (d1 - d0) * plot, "key titles run together"  # gaps shrink too)
    for (a, text_a), (b, text_b) in zip(titled, titled[1:], strict=False):
        gap = ((b[0] + b[1]) - (a[0] + a[1])) / 2 * plot
        assert gap >= (text_width(text_a, size) + text_width(text_b, size)) / 2 + 2, "key titles run together"
    if n_heads == 4:  # few heads: every column and key as before
        assert [a["text"].replace('<br class="wrap">', "") for a in columns[:4]] == [f"head {h}" for h in range(4)]
        assert len(titled) == 4 and all(len(ax["tickvals"]) == 4 for ax in bottom)


def test_where_the_key_labels_are_left_out_the_figure_says_so():
    lay = layout(64, "default")
    assert not any(ax.get("showticklabels") is not False and ax.get("tickvals")
                   for k, ax in lay.items() if re.fullmatch(r"xaxis\d*", k))
    said = " ".join(a.get("text", "") for a in lay.get("annotations", [])) + lay["title"]["text"]
    assert "key labels left out" in said and "hover a cell" in said


@pytest.mark.parametrize("n_heads", [4, 16])
def test_the_panels_of_a_grid_share_their_ticks_made_once_each_axis_its_own_lists(monkeypatch, n_heads):
    """Every panel of a grid of heads shows the same tokens: their ticks are made once a figure (each panel made them
    again, twice a panel: the heads view's figures took longer than the forward that feeds them, issue #6), and
    each axis still holds lists of its own, as if made for it alone (an edit of one axis's leaves the others')."""
    import viz.heatmap
    from viz.fig import _pending

    made = []
    real = viz.heatmap.axis_ticks
    monkeypatch.setattr(viz.heatmap, "axis_ticks", lambda *a, **k: made.append(a) or real(*a, **k))
    fig = viz.layers_heads_grid(np.random.default_rng(1).dirichlet(np.ones(6), size=(2, n_heads, 6)),
                                row_labels=list("你喜欢她我有"))
    assert len(made) == 2  # the x axis's and the y axis's, for all 2 x n_heads panels
    lay = _pending(fig)["layout"]  # the figure's own dict, as built (to_plotly_json hands out copies)
    for letter in "xy":
        axes = [v for k, v in lay.items() if re.fullmatch(rf"{letter}axis\d*", k)]
        assert len(axes) == 2 * n_heads
        for key in ("tickvals", "ticktext", "range"):
            lists = [ax[key] for ax in axes]
            assert len({id(v) for v in lists}) == len(lists), (letter, key)  # no list shared by two axes
            full = max(lists, key=len)
            assert all(v == full[:len(v)] and len(v) >= len(full) - 1 for v in lists), (letter, key)
