"""viz.fig: figures built as plain dicts must be exactly what plotly's validated objects make."""

from __future__ import annotations

import base64
import dataclasses
import json
import pickle

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from plotly.subplots import make_subplots

from lab.compute import load_model, model_fields, run
from lab.spec import FigureSpec
from lab.views import Models, build_view
from viz import fig as vf

VIEWS = ("tokens", "positional", "attention", "heads", "query", "order")


def _json(fig) -> dict:
    return json.loads(pio.to_json(fig, validate=False))


@pytest.fixture(scope="module")
def small_models():
    spec = FigureSpec(d_model=16, n_heads=2, n_layers=1, d_ff=32, sentence_a="你喜欢她", sentence_b="她喜欢你")
    loaded = load_model(model_fields(spec))
    traced = run(loaded, spec.sentence_a, spec.sentence_b, spec.mask)
    return spec, Models(lambda fields: loaded, lambda s: traced)


@pytest.mark.parametrize("theme", ["default", "paper", "dark"])
@pytest.mark.parametrize("view", VIEWS)
def test_every_view_figure_is_what_plotly_validation_makes(small_models, view, theme):
    """Each figure's dict passes plotly's full validation unchanged: no misspelt property, no
    colour-scale or template name left for plotly.js (which knows neither), no string title."""
    spec, models = small_models
    spec = dataclasses.replace(spec, theme=theme)
    result = build_view(view, spec, models)
    figures = [p.figure for p in result.panels if p.figure is not None]
    assert figures or view == "tokens"
    for fig in figures:
        fast = fig.to_plotly_json()
        validated = go.Figure(fast)  # raises on any invalid property
        assert _json(validated) == _json(fast)
        layout = fast["layout"]
        assert isinstance(layout["template"], dict)
        assert isinstance(layout.get("title", {}), dict)
        for trace in fast["data"]:
            assert not isinstance(trace.get("colorscale"), str)


def test_magic_underscores_follow_plotly():
    ours = vf.Fig().update_layout(paper_bgcolor="#010203", title_font_size=20, xaxis_title_text="key",
                                  plot_bgcolor="#040506").to_dict()["layout"]
    theirs = go.Figure().update_layout(paper_bgcolor="#010203", title_font_size=20, xaxis_title_text="key",
                                       plot_bgcolor="#040506").layout.to_plotly_json()
    theirs.pop("template")
    assert ours == theirs


def test_a_title_given_as_a_string_keeps_its_text_when_its_font_is_set_later_as_plotly_keeps_it():
    # xaxis_title="dimension" is plotly's shorthand for xaxis.title.text; the theme then sets the title's
    # font (vf.Patch, as apply_theme does, and update): the text must stay, as it does in plotly
    ours = vf.Fig().update_layout(xaxis_title="dimension", yaxis_title="pooled output", title="t")
    ours.update_layout(yaxis_title_font_size=13, title=dict(x=0.5))
    vf.Patch(vf.node(dict(title=dict(font=dict(size=12, family="serif"))))).apply(ours.layout["xaxis"])
    theirs = go.Figure().update_layout(xaxis_title="dimension", yaxis_title="pooled output", title="t")
    theirs.update_layout(yaxis_title_font_size=13, title=dict(x=0.5), xaxis_title_font=dict(size=12, family="serif"))
    expected = theirs.layout.to_plotly_json()
    expected.pop("template")
    assert ours.to_dict()["layout"] == expected


def test_update_merges_nested_dicts_replaces_lists_and_none_unsets():
    f = vf.Fig()
    f.update_layout(title=dict(text="a", x=0), annotations=[dict(text="1")])
    f.update_layout(title=dict(x=0.5), annotations=[dict(text="2")], margin_t=5)
    f.update_layout(margin=dict(t=None, b=3))
    g = go.Figure()
    g.update_layout(title=dict(text="a", x=0), annotations=[dict(text="1")])
    g.update_layout(title=dict(x=0.5), annotations=[dict(text="2")], margin_t=5)
    g.update_layout(margin=dict(t=None, b=3))
    theirs = _json(g)["layout"]
    theirs.pop("template", None)
    assert _json(f.to_dict())["layout"] == theirs


def test_subplots_axes_rows_and_cols_match_make_subplots():
    kw = dict(rows=2, cols=3, subplot_titles=("a", "b", "c", "d", "e", "f"), horizontal_spacing=0.05)
    f = vf.subplots(**kw)
    g = make_subplots(**kw)
    for fig in (f, g):
        fig.add_trace(vf.heatmap(z=[[1.0]]) if fig is f else go.Heatmap(z=[[1.0]]), row=2, col=3)
        fig.update_xaxes(title_text="only here", row=2, col=3)
        fig.update_yaxes(range=[0, 1], row=1)
        fig.update_xaxes(showgrid=False)
    ours, theirs = _json(f.to_dict()), _json(g)
    assert ours["data"] == theirs["data"]
    theirs["layout"].pop("template")
    ours["layout"].pop("template", None)
    assert ours["layout"] == theirs["layout"]
    with pytest.raises(ValueError, match="outside"):
        f.add_trace(vf.scatter(x=[1]), row=3, col=1)
    with pytest.raises(ValueError, match="single plot"):
        f.add_vline(x=1)


