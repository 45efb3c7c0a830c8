"""Text that must not run into other text, measured on the figures as laid out (their final margins and axis
domains), with the width estimate the layout itself uses (viz.theme.text_width, on the generous side).

Found by a researcher's export walk: at 8 tokens in the paper theme, view 3's score cells read
"9.1816.4411.55" (the five step figures share the widest margins after they are laid out, which narrows
the scores' cells); in view 4's grids of heads one panel's last key label ran into the next one's first
("20:a0:t"); in view 6, B's token labels touched A's heatmap.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from lab.export import cli_models
from lab.spec import FigureSpec
from lab.views import build_view
from viz.heatmap import label_gap
from viz.theme import cell_text, cell_type_px, design_size, text_width, theme_spec

EN = ("the cat sat on the mat", "the mat sat on the cat")  # 22 characters; 8 BPE tokens


@pytest.fixture(scope="module")
def models():
    return cli_models()


def figures(models, view: str, **spec) -> dict[str, dict]:
    result = build_view(view, FigureSpec(views=(view,), **spec), models)
    return {p.key: p.figure.to_dict() for p in result.panels if p.figure is not None}


def plot_box(fig: dict, theme: str) -> tuple[float, float, float, float]:
    """(left, right, top, bottom) px of the plot area as laid out."""
    layout = fig["layout"]
    width, height = layout.get("width") or design_size(theme)[0], layout.get("height") or design_size(theme)[1]
    m = layout["margin"]
    return m["l"], width - m["r"], m["t"], height - m["b"]


def value_texts(fig: dict) -> list[tuple[dict, list[list[str]]]]:
    return [(t, [[cell_text(x)[0] for x in row] for row in t["text"]]) for t in fig["data"]
            if t.get("type") == "heatmap" and (t.get("meta") or {}).get("role") == "values" and t.get("text")]


def cell_width(fig: dict, theme: str, trace: dict, columns: int) -> float:
    left, right, _, _ = plot_box(fig, theme)
    axis = fig["layout"]["xaxis" + (trace.get("xaxis") or "x")[1:]]
    d0, d1 = axis.get("domain") or (0, 1)
    return (right - left) * (d1 - d0) / columns


@pytest.mark.parametrize("theme", ["paper", "default", "slide"])
@pytest.mark.parametrize("sentences, tokenizer", [(EN, "bpe"), (("你喜欢她", "她喜欢你"), "char"),
                                                  (("春风拂面桃花", "桃花春风拂面"), "char"),
                                                  (("我爱我家我爱我家", "我家我爱我家我爱"), "char")])
def test_every_value_written_in_a_cell_fits_it_with_room_either_side(models, theme, sentences, tokenizer):
    figs = figures(models, "attention", sentence_a=sentences[0], sentence_b=sentences[1], tokenizer=tokenizer,
                   theme=theme, mask="look-ahead")
    size = cell_type_px(theme)
    for key, fig in figs.items():
        for trace, texts in value_texts(fig):
            w = cell_width(fig, theme, trace, len(texts[0]))
            widest = max(text_width(x, size) for row in texts for x in row if x)
            assert widest + 4 <= w, (key, theme, widest, w)
            z = np.asarray(trace["z"], dtype=float)  # and each text is its cell's value, to what it shows
            for value, text in zip(z.ravel(), (x for row in texts for x in row), strict=True):
                if text:
                    assert "." in text, (key, text)  # one decimal at least: "−17" would hide a score of −0.4
                    decimals = len(text.split(".")[1])
                    assert float(text.replace("\u2212", "-")) == pytest.approx(value, abs=0.51 * 10 ** -decimals)


def test_values_that_do_not_fit_lose_a_decimal_first_then_go(models):
    """Paper theme: 4 tokens keep two decimals; 6 tokens' scores, up to ±13.4, one ("13.4"); 8 BPE tokens'
    scores (±16.9) none; weights never go to one decimal ("0.0" would hide what a weight is)."""
    def decimals(fig: dict) -> set[int]:
        return {len(x.split(".")[1]) for _, texts in value_texts(fig) for row in texts for x in row if "." in x}

    four = figures(models, "attention", theme="paper")
    six = figures(models, "attention", sentence_a="春风拂面桃花", sentence_b="桃花春风拂面", theme="paper")
    eight = figures(models, "attention", sentence_a=EN[0], sentence_b=EN[1], tokenizer="bpe", theme="paper")
    assert decimals(four["attention-scores"]) == decimals(four["attention-weights"]) == {2}
    assert decimals(six["attention-scores"]) == {1} and decimals(six["attention-weights"]) == {2}
    assert not value_texts(eight["attention-scores"]) and not value_texts(eight["attention-weights"])


@pytest.mark.parametrize("theme", ["paper", "default", "slide"])
@pytest.mark.parametrize("tokenizer", ["char", "bpe"])
def test_key_labels_of_panels_side_by_side_never_run_into_each_other(models, theme, tokenizer):
    """View 4's grids: along the bottom row, each label's extent (its tick ± half its width, where labels lie
    side by side) ends before the next label's starts, across panels too."""
    figs = figures(models, "heads", sentence_a=EN[0], sentence_b=EN[1], tokenizer=tokenizer, theme=theme)
    for key in ("heads-grid", "layers-heads"):
        labels_never_meet(figs[key], theme, key)


