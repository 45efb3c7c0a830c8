"""The server-wide view cache (ui/cache.py view_result): a view is built once per (view, spec) for every
session, each figure's payload made once with it, and what a cached view draws is what a fresh build
draws. Its memory bound counts what a cached view holds (lab.views.ViewResult.nbytes)."""

from __future__ import annotations

import dataclasses
import gc
import json
import threading
import time
import tracemalloc

import plotly.io as pio
import pytest
from conftest import SMALL, charts, figures, needs_trained, title, unique_sentence
from test_app import view as view_of

import lab.views
from bench.app_figures import APP_SPECS, spec_for
from viz.export import find_browser
from viz.fig import payload_json

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def sent(at) -> list[str]:
    """What the page's charts send the browser, one JSON text per chart (title, figure, caption)."""
    return [json.dumps({k: v for k, v in c.items() if k != "key"}, sort_keys=True) for c in charts(at)]


@pytest.mark.parametrize("view", ["attention", "heads"])
def test_sessions_with_the_same_settings_share_one_build_that_draws_what_a_fresh_build_draws(
        make_app, builds, view):
    import ui.cache

    state = dict(view=view, sentence_a=unique_sentence("你喜欢她"), **SMALL)
    first = make_app(**state)
    assert len(builds[view]) == 1
    panel = charts(first)[0]["key"].removeprefix("chart-")  # "<view>-<panel key>"
    first.session_state[f"numbers-{panel}"] = True  # open the numbers behind the first figure:
    first.run()  # its table is made, and kept in the shared panel
    assert first.dataframe and len(builds[view]) == 1
    second = make_app(**state)  # another student, the same sentence and settings
    assert len(builds[view]) == 1, "the second session built the view again"
    assert sent(second) == sent(first) and sent(first)
    ui.cache.view_result.cache_clear()
    fresh = make_app(**state)
    assert len(builds[view]) == 2
    assert sent(fresh) == sent(first)  # the shared view draws exactly what a fresh build draws


def test_going_back_to_a_head_builds_nothing_and_another_sentence_builds_its_own(make_app, builds):
    at = make_app(view="attention", sentence_a=unique_sentence("你喜欢她"), **SMALL)
    head0 = sent(at)
    at.selectbox(key="head").set_value(1).run()
    head1 = sent(at)
    assert len(builds["attention"]) == 2 and head1 != head0
    at.selectbox(key="head").set_value(0).run()
    assert len(builds["attention"]) == 2 and sent(at) == head0
    other = make_app(view="attention", sentence_a=unique_sentence("你喜欢她"), **SMALL)
    assert len(builds["attention"]) == 3 and sent(other) != head0


def test_a_control_a_view_does_not_show_builds_it_no_more_and_it_draws_what_a_fresh_build_draws(make_app, builds):
    """view_result was keyed on every selection control, those a view does not read among them: view 2 was built again
    for each head a student had visited in view 3 (and once per student in a class on different heads), view 4 for
    each head opened from its buttons. Keyed on lab.views.read_spec, a view is built once whatever those hold."""
    import ui.cache

    at = make_app(view="attention", sentence_a=unique_sentence("你喜欢她"), **SMALL)
    drawn = {v: sent(view_of(at, v)) for v in ("positional", "heads")}
    view_of(at, "attention")
    at.selectbox(key="head").set_value(1).run()  # view 3 at head 1: views 2 and 4 read no head
    assert {v: sent(view_of(at, v)) for v in drawn} == drawn
    view_of(at, "attention")
    at.selectbox(key="layer").set_value(1).run()  # and at layer 1: view 2 reads no layer, view 4 does
    assert sent(view_of(at, "positional")) == drawn["positional"]
    assert sent(view_of(at, "heads")) != drawn["heads"]
    assert {v: len(builds[v]) for v in ("positional", "heads", "attention")} == {
        "positional": 1, "heads": 2, "attention": 3}, "a control the view does not read built it again"
    ui.cache.view_result.cache_clear()
    assert sent(view_of(at, "positional")) == drawn["positional"]  # what a fresh build at head 1, layer 1 draws


