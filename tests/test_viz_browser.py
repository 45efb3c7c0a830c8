"""Every view's figures drawn by plotly.js in Chromium: the margins viz sets already hold the labels.

viz.theme sets each margin from the labels, titles, colour bars and legends it has to hold; the
axes keep automargin only as a safety net. When an estimate falls short, Plotly grows the margin
and lays the whole figure out a second time (about half of its drawing time in the browser).
This draws the figures with the plotly.js that ships in the plotly package (nothing downloaded)
and checks that Plotly kept every margin as set: no second layout pass, and no label cut off.
The axes let tick labels overflow (viz.theme: plotly.js then skips measuring each label after a
draw, ~10 ms a chart), so the test also checks that no tick label lies outside the figure.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import plotly
import pytest
from conftest import CHROMIUM

from lab.compute import load_model, model_fields, run
from lab.spec import FigureSpec
from lab.views import Models, build_view, pe_reference
from viz.attention import weights_heatmap
from viz.positional import pe_rotation
from viz.theme import design_size

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing (scripts/test.sh installs it)"),
]

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
VIEWS = ("positional", "attention", "heads", "query", "order")
DRAW = """async (f) => {
    const d = document.getElementById('d');
    Plotly.purge(d);
    await Plotly.newPlot(d, f.data, f.layout, {});
    const s = d._fullLayout._size;
    // The axes let labels overflow (ticklabeloverflow "allow": plotly.js then skips measuring every
    // label after a draw), so no label may actually stick out of the figure.
    const box = d.querySelector('.main-svg').getBoundingClientRect();
    let outside = 0;
    for (const t of d.querySelectorAll('.xtick text, .ytick text')) {
        const b = t.getBoundingClientRect();
        if (b.width && (b.left < box.left - 1 || b.right > box.right + 1 || b.top < box.top - 1 || b.bottom > box.bottom + 1)) outside++;
    }
    const overflow = Object.keys(d._fullLayout).filter((k) => /^[xy]axis[0-9]*$/.test(k))
        .map((k) => d._fullLayout[k].ticklabeloverflow);
    return {margins: [s.l, s.r, s.t, s.b], outside, overflow};
}"""


@pytest.fixture(scope="module")
def plot_page(browser):
    page = browser.new_page()
    page.set_content("<html><body><div id='d'></div></body></html>")
    page.add_script_tag(path=str(PLOTLY_JS))
    yield page
    page.close()


def models_for(spec: FigureSpec) -> Models:
    """Models as the app passes them, with the spec's sentences traced once."""
    traced = run(load_model(model_fields(spec)), spec.sentence_a, spec.sentence_b, spec.mask)
    return Models(lambda key: load_model(key), lambda s: traced)


@pytest.fixture(scope="module")
def models():
    spec = FigureSpec(sentence_a="你喜欢她吗", sentence_b="她喜欢你吗")
    return spec, models_for(spec)


@pytest.mark.parametrize("theme", ["default", "paper", "slide"])
def test_plotly_keeps_every_margin_viz_sets(plot_page, models, theme):
    spec, m = models
    spec = dataclasses.replace(spec, theme=theme)
    checked = 0
    for view in VIEWS:
        for panel in build_view(view, spec, m).panels:
            if panel.figure is None:
                continue
            fig = json.loads(panel.figure.to_json())
            width, height = design_size(theme, panel.figure)
            fig["layout"].setdefault("width", width)
            fig["layout"].setdefault("height", height)
            margin = fig["layout"]["margin"]
            want = [margin["l"], margin["r"], margin["t"], margin["b"]]
            drawn = plot_page.evaluate(DRAW, fig)
            got = drawn["margins"]
            assert [round(g) for g in got] == [round(w) for w in want], (view, panel.key, want, got)
            assert drawn["outside"] == 0, (view, panel.key, "tick labels outside the figure")
            assert drawn["overflow"] and set(drawn["overflow"]) == {"allow"}, (view, panel.key, drawn["overflow"])
            checked += 1
    assert checked >= 15


# Streamlit's chart hands plotly.js's own copy of a figure (gd.data, gd.layout) back to
# Plotly.react after every draw. If plotly.js then sees new data arrays it computes and draws the
# whole chart again (gd.calcdata is rebuilt): every new sentence drew every chart twice.
REACT_AGAIN = """async (f) => {
    const d = document.getElementById('d');
    Plotly.purge(d);
    await Plotly.react(d, f.data, f.layout, {});
    const first = d.calcdata;
    await Plotly.react(d, d.data, d.layout, {});
    return d.calcdata === first;
}"""