@pytest.mark.parametrize("theme", ["paper", "default", "slide"])
def test_view_6s_attention_panels_keep_their_key_labels_apart(models, theme):
    """A regression walk: at 12 tokens in the paper theme B's last key label and |A − B|'s first read "2:宜0:春"."""
    figs = figures(models, "order", sentence_a="春风拂面桃花盛开景色宜人", sentence_b="景色宜人桃花盛开春风拂面",
                   theme=theme, layer=1, head=2)
    for key in ("attn-pe", "attn-nope"):
        fig = figs[key]
        left, right, _, _ = plot_box(fig, theme)
        size = theme_spec(theme)["font_size"]
        ends = []  # per panel: (left end of its first key label, right end of its last), as if side by side
        for axis in sorted((a for k, a in fig["layout"].items() if k.startswith("xaxis")), key=lambda a: a["domain"][0]):
            lo, hi = sorted(axis["range"])
            x0, x1 = (left + (right - left) * d for d in axis["domain"])
            at = [x0 + (v - lo) / (hi - lo) * (x1 - x0) for v in axis["tickvals"]]
            ends.append((at[0] - text_width(axis["ticktext"][0], size) / 2,
                         at[-1] + text_width(axis["ticktext"][-1], size) / 2))
        for (_, last_end), (first_start, _) in itertools.pairwise(ends):
            assert last_end <= first_start, (key, theme, ends)


def labels_never_meet(fig: dict, theme: str, key: str) -> None:
    """Along the bottom row, each key label's extent ends before the next label's starts, across panels too."""
    layout = fig["layout"]
    left, right, _, _ = plot_box(fig, theme)
    size = (layout["xaxis"].get("tickfont") or {}).get("size") or theme_spec(theme)["font_size"]
    axes = [a for k, a in layout.items() if k.startswith("xaxis") and a.get("ticktext")
            and a.get("showticklabels") is not False]
    assert len(axes) >= 2, key
    spans = []
    for axis in sorted(axes, key=lambda a: a["domain"][0]):
        lo, hi = sorted(axis["range"])
        x0, x1 = (left + (right - left) * d for d in axis["domain"])
        ticks = [(x0 + (v - lo) / (hi - lo) * (x1 - x0), text_width(t, size)) for v, t in
                 zip(axis["tickvals"], axis["ticktext"], strict=True)]
        gaps = np.diff([x for x, _ in ticks])
        if len(ticks) > 1 and gaps.min() < max(w for _, w in ticks) + 4:
            continue  # turned 90°: they do not reach sideways
        spans += [(x - w / 2, x + w / 2) for x, w in ticks]
    spans.sort()
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end <= start, (key, theme, spans)


