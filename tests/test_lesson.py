"""docs/lesson.md stays true: every step's link opens its view with no error, and what the page says
the students should see is checked against the app's own numbers (lab.views.build_view, the function
the app draws with)."""

from __future__ import annotations

import dataclasses
import functools
import re
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import numpy as np
import pytest

from lab.compute import load_model
from lab.spec import FigureSpec
from lab.views import Models, build_view

LESSON = Path(__file__).resolve().parents[1] / "docs" / "lesson.md"
LINK = re.compile(r"\[Open step (\d+)\]\((http://localhost:8501/\?[^)\s]+)\)")


def steps() -> dict[int, dict[str, str]]:
    found = LINK.findall(LESSON.read_text(encoding="utf-8"))
    return {int(n): dict(parse_qsl(urlsplit(url).query, strict_parsing=True)) for n, url in found}


@pytest.fixture(scope="module")
def models():
    return Models(functools.lru_cache(maxsize=None)(load_model))


def panels(step: int, models, **changes) -> dict:
    spec = FigureSpec.from_query({**steps()[step], **changes})
    return {p.key: p for p in build_view(spec.views[0], spec, models).panels}


def notes(fig) -> str:
    return " ".join(a.text for a in fig.layout.annotations or () if a.name == "notes")


def test_the_lesson_has_seven_steps_one_link_each_in_order():
    assert sorted(steps()) == list(range(1, 8))
    views = [FigureSpec.from_query(steps()[n]).views[0] for n in range(1, 8)]
    assert views == ["tokens", "positional", "attention", "query", "heads", "order", "translate"]


def test_each_steps_heading_names_the_view_its_link_opens_as_the_app_numbers_it():
    """Students see the View bar's numbers ("5 · One query"); the lesson takes view 5 as step 4."""
    from lab.spec import VIEWS

    text = LESSON.read_text(encoding="utf-8")
    for n in range(1, 8):
        heading = re.search(rf"^## {n}\. .*$", text, flags=re.M)[0]
        view = FigureSpec.from_query(steps()[n]).views[0]
        assert heading.endswith(f"· view {VIEWS.index(view) + 1})"), heading


@pytest.mark.parametrize("step", range(1, 8))
def test_each_link_opens_its_view_with_no_error(make_app, step):
    link = steps()[step]
    at = make_app(link=link)
    assert not at.exception and not at.error, [e.value for e in list(at.exception) + list(at.error)]
    assert at.session_state["view"] == link["views"]
    assert at.session_state["sentence_a"] == "你喜欢她" and at.session_state["sentence_b"] == "她喜欢你"


def test_step_1_same_tokens_only_positions_0_and_3_differ(models):
    p = panels(1, models)
    a, b = p["tokens-a"].table, p["tokens-b"].table
    assert sorted(a["piece"]) == sorted(b["piece"]) and len(a) == 4
    table = p["tokens-compare"].table
    assert list(table.loc[table["differs"], "position"]) == [0, 3]
    # the table the step names ("A and B side by side") comes first, on the projector's screen without scrolling
    assert list(p) == ["tokens-compare", "tokens-a", "tokens-b"]


def test_step_2_one_rotation_for_every_position_and_a_toeplitz_gram_matrix(models):
    p = panels(2, models)
    stated = re.search(r"max \|difference\| ([0-9.e+−]+)", notes(p["pe-rotation"].figure)).group(1)  # a true minus
    error = float(stated.replace("−", "-"))
    assert error < 1e-12
    gram = p["pe-dot-matrix"].table.to_numpy()
    for k in range(-gram.shape[0] + 1, gram.shape[0]):
        diagonal = np.diagonal(gram, offset=k)
        assert np.allclose(diagonal, diagonal[0], atol=1e-4), k


def test_step_3_the_look_ahead_mask_zero_weights_above_the_diagonal_rows_sum_to_1(models):
    p = panels(3, models)
    mask = p["attention-mask"].table.to_numpy().astype(bool)
    n = mask.shape[0]
    assert n == 5  # [BOS] + four characters
    np.testing.assert_array_equal(mask, np.tril(np.ones((n, n), dtype=bool)))
    weights = p["attention-weights"].table.to_numpy()
    assert np.all(weights[~mask] == 0.0)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-6)


def test_step_3_a_row_of_rounded_weights_the_lesson_adds_up_is_the_one_the_figure_writes(models):
    """A teacher's walk: the lesson has the class add up a row of the weights' cells; row 3:欢's two-decimal cells
    make 1.01, beside "Σ = 1.000" (the exact sum), which a student would take for a mistake. The lesson names that
    row, and its numbers are the figure's own."""
    from viz.theme import cell_text

    text = " ".join(LESSON.read_text(encoding="utf-8").split())
    found = re.search(r"row (\d+:\S+?)'s ((?:[0-9.]+ \+ )+[0-9.]+) make ([0-9.]+), its Σ = (\d\.\d+)", text)
    assert found, "step 3 names the row whose rounded cells do not add up to 1"
    row, cells, total, sigma = found[1], found[2].split(" + "), found[3], found[4]
    fig = panels(3, models, theme="slide")["attention-weights"].figure  # the projector's (ui: the lesson's theme)
    values = next(t for t in fig.data if (t.meta or {}).get("role") == "values")
    rows = list(fig.layout.yaxis.ticktext)
    written = [cell_text(x)[0] for x in values.text[rows.index(row)]]
    assert [x for x in written if x] == cells  # the masked key writes its own "0", in the hatched cell
    assert f"{sum(map(float, cells)):.2f}" == total != "1.00"
    assert fig.layout.yaxis2.ticktext[rows.index(row)] == f"Σ = {sigma}"