def test_the_second_react_of_a_view_figure_does_not_recompute_it(plot_page, models):
    spec, m = models
    kept = []
    for view in ("attention", "positional", "heads"):
        for panel in build_view(view, spec, m).panels:
            if panel.figure is not None:
                kept.append((view, panel.key, plot_page.evaluate(REACT_AGAIN, json.loads(panel.figure.to_json()))))
    assert len(kept) >= 10
    assert all(same for *_, same in kept), [k for k in kept if not k[2]]


# plotly.js paints a heatmap whose cells are evenly spaced as one pixel per cell, scaled up by the
# browser with this style on its <image> (25-70 ms for 256 x 256 cells here); any other heatmap with
# one fillRect per cell at the plot's size (150-210 ms each, a long task). viz.heatmap.even_pieces.
PAINTED = """async (f) => {
    const d = document.getElementById('d');
    Plotly.purge(d);
    await Plotly.newPlot(d, f.data, f.layout, {});
    return [...d.querySelectorAll('.hm image')].map((im) => im.getAttribute('style') || '');
}"""


def test_every_heatmap_of_a_511_token_input_is_painted_one_pixel_per_cell(plot_page):
    """511 source tokens (the random model's most), in blocks of 2 with a last block of 1: encoder
    self-attention is cut on both axes, cross-attention (decoder input [BOS] + 511 = 512 rows) on its
    keys, and decoder self-attention (512 x 512) is whole blocks."""
    from bench.app_figures import sentence

    text = sentence(511)
    spec = FigureSpec(sentence_a=text, sentence_b=text[::-1])
    m = models_for(spec)
    styles = {}
    cases = [(view, block) for view in ("attention", "heads") for block in ("encoder self", "decoder self", "cross")]
    for view, block in cases + [("positional", "encoder self"), ("order", "encoder self")]:
        for panel in build_view(view, dataclasses.replace(spec, block=block), m).panels:
            if panel.figure is not None and any(t.type == "heatmap" for t in panel.figure.data):
                styles[(block, view, panel.key)] = plot_page.evaluate(PAINTED, json.loads(panel.figure.to_json()))
    assert len(styles) >= 15 and {v for _, v, _ in styles} == {"attention", "heads", "positional", "order"}
    slow = {k: s for k, s in styles.items() if not s or not all("pixelated" in x for x in s)}
    assert not slow, slow


PLACE = """async ([f, x, y]) => {
    const d = document.getElementById('d');
    Plotly.purge(d);
    await Plotly.newPlot(d, f.data, f.layout, {});
    const L = d._fullLayout, r = d.querySelector('.nsewdrag').getBoundingClientRect();
    return [r.left + L.xaxis.l2p(x), r.top + L.yaxis.l2p(y)];
}"""
HOVER_TEXT = "() => [...document.querySelectorAll('.hoverlayer .hovertext')].map((e) => e.textContent)"


def test_hovering_a_block_of_a_511_token_heatmap_names_its_positions_and_its_mean(plot_page):
    """The weights of 511 tokens are drawn in blocks of 2 (the last block: position 510 alone). The
    hover label of a block says which positions it covers and that its value is their mean."""
    from bench.app_figures import sentence
    from model.analysis import head_arrays, record

    text = sentence(511)
    spec = FigureSpec(sentence_a=text, sentence_b=text[::-1])
    m = models_for(spec)
    weights = head_arrays(record(m.run(spec).trace, "encoder self", 0), 0, 0)["weights"]  # (511, 511)
    panel = next(p for p in build_view("attention", spec, m).panels if p.key == "attention-weights")
    fig = json.loads(panel.figure.to_json())
    fig["layout"].update(width=2600, height=2600)  # ~10 px a block: the mouse lands on the one meant
    cases = {  # (x, y) of a block's centre: its label, its rows and columns of the weights
        (10.5, 2.5): ("query 2.5 ± 0.5key 10.5 ± 0.5mean weight", slice(2, 4), slice(10, 12)),
        (0.5, 0.5): ("query 0.5 ± 0.5key 0.5 ± 0.5mean weight", slice(0, 2), slice(0, 2)),  # not tick "0"
        (510, 510): ("query 510key 510weight", slice(510, 511), slice(510, 511)),  # the last block
        (10.5, 510): ("query 510key 10.5 ± 0.5mean weight", slice(510, 511), slice(10, 12)),
    }
    size = plot_page.viewport_size
    plot_page.set_viewport_size({"width": 2800, "height": 2800})
    try:
        for (x, y), (label, rows, cols) in cases.items():
            px, py = plot_page.evaluate(PLACE, [fig, x, y])
            plot_page.mouse.move(px, py)
            plot_page.wait_for_function("() => document.querySelector('.hoverlayer .hovertext')")
            shown = plot_page.evaluate(HOVER_TEXT)[0]
            assert shown.startswith(label), (x, y, shown)
            want = float(weights[rows, cols].mean())
            assert abs(float(shown.rsplit("weight ", 1)[1]) - want) <= 1e-5 * max(1.0, want), (x, y, shown, want)
    finally:
        plot_page.set_viewport_size(size)