@pytest.mark.parametrize("theme", ["paper", "default", "slide"])
def test_view_6_b_labels_stand_clear_of_a_heatmap(models, theme):
    """The aligned outputs: B's token labels, right-aligned before its panel, start clear of A's panel."""
    figs = figures(models, "order", sentence_a=EN[0], sentence_b=EN[1], theme=theme)
    fig = figs["aligned-pe"]
    layout = fig["layout"]
    left, right, _, _ = plot_box(fig, theme)
    a, b = sorted((v for k, v in layout.items() if k.startswith("xaxis")), key=lambda ax: ax["domain"][0])[:2]
    y_b = next(v for k, v in layout.items() if k.startswith("yaxis") and v.get("anchor") == "x2")
    size = (y_b.get("tickfont") or {}).get("size") or theme_spec(theme)["font_size"]
    labels = y_b.get("ticktext") or []
    assert labels and y_b.get("showticklabels") is not False
    a_end = left + (right - left) * a["domain"][1]
    b_start = left + (right - left) * b["domain"][0]
    ticklen = y_b.get("ticklen") or 5
    clear = b_start - ticklen - max(text_width(t, size) for t in labels) - a_end
    assert clear >= 0.5 * size, (theme, clear)  # half a letter at least (paper had 2.9 px: they touched)
    assert label_gap(labels, theme, cols=3) <= 0.3  # and the gap is no wider than a label needs


@pytest.mark.parametrize("theme", ["default", "slide"])
def test_a_grid_whose_key_labels_fit_keeps_every_one(models, theme):
    """4 tokens: every key is labelled under every panel (a first version of the collision rule dropped 3:她,
    whose label reached only half a cell past its tick, well inside the gap)."""
    fig = figures(models, "heads", theme=theme)["heads-grid"]
    axes = [a for k, a in fig["layout"].items() if k.startswith("xaxis") and a.get("showticklabels") is not False]
    assert axes and all(a["ticktext"] == ["0:你", "1:喜", "2:欢", "3:她"] for a in axes), [a["ticktext"] for a in axes]


@pytest.mark.parametrize("theme", ["paper", "default", "slide"])
def test_a_step_figure_drawn_alone_takes_its_own_margins_and_its_values_still_fit(models, theme, monkeypatch):
    """View 3's five step figures share one right margin in the app (their columns line up, one under another):
    the weights' row sums set it. Exported alone, a score matrix kept that room between its plot and its colour
    bar (a researcher's walk: "uses 45% of the width"); now each takes its own margins when drawn alone."""
    import copy

    import viz.export as vx

    figs = figures(models, "attention", sentence_a="春风拂面桃花", sentence_b="桃花春风拂面", theme=theme)
    shared = figs["attention-weights"]["layout"]["margin"]
    for key in ("attention-scores", "attention-scaled", "attention-masked", "attention-mask"):
        assert figs[key]["layout"]["margin"]["r"] == shared["r"]  # in the app: one margin
        drawn = vx.alone(copy.deepcopy(figs[key]))
        assert drawn["layout"]["margin"]["r"] < shared["r"] - 30, key  # no room for row sums it does not have
        assert drawn["layout"]["margin"]["l"] <= shared["l"]
        size = cell_type_px(theme)
        for trace, texts in value_texts(drawn):  # fitted again to the cells so laid out
            widest = max(text_width(x, size) for row in texts for x in row if x)
            assert widest + 4 <= cell_width(drawn, theme, trace, len(texts[0])), key
    assert vx.alone(copy.deepcopy(figs["attention-weights"]))["layout"]["margin"] == shared  # the widest: as it was
    qkv = figs["attention-qkv"]
    assert vx.alone(copy.deepcopy(qkv)) == qkv  # never shared one: as it is
    seen = []
    monkeypatch.setattr(vx._SERVER, "render", lambda data, opts: seen.append(data) or b"")
    monkeypatch.setattr(vx, "png_with_dpi", lambda raw, dpi: raw)
    vx.render(figs["attention-scores"], "png", width=600, height=480)
    assert seen[0]["layout"]["margin"]["r"] < shared["r"] - 30  # every export draws it alone


