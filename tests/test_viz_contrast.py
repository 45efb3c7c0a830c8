"""Lines, marks and bars stand out from the plot (WCAG 2.1 SC 1.4.11, 3:1) in every theme, in colours as far apart
as Okabe-Ito's, colour-blind vision included. Heatmap cells are out of scope: their colour scales carry a value,
and each cell's number is on hover and in the table."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re

import numpy as np
import plotly.colors as pc
import pytest

import viz
from lab.compute import load_model
from lab.spec import FigureSpec
from lab.views import Models, build_view
from tests.conftest import trained_available
from viz.theme import QUALITATIVE, THEMES, relative_luminance

NON_TEXT = 3.0  # WCAG 2.1 SC 1.4.11: graphical objects against what is next to them
# The clock's unit circle (view 2) is a guide drawn in the grid's colour, as faint as the gridlines and for the
# same reason: the hands and their marks, which are checked, carry the positions.
GUIDES = {"circle"}
# 14 tokens, query 6 under the look-ahead mask: seven keys with a weight, so that the context vector draws all seven
# palette colours, and seven masked keys (view 5's masked bars); query 13 has 14 keys: six colours and a grey bar for
# the other eight.
SPEC = FigureSpec(d_model=32, n_heads=4, n_layers=2, d_ff=64, sentence_a="我喜欢她你喜欢他她喜欢我们吗",
                  sentence_b="她们喜欢你", mask="look-ahead", query=6)
VIEWS = ("positional", "attention", "heads", "query", "order", "translate")


@pytest.fixture(scope="module")
def models():
    return Models(functools.lru_cache(maxsize=None)(load_model))


def rgba(colour: str) -> tuple[tuple[float, float, float], float]:
    """A Plotly colour string ("#E69F00", "#fff", "rgb(...)", "rgba(...)") as ((r, g, b) 0-255, alpha)."""
    colour = colour.strip().lower()
    if colour.startswith("#"):
        digits = colour[1:] if len(colour) == 7 else "".join(c * 2 for c in colour[1:4])
        return pc.hex_to_rgb("#" + digits), 1.0
    match = re.fullmatch(r"rgba?\(([^)]*)\)", colour)
    assert match, f"a colour this test cannot read: {colour}"
    parts = [float(v) for v in match.group(1).split(",")]
    return tuple(parts[:3]), parts[3] if len(parts) == 4 else 1.0


def contrast(a: str, b: str) -> float:
    la, lb = (float(relative_luminance(rgba(c)[0])) for c in (a, b))
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def drawn(colour: str | None) -> bool:
    """An alpha of 0 draws nothing (view 5's outlined bars are all outline). An alpha above 0 is a value's
    encoding where it is used (view 5's lines: the more opaque, the larger the weight), as a heatmap's colour
    scale is: the colour itself is checked, not its blend."""
    return colour is not None and rgba(colour)[1] > 0


def marks(fig: dict) -> list[tuple[str, str, str | None]]:
    """(trace name and role, what, colour) of each line, marker and bar a figure draws; a colour of None is one the
    figure leaves to plotly's colorway, which no theme sets. A marker or bar passes by its outline where that
    is drawn at 1 px or more (a hatched grey bar, view 5's masked keys)."""
    out = []
    for trace in fig["data"]:
        kind, meta = trace.get("type", "scatter"), trace.get("meta")
        role = meta.get("role") if isinstance(meta, dict) else None
        if kind not in ("scatter", "bar") or role in GUIDES:
            continue
        who = f"{trace.get('name')} ({role})"
        line, marker = trace.get("line") or {}, trace.get("marker") or {}
        mode = trace.get("mode") or ("lines+markers" if kind == "scatter" else "")
        if "lines" in mode:
            out.append((who, "line", line.get("color")))
        if kind == "bar" or ("markers" in mode and marker.get("opacity") != 0):  # not a label axis's anchor
            colour = marker.get("color", line.get("color") if "lines" in mode else None)  # plotly: a marker follows
            outline = marker.get("line") or {}                                             # its line's colour
            if not isinstance(colour, str) and colour is not None:
                continue  # a colour per point: none here, but it would be a scale's
            if (outline.get("width") or 0) >= 1 and drawn(outline.get("color")) and (
                    not drawn(colour) or contrast(outline["color"], fig["layout"]["plot_bgcolor"]) >= NON_TEXT):
                colour = outline["color"]
            out.append((who, "bar" if kind == "bar" else "marker", colour))
    return out


def view_figures(models, theme: str) -> dict[str, dict]:
    figs = {}
    for view in VIEWS:
        spec = dataclasses.replace(SPEC, theme=theme)
        if view == "translate":
            if not trained_available():
                continue
            spec = dataclasses.replace(spec, model="zh-en", mask="paper")
        for query in (6, 13) if view == "query" else (spec.query,):
            panels = build_view(view, dataclasses.replace(spec, query=query), models).panels
            figs.update({f"{view}/{p.key}/{query}": p.figure.to_plotly_json() for p in panels if p.figure is not None})
    # view 7's "train it yourself" panel (ui/train.py): its runs' loss curves
    figs["translate/loss"] = viz.loss_curves({"with PE": [3.0, 2.0, 1.5], "without PE": [3.0, 2.5, 2.2],
                                              "third": [3.1, 2.9, 2.8]}, theme=theme).to_plotly_json()
    return figs


@pytest.mark.parametrize("theme", list(THEMES))
def test_every_line_marker_and_bar_of_every_view_reaches_3_to_1_against_its_plot(models, theme):
    # a teacher's walk on a white slide: view 2's orange and sky blue curves and view 6's orange bars were 2.2:1
    figs = view_figures(models, theme)
    failures, colours = [], set()
    for key, fig in figs.items():
        bg = fig["layout"]["plot_bgcolor"]
        for who, what, colour in marks(fig):
            if colour is None:
                failures.append((key, who, what, "plotly's own colour"))
            elif drawn(colour):
                colours.add(pc.label_rgb(rgba(colour)[0]))
                if contrast(colour, bg) < NON_TEXT:
                    failures.append((key, who, what, colour, round(contrast(colour, bg), 2)))
    assert failures == []
    # not a vacuous pass: every colour of the theme's palette was drawn and checked
    assert {pc.label_rgb(rgba(c)[0]) for c in THEMES[theme]["palette"]} <= colours
    assert any(k.startswith("query/") for k in figs) and any(k.startswith("order/") for k in figs)


@pytest.mark.parametrize(("built", "shown"), [("dark", "default"), ("default", "dark"), ("slide", "dark")])
def test_a_figure_themed_again_takes_the_new_themes_shades(built, shown):
    """apply_theme restyles a finished figure: a curve drawn in one theme's shade of orange takes the other's."""
    fig = viz.loss_curves({"a": [3.0, 2.0], "b": [3.0, 2.5]}, theme=built)
    viz.apply_theme(fig, shown)
    assert [t.line.color for t in fig.data] == THEMES[shown]["palette"][:2]
    lines = viz.attention_lines(np.full((2, 2), 0.5), query_labels=None, key_labels=None, query=0, theme=built)
    viz.apply_theme(lines, shown)
    chosen = [t.line.color for t in lines.data if (t.meta or {}).get("role") == "query-lines"]
    assert chosen and all(contrast(c, THEMES[shown]["plot_bgcolor"]) >= NON_TEXT for c in chosen)
    assert all(rgba(c)[1] < 1 for c in chosen)  # each keeps its opacity


# -- the palettes stay colour-blind safe ----------------------------------------------------------------------
# Machado, Oliveira & Fernandes (2009), severity 1: linear-RGB matrices simulating dichromatic vision.
VISIONS = {
    "normal": np.eye(3),
    "protan": np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                        [-0.003882, -0.048116, 1.051998]]),
    "deutan": np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                        [-0.011820, 0.042940, 0.968881]]),
    "tritan": np.array([[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                        [0.004733, 0.691367, 0.303900]]),
}
# Ottosson's OKLab (2020): linear sRGB -> LMS -> Lab, a space where distance follows the difference seen
LMS = np.array([[0.4122214708, 0.5363325363, 0.0514459929], [0.2119034982, 0.6806995451, 0.1073969566],
                [0.0883024619, 0.2817188376, 0.6299787005]])