# each bar of each trace of a figure drawn `width` px wide: [trace][point] = (left, right) in px
BAR_EDGES = """async ([f, width]) => {
    const d = document.getElementById('d');
    Plotly.purge(d);
    await Plotly.newPlot(d, f.data, {...f.layout, width}, {});
    return [...d.querySelectorAll('.barlayer .trace')].map((tr) => [...tr.querySelectorAll('.point path')]
        .map((p) => { const b = p.getBoundingClientRect(); return [b.left, b.right]; }));
}"""
# each bar trace's first bar: its fill, and its outline's colour and width as drawn
BAR_PAINT = """() => [...document.querySelectorAll('#d .barlayer .trace')].map((tr) => {
    const s = getComputedStyle(tr.querySelector('.point path'));
    return [s.fill, s.stroke, parseFloat(s.strokeWidth)];
})"""


def test_view_6s_pooled_outputs_draw_each_dimension_as_a_bar_not_a_line_on_a_phone(plot_page):
    """A phone walk: the pooled outputs of a 64-dimension model, A's and B's bars side by side, were 128 bars of
    ~1.8 px on a 390 px phone (the default theme drawn 480 px wide, ~4 px at 1280), told apart by the colour of a
    line. Each dimension is one bar, B's drawn inside A's (the same x: equal means one height), and not thin by the
    theme's own measure (viz.theme.THIN_BAR_PX) where the app draws narrowest."""
    from viz.order import pooled_outputs_figure
    from viz.theme import NARROW_WIDTH, THIN_BAR_PX

    rng = np.random.default_rng(0)
    fig = pooled_outputs_figure(rng.normal(size=64), rng.normal(size=64))
    a, b = plot_page.evaluate(BAR_EDGES, [json.loads(fig.to_json()), NARROW_WIDTH])
    assert len(a) == len(b) == 64
    assert min(right - left for left, right in a) >= THIN_BAR_PX, a[:3]
    assert all(la - 0.5 <= lb and rb <= ra + 0.5 for (la, ra), (lb, rb) in zip(a, b, strict=True)), (a[:3], b[:3])
    # and B's outline, where the theme keeps one, draws no stripe of the page's colour inside A's bar
    (fill_a, _, _), (_, stroke_b, width_b) = plot_page.evaluate(BAR_PAINT)
    assert width_b == 0 or stroke_b == fill_a, (fill_a, stroke_b, width_b)


def test_hovering_a_pooled_output_bar_names_its_sentence_its_dimension_and_what_its_value_is(plot_page):
    """A words walk: hovering a bar of view 6's pooled outputs said "B", "dim 0", "0.400000": a letter alone, a
    number of no name with zeros no other hover writes. Each bar's label says whose sentence, which dimension, and
    what the number is, as the others write it (B's core inside A's bar and A's edge beside it)."""
    from viz.order import pooled_outputs_figure

    fig = json.loads(pooled_outputs_figure(np.array([0.5, -0.3]), np.array([0.4, -0.35])).to_json())
    fig["layout"].update(width=600, height=400)
    cases = {(0.0, 0.2): "sentence Bdim 0pooled output 0.4", (0.38, 0.2): "sentence Adim 0pooled output 0.5",
             (1.0, -0.1): "sentence Bdim 1pooled output -0.35"}  # plotly.js's hyphen, as in every hover
    for (x, y), label in cases.items():
        plot_page.mouse.move(0, 0)
        px, py = plot_page.evaluate(PLACE, [fig, x, y])
        plot_page.mouse.move(px, py)
        plot_page.wait_for_function("() => document.querySelector('.hoverlayer .hovertext')")
        assert plot_page.evaluate(HOVER_TEXT) == [label], (x, y)


