"""Tests from mutation testing of the UI layer (app.py, ui/): what the page shows, what the share link holds,
which model, sentence, head and layer a view draws, and what a download is named and holds.

Each test checks a behaviour against something recomputed apart from the code under test: a fresh build of the
view (lab.views.build_view, not the shared cache), the bytes lab.export writes, the translate view's whole charts,
the sidebar's own ranges, or a mirrored session.
"""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qsl, urlsplit

import numpy as np
import plotly.io as pio
import pytest
import torch
from conftest import SMALL, charts, needs_trained, title, unique_sentence
from test_app import alerts, clean, figure_titled, plain, values_z, view

from lab.spec import MAX_CHARS, FigureSpec

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SMALL_LINK = {k: str(v) for k, v in SMALL.items()}


def link_spec(at) -> FigureSpec:
    """The spec the address bar's share link holds."""
    return FigureSpec.from_query(dict(at.query_params))


def fresh_figures(at) -> list[dict]:
    """The figures a fresh build of the link's view draws (lab.views.build_view, not ui.cache's shared views)."""
    import lab.views
    from ui.cache import models

    spec = link_spec(at)
    built = lab.views.build_view(spec.views[0], spec, models())
    return [json.loads(pio.to_json(p.figure, validate=False)) for p in built.panels if p.figure is not None]


# -- the share link ---------------------------------------------------------------------------------------------
def test_the_share_link_carries_the_first_max_chars_of_each_sentence_and_opens_them(make_app):
    """ui/state.py share_query cuts each sentence at MAX_CHARS (the share box says so): both sentences, not one."""
    a = "".join(chr(0x4E00 + i % 500) for i in range(MAX_CHARS + 300))  # every cut position a different character
    b = "".join(chr(0x4E00 + (i * 7) % 500) for i in range(MAX_CHARS + 100))
    at = make_app(view="tokens", sentence_a=a, sentence_b=b, share=True, **SMALL)
    assert not at.exception
    link = dict(parse_qsl(urlsplit(at.code[0].value).query))
    assert (link["sentence_a"], link["sentence_b"]) == (a[:MAX_CHARS], b[:MAX_CHARS])
    assert (at.query_params["sentence_a"], at.query_params["sentence_b"]) == (a[:MAX_CHARS], b[:MAX_CHARS])
    assert any("first 2,000 characters" in plain(c.value) for c in at.caption)
    opened = make_app(link=link)
    assert not opened.exception
    assert (opened.session_state["sentence_a"], opened.session_state["sentence_b"]) == (a[:MAX_CHARS], b[:MAX_CHARS])


def test_heads_picked_in_any_order_make_the_same_link_and_the_same_grid(make_app):
    """The same heads picked in another order are the same view: one link, one figure (spec_from_state sorts)."""
    state = dict(view="heads", sentence_a=unique_sentence("你喜欢她"), **(SMALL | {"n_heads": 4}))
    sessions = []
    for order in ([3, 1], [1, 3]):
        at = make_app(**state)
        at.multiselect(key="heads").set_value(order).run()
        clean(at)
        sessions.append(at)
    first, second = sessions
    assert dict(first.query_params) == dict(second.query_params)
    assert set(link_spec(first).heads) == {1, 3}
    assert [c["figure"] for c in charts(first)] == [c["figure"] for c in charts(second)]


def test_a_setting_back_at_its_default_leaves_the_address_bar(make_app):
    """The address bar is this view's link: a layer set back to 0 is no longer in it (a stale layer=1 left there
    would open another layer than the page shows)."""
    at = make_app(view="attention", **SMALL)
    at.selectbox(key="layer").set_value(1).run()
    at.selectbox(key="head").set_value(1).run()
    assert (at.query_params["layer"], at.query_params["head"]) == ("1", "1")
    at.selectbox(key="layer").set_value(0).run()
    at.segmented_control(key="view").set_value("positional").run()
    clean(at)
    params = dict(at.query_params)
    assert "layer" not in params and params["views"] == "positional"
    spec = link_spec(at)
    ss = at.session_state
    assert (spec.layer, spec.head, spec.views) == (ss["layer"], ss["head"], (ss["view"],)) == (0, 1, ("positional",))


