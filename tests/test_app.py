"""The Streamlit app, driven through streamlit.testing (AppTest): every view, every setting, bad input.

Figures are checked in the JSON the browser receives: one heatmap row and column per token, unique
tick labels, masked cells where the mask says, weight rows that sum to 1.
"""

from __future__ import annotations

import json
import re
import uuid
from urllib.parse import parse_qsl, urlsplit

import numpy as np
import pytest
from conftest import SMALL, chart_texts, decode_array, figures, needs_trained, title, traces

from lab.spec import BLOCKS, MASKS, POSITIONALS, VIEWS, FigureSpec
from ui.state import DEFAULTS
from viz.theme import THEME_NAMES, theme_spec

pytestmark = pytest.mark.usefixtures("one_torch_thread")

HTML_A = "<img src=x onerror=alert(1)>"
HTML_B = "<script>alert(1)</script>"
TEXT_ELEMENTS = ("title", "subheader", "markdown", "caption", "info", "warning", "error", "success")


def clean(at) -> None:
    """Valid input: no exception and no error box on the page."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def view(at, name: str):
    return at.segmented_control(key="view").set_value(name).run()


def figure_titled(at, prefix: str) -> dict:
    found = [f for f in figures(at) if title(f).startswith(prefix)]
    assert found, f"no figure titled {prefix!r} among {[title(f) for f in figures(at)]}"
    return found[0]


def values_z(fig: dict) -> np.ndarray:
    """The heatmap's values: its one trace, or its pieces (viz.heatmap.even_pieces: up to 2 x 2, in
    row-major order) put back together."""
    pieces = traces(fig, "values")
    if len(pieces) == 1:
        return decode_array(pieces[0]["z"])
    first_y = decode_array(pieces[0]["y"])[0]
    per_row = sum(decode_array(t["y"])[0] == first_y for t in pieces)  # pieces across
    rows = [pieces[i:i + per_row] for i in range(0, len(pieces), per_row)]
    return np.vstack([np.hstack([decode_array(t["z"]) for t in row]) for row in rows])


def ticktext(fig: dict, axis: str = "yaxis") -> list[str]:
    return list(fig["layout"][axis]["ticktext"])


def plain(markdown: object) -> str:
    """What markdown shows for our escaped text: the app backslash-escapes every punctuation mark."""
    return re.sub(r"\\(.)", r"\1", str(markdown))


def as_shown(frame):
    """An st.table's frame as the page shows it: st.table renders its text as markdown, which the app escapes (ui/panels.py
    as_text): each cell, row name and column name read as plain does."""
    def shown(v):
        return plain(v) if isinstance(v, str) else v

    return frame.map(shown).rename(index=shown, columns=shown)


def texts(at) -> list[str]:
    """Every piece of text the page shows: what it renders as markdown (titles, captions, alerts...), as
    shown, then each chart's title and caption (plain text)."""
    return [plain(e.value) for kind in TEXT_ELEMENTS for e in at.get(kind)] + chart_texts(at)


def alerts(elements) -> list[str]:
    return [plain(e.value) for e in elements]


# -- every view -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", VIEWS)
def test_every_view_renders_for_the_defaults(make_app, name):
    at = make_app(view=name, **SMALL)
    clean(at)
    assert at.title[0].value == "Attention Lab"
    if name == "tokens":
        assert len(at.dataframe) == 3  # A next to B (first: lesson step 1's table), A, B
        assert list(at.dataframe[0].value["A piece"]) == list("你喜欢她")
        assert list(at.dataframe[1].value["piece"]) == list("你喜欢她")
    elif name == "translate":  # the random model cannot translate: say so, and offer to train one
        assert any("zh-en" in t for t in alerts(at.info))
        assert at.button(key="train_go")
    else:
        assert figures(at), f"the {name} view drew no figure"


@needs_trained
@pytest.mark.parametrize("name", VIEWS)
def test_every_view_renders_with_the_trained_model(make_app, name):
    at = make_app(view=name, model="zh-en", sentence_a="我爱我家", sentence_b="I like her")
    clean(at)
    assert figures(at) or name == "tokens"


def test_an_unexpected_failure_shows_one_line_not_a_traceback(make_app, monkeypatch):
    import lab.views

    def broken(spec, models):
        raise RuntimeError("simulated bug")

    monkeypatch.setitem(lab.views.VIEW_BUILDERS, "heads", broken)
    at = make_app(view="heads", share=True, **SMALL)  # share: the share box open
    assert not at.exception
    assert len(at.error) == 1 and "RuntimeError: simulated bug" in plain(at.error[0].value)
    assert "Traceback" not in " ".join(texts(at))
    assert at.code  # the spec that reproduces it is still there


@pytest.mark.parametrize("fault", ["no checkpoint", "a broken checkpoint"])
def test_without_the_trained_models_the_sidebar_offers_the_random_one_and_says_why(make_app, monkeypatch,
                                                                                     tmp_path, fault):
    """A server without assets/models (a clone without them) or with one that will not load: Model offers the
    random model only, its help says why, and a link's model=zh-en falls back to it with a note."""
    import shutil

    import model.demo
    import ui.cache
    from model.checkpoint import CheckpointError

    monkeypatch.setattr(ui.cache, "models_dir", lambda: tmp_path)
    if fault == "no checkpoint":
        why = f"no checkpoint in {tmp_path / 'zh-en'}, {tmp_path / 'zh-en-nope'} (train one with `python -m model.train`)"
    else:
        for name in ui.cache.TRAINED:  # the configs are there (their times key the check); loading fails
            (tmp_path / name).mkdir()
            shutil.copy(model.demo.MODELS_DIR / name / "config.json", tmp_path / name / "config.json")

        def broken(name, *args, **kwargs):
            raise CheckpointError(f"{tmp_path / name / 'config.json'} is not valid JSON")

        monkeypatch.setattr(model.demo, "load_demo", broken)
        why = f"CheckpointError: {tmp_path / 'zh-en' / 'config.json'} is not valid JSON"
    at = make_app(view="attention", model="zh-en", **SMALL)
    assert not at.exception and figures(at)
    box = at.selectbox(key="model")
    assert box.options == ["random (untrained; any size)"] and box.value == "random"
    assert box.help.endswith(f"Not available here: {why}.")
    # the link's note gives the reason too (it said only "not available here", the why hidden in a help tooltip)
    assert f"model = 'zh-en' is not available here ({why}); using 'random'." in alerts(at.warning)


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_page_says_which_norm_and_which_masking_convention(make_app, norm):
    """FACTS: post-norm (the paper) or pre-norm is fine if the UI says which. The line said "post-norm" for a pre-norm
    model and every test passed (only post was opened); each placement is named now, the other not."""
    at = make_app(view="attention", norm=norm, **SMALL)
    line = " ".join(texts(at))
    said = {"post": "post-norm: x = LayerNorm(x + Sublayer(x))", "pre": "pre-norm: x = x + Sublayer(LayerNorm(x))"}
    assert said[norm] in line and said[{"post": "pre", "pre": "post"}[norm]] not in line, line
    assert "−∞" in line and "all-zero weights" in line


# -- figure contents --------------------------------------------------------------------------
@pytest.mark.parametrize("sentence, n_tokens", [("a", len("我爱我家")), ("b", len("I like her"))])
def test_attention_matrices_have_one_row_per_token_and_unique_labels(make_app, sentence, n_tokens):
    """Repeated tokens (我…我, the two spaces and two e's of 'I like her') must not merge rows."""
    at = make_app(view="attention", sentence_a="我爱我家", sentence_b="I like her", sentence=sentence, **SMALL)
    clean(at)
    width = max(len("我爱我家"), len("I like her"))  # A and B share a batch: the shorter one is padded
    scores = figure_titled(at, "1. Scores")
    assert values_z(scores).shape == (width, width)
    labels = ticktext(scores)
    assert len(labels) == width and len(set(labels)) == width
    assert sum("[PAD]" not in label for label in labels) == n_tokens
    weights = values_z(figure_titled(at, "5. Weights"))
    np.testing.assert_allclose(np.nansum(weights, axis=1), 1.0, atol=1e-5)  # masked cells are NaN gaps


def test_look_ahead_mask_hides_exactly_the_future(make_app):
    at = make_app(view="attention", mask="look-ahead", sentence="b", sentence_a="我爱我家",
                  sentence_b="I like her", **SMALL)
    clean(at)
    fig = figure_titled(at, "5. Weights")
    z = values_z(fig)
    future = np.triu(np.ones(z.shape, dtype=bool), k=1)
    assert np.isnan(z[future]).all() and np.isfinite(z[~future]).all()
    assert traces(fig, "mask"), "masked cells must be drawn (grey, hatched), not only left blank"
    np.testing.assert_allclose(np.nansum(z, axis=1), 1.0, atol=1e-5)
    mask_fig = figure_titled(at, "3. Mask")
    assert traces(mask_fig, "mask")


def test_every_positional_encoding_and_mask_mode_renders(make_app):
    at = make_app(view="attention", **SMALL)
    for positional in POSITIONALS:
        for mask in MASKS:
            at.selectbox(key="positional").set_value(positional)
            at.selectbox(key="mask").set_value(mask).run()
            clean(at)
            assert len(figures(at)) == 6, (positional, mask)  # Q/K/V, scores, scaled, mask, masked, weights
    view(at, "positional")
    clean(at)
    assert any("NO positional encoding" in t for t in texts(at))  # the last setting was positional=none


def test_every_block_renders_in_every_attention_view(make_app):
    at = make_app(sentence_a="我爱我家", sentence_b="I like her", **SMALL)
    for name in ("attention", "heads", "query"):
        view(at, name)
        for block in BLOCKS:
            at.selectbox(key="block").set_value(block).run()
            clean(at)
            assert figures(at), (name, block)
    # the query side of decoder self / cross is [BOS] + the tokens
    assert at.selectbox(key="query").options[0].endswith("[BOS]")


# -- bad input --------------------------------------------------------------------------------
@pytest.mark.parametrize("a, b", [("", ""), ("   \t ", " \u3000 ")])
def test_empty_or_blank_text_shows_a_hint(make_app, a, b):
    for name in ("tokens", "attention", "order"):
        at = make_app(view=name, sentence_a=a, sentence_b=b, **SMALL)
        clean(at)
        assert not figures(at)
        assert any("Type" in t for t in alerts(at.info)), name


def test_with_no_sentence_the_query_box_is_off_and_says_why(make_app):
    # it offered one choice, "0", as if a token 0 were there to pick
    at = make_app(view="query", sentence_a=" ", sentence_b="", **SMALL)
    clean(at)
    box = at.selectbox(key="query")
    assert box.disabled and box.options == ["no tokens yet"]
    at.text_input(key="sentence_a").set_value("你喜欢她").run()
    box = at.selectbox(key="query")
    assert not box.disabled and box.options == ["0:你", "1:喜", "2:欢", "3:她"]


def test_a_long_paste_is_cut_with_a_visible_notice(make_app):
    at = make_app(view="attention", sentence_a="春风拂面" * 2500, **SMALL)  # 10,000 characters
    clean(at)
    notices = alerts(at.warning)
    assert any("10" in n and "only the first 511" in n for n in notices), notices
    z = values_z(figure_titled(at, "1. Scores"))
    assert z.shape == (256, 256)  # drawn as block means (the last of 1 token), not 511 x 511 cells


def test_the_tokenizer_help_says_what_the_shipped_tokenizers_do(make_app):
    """A tokens walk: the Tokenizer "?" said "char: one token per character" (👍🏽, one character to a reader, is two
    tokens, 👍 and the skin tone) and "bpe: byte-pair merges", which reads as byte-level BPE (GPT-2's, with no
    unknown bytes), where ours merges characters and reads an unseen one as [UNK]. Its examples hold of the files."""
    from model.tokenizer import UNK, load_tokenizer

    at = make_app(view="tokens", **SMALL)
    said = at.radio(key="tokenizer").help
    char, bpe = load_tokenizer("char"), load_tokenizer("bpe")
    whole, *parts = re.search(r"per Unicode code point \((\S+) is (\S+) \+ (\S+), two tokens\)", said).groups()
    enc = char.encode(whole)
    assert len(enc) == 2 and [whole[s:e] for s, e in enc.offsets] == parts
    assert "over characters, not bytes: a character missing from its vocabulary is [UNK]" in said
    assert bpe.encode(whole).pieces == (UNK, UNK)  # no byte fallback
    for word in re.search(r"\(e\.g\. (\S+) or '([^']+)' become one token\)", said).groups():
        assert bpe.encode(word).pieces == (word,)


