"""The main area is one st.fragment (app.py main_area): sentence, view, layer and head changes rerun only it.
Inside it, the view bar, the controls and the figures are a fragment of their own (app.py view_area): a
view, layer or head change reruns only that, not the sentence boxes.

AppTest.run() always reruns the whole script, so `fragment_runs` makes its runs what the server does
when a widget inside a fragment changes: a rerun of that fragment only (RerunData with the
fragment's id queued, as the browser's rerun request carries it). Everything else here is what a
browser session sees: the elements the fragment sends, session_state and the URL's query parameters.
"""

from __future__ import annotations

import functools
import json
import re
from urllib.parse import parse_qsl, urlsplit

import pytest
from conftest import SMALL, charts, figures, needs_trained, title, unique_sentence

import lab.views as lab_views
from lab.spec import FigureSpec
from viz.export import find_browser

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class FragmentRuns:
    """fragment_runs(at): from now on at.run() reruns only the fragment "main", as the server does for a
    sentence box; fragment_runs(at, "view-area") only the one inside it, as for the view bar and the layer or
    head box; fragment_runs.off(): whole-script runs again (a new session's first run must be one)."""

    def __init__(self, monkeypatch):
        from streamlit.testing.v1 import local_script_runner

        self.module, self.real, self.monkeypatch = local_script_runner, local_script_runner.RerunData, monkeypatch

    def __call__(self, at, key: str = "main"):
        ids = at._fragment_storage.resolve_target(key)  # the fragment the app registered under this key
        assert ids, f"app.py registered no fragment with key {key!r}"
        self.monkeypatch.setattr(self.module, "RerunData", functools.partial(
            self.real, fragment_id_queue=list(ids), is_fragment_scoped_rerun=True))
        return at

    def off(self) -> None:
        self.monkeypatch.setattr(self.module, "RerunData", self.real)


@pytest.fixture
def fragment_runs(monkeypatch) -> FragmentRuns:
    return FragmentRuns(monkeypatch)