def test_a_link_at_the_ends_of_the_sidebars_ranges_opens_as_it_says(make_app):
    """What the sidebar's number boxes offer (their min and max), a link may name: no 'more than this app offers'."""
    at = make_app(view="tokens", **SMALL)
    boxes = {b.key: b for b in at.number_input if b.key in ("d_model", "n_heads", "n_layers", "d_ff", "seed",
                                                             "width", "height", "scale")}
    assert len(boxes) == 8
    top = {k: b.max if k == "scale" else int(b.max) for k, b in boxes.items()}
    top["d_model"] = top["d_model"] - top["d_model"] % top["n_heads"]  # a size that splits into the most heads
    bottom = {k: b.min if k == "scale" else int(b.min) for k, b in boxes.items()}
    for ends in (top, bottom):
        link = {"views": "tokens", **{k: str(v) for k, v in ends.items()}}
        opened = make_app(link=link)
        assert not opened.exception and not opened.error, [plain(e.value) for e in opened.error]
        assert {k: opened.session_state[k] for k in ends} == pytest.approx(ends)


# -- the link's error notice ------------------------------------------------------------------------------------
@pytest.mark.parametrize("change", ["head", "layer", "theme"])
def test_a_bad_links_notice_goes_with_any_change_of_a_setting(make_app, change):
    at = make_app(link={"views": "attention", "colour": "red", **SMALL_LINK})
    assert len(at.error) == 1 and "colour" in plain(at.error[0].value)
    at.selectbox(key=change).set_value({"head": 1, "layer": 1, "theme": "paper"}[change]).run()
    clean(at)


# -- sentences --------------------------------------------------------------------------------------------------
def test_swap_exchanges_the_two_sentences(make_app):
    a, b = "我爱我家", "春风拂面桃花"
    at = make_app(view="tokens", sentence_a=a, sentence_b=b, **SMALL)
    at.button(key="swap").click().run()
    clean(at)
    assert (at.text_input(key="sentence_a").value, at.text_input(key="sentence_b").value) == (b, a)
    assert (at.query_params["sentence_a"], at.query_params["sentence_b"]) == (b, a)
    assert list(at.dataframe[1].value["piece"]) == list(b) and list(at.dataframe[2].value["piece"]) == list(a)


def test_the_query_tokens_are_those_of_the_sentence_chosen(make_app):
    a, b = "我爱我家", "她喜欢你们"  # B the longer: neither sentence's tokens padded in its own row
    at = make_app(view="query", sentence_a=a, sentence_b=b, **SMALL)
    clean(at)
    for sentence, text in (("a", a), ("b", b)):
        at.radio(key="sentence").set_value(sentence).run()
        clean(at)
        shown = at.selectbox(key="query").options
        assert shown[:len(text)] == [f"{i}:{c}" for i, c in enumerate(text)], (sentence, shown)


def test_each_setting_draws_what_a_fresh_build_of_its_link_draws(make_app):
    """ui/cache.py view_result is shared by every session: its key must hold every field the view reads. Within one
    session, each change (sentence, head, layer, block, query, heads, mask, theme) draws the fresh build of the
    link's spec, not a view cached for another spec."""
    at = make_app(view="attention", sentence_a="我爱我家", sentence_b=unique_sentence("I like her"), **SMALL)
    clean(at)
    steps = [("radio", "sentence", "b"), ("selectbox", "head", 1), ("selectbox", "layer", 1),
             ("selectbox", "block", "cross"), ("radio", "sentence", "a"), ("view", "view", "query"),
             ("selectbox", "query", 2), ("radio", "sentence", "b"), ("view", "view", "heads"),
             ("multiselect", "heads", [1]), ("selectbox", "mask", "none"), ("selectbox", "theme", "paper")]
    for kind, key, value in steps:
        if kind == "view":
            view(at, value)
        else:
            getattr(at, kind)(key=key).set_value(value).run()
        clean(at)
        assert at.session_state[key] == value
        assert [c["figure"] for c in charts(at)] == fresh_figures(at), (key, value)


