"""View 2's clock hands: each (sin, cos) pair of the sinusoidal PE is a point on the unit circle that
turns by ωᵢ per position, so PE(pos + k) = R_k·PE(pos) (§3.5). The figure draws the closed form, the
angle between consecutive positions is ωᵢ, and the error the note states is the model's own."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import viz
from lab.compute import load_model
from lab.spec import FigureSpec
from lab.views import ROTATION_MIN, Models, build_view, pe_reference
from viz.positional import ROTATION_POINTS


def notes(fig) -> str:
    return " ".join(a.text for a in fig.layout.annotations or () if a.name == "notes")


def hands(fig) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    return {t.meta["pair"]: (np.asarray(t.x, float), np.asarray(t.y, float))
            for t in fig.data if (t.meta or {}).get("role") == "positions"}


@pytest.mark.parametrize("text, d_model", [("你喜欢她", 64), ("我爱我家我爱我家我爱我家我爱我家我爱", 32)])
def test_the_hands_are_the_closed_form_and_turn_omega_per_position(text, d_model):
    spec = FigureSpec(sentence_a=text, d_model=d_model, n_heads=4, n_layers=1, d_ff=32, views=("positional",))
    panel = {p.key: p for p in build_view("positional", spec, Models(load_model)).panels}["pe-rotation"]
    drawn = hands(panel.figure)
    n = len(text)
    shown = min(max(n, ROTATION_MIN), ROTATION_POINTS)
    assert sorted(drawn) == sorted({0, d_model // 16, d_model // 8})  # ω = 1, 10^-0.5, 10^-1 rad per position
    pos = np.arange(shown)
    for i, (x, y) in drawn.items():
        omega = 10000.0 ** (-2 * i / d_model)  # closed form, independent of model/positional.py
        np.testing.assert_allclose(x, np.sin(pos * omega), atol=1e-6)  # PE(pos, 2i)
        np.testing.assert_allclose(y, np.cos(pos * omega), atol=1e-6)  # PE(pos, 2i + 1)
        turn = np.diff(np.unwrap(np.arctan2(x, y)))  # the angle from "12 o'clock", clockwise
        np.testing.assert_allclose(turn, omega, atol=1e-5)  # the same turn at every step
        assert np.allclose(x ** 2 + y ** 2, 1.0, atol=1e-6)  # on the unit circle
    table = panel.table
    assert table.shape == (max(n, ROTATION_MIN), 2 * len(drawn))
    assert list(table.columns) == [f"PE(pos, {2 * i + j})" for i in sorted(drawn) for j in (0, 1)]


def test_the_stated_rotation_error_is_the_models_and_a_wrong_rotation_would_show():
    d = 64
    ref = pe_reference(50, d)
    assert ref.rotation_error < 1e-12
    # the same check by hand: R_1 built here in closed form, applied to PE(pos)
    omega = 10000.0 ** (-np.arange(0, d, 2) / d)
    pos = np.arange(50)[:, None]
    pe = np.empty((50, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(pos * omega), np.cos(pos * omega)
    c, s = np.cos(omega), np.sin(omega)
    sin_next, cos_next = pe[:-1, 0::2] * c + pe[:-1, 1::2] * s, pe[:-1, 1::2] * c - pe[:-1, 0::2] * s
    assert max(abs(sin_next - pe[1:, 0::2]).max(), abs(cos_next - pe[1:, 1::2]).max()) < 1e-12
    wrong = pe[:-1, 0::2] * c - pe[:-1, 1::2] * s  # the rotation the other way round
    assert abs(wrong - pe[1:, 0::2]).max() > 0.1
    fig = viz.pe_rotation(ref.table[:12], pairs=ref.pairs, omegas=ref.omegas, error=ref.rotation_error)
    stated = re.search(r"max \|difference\| ([0-9.e+−]+)", notes(fig)).group(1)  # a true minus (viz.labels.num)
    assert float(stated.replace("−", "-")) == pytest.approx(ref.rotation_error, rel=0.06)


def test_long_inputs_draw_the_first_positions_and_bad_arguments_are_refused():
    ref = pe_reference(60, 16)
    fig = viz.pe_rotation(ref.table, pairs=ref.pairs, omegas=ref.omegas, theme="dark")
    assert all(len(x) == ROTATION_POINTS for x, _ in hands(fig).values())
    assert f"the first {ROTATION_POINTS} of 60 positions" in notes(fig)
    with pytest.raises(ValueError, match="one ω per pair"):
        viz.pe_rotation(ref.table, pairs=(0, 1), omegas=(1.0,))
    with pytest.raises(ValueError, match="positions, d_model"):
        viz.pe_rotation(ref.table[0], pairs=(0,), omegas=(1.0,))
    assert math.isclose(ref.omegas[0], 1.0)


def test_each_number_sits_outside_the_circle_and_the_circle_stays_round_under_its_title():
    # "top center" for every number put 0 (at the top) on the panel's title "ω = 57.3°"
    ref = pe_reference(12, 64)
    fig = viz.pe_rotation(ref.table[:12], pairs=ref.pairs, omegas=ref.omegas, error=ref.rotation_error)
    away = {"top center": (0, 1), "bottom center": (0, -1), "middle right": (1, 0), "middle left": (-1, 0)}
    for t in fig.data:
        if (t.meta or {}).get("role") != "positions":
            continue
        for x, y, where in zip(t.x, t.y, t.textposition, strict=True):
            dx, dy = away[where]
            assert dx * x + dy * y >= 0.7, (x, y, where)  # pushed out along (about) its radius
    for name in [k for k in fig.layout if k.startswith(("xaxis", "yaxis"))]:
        ax = fig.layout[name]
        top = 1.6 if name.startswith("y") else 1.4  # more room above: 0's number, under the panel's title
        # room for the numbers (at least; as much more as they take at the theme's type: the browser test
        # test_viz_browser.py::test_the_clocks_numbers_stay_inside_their_panel_clear_of_its_axes_and_title)
        assert ax.range[0] <= -1.4 and ax.range[1] >= top and ax.constrain == "domain", name
        assert tuple(ax.range) == tuple(fig.layout[name[0] + "axis"].range), name  # every clock one size
        assert tuple(ax.tickvals) == (-1, 1), name  # no "0" tick beside the circle to read with a number
    assert all(fig.layout[k].constraintoward == "top" for k in fig.layout if k.startswith("yaxis"))


@pytest.mark.parametrize("theme", ["default", "slide", "paper"])
def test_a_clock_without_numbers_keeps_its_least_span_and_position_0_stands_out(theme):
    """Mutants of viz.positional's clocks (a mutation walk): widening the axes for the numbers of a clock of more
    than 12 positions, where none is written, drew every circle smaller for numbers not there (paper: ~20% smaller);
    and position 0's marker, the hand's start, drawn as large as the rest. Without numbers the axes span the least
    (CLOCK_SPAN: ±1.4, 1.6 above), and position 0's marker is larger than every other one, on every clock."""
    from viz.positional import CLOCK_SPAN

    ref = pe_reference(20, 64)
    fig = viz.pe_rotation(ref.table[:20], pairs=ref.pairs, omegas=ref.omegas, theme=theme)
    positions = [t for t in fig.data if (t.meta or {}).get("role") == "positions"]
    assert positions and all("text" not in t.mode for t in positions)  # no number written
    for name in [k for k in fig.layout if k.startswith(("xaxis", "yaxis"))]:
        top = CLOCK_SPAN[1] if name.startswith("y") else CLOCK_SPAN[0]
        assert tuple(fig.layout[name].range) == (-CLOCK_SPAN[0], top), (name, fig.layout[name].range)
    numbered = viz.pe_rotation(ref.table[:12], pairs=ref.pairs, omegas=ref.omegas, theme=theme)
    for t in [*positions, *(t for t in numbered.data if (t.meta or {}).get("role") == "positions")]:
        size = np.asarray(t.marker.size, dtype=float)
        assert size[0] > size[1:].max(), size