# The figure f drawn, each non-blank text that `sel` picks in it with the px between it and the figure's left and right
# edges: every text (".main-svg text"), or the title's lines (".gtitle")
TEXT_EDGES = """async ([f, sel]) => {
    const d = document.getElementById('d');
    Plotly.purge(d);
    await Plotly.newPlot(d, f.data, f.layout, {});
    const box = d.querySelector('.main-svg').getBoundingClientRect();
    return [...d.querySelectorAll(sel)].filter((t) => t.textContent.trim()).map((t) => {
        const b = t.getBoundingClientRect();
        return [t.textContent, b.left - box.left, box.right - b.right];
    });
}"""
LONG_SENTENCE = ("The students in the classroom read the sentence, and every word looks at every other word to decide "
                 "what it means.")  # 39 BPE tokens


def test_no_text_of_a_paper_figure_at_a_long_sentence_runs_past_the_figures_edge(plot_page):
    """A researcher's walk: view 3's weights at 39 BPE tokens, exported in the paper theme, had its title's first
    line end in "— encoder" 9 px past the PNG's right edge, its last letter cut. viz.theme._fit_title wrapped a
    title to the width right of the left labels' estimate, not right of the plot (the margin adds the figure's
    edge and a pad), and kept no edge of white at the right: a title could run to 2 px past the figure. Drawn as
    `python -m lab.export` and the app's downloads draw it (viz.export.alone, round_height, the export size)."""
    from viz import export as vx
    from viz.fig import layout_value

    spec = FigureSpec(sentence_a=LONG_SENTENCE, sentence_b="Every word looks at every other word.",
                      tokenizer="bpe", theme="paper")
    m = models_for(spec)
    checked = 0
    for view in VIEWS:
        for panel in build_view(view, spec, m).panels:
            if panel.figure is None:
                continue
            data = vx.alone(json.loads(vx.figure_json(panel.figure)))
            width, height = spec.export_size(layout_value(panel.figure, "height"))
            data["layout"].update(width=width, height=vx.round_height(data, width, height))
            for text, left, right in plot_page.evaluate(TEXT_EDGES, [data, ".main-svg text"]):
                assert left >= 0 and right >= 0, (view, panel.key, text, round(left), round(right))
            checked += 1
    assert checked >= 15


def test_a_paper_figures_title_of_any_length_wraps_inside_the_figure(plot_page):
    """A mutation walk: viz.theme._fit_title's room without the figure's edge of white at the right (width -
    margin.l - 4, not - edge - 4) let every test through, the one long sentence's titles happening to wrap early
    enough, where a title ran 5.8 px past a paper figure's right edge, cut. Titles of 8 to 19 words, wrapped as
    exported: every line inside the figure."""
    from viz import export as vx

    rng = np.random.default_rng(0)
    words = ["attention", "of", "the", "encoder", "weights", "a", "head", "layer", "softmax", "query", "key", "—"]
    w = rng.random((4, 4))
    w /= w.sum(1, keepdims=True)
    for k in range(40):
        text = " ".join(rng.choice(words, size=8 + k % 12))
        fig = weights_heatmap(w, row_labels=list("abcd"), title=text, theme="paper")
        data = json.loads(vx.figure_json(fig))
        width, height = design_size("paper", fig)
        data["layout"].update(width=width, height=vx.round_height(data, width, height))
        for line, left, right in plot_page.evaluate(TEXT_EDGES, [data, ".gtitle"]):
            assert left >= 0 and right >= 0, (text, line, round(left, 1), round(right, 1))