def test_a_links_heads_past_the_last_are_dropped_as_the_others_are(make_app):
    """The model's last head is n_heads - 1: a link's head n_heads is not there (an off-by-one kept it)."""
    n = SMALL["n_heads"]
    at = make_app(link={"views": "heads", "heads": f"0,{n}", **SMALL_LINK})
    clean(at)
    assert at.multiselect(key="heads").value == [0]
    assert alerts(at.warning) == [f"heads = [{n}] are not available here ({n} heads: 0 to {n - 1}); using [0]."]
    assert link_spec(at).heads == (0,)



@pytest.mark.parametrize("layer, head", [(0, 1), (1, 0)])
def test_a_head_button_opens_its_own_layer_and_head(make_app, layer, head):
    """The heads view's "head h" buttons under layer L open layer L, head h (not layer h, head L)."""
    at = make_app(view="heads", layer=layer, **SMALL)
    clean(at)
    at.button(key=f"open-head-{head}").click().run()
    clean(at)
    ss = at.session_state
    assert (ss["view"], ss["layer"], ss["head"]) == ("attention", layer, head)
    assert (link_spec(at).layer, link_spec(at).head) == (layer, head)
    assert any(f"layer {layer}, head {head}" in t for c in charts(at) for t in (c.get("title", ""), title(c["figure"])))

# -- downloads --------------------------------------------------------------------------------------------------
@pytest.fixture
def downloads(monkeypatch) -> dict[str, bytes]:
    """Each deferred download the page offers (st.download_button with a callable), by file name: its bytes."""
    from streamlit.runtime.media_file_manager import MediaFileManager

    seen: dict[str, bytes] = {}
    real = MediaFileManager.add_deferred

    def recording(self, data_callable, mimetype, coordinates, file_name=None, **kwargs):
        if str(file_name).endswith(".csv"):  # (an SVG/PDF/PNG one would render the figure)
            data = data_callable()
            seen[file_name] = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        return real(self, data_callable, mimetype, coordinates, file_name, **kwargs)

    monkeypatch.setattr(MediaFileManager, "add_deferred", recording)
    return seen


@pytest.mark.parametrize("name", ["tokens", "attention"])
def test_a_csv_download_is_named_and_holds_what_lab_export_writes(make_app, downloads, name):
    """`python -m lab.export` writes each panel's numbers as <view>-<panel>.csv (viz.export.table_csv): the app's
    CSV button offers the same file under the same name."""
    import lab.views
    from ui.cache import models
    from viz.export import table_csv

    at = make_app(view=name, sentence_a=unique_sentence("你喜欢她"), **SMALL)
    for c in charts(at):  # open every figure's numbers
        at.session_state[f"numbers-{c['key'].removeprefix('chart-')}"] = True
    at.run()
    clean(at)
    spec = link_spec(at)
    want = {f"{name}-{p.key}.csv": table_csv(p.table) for p in lab.views.build_view(name, spec, models()).panels
            if p.has_table}
    assert want and downloads == want


# -- trained models ---------------------------------------------------------------------------------------------
@needs_trained
def test_the_translate_view_chosen_in_the_view_bar_switches_to_the_trained_model(make_app):
    at = make_app(view="attention", **SMALL)
    view(at, "translate")
    clean(at)
    assert at.session_state["model"] == "zh-en" and at.selectbox(key="model").value == "zh-en"
    assert any("Switched to the trained zh-en model" in t for t in alerts(at.info))
    assert at.slider(key="translate_step")  # it decodes: not the random model's "needs zh-en" note