LAB = np.array([[0.2104542553, 0.7936177850, -0.0040720468], [1.9779984951, -2.4285922050, 0.4505937099],
                [0.0259040371, 0.7827717662, -0.8086757660]])


def oklab(colour: str, vision: str) -> np.ndarray:
    c = np.asarray(rgba(colour)[0]) / 255.0
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    seen = np.clip(VISIONS[vision] @ linear, 0.0, 1.0)
    return LAB @ np.cbrt(LMS @ seen)


def closest_pair(palette: list[str], vision: str) -> float:
    pairs = itertools.combinations(palette, 2)
    return min(float(np.linalg.norm(oklab(a, vision) - oklab(b, vision))) for a, b in pairs)


@pytest.mark.parametrize("theme", list(THEMES))
@pytest.mark.parametrize("vision", list(VISIONS))
def test_each_themes_palette_is_as_distinct_as_okabe_itos_own(theme, vision):
    """Darkened for a white plot, the palette's closest pair is no closer than Okabe-Ito's closest (0.156 in
    OKLab, 0.076 under deuteranopia: its green and pink), in normal and in simulated colour-blind vision: darkened
    to 3:1 alone, orange and yellow were one ochre (0.011 apart under deuteranopia)."""
    palette = THEMES[theme]["palette"]
    assert len(set(palette)) == len(QUALITATIVE)
    assert closest_pair(palette, vision) >= closest_pair(QUALITATIVE, vision) - 1e-9