def test_a_new_export_size_or_scale_builds_no_view_again_and_its_downloads_take_it(make_app, builds):
    """A re-read of ui/cache.py: view_result was keyed on the whole spec, its downloads' width, height and PNG scale
    (the sidebar's Export size) among them, which no view's figures read: each change to them built the view shown
    again, every figure the same. Keyed without them, the page draws what it drew, and the downloads (ui/export.py,
    which reads them from the page's spec) take the new size."""
    import ui.cache

    at = make_app(view="attention", sentence_a=unique_sentence("你喜欢她"), **SMALL)
    at.session_state["numbers-attention-attention-weights"] = True
    at.run()
    drawn = sent(at)
    assert len(builds["attention"]) == 1
    for key, value in (("width", 1200), ("height", 900), ("scale", 2.0)):
        at.number_input(key=key).set_value(value).run()
        assert not at.exception
        assert len(builds["attention"]) == 1, f"a new {key} built the view again"
        assert sent(at) == drawn
    if find_browser():  # SVG/PDF/PNG need Chromium on the server (a GPU machine may have none)
        png = at.get("download_button")
        (label,) = [b.proto.label for b in png if b.proto.id.endswith("export-attention-attention-weights-png")
                    or "PNG" in b.proto.label]
        assert label == "PNG 192 dpi"  # 2 x 96: the page's spec, not the one the view was built with
        assert "2400×1800 px" in [b.proto.help for b in png if b.proto.label == label][0]
    ui.cache.view_result.cache_clear()
    at.run()
    assert len(builds["attention"]) == 2 and sent(at) == drawn  # what a build at the new size draws


@pytest.mark.parametrize("model", ["random", pytest.param("zh-en", marks=needs_trained)])
def test_the_order_views_passes_are_made_once_for_the_encodings_they_compare(make_app, monkeypatch, model):
    """A re-read of ui/cache.py: view 6's forward passes (ui.cache.order) were keyed on the model's fields, the
    positional encoding chosen among them, where they compare lab.views.compared_pe's with none: sinusoidal and none
    chosen give the same two models, and switching between them ran both again (the trained pair's greedy
    translations of A and B with them, zh-en and zh-en-nope). The same passes serve both; learned, the random model's
    other encoding, its own. Each draws what a fresh build draws."""
    import ui.cache

    made = []
    monkeypatch.setattr(ui.cache, "order_data", lambda spec, models: made.append(spec) or lab.views.order_data(
        spec, models))
    at = make_app(view="order", model=model, sentence_b=unique_sentence("她喜欢你"), **SMALL)
    assert not at.exception and len(made) == 1
    at.selectbox(key="positional").set_value("none").run()
    assert not at.exception and len(made) == 1, "the same two models compared, made again"
    drawn = sent(at)
    ui.cache.order.clear()
    ui.cache.view_result.cache_clear()
    at.run()
    assert len(made) == 2 and sent(at) == drawn  # what the passes made for "none" draw
    if model == "random":
        at.selectbox(key="positional").set_value("learned").run()
        assert not at.exception and len(made) == 3  # learned against none: passes of their own