@needs_trained
def test_the_trained_models_query_token_keeps_its_number_across_blocks(make_app):
    """The decoder of a trained model reads the translation, not [BOS] + the source: no token to follow from the
    encoder's position i to i + 1 (ui/look.py follow_the_token shifts only the random model's)."""
    at = make_app(view="query", model="zh-en", sentence_a="你喜欢她", query=2)
    clean(at)
    for block in ("decoder self", "cross", "encoder self"):
        at.selectbox(key="block").set_value(block).run()
        clean(at)
        assert at.selectbox(key="query").value == 2 and link_spec(at).query == 2, block


@needs_trained
def test_the_decoding_steps_show_the_chosen_sentence_layer_and_head(make_app):
    """Each step's charts are the top-left corner of the view's whole charts of the same layer and head (rows:
    the steps so far), for sentence B too, and the step's note names that chart's row."""
    at = make_app(view="translate", model="zh-en", sentence_a="你喜欢她", sentence_b="我爱我家", sentence="b",
                  layer=1, head=1)
    clean(at)
    whole_self = values_z(figure_titled(at, "Decoder self-attention (causal"))
    whole_cross_fig = figure_titled(at, "Cross-attention: each decoding step over the source")
    whole_cross = values_z(whole_cross_fig)
    rows = list(whole_cross_fig["layout"]["yaxis"]["ticktext"])
    assert "layer 1, head 1" in " ".join(re.sub(r"<br[^>]*>", " ", title(whole_cross_fig)).split())  # as read, unwrapped
    n = int(at.slider(key="translate_step").max)
    assert n == whole_self.shape[0] == len(rows)
    for step in sorted({1, 2, n}):
        at.slider(key="translate_step").set_value(step).run()
        clean(at)
        own = values_z(figure_titled(at, "Decoder self-attention, layer 1, head 1"))
        np.testing.assert_array_equal(own, whole_self[:step, :step])
        cross = values_z(figure_titled(at, "Cross-attention, layer 1, head 1"))
        np.testing.assert_array_equal(cross, whole_cross[:step, :cross.shape[1]])
        assert any(f"Step {step} of {n}" in t and f"(the charts' last row, {rows[step - 1]})" in t
                   for t in alerts(at.info)), (step, alerts(at.info))


@needs_trained
def test_each_decoding_step_says_it_has_read_bos_and_what_the_steps_before_it_wrote(make_app):
    """Mutant: the step's note "the decoder has read “…”" one token short (step 1 read nothing, step 2 only [BOS]).
    Greedy decoding starts from [BOS] alone, and each step reads what the steps before it predicted: step t has
    read [BOS] and the words steps 1 … t − 1 said they predict."""
    import re

    at = make_app(view="translate", model="zh-en", sentence_a="你喜欢她")
    clean(at)
    n = int(at.slider(key="translate_step").max)
    assert n >= 3
    written = []
    for step in range(1, n + 1):
        at.slider(key="translate_step").set_value(step).run()
        clean(at)
        (note,) = [t for t in alerts(at.info) if t.startswith(f"Step {step} of {n}:")]
        said = re.search(r"has read “(.*)” and predicts “(.*?)”", note)
        assert said, note
        assert said.group(1) == " ".join(["[BOS]", *written]), (step, note)
        written.append(said.group(2))


def test_the_model_line_gives_each_heads_own_width_d_k(make_app):
    """Mutant: the model line's d_k worked out as d_model ÷ layers (the same as ÷ heads where the two counts agree,
    as in every size the suite opened). With 4 heads and 2 layers, d_k is the width of one head's q, taken here from
    the model's own forward pass."""
    from lab.compute import model_fields
    from ui.cache import load

    size = {"d_model": 32, "n_heads": 4, "n_layers": 2, "d_ff": 64}
    at = make_app(view="tokens", **size)
    clean(at)
    line = next(plain(c.value) for c in at.caption if plain(c.value).startswith("Model: "))
    model = load(model_fields(link_spec(at))).model
    src = torch.tensor([[5, 6, 7]])
    with torch.no_grad():
        _, trace = model.encode(src, None, return_trace=True)
    d_k = trace.layers[0].self_attn.q.shape[-1]
    assert d_k != size["d_model"] // size["n_layers"]  # the premise: the mutant's number differs
    assert f"· 4 heads (d_k {d_k}) · 2 encoder layers + 2 decoder layers ·" in line, line