def test_token_tables_show_spaces_and_control_characters_as_marks(make_app):
    at = make_app(view="tokens", sentence_a="I like\x07", tokenizer="bpe", **SMALL)
    clean(at)
    table = at.dataframe[1].value  # after A next to B
    assert list(table["piece"]) == ["I", "␣like", "[UNK]"]  # BPE keeps the space with the word
    assert list(table["text"])[-1] == "⟨U+0007⟩"  # the bell character, visible


def test_emoji_control_characters_and_right_to_left_text_work(make_app):
    a = "I ❤️ 🐱\x00\x07 tab\there"
    b = "שלום עולם مرحبا"
    for name in ("tokens", "attention", "query"):
        at = make_app(view=name, sentence_a=a, sentence_b=b, **SMALL)
        clean(at)
    at = make_app(view="attention", sentence_a=a, sentence_b=b, **SMALL)
    labels = ticktext(figure_titled(at, "1. Scores"))
    assert len(set(labels)) == len(labels)
    assert all("\x00" not in label and "\x07" not in label for label in labels)  # shown as visible marks


def test_html_in_a_sentence_is_shown_as_text_never_as_markup(make_app):
    for name in ("tokens", "attention", "query", "order"):
        at = make_app(view=name, sentence_a=HTML_A, sentence_b=HTML_B, query=0, **SMALL)
        clean(at)
        for element in (e for kind in TEXT_ELEMENTS for e in at.get(kind)):
            assert not getattr(element.proto, "allow_html", False)
            assert not re.search(r"(?<!\\)[<>]", str(element.value)), element.value  # every < is escaped
        for fig in figures(at):
            for axis in ("xaxis", "yaxis"):
                assert not any("<" in t for t in fig["layout"].get(axis, {}).get("ticktext", []))
    at = make_app(view="tokens", sentence_a=HTML_A, sentence_b=HTML_B, **SMALL)
    shown = "".join(at.dataframe[1].value["text"])  # A's own table, after A next to B
    assert shown == HTML_A.replace(" ", "␣")  # the characters themselves, as data (spaces made visible)
    at = make_app(view="attention", sentence_a=HTML_A, sentence_b=HTML_B, **SMALL)
    assert ticktext(figure_titled(at, "1. Scores"))[0] == "0:&lt;"  # Plotly shows &lt; as "<"


@needs_trained
def test_html_in_a_translation_caption_is_escaped(make_app):
    at = make_app(view="translate", model="zh-en", sentence_a=HTML_A)
    clean(at)
    shown = [str(e.value) for e in at.info if "→" in str(e.value)]
    assert shown and not re.search(r"(?<!\\)<img", shown[0])
    assert plain(shown[0]).startswith(f"{HTML_A} → ")  # the characters as typed


def test_impossible_sizes_are_refused_with_a_sentence_naming_the_field(make_app):
    at = make_app(view="attention", d_model=30, n_heads=4, n_layers=1, d_ff=32)
    assert not at.exception
    assert len(at.error) == 1 and "heads: d_model 30 does not split into 4 heads" in plain(at.error[0].value)
    assert not figures(at)
    at.number_input(key="d_model").set_value(31)
    at.number_input(key="n_heads").set_value(1).run()  # odd d_model with sinusoidal PE
    assert not at.exception and "d_model" in plain(at.error[0].value)
    at.number_input(key="d_model").set_value(32).run()
    clean(at)
    assert figures(at)
    line = next(plain(c.value) for c in at.caption if plain(c.value).startswith("Model: "))
    assert "1 head (d_k 32) · 1 encoder layer + 1 decoder layer ·" in line  # "1 encoder + 1 decoder layers"


# -- caching and sessions ---------------------------------------------------------------------
def test_changing_only_layer_head_query_view_or_theme_reuses_the_forward_pass(make_app, monkeypatch):
    import lab.compute

    calls = []
    real = lab.compute.run

    def counting(*args, **kwargs):
        calls.append(args[1:])
        return real(*args, **kwargs)

    monkeypatch.setattr(lab.compute, "run", counting)
    unique = f"cache {uuid.uuid4().hex[:8]}"  # a sentence no earlier test has run
    at = make_app(view="attention", sentence_a=unique, **SMALL)
    clean(at)
    assert len(calls) == 1
    at.selectbox(key="layer").set_value(1).run()
    at.selectbox(key="head").set_value(1).run()
    at.selectbox(key="theme").set_value("paper").run()
    view(at, "query")
    at.selectbox(key="query").set_value(3).run()
    view(at, "heads")
    clean(at)
    assert any("layer 1" in t for t in texts(at))  # the new layer is drawn...
    assert len(calls) == 1  # ...from the same forward pass
    at.selectbox(key="mask").set_value("none").run()
    assert len(calls) == 2  # the mask changes the forward pass


def test_two_sessions_do_not_see_each_others_settings(make_app):
    first, second = make_app(**SMALL), make_app(**SMALL)
    first.text_input(key="sentence_a").input("春风拂面").run()
    first.selectbox(key="theme").set_value("dark").run()
    second.run()
    assert second.session_state["sentence_a"] == "你喜欢她" and second.session_state["theme"] == "default"
    assert list(first.dataframe[1].value["piece"]) == list("春风拂面")
    assert list(second.dataframe[1].value["piece"]) == list("你喜欢她")


# -- controls ---------------------------------------------------------------------------------
def test_a_preset_fills_both_sentences(make_app):
    from ui.state import PRESETS

    at = make_app(**SMALL)
    label = next(k for k in PRESETS if k.startswith("I like her"))
    menu = at.menu_button(key="preset")
    assert menu.options == list(PRESETS)
    menu.click(label).run()
    clean(at)
    assert (at.session_state["sentence_a"], at.session_state["sentence_b"]) == PRESETS[label]
    assert at.text_input(key="sentence_b").value == PRESETS[label][1]
    at.text_input(key="sentence_a").set_value("我爱我家").run()  # the example is applied once, on the click
    clean(at)
    assert (at.session_state["sentence_a"], at.session_state["sentence_b"]) == ("我爱我家", PRESETS[label][1])
    assert at.menu_button(key="preset").value is None  # the menu is ready for the next example


def test_a_head_opens_step_by_step_from_the_heads_view(make_app):
    at = make_app(view="heads", layer=1, **SMALL)
    at.button(key="open-head-1").click().run()
    clean(at)
    assert (at.session_state["view"], at.session_state["layer"], at.session_state["head"]) == ("attention", 1, 1)
    assert any("layer 1, head 1" in t for t in texts(at))


def test_share_link_opens_the_same_view_and_settings(make_app):
    query = {"sentence_a": "我爱我家", "views": "heads", "layer": "1", "theme": "paper", "mask": "look-ahead",
             **{k: str(v) for k, v in SMALL.items()}}
    at = make_app(link=query, share=True)
    clean(at)
    ss = at.session_state
    assert (ss["view"], ss["layer"], ss["theme"], ss["mask"], ss["sentence_a"]) == ("heads", 1, "paper", "look-ahead", "我爱我家")
    link, spec_json = at.code[0].value, at.code[1].value
    shown = FigureSpec.from_json(spec_json)
    assert FigureSpec.from_query(dict(parse_qsl(urlsplit(link).query))) == shown
    assert shown == FigureSpec.from_query(query)


def test_a_query_token_the_new_sentence_lacks_says_so_as_layer_and_head_do(make_app):
    at = make_app(view="query", sentence_a="我爱我的家人们", query=6, **SMALL)
    clean(at)
    assert at.selectbox(key="query").value == 6 and not at.warning
    at.text_input(key="sentence_a").input("我爱你").run()
    clean(at)
    assert at.selectbox(key="query").value == 0
    assert alerts(at.warning) == ["query = 6 is not available here; using 0."]


def test_the_query_token_stays_the_same_token_when_the_block_changes(make_app):
    """The decoder reads [BOS] + the same tokens: query 3 (她) of the encoder is the decoder's 4. The number was
    kept, so the box went on saying 3, now 欢, with nothing said."""
    at = make_app(view="query", sentence_a="你喜欢她", query=3, **SMALL)
    clean(at)

    def token() -> str:
        box = at.selectbox(key="query")
        return box.format_func(box.value)

    assert token() == "3:她"
    at.selectbox(key="block").set_value("decoder self").run()
    clean(at)
    assert token() == "4:她" and not at.warning
    at.selectbox(key="block").set_value("cross").run()  # decoder positions both: the same number
    assert token() == "4:她"
    at.selectbox(key="block").set_value("encoder self").run()
    assert token() == "3:她"


def test_the_query_box_names_each_token_as_the_charts_name_it(make_app):
    """The box wrote "2: 爱" (and "1: ␣" for a space) where every chart, and view 5's own titles, write "2:爱", "1:␣":
    one token spelled two ways, a student matching the box against an axis. Each choice is the charts' label."""
    at = make_app(view="query", sentence_a="I 爱 you", tokenizer="char", **SMALL)
    clean(at)
    box = at.selectbox(key="query")
    queries = ticktext(figure_titled(at, "Attention as lines"), "yaxis")  # the lines' left axis: every query
    assert [box.format_func(i) for i in range(len(box.options))] == queries
    assert queries[1:3] == ["1:␣", "2:爱"]
    for i in (1, 2):
        at.selectbox(key="query").set_value(i).run()
        clean(at)
        assert title(figures(at)[0]).startswith(f"Query {queries[i]}: scores")


def test_the_query_control_moves_between_blocks_by_the_rule_the_figures_read_a_row_by(make_app):
    """The query control moves between blocks (ui/look.py follow_the_token) by the rule the figures read a query
    row's source token by (Sentence.source_token: the textbook panel's word). Each had its own one-position shift,
    free to drift apart: for every token, the decoder row the control moves to reads that token, and back."""
    from lab.compute import load_model, model_fields, run

    at = make_app(view="query", sentence_a="你喜欢她", **SMALL)
    clean(at)
    spec = FigureSpec.from_query(dict(at.query_params))
    sentence = run(load_model(model_fields(spec)), spec.sentence_a, spec.sentence_b, spec.mask).sentences[0]
    assert at.selectbox(key="block").value == "encoder self" and sentence.key == "a"
    for token in range(len(sentence.encoding.offsets)):
        at.selectbox(key="query").set_value(token).run()
        at.selectbox(key="block").set_value("decoder self").run()
        clean(at)
        assert sentence.source_token("decoder self", at.selectbox(key="query").value) == token
        at.selectbox(key="block").set_value("encoder self").run()
        assert at.selectbox(key="query").value == token


def test_a_links_heads_the_model_lacks_are_dropped_with_a_note_as_layer_and_head_are(make_app):
    at = make_app(link={"views": "heads", "heads": "1,99", **{k: str(v) for k, v in SMALL.items()}})
    clean(at)
    n_heads = SMALL["n_heads"]
    assert at.multiselect(key="heads").value == [1]
    assert alerts(at.warning) == [f"heads = [99] are not available here ({n_heads} heads: 0 to {n_heads - 1}); "
                                  "using [1]."]
    at = make_app(link={"views": "heads", "heads": "99", **{k: str(v) for k, v in SMALL.items()}})
    clean(at)
    assert at.multiselect(key="heads").value == []
    assert alerts(at.warning) == [f"heads = [99] are not available here ({n_heads} heads: 0 to {n_heads - 1}); "
                                  "using all heads."]
    at.selectbox(key="layer").select(1).run()  # the next change: the note has said it
    clean(at)
    assert not at.warning


def test_a_links_heads_a_one_head_model_lacks_are_said_of_one_head(make_app):
    """A words walk: heads=2 in a link to a one-head model said "(1 heads: 0 to 0)"."""
    at = make_app(link={"views": "heads", "heads": "2", **{k: str(v) for k, v in SMALL.items()}, "n_heads": "1"})
    clean(at)
    assert alerts(at.warning) == ["heads = [2] are not available here (1 head: head 0); using all heads."]