def test_a_student_asking_for_a_view_being_built_waits_for_that_build(monkeypatch):
    """30 students on the teacher's sentence at once: one build, not 30."""
    import ui.cache

    calls = []
    real = lab.views.VIEW_BUILDERS["tokens"]

    def slow(spec, models):
        calls.append(threading.get_ident())
        time.sleep(0.3)
        return real(spec, models)

    monkeypatch.setitem(lab.views.VIEW_BUILDERS, "tokens", slow)
    spec = dataclasses.replace(spec_for(APP_SPECS["app"], 8, salt=31), views=("tokens",))
    got = [None] * 6

    def student(i: int) -> None:
        got[i] = ui.cache.view_result("tokens", spec)

    threads = [threading.Thread(target=student, args=(i,)) for i in range(len(got))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(calls) == 1
    assert all(r is got[0] for r in got) and got[0].panels


def test_the_kept_payload_is_the_figures_json_and_a_change_to_the_figure_drops_it():
    import ui.cache

    spec = dataclasses.replace(spec_for(APP_SPECS["app"], 8, salt=32), views=("attention",))
    fig = ui.cache.view_result("attention", spec).panels[0].figure
    kept = payload_json(fig)
    assert kept is payload_json(fig)  # made once
    assert kept == pio.to_json(fig, validate=False)  # serialised again from the figure's data: the same
    own = dataclasses.replace(spec, theme="paper")  # a figure of our own to change, not the cached one
    mine = lab.views.build_view("attention", own, ui.cache.models()).panels[0].figure
    before = payload_json(mine)
    mine.update_layout(title_text="changed")
    after = payload_json(mine)
    assert after != before and json.loads(after)["layout"]["title"]["text"] == "changed"


def _held_per_view(view: str, tokens: int, n: int = 8, tables: bool = True) -> tuple[float, float]:
    """(bytes tracemalloc counts per cached view, ViewResult.nbytes per view), over n new views of
    the app's model (after one more, so one-time caches are warm)."""
    import ui.cache

    specs = [dataclasses.replace(spec_for(APP_SPECS["app"], tokens, salt=100 + i), views=(view,))
             for i in range(n + 1)]
    for spec in specs:
        ui.cache.run_for(spec)
    ui.cache.view_result(view, specs[0])
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        results = [ui.cache.view_result(view, spec) for spec in specs[1:]]
        counted = sum(r.nbytes() for r in results)  # before any table is made: what the cache counts
        if tables:
            for r in results:
                for panel in r.panels:
                    if panel.has_table:
                        assert panel.table is not None  # made now, kept with the panel
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    return held / n, counted / n


@pytest.mark.parametrize("view", ["attention", "heads"])
def test_the_memory_bound_counts_what_a_cached_view_holds(view):
    """The cache is bounded by ViewResult.nbytes, counted when a view is stored: against tracemalloc's
    count of what each view then holds (its tables made, as a click makes them), no more than ~2x
    low at 8 tokens, and not low at 128 (where the numbers behind the figures dominate)."""
    held, counted = _held_per_view(view, 8)
    assert counted >= held / 2.5, (held, counted)
    held, counted = _held_per_view(view, 128, n=4)
    assert counted >= held, (held, counted)


@needs_trained
def test_view_7s_step_charts_are_built_once_per_what_they_show(make_app, monkeypatch):
    """A profile of view 7: its two step charts (ui/translate.py) were built on every rerun, the head's projections
    replayed and both figures drawn again, where nothing they show had changed: the training panel's slider, a head
    flipped and back. They are kept (ui.translate.step_panels) by what they show: a rerun that changes none of it
    builds none, a new head, layer, step or theme builds the two of it, and what a kept pair draws is what it drew."""
    import viz

    built = []
    for name in ("decoder_self_attention_heatmap", "cross_attention_heatmap"):
        real = getattr(viz, name)
        monkeypatch.setattr(viz, name, lambda *a, real=real, name=name, **k: (built.append(name), real(*a, **k))[1])

    def step_titles(at) -> list[str]:
        return [t for t in (title(f) for f in figures(at)) if t.endswith(f"step {at.slider(key='translate_step').value}")]

    at = make_app(view="translate", model="zh-en")
    head0, drawn = step_titles(at), sent(at)
    assert head0 == ["Decoder self-attention, layer 0, head 0, step 1", "Cross-attention, layer 0, head 0, step 1"]
    built.clear()
    at.slider(key="train_steps").set_value(300).run()  # the training panel, below: nothing the step charts show
    assert not at.exception and built == [], built
    assert sent(at) == drawn
    at.selectbox(key="head").set_value(1).run()  # another head: its two step charts (and the view's own charts)
    assert step_titles(at) == [t.replace("head 0", "head 1") for t in head0]
    assert built.count("decoder_self_attention_heatmap") == 2 and built.count("cross_attention_heatmap") == 2, built
    built.clear()
    at.selectbox(key="head").set_value(0).run()  # back: the view's charts and the step charts, all kept
    assert built == [], built
    assert sent(at) == drawn
    at.slider(key="translate_step").set_value(2).run()  # another step: its two, the view's own kept
    assert sorted(built) == ["cross_attention_heatmap", "decoder_self_attention_heatmap"], built
    assert step_titles(at) == [t.replace("step 1", "step 2") for t in head0]