@needs_trained
def test_view_7s_kept_step_charts_follow_every_control_they_show(make_app):
    """Mutants of ui.translate._step_key (the step charts kept server-wide by what they show): the key without the
    sentence's row, the layer, B's text, the model's fields or the theme gave, after that control changed, the pair
    of charts kept for the one before it: A's attention under the Sentence radio's B, layer 0's under layer 1,
    zh-en's under zh-en-nope, the default theme's white charts in the dark theme. After each change, in one session
    (the cache warm), the step charts are the top-left corner of the view's own whole charts of that change (built
    apart, by ui.cache.view_result), in their theme's colours."""
    at = make_app(view="translate", model="zh-en", sentence_a="你喜欢她", sentence_b="我爱我家")
    clean(at)

    def check(layer: int, head: int) -> None:
        clean(at)
        whole_self_fig = figure_titled(at, "Decoder self-attention (causal")
        whole_cross_fig = figure_titled(at, "Cross-attention: each decoding step over the source")
        whole_self, whole_cross = values_z(whole_self_fig), values_z(whole_cross_fig)
        step = int(at.slider(key="translate_step").value)
        own = figure_titled(at, f"Decoder self-attention, layer {layer}, head {head}, step {step}")
        cross = figure_titled(at, f"Cross-attention, layer {layer}, head {head}, step {step}")
        np.testing.assert_array_equal(values_z(own), whole_self[:step, :step])
        np.testing.assert_array_equal(values_z(cross), whole_cross[:step, :values_z(cross).shape[1]])
        for fig in (own, cross):
            assert fig["layout"].get("paper_bgcolor") == whole_cross_fig["layout"].get("paper_bgcolor")
            assert fig["layout"]["font"]["size"] == whole_cross_fig["layout"]["font"]["size"]

    at.slider(key="translate_step").set_value(2).run()
    check(0, 0)
    at.radio(key="sentence").set_value("b").run()  # the row: B's decoding, not A's
    check(0, 0)
    at.text_input(key="sentence_b").set_value("她爱你").run()  # B's text, shown as row b
    check(0, 0)
    at.selectbox(key="layer").set_value(1).run()  # the layer
    check(1, 0)
    at.selectbox(key="positional").set_value("none").run()  # the model: zh-en-nope
    check(1, 0)
    at.selectbox(key="theme").set_value("dark").run()  # the theme
    check(1, 0)


@needs_trained
@pytest.mark.parametrize("trained", ["sinusoidal", "none"])
def test_after_one_run_the_train_panel_names_the_choice_not_yet_trained(make_app, trained):
    """Mutant of ui/train.py (a mutation walk): the translations' caption after one run, "Train again with “Train with
    positional encoding: …” to compare the two", named the choice just trained, sending a student to train the
    same model again. It names the panel's own radio, as it is labelled, and the option of it that has no run yet."""
    at = make_app(view="translate", model="zh-en")
    radio = at.radio(key="train_positional")
    radio.set_value(trained)
    at.slider(key="train_steps").set_value(10)
    at.button(key="train_go").click().run()
    clean(at)
    radio = at.radio(key="train_positional")
    shown = dict(zip(["sinusoidal", "none"], radio.options, strict=True))  # as the radio shows its options
    (said,) = [plain(c.value) for c in at.caption if "Train again with" in plain(c.value)]
    other = shown["none" if trained == "sinusoidal" else "sinusoidal"]
    assert f"“{radio.label}: {other}”" in said, said