@pytest.mark.parametrize("name", ["attention", "heads", "query", "translate"])
def test_a_charts_identity_does_not_depend_on_the_layer_or_head(make_app, name):
    """ui/chart.py keeps a chart (and its full screen, on a projector) while its key stays: → and
    Shift+→ must redraw the same charts, not make new ones."""
    from conftest import charts

    trained = {"model": "zh-en"} if name == "translate" else SMALL
    at = make_app(view=name, layer=0, head=0, **trained)
    clean(at)
    before = [c["key"] for c in charts(at)]
    at.selectbox(key="layer").set_value(1)
    if name != "heads":  # the heads view draws every head
        at.selectbox(key="head").set_value(1)
    at.run()
    clean(at)
    assert at.session_state["layer"] == 1
    assert [c["key"] for c in charts(at)] == before and before
    if name == "translate":  # the every-head chart's own title follows its layer (full screen shows only it)
        assert any("every head of decoder layer 1" in title(f) for f in figures(at)), [title(f) for f in figures(at)]


def test_the_share_boxs_export_command_runs_as_written(make_app, tmp_path, monkeypatch):
    from lab import export

    at = make_app(share=True, **SMALL)
    clean(at)
    said = next(plain(c.value) for c in at.caption if "python -m lab.export" in plain(c.value))
    command = re.search(r"`(python -m lab\.export [^`]+)`", said).group(1).split()
    (tmp_path / "SPEC.json").write_text(at.code[1].value, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    args = export._parser().parse_args(command[3:])  # what `python -m lab.export` parses: no usage error
    assert (tmp_path / args.spec).is_file() and args.out


def test_an_export_size_under_the_smallest_becomes_the_smallest_and_the_figures_stay(make_app):
    from lab.spec import MIN_EXPORT_SIDE

    at = make_app(view="attention", **SMALL)
    for key in ("width", "height"):
        box = at.number_input(key=key)
        assert box.step == MIN_EXPORT_SIDE  # "+" from 0 (the theme's size) gives a size there is
        box.set_value(50).run()  # typed
        clean(at)
        assert at.session_state[key] == MIN_EXPORT_SIDE and figures(at)
    at.number_input(key="width").set_value(0).run()  # "−" back to the theme's own size
    clean(at)
    assert at.session_state["width"] == 0
    cut = [c.value for c in at.sidebar.caption if "can be cut" in c.value]
    assert not cut
    at.number_input(key="width").set_value(300).run()  # one column of a paper: say what it costs
    cut = [c.value for c in at.sidebar.caption if "can be cut" in c.value]
    assert len(cut) == 1 and "laid out 700 px wide: at 300 px" in cut[0]  # the default theme's figures


@pytest.mark.parametrize("empty, text, said", [("a", "", "is empty"), ("b", "", "is empty"),
                                                ("a", " \t ", "holds only spaces, which the views read as nothing")])
def test_an_empty_sentence_chosen_for_the_attention_views_says_the_other_is_shown(make_app, empty, text, said):
    """A narrow-screen walk: a sentence of spaces and tabs was called "empty"; it says what it holds."""
    shown = {"a": "b", "b": "a"}[empty]
    at = make_app(view="attention", sentence=empty, **{f"sentence_{empty}": text, f"sentence_{shown}": "我爱我家"},
                  **SMALL)
    clean(at)
    assert f"Sentence {empty.upper()} {said}: showing sentence {shown.upper()}." in alerts(at.info)
    assert any(f"sentence {shown.upper()}" in t for t in texts(at) if t.startswith("Q, K, V"))


def test_the_slide_theme_says_in_the_sidebar_how_to_get_its_type_large(make_app):
    """Slide charts are laid out 1280 px wide and shrink to fit a narrower column (ui/chart.py): where the
    theme is picked, say how a projector shows them larger."""
    from viz.theme import design_size

    def sidebar_captions(at) -> list[str]:
        return [c.value for c in at.sidebar.caption]

    at = make_app(view="attention", **SMALL)
    assert not any("full-screen" in c for c in sidebar_captions(at))
    at.selectbox(key="theme").set_value("slide").run()
    clean(at)
    (hint,) = [c for c in sidebar_captions(at) if "full-screen" in c]
    assert f"{design_size('slide')[0]} px" in hint and "collapse this sidebar" in hint
    at.selectbox(key="theme").set_value("paper").run()
    assert not any("full-screen" in c for c in sidebar_captions(at))


def test_the_figure_theme_follows_the_pages_light_or_dark_until_one_is_chosen(make_app, monkeypatch):
    """A dark page (the browser's colour scheme, as st.context.theme reads it) gets dark figures; a theme
    picked by hand or named by a link stays whatever the page does; a followed theme is not in the link."""
    import streamlit.runtime.context as context

    from viz.theme import THEMES

    page = {"color_scheme": "dark"}
    real = context._context_info_field
    monkeypatch.setattr(context, "_context_info_field", lambda name: page.get(name) or real(name))

    def shown(at) -> tuple[str, set[str], str | None]:
        clean(at)
        link = dict(parse_qsl(urlsplit(at.code[0].value).query))
        backgrounds = {f["layout"]["paper_bgcolor"] for f in figures(at)}
        return at.selectbox(key="theme").value, backgrounds, link.get("theme")

    dark, light = THEMES["dark"]["paper_bgcolor"], THEMES["default"]["paper_bgcolor"]
    assert dark != light
    at = make_app(view="attention", share=True, **SMALL)
    assert shown(at) == ("dark", {dark}, None)  # the link leaves it to the receiver's page
    page["color_scheme"] = "light"  # the person's system turns light: the next full run follows
    assert shown(at.run()) == ("default", {light}, None)
    at.selectbox(key="theme").set_value("dark").run()  # chosen by hand: kept on a light page, and linked
    assert shown(at.run()) == ("dark", {dark}, "dark")
    at.selectbox(key="theme").set_value("default").run()
    page["color_scheme"] = "dark"
    assert shown(at.run()) == ("default", {light}, "default")  # "default" chosen on a dark page stays too
    small = {k: str(v) for k, v in SMALL.items()}
    linked = make_app(link={"views": "attention", "theme": "default", **small}, share=True)
    assert shown(linked) == ("default", {light}, "default")
    unlinked = make_app(link={"views": "attention", **small}, share=True)
    assert shown(unlinked) == ("dark", {dark}, None)
    bad = make_app(link={"views": "attention", "theme": "bogus", **small}, share=True)  # left out: as no theme
    assert not bad.exception and plain(bad.error[0].value).startswith("Part of this link cannot be used (theme:")
    assert bad.selectbox(key="theme").value == "dark" and {f["layout"]["paper_bgcolor"] for f in figures(bad)} == {dark}
    assert "theme" not in dict(parse_qsl(urlsplit(bad.code[0].value).query))  # not "default" put in the link
    # the token tables' highlighted rows take the page's colours, whatever the figure theme
    from viz.tables import DIFF_HIGHLIGHT, DIFF_HIGHLIGHT_DARK

    for scheme, highlight in (("dark", DIFF_HIGHLIGHT_DARK), ("light", DIFF_HIGHLIGHT)):
        page["color_scheme"] = scheme
        view(linked, "tokens")
        styles = [d.proto.arrow_data.styler.styles for d in linked.dataframe if d.proto.arrow_data.HasField("styler")]
        assert len(styles) == 1 and highlight in styles[0], (scheme, styles)


def displayed(frame_element):
    """What the page shows in a table's cells: a Styler's display values, else the cells themselves."""
    import pyarrow as pa

    data = frame_element.proto.arrow_data
    if data.HasField("styler"):
        return pa.ipc.open_stream(data.styler.display_values).read_all().to_pandas()
    return frame_element.value


@pytest.mark.parametrize("view, sentences", [("tokens", ("你喜欢她们", "她喜欢")),  # B ends before A
                                             ("order", ("你喜欢她", "我爱你"))])  # B is not a reordering of A
def test_a_value_that_does_not_exist_shows_as_a_dash_not_the_word_none(make_app, view, sentences):
    at = make_app(link={"views": view, "sentence_a": sentences[0], "sentence_b": sentences[1]}, **SMALL)
    assert not at.exception
    # what the page is sent: the cells themselves (the browser draws a null cell as "None", whatever a
    # Styler's display value says) and, where styled, the display values
    shown = [d.value for d in at.dataframe] + [displayed(d) for d in at.dataframe]
    gaps = [f for f in shown if f.isin(["—"]).any().any()]
    assert gaps, [f.head() for f in shown]  # the missing values are there, drawn as "—"
    for frame in shown:
        assert not frame.isna().any().any() and not frame.isin(["None", "nan", "<NA>"]).any().any(), frame


@pytest.mark.parametrize("query, field", [({"layer": "abc"}, "layer"), ({"colour": "red"}, "colour"),
                                          ({"mask": "<b>x</b>"}, "mask")])
def test_a_bad_link_names_the_field_and_falls_back_to_defaults(make_app, query, field):
    at = make_app(link=query, **SMALL)
    assert not at.exception
    assert len(at.error) == 1 and field in plain(at.error[0].value)
    assert at.session_state["layer"] == 0 and at.session_state["mask"] == "paper"
    assert at.dataframe  # the default view is drawn
    at.number_input(key="seed").set_value(1).run()  # a sidebar change: a whole-app rerun
    clean(at)  # the error was about the link: said until the first change


@pytest.mark.parametrize("bad, left_out", [({"layer": "abc"}, ["layer"]),  # malformed
                                            ({"head": "-1", "layer": "x"}, ["head", "layer"]),  # two, both said
                                            ({"colour": "red"}, []),  # unknown: nothing to replace
                                            ({"d_model": "30"}, ["d_model"]),  # 30 / the default 4 heads
                                            # past the sidebar's range (lab.export draws it): said, not cut to 512
                                            # silently (600 with 24 heads became 512 with 24, and nothing was drawn)
                                            ({"d_model": "600", "n_heads": "24"}, ["d_model", "n_heads"]),
                                            ({"d_ff": "4096"}, ["d_ff"])])
def test_a_link_with_a_bad_field_keeps_the_rest(make_app, bad, left_out):
    """A teacher's link with one typo still opens its view and sentences: only what cannot be used takes
    its default, and the notice names it."""
    link = {"views": "heads", "sentence_a": "我爱我家", "sentence_b": "家我爱我", "n_layers": "3", **bad}
    at = make_app(link=link)
    assert not at.exception
    ss = at.session_state
    assert (ss["view"], ss["sentence_a"], ss["sentence_b"], ss["n_layers"]) == ("heads", "我爱我家", "家我爱我", 3)
    assert all(ss[f] == DEFAULTS[f] for f in left_out)
    (error,) = at.error
    said = plain(error.value)
    assert said.startswith("Part of this link cannot be used") and all(k in said for k in bad), said
    boxes = {"n_heads": "heads"}  # the sidebar's name for it (the error before said the link's too)
    assert ("Showing the default " + ", ".join(boxes.get(f, f) for f in left_out)) in said if left_out else (
        "default" not in said)
    assert figures(at) and len(at.selectbox(key="layer").options) == 3  # the link's 3 layers are drawn
    assert dict(at.query_params)["sentence_a"] == "我爱我家"  # and the address bar is a working link again


@pytest.mark.parametrize("bad, said", [
    # d_model 7 is left out (odd, sinusoidal): the heads' conflict is with the default 64, which the link never says
    ({"d_model": "7", "n_heads": "7"},
     "heads (n_heads in the link): with the default d_model 64 (the link's 7 could not be used), d_model 64 does"),
    # a value left out for a typo is quoted as the link has it, a long one cut
    ({"d_model": "7x", "n_heads": "7"}, "with the default d_model 64 (the link's 7x could not be used), d_model 64 does"),
    ({"d_model": "7" * 30, "n_heads": "7"}, f"with the default d_model 64 (the link's {'7' * 20}… could not be used)"),
    ({"n_heads": "5"}, "heads (n_heads in the link): with the default d_model 64, d_model 64 does not split into 5 heads"),
    # named by the link's own field, d_model (it said "heads (n_heads in the link)" of a link without n_heads)
    ({"d_model": "7"}, "(d_model: with the default heads 4, d_model 7 does not split into 4 heads"),
    # both fields are the link's: nothing stood in, and the conflict said once (not again for the default 4)
    ({"d_model": "30", "n_heads": "4"}, "(heads (n_heads in the link): d_model 30 does not split into 4 heads")])
def test_a_links_conflict_with_a_default_says_the_number_is_the_default(bad, said):
    """A bad-input walk: d_model=7&n_heads=7 said "d_model 64 does not split into 7 heads" of a link that never
    says 64 (d_model 7 was left out first, the default 64 put in)."""
    from ui.state import link_error_message, spec_from_link

    spec, errors, dropped = spec_from_link(bad)
    message = link_error_message(errors, dropped, spec is not None)
    assert said in message, message
    assert message.count("does not split") == 1, message


@pytest.mark.parametrize("bad", [{"n_heads": "100"}, {"n_heads": "4x"}, {"n_heads": "0", "d_model": "abc"}])
def test_a_links_error_that_is_no_conflict_names_no_default(bad):
    """A bad-input walk: n_heads=100 said "with the default d_model 64, 100 is outside [1, 64]", and 4x "with the
    default d_model 64 (the link's left out), '4x' is not a whole number": a range or a typo is no conflict with
    d_model, so no default of it is said (only where the error is about it: d_model's split into heads)."""
    from ui.state import link_error_message, spec_from_link

    spec, errors, dropped = spec_from_link(bad)
    message = link_error_message(errors, dropped, spec is not None)
    assert "heads (n_heads in the link): " in message and "with the default" not in message, message


def test_a_links_notice_names_the_sidebars_box_and_the_links_field(make_app):
    """A link's notice named its fields as the link spells them (n_heads, n_layers), where the sidebar's boxes say
    heads and layers, as a spec's own error on the page does (app.py spec_error): now the box, and the link's
    field beside it in the error; the defaults shown instead by the box (a default stood in: the test above)."""
    at = make_app(link={"views": "heads", "n_heads": "5", "n_layers": "9"})
    assert not at.exception
    assert [at.number_input(key=key).label for key in ("n_heads", "n_layers")] == ["heads", "layers"]
    (error,) = at.error
    assert plain(error.value) == (
        "Part of this link cannot be used (heads (n_heads in the link): with the default d_model 64, d_model 64 does "
        "not split into 5 heads of a whole d_k = d_model / heads; 1, 2, 4, 8, 16, 32 or 64 heads do (or choose "
        "another d_model); layers (n_layers in the link): 9 is more than this app offers, up to 6 (python -m "
        "lab.export draws it)). Showing the default heads, layers instead. Everything else is as the link says.")


@pytest.mark.parametrize(("link", "named"), [
    ({"d_model": "7", "n_heads": "7"}, "d_model: with the default positional encoding sinusoidal, sinusoidal encoding "
                                       "needs an even d_model"),
    ({"norm": "side"}, "LayerNorm placement (norm in the link): 'side' is not one of"),
])
def test_a_links_notice_names_the_positional_encoding_and_layernorm_boxes_as_the_sidebar_does(make_app, link, named):
    """An odd d_model said "with the default positional sinusoidal" (the spec's field, not the sidebar's "Positional
    encoding"); a bad norm named "norm", a box the sidebar calls "LayerNorm placement"."""
    at = make_app(link=link)
    assert not at.exception
    (error,) = at.error
    assert named in plain(error.value), plain(error.value)


def test_a_links_heads_in_the_grid_are_not_named_as_the_sidebars_heads(make_app):
    """A bad-input walk: a link's heads=1,1 (the heads in view 4's grid) said "heads: 1 is named twice. Showing the
    default heads instead.", where the sidebar's box called heads is n_heads: a student looked there for a change."""
    at = make_app(link={"views": "heads", "heads": "1,1"})
    assert not at.exception
    (error,) = at.error
    said = plain(error.value)
    assert "heads in the grid (heads in the link): 1 is named twice" in said, said
    assert "Showing the default heads in the grid instead" in said, said
    assert at.session_state["n_heads"] == DEFAULTS["n_heads"]


def test_a_link_naming_several_views_or_a_key_twice_says_what_it_shows(make_app):
    """A bad-input walk: views=attention,heads showed attention and rewrote the link, and a key given twice took
    its last value, with no word. The notice says which view and which value are shown."""
    at = make_app(link={"views": "attention,heads", "sentence_a": ["你好", "我爱你"]})
    assert not at.exception and at.session_state["view"] == "attention"
    assert at.session_state["sentence_a"] == "我爱你"  # the last, as Streamlit reads it
    (error,) = at.error
    said = plain(error.value)
    assert "views: this app shows one view at a time: attention" in said and "attention, heads" in said, said
    assert "sentence_a: given 2 times: the last, '我爱你', is used" in said, said
    assert figures(at)


# -- the page's CSS ---------------------------------------------------------------------------
@pytest.mark.parametrize(("slide", "dark"), [(False, False), (True, False), (False, True)])
def test_the_pages_css_has_no_markup_and_every_rule_closes(slide, dark):
    """ui/style.py sends its CSS inside st.html: a "<" anywhere in it, a comment's too, silently dropped every rule
    after it, and an unclosed comment or brace would swallow rules too. Each CSS the app sends (every theme but
    slide shares one; slide adds its own) is checked: no "<", no placeholder left, comments closed and holding no
    rules, braces balanced and each rule a selector before its braces."""
    from ui.style import page_css

    css = page_css(slide, dark)
    assert "<" not in css and not re.findall(r"__[A-Z_]+__", css)  # __HIDDEN__, __TURNED_REM__ filled in
    comments = re.findall(r"/\*.*?\*/", css, flags=re.S)
    assert not [c for c in comments if re.search("[{}]", c)], "a comment holds rules: one not closed in time?"
    bare = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    assert "/*" not in bare and "*/" not in bare, "a comment is not closed"
    depth = 0
    for i, char in enumerate(bare):
        if char == "{":
            assert re.split(r"[{};]", bare[:i])[-1].strip(), f"a rule without a selector at {bare[i - 40:i]!r}"
            depth += 1
        elif char == "}":
            depth -= 1
            assert depth >= 0, f"a }} closes nothing at {bare[i - 40:i]!r}"
    assert depth == 0, "a { is not closed"


# -- trained models ---------------------------------------------------------------------------
@needs_trained
def test_order_view_uses_the_trained_models_and_shows_both_translations(make_app):
    at = make_app(**SMALL)
    view(at, "order")
    clean(at)
    assert at.session_state["model"] == "zh-en"
    # a table of text: HTML at every width, where it wraps (ui/panels.py _prose)
    translations = next(as_shown(t.value) for t in at.table if "without PE (zh-en-nope)" in as_shown(t.value).columns)
    with_pe, without = list(translations["with PE (zh-en)"]), list(translations["without PE (zh-en-nope)"])
    assert with_pe[0] != with_pe[1]  # 你喜欢她 / 她喜欢你: with PE, two meanings
    assert without[0] == without[1]  # without PE the encoder sees the same bag of characters
    numbers = next(d.value for d in at.dataframe if "equivariant" in d.value.columns).set_index("model")
    assert numbers.loc["without PE", "equivariant"] == "True"  # in words (ui.panels._in_words)
    assert numbers.loc["with sinusoidal PE", "equivariant"] == "False"
    from model.demo import load_demo

    score = load_demo("zh-en").metadata["evaluation"]["heldout_exact_match"]  # the model line says it in words
    share = "every held-out sentence" if score == 1 else f"{score:.0%} of the held-out sentences"
    line = next(plain(c.value) for c in at.caption if plain(c.value).startswith("Model: trained zh-en"))
    assert f"(translates {share} exactly; none was seen in training)" in line, line


@needs_trained
def test_back_from_the_order_view_the_page_says_once_that_it_shows_the_trained_model(make_app):
    """View 6 switches the random model to the trained zh-en one, which then stays: back in view 3 the class
    saw other numbers with only the small model line saying why. The page now says it, once, and where the
    model is chosen (the sidebar, which a projector's page folds away)."""
    at = make_app(**SMALL)
    view(at, "order")
    clean(at)
    assert any("in the sidebar" in t for t in alerts(at.info))
    # what the switch is for, in this view: not "this view is about what training learns" over a lesson on
    # equivariance that holds for the random model too (a text audit)
    assert any("compares the two models' translations" in t and "holds for the random model as well" in t
               for t in alerts(at.info))
    translate = make_app(**SMALL)
    view(translate, "translate")
    assert any("Switched to the trained zh-en model" in t and "translating needs a trained model" in t
               for t in alerts(translate.info))
    assert not any("zh-en-nope" in t for t in alerts(translate.info))  # zh-en translates: its twin not named
    nope = make_app(**SMALL)
    nope.sidebar.selectbox(key="positional").set_value("none").run()
    view(nope, "translate")  # the random model without PE: the switch lands on zh-en-nope, and says so
    assert nope.session_state["positional"] == "none"
    assert any("Switched to the trained zh-en model" in t and "zh-en-nope, the twin trained without it, that "
               "translates" in t for t in alerts(nope.info)), alerts(nope.info)
    view(at, "attention")
    clean(at)
    assert at.session_state["model"] == "zh-en"
    assert [t for t in alerts(at.info) if "trained zh-en model too" in t and "in the sidebar" in t]
    at.selectbox(key="head").set_value(1).run()
    assert not [t for t in alerts(at.info) if "trained zh-en model too" in t]  # once
    at = make_app(**SMALL)
    view(at, "order")
    at.sidebar.selectbox(key="model").set_value("random").run()  # the random model chosen again by hand
    view(at, "attention")
    clean(at)
    assert at.session_state["model"] == "random"
    assert not [t for t in alerts(at.info) if "trained zh-en model too" in t]


@needs_trained
def test_back_on_the_random_model_after_view_6_its_learned_encoding_comes_back(make_app):
    """View 6 switches to the trained pair, whose encodings are sinusoidal and none, so a random model's learned
    PE became sinusoidal and stayed so: back on random with an odd d_model, the page could only say that
    sinusoidal encoding needs an even one. The learned encoding now comes back with the random model."""
    at = make_app(**(SMALL | dict(d_model=31, n_heads=1, positional="learned")))
    clean(at)
    view(at, "order")
    assert (at.session_state["model"], at.session_state["positional"]) == ("zh-en", "sinusoidal")
    view(at, "attention")
    at.sidebar.selectbox(key="model").set_value("random").run()
    clean(at)
    assert (at.session_state["model"], at.session_state["positional"]) == ("random", "learned")
    assert figure_titled(at, "1. Scores")  # drawn, not "These settings cannot be drawn"


def test_order_view_with_the_random_model_shows_equivariance_in_numbers(make_app):
    at = make_app(view="order", **SMALL)
    clean(at)
    numbers = next(d.value for d in at.dataframe if "equivariant" in d.value.columns).set_index("model")
    assert numbers.loc["without PE", "max |f(B) − P f(A)|"] < 1e-5
    assert numbers.loc["with sinusoidal PE", "max |f(B) − P f(A)|"] > 1e-3
    # True and False as words: st.dataframe drew bools as ticked boxes, light grey on white (1.9:1)
    assert list(numbers["equivariant"]) == ["False", "True", "False"]
    assert list(numbers.columns[:2]) == ["equivariant", "pooled equal"]  # first: seen in a narrow window too
    assert list(numbers["pooled equal"]) == ["False", "True", "False"]


def test_order_view_compares_the_attention_of_the_layer_and_head_chosen(make_app):
    """View 6 draws the layer and head controls for its attention panels (W(A) beside B's weights in A's order):
    a new head or layer redraws them there, and the numbers table holds the largest difference of all."""
    at = make_app(view="order", **SMALL)
    clean(at)
    assert at.selectbox(key="layer").options == ["layer 0", "layer 1"] and len(at.selectbox(key="head").options) == 2
    assert not [s for s in at.selectbox if s.key == "block"]  # view 6 compares the encoder only
    figure_titled(at, "Self-attention weights without PE, encoder layer 0, head 0")
    at.selectbox(key="head").set_value(1).run()
    at.selectbox(key="layer").set_value(1).run()
    clean(at)
    fig = figure_titled(at, "Self-attention weights without PE, encoder layer 1, head 1")
    a, b = (np.asarray(decode_array(t["z"]), dtype=float) for t in fig["data"][:2])
    np.testing.assert_allclose(a, b, atol=1e-6)  # without PE: B's weights are A's, reordered
    with_pe = figure_titled(at, "Self-attention weights with sinusoidal PE, encoder layer 1, head 1")
    a, b = (np.asarray(decode_array(t["z"]), dtype=float) for t in with_pe["data"][:2])
    assert np.abs(a - b).max() > 1e-3
    numbers = next(d.value for d in at.dataframe if "equivariant" in d.value.columns).set_index("model")
    assert numbers.loc["without PE", "max |W(B) − P W(A) Pᵀ|"] < 1e-5


def test_order_view_compares_the_learned_encoding_chosen_and_says_where_the_look_ahead_mask_is(make_app):
    """A student's walk: under positional 'learned' view 6 showed sinusoidal numbers beneath a model line saying
    learned, and under Mask 'look-ahead' said nothing of the mask its first two rows do not use."""
    at = make_app(view="order", positional="learned", mask="look-ahead", **SMALL)
    clean(at)
    numbers = next(d.value for d in at.dataframe if "equivariant" in d.value.columns).set_index("model")
    assert list(numbers.index) == ["with learned PE", "without PE", "without PE, look-ahead mask"]
    assert numbers.loc["with learned PE", "equivariant"] == "False"  # random learned positions: order shows
    assert figure_titled(at, "Self-attention weights with learned PE")
    warned = [w.value.replace("\\", "") for w in at.warning]  # markdown-escaped on the page
    assert [w for w in warned if "Mask 'look-ahead'" in w and "last row" in w], warned
    at = make_app(view="order", positional="learned", **(SMALL | {"d_model": 15, "n_heads": 1}))  # odd: learned fits
    clean(at)
    assert not at.info or not [i for i in at.info if "pairs of dimensions" in i.value]


def test_order_view_names_the_tokens_that_keep_b_from_reordering_a(make_app):
    """'I like her' / 'her like I' with the bpe tokenizer are not a reordering (' like' against 'like'): the page
    said 'B reorders A's tokens' above a verdict saying it does not, and nothing said why."""
    at = make_app(view="order", tokenizer="bpe", sentence_a="I like her", sentence_b="her like I", **SMALL)
    clean(at)
    said = (" ".join(c.value for c in at.caption) + " ".join(m.value for m in at.markdown)).replace("\\", "")
    assert "When B reorders A's tokens" in said and "B reorders A's tokens. Without" not in said
    verdicts = [t.replace("\\", "") for t in [m.value for m in at.markdown] + [c.value for c in at.caption]
                + [i.value for i in at.info] if "not a reordering" in t]
    assert verdicts and all("Tokens A has more of: " in v and "char tokenizer" in v for v in verdicts), verdicts


def test_order_view_draws_layer_and_head_only_where_they_choose_something(make_app):
    """A bad-input walk: where B is not a reordering of A, view 6 has no attention panels, yet its layer and head
    moved (and changed nothing)."""
    at = make_app(view="order", sentence_b="我爱你", **SMALL)
    clean(at)
    assert not [s for s in at.selectbox if s.key in ("layer", "head")]
    at = make_app(view="order", **SMALL)
    clean(at)
    assert [s for s in at.selectbox if s.key in ("layer", "head")]


def test_order_view_numbers_show_small_differences_as_the_verdict_does_and_no_row_numbers(make_app):
    """A bad-input walk: st.dataframe's own format showed 5.96e-07 as 0.0000005 (one digit, cut), and a row index
    0, 1, 2 beside the model names; a teacher's walk: then "3.58e-7" (a printf format) beside the verdict's
    3.58e−07."""
    at = make_app(view="order", **SMALL)
    clean(at)
    table = next(d for d in at.dataframe if "equivariant" in d.value.columns)
    columns = json.loads(table.proto.columns)
    assert columns["_index"]["hidden"] is True
    shown = displayed(table)
    for name in ("max |f(B) − P f(A)|", "max |W(B) − P W(A) Pᵀ|"):
        value = table.value[name].iloc[1]
        assert value < 1e-5  # the value itself unchanged (the CSV and the table hold it)
        written = shown[name].iloc[1]
        assert "e−0" in written and float(written.replace("−", "-")) == pytest.approx(value, rel=1e-2), written
    written = shown["max |f(B) − P f(A)|"].iloc[1]
    assert any(f"max |f(B) − P f(A)| = {written}" in t for t in alerts(at.info)), written  # the verdict beside it


def test_the_translate_view_with_a_random_model_draws_no_controls_that_do_nothing(make_app):
    at = make_app(view="translate", **SMALL)
    at.sidebar.selectbox(key="model").set_value("random").run()
    clean(at)
    assert at.session_state["model"] == "random"
    assert not [s for s in at.selectbox if s.key in ("layer", "head")]
    hint = [i.value.replace("\\", "") for i in at.info if "zh-en" in i.value.replace("\\", "")]
    assert hint and "under Model, in the sidebar" in hint[0], hint  # where: folded away on a phone


def test_order_view_puts_each_figure_without_pe_next_to_the_one_with_it(make_app):
    """Side by side where half the page holds it, else right under it: the token outputs without PE came
    after every pair, three charts away from the outputs with PE."""
    at = make_app(view="order", **SMALL)
    clean(at)
    names = [" ".join(re.sub(r"<br[^>]*>", " ", title(f)).split()) for f in figures(at)]  # as read, unwrapped
    for i, name in enumerate(names):
        if "with sinusoidal PE" in name:
            assert names[i + 1] == name.replace("with sinusoidal PE", "without PE"), names


@needs_trained
def test_translate_view_reveals_decoding_one_step_at_a_time(make_app):
    at = make_app(view="translate", model="zh-en")
    clean(at)
    assert any(t.endswith("→ you like her") for t in alerts(at.info))
    assert at.slider(key="translate_step").max == 4  # [BOS] you like her
    # it opens on the first step (the whole translation is the view's own charts): [BOS] read, "you" predicted
    assert at.slider(key="translate_step").value == 1 and any("predicts “you”" in t for t in alerts(at.info))
    assert values_z(figure_titled(at, "Cross-attention, layer")).shape == (1, 4)
    at.slider(key="translate_step").set_value(2).run()
    clean(at)
    assert values_z(figure_titled(at, "Decoder self-attention, layer")).shape == (2, 2)
    assert values_z(figure_titled(at, "Cross-attention, layer")).shape == (2, 4)
    # each step chart's title names its step: its download is read away from the slider (a researcher's walk)
    for step_title in ("Decoder self-attention, layer", "Cross-attention, layer"):
        assert title(figure_titled(at, step_title)).startswith(f"{step_title} 0, head 0, step 2"), step_title
    # the step charts, half a page wide, name each row "read→written" and leave the rows' Σ to the charts above:
    # its ~85 px came out of the plot's (a regression walk: 15 source tokens in 93 px at step 9)
    for step_title in ("Decoder self-attention, layer", "Cross-attention, layer"):
        layout = figure_titled(at, step_title)["layout"]
        assert "yaxis2" not in layout and layout["yaxis"]["ticktext"][1] == "1:you→like", step_title
    at.selectbox(key="theme").set_value("slide").run()  # drawn at the slide's own width: Σ kept (a regression walk:
    clean(at)                                            # without it the slide's keys were laid out turned, drawn flat)
    assert all("yaxis2" in figure_titled(at, t)["layout"] for t in ("Decoder self-attention, layer", "Cross-attention, layer"))
    at.selectbox(key="theme").set_value("default").run()
    assert "yaxis2" in figure_titled(at, "Cross-attention: each decoding step")["layout"]  # the whole one: Σ
    assert any("predicts “like”" in t for t in alerts(at.info))
    # the whole decoder self-attention (lab.views.translate_view) is causal
    z = values_z(figure_titled(at, "Decoder self-attention (causal"))
    assert np.isnan(z[np.triu_indices(4, k=1)]).all()
    at.text_input(key="sentence_a").input("她喜欢你").run()  # a new sentence opens on its first step again
    clean(at)
    assert at.slider(key="translate_step").value == 1 and at.slider(key="translate_step").max == 4
    assert any("predicts “she”" in t for t in alerts(at.info))


@needs_trained
@pytest.mark.parametrize("theme", THEME_NAMES)
def test_the_decoding_steps_charts_keep_their_rows_sum_in_every_theme_drawn_at_its_own_width(make_app, theme):
    """A researcher's walk: in paper-sans the two step charts left out the rows' Σ that paper gives them: only the
    names "slide" and "paper" kept it, where the rule is a theme with a size of its own (drawn at that width and shown
    shrunk, so the Σ takes none of the plot's width); paper-sans is paper in another font."""
    at = make_app(view="translate", model="zh-en")
    at.selectbox(key="theme").set_value(theme).run()
    clean(at)
    own_width = theme_spec(theme)["width"] is not None
    for step_title in ("Decoder self-attention, layer", "Cross-attention, layer"):
        assert ("yaxis2" in figure_titled(at, step_title)["layout"]) == own_width, (theme, step_title)


@needs_trained
def test_a_share_link_of_the_translate_view_opens_on_the_decoding_step_it_was_sent_from(make_app):
    """A teacher's walk (lesson step 7): the decoding step is the page's own, not the spec's, so the address bar
    and "Share this view" left it out, and a link sent at step 2 (the row "1:you→like") opened the students'
    screens on step 1. The link now carries it past step 1; a step past the translation is its last one, and a
    malformed one is said and left out."""
    at = make_app(link={"views": "translate", "model": "zh-en", "theme": "slide"})
    clean(at)
    assert "step" not in at.query_params  # step 1: the link as before
    at.slider(key="translate_step").set_value(2).run()
    clean(at)
    assert at.query_params["step"] == "2"
    sent = {k: at.query_params[k] for k in at.query_params}
    opened = make_app(link=sent)
    clean(opened)
    assert opened.slider(key="translate_step").value == 2
    assert any("predicts “like”" in t for t in alerts(opened.info))
    assert values_z(figure_titled(opened, "Cross-attention, layer")).shape == (2, 4)
    assert opened.query_params["step"] == "2"
    opened.text_input(key="sentence_a").input("她喜欢你").run()  # a new sentence still opens on its first step
    assert opened.slider(key="translate_step").value == 1 and "step" not in opened.query_params
    beyond = make_app(link={**sent, "step": "9"})
    assert beyond.slider(key="translate_step").value == 4 and not beyond.error
    bad = make_app(link={**sent, "step": "x"})
    assert bad.slider(key="translate_step").value == 1
    assert any("is not a decoding step" in e.value for e in bad.error), [e.value for e in bad.error]
    other = make_app(link={"views": "attention", "step": "2"})  # not view 7's: no word about it, none kept
    assert not other.error and "step" not in other.query_params


def test_a_links_decoding_step_with_the_random_model_says_it_waits_for_the_trained_one(make_app):
    """A bad-input walk: views=translate&step=2 with the random model showed view 7's hint (choose zh-en) and no word
    of the step, and the address bar left it out. The step waits for the trained model (ui/state.py LINKED_STEP):
    said, and kept in the link."""
    at = make_app(link={"views": "translate", "step": "2"})
    clean(at)
    assert at.session_state["model"] == "random"
    (said,) = [t for t in alerts(at.info) if "step 2" in t]
    assert "trained model" in said and "zh-en" in said, said
    assert at.query_params["step"] == "2"
    plain_link = make_app(link={"views": "translate"})  # no step in the link: no word of one
    assert not [t for t in alerts(plain_link.info) if "step" in t.lower()]


@needs_trained
def test_a_links_decoding_step_waiting_for_the_trained_model_opens_when_it_is_chosen(make_app):
    at = make_app(link={"views": "translate", "step": "2"})
    at.selectbox(key="model").set_value("zh-en").run()
    clean(at)
    assert at.slider(key="translate_step").value == 2 and at.query_params["step"] == "2"
    assert not [t for t in alerts(at.info) if "step 2 " in t or "waits" in t]


@needs_trained
def test_a_links_decoding_step_past_the_translation_says_which_step_is_shown(make_app):
    """A bad-input walk: step=999 opened "Step 4 of 4" with no word that the link's step was not there, where a
    link's layer past the model says "layer = 5 is not available here; using 0."; said until the step moves."""
    at = make_app(link={"views": "translate", "model": "zh-en", "step": "999"})
    clean(at)
    assert at.slider(key="translate_step").value == 4
    (said,) = [t for t in alerts(at.warning) if "999" in t]
    assert "step = 999 is not available here" in said and "4 decoding steps" in said and "using 4" in said, said
    at.selectbox(key="layer").set_value(1).run()  # still on the step it was put on: still said
    assert any("999" in t for t in alerts(at.warning))
    at.slider(key="translate_step").set_value(2).run()
    clean(at)
    assert not any("999" in t for t in alerts(at.warning))


@needs_trained
def test_a_links_decoding_step_on_a_one_step_translation_leaves_the_link(make_app, monkeypatch):
    """View 7 draws no slider where greedy decoding wrote [EOS] at once (one step), and its step_slider returned
    before a link's step was taken: step=3 stayed in the share link, for a step that does not exist, unsaid, and the
    next sentence opened on it. A one-step translation takes the link's step as any other does: it is said (as a link's
    step past a longer translation is) and gone from the link, and the next sentence opens on its first step."""
    from model.demo import DemoModel, Translation
    from model.tokenizer import BOS_ID, EOS_ID

    real = DemoModel.translate_ids
    one_step = "你喜欢" + uuid.uuid4().hex[:8]  # a sentence no other test has run (cached nowhere)

    def translate_ids(self, text):  # greedy decoding writes [EOS] first for this one sentence
        done = real(self, text)
        if text != one_step:
            return done
        return Translation(done.source, done.src_ids, done.src_pieces, (BOS_ID, EOS_ID), ("[BOS]", "[EOS]"), "")

    monkeypatch.setattr(DemoModel, "translate_ids", translate_ids)
    at = make_app(link={"views": "translate", "model": "zh-en", "sentence_a": one_step, "step": "3"})
    assert not at.exception and not at.error
    assert [s.key for s in at.slider] == ["train_steps"]  # no decoding slider: one step
    assert any(plain(i.value).startswith("Step 1 of 1:") for i in at.info)
    assert "step" not in at.query_params, dict(at.query_params)
    assert [t for t in alerts(at.warning) if "step = 3" in t] == [
        "step = 3 is not available here (1 decoding step); using 1."]
    at.text_input(key="sentence_a").input("你喜欢她").run()  # 4 steps: it opens on the first, the link's step gone
    clean(at)
    assert at.slider(key="translate_step").value == 1 and "step" not in at.query_params
    at.slider(key="translate_step").set_value(3).run()
    at.text_input(key="sentence_a").input(one_step).run()  # the slider's step 3 of the last sentence: not kept
    assert not at.exception and not at.error
    assert "step" not in at.query_params, dict(at.query_params)


@needs_trained
def test_the_translation_shows_what_the_model_read_and_a_leading_emoji_stays_text(make_app):
    at = make_app(view="translate", model="zh-en", sentence_a="😀你喜欢她")
    clean(at)
    caption = next(i for i in at.info if "→" in plain(i.value))
    assert plain(caption.value).startswith("😀你喜欢她 → ") and caption.icon == ":material/info:"
    at = make_app(view="translate", model="zh-en", sentence_a="你喜欢她" * 2500)  # a 10,000-character paste
    clean(at)
    caption = plain(next(i for i in at.info if "→" in plain(i.value)).value)
    from model.demo import load_demo

    limit = load_demo("zh-en").config.max_len  # zh-en reads at most this many characters
    assert caption.startswith(("你喜欢她" * 16)[:limit] + "… → ") and len(caption) < 200


@needs_trained
@pytest.mark.parametrize("mask", ["none", "padding", "look-ahead"])
def test_translate_shows_the_steps_greedy_decoding_took_whatever_the_sidebars_mask(make_app, mask):
    """Each step predicts the next token of the translation shown, and its attention is the paper-mask pass's."""
    paper = make_app(view="translate", model="zh-en")
    at = make_app(view="translate", model="zh-en", mask=mask)
    clean(at)
    assert any("Translate decodes with the paper's masks" in t and f"'{mask}'" in t for t in alerts(at.warning))
    assert any(t.endswith("→ you like her") for t in alerts(at.info))
    for step, nxt in enumerate(["you", "like", "her", "[EOS]"], start=1):
        for app in (paper, at):
            app.slider(key="translate_step").set_value(step).run()
        assert any(f"predicts “{nxt}”" in t for t in alerts(at.info)), (step, alerts(at.info))
        # the step (from 1) named by the charts' row (from 0): "Step 2 … (the charts' last row, 1:you→like)"
        last = figure_titled(at, "Cross-attention, layer")["layout"]["yaxis"]["ticktext"][-1]
        assert last.startswith(f"{step - 1}:") and last.endswith(f"→{nxt}")
        assert any(f"Step {step} of 4" in t and f"(the charts' last row, {last})" in t for t in alerts(at.info))
        for chart in ("Decoder self-attention, layer", "Cross-attention, layer"):
            np.testing.assert_array_equal(values_z(figure_titled(at, chart)), values_z(figure_titled(paper, chart)))
    chart = "Decoder self-attention (causal"
    np.testing.assert_array_equal(values_z(figure_titled(at, chart)), values_z(figure_titled(paper, chart)))


@needs_trained
def test_the_train_panels_positional_encoding_is_named_apart_from_the_sidebars_and_neither_moves_the_other(make_app):
    """A student's walk of view 7: the sidebar's "Positional encoding" picks the shipped model the charts show (zh-en or
    zh-en-nope) and the training panel had a radio of the same name for the model trained there: a student set one and
    looked for the change under the other. The panel's is named for what it does, its help names the sidebar's choice
    as it stands, and neither control moves the other or what the other drives."""
    at = make_app(view="translate", model="zh-en")
    clean(at)
    labels = [w.label for w in (*at.selectbox, *at.radio) if "ositional encoding" in w.label]
    assert labels.count("Positional encoding") == 1, labels  # the sidebar's alone
    panel = at.radio(key="train_positional")
    assert panel.label == "Train with positional encoding" and panel.options == ["yes (sinusoidal)", "no"]
    assert "now: zh-en, sinusoidal" in panel.help and "does not change" in panel.help, panel.help
    assert "Train it yourself" in at.sidebar.selectbox(key="positional").help  # the sidebar's says there is another
    drawn = [title(f) for f in figures(at)]
    panel.set_value("none").run()
    clean(at)
    assert at.session_state["positional"] == "sinusoidal" and [title(f) for f in figures(at)] == drawn
    assert any("trained zh-en " in plain(c.value) for c in at.caption)  # the model line: still the shipped zh-en
    at.sidebar.selectbox(key="positional").set_value("none").run()
    clean(at)
    assert at.session_state["train_positional"] == "none"  # the panel's own, as the student left it
    assert "now: zh-en-nope, none" in at.radio(key="train_positional").help
    assert any("trained zh-en-nope" in plain(c.value) for c in at.caption)  # the charts' model did change
    at.sidebar.selectbox(key="model").set_value("random").run()  # no charts above: the help does not speak of them
    clean(at)
    random = at.radio(key="train_positional").help
    assert "(now: none) is the random model's" in random and "charts above show the shipped model" not in random


CHART = "attention_lab_chart"  # ui.chart.NAME


def in_order(node) -> list:
    """The elements under an AppTest node, in the order the page shows them."""
    children = getattr(node, "children", None)
    if not children:
        return [node]
    return [e for _, child in sorted(children.items()) for e in in_order(child)]


@needs_trained
def test_on_a_projector_view_7s_model_line_is_under_the_shipped_models_figures_not_under_the_training_panel(make_app):
    """A teacher's walk (slide theme, where the model line goes under the figures): in view 7 it came after the
    training panel, so "Model: trained zh-en … positional encoding: sinusoidal" sat right under that panel's "Train
    with positional encoding: no", as if it described the model trained there. It comes after the shipped model's
    figures and before the panel; elsewhere it stays above the figures."""
    for theme in ("slide", "default"):
        at = make_app(view="translate", model="zh-en", theme=theme)
        clean(at)
        shown = in_order(at.main)
        line = next(i for i, e in enumerate(shown) if e.type == "caption" and plain(e.value).startswith("Model: trained zh-en"))
        panel = next(i for i, e in enumerate(shown) if e.type == "subheader" and e.value == "Train it yourself")
        charts = [i for i, e in enumerate(shown) if e.type == "bidi_component" and e.proto.component_name == CHART]
        assert line < panel, theme
        assert (line > max(charts)) if theme == "slide" else (line < min(charts)), (theme, line, charts)


@needs_trained
def test_train_panel_trains_a_fresh_model_and_leaves_the_shipped_one_alone(make_app):
    from model.demo import load_demo

    shipped = load_demo("zh-en").model
    before = {k: v.clone() for k, v in shipped.state_dict().items()}
    at = make_app(view="translate", model="zh-en")
    at.slider(key="train_steps").set_value(10)
    at.button(key="train_go").click().run()
    clean(at)
    loss = figure_titled(at, "Training loss")
    assert decode_array(loss["data"][0]["y"]).shape == (10,)
    translations = as_shown(at.table[-1].value).reset_index()  # text alone: HTML, which wraps (ui/panels.py _prose)
    assert "with PE, after 10 steps" in translations.columns

    outputs = list(translations["with PE, after 10 steps"])
    assert all(o.strip() for o in outputs)  # an empty translation ([EOS] at once, early on) is said: NOTHING_YET
    # the lesson: "train with and without PE and compare" (a teacher's walk: each run replaced the last)
    at.radio(key="train_positional").set_value("none")
    at.slider(key="train_steps").set_value(20)
    at.button(key="train_go").click().run()
    clean(at)
    table = as_shown(at.table[-1].value).reset_index()
    assert list(table.columns) == ["Chinese", "reference", "with PE, after 10 steps", "no PE, after 20 steps"]
    assert list(table["with PE, after 10 steps"]) == outputs  # the first run kept as it was
    lines = [t for t in figure_titled(at, "Training loss")["data"] if (t.get("meta") or {}).get("role") == "line"]
    assert [t["name"] for t in lines] == ["with PE, after 10 steps", "no PE, after 20 steps"]
    assert [decode_array(t["y"]).shape for t in lines] == [(10,), (20,)]
    assert len([f for f in figures(at) if title(f).startswith("Training loss")]) == 1  # the live one went into it
    at.session_state["numbers-train-loss"] = True  # its numbers and downloads, as every figure's (a regression walk)
    at.run()
    clean(at)
    numbers = next(d.value for d in at.dataframe if "no PE, after 20 steps" in d.value.columns and "reference"
                   not in d.value.columns)
    np.testing.assert_allclose(numbers["no PE, after 20 steps"].to_numpy(), decode_array(lines[1]["y"]), rtol=1e-6)
    assert (numbers["with PE, after 10 steps"] != "—").sum() == 10 and "CSV" in [  # a shorter run: gaps
        b.proto.label for b in at.get("download_button")]
    at.selectbox(key="theme").set_value("slide").run()  # a projector: the slide type, as every panel's table (a
    clean(at)                                            # teacher's walk: its 13 px among tables of 18 px)
    assert list(as_shown(at.table[-1].value)["with PE, after 10 steps"]) == outputs
    assert not any("reference" in d.value.columns for d in at.dataframe)  # the translations: an st.table
    after = shipped.state_dict()
    assert all(np.array_equal(before[k].numpy(), after[k].numpy()) for k in before)


def test_ids_shown_as_text_beside_a_gap_stay_right_aligned(make_app):
    # B shorter than A: B's ids are text (numbers and "—" in one column, as Arrow needs), right-aligned as
    # A's numbers are, not left-aligned as words
    import json

    at = make_app(view="tokens", sentence_a="你喜欢她", sentence_b="她好")
    clean(at)
    side = at.dataframe[0]  # first: lesson step 1's table
    assert list(side.value["B id"])[2:] == ["—", "—"]
    config = json.loads(side.proto.columns)
    assert config["B id"]["alignment"] == "right" and "A id" not in config  # A's ids are numbers: right already


def test_a_slide_link_folds_the_sidebar_and_drops_the_intro_line_and_a_later_choice_folds_nothing(make_app):
    """A projector's link (theme=slide, as the lesson's steps carry it) opens with the sidebar collapsed
    (set_page_config's initial_sidebar_state) and without the intro line; a session that starts otherwise keeps
    "auto" (Streamlit's own: open on a wide screen) even when slide is chosen later, and the intro goes then."""
    def intro_shown(at) -> bool:  # app.py's INTRO (importing app.py would run it)
        return any(m.value.startswith("Type two sentences and follow them") for m in at.markdown)

    slide = make_app(link={"theme": "slide", "views": "attention"})
    assert not slide.exception
    assert slide.session_state["_sidebar"] == "collapsed" and not intro_shown(slide)
    plain = make_app(link={"views": "attention"})
    assert plain.session_state["_sidebar"] == "auto" and intro_shown(plain)
    plain.selectbox(key="theme").set_value("slide").run()
    assert plain.session_state["_sidebar"] == "auto" and not intro_shown(plain)
    plain.selectbox(key="theme").set_value("paper").run()
    assert intro_shown(plain)


@needs_trained
def test_with_the_trained_model_the_sidebar_says_whose_tokenizer_the_greyed_radio_is(make_app):
    """The Tokenizer radio, greyed for zh-en, keeps the random model's choice: with bpe there, a student saw
    "bpe" beside charts of one token per character. A line under it says whose it is; the random model has none."""
    at = make_app(link={"views": "tokens", "tokenizer": "bpe", "model": "zh-en"})
    assert not at.exception
    assert at.radio(key="tokenizer").value == "bpe" and at.radio(key="tokenizer").disabled
    assert any("zh-en reads one token per character" in c.value for c in at.sidebar.caption)
    assert at.selectbox(key="positional").format_func("none") == "none (zh-en-nope)"  # whole in the sidebar
    at.selectbox(key="model").set_value("random").run()
    assert not any("zh-en reads one token per character" in c.value for c in at.sidebar.caption)


def test_view_1s_phone_tables_are_built_only_up_to_a_slides_rows(make_app):
    """View 1's phone copies of its token tables (HTML, shown by the CSS on a phone only) are built on every rerun at
    any width: at 511 tokens they cost ~67 ms a rerun (a review). Like a slide's HTML tables they stop at
    SLIDE_TABLE_ROWS: a longer sentence's table, and the comparison beside it, scroll in st.dataframe alone."""
    from ui.panels import SLIDE_TABLE_ROWS

    long = "春" * (SLIDE_TABLE_ROWS + 1)
    at = make_app(link={"views": "tokens", "sentence_a": long, "sentence_b": "她喜欢你"})
    assert not at.exception
    copies = [t for t in at.table if "piece" in str(t.value.columns.tolist())]
    assert len(at.dataframe) == 3 and len(copies) == 1, len(copies)  # B's only (4 rows); A's and the pair's 41
    at = make_app(link={"views": "tokens", "sentence_a": long[:SLIDE_TABLE_ROWS], "sentence_b": "她喜欢你"})
    assert len([t for t in at.table if "piece" in str(t.value.columns.tolist())]) == 3


def test_a_figures_numbers_show_a_space_token_as_its_chart_does():
    """A phone walk: the numbers behind view 3's figures labelled the space of "I like her" "1:" (blank) beside
    the chart's "1:␣". Shown, token labels make their whitespace visible; the CSV keeps the raw text."""
    import pandas as pd

    import viz
    from ui.panels import _visible_tokens

    frame = viz.matrix_frame(np.eye(3), ["I", " ", "x"], ["I", " ", "x"])
    shown = _visible_tokens(frame)
    assert list(shown.index) == list(shown.columns) == ["0:I", "1:␣", "2:x"]
    assert list(frame.index) == ["0:I", "1: ", "2:x"]  # what the CSV writes: untouched
    heads = pd.concat({"head 0": frame}, names=["head"])
    assert list(_visible_tokens(heads).index) == [("head 0", "0:I"), ("head 0", "1:␣"), ("head 0", "2:x")]
    other = pd.DataFrame({"max |f(B) − P f(A)|": [1.0]}, index=pd.Index(["with sinusoidal PE"], name="model"))
    assert _visible_tokens(other).equals(other)  # not token labels: as they are
    # view 5's tables (a regression walk: its keys and its context rows showed "1:" and "v of 1:" blank)
    from lab.views import _context_frame

    bars = pd.DataFrame({"key": viz.unique_labels(["I", " like"]), "weight": [0.4, 0.6]})
    assert list(_visible_tokens(bars)["key"]) == ["0:I", "1:␣like"] and list(bars["key"]) == ["0:I", "1: like"]
    context = _context_frame(np.array([0.5, 0.5]), np.eye(2), np.ones(2), ["I", " "], "1: ")
    assert list(_visible_tokens(context).index) == ["v of 0:I", "v of 1:␣", "w·v of 0:I", "w·v of 1:␣", "z of 1:␣"]


def test_the_slide_themes_order_table_names_its_rows_and_writes_small_numbers_as_the_verdict_does(make_app):
    """A regression walk: on the projector (slide theme, st.table) view 6's table showed 0.0000 for 7.8e-07,
    beside row numbers 0, 1, 2; a teacher's walk: then 2.384e-07 beside the verdict's 2.38e−07."""
    import pyarrow as pa

    at = make_app(view="order", theme="slide", **SMALL)
    clean(at)
    (table,) = [t for t in at.table if "equivariant" in t.value.columns]
    frame = as_shown(table.value)
    assert list(frame.index) == ["with sinusoidal PE", "without PE", "without PE, look-ahead mask"]
    shown = as_shown(pa.ipc.open_stream(table.proto.arrow_data.styler.display_values).read_all().to_pandas())
    written = shown.loc["without PE", "max |f(B) − P f(A)|"]
    value = frame.loc["without PE", "max |f(B) − P f(A)|"]
    assert "e−0" in written and float(written.replace("−", "-")) == pytest.approx(value, rel=1e-2)
    assert any(f"max |f(B) − P f(A)| = {written}" in t for t in alerts(at.info)), written  # the verdict beside it


def table_texts(table) -> dict[str, list]:
    """An st.table as the page writes it: its cells (a Styler's display values, else its data), row names and
    column names, each of which the page renders as markdown (st.table, Streamlit 1.67)."""
    import pyarrow as pa

    arrow = table.proto.arrow_data
    data = pa.ipc.open_stream(arrow.data).read_all().to_pandas()
    cells = (pa.ipc.open_stream(arrow.styler.display_values).read_all().to_pandas() if arrow.styler.display_values
             else data)
    return {"cells": cells, "index": list(data.index), "columns": list(data.columns)}


MARKDOWN_SENTENCE = "#->+*$x$"  # each piece alone is markdown: a heading, a list item, a quote, an item, LaTeX


def test_the_slide_themes_token_tables_show_each_piece_as_text_not_markdown(make_app):
    """A bad-input walk: on the projector (slide theme) the token tables are st.table, which renders every cell as
    markdown: the piece "#" was an empty heading, "-" and "+" bullets, ">" an empty quote, so their rows were blank."""
    from ui.text import md

    at = make_app(view="tokens", theme="slide", sentence_a=MARKDOWN_SENTENCE, tokenizer="char", **SMALL)
    clean(at)
    pieces = list(MARKDOWN_SENTENCE)
    (both, own_a, _) = [table_texts(t) for t in at.table]
    assert list(both["cells"]["A piece"]) == [md(p) for p in pieces]  # "\#": markdown's own way to write "#"
    assert list(own_a["cells"]["piece"]) == list(own_a["cells"]["text"]) == [md(p) for p in pieces]
    assert "n\\_bytes" in own_a["columns"]  # a column's name is markdown too


@needs_trained
def test_the_slide_themes_translations_show_the_sentences_as_text_not_markdown(make_app):
    """A bad-input walk: view 6's translations on the projector (st.table, markdown) wrote the sentence
    "**bold** $x$ [link](javascript:alert(1))" bold, as LaTeX and as a link."""
    from ui.text import md

    a, b = "**bold** $x$ [link](javascript:alert(1))", "# 你喜欢她"
    at = make_app(view="order", theme="slide", model="zh-en", sentence_a=a, sentence_b=b)
    assert not at.exception
    (translations,) = [table_texts(t) for t in at.table if "with PE (zh-en)" in as_shown(t.value).columns]
    assert translations["index"] == [md(a), md(b)]  # the rows, named by the sentences


@pytest.mark.parametrize("indent", ["    ", "\t", "  \t "])
def test_text_that_starts_with_spaces_is_not_markdowns_code_block(indent):
    """A bad-input walk: view 6's sentence "    <b>x</b>" on the projector (st.table, markdown) was a code block, its
    escapes shown ("\\<b\\>x"): four spaces or a tab at a line's start make one in CommonMark."""
    from ui.text import md

    written = md(indent + "<b>x</b>")
    assert written.lstrip(" \t") == written  # no indent that markdown reads
    assert plain(written).replace("\u00a0", " ").strip() == "<b>x</b>"  # the text itself, its indent kept as spaces


def test_a_links_line_break_becomes_the_space_the_box_shows(make_app):
    """A narrow-screen walk: a link's "你喜欢%0A她" showed "你喜欢她" in the one-line box (an <input> drops line
    breaks) above figures of five tokens, ⏎ among them. The box and the figures now read the same text."""
    at = make_app(link={"sentence_a": "你喜欢\n她", "sentence_b": "a\r\nb\rc", "views": "tokens"})
    clean(at)
    assert at.text_input(key="sentence_a").value == "你喜欢 她" and at.session_state["sentence_b"] == "a b c"
    assert at.query_params["sentence_a"] == "你喜欢 她"  # the address bar: what is shown
    shown = [d for d in at.dataframe if "piece" in d.value.columns][0].value["piece"].tolist()
    assert "\n" not in "".join(shown) and len(shown) == 5  # 你 喜 欢 ␣ 她


def test_impossible_heads_are_named_as_the_sidebar_names_them_and_the_choices_in_words(make_app):
    """A narrow-screen walk: "n_heads: … choose n_heads among [1, 2, 3, 5, 6, 10, 15, 30]" (the code's name, a
    Python list); the sidebar's box is "heads"."""
    at = make_app(view="attention", d_model=30, n_heads=4)
    (error,) = alerts(at.error)
    assert "These settings cannot be drawn. heads: d_model 30 does not split into 4 heads" in error
    assert "1, 2, 3, 5, 6, 10, 15 or 30 heads do" in error and "[" not in error and "n_heads" not in error
    assert all(30 % h == 0 for h in (1, 2, 3, 5, 6, 10, 15, 30))


# what an impossible spec's error offers instead: "choose 504 or 518" (d_models), "1, 7 or 73 heads do" (heads)
OFFERED_D_MODELS = re.compile(r"choose ([0-9]+)(?: or ([0-9]+))?")
OFFERED_HEADS = re.compile(r"((?:[0-9]+, )*[0-9]+(?: or [0-9]+)?) heads? do")  # "only 1 head does"


def offered(message: str) -> tuple[list[int], list[int]]:
    """The d_models and the numbers of heads an error's advice offers."""
    d_models = [int(m) for found in OFFERED_D_MODELS.findall(message) for m in found if m]
    heads = [int(h) for found in OFFERED_HEADS.findall(message) for h in re.split(r", | or ", found)]
    return d_models, heads


def test_the_apps_advice_offers_only_what_its_boxes_allow(monkeypatch):
    """A re-read of ui/sidebar.py: the sidebar's boxes are narrower than a FigureSpec's ranges (UI_LIMITS' d_model up
    to 512, the spec's 1024), and a spec's advice was worked out against the spec's: d_model 511 in 7 heads (odd,
    under sinusoidal PE) was told "choose 504 or 518", and the d_model box refuses 518. Over every d_model and number
    of heads the boxes allow, each d_model and each number of heads an error offers is one they allow, and an offered
    d_model draws with those heads."""
    import ui.state
    from lab.spec import SpecError
    from ui.state import UI_LIMITS, spec_from_state

    state = dict(DEFAULTS)
    monkeypatch.setattr(ui.state, "st", type("FakeStreamlit", (), {"session_state": state}))
    (d_lo, d_hi), (h_lo, h_hi) = UI_LIMITS["d_model"], UI_LIMITS["n_heads"]
    told = 0
    for d_model in range(d_lo, d_hi + 1):
        for n_heads in range(h_lo, h_hi + 1):
            state.update(d_model=d_model, n_heads=n_heads)
            try:
                spec_from_state()
                continue
            except SpecError as exc:
                said = exc.message
            d_models, heads = offered(said)
            assert d_models or heads, said
            assert all(d_lo <= d <= d_hi for d in d_models) and all(h_lo <= h <= h_hi for h in heads), said
            for d in d_models:
                state.update(d_model=d)
                spec_from_state()  # draws: even, and splits into the heads
            told += 1
    assert told > 10_000  # every pair that does not split, and the odd d_models that do


@pytest.mark.parametrize(("d_model", "n_heads"), [(511, 7), (507, 13), (495, 45), (511, 1)])
def test_a_links_advice_offers_only_what_the_apps_boxes_allow_and_the_export_commands_its_own(d_model, n_heads):
    """A link's odd d_model near the top of the sidebar's box (512) was offered a d_model past it ("choose 504 or
    518"), as the app's own settings were (the test above); python -m lab.export, which draws up to a FigureSpec's
    1024, still offers both."""
    from lab.spec import _RANGES, SpecError
    from ui.state import UI_LIMITS, link_error_message, spec_from_link

    spec, errors, dropped = spec_from_link({"d_model": str(d_model), "n_heads": str(n_heads)})
    message = link_error_message(errors, dropped, spec is not None)
    (d_models, _) = offered(message)
    both = [d for d in (d_model - n_heads, d_model + n_heads) if _RANGES["d_model"][0] <= d <= _RANGES["d_model"][1]]
    assert d_models == [d for d in both if d <= UI_LIMITS["d_model"][1]], message
    with pytest.raises(SpecError) as err:
        FigureSpec.from_json(json.dumps({"d_model": d_model, "n_heads": n_heads}))  # as python -m lab.export reads it
    assert offered(str(err.value))[0] == both, str(err.value)


def test_the_sidebars_d_model_is_offered_in_its_box(make_app):
    """The page itself (the error above the figures) offers d_models the d_model box takes: 511 in 7 heads was told
    "choose 504 or 518", past the box's 512."""
    at = make_app(view="attention", d_model=511, n_heads=7)
    (error,) = alerts(at.error)
    box = at.number_input(key="d_model").proto
    d_models, _ = offered(error)
    assert d_models == [511 - 7] and all(box.min <= d <= box.max for d in d_models), error


def test_the_share_box_says_when_the_export_command_would_refuse_its_spec(make_app):
    """View 7 of the random model (a hint to choose zh-en): the box said "run python -m lab.export SPEC.json" for a
    spec the command refuses (a researcher's walk); it says the command's own refusal instead."""
    at = make_app(view="translate", share=True, **SMALL)
    clean(at)
    said = [plain(c.value) for c in at.caption if "python -m lab.export" in plain(c.value)]
    assert said == ["`python -m lab.export` refuses this spec as it is (views: 'translate' needs model 'zh-en' (the "
                    "random model does not translate)); the link above still opens this view."], said
    assert [b.proto.label for b in at.get("download_button")][-1] == "SPEC.json"  # the spec is still the view's


def test_the_browsers_back_and_forward_buttons_open_the_link_they_bring(make_app, history_navigation):
    """A teacher's walk (lesson step 3, then view 4, then the browser's Back): each change pushes its link into the
    address bar, and Back brings the one before, with which Streamlit reruns the script; the app kept view 4 and put
    its link back, so Back did nothing, and pressed again went on out of the page's history. The page now shows the
    link the browser brought: its view, block and sentences, its theme, and view 7's decoding step."""
    step_3 = {"views": "attention", "sentence_a": "你喜欢她", "sentence_b": "她喜欢你", "block": "decoder self",
              "theme": "slide"}
    at = make_app(link=step_3)
    clean(at)
    before = dict(at.query_params)
    view(at, "heads")
    clean(at)
    after = dict(at.query_params)
    assert after["views"] == "heads"

    def navigate(query: dict[str, str]) -> None:  # the browser's Back or Forward: the address bar's query, a rerun
        history_navigation(at, query)
        clean(at)

    navigate(before)  # Back
    assert at.session_state["view"] == "attention" and at.session_state["block"] == "decoder self"
    assert dict(at.query_params) == before  # the address bar keeps what Back brought
    assert "5. Weights" in " ".join(title(f) for f in figures(at))  # view 3's figures, not view 4's
    navigate(after)  # Forward
    assert at.session_state["view"] == "heads" and dict(at.query_params) == after
    at.text_input(key="sentence_a").input("我爱我家").run()  # a new sentence, then Back to the one before
    clean(at)
    navigate(after)
    assert at.session_state["sentence_a"] == "你喜欢她" and dict(at.query_params) == after  # (the default: not in it)
    assert at.text_input(key="sentence_a").value == "你喜欢她"
    at.selectbox(key="theme").set_value("dark").run()  # a theme chosen, then Back to the link of slide
    navigate(after)
    assert at.session_state["theme"] == "slide"
    navigate({"views": "heads", "sentence_a": "你喜欢她", "sentence_b": "她喜欢你"})  # a link without a theme
    assert at.session_state["theme"] == "default" and "theme" not in at.query_params  # follows the (light) page
    navigate({})  # back to the page as first opened, without a query: the defaults
    assert at.session_state["view"] == "tokens" and at.session_state["sentence_a"] == DEFAULTS["sentence_a"]
    assert at.query_params["views"] == "tokens"


def test_a_sidebar_change_that_brings_the_query_before_the_last_is_a_change_not_back(make_app):
    """A run brings the address bar's query: a setting changed in the sidebar before the page had put the last run's
    link there brings the one before it, which is not the browser's Back (its settings are the ones changed)."""
    at = make_app(link={"views": "attention", "theme": "slide"})
    clean(at)
    before = dict(at.query_params)
    view(at, "heads")
    clean(at)
    at.query_params.clear()
    at.query_params.update(before)  # the address bar not yet at view 4's link
    at.selectbox(key="mask").set_value("none").run()
    clean(at)
    assert at.session_state["mask"] == "none" and at.session_state["view"] == "heads"
    assert at.query_params["views"] == "heads" and at.query_params["mask"] == "none"


@needs_trained
def test_back_in_the_translate_view_opens_the_decoding_step_of_the_link_it_brings(make_app, history_navigation):
    """Lesson step 7: the teacher drags the decoding step from 1 to 3; Back brings step 2's link and shows step 2."""
    at = make_app(link={"views": "translate", "model": "zh-en", "theme": "slide"})
    clean(at)
    at.slider(key="translate_step").set_value(2).run()
    step_2 = dict(at.query_params)
    at.slider(key="translate_step").set_value(3).run()
    assert at.query_params["step"] == "3"
    history_navigation(at, step_2)
    clean(at)
    assert at.slider(key="translate_step").value == 2 and at.query_params["step"] == "2"
    step_1 = {"views": "translate", "model": "zh-en", "theme": "slide"}
    history_navigation(at, step_1)
    clean(at)
    assert at.slider(key="translate_step").value == 1 and "step" not in at.query_params


def test_back_pressed_while_a_typed_sentence_still_runs_opens_the_link_before(make_app, history_navigation):
    """A student types a sentence, presses Enter and, before the run has finished, Back. The rerun Back sends carries
    the typed sentence (the box's value) and the address bar's link before; the settings no longer matched the link
    last written, so the app took it for the typing: it showed the typed sentence under the link before, and wrote its
    own link over that history entry (a Back during a run replaces it). Back now opens the link it brings."""
    at = make_app(link={"views": "attention", "head": "1"})
    clean(at)
    before = dict(at.query_params)
    view(at, "heads")
    clean(at)
    at.text_input(key="sentence_a").set_value("我爱我家")  # typed, its run not yet finished when Back comes
    history_navigation(at, before)
    clean(at)
    assert at.text_input(key="sentence_a").value == "你喜欢她"
    assert at.session_state["view"] == "attention" and at.session_state["head"] == 1
    assert dict(at.query_params) == before



@needs_trained
def test_back_from_the_view_that_switched_to_the_trained_model_leaves_nothing_of_the_switch(make_app,
                                                                                          history_navigation):
    """Views 6 and 7 switch the random model to zh-en, setting aside its learned positional encoding for the way back
    (ui/state.py choose_model) and noting the switch. Back to view 4's link opened the random model, but both stayed:
    later, the random model with positional 'none', then zh-en and random again in the sidebar, put 'learned' back
    over the 'none' chosen; and zh-en chosen by hand said, in view 3, that it had been chosen for views 6 and 7."""
    at = make_app(link={"views": "heads", "positional": "learned"})
    clean(at)
    before = dict(at.query_params)
    view(at, "order")
    assert at.session_state["model"] == "zh-en"  # the switch (app.py on_view_change)
    history_navigation(at, before)
    clean(at)
    assert at.session_state["model"] == "random" and at.session_state["positional"] == "learned"
    at.selectbox(key="positional").set_value("none").run()
    at.selectbox(key="model").set_value("zh-en").run()
    at.selectbox(key="model").set_value("random").run()
    clean(at)
    assert at.session_state["positional"] == "none"  # as chosen, not the learned one set aside before Back
    at.selectbox(key="model").set_value("zh-en").run()
    view(at, "attention")
    clean(at)
    assert not [i.value for i in at.info if "chosen for views 6 and 7" in i.value]


def test_a_rerun_that_changes_nothing_with_the_address_bar_a_link_behind_keeps_the_last_change(make_app):
    """A rerun brings the address bar's query: one that changes no setting (the lesson's box opened, the page turned
    dark) a moment after a change, before the page had put that change's link in the address bar, brings the link
    before it. The app took that for the browser's Back (another query, the settings of the last link written) and
    undid the change: head 1 went back to head 0. Only a rerun the browser sends for Back or Forward opens its link."""
    at = make_app(link={"views": "attention"})
    clean(at)
    before = dict(at.query_params)
    at.selectbox(key="head").set_value(1).run()
    at.query_params.clear()
    at.query_params.update(before)  # the address bar not yet at head 1's link
    at.run()
    clean(at)
    assert at.session_state["head"] == 1 and at.query_params["head"] == "1"


def test_back_to_a_link_that_cannot_be_opened_shows_the_defaults_its_notice_promises(make_app, history_navigation):
    """A link with nothing in it to use (?fbclid=...: a link a social site tagged) opens the defaults and says so. Back
    or Forward to it from another view (the history menu jumps there from any page) said "showing the default
    settings instead" over the view it came from, and put that view's link back in the address bar (a mutation
    walk). It opens as it did first: the defaults, the notice, their link."""
    bad = {"fbclid": "IwAR0x"}
    at = make_app(link=bad)
    first = [e.value for e in at.error]
    assert len(first) == 1 and "showing the default settings instead" in first[0], first
    opened = dict(at.query_params)
    view(at, "heads")
    at.selectbox(key="mask").set_value("none").run()
    clean(at)
    history_navigation(at, bad)
    assert [e.value for e in at.error] == first
    assert at.session_state["view"] == DEFAULTS["view"] and at.session_state["mask"] == DEFAULTS["mask"]
    assert dict(at.query_params) == opened


@needs_trained
def test_back_from_a_links_waiting_step_to_a_link_without_one_opens_the_first_step(make_app, history_navigation):
    """A link's decoding step waits while view 7 shows the random model (ui/translate.py linked_step_waits). Back or
    Forward from there to a link of view 7 of zh-en without a step (the history menu jumps over the pages between)
    opens that link's step, the first, and keeps its link: had the step of the link before waited on (a mutation of
    open_link), view 7 opened on step 3 and wrote step=3 into the address bar."""
    at = make_app(link={"views": "translate", "step": "3"})
    clean(at)
    assert "This link's step 3 is a decoding step of the trained model" in " ".join(i.value for i in at.info)
    step_1 = {"views": "translate", "model": "zh-en"}
    history_navigation(at, step_1)
    clean(at)
    assert at.slider(key="translate_step").value == 1 and dict(at.query_params) == step_1


def test_the_browser_tests_waits_know_the_views_and_the_bare_addresss_settings_as_the_app_does():
    """scripts/screenshots.py (the browser tests' helpers) keeps its own copy of the views and of what the bare
    address shows, which the app leaves unwritten (ui/state.py keep_link): a copy drifted would wait 90 s for a
    setting the URL never names."""
    from scripts.screenshots import BARE
    from scripts.screenshots import VIEWS as SHOT_VIEWS

    assert SHOT_VIEWS == list(VIEWS)
    assert BARE == {"views": VIEWS[0], "sentence_a": FigureSpec.sentence_a, "sentence_b": FigureSpec.sentence_b}
    assert all(DEFAULTS[key] == value for key, value in BARE.items() if key in DEFAULTS)