def test_vline_as_plotly_draws_it():
    ours = vf.Fig().add_vline(x=0.5, line=dict(color="red", dash="dot")).to_dict()["layout"]["shapes"]
    theirs = go.Figure().add_vline(x=0.5, line=dict(color="red", dash="dot")).layout.to_plotly_json()["shapes"]
    assert _json({"s": ours}) == _json({"s": theirs})


def test_template_and_colorscale_names_resolved_as_plotly_does():
    d = vf.Fig(vf.heatmap(z=[[0.0, 1.0]], colorscale="RdBu_r"), layout=dict(template="plotly_white")).to_dict()
    g = go.Figure(go.Heatmap(z=[[0.0, 1.0]], colorscale="RdBu_r"), layout=dict(template="plotly_white"))
    assert _json(d)["data"][0]["colorscale"] == _json(g)["data"][0]["colorscale"]
    assert _json(d)["layout"]["template"]["layout"] == _json(g)["layout"]["template"]["layout"]
    assert _json(d)["layout"]["template"]["data"]["heatmap"] == _json(g)["layout"]["template"]["data"]["heatmap"]


def test_lazy_figure_serves_the_dict_and_builds_the_tree_on_use():
    z = np.arange(6, dtype=np.float32).reshape(2, 3)
    fig = vf.Fig(vf.heatmap(z=z), layout=dict(title=dict(text="t"))).to_go()
    assert isinstance(fig, go.Figure)
    assert "_fast_dict" in fig.__dict__  # nothing built yet
    assert _json(fig) == _json(go.Figure(fig.to_dict(), layout_template=None))
    assert "_fast_dict" in fig.__dict__  # serialising did not build it either
    clone = pickle.loads(pickle.dumps(fig))
    assert np.array_equal(np.asarray(fig.data[0].z), z)  # reading builds the real tree
    assert fig.layout.title.text == "t"
    assert "_fast_dict" not in fig.__dict__
    fig.update_layout(title_text="u")
    assert fig.to_dict()["layout"]["title"]["text"] == "u"
    assert clone.layout.title.text == "t"


# -- what is sent: plain lists for small figures, typed arrays for large ones ----------------------


def test_small_figures_send_plain_lists_with_null_gaps_and_large_ones_typed_arrays():
    small = np.array([[0.5, np.nan], [np.inf, -1.25]], dtype=np.float32)
    fig = vf.Fig().add_trace(vf.heatmap(z=small, x=np.arange(2), y=np.arange(2))).to_go()
    sent = fig.to_dict()["data"][0]
    assert sent["z"] == [[0.5, None], [None, -1.25]]  # JSON null: a gap, as NaN is in plotly.js
    assert sent["x"] == [0, 1]
    json.loads(fig.to_json())  # valid JSON (no NaN / Infinity tokens)
    n = int(np.sqrt(vf.PLAIN_MAX)) + 1
    big = np.arange(n * n, dtype=np.float32).reshape(n, n)
    sent = vf.Fig().add_trace(vf.heatmap(z=big)).to_go().to_dict()["data"][0]
    assert set(sent["z"]) >= {"dtype", "bdata"}
    assert np.array_equal(np.frombuffer(base64.b64decode(sent["z"]["bdata"]), dtype=sent["z"]["dtype"]), big.ravel())


def test_to_dict_hands_out_copies_that_never_reach_the_figure():
    z = np.array([[0.5, 1.0], [2.0, 3.0]])
    fig = vf.Fig(vf.heatmap(z=z, x=np.arange(2), text=[["a", "b"], ["c", "d"]],
                            colorscale=[[0, "#fff"], [1, "#000"]]),
                 layout=dict(title=dict(text="t"), xaxis=dict(tickvals=[0, 1], ticktext=["x", "y"]))).to_go()
    first = fig.to_dict()
    want = json.dumps(first, sort_keys=True)
    t = first["data"][0]
    t["z"][0][0] = 99.0  # every level of every kind of list and dict, mutated
    t["z"].append([7.0, 7.0])
    t["x"].append(5)
    t["text"][1][0] = "zz"
    t["colorscale"][0][1] = "#f00"
    first["layout"]["xaxis"]["ticktext"][0] = "changed"
    first["layout"]["title"]["text"] = "changed"
    assert json.dumps(fig.to_dict(), sort_keys=True) == want
    second = fig.to_dict()
    assert second["data"][0]["z"] is not fig.to_dict()["data"][0]["z"]
    assert second["data"][0]["z"][0] is not fig.to_dict()["data"][0]["z"][0]