def test_step_4_without_scaling_the_largest_weight_is_larger(models):
    table = panels(4, models)["query-bars"].table
    assert table["weight without ÷√d_k"].max() > table["weight"].max()


def test_step_5_heads_differ_in_entropy_spread_out_untrained_one_focused_trained(models):
    p = panels(5, models)
    grid = p["layers-heads"].table  # one row per (layer, head, query), one column per key
    assert len(grid) == 2 * 4 * 4  # 2 layers x 4 heads x 4 queries
    np.testing.assert_allclose(grid.to_numpy().sum(axis=1), 1.0, atol=1e-6)
    entropy = p["entropy"].table.to_numpy()
    assert np.ptp(entropy) > 0.01 and entropy.min() > 1.5 and entropy.max() <= 2.0  # all spread out
    trained = build_view("heads", dataclasses.replace(FigureSpec.from_query(steps()[5]), model="zh-en"), models)
    focused = {x.key: x for x in trained.panels}["entropy"].table
    assert focused.loc["layer 0", "head 1"] < 0.1  # "layer 0, head 1": nearly one key per query


def test_step_6_with_pe_the_translations_differ_without_pe_they_are_identical(models):
    p = panels(6, models)
    t = p["translations"].table
    with_pe, without = list(t.iloc[:, 1]), list(t.iloc[:, 2])
    assert with_pe == ["you like her", "she likes you"]
    assert without[0] == without[1]
    numbers = p["order-numbers"].table.set_index("model")
    assert bool(numbers.loc["without PE", "pooled equal"]) is True
    assert bool(numbers.loc["without PE", "equivariant"]) is True
    # "without PE ... B's attention weights, put back in A's order, are A's; with PE they are not"
    assert numbers.loc["without PE", "max |W(B) − P W(A) Pᵀ|"] < 1e-5
    assert numbers.loc["with sinusoidal PE", "max |W(B) − P W(A) Pᵀ|"] > 1e-2
    for slug, equal in (("nope", True), ("pe", False)):
        diff = p[f"attn-{slug}"].table.loc["|A − B|"].to_numpy()
        assert bool(diff.max() < 1e-5) == equal
    # "the last verdict, 'A causal stack without PE still sees order', and the table's last row"
    assert 'the last verdict, "A causal stack without PE still\n  sees order"' in LESSON.read_text(encoding="utf-8")
    assert list(p)[-1] == "verdict-causal" and p["verdict-causal"].title == "A causal stack without PE still sees order"
    assert numbers.index[-1] == "without PE, look-ahead mask" and not bool(numbers.iloc[-1]["equivariant"])


def test_step_7_the_translation(models):
    p = panels(7, models)
    assert p["translation"].caption == "你喜欢她 → you like her"
    assert "1:you→like" in LESSON.read_text(encoding="utf-8") and list(p["cross"].table.index)[1] == "1:you→like"  # the row the lesson names


def test_the_sidebar_shows_the_lesson_with_links_to_this_app(make_app):
    """The sidebar's "A 20-minute lesson" (drawn only when opened) holds every step's link, relative, so
    it opens the app it is shown in (a class server as well as localhost)."""
    at = make_app()
    assert not at.exception
    assert not [m for m in at.sidebar.markdown if "Open step" in str(m.value)]  # closed: not drawn
    at.session_state["lesson"] = True  # the user opens it
    at.run()
    assert not at.exception
    shown = " ".join(str(m.value) for m in at.sidebar.markdown)
    links = re.findall(r"\[Open step (\d+)\]\(\./\?([^)\s]+)\)", shown)
    assert [int(n) for n, _ in links] == list(range(1, 8))
    assert [dict(parse_qsl(q)) for _, q in links] == [steps()[n] for n in range(1, 8)]
    assert "localhost" not in shown and shown.startswith("The thread of the lesson")
    assert len(re.findall(r"\]\(", shown)) == 7  # no other link: a relative one would not resolve in the app
    # each link opens a new session: a theme the teacher chose (slide, for the projector) travels with it
    at.selectbox(key="theme").set_value("slide").run()
    assert not at.exception
    shown = " ".join(str(m.value) for m in at.sidebar.markdown)
    links = re.findall(r"\[Open step (\d+)\]\(\./\?([^)\s]+)\)", shown)
    assert [dict(parse_qsl(q)) for _, q in links] == [{**steps()[n], "theme": "slide"} for n in range(1, 8)]