CJK_FONT_FILES = {"Noto Sans CJK SC": "NotoSansCJK-Regular.ttc", "Noto Serif CJK SC": "NotoSerifCJK-Regular.ttc"}


@pytest.mark.parametrize("family", list(CJK_FONT_FILES))
def test_the_width_estimate_is_generous_for_the_symbols_the_cjk_fonts_draw_an_em_wide(family):
    """A researcher's walk: "−∞" in masked cells ran into the next cell's: the CJK fonts first in every theme's
    list draw ∞ (and ±, ×, ÷, arrows, ␣, ...) a full em wide, which the estimate took for 0.58 em. Measured
    here in the installed fonts (scripts/test.sh installs fonts-noto-cjk)."""
    from pathlib import Path

    from PIL import ImageFont

    found = sorted(Path("/usr/share/fonts").rglob(CJK_FONT_FILES[family]))
    if not found:
        pytest.skip(f"{family} is not installed")
    index = next(i for i in range(10) if ImageFont.truetype(str(found[0]), 10, index=i).getname()[0] == family)
    font = ImageFont.truetype(str(found[0]), 100, index=index)
    for text in ("−∞", "∞", "±0.5", "×", "÷", "→", "≤", "␣", "0:你", "−2.73", "16.44"):
        assert text_width(text, 100) >= font.getlength(text) - 0.5, (text, text_width(text, 100), font.getlength(text))


@pytest.mark.parametrize("theme", ["paper", "paper-sans", "default", "slide"])
def test_masked_cells_write_minus_infinity_only_where_it_fits(models, theme):
    """14 keys, 10 of them [PAD] (sentence B of a long A): "−∞" was written in every masked cell, run together."""
    figs = figures(models, "attention", sentence_a="我喜欢她你喜欢他她喜欢我们吗", sentence_b="她喜欢你",
                   sentence="b", theme=theme)
    size = cell_type_px(theme)
    fig = figs["attention-masked"]
    assert any((t.get("meta") or {}).get("role") == "mask" for t in fig["data"])  # the [PAD] keys are masked
    for trace in fig["data"]:
        if (trace.get("meta") or {}).get("role") == "mask_text":
            w = cell_width(fig, theme, trace, 14)
            assert text_width("−∞", size) + 4 <= w, (theme, w)
            assert w >= 1.58 * size + 4  # the fonts' own "−∞" (0.58 + 1 em) fits too


@pytest.mark.parametrize("key", ["attention-scores", "attention-scaled", "attention-masked"])
def test_a_step_figure_exported_alone_writes_the_values_its_own_cells_hold(models, key):
    """A researcher's walk: 8 BPE tokens in the paper theme, the score figures exported alone had no values,
    though their own (wider) cells held one decimal: the app's pass at the five figures' shared margins had
    taken the texts off for good. viz.export.alone now writes them again, fitted to the cells as laid out."""
    import copy

    from viz.export import alone

    fig = figures(models, "attention", sentence_a=EN[0], sentence_b=EN[1], tokenizer="bpe", theme="paper")[key]
    assert not value_texts(fig)  # in the app: the shared margins leave no room
    own = alone(copy.deepcopy(fig))
    found = value_texts(own)
    assert found, key
    size = cell_type_px("paper")
    for trace, texts in found:
        w = cell_width(own, "paper", trace, len(texts[0]))
        assert max(text_width(x, size) for row in texts for x in row if x) + 4 <= w
        z = np.asarray(trace["z"], dtype=float)
        for value, text in zip(z.ravel(), (x for row in texts for x in row), strict=True):
            if text:
                assert float(text.replace("\u2212", "-")) == pytest.approx(value, abs=0.051)