def test_patch_applies_like_update_and_is_never_shared_with_its_targets():
    raw = dict(showline=True, title_font=dict(size=12, family="serif"), margin=dict(l=3), tickvals=[1, 2],
               meta={})
    patch_tree = vf.node(raw)
    patch = vf.Patch(patch_tree)
    for start in (dict(), dict(showline=False, title=dict(text="t", font=dict(color="red"))),
                  dict(title="plain string title", margin=dict(r=5), tickvals=[9])):
        ours, theirs = vf.node(start), vf.node(start)
        patch.apply(ours)
        theirs.update(raw)  # the plain dict, parsed key by key: plotly's own update rules
        assert ours == theirs
        ours.title.font.size = 99  # mutating a target ...
        ours.tickvals.append(3)
        ours.margin.l = 0
    assert patch_tree.title.font.size == 12  # ... never reaches the patch
    assert patch_tree.tickvals == [1, 2] and patch_tree.margin.l == 3
    again = patch.apply(vf.Node())
    assert again.title.font.size == 12 and again.tickvals == [1, 2] and again.margin == {"l": 3}
    # a Node handed to update goes through Patch: lists of dicts (annotations) are copied too
    notes = vf.node(dict(annotations=[dict(text="a", font_size=9)]))
    first, second = vf.Node().update(notes), vf.Node().update(notes)
    first.annotations[0].font.size = 30
    assert second.annotations[0].font.size == 9 and notes.annotations[0].font.size == 9


def test_measuring_the_left_margin_adds_no_axis_to_the_figure():
    from viz.theme import _left_of_plot, theme_spec

    fig = vf.Fig(vf.heatmap(z=[[1, 2], [3, 4]]),
                 layout=dict(yaxis=dict(anchor="x3", domain=[0, 1], ticktext=["a", "b"])))
    before = json.dumps(fig.to_dict(), sort_keys=True)
    assert _left_of_plot(fig, theme_spec("default"), fig._axes("y", None, None)) > 0
    assert json.dumps(fig.to_dict(), sort_keys=True) == before  # no empty "xaxis3" appeared


@pytest.mark.parametrize("tokens", [4, 300])  # plain lists with null gaps, and typed arrays (bdata)
def test_the_payload_is_orjson_s_and_the_same_as_the_json_module_s(tokens):
    """requirements.txt pins orjson, which plotly.io.to_json takes when it is importable (2-3x faster at
    32 tokens and up); the browser must get the same figure either way: every view, NaN gaps and all."""
    import orjson  # noqa: F401  (a missing install fails here, not in a benchmark's figures)

    assert pio.json.config.default_engine in ("auto", "orjson")
    text = "你喜欢她。" * (tokens // 5) + "你喜欢她"[: tokens % 5]
    spec = FigureSpec(d_model=16, n_heads=2, n_layers=1, d_ff=32, sentence_a=text, sentence_b=text[::-1])
    models = Models(lambda fields: load_model(fields))
    for view in VIEWS:
        for panel in build_view(view, spec, models).panels:
            if panel.figure is None:
                continue
            sent = vf.payload_json(panel.figure)
            assert sent == pio.to_json(panel.figure, validate=False, engine="orjson")
            assert json.loads(sent) == json.loads(pio.to_json(panel.figure, validate=False, engine="json"))


def test_every_view_s_figures_stay_lean_so_their_payload_is_made_once():
    """The app's view cache keeps a view's figures and each one's payload (viz.fig.payload_json), made once for every
    session and rerun, where the figure is still lean (its plotly tree never built). View 6's pooled outputs built
    theirs (fig.data[1].marker.line.color set after the theme) and were serialised again on every rerun of view 6."""
    text = "你喜欢她我有一只猫"
    models = Models(lambda fields: load_model(fields))
    specs = [FigureSpec(d_model=16, n_heads=2, n_layers=1, d_ff=32, sentence_a=text, sentence_b=text[::-1], theme=t)
             for t in ("default", "slide", "dark")]
    specs.append(FigureSpec(model="zh-en", sentence_a="你喜欢她", sentence_b="她喜欢你"))
    for spec in specs:
        for view in (*VIEWS, "translate"):  # the trained model's view 7 too (a hint for the random model)
            for panel in build_view(view, spec, models).panels:
                if panel.figure is not None:
                    assert vf._pending(panel.figure) is not None, (spec.theme, view, panel.key)
                    assert vf.payload_json(panel.figure) is vf.payload_json(panel.figure), (view, panel.key)


def test_reading_a_layout_value_leaves_a_shared_figure_as_the_view_cache_keeps_it():
    """ui/export reads a figure's height on every rerun of an open download box: reading fig.layout would
    build the lean figure's plotly tree on a figure every session shares, and its payload would change
    encoding (typed arrays became lists for the next session: tests/test_view_cache.py caught it)."""
    fig = vf.Fig(vf.heatmap(z=np.arange(6.0).reshape(2, 3), x=np.arange(3.0), y=np.arange(2.0)),
                 layout=dict(height=620, title=dict(text="t"))).to_go()
    before = vf.payload_json(fig)
    assert vf.layout_value(fig, "height") == 620 and vf.layout_value(fig, "width") is None
    assert "_fast_dict" in fig.__dict__ and vf.payload_json(fig) == before
    assert vf.layout_value(go.Figure(layout=dict(height=300)), "height") == 300
    assert vf.layout_value({"layout": {"height": 200}}, "height") == 200