@pytest.mark.parametrize("theme", ["default", "slide", "paper"])
def test_the_numbers_on_each_circle_keep_clear_of_one_another(theme):
    # slide, ω = 18.1°: "11 10 9" ran together as "1109" (a number every 12° of turn, whatever the panel's size)
    from viz.heatmap import panel_px
    from viz.positional import LABEL_RADIUS, ROTATION_HEIGHT, ROTATION_SPAN
    from viz.theme import theme_spec

    ref = pe_reference(12, 64)
    fig = viz.pe_rotation(ref.table[:12], pairs=ref.pairs, omegas=ref.omegas, error=ref.rotation_error, theme=theme)
    font = theme_spec(theme)["font_size"]
    pw, ph = panel_px(theme, cols=len(ref.pairs), height=ROTATION_HEIGHT)
    radius = LABEL_RADIUS * min(pw, ph - 1.3 * font * 3) / ROTATION_SPAN  # px from the centre to a number
    for t in [t for t in fig.data if (t.meta or {}).get("role") == "positions"]:
        shown = [(x, y, text) for x, y, text in zip(t.x, t.y, t.text, strict=True) if text]
        assert shown[0][2] == "0", t.text
        for i, (x1, y1, a) in enumerate(shown):
            for x2, y2, b in shown[i + 1:]:
                apart = radius * math.hypot(x1 - x2, y1 - y2)
                assert apart >= 0.35 * font * (len(a) + len(b)), (theme, t.meta, a, b, apart)  # half of each, and room


@pytest.mark.parametrize("theme", ["default", "slide", "paper"])
def test_every_clock_names_both_of_its_dimensions_with_room_for_them_between_panels(theme):
    # the second and third clocks had no y title: which cos dimension they draw was left to guess
    from viz.theme import NARROW_WIDTH, theme_spec

    ref = pe_reference(12, 64)
    fig = viz.pe_rotation(ref.table[:12], pairs=ref.pairs, omegas=ref.omegas, theme=theme)
    for c, i in enumerate(ref.pairs, start=1):
        suffix = "" if c == 1 else str(c)
        assert fig.layout[f"xaxis{suffix}"].title.text == f"sin (dim {2 * i})"
        assert fig.layout[f"yaxis{suffix}"].title.text == f"cos (dim {2 * i + 1})"
    # the gap before each later panel holds its y title and tick labels (~4 font sizes) at the narrowest width
    # the figure is drawn at (a phone's page draws the default theme at NARROW_WIDTH, then shrinks it)
    font, width = theme_spec(theme)["font_size"], theme_spec(theme)["width"] or NARROW_WIDTH
    for c in range(2, len(ref.pairs) + 1):
        gap = fig.layout[f"xaxis{c}"].domain[0] - fig.layout[f"xaxis{c - 1}"].domain[1]
        assert gap * width >= 4 * font, (theme, c, gap * width)