# Each number written beside a clock's points (view 2's PE rotation), measured against its own panel: px from the
# panel's y axis line (left), to its x axis line (bottom), and below the panel's title (ω = ...).
CLOCK_NUMBERS = """async (f) => {
    const d = document.getElementById('d');
    Plotly.purge(d);
    await Plotly.newPlot(d, f.data, f.layout, {});
    const L = d._fullLayout, svg = d.querySelector('.main-svg').getBoundingClientRect();
    const titles = [...d.querySelectorAll('.annotation')].filter((a) => a.textContent.startsWith('ω'))
        .map((a) => a.getBoundingClientRect());
    return [...d.querySelectorAll('.subplot')].flatMap((sp) => {
        const [, x, y] = sp.getAttribute('class').match(/subplot x(\\d*)y(\\d*)/);
        const xa = L['xaxis' + x], ya = L['yaxis' + y];
        const title = titles.find((b) => b.left - svg.left < xa._offset + xa._length && b.right - svg.left > xa._offset);
        return [...sp.querySelectorAll('.textpoint text')].filter((t) => t.textContent).map((t) => {
            const b = t.getBoundingClientRect();
            return [x, t.textContent, b.left - svg.left - xa._offset, ya._offset + ya._length - (b.bottom - svg.top),
                    b.top - title.bottom];
        });
    });
}"""


@pytest.mark.parametrize("theme", ["paper", "default", "slide"])
def test_the_clocks_numbers_stay_inside_their_panel_clear_of_its_axes_and_title(plot_page, theme):
    """A researcher's walk: view 2's clocks in the paper theme wrote "3" (ω = 57.3°) and "10" (ω = 18.1°) under
    the circle across the panel's x axis line, "0" at the top 3 px under the panel's title, "5" on the y axis line:
    the axes spanned ±1.4 (1.6 above) units in every theme, which holds a number beside the circle at the default
    theme's 14 px type and ~51 px a unit, not at the paper's 18 px and ~41 px a unit. Drawn as exported."""
    from viz import export as vx

    ref = pe_reference(12, 64)
    fig = pe_rotation(ref.table[:12], pairs=ref.pairs, omegas=ref.omegas, error=ref.rotation_error, theme=theme)
    data = json.loads(vx.figure_json(fig))
    width, height = design_size(theme, fig)
    data["layout"].update(width=width, height=vx.round_height(data, width, height))
    numbers = plot_page.evaluate(CLOCK_NUMBERS, data)
    assert {panel for panel, *_ in numbers} == {"", "2", "3"} and len(numbers) >= 10
    for panel, text, left, bottom, under_title in numbers:
        # and a pixel of white between a number and the y axis line: at the old −1.4 in paper the '5' lay 0.2 px
        # from it, touching (a mutation walk: the digits' width and 4 px pad left out of the left range)
        assert left >= 1 and bottom >= 0 and under_title >= 0, (theme, panel, text, left, bottom, under_title)


# The x tick labels of each panel of a one-row figure as drawn: [x axis, [[left, right] of each label]], each label
# given to the panel its centre lies over.
X_TICKS = """async (f) => {
    const d = document.getElementById('d');
    Plotly.purge(d);
    await Plotly.newPlot(d, f.data, f.layout, {});
    const L = d._fullLayout, svg = d.querySelector('.main-svg').getBoundingClientRect();
    const axes = Object.keys(L).filter((k) => /^xaxis\\d*$/.test(k)).map((k) => [k, L[k]._offset, L[k]._length]);
    const labels = [...d.querySelectorAll('.xaxislayer-above text')].filter((t) => t.textContent)
        .map((t) => { const b = t.getBoundingClientRect(); return [b.left - svg.left, b.right - svg.left]; });
    return axes.map(([k, at, length]) => [k, labels.filter(([l, r]) => (l + r) / 2 >= at && (l + r) / 2 <= at + length)]);
}"""


@pytest.mark.parametrize("theme", ["paper", "default", "slide"])
def test_neighbouring_panels_tick_labels_stand_apart_as_two_numbers(plot_page, models, theme):
    """A researcher's walk: in the paper theme the QKV figure's "15" (Q's last dimension tick) stood ~8 px from K's
    "0", and the token outputs' and embedding + PE's "60" from the next panel's "0": read as "150" and "600" at a
    column's width. Panels of values whose x axes are both labelled were 0.04 of the plot apart (0.05 for the
    embedding + PE); viz.heatmap.value_gap holds half of each label and an em between them."""
    spec, m = models
    spec = dataclasses.replace(spec, theme=theme)
    figures = {**{p.key: p.figure for p in build_view("attention", spec, m).panels},
               **{p.key: p.figure for p in build_view("positional", spec, m).panels},
               **{p.key: p.figure for p in build_view("order", spec, m).panels}}
    from viz.theme import theme_spec

    font = theme_spec(theme)["font_size"]
    for key in ("attention-qkv", "embedding-pe", "aligned-pe", "aligned-nope"):
        fig = json.loads(figures[key].to_json())
        width, height = design_size(theme, figures[key])
        fig["layout"].update(width=width, height=height)
        panels = sorted(plot_page.evaluate(X_TICKS, fig), key=lambda p: int(p[0][5:] or 1))
        assert len(panels) == 3 and all(len(ticks) >= 2 for _, ticks in panels), (key, panels)
        for (_, before), (_, after) in zip(panels, panels[1:], strict=False):
            apart = min(left for left, _ in after) - max(right for _, right in before)
            assert apart >= 0.9 * font, (theme, key, round(apart, 1))