def clean(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def titles(at) -> list[str]:
    """Panel headings as shown (the app backslash-escapes punctuation; a chart's heading is its element's
    title), then figure titles."""
    return ([re.sub(r"\\(.)", r"\1", str(h.value)) for h in at.subheader] + [c["title"] for c in charts(at)]
            + [title(f) for f in figures(at)])


def test_layer_head_and_view_changes_rerun_neither_the_forward_pass_nor_the_sidebar(make_app, calls, fragment_runs):
    at = make_app(view="attention", sentence_a=unique_sentence(), **SMALL)
    clean(at)
    assert calls == {"forward": 1, "sidebar": 1}
    fragment_runs(at, "view-area")
    at.selectbox(key="layer").set_value(1).run()
    clean(at)
    at.selectbox(key="head").set_value(1).run()
    clean(at)
    assert any("layer 1" in t and "head 1" in t for t in titles(at)), titles(at)  # the new head is drawn...
    at.segmented_control(key="view").set_value("heads").run()
    clean(at)
    assert figures(at) and any("layer 1" in t for t in titles(at))
    at.segmented_control(key="view").set_value("query").run()
    at.selectbox(key="query").set_value(2).run()
    clean(at)
    assert calls == {"forward": 1, "sidebar": 1}  # ...from the same forward pass, and no sidebar run
    assert not at.sidebar  # a fragment run sends only the fragment's elements
    assert not at.text_input  # not even the sentence boxes: their fragment (main) holds this one (view-area)
    assert at.segmented_control(key="view").value == "query" and at.selectbox(key="query").value == 2


def test_a_new_sentence_reruns_the_view_area_inside_the_main_area(make_app, calls, fragment_runs):
    """main_area's rerun (a sentence box) draws view_area within it: the controls and figures of the new
    sentence, with the boxes; view_area's own rerun (a head) draws the controls and figures only."""
    at = make_app(view="attention", sentence_a=unique_sentence(), **SMALL)
    clean(at)
    fragment_runs(at, "main")
    new = unique_sentence()
    at.text_input(key="sentence_a").set_value(new).run()
    clean(at)
    assert at.text_input(key="sentence_a").value == new and at.selectbox(key="head").value == 0
    assert len(charts(at)) == 6 and calls == {"forward": 2, "sidebar": 1}
    fragment_runs(at, "view-area")
    at.selectbox(key="head").set_value(1).run()
    clean(at)
    assert not at.text_input and len(charts(at)) == 6 and at.query_params["sentence_a"] == new
    assert any("head 1" in t for t in titles(at)) and calls == {"forward": 2, "sidebar": 1}


def test_a_new_sentence_reruns_only_the_main_area_with_a_new_forward_pass(make_app, calls, fragment_runs):
    """The sentences are typed in the main area, inside the fragment: a fragment run sends their boxes
    (so a change in them reruns the fragment, as Streamlit does for a fragment's widgets), runs the
    forward pass for the new sentence and draws its figures, and runs no sidebar."""
    import plotly.io as pio

    from ui.cache import models

    at = make_app(view="attention", sentence_a=unique_sentence(), **SMALL)
    clean(at)
    assert calls == {"forward": 1, "sidebar": 1}
    fragment_runs(at)
    new = unique_sentence()
    at.text_input(key="sentence_a").set_value(new).run()
    clean(at)
    assert calls == {"forward": 2, "sidebar": 1}
    assert not at.sidebar and at.text_input(key="sentence_a").value == new  # the box is the fragment's
    spec = FigureSpec.from_query(dict(at.query_params))
    assert spec.sentence_a == new
    want = [p for p in lab_views.build_view("attention", spec, models()).panels if p.figure is not None]
    assert [c["figure"] for c in charts(at)] == [json.loads(pio.to_json(p.figure, validate=False)) for p in want]
    at.button(key="swap").click().run()  # and so do the swap button and the examples menu
    clean(at)
    assert at.session_state["sentence_b"] == new and not at.sidebar and calls["sidebar"] == 1


def test_a_fragment_run_keeps_the_share_link_current(make_app, fragment_runs):
    at = fragment_runs(make_app(view="attention", share=True, **SMALL), "view-area")  # share: the share box open
    at.selectbox(key="block").set_value("cross").run()
    at.selectbox(key="layer").set_value(1).run()
    at.selectbox(key="head").set_value(1).run()
    clean(at)
    link = dict(at.query_params)
    assert (link["views"], link["block"], link["layer"], link["head"]) == ("attention", "cross", "1", "1")
    # the link as the page shows it opens the same view in a new session
    shown = dict(parse_qsl(urlsplit(at.code[0].value).query))
    assert shown == link
    fragment_runs.off()
    other = make_app(link=shown)
    clean(other)
    ss = other.session_state
    assert (ss["view"], ss["block"], ss["layer"], ss["head"]) == ("attention", "cross", 1, 1)
    assert any("cross, layer 1, head 1" in t for t in titles(other)), titles(other)


def test_a_share_link_opens_view_block_layer_head_and_sentence(make_app):
    query = {"views": "query", "block": "decoder self", "layer": "1", "head": "1", "sentence": "b", "query": "2",
             "sentence_a": "我爱我家", "sentence_b": "I like her", **{k: str(v) for k, v in SMALL.items()}}
    at = make_app(link=query, share=True)
    clean(at)
    ss = at.session_state
    assert (ss["view"], ss["block"], ss["layer"], ss["head"], ss["sentence"], ss["query"]) == \
        ("query", "decoder self", 1, 1, "b", 2)
    assert at.selectbox(key="head").value == 1 and at.selectbox(key="layer").value == 1  # the controls show it
    assert FigureSpec.from_json(at.code[1].value) == FigureSpec.from_query(query)


@pytest.mark.parametrize("change", ["view", "sentence"])
def test_a_bad_links_message_stays_until_a_setting_changes_then_goes_in_a_fragment_run(make_app, fragment_runs,
                                                                                       change):
    at = make_app(link={"layer": "abc"}, **SMALL)
    assert len(at.error) == 1 and "layer" in str(at.error[0].value)
    fragment_runs(at, "view-area" if change == "view" else "main")  # what the server reruns for either
    at.run()  # a rerun with nothing changed (a reconnect, say): still said
    assert len(at.error) == 1
    if change == "view":
        at.segmented_control(key="view").set_value("heads").run()
    else:
        at.text_input(key="sentence_a").input("我爱我家").run()
    clean(at)  # the user moved on: the message is gone, though only the main area reran


def test_open_head_buttons_switch_view_and_head_in_a_fragment_run(make_app, calls, fragment_runs):
    at = make_app(view="heads", layer=1, sentence_a=unique_sentence(), **SMALL)
    clean(at)
    fragment_runs(at, "view-area")
    at.button(key="open-head-1").click().run()
    clean(at)
    ss = at.session_state
    assert (ss["view"], ss["layer"], ss["head"]) == ("attention", 1, 1)
    assert at.segmented_control(key="view").value == "attention"  # the picker follows
    assert at.selectbox(key="head").value == 1
    assert any("layer 1, head 1" in t for t in titles(at)), titles(at)
    assert at.query_params["views"] == "attention" and at.query_params["head"] == "1"
    assert calls == {"forward": 1, "sidebar": 1}


def test_controls_a_view_does_not_draw_keep_their_values_through_fragment_runs(make_app, fragment_runs):
    at = fragment_runs(make_app(view="attention", **SMALL), "view-area")
    at.selectbox(key="head").set_value(1).run()
    at.segmented_control(key="view").set_value("heads").run()  # no head control in this view
    at.multiselect(key="heads").set_value([0]).run()
    at.segmented_control(key="view").set_value("positional").run()  # no heads control either
    at.segmented_control(key="view").set_value("attention").run()
    clean(at)
    assert at.session_state["head"] == 1 and at.selectbox(key="head").value == 1
    at.segmented_control(key="view").set_value("heads").run()
    assert at.session_state["heads"] == [0]


def test_numbers_downloads_and_the_share_box_are_drawn_only_when_opened(make_app):
    at = make_app(view="attention", **SMALL)
    clean(at)
    assert not at.dataframe and not at.code  # closed: nothing built
    assert not at.get("download_button")
    expanders = [e.proto.label for e in at.expander]
    n_figures = len(charts(at))
    assert expanders.count("The numbers behind this figure · CSV, SVG, PDF, PNG") == n_figures == 6
    at.session_state["numbers-attention-attention-weights"] = True  # the user opens one figure's expander
    at.run()
    clean(at)
    (table,) = at.dataframe
    assert table.value.shape[0] == table.value.shape[1] == len("你喜欢她")  # the weights, one row per query
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels[0] == "CSV" and not at.code
    if find_browser():  # SVG/PDF/PNG need Chromium on the server (otherwise a caption says how to get it)
        assert labels[1:] == ["SVG", "PDF", "PNG 300 dpi"]
    at.session_state["share"] = True  # and the share box
    at.run()
    clean(at)
    assert [b.proto.label for b in at.get("download_button")][-1] == "SPEC.json"
    link, spec_json = at.code[0].value, at.code[1].value
    assert FigureSpec.from_json(spec_json) == FigureSpec.from_query(dict(parse_qsl(urlsplit(link).query)))


def test_numbers_too_many_to_show_are_offered_as_csv_only_saying_how_many(make_app):
    """View 2's embedding + PE + sum of 20 tokens at d_model 512: 60 x 512 numbers, over the 20,000 a figure's
    numbers are shown up to (ui/panels.py SHOW_NUMBERS_CELLS); the page says so and keeps the CSV."""
    at = make_app(view="positional", sentence_a="春风拂面桃花盛开景色宜人" + "山高水长" * 2, sentence_b="",
                  d_model=512, n_heads=8, n_layers=1, d_ff=32)
    at.session_state["numbers-positional-embedding-pe"] = True
    at.run()
    clean(at)
    assert not at.dataframe
    assert "60 × 512 numbers: too many to show here; download them as CSV." in [c.value for c in at.caption]
    assert [b.proto.label for b in at.get("download_button")][0] == "CSV"


@needs_trained
def test_a_view_that_switches_the_model_reruns_the_sidebar_too(make_app, calls, fragment_runs):
    at = fragment_runs(make_app(view="attention", **SMALL), "view-area")
    at.segmented_control(key="view").set_value("order").run()
    clean(at)
    assert at.session_state["model"] == "zh-en"
    assert at.selectbox(key="model").value == "zh-en"  # the sidebar was drawn again, with the new model
    assert calls["sidebar"] == 2


def test_every_session_and_rerun_reads_the_same_run_object_never_a_copy(make_app, calls, fragment_runs, monkeypatch):
    """ui/cache.py keeps runs as st.cache_resource: a rerun (fragment or whole script) and another
    session with the same sentences get the very object the forward pass made (no pickled copy);
    another sentence gets another run."""
    import lab.views

    seen = []
    for name in ("attention", "query"):
        def recording(spec, models, real=lab.views.VIEW_BUILDERS[name]):
            seen.append(models.run(spec))
            return real(spec, models)

        monkeypatch.setitem(lab.views.VIEW_BUILDERS, name, recording)
    sentence = unique_sentence()
    first = make_app(view="attention", sentence_a=sentence, **SMALL)
    clean(first)
    run = seen[-1]
    assert run is not None and calls["forward"] == 1
    def storage(r):  # where the tensors a record keeps (its block's inputs, the mask) live: not a copy's
        return [t.data_ptr() for t in r.trace.encoder.layers[0].self_attn.kept() if t is not None]

    kept = storage(run)
    fragment_runs(first, "view-area")
    first.selectbox(key="head").set_value(1).run()
    clean(first)
    fragment_runs.off()
    first.selectbox(key="layer").set_value(1).run()  # a whole-script rerun
    clean(first)
    other = make_app(view="query", sentence_a=sentence, **SMALL)  # another session, same sentences
    clean(other)
    assert len(seen) == 4 and all(r is run for r in seen)
    assert storage(run) == kept and len(kept) >= 2
    assert calls["forward"] == 1
    other.session_state["sentence_a"] = sentence + " 2"
    other.run()
    clean(other)
    assert seen[-1] is not run and seen[-1].sentences[0].text == sentence + " 2"
    assert calls["forward"] == 2
    assert run.sentences[0].text == sentence  # the first run is untouched


def test_closed_numbers_do_not_build_their_tables(make_app, monkeypatch):
    """lab.views.Panel builds a table when it is first read: a rerun with every numbers expander and
    download menu closed reads none."""
    import lab.views

    read = []
    real = lab.views.Panel.table

    monkeypatch.setattr(lab.views.Panel, "table", property(lambda self: read.append(self.key) or real.fget(self)))
    at = make_app(view="attention", **SMALL)
    clean(at)
    assert figures(at) and read == []
    at.session_state["numbers-attention-attention-weights"] = True
    at.run()
    clean(at)
    assert set(read) == {"attention-weights"}


def test_every_rerun_and_fragment_rerun_runs_torch_on_the_app_threads(monkeypatch, make_app, fragment_runs):
    """Each rerun runs in a new thread, which starts with the last thread count set anywhere in the
    process: full and fragment reruns both set the app's (lab.threads.app_torch_threads:
    OMP_NUM_THREADS, else 1)."""
    import os

    import torch

    import lab.views

    seen: list[int] = []
    real = lab.views.VIEW_BUILDERS["attention"]

    def recording(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return real(*args, **kwargs)

    monkeypatch.setitem(lab.views.VIEW_BUILDERS, "attention", recording)
    want = int(os.environ.get("OMP_NUM_THREADS") or 1)
    torch.set_num_threads(2)  # what a new thread starts with (torch hands the last setting on)
    at = make_app(view="attention", sentence_a=unique_sentence(), **SMALL)
    clean(at)
    fragment_runs(at, "view-area")
    torch.set_num_threads(2)  # again: the fragment rerun's new thread must set its own
    at.selectbox(key="head").set_value(1).run()
    clean(at)
    assert len(seen) >= 2 and seen == [want] * len(seen)


def test_previous_and_next_buttons_step_head_and_layer_round_in_fragment_runs(make_app, calls, fragment_runs):
    """◂ ▸ after the head and layer boxes (keys ← → and Shift+← →): one step, wrapping round, no forward."""
    at = make_app(view="attention", sentence_a=unique_sentence(), **SMALL)  # SMALL: 2 layers, 2 heads
    clean(at)
    fragment_runs(at, "view-area")
    n_heads, n_layers = SMALL["n_heads"], SMALL["n_layers"]
    seen = []
    for _ in range(n_heads):
        at.button(key="head-next").click().run()
        clean(at)
        seen.append(at.session_state["head"])
        assert at.selectbox(key="head").value == seen[-1]
        assert any(f"layer 0, head {seen[-1]}" in t for t in titles(at)), titles(at)
    assert seen == [*range(1, n_heads), 0]  # every head once, then round to the first
    at.button(key="head-prev").click().run()
    assert at.session_state["head"] == n_heads - 1  # back from the first: the last
    at.button(key="layer-next").click().run()
    clean(at)
    assert (at.session_state["layer"], at.session_state["head"]) == (1, n_heads - 1)
    assert any(f"layer 1, head {n_heads - 1}" in t for t in titles(at)), titles(at)
    at.button(key="layer-prev").click().run()
    at.button(key="layer-prev").click().run()
    assert at.session_state["layer"] == n_layers - 1
    assert at.query_params["layer"] == str(n_layers - 1)  # the share link follows
    assert calls == {"forward": 1, "sidebar": 1}
    shortcuts = {b.key: b.proto.shortcut for b in at.button if b.key and b.key.startswith(("head-", "layer-"))}
    assert shortcuts == {"head-prev": "left", "head-next": "right", "layer-prev": "shift+left",
                         "layer-next": "shift+right"}  # as Streamlit normalises them


def test_one_head_disables_the_head_buttons(make_app):
    at = make_app(view="attention", **(SMALL | {"n_heads": 1}))
    clean(at)
    assert at.button(key="head-next").disabled and at.button(key="head-prev").disabled
    assert not at.button(key="layer-next").disabled


def test_an_export_size_too_small_for_the_margins_turns_the_downloads_off_and_says_why(make_app):
    """A researcher's walk: a size below the theme's margins failed as 'rendering failed' (lab.export, after the
    figures before it were drawn); in the app the click would have failed. The buttons now say why instead."""
    if not find_browser():
        pytest.skip("SVG/PDF/PNG downloads need Chromium on the server")
    at = make_app(view="attention", width=120, height=120, **SMALL)
    at.session_state["numbers-attention-attention-qkv"] = True
    at.run()
    clean(at)
    buttons = {b.proto.label: b.proto for b in at.get("download_button")}
    assert buttons["CSV"].disabled is False  # the numbers need no room
    for label in ("SVG", "PDF", "PNG 300 dpi"):
        assert buttons[label].disabled and "Export size (sidebar): 120 px leaves the plot" in buttons[label].help
    assert [c for c in at.caption if "Export size (sidebar)" in c.value]


def test_a_png_larger_than_chromium_can_draw_is_turned_off_saying_so_and_the_vector_files_stay(make_app):
    """2,000 CSS px at scale 10 is a 20,000 px PNG; Chromium paints at most 16,384 px a side."""
    if not find_browser():
        pytest.skip("SVG/PDF/PNG downloads need Chromium on the server")
    at = make_app(view="attention", width=2000, height=1000, scale=10.0, **SMALL)
    at.session_state["numbers-attention-attention-qkv"] = True  # the panel's numbers and downloads open
    at.run()
    clean(at)
    buttons = [b.proto for b in at.get("download_button") if b.proto.label in ("SVG", "PDF", "PNG 960 dpi")]
    assert buttons and {b.label for b in buttons} == {"SVG", "PDF", "PNG 960 dpi"}
    for b in buttons:
        if b.label.startswith("PNG"):
            assert b.disabled and b.help.startswith("20000×") and b.help.endswith(
                " px is more than Chromium can draw: lower the scale")
        else:
            assert not b.disabled, b.label