def test_in_the_paper_theme_facing_tick_labels_are_no_further_apart_than_an_em_needs(plot_page, models):
    """A mutation walk: viz.heatmap.value_gap holding the whole of each facing label ("15", "0") and an em, not half of
    each, let every test through, where the paper theme's panels stood ~1.9 em apart, not ~1.1, each heatmap narrower
    for nothing. Where value_gap decides the gap (paper: no y labels between the panels), the facing labels stand an
    em apart and not much more: at most 1.5 em (the labels sit near, not exactly at, their panels' ends)."""
    spec, m = models
    spec = dataclasses.replace(spec, theme="paper")
    figures = {**{p.key: p.figure for p in build_view("attention", spec, m).panels},
               **{p.key: p.figure for p in build_view("positional", spec, m).panels},
               **{p.key: p.figure for p in build_view("order", spec, m).panels}}
    from viz.theme import theme_spec

    font = theme_spec("paper")["font_size"]
    # (figure, the gaps value_gap alone decides: 0 between panels 1 and 2, 1 between 2 and 3)
    for key, gaps in (("attention-qkv", (0, 1)), ("embedding-pe", (0, 1)), ("aligned-pe", (1,))):
        fig = json.loads(figures[key].to_json())
        width, height = design_size("paper", figures[key])
        fig["layout"].update(width=width, height=height)
        panels = sorted(plot_page.evaluate(X_TICKS, fig), key=lambda p: int(p[0][5:] or 1))
        assert len(panels) == 3 and all(len(ticks) >= 2 for _, ticks in panels), (key, panels)
        for i in gaps:
            apart = min(left for left, _ in panels[i + 1][1]) - max(right for _, right in panels[i][1])
            assert 0.9 * font <= apart <= 1.5 * font, (key, i, round(apart / font, 2))


# px of the figure left blank under its lowest text (or legend mark) and plot.
BLANK_UNDER = """async (f) => {
    const d = document.getElementById('d');
    Plotly.purge(d);
    await Plotly.newPlot(d, f.data, f.layout, {});
    const box = d.querySelector('.main-svg').getBoundingClientRect();
    let low = 0;
    for (const t of d.querySelectorAll('.main-svg text, .legend .layers path, .draglayer .nsewdrag')) {
        const b = t.getBoundingClientRect();
        if (b.height) low = Math.max(low, b.bottom - box.top);
    }
    return box.height - low;
}"""


def test_view_5s_bars_at_a_long_sentence_leave_no_blank_band_under_their_key_labels(plot_page):
    """A researcher's walk: view 5's bars at 39 BPE tokens, exported in the paper theme, ended in ~61 px of white
    under the 'key' axis title (13-14 px under every other figure's lowest text): viz.theme's bottom margin holds key
    labels that do not fit side by side turned 90°, as the heatmaps' axes turn them (autotickangles [0, 90]), but the
    bars' axes let plotly.js turn them 30°, ~45 px shorter. The bars' axes turn them as the estimate does."""
    from viz import export as vx
    from viz.fig import layout_value
    from viz.theme import edge_px, theme_spec

    spec = FigureSpec(sentence_a=LONG_SENTENCE, sentence_b="Every word looks at every other word.",
                      tokenizer="bpe", theme="paper")
    bars = {p.key: p for p in build_view("query", spec, models_for(spec)).panels}["query-bars"].figure
    data = vx.alone(json.loads(vx.figure_json(bars)))
    width, height = spec.export_size(layout_value(bars, "height"))
    data["layout"].update(width=width, height=height)
    assert plot_page.evaluate(BLANK_UNDER, data) <= 2 * edge_px(theme_spec("paper")["font_size"])
