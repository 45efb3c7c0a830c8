"""The views show the right numbers: each panel's table is checked against the maths."""

import copy
import dataclasses
import functools
import re
import unicodedata

import numpy as np
import pytest
import torch

from lab.compute import load_model
from lab.spec import THEMES, FigureSpec
from lab.views import NO_WORDS, VIEW_BUILDERS, Models, build_view, order_data, order_draws_attention
from tests.conftest import needs_trained, trained_available
from viz.labels import num as viz_num
from viz.labels import unique_labels


@pytest.fixture(scope="module")
def models():
    return Models(functools.lru_cache(maxsize=None)(load_model))


SPEC = FigureSpec(d_model=32, n_heads=4, n_layers=2, d_ff=64)


def panels(view, spec, models):
    result = build_view(view, spec, models)
    return {p.key: p for p in result.panels}, result


def test_attention_steps_are_consistent(models):
    spec = dataclasses.replace(SPEC, sentence_a="我爱我家", sentence_b="I like her", mask="paper")
    p, _ = panels("attention", spec, models)
    assert set(p) >= {"attention-qkv", "attention-scores", "attention-scaled", "attention-weights", "attention-masked"}
    scores = p["attention-scores"].table.to_numpy()
    scaled = p["attention-scaled"].table.to_numpy()
    np.testing.assert_allclose(scaled, scores / np.sqrt(32 // 4), atol=1e-9)
    weights = p["attention-weights"].table.to_numpy()
    # sentence A (4 tokens) is padded to B's 10 in the batch: the padding keys get weight exactly 0
    assert weights.shape == (10, 10)
    np.testing.assert_allclose(weights.sum(1), 1.0, atol=1e-6)
    assert np.all(weights[:, 4:] == 0)
    assert len(set(p["attention-weights"].table.index)) == 10  # unique labels despite 我 twice
    assert "attention-mask" in p


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_the_qkv_caption_says_what_x_is_and_it_is_so(models, norm):
    """The Q, K, V panel's caption names X (layer 0: the token embeddings × √d_model plus PE; pre-norm: after
    the sublayer's LayerNorm) and the bias; Q recomputed from that X and the layer's own W_Q, b_Q is the panel's."""
    spec = dataclasses.replace(SPEC, norm=norm, head=1)
    p, _ = panels("attention", spec, models)
    caption = p["attention-qkv"].caption
    assert "token embeddings (× √d_model) plus positional encoding" in caption and "Q = XW_Q + b_Q" in caption
    assert ("pre-norm: X after the sublayer's LayerNorm" in caption) == (norm == "pre")
    model = models.model(spec).model
    run_ = models.run(spec)
    with torch.no_grad():
        x = model.src_embed(run_.src[:1])[0]  # (T, d_model): sentence A, eval mode (no dropout)
        layer = model.encoder.layers[0]
        if norm == "pre":
            x = layer.sublayer1.norm(x)
        q = layer.self_attn.w_q(x)[:, 8:16].numpy()  # head 1 of 4: d_k = 8 columns
    np.testing.assert_allclose(p["attention-qkv"].table.loc["Q"].to_numpy(), q, atol=1e-5)
    p, _ = panels("attention", dataclasses.replace(spec, block="cross", layer=1), models)
    assert "X is the decoder's stream after layer 1's self-attention sublayer; M, the encoder's last output" in \
        p["attention-qkv"].caption


@pytest.mark.parametrize("view", ["attention", "heads", "query"])
def test_the_random_decoder_is_said_to_read_the_sentence_itself(models, view):
    """The random model's decoder rows are [BOS] + the source's own tokens (no translation): said where shown."""
    for block in ("encoder self", "decoder self", "cross"):
        spec = dataclasses.replace(SPEC, block=block)
        p, result = panels(view, spec, models)
        run_ = models.run(spec)
        reads = run_.sentences[0].tgt_pieces
        assert reads == ["[BOS]", *run_.sentences[0].encoding.pieces]  # what the hint says, so
        assert p and bool(result.hint) == (block != "encoder self")
        if result.hint:
            assert "reads [BOS] + this sentence's own tokens" in result.hint
    if trained_available():
        _, result = panels(view, dataclasses.replace(SPEC, block="cross", model="zh-en"), models)
        assert not result.hint


def test_look_ahead_mask_hides_the_future(models):
    spec = dataclasses.replace(SPEC, mask="look-ahead", block="encoder self")
    p, _ = panels("attention", spec, models)
    w = p["attention-weights"].table.to_numpy()
    assert np.all(np.triu(w, 1) == 0) and np.all(np.diag(w) > 0)
    masked = p["attention-masked"].table.to_numpy()
    assert np.all(np.isneginf(masked[np.triu_indices(4, 1)]))


def test_order_view_verdicts_follow_the_maths(models):
    p, _ = panels("order", SPEC, models)
    numbers = p["order-numbers"].table.set_index("model")
    assert numbers.loc["without PE", "max |f(B) − P f(A)|"] <= 1e-5
    assert numbers.loc["without PE", "max |mean f(A) − mean f(B)|"] <= 1e-5
    assert numbers.loc["with sinusoidal PE", "max |f(B) − P f(A)|"] > 1e-3
    assert numbers.loc["without PE, look-ahead mask", "max |f(B) − P f(A)|"] > 1e-3
    assert "EQUIVARIANT" in p["verdict-nope"].caption and "INVARIANT" in p["verdict-nope"].caption
    assert "sees word order" in p["verdict-pe"].caption
    assert "invariant" not in p["verdict-pe"].caption.lower()
    # B's outputs reordered to A's token order match A's outputs without PE
    diff = p["diff-nope"].table.to_numpy()
    assert diff.max() <= 1e-5 and p["diff-pe"].table.to_numpy().max() > 1e-3


@pytest.mark.parametrize("layer, head", [(1, 2), (5, 9)])  # (5, 9): past the model, the last layer and head
def test_order_view_shows_b_attention_as_a_attention_reordered_without_pe(models, layer, head):
    """View 6's attention panels: W(A), B's weights with rows and columns in A's order (Pᵀ W(B) P), and the
    difference, for the chosen encoder layer and head; without PE the first two are equal."""
    a, b = "我爱你们好", "们好我爱你"  # B = P A with P a 5-cycle: not its own inverse
    spec = dataclasses.replace(SPEC, sentence_a=a, sentence_b=b, layer=layer, head=head)
    p, _ = panels("order", spec, models)
    data = order_data(spec, models)
    shown = (min(layer, 1), min(head, 3))
    for slug, (_, _, rep, _, _) in zip(("pe", "nope"), data.compared, strict=True):
        panel = p[f"attn-{slug}"]
        assert f"encoder layer {shown[0]}, head {shown[1]}" in panel.figure.layout.title.text
        table = panel.table
        got_a, got_b = table.loc["A"].to_numpy(), table.loc["B (aligned)"].to_numpy()
        wa, wb = rep.attention(*shown)
        np.testing.assert_allclose(got_a, wa, atol=1e-7)
        pos_in_b = [b.index(ch) for ch in a]  # A's token i sits at position pos_in_b[i] in B
        np.testing.assert_allclose(got_b, wb[np.ix_(pos_in_b, pos_in_b)], atol=1e-7)
        np.testing.assert_allclose(table.loc["|A − B|"].to_numpy(), np.abs(got_a - got_b), atol=1e-12)
        z = [np.asarray(tr.z, dtype=float) for tr in panel.figure.data[:3]]  # the three panels as drawn
        np.testing.assert_allclose(z[0], wa, atol=1e-6)
        np.testing.assert_allclose(z[1], got_b, atol=1e-6)
        rows_b = list(panel.figure.layout.yaxis2.ticktext)  # B's panel: B's own "position:piece" labels
        assert rows_b == [f"{pos}:{b[pos]}" for pos in pos_in_b] and list(table.loc["B (aligned)"].index) == rows_b
        if slug == "nope":
            assert np.abs(got_a - got_b).max() <= 1e-6 and "W(B) = P W(A) Pᵀ" in panel.caption
        else:
            assert np.abs(got_a - got_b).max() > 1e-3 and "not A's reordered" in panel.caption
    numbers = p["order-numbers"].table.set_index("model")
    column = numbers["max |W(B) − P W(A) Pᵀ|"]
    assert column["without PE"] <= 1e-6 < 1e-3 < column["with sinusoidal PE"]
    assert column["without PE, look-ahead mask"] > 1e-3


@pytest.mark.parametrize("a, b", [("你喜欢她", "她喜欢你"), ("我爱我家", "我家我爱")])
def test_the_aligned_outputs_label_each_row_of_b_with_the_token_that_sits_there(models, a, b):
    """B reordered to A's order: row i of B's panel is the token matching A's row i, under B's position."""
    p, _ = panels("order", dataclasses.replace(SPEC, sentence_a=a, sentence_b=b), models)
    for slug in ("pe", "nope"):
        layout = p[f"aligned-{slug}"].figure.layout
        rows_a, rows_b = list(layout.yaxis.ticktext), list(layout.yaxis2.ticktext)
        pieces = [lab.split(":", 1) for lab in rows_b]
        assert [piece for _, piece in pieces] == [lab.split(":", 1)[1] for lab in rows_a] == list(a)
        assert all(b[int(pos)] == piece for pos, piece in pieces)  # each label is B's token at that position
        assert sorted(int(pos) for pos, _ in pieces) == list(range(len(b)))
        # the table holds the figure's three panels, labelled as they are
        table = p[f"aligned-{slug}"].table
        figure = p[f"aligned-{slug}"].figure
        for part, trace, labels in (("A", 0, rows_a), ("B (aligned)", 1, rows_b), ("|A − B|", 2, rows_a)):
            np.testing.assert_allclose(table.loc[part].to_numpy(), np.asarray(figure.data[trace].z, float), atol=1e-6)
            assert list(table.loc[part].index) == labels
        # one colour scale for the three panels, wide enough for every value in them: nothing clipped
        top = max(np.abs(table.to_numpy()).max(), 0)
        assert figure.layout.coloraxis.cmax >= top - 1e-6 and figure.layout.coloraxis.cmin <= -top + 1e-6


@pytest.mark.parametrize("kind", ["sinusoidal", "learned", "none"])
def test_the_positional_view_says_when_the_models_encoding_is_not_the_formula_drawn(models, kind):
    p, result = panels("positional", dataclasses.replace(SPEC, positional=kind), models)
    said = [n for n in result.notices if "positional encoding" in n]
    assert len(said) == (kind != "sinusoidal")
    assert kind == "sinusoidal" or ("learned" in said[0]) == (kind == "learned")
    run_ = models.run(dataclasses.replace(SPEC, positional=kind))
    n = len(run_.sentences[0].encoding)
    # the last panel adds the model's own rows, whatever the curves above draw
    own = run_.trace.encoder.embeddings.positional[:n].double().numpy()
    table = p["embedding-pe"].table
    added = table.loc["sum"].to_numpy() - run_.trace.encoder.embeddings.tokens[0, :n].double().numpy()
    np.testing.assert_allclose(added, own, atol=1e-5)
    np.testing.assert_allclose(table.loc["positional encoding"].to_numpy(), own, atol=1e-6)
    if kind == "learned":  # the notice gives the rows' size, which the shared colour scale hides
        assert f"largest |value| here {np.abs(own).max():.2g}," in said[0]
    if said:  # drawn above every panel (ui/panels.py render_result): it points at them in their order
        assert "above" not in said[0] and "last panel" in said[0] and list(p)[-1] == "embedding-pe"
        assert "before it" in said[0] and list(p).index("pe-curves") < list(p).index("embedding-pe")


def test_the_order_view_of_an_odd_d_model_says_what_it_needs(models):
    spec = dataclasses.replace(SPEC, d_model=15, n_heads=5, positional="none")  # compared with sinusoidal PE
    result = build_view("order", spec, models)
    assert not result.panels and "needs pairs of dimensions: d_model is 15" in result.hint


def test_the_order_view_compares_a_learned_encoding_where_it_is_chosen_odd_d_model_too(models):
    """Learned positions need no pairs of dimensions: with them chosen, view 6 compares them with none."""
    result = build_view("order", dataclasses.replace(SPEC, d_model=15, n_heads=5, positional="learned"), models)
    numbers = {p.key: p for p in result.panels}["order-numbers"].table.set_index("model")
    assert list(numbers.index) == ["with learned PE", "without PE", "without PE, look-ahead mask"]
    assert not numbers.loc["with learned PE", "equivariant"] and numbers.loc["without PE", "equivariant"]


def test_order_view_with_b_equal_to_a_says_there_is_nothing_to_compare(models):
    p, _ = panels("order", dataclasses.replace(SPEC, sentence_a="你喜欢她", sentence_b="你喜欢她"), models)
    for slug in ("pe", "nope", "causal"):
        caption = p[f"verdict-{slug}"].caption
        assert "B is A token for token" in caption and "EQUIVARIANT" not in caption and "sees" not in caption
        assert "with or without PE" not in caption  # the no-PE rows said it of themselves
    # the table beside them said "B reorders A: True" in every row, then "equivariant True" with PE: nothing is
    # compared, so its comparisons are blank, as for a B that is no reordering; and no figure of zeros is drawn
    table = p["order-numbers"].table
    assert not table["B reorders A"].any()
    assert table.drop(columns=["model", "B reorders A"]).isna().all().all()
    assert all(panel.figure is None for panel in p.values()), [k for k, v in p.items() if v.figure is not None]
    p, _ = panels("order", SPEC, models)  # 你喜欢她 / 她喜欢你: a reordering, in every row
    assert p["order-numbers"].table["B reorders A"].all()


def test_order_view_says_how_repeated_tokens_are_matched_where_the_number_depends_on_it(models):
    p, _ = panels("order", dataclasses.replace(SPEC, sentence_a="我爱我家", sentence_b="我家我爱"), models)
    said = "the k-th of B is matched with the k-th of A"
    assert said in p["verdict-pe"].caption and said in p["verdict-causal"].caption
    assert said not in p["verdict-nope"].caption  # without position, any matching gives the same numbers
    p, _ = panels("order", SPEC, models)  # 你喜欢她 / 她喜欢你: no token repeats
    assert not any(said in p[f"verdict-{slug}"].caption for slug in ("pe", "nope", "causal"))


@pytest.mark.parametrize("view", ["tokens", "attention", "order"])
def test_pieces_the_tokenizer_does_not_know_are_named_in_a_notice(models, view):
    spec = dataclasses.replace(SPEC, sentence_a="我爱你", sentence_b="我😀你\x00")
    _, result = panels(view, spec, models)
    unknown = [n for n in result.notices if "[UNK]" in n]
    assert unknown == ["Sentence B: “😀”, U+0000 are not in the char tokenizer's vocabulary, so the model reads "
                       "[UNK] there: one and the same token for every unknown piece."]


def test_unknown_right_to_left_letters_and_lone_combining_marks_are_named_so_that_they_read_right(models):
    """A bad-input walk: the notice's list of Arabic letters read reversed with its quotes mirrored (“ب“ ,”ح“),
    and a combining mark sat on its quote mark. Each right-to-left piece is isolated (U+2068 ... U+2069), a
    mark with no letter before it sits on a dotted circle."""
    spec = dataclasses.replace(SPEC, sentence_a="مرحبا", sentence_b="a\u0334b")
    _, result = panels("tokens", spec, models)
    (arabic,) = [n for n in result.notices if n.startswith("Sentence A:")]
    assert arabic.startswith("Sentence A: “\u2068م\u2069”, “\u2068ر\u2069”, “\u2068ح\u2069”"), arabic
    (mark,) = [n for n in result.notices if n.startswith("Sentence B:")]
    assert mark.startswith("Sentence B: “◌\u0334” is not in"), mark
    one, _ = panels("tokens", dataclasses.replace(SPEC, sentence_a="a"), models)
    assert one["tokens-a"].title == "Sentence A: 1 token (char)"  # not "1 tokens"


@pytest.mark.parametrize("view", ["tokens", "attention"])
def test_a_special_tokens_name_typed_in_a_sentence_is_said_to_be_read_as_its_characters(models, view):
    """A tokens walk: tokenizers' own Tokenizer.from_file("assets/tokenizers/char.json").encode("[BOS] hi") gives the
    special token [BOS] (id 1); the app reads the typed text as its characters "[", "B", "O", "S", "]" (as it should:
    TextTokenizer sets encode_special_tokens), and said nothing, so a student comparing the two saw a mismatch with no
    word why. A notice names each special token spelled in the text, read as characters."""
    spec = dataclasses.replace(SPEC, sentence_a="[BOS] hi [EOS][BOS]", sentence_b="[unk] a[PAD]")
    p, result = panels(view, spec, models)
    said = [n for n in result.notices if "read as the characters typed" in n]
    assert said == [
        "Sentence A: “[BOS]”, “[EOS]” are read as the characters typed, not as the special tokens of those names, "
        "which only the model puts in ([BOS] first in the decoder's input, [EOS] where a translation ends, [PAD] "
        "to line up A and B, [UNK] for a character the vocabulary lacks).",
        "Sentence B: “[PAD]” is read as the characters typed, not as the special token of that name, which only "
        "the model puts in ([BOS] first in the decoder's input, [EOS] where a translation ends, [PAD] to line up A "
        "and B, [UNK] for a character the vocabulary lacks)."], result.notices
    if view == "tokens":
        assert list(p["tokens-b"].table["piece"])[-5:] == list("[PAD]")
    plain = build_view(view, SPEC, models).notices
    assert not [n for n in plain if "read as the characters typed" in n]


@pytest.mark.parametrize("tokenizer", ["char", "bpe"])
def test_a_special_tokens_name_past_the_tokens_the_model_takes_is_not_said_to_be_read(models, tokenizer):
    """The notice looked for "[BOS]" in the whole sentence where the random model takes its first max_len − 1 tokens:
    typed after the cut, the model never read it, yet the notice said it "is read as the characters typed". It names
    what the model reads: the name whole before the cut, not after it, nor cut in two by it."""
    spec = dataclasses.replace(SPEC, tokenizer=tokenizer)
    limit = models.model(spec).model.config.max_len - 1
    tok = models.model(spec).src_tokenizer
    filler = " ".join(["a"] * limit) if tokenizer == "bpe" else "a" * limit  # exactly `limit` tokens

    def said(text):
        notices = build_view("tokens", dataclasses.replace(spec, sentence_a=text), models).notices
        assert len(tok.encode(text)) <= limit or any("only the first" in n for n in notices), notices
        return [n for n in notices if "read as the characters typed" in n]

    assert len(tok.encode(filler)) == limit
    assert said(filler + " [BOS]") == []  # past the cut
    ends = tok.encode(filler).offsets
    tail = filler[:ends[limit - 3][0]]  # room for 2 or 3 tokens: "[BOS]" is 5 characters, split by the cut
    assert len(tok.encode(tail + "[BOS]")) > limit and said(tail + "[BOS]") == []
    fits = filler[:ends[limit - len(tok.encode("[BOS]")) - 1][1]]
    assert len(tok.encode(fits + "[BOS]")) <= limit and said(fits + "[BOS]") != []  # whole before it: said


def test_unknown_characters_that_draw_as_nothing_are_named_by_code_point(models):
    """A tokens walk: "I ❤️ 你" typed on a phone has U+FE0F after the heart; the notice named it “◌️”, a dotted
    circle with nothing to say what it stood for, and a Hangul filler (U+3164) as “ㅤ”, empty quotes. Both are
    named by code point, as a control is."""
    spec = dataclasses.replace(SPEC, sentence_a="I ❤\ufe0f 你\u3164")
    _, result = panels("tokens", spec, models)
    (unknown,) = [n for n in result.notices if "[UNK]" in n]
    assert unknown.startswith("Sentence A: “❤”, U+FE0F, U+3164 are not in the char tokenizer's vocabulary"), unknown


@pytest.mark.parametrize(("a", "b", "named"), [
    ("你喜欢她", "   ", "(sentence B holds only spaces, which the views read as nothing)."),
    ("", "\t", "(sentence A is empty; sentence B holds only spaces, which the views read as nothing)."),
    ("你喜欢她", "\n", "(sentence B holds only line breaks, which the views read as nothing)."),  # not "spaces"
    ("你喜欢她", " \r\n ", "(sentence B holds only spaces and line breaks, which the views read as nothing)."),
])
def test_the_order_views_hint_names_the_sentence_it_lacks(models, a, b, named):
    """A bad-input walk: a B of spaces got the general "Type two sentences" alone, where the other views say which
    sentence holds only spaces."""
    result = build_view("order", dataclasses.replace(SPEC, sentence_a=a, sentence_b=b), models)
    assert not result.panels and result.hint.startswith("Type two sentences") and result.hint.endswith(named)


@needs_trained
def test_the_order_view_says_a_cut_sentence_once_for_both_trained_models(models):
    """View 6 reads the sentence with zh-en and zh-en-nope (one max_len): a long paste said "zh-en reads at most 64,
    so only the first 64 are translated" and the same again for zh-en-nope, two warnings above the figures."""
    spec = FigureSpec(sentence_a="你喜欢她" * 30, sentence_b="她喜欢你", views=("order",), model="zh-en")
    cut = [n for n in build_view("order", spec, models).notices if "only the first" in n]
    assert len(cut) == 1 and "has 120 characters" in cut[0] and "the trained models read at most 64" in cut[0], cut


@needs_trained
def test_the_trained_models_token_spans_point_into_the_text_as_typed():
    spec = FigureSpec(model="zh-en", sentence_a="你 喜欢\t她 😀", sentence_b="她喜欢你")
    p, result = panels("tokens", spec, Models(functools.lru_cache(maxsize=None)(load_model)))
    table = p["tokens-a"].table
    assert list(table["piece"]) == ["你", "喜", "欢", "她", "[UNK]"]  # whitespace is not read
    assert [spec.sentence_a[s:e] for s, e in zip(table["start"], table["end"], strict=True)] == list("你喜欢她😀")
    assert list(table["text"]) == list("你喜欢她😀") and list(table["start"]) == [0, 2, 3, 5, 7]
    assert "zh-en: one per character, spaces skipped" in p["tokens-a"].title
    assert any("“😀” is not in the trained models' vocabulary" in n for n in result.notices)


@needs_trained
def test_the_translate_views_charts_name_a_cells_row_and_column_alike_on_hover(models):
    """A words walk: in view 7, hovering the cell of step 1:you→like over 0:你 said "query 1:you→like, key 0:你" in
    the cross-attention chart (and the decoder's, and the two step charts under the slider), and "decoding step
    (reads → writes) 1:you→like, source token 0:你" in the grid of every head below it: one cell, two names. Every
    chart of decoding steps names them as its axes do, decoding steps and source or target tokens."""
    import viz

    spec = FigureSpec(model="zh-en", sentence_a="你喜欢她", views=("translate",))
    p, _ = panels("translate", spec, models)
    steps = "decoding step (reads → writes) %{y}<br>"
    weights = np.full((3, 4), 0.25)
    step_charts = {  # ui/translate.py's, under the slider
        "step-cross": viz.cross_attention_heatmap(weights, target_labels=list("abc"), source_labels=list("wxyz"),
                                                  step_labels=["a→b", "b→c", "c→d"]),
        "step-self": viz.decoder_self_attention_heatmap(np.tril(np.ones((3, 3))) / [[1], [2], [3]],
                                                        target_labels=list("abc"), step_labels=["a→b", "b→c", "c→d"],
                                                        mask=np.tril(np.ones((3, 3), bool))),
    }
    figures = {key: p[key].figure for key in ("cross", "decoder-self", "cross-heads")} | step_charts
    for key, fig in figures.items():
        hovers = {t.hovertemplate for t in fig.data if t.type == "heatmap" and t.hovertemplate}
        keys = "target token" if "self" in key else "source token"
        assert hovers and all(h.startswith(f"{steps}{keys} %{{x}}<br>") for h in hovers), (key, hovers)
    # without decoding steps (a target sentence of its own), rows and columns stay queries and keys
    plain = viz.cross_attention_heatmap(weights, target_labels=list("abc"), source_labels=list("wxyz"))
    assert plain.data[0].hovertemplate.startswith("query %{y}<br>key %{x}<br>")


def test_the_order_views_figures_say_in_their_own_titles_with_or_without_pe(models):
    """An exported figure carries only its own title: the PE and no-PE twins must not read the same."""
    import viz

    p, _ = panels("order", SPEC, models)
    for kind in ("aligned", "diff", "pooled"):
        titles = {slug: viz.theme.unwrap(p[f"{kind}-{slug}"].figure.layout.title.text) for slug in ("pe", "nope")}
        assert "with sinusoidal PE" in titles["pe"] and "without PE" in titles["nope"], titles


def test_order_view_with_a_non_permutation_says_so(models):
    spec = dataclasses.replace(SPEC, sentence_b="我有一只猫")
    p, _ = panels("order", spec, models)
    assert "not a reordering" in p["verdict-nope"].caption
    assert "diff-nope" not in p


def test_query_view_reproduces_seed_002_for_the_journey_preset(models):
    spec = dataclasses.replace(SPEC, sentence_a="Your journey starts with one step", query=1, tokenizer="bpe")
    p, _ = panels("query", spec, models)  # bpe: one token a word, query 1 is " journey"
    seed = p["journey-bars"].table
    np.testing.assert_allclose(seed["score ω"], [1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440], atol=1e-4)
    np.testing.assert_allclose(seed["weight α"], [0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820], atol=1e-4)
    np.testing.assert_allclose(p["journey-context"].table.to_numpy()[-1], [0.3061, 0.8210], atol=1e-4)  # z, last
    assert p["journey-context"].caption.endswith("the tutorial prints tensor([0.3061, 0.8210]) for it.")
    # another query: its own z, and the tutorial's number named as journey's, not as this word's
    p, _ = panels("query", dataclasses.replace(spec, query=2), models)
    z = p["journey-context"].table.to_numpy()[-1]
    assert "'starts'" in p["journey-context"].title and not np.allclose(z, [0.3061, 0.8210], atol=1e-4)
    assert "for 'journey' only (word 1" in p["journey-context"].caption


def test_the_textbook_example_in_the_examples_menu_names_its_book_as_view_5s_panel_does(models):
    """The Examples menu offered "Your journey starts with one step — the textbook's 3-d example": which textbook,
    a student (or a teacher of another book) could not tell until view 5's panel named it (Raschka, §3.4). The
    menu names its author, as the panel does, and the view that shows the book's numbers."""
    from model.examples import JOURNEY_TEXT
    from ui.state import PRESETS

    label = next(k for k, (a, _) in PRESETS.items() if a == JOURNEY_TEXT)
    p, _ = panels("query", FigureSpec(sentence_a=JOURNEY_TEXT, views=("query",)), models)
    author = re.search(r"\((\w+), ", p["journey-bars"].title)[1]  # "(Raschka, Build a Large Language Model ..."
    assert author in label and "view 5" in label, (author, label)

@pytest.mark.parametrize("block", ["encoder self", "decoder self", "cross"])
def test_the_textbook_panel_follows_the_word_of_the_pages_query_token(models, block):
    """The char tokenizer reads one character a token: the textbook panel followed the query's index, so the
    page's query "1:o" (of "Your") showed 'journey'. Now the word the query token is in, found from its offsets;
    the decoder's rows are [BOS] + the source, one further on."""
    text = "Your journey starts with one step"
    words = [(m.start(), m.end(), m.group()) for m in re.finditer(r"\S+", text)]
    shift = 0 if block == "encoder self" else 1
    for start in range(len(text)):
        spec = dataclasses.replace(SPEC, sentence_a=text, block=block, query=start + shift)  # char: token = char
        p, _ = panels("query", spec, models)
        word = next(w for _, end, w in words if end > start)  # a space: the word after it
        assert f"query '{word}'" in p["journey-bars"].title
        for key in ("journey-bars", "journey-context"):  # the figures say whose they are (a slide hides headings)
            assert p[key].figure.layout.title.text.startswith("Textbook (Raschka, section 3.4)"), key
        assert list(p["journey-bars"].table["key"]) == text.split()
        label = p["query-bars"].title.split(":", 1)[0]
        if text[start] == " ":  # a space is no word's: the one after it (a regression walk: "the word of ␣")
            assert "(the word after this page's query" in p["journey-bars"].title, (start, label)
        elif text[start] != word[0]:  # not the word's own first letter: the title says which token it is for
            assert "(the word of this page's query" in p["journey-bars"].title, (start, label)
    if shift:
        p, _ = panels("query", dataclasses.replace(SPEC, sentence_a=text, block=block, query=0), models)
        assert "query 0:[BOS] is not one of its words" in p["journey-bars"].title
    bars = p["query-bars"].table
    np.testing.assert_allclose(bars["weight"].sum(), 1.0, atol=1e-6)
    ctx = p["query-context"].table.to_numpy()  # v of each key, w·v of each key, z
    n = len(bars)
    np.testing.assert_allclose(bars["weight"].to_numpy() @ ctx[:n], ctx[-1], atol=1e-6)
    np.testing.assert_allclose(bars["weight"].to_numpy()[:, None] * ctx[:n], ctx[n : 2 * n], atol=1e-12)


def test_positional_view_numbers(models):
    p, _ = panels("positional", SPEC, models)
    gram = p["pe-dot-matrix"].table.to_numpy()
    for k in range(-3, 4):
        d = np.diagonal(gram, k)
        assert np.ptp(d) < 1e-4  # Toeplitz
    curve = p["pe-dot-curve"].table
    values = curve["dot"]  # indexed by the offset
    assert values[0] == pytest.approx(16)  # d_model / 2
    np.testing.assert_allclose(values.loc[1:10].to_numpy(), values.loc[-1:-10:-1].to_numpy(), atol=1e-9)
    table = p["embedding-pe"].table  # the figure's three panels, each (tokens, d_model)
    emb, pe, total = (table.loc[name].to_numpy() for name in ("token embedding", "positional encoding", "sum"))
    assert emb.shape == pe.shape == total.shape == (4, 32)
    np.testing.assert_allclose(total, emb + pe, atol=1e-5)  # the sum is the embedding plus PE
    figure = p["embedding-pe"].figure
    for trace, part in zip([t for t in figure.data if t.type == "heatmap"], (emb, pe, total), strict=True):
        np.testing.assert_allclose(np.asarray(trace.z, float), part, atol=1e-6)


def test_pe_reference_is_the_closed_form_computed_once_and_read_only():
    import torch

    from lab.views import pe_reference
    from model.positional import offset_dot_products, sinusoidal_at, sinusoidal_encoding

    ref = pe_reference(50, 32)
    assert pe_reference(50, 32) is ref  # one per (span, d_model): every short sentence shares it
    np.testing.assert_array_equal(ref.table, sinusoidal_encoding(50, 32).double().numpy())
    fine = torch.arange(0, 49 + 1e-9, 0.1, dtype=torch.float64)
    np.testing.assert_array_equal(ref.fine, fine.numpy())
    np.testing.assert_array_equal(ref.curves, sinusoidal_at(fine, 32, list(ref.dims)).numpy())
    pos = ref.fine[:, None]
    omega = 10000.0 ** (-2 * (np.array(ref.dims) // 2) / 32)
    closed = np.where(np.array(ref.dims) % 2 == 0, np.sin(pos * omega), np.cos(pos * omega))
    np.testing.assert_allclose(ref.curves, closed, atol=1e-12)  # PE(pos, 2i) = sin, PE(pos, 2i+1) = cos
    np.testing.assert_array_equal(ref.offsets, np.arange(-49, 50))
    np.testing.assert_array_equal(ref.dots, offset_dot_products(torch.arange(-49.0, 50.0, dtype=torch.float64), 32).numpy())
    for a in (ref.table, ref.fine, ref.curves, ref.offsets, ref.dots):
        assert not a.flags.writeable  # shared by every session
        with pytest.raises(ValueError):
            a[0] = 1.0


def test_the_pe_csvs_name_their_rows_by_position_and_their_columns_by_dimension_with_the_closed_form(models):
    """A researcher's walk: the PE curves' CSV named its columns "0:dim 0, 1:dim 1, 2:dim 2, 3:dim 3, 4:dim 32, 5:dim 62"
    (a figure's token labels' "i:" numbering, here of nothing: "4:dim 32" read as dimension 4 or 432) and its rows
    and the PE matrix's "row": they are PE(pos, j) by position, as the rotation's CSV names them."""
    import io

    import pandas as pd

    from viz.export import table_csv

    p, _ = panels("positional", SPEC, models)
    d = SPEC.d_model
    for key in ("pe-curves", "pe-matrix"):
        table = pd.read_csv(io.BytesIO(table_csv(p[key].table)), encoding="utf-8-sig", index_col=0)
        assert table.index.name == "position" and list(table.index) == list(range(len(table))), key
        if key == "pe-curves":
            assert all(re.fullmatch(r"PE\(pos, \d+\)", c) for c in table.columns), list(table.columns)
            dims = [int(c[8:-1]) for c in table.columns]
            assert dims[:4] == [0, 1, 2, 3] and len(dims) == len(set(dims))
        else:
            dims = [int(c) for c in table.columns]
            assert dims == list(range(d))
        pos = np.arange(len(table))[:, None]
        i = np.array(dims) // 2
        angle = pos / 10000 ** (2 * i / d)
        closed = np.where(np.array(dims) % 2 == 0, np.sin(angle), np.cos(angle))
        np.testing.assert_allclose(table.to_numpy(), closed, atol=1e-6)


def test_positional_view_uses_the_sentence_positions_with_the_shared_reference(models):
    short = dataclasses.replace(SPEC, sentence_a="你喜欢", sentence_b="她")
    longer = dataclasses.replace(SPEC, sentence_a="你喜欢她我有一只猫", sentence_b="她")
    a, _ = panels("positional", short, models)
    b, _ = panels("positional", longer, models)
    # the PE matrix and the offset curve depend on (span, d_model) only: the same for both
    np.testing.assert_array_equal(a["pe-matrix"].table.to_numpy(), b["pe-matrix"].table.to_numpy())
    np.testing.assert_array_equal(a["pe-dot-curve"].table.to_numpy(), b["pe-dot-curve"].table.to_numpy())
    # the Gram matrix and the embeddings are each sentence's own
    assert a["pe-dot-matrix"].table.shape == (3, 3) and b["pe-dot-matrix"].table.shape == (9, 9)
    np.testing.assert_allclose(b["pe-dot-matrix"].table.to_numpy()[:3, :3], a["pe-dot-matrix"].table.to_numpy())


def test_heads_view_shapes_and_entropy_bounds(models):
    p, _ = panels("heads", SPEC, models)
    ent = p["entropy"].table.to_numpy()
    assert ent.shape == (2, 4)
    assert np.all(ent >= 0) and np.all(ent <= np.log2(4) + 1e-9)
    spec = dataclasses.replace(SPEC, heads=(1, 3))
    p, _ = panels("heads", spec, models)
    assert set(p["heads-grid"].table.index.get_level_values(0)) == {"head 1", "head 3"}


def test_empty_and_long_inputs(models):
    _, r = panels("attention", dataclasses.replace(SPEC, sentence_a=" ", sentence_b=""), models)
    assert r.hint and not r.panels
    _, r = panels("attention", dataclasses.replace(SPEC, sentence_a="长" * 10_000), models)
    assert any("only the first 511" in n for n in r.notices)
    p, r = panels("tokens", dataclasses.replace(SPEC, sentence_a="<img src=x onerror=alert(1)>😀\x07"), models)
    assert "<" in "".join(p["tokens-a"].table["piece"])  # the text itself, as data


EMPTY_HINTS = {
    "tokens": "Type a sentence to begin.",
    "positional": "Type a sentence to see its positional encodings.",
    "attention": "Type a sentence to see its attention.",
    "heads": "Type a sentence to see its heads.",
    "query": "Type a sentence to pick a query token.",
    "translate": "Type a Chinese sentence, e.g. 你喜欢她, to translate it.",
}


@pytest.mark.parametrize("view", list(EMPTY_HINTS))
@pytest.mark.parametrize("typed", ["", " \u3000\n"])
def test_every_view_of_no_sentence_says_what_to_type_and_draws_nothing(models, view, typed):
    """Both sentences empty, or only spaces (an ideographic one too): each view's hint, no panel; with B
    typed, the views show B instead (the order view's hint, which names the sentence it lacks, is tested above)."""
    if view == "translate" and not trained_available():
        pytest.skip("the trained demo models (assets/models) are missing")
    spec = dataclasses.replace(SPEC, sentence_a=typed, sentence_b=typed)
    if view == "translate":
        spec = FigureSpec(model="zh-en", views=("translate",), sentence_a=typed, sentence_b=typed)
    result = build_view(view, spec, models)
    assert result.hint == EMPTY_HINTS[view] and not result.panels
    shown = build_view(view, dataclasses.replace(spec, sentence_b="她喜欢你"), models)
    assert shown.panels and not shown.hint


def test_a_paste_longer_than_the_input_limit_is_cut_to_it_first_and_said_so(models):
    """A 25,000-character paste: only the first 20,000 characters are tokenised (notice 1), and of those
    tokens the model takes max_len - 1 (notice 2); the trained models then read at most 64 characters."""
    from lab.compute import MAX_INPUT_CHARS

    text = "长" * (MAX_INPUT_CHARS + 5_000)
    spec = dataclasses.replace(SPEC, sentence_a=text)
    _, r = panels("attention", spec, models)
    limit = models.model(spec).model.config.max_len - 1  # room for [BOS]
    assert r.notices[:2] == ["Sentence A has 25,000 characters; only the first 20,000 are read.",
                             f"Sentence A's first 20,000 characters are 20,000 tokens; the model takes {limit}, so only "
                             f"the first {limit} are shown."]
    if trained_available():
        _, r = panels("attention", FigureSpec(model="zh-en", sentence_a="你" + text), models)
        assert r.notices[:2] == ["Sentence A has 25,001 characters; only the first 20,000 are read.",
                                 "Sentence A's first 20,000 characters are 20,000 without spaces; the trained models "
                                 "read at most 64, so only the first 64 are translated and shown."]


def test_the_counts_said_after_a_paste_is_cut_to_the_input_limit_are_of_what_is_read(models):
    """A tokens walk: a 30,000-character paste of "你喜欢她 " said "Sentence A has 30,000 characters; only the first
    20,000 are read." and then "Sentence A has 16,000 tokens" (bpe; the whole paste is 24,000 tokens) and, under
    zh-en, "Sentence A has 16,000 characters (spaces removed)" (it has 24,000) and "its 4,000 whitespace characters
    are removed" (it has 6,000): counts of the part read, said of the sentence. They are said of that part."""
    from lab.compute import MAX_INPUT_CHARS

    text = "你喜欢她 " * 6_000
    spec = dataclasses.replace(SPEC, sentence_a=text, tokenizer="bpe")
    read = models.model(spec).src_tokenizer.encode(text[:MAX_INPUT_CHARS])
    whole = models.model(spec).src_tokenizer.encode(text)
    assert len(read) != len(whole)
    _, r = panels("tokens", spec, models)
    limit = models.model(spec).model.config.max_len - 1
    assert r.notices[:2] == ["Sentence A has 30,000 characters; only the first 20,000 are read.",
                             f"Sentence A's first 20,000 characters are {len(read):,} tokens; the model takes {limit}, "
                             f"so only the first {limit} are shown."]
    if trained_available():
        _, r = panels("tokens", FigureSpec(model="zh-en", sentence_a=text), models)
        kept = text[:MAX_INPUT_CHARS]
        n_spaces = sum(c.isspace() for c in kept)
        assert r.notices[:3] == [
            "Sentence A has 30,000 characters; only the first 20,000 are read.",
            f"Sentence A's first 20,000 characters are {len(kept) - n_spaces:,} without spaces; the trained models "
            "read at most 64, so only the first 64 are translated and shown.",
            "Sentence A: the trained models read Chinese, which is written without spaces, so the "
            f"{n_spaces:,} whitespace characters of its first 20,000 are removed before tokenising."], r.notices



def test_the_spaces_notice_of_a_cut_paste_with_one_whitespace_character_says_one():
    """A review: after a paste is cut, the notice counted its whitespace in the plural whatever the count: a Chinese
    paste of 20,001 characters with one space in its first 20,000 said "the 1 whitespace characters of its first
    20,000 are removed". One is said as one, as it is for a paste that is not cut."""
    from lab.compute import MAX_INPUT_CHARS, spaces_notice

    kept = "你" * (MAX_INPUT_CHARS // 2) + " " + "她" * (MAX_INPUT_CHARS // 2 - 1)
    assert len(kept) == MAX_INPUT_CHARS
    said = "Sentence A: the trained models read Chinese, which is written without spaces, so "
    assert spaces_notice("a", kept, cut=True) == (
        said + "the 1 whitespace character of its first 20,000 is removed before tokenising.")
    assert spaces_notice("a", kept.replace("她", " ", 1), cut=True) == (
        said + "the 2 whitespace characters of its first 20,000 are removed before tokenising.")
    assert spaces_notice("a", "你 她") == said + "its 1 whitespace character is removed before tokenising."
    assert spaces_notice("a", "你 她 ") == said + "its 2 whitespace characters are removed before tokenising."

def values_zmax(fig) -> float:
    """The colour range's top of a figure's heatmap (its trace's, or the shared colour axis')."""
    heat = next(t for t in fig.data if t.type == "heatmap")
    return heat.zmax if heat.zmax is not None else fig.layout.coloraxis.cmax


PADDED = dataclasses.replace(SPEC, sentence_a="你喜欢她", sentence_b="我爱你们大家都好")  # A: 4 tokens, padded to 8


@pytest.mark.parametrize("block", ["encoder self", "decoder self", "cross"])
@pytest.mark.parametrize("mask", ["paper", "none"])
def test_head_entropy_is_the_mean_over_the_sentences_own_queries_in_bits(models, block, mask):
    spec = dataclasses.replace(PADDED, block=block, mask=mask)
    p, _ = panels("heads", spec, models)
    own = 4 if block == "encoder self" else 5  # A's tokens; the decoder reads [BOS] + them
    grid = p["layers-heads"].table  # every layer x head's weights, [PAD] rows included
    entropy = p["entropy"].table.to_numpy()  # (L, H)
    assert list(p["entropy"].table.index) == [f"layer {ly}" for ly in range(entropy.shape[0])]
    for ly in range(entropy.shape[0]):
        for h in range(entropy.shape[1]):
            w = grid.loc[f"layer {ly} head {h}"].to_numpy()[:own]  # the sentence's own query rows
            bits = -np.sum(np.where(w > 0, w * np.log2(np.where(w > 0, w, 1)), 0), axis=1)
            assert entropy[ly, h] == pytest.approx(bits.mean(), abs=1e-5), (ly, h)
    assert f"own {own} queries" in p["entropy"].caption
    # the colour range tops at the most this mean can be: each own query uniform over the keys it may attend
    # (the decoder's look-ahead mask: 1, 2, …, 5 keys, at most 1.38 bits, not log₂ 5 = 2.32)
    keys = panels("attention", spec, models)[0]["attention-mask"].table.to_numpy()[:own].astype(bool).sum(1)
    note = p["entropy"].figure.layout.annotations[0].text
    top = np.log2(keys).mean()
    assert values_zmax(p["entropy"].figure) == pytest.approx(top)
    assert np.all(entropy <= top + 1e-6)
    if block == "decoder self" and mask == "paper":
        assert list(keys) == [1, 2, 3, 4, 5] and f"{top:.2f} bits = each query uniform" in note and "1 to 5" in note
    else:
        assert len(set(keys)) == 1 and f"{top:.2f} bits = uniform over {keys[0]} keys" in note


@pytest.mark.parametrize("block", ["encoder self", "decoder self"])
def test_the_query_views_score_variance_is_over_the_sentences_own_queries(models, block):
    spec = dataclasses.replace(PADDED, block=block, layer=1, head=2)
    p, _ = panels("attention", spec, models)
    own = 4 if block == "encoder self" else 5
    scores = p["attention-scores"].table.to_numpy()[:own]
    allowed = p["attention-mask"].table.to_numpy()[:own].astype(bool)
    q, _ = panels("query", spec, models)
    caption = q["query-bars"].caption
    assert f"raw scores have variance {scores[allowed].var():.3g}; its scaled scores, " \
           f"{scores[allowed].var() / 8:.3g}." in caption, caption


@pytest.mark.parametrize("sentence, q, shown", [("我爱我家", 2, "2:我"), ("I like her", 1, "1:␣")])
def test_the_query_views_figures_name_the_query_by_position(models, sentence, q, shown):
    """Their titles travel with exports: "我" alone could be query 0 or 2, and a space would not show."""
    p, _ = panels("query", dataclasses.replace(SPEC, sentence_a=sentence, query=q), models)
    assert p["query-bars"].figure.layout.title.text.startswith(f"Query {shown}: ")
    assert p["query-context"].figure.layout.title.text.startswith(f"Context vector of query {shown} = ")
    assert p["query-bars"].title.startswith(f"Query {shown}: ")


def test_every_step_figure_says_which_head_it_shows_in_its_own_title(models):
    """A chart in full screen (a projector) or exported shows only its own title: it names the head."""
    p, _ = panels("attention", dataclasses.replace(SPEC, block="decoder self", layer=1, head=2), models)
    steps = [key for key in p if key.startswith("attention-")]
    assert len(steps) == 6
    import viz

    for key in steps:
        assert "— decoder self, layer 1, head 2" in viz.theme.unwrap(p[key].figure.layout.title.text), key


def test_view_5s_variance_of_a_wide_heads_scores_is_written_in_digits(models):
    """A numbers walk: one head of d_k 512 over 20 tokens said "raw scores have variance 1.23e+03"; it says the
    number in digits, the one the scores have to 3 significant digits."""
    spec = FigureSpec(sentence_a="我们今天去公园散步然后吃饭看电影回家睡觉", d_model=512, n_heads=1, d_ff=512,
                      views=("query",))
    p, _ = panels("query", spec, models)
    said = re.search(r"raw scores have variance ([0-9,.]+);", p["query-bars"].caption)
    run = models.run(spec)
    from model.analysis import head_arrays, record

    a = head_arrays(record(run.trace, "encoder self", 0), 0, 0)  # sentence A: the longer, its own queries all rows
    scores = a["scores"][a["allowed"]]  # every (query, key) it may attend: B's [PAD] keys are masked
    assert said and "e+" not in p["query-bars"].caption, p["query-bars"].caption[-120:]
    assert scores.var() >= 1000 and float(said[1].replace(",", "")) == float(f"{scores.var():.3g}")



@needs_trained
def test_a_translation_of_no_words_is_said_not_left_blank(models, monkeypatch):
    """Greedy decoding that writes [EOS] at once (one step) translated to "": view 7's line read "你喜欢她 → ", an
    arrow to nothing, as if the page had failed to draw it, and view 6's table left the cell blank. Both say it."""
    from model.demo import DemoModel, Translation
    from model.tokenizer import BOS_ID, EOS_ID

    real = DemoModel.translate_ids

    def translate_ids(self, text):  # greedy decoding writes [EOS] first
        done = real(self, text)
        return Translation(done.source, done.src_ids, done.src_pieces, (BOS_ID, EOS_ID), ("[BOS]", "[EOS]"), "")

    monkeypatch.setattr(DemoModel, "translate_ids", translate_ids)
    spec = FigureSpec(model="zh-en", sentence_a="你喜欢她", sentence_b="她喜欢你", views=("translate",))
    p, _ = panels("translate", spec, models)
    assert p["translation"].caption == f"你喜欢她 → {NO_WORDS}"
    p, _ = panels("order", dataclasses.replace(spec, views=("order",)), models)
    table = p["translations"].table
    assert (table[["with PE (zh-en)", "without PE (zh-en-nope)"]] == NO_WORDS).all().all(), table


@needs_trained
def test_no_hover_writes_a_number_with_trailing_zeros(models):
    """A words walk: view 6's pooled bars said "0.400000" on hover, view 5's "score 16.3350" and "context
    −0.281000": d3's "g" keeps the zeros of its significant digits ("~g" trims them), where the heatmaps' hovers
    write "0.4". Every hover of every view (and the training runs' loss curves) trims them."""
    import viz

    g_format = re.compile(r"%\{[^}:]*:[^}~]*g\}")  # %{y:.6g}, not %{y:.6~g}
    specs = {view: dataclasses.replace(SPEC, views=(view,)) for view in VIEW_BUILDERS}
    specs["translate"] = FigureSpec(model="zh-en", views=("translate",))
    specs["query-cross"] = dataclasses.replace(SPEC, views=("query",), block="cross")
    figures = {"loss": viz.loss_curves({"with PE": [2.0, 1.5], "without PE": [2.1, 1.9]})}
    for name, spec in specs.items():
        p, _ = panels(spec.views[0], spec, models)
        figures |= {(name, key): panel.figure for key, panel in p.items() if panel.figure is not None}
    hovers = {(key, t.hovertemplate) for key, fig in figures.items() for t in fig.data if t.hovertemplate}
    assert len(hovers) > 20
    assert not [(key, h) for key, h in hovers if g_format.search(h)]

@needs_trained
def test_the_translation_line_shows_controls_as_code_points_so_an_override_cannot_turn_it_around(models):
    """"\u202e你喜欢她 → he likes her" drawn raw reads "reh sekil eh → 她欢喜你" in the browser."""
    spec = FigureSpec(model="zh-en", sentence_a="\u202e你喜欢她\x1b", views=("translate",))
    p, _ = panels("translate", spec, models)
    caption = p["translation"].caption
    assert caption.startswith("⟨U+202E⟩你喜欢她⟨U+001B⟩ → ")
    assert not any(unicodedata.category(ch)[0] == "C" for ch in caption)


@needs_trained
def test_the_translation_heading_names_the_model_of_the_pair_that_translated(models):
    """A teacher's walk: the sidebar's Positional encoding swaps zh-en for zh-en-nope, and view 7 read "Greedy
    translation" either way, only the model line (under the figures on a projector) saying which translated."""
    for positional, heading in (("sinusoidal", "Greedy translation by zh-en"),
                                ("none", "Greedy translation by zh-en-nope (no positional encoding)")):
        spec = FigureSpec(model="zh-en", positional=positional, sentence_a="你喜欢她", views=("translate",))
        p, _ = panels("translate", spec, models)
        assert p["translation"].title == heading, p["translation"].title


@needs_trained
def test_the_translate_views_figures_hold_the_sentences_own_steps_not_the_batchs_padding(models):
    spec = FigureSpec(model="zh-en", sentence_a="你喜欢她", sentence_b="我们都喜欢老师和学生", views=("translate",))
    p, _ = panels("translate", spec, models)
    for key in ("cross", "decoder-self"):
        table = p[key].table
        assert not any("[PAD]" in str(label) for label in list(table.index) + list(table.columns)), key
        assert len(table) == 4  # [BOS] you like her
        np.testing.assert_allclose(table.to_numpy().sum(axis=1), 1.0, atol=1e-6)
    assert list(p["cross"].table.columns) == ["0:你", "1:喜", "2:欢", "3:她"]
    # every head of the layer's cross-attention is one of the view's panels (so an export holds it too),
    # its head h the model's own weights of head h, the sentence's own steps and source tokens
    import viz
    from lab.views import decoding_spec
    from model.analysis import record

    run = models.run(decoding_spec(spec))
    every = record(run.trace, "cross", spec.layer).weights[0].double().numpy()  # (H, Tt, Ts), row 0 = A
    heads = [t for t in p["cross-heads"].figure.data if (t.meta or {}).get("role") == "values"]
    assert len(heads) == every.shape[0] == run.trace.decoder.layers[0].cross_attn.n_heads
    for h, trace in enumerate(heads):
        np.testing.assert_allclose(np.asarray(trace.z, dtype=float), every[h, :4, :4], rtol=1e-5, atol=1e-7)
    table = p["cross-heads"].table
    np.testing.assert_allclose(table.loc["head 1"].to_numpy(), every[1, :4, :4], rtol=1e-5, atol=1e-7)
    # its axes say what the cross-attention chart above says: rows are decoding steps, columns source tokens
    lay = p["cross-heads"].figure.layout
    assert lay.yaxis.title.text == "decoding step (reads → writes)" and lay.xaxis4.title.text == "source token"
    assert p["cross"].figure.layout.yaxis.title.text == "decoding step (reads → writes)"
    # in the same words: the chart above said "source token (encoder)" over the grid's "source token", as did the
    # step chart under the slider (ui/translate.py), where every hover of them says "source token"
    step_chart = viz.cross_attention_heatmap(every[0, :2, :4], target_labels=["[BOS]", "you"], source_labels=list("你喜欢她"),
                                             step_labels=["[BOS]→you", "you→like"])
    assert p["cross"].figure.layout.xaxis.title.text == step_chart.layout.xaxis.title.text == "source token"
    assert "decoding step" in heads[0].hovertemplate and "source token" in heads[0].hovertemplate


@needs_trained
def test_the_translate_views_rows_name_the_token_each_step_reads_and_the_one_it_writes(models):
    """A numbers walk read the row "1:you" (weight on 喜 and 欢) as an alignment you ↔ 喜欢: that step writes "like".
    Each row is labelled "read → written", the written one the model's own argmax at that row."""
    spec = FigureSpec(model="zh-en", sentence_a="你喜欢她", views=("translate",))
    p, _ = panels("translate", spec, models)
    from lab.views import decoding_spec

    run = models.run(decoding_spec(spec))
    loaded = models.model(spec)
    s = run.sentences[0]
    wrote = [loaded.tgt_tokenizer.id_to_piece(int(i)) for i in run.trace.logits[0, :len(s.tgt_ids)].argmax(-1)]
    read = [loaded.tgt_tokenizer.id_to_piece(int(i)) for i in run.tgt[0, :len(s.tgt_ids)]]
    assert wrote[-1] == "[EOS]" and read[0] == "[BOS]" and read[1:] == wrote[:-1]  # greedy: each step reads the last
    expected = [f"{i}:{r}→{w}" for i, (r, w) in enumerate(zip(read, wrote, strict=True))]
    for key in ("cross", "decoder-self"):
        assert list(p[key].table.index) == expected, key
    assert list(p["decoder-self"].table.columns) == [f"{i}:{r}" for i, r in enumerate(read)]  # keys: tokens read
    assert list(p["cross-heads"].table.loc["head 0"].index) == expected
    assert "1:you→like" in p["cross"].figure.layout.yaxis.ticktext


@pytest.mark.parametrize("view, says", [
    ("heads", "layer 1"), ("query", "decoder self, layer 1, head 2"),
    pytest.param("translate", "layer 1, head 2", marks=needs_trained)])
def test_the_figures_of_every_head_view_name_their_layer_and_head_in_their_own_titles(models, view, says):
    import viz

    trained = {"model": "zh-en"} if view == "translate" else {}
    spec = dataclasses.replace(SPEC, block="decoder self", layer=1, head=2, **trained)
    p, _ = panels(view, spec, models)
    figures = {key: viz.theme.unwrap(panel.figure.layout.title.text) for key, panel in p.items()
               if panel.figure is not None and key not in ("journey-bars", "journey-context", "layers-heads", "cross-heads",
                                                               "entropy")}  # the last two show every layer
    assert figures and all(says in title for title in figures.values()), figures


@pytest.mark.parametrize("view", ["attention", "query", "order",
                                  pytest.param("translate", marks=needs_trained)])
def test_every_view_names_a_layer_and_its_head_alike_in_headings_and_titles(models, view):
    """A look walk: views 3, 5 and 6 wrote "layer 1, head 2", view 7's headings and figure titles "layer 1 head 2"
    (its cross-attention, decoder self-attention and decoding-step charts): one way for every view."""
    import viz

    trained = {"model": "zh-en"} if view == "translate" else {}
    spec = dataclasses.replace(SPEC, layer=1, head=2, **trained)
    p, _ = panels(view, spec, models)
    texts = [panel.title for panel in p.values()] + [
        " ".join(viz.theme.unwrap(panel.figure.layout.title.text).split()) for panel in p.values()
        if panel.figure is not None and panel.figure.layout.title.text]
    named = [text for text in texts if re.search(r"layer \d+,? head \d+", text)]
    assert named, texts  # not vacuous: the view names a layer and a head somewhere
    assert all(re.search(r"layer \d+, head \d+", text) for text in named), named


def test_the_heads_views_figure_titles_name_their_block_alike(models):
    """A look walk: view 4's grid of heads was titled "All heads of layer 0 (encoder self)", its next two figures
    "..., encoder self": the figure titles end in ", <block>" each (the headings above them keep their brackets)."""
    import viz

    for block in ("encoder self", "decoder self"):
        p, _ = panels("heads", dataclasses.replace(SPEC, block=block), models)
        titles = [viz.theme.unwrap(panel.figure.layout.title.text).split("<br>")[0] for panel in p.values()]
        assert len(titles) == 3 and all(" ".join(t.split()).endswith(f", {block}") for t in titles), titles


def test_layer_and_head_out_of_range_are_clamped_not_crashing(models):
    p, _ = panels("attention", dataclasses.replace(SPEC, layer=9, head=9), models)
    assert "layer 1, head 3" in p["attention-qkv"].title


def test_the_heads_grid_title_names_the_heads_picked(models):
    """"Heads in the grid" picks the panels: the title said "All heads" over heads 1 and 3."""
    for heads, expect in (((), "All heads of layer 0"), ((1, 3), "Heads 1, 3 of layer 0"), ((2,), "Head 2 of layer 0"),
                          ((0, 1, 2, 3), "All heads of layer 0")):
        p, _ = panels("heads", dataclasses.replace(SPEC, heads=heads), models)
        grid = p["heads-grid"]
        assert grid.title.startswith(expect) and grid.figure.layout.title.text.startswith(expect), (heads, grid.title)
        assert len(grid.figure.layout.annotations) >= len(heads or range(4))  # one panel title per head shown


def test_a_model_too_small_to_keep_positions_is_not_said_to_be_equivariant_by_self_attention(models):
    """d_model = 2: a LayerNorm over two dimensions leaves each token ±1 per dimension, so even with PE the
    outputs come out as A's reordered. The verdict said that self-attention's equivariance made it so, which
    PE rules out; and the causal panel's heading said "still sees order" over text saying it does not."""
    tiny = dataclasses.replace(SPEC, d_model=2, n_heads=2, d_ff=1)
    p, _ = panels("order", tiny, models)
    with_pe = p["verdict-pe"].caption
    assert "did not survive" in with_pe and "EQUIVARIANT" not in with_pe and "cannot tell" not in with_pe
    assert "EQUIVARIANT" in p["verdict-nope"].caption  # without PE the reason is self-attention's symmetry
    causal = p["verdict-causal"].caption
    assert "still sees order" not in p["verdict-causal"].title
    # the look-ahead mask made attention see the order (its weights are not A's reordered): the text said the
    # outputs matched because "the mask hides it", beside a table whose weights differ by ~0.8
    numbers = p["order-numbers"].table.set_index("model").loc["without PE, look-ahead mask"]
    assert numbers["equivariant"] and numbers["max |W(B) − P W(A) Pᵀ|"] > 0.1
    assert "attention does see the order" in causal and "lost after attention" in causal
    assert viz_num(numbers["max |W(B) − P W(A) Pᵀ|"]) in causal and "mask hides" not in causal
    p, _ = panels("order", SPEC, models)  # a model that keeps them: as before
    assert "sees word order" in p["verdict-pe"].caption and "still sees order" in p["verdict-causal"].title


@pytest.mark.parametrize("positional", ["learned", "none"])
def test_view_2_with_an_odd_d_model_still_shows_the_models_own_encoding(models, positional):
    """d_model 31 (possible with learned or no PE): the sinusoidal panels need pairs of dimensions, but the view
    showed nothing at all, only a sentence about the encoding the student had not chosen. Now it says why those
    panels are missing and still shows the model's own encoding added to the token embeddings."""
    odd = dataclasses.replace(SPEC, d_model=31, n_heads=1, positional=positional)
    p, result = panels("positional", odd, models)
    assert list(p) == ["embedding-pe"]
    assert "odd" in result.hint
    said = " ".join([result.hint, *result.notices])
    assert {"learned": "(learned)", "none": "NO positional encoding"}[positional] in said
    fig = p["embedding-pe"].figure
    assert positional in p["embedding-pe"].title and fig.layout.title.text
    table = p["embedding-pe"].table
    assert table.shape[1] == 31  # the model's 31 dimensions
    assert "above" not in " ".join(result.notices)  # no panel above to point to
    assert "last panel" not in " ".join(result.notices)  # one panel: none is "the last" (a text audit)
    if positional == "none":  # not "its own (none) encoding, added to its token embeddings", said once
        assert "(none) encoding" not in said and said.lower().count("no positional encoding") == 1


def test_order_difference_maps_share_one_colour_range(models):
    p, _ = panels("order", SPEC, models)
    ranges = {key: p[key].figure.data[0].zmax for key in ("diff-pe", "diff-nope")}
    assert ranges["diff-pe"] == ranges["diff-nope"] and ranges["diff-pe"] > 0


def test_order_token_output_maps_share_one_colour_range_that_holds_both(models):
    """With PE and without, the outputs are drawn on one scale (each had its own: ±2.5 beside ±1.5, so the
    same colour meant different numbers), wide enough for every value of both figures."""
    p, _ = panels("order", SPEC, models)
    axes = {key: p[key].figure.layout.coloraxis for key in ("aligned-pe", "aligned-nope")}
    assert axes["aligned-pe"].cmax == axes["aligned-nope"].cmax == -axes["aligned-pe"].cmin
    for key in axes:
        for trace in p[key].figure.data:
            z = np.asarray(trace.z, dtype=float)
            assert np.nanmax(np.abs(z)) <= axes[key].cmax + 1e-6, key
    tops = [max(np.nanmax(np.abs(np.asarray(t.z, dtype=float))) for t in p[key].figure.data) for key in axes]
    assert max(tops) == pytest.approx(axes["aligned-pe"].cmax, rel=1e-6)  # no wider than it needs to be


@pytest.mark.parametrize("theme", ["default", "dark"])
def test_view_6s_two_maps_of_the_token_outputs_difference_draw_it_in_the_same_colours(models, theme):
    """The token outputs' |A − B| panel and the |f(B) − P f(A)| map below it hold the same numbers (row for row, in A's
    order and in B's), but the first drew them on the outputs' diverging scale, the second on the magnitude scale:
    zero white in one and navy in the other, and without PE (all zero) a white block on the dark page, where the
    dark theme's bright means large. |A − B| takes the magnitude scale of the map below (and of the attention
    weights' |A − B|, dark at 0), A and B keep the diverging one."""
    p, _ = panels("order", dataclasses.replace(SPEC, theme=theme), models)
    for slug in ("pe", "nope"):
        fig, below = p[f"aligned-{slug}"].figure, p[f"diff-{slug}"].figure
        a, b, diff = [t for t in fig.data if (t.meta or {}).get("role") == "values"]
        assert a.coloraxis == b.coloraxis != diff.coloraxis, (a.coloraxis, diff.coloraxis)
        shared, own = fig.layout[a.coloraxis], fig.layout[diff.coloraxis]
        assert shared.cmin == -shared.cmax and own.cmin == 0 and own.cmax == shared.cmax
        assert [c for _, c in own.colorscale] == [c for _, c in below.data[0].colorscale], slug
        assert np.nanmax(np.asarray(diff.z, dtype=float)) <= own.cmax


def test_a_mask_that_masks_nothing_says_where_to_see_one_and_the_advice_works(models):
    same = dataclasses.replace(SPEC, sentence_a="你喜欢她", sentence_b="她喜欢你", mask="paper", block="encoder self")
    p, _ = panels("attention", same, models)
    table = p["attention-mask"].table.to_numpy()
    assert table.all()  # encoder self, A and B the same length: nothing masked
    hint = p["attention-mask"].caption
    assert "'decoder self'" in hint and "longer" in hint
    # following either piece of advice shows a mask, and the hint goes away
    for advice in (dict(block="decoder self"), dict(sentence_b="她喜欢你吗？我不知道")):
        p, _ = panels("attention", dataclasses.replace(same, **advice), models)
        assert not p["attention-mask"].table.to_numpy().all(), advice
        assert p["attention-mask"].caption == ""
    p, _ = panels("attention", dataclasses.replace(same, mask="padding"), models)
    assert "longer" in p["attention-mask"].caption and "decoder self" not in p["attention-mask"].caption
    p, _ = panels("attention", dataclasses.replace(same, mask="none", block="decoder self"), models)
    assert p["attention-mask"].table.to_numpy().all() and "'none'" in p["attention-mask"].caption


def test_every_mask_setting_that_masks_nothing_gets_advice_that_shows_a_mask(models):
    """Each hint's advice, followed, shows masked cells (look-ahead masks every self-attention)."""
    for mask in ("paper", "padding", "look-ahead"):
        for block in ("encoder self", "decoder self", "cross"):
            spec = dataclasses.replace(SPEC, sentence_a="你", sentence_b="她", mask=mask, block=block)
            p, _ = panels("attention", spec, models)
            if not p["attention-mask"].table.to_numpy().all():
                continue  # something is masked already: no hint
            hint = p["attention-mask"].caption
            assert p["attention-mask"].title.endswith("(nothing is masked here)"), (mask, block)
            assert hint.startswith("To see a mask"), (mask, block)
            longer = dataclasses.replace(spec, sentence_b="她喜欢你吗")
            p, _ = panels("attention", longer, models)
            assert not p["attention-mask"].table.to_numpy().all(), (mask, block)


@needs_trained
def test_the_trained_decoders_mask_advice_is_about_the_translation(models):
    """The trained decoder's keys are its translation's tokens: a longer source with a translation as long pads
    nothing (你喜欢她吗 → you like her), a longer translation does (他不喜欢你 → he does not like you)."""
    spec = dataclasses.replace(SPEC, model="zh-en", sentence_a="你喜欢她", sentence_b="你喜欢她吗", mask="padding",
                               block="decoder self")
    p, _ = panels("attention", spec, models)
    assert p["attention-mask"].table.to_numpy().all()  # the longer sentence did not pad this one's decoder
    assert "longer translation" in p["attention-mask"].caption
    p, _ = panels("attention", dataclasses.replace(spec, sentence_b="他不喜欢你"), models)
    assert not p["attention-mask"].table.to_numpy().all()


def _shown_texts(result) -> list[str]:
    """Every title, note and caption a view shows (figure titles, annotations, panel captions and titles)."""
    out = [result.intro] if getattr(result, "intro", None) else []
    for p in result.panels:
        out += [t for t in (p.title, p.caption) if isinstance(t, str)]
        if p.figure is not None:
            layout = p.figure.to_plotly_json()["layout"]
            out.append((layout.get("title") or {}).get("text") or "")
            out += [a.get("text") or "" for a in layout.get("annotations", [])]
    return out


@pytest.mark.parametrize("view", ["positional", "attention", "heads", "query", "order", "translate"])
def test_numbers_in_titles_notes_and_captions_are_written_with_a_true_minus(models, view):
    # "3.6e-07" next to an axis that writes "−0.2": every number a view prints goes through viz.labels.num
    spec = dataclasses.replace(SPEC, sentence_a="你喜欢她们", sentence_b="她们喜欢你", mask="look-ahead")
    if view == "translate":  # a random model translates nothing
        if not trained_available():
            pytest.skip("the trained zh-en model is missing")
        spec = dataclasses.replace(spec, model="zh-en", mask="paper")
    texts = _shown_texts(build_view(view, spec, models))
    assert texts
    hyphen = re.compile(r"\de-\d|(?<![\w.])-\d")  # an exponent or a negative number with a hyphen
    assert not [t for t in texts if hyphen.search(t)]
    if view in ("positional", "order"):  # they print float-rounding differences (e−07, e−15)
        assert any(re.search(r"\de−\d", t) for t in texts), texts


@pytest.mark.parametrize("theme", ["default", "paper"])
def test_the_five_step_matrices_label_their_keys_alike(models, theme):
    # they share one plot width (attention_steps gives them the weights' margins): the softmax chart labelled
    # every 2nd key of 25 while the four above it labelled every key, its budget cut by its row sums' width
    text = "春风拂面桃花盛开景色宜人，景色宜人桃花盛开春风拂面"
    p, _ = panels("attention", FigureSpec(sentence_a=text, sentence_b=text[::-1], theme=theme), models)
    counts = {key: len(p[key].figure.layout.xaxis.ticktext or [])
              for key in ("attention-scores", "attention-scaled", "attention-mask", "attention-masked",
                          "attention-weights")}
    assert len(set(counts.values())) == 1 and min(counts.values()) >= 8, counts


@pytest.mark.parametrize("view", ["positional", "attention", "heads", "query", "order"])
def test_a_product_in_a_figure_is_written_with_the_dot_operator(models, view):
    """The figures' first font, Noto Sans CJK, draws U+00B7 (·) full-width ("q・k", "PE(m)・PE(n)"): a product
    in a figure's text (title, note, axis and panel titles, trace names) is U+22C5 (⋅), which DejaVu draws as
    narrow as a product's dot. A "·" between spaces (a list separator) is left as it is."""
    from viz.theme import DOT

    spec = dataclasses.replace(SPEC, sentence_a="你喜欢她", sentence_b="她喜欢你")
    found, products = [], 0
    for panel in panels(view, spec, models)[0].values():
        if panel.figure is None:
            continue
        text = panel.figure.to_json()
        found += re.findall(r"\S\u00b7\S", text)
        products += text.count(DOT)
    assert found == []
    if view in ("positional", "query"):  # PE(m)⋅PE(n), R_k⋅PE(pos); q⋅kⱼ, wⱼ⋅vⱼ
        assert products > 0


def test_the_query_views_numbers_name_each_key_by_its_position(models):
    """The numbers behind the query bars name each key "i:piece": two "t"s of "the cat sat" are told apart, and a
    space token is "3: ", its position showing in the cell, as every table and CSV of the app writes it (the
    charts' axes write "3:␣"; the data keeps the piece itself)."""
    spec = dataclasses.replace(SPEC, sentence_a="the cat sat", views=("query",))
    table = panels("query", spec, models)[0]["query-bars"].table
    keys = list(table["key"])
    assert keys == [f"{i}:{c}" for i, c in enumerate("the cat sat")]
    assert len(set(keys)) == len(keys)


@needs_trained
def test_the_trained_model_says_which_characters_it_never_learned_and_that_spaces_go():
    """zh-en's vocabulary holds English letters, but its training sentences are Chinese: "the cat sat on the
    mat" came out as "the dog trusts the student" under a model line saying held-out exact match 100%, and its 22
    characters became 17 tokens with no word why. Every view of a trained model now says both, per sentence;
    a sentence made of what it learned gets neither."""
    from model.data import corpus_characters, generate_corpus

    models = Models(functools.lru_cache(maxsize=None)(load_model))
    spec = FigureSpec(model="zh-en", sentence_a="the cat sat on the mat", sentence_b="你 喜欢 她")
    for view in ("tokens", "order", "translate"):
        notices = build_view(view, spec, models).notices
        untrained = [n for n in notices if "never occur" in n]
        assert len(untrained) == 1 and untrained[0].startswith("Sentence A: “t”, “h”, “e”, “c”, “a”, “s”, “o”, “n”")
        assert "and 1 more" in untrained[0] and "cannot be trusted" in untrained[0]  # 9 letters: t h e c a s o n m
        spaces = {n.split(":")[0]: n for n in notices if "without spaces" in n}
        assert "its 5 whitespace characters are removed" in spaces["Sentence A"]
        assert "its 2 whitespace characters are removed" in spaces["Sentence B"]
    plain = FigureSpec(model="zh-en", sentence_a="你喜欢她", sentence_b="她喜欢你")
    assert build_view("translate", plain, models).notices == []
    seen = corpus_characters(0)
    assert seen == set("".join(p.zh for p in generate_corpus(0))) and {"你", "喜", "欢", "她"} <= seen
    assert not seen & set("thecatsonm")


@needs_trained
@pytest.mark.parametrize("model", ["random", "zh-en"])
def test_every_csv_column_has_a_name(model):
    """A researcher's CSV: the first column of view 4's grid was unnamed (the head), and the pooled outputs'
    and the order numbers' first column held bare row numbers; now every level of an index is named, and an
    index of bare row numbers is not written."""
    import csv
    import io

    import pandas as pd

    from lab.export import cli_models
    from lab.spec import VIEWS
    from viz.export import table_csv

    models = cli_models()
    for view in VIEWS:
        result = build_view(view, FigureSpec(model=model, views=(view,)), models)
        for panel in result.panels:
            table = panel.table
            if table is None or not hasattr(table, "to_csv"):
                continue
            header = next(csv.reader(io.StringIO(table_csv(table).decode("utf-8-sig"))))
            assert all(header), (view, panel.key, header[:4])
            if not (isinstance(table.index, pd.RangeIndex) and table.index.name is None):
                assert list(table.index.names) == header[: table.index.nlevels], (view, panel.key)


@pytest.mark.parametrize("block", ["encoder self", "decoder self", "cross"])
def test_the_qkv_figure_says_where_k_and_v_come_from(models, block):
    """Cross-attention's keys and values are the encoder's output M projected, not the queries' X (a
    researcher's walk: its title said K = XW_K, V = XW_V); there K's rows, the keys, carry their labels."""
    p, _ = panels("attention", dataclasses.replace(SPEC, block=block), models)
    fig = p["attention-qkv"].figure
    text = fig.layout.title.text
    if block == "cross":
        assert text.startswith("Q = XW<sub>Q</sub> (decoder), K = MW<sub>K</sub>, V = MW<sub>V</sub>"), text
        assert fig.layout.yaxis2.showticklabels is not False  # K names its own rows, the keys
        assert fig.layout.yaxis.title.text == "query"
    else:
        assert text.startswith("Q = XW<sub>Q</sub>, K = XW<sub>K</sub>, V = XW<sub>V</sub>"), text


def test_a_wide_model_s_positional_encoding_is_drawn_dimension_by_dimension(models):
    """d_model 256: the embedding + PE figure's PE panel is the closed form at every (position, dimension), not
    block means of each sin with its cos (a flat wash of ~0.5 in a researcher's export)."""
    spec = dataclasses.replace(SPEC, d_model=256, n_heads=8, views=("positional",), sentence_a="你喜欢她吗")
    p, _ = panels("positional", spec, models)
    fig = p["embedding-pe"].figure
    pe = np.asarray(fig.data[1].z, dtype=np.float64)  # (T, d_model): the middle panel
    pos, i = np.arange(pe.shape[0])[:, None], np.arange(0, 256, 2)[None, :]
    want = np.empty((pe.shape[0], 256))
    want[:, 0::2], want[:, 1::2] = np.sin(pos / 10000 ** (i / 256)), np.cos(pos / 10000 ** (i / 256))
    assert pe.shape == (5, 256)
    np.testing.assert_allclose(pe, want, atol=1e-6)


def test_order_view_says_where_its_look_ahead_row_is_only_where_there_is_one(models):
    """A bad-input walk: with Mask look-ahead and B not a reordering, the notice pointed at a last row and verdict
    the page did not have."""
    spec = dataclasses.replace(SPEC, mask="look-ahead")
    _, shown = panels("order", spec, models)
    assert any("its last row and verdict, 'without PE, look-ahead mask'" in n for n in shown.notices)
    p, other = panels("order", dataclasses.replace(spec, sentence_b="我爱你"), models)
    assert "verdict-causal" not in p and len(p["order-numbers"].table) == 2
    notice = [n for n in other.notices if "Mask 'look-ahead'" in n]
    assert notice and "needs B to reorder A's tokens" in notice[0] and "last row" not in notice[0]


@pytest.mark.parametrize(("a", "b", "unknown"), [("你喜欢她", "你喜欢她", False), ("甲乙丙", "乙丙甲", True)])
def test_order_view_draws_no_attention_comparison_where_b_is_a_token_for_token(models, a, b, unknown):
    """A bad-input walk: with B = A (or A and B read as the same [UNK] tokens) the attention caption said B's
    weights were A's reordered, beside a verdict saying there is nothing to compare."""
    spec = dataclasses.replace(SPEC, sentence_a=a, sentence_b=b)
    p, _ = panels("order", spec, models)
    assert not [k for k in p if k.startswith("attn-")]
    assert not order_draws_attention(spec, models)
    caption = p["verdict-nope"].caption
    assert "B is A token for token" in caption and ("[UNK]" in caption) is unknown
    assert order_draws_attention(SPEC, models)  # 你喜欢她 / 她喜欢你


def test_the_query_views_tables_name_their_rows_and_keys_as_the_other_views_tables_do(models):
    """A numbers walk: the context table's last row read "8:context" (a ninth token?), the textbook's z for word 3
    read "0:with", and the bars' CSV wrote "1:␣like" where view 3's writes "1: like"."""
    spec = dataclasses.replace(SPEC, sentence_a="I like her", tokenizer="bpe", sentence="a", query=1)
    p, _ = panels("query", spec, models)
    keys = list(panels("attention", spec, models)[0]["attention-weights"].table.columns)
    assert any(" " in k for k in keys) and not any("␣" in k for k in keys)  # BPE's leading spaces
    assert list(p["query-bars"].table["key"]) == keys
    context = p["query-context"].table
    assert list(context.index) == [f"v of {k}" for k in keys] + [f"w·v of {k}" for k in keys] + [f"z of {keys[1]}"]
    w = p["query-bars"].table["weight"].to_numpy()
    np.testing.assert_allclose(w @ context.to_numpy()[: len(keys)], context.to_numpy()[-1], atol=1e-6)
    journey = dataclasses.replace(SPEC, sentence_a="Your journey starts with one step", query=3, tokenizer="bpe")
    words = unique_labels("Your journey starts with one step".split())
    assert list(panels("query", journey, models)[0]["journey-context"].table.index) == (
        [f"v of {w}" for w in words] + [f"w·v of {w}" for w in words] + ["z of 3:with"])


def test_the_order_verdict_counts_a_token_only_one_sentence_has_rather_than_repeating_it(models):
    """A narrow-screen walk: "Tokens only in A: '[UNK]', '[UNK]', '[UNK]', …" for an Arabic sentence."""
    spec = dataclasses.replace(SPEC, sentence_a="aaccc xyz", sentence_b="xyz b")
    verdicts = " ".join(p.caption for p in panels("order", spec, models)[0].values() if p.key.startswith("verdict"))
    assert "Tokens A has more of: 'a' ×2, 'c' ×3; B has more of: 'b'." in verdicts, verdicts
    # a token both have, one of them more often: both counts (it read "only in B: '[UNK]' ×6" beside A's 3)
    spec = dataclasses.replace(SPEC, sentence_a="aaccc xyz", sentence_b="xyz ab")
    verdicts = " ".join(p.caption for p in panels("order", spec, models)[0].values() if p.key.startswith("verdict"))
    assert "Tokens A has more of: 'a' (2 in A, 1 in B), 'c' ×3; B has more of: 'b'." in verdicts, verdicts


@pytest.mark.parametrize("d_model", [2, 4, 64])
def test_the_pe_dot_curve_says_it_decays_only_where_it_does(models, d_model):
    """PE(m)·PE(m+k) = Σᵢ cos(ωᵢ k): under d_model = 2 it is cos k, periodic, back to 0.9998 at k = 44; under 4
    it is still 1.96 of 2 in the far half of the offsets drawn. "decays overall" is said only where it holds (a
    claims walk)."""
    spec = dataclasses.replace(SPEC, d_model=d_model, n_heads=1, d_ff=8)
    p, _ = panels("positional", spec, models)
    panel = p["pe-dot-curve"]
    k = panel.table.index.to_numpy()
    omegas = 1 / 10000 ** (np.arange(0, d_model, 2) / d_model)
    dots = np.cos(np.outer(k, omegas)).sum(1)  # Σᵢ cos(ωᵢ k), recomputed
    np.testing.assert_allclose(panel.table["dot"].to_numpy(), dots, atol=1e-9)
    decays = dots[np.abs(k) >= (k.max() + 1) / 2].max() < 0.9 * dots[k == 0][0]
    texts = [panel.title, panel.figure.layout.title.text.replace('<br class="wrap">', "")]
    assert all(("decays overall" in t) == decays for t in texts), texts
    assert decays == (d_model == 64)
    if d_model == 2:
        assert all("periodic" in t and "never decays" in t for t in texts)


@pytest.mark.parametrize("a, b", [("你", "你你你"), ("ab", "aabb"), ("你喜欢她", "她喜欢你你喜欢她")])
def test_a_b_that_repeats_a_is_said_to_have_the_same_mean_without_pe_not_to_differ(models, a, b):
    """B is no reordering of A, but holds its tokens in the same proportions: without PE each token's output is the
    same in both (softmax over keys of weights m·e^s does not see a common factor m), so the means agree. The verdict
    said "the mean-pooled outputs differ by up to 8.07e−07" (a claims walk); with PE they do differ."""
    spec = dataclasses.replace(SPEC, sentence_a=a, sentence_b=b)
    p, _ = panels("order", spec, models)
    model = models.model(dataclasses.replace(spec, positional="none")).model
    tok = models.model(spec).src_tokenizer
    with torch.no_grad():
        means = [model.encode(torch.tensor([list(tok.encode(t).ids)]))[0].mean(0) for t in (a, b)]  # (d_model,) each
    assert float((means[0] - means[1]).abs().max()) < 1e-5  # recomputed: the no-PE model gives one mean
    nope, pe = p["verdict-nope"].caption, p["verdict-pe"].caption
    assert "differ by" not in nope and "the mean-pooled outputs are the same" in nope and "same proportions" in nope
    assert "the mean-pooled outputs differ by up to" in pe


def test_the_entropy_caption_counts_one_pad_row_in_the_singular(models):
    spec = dataclasses.replace(SPEC, sentence_a="abc", sentence_b="abcd")
    p, _ = panels("heads", spec, models)
    assert p["entropy"].caption.endswith("the 1 [PAD] row that lines it up with the other sentence in the batch is "
                                         "left out.")


def test_a_no_pe_encoder_is_not_said_to_see_order_where_float32_rounding_passes_the_tolerance(models):
    """d_model 2, pre-norm: float32 rounding gave max |f(B) − P f(A)| = 3.57e−05 > 1e-5 for the no-PE encoder, which
    is exactly permutation-equivariant, and the verdict said "the model sees word order" (a claims walk). Recomputed
    here in float64 with torch's own copy of the model: B's outputs are A's reordered."""
    spec = dataclasses.replace(SPEC, d_model=2, n_heads=1, d_ff=4, norm="pre", sentence_a="I like her",
                               sentence_b="her like I")
    p, _ = panels("order", spec, models)
    rep = order_data(spec, models).compared[1][2]
    model = models.model(dataclasses.replace(spec, positional="none")).model
    twin = copy.deepcopy(model).double()
    tok = models.model(spec).src_tokenizer
    with torch.no_grad():
        fa, fb = (twin.encode(torch.tensor([list(tok.encode(t).ids)]))[0] for t in (spec.sentence_a, spec.sentence_b))
    assert float((fb - fa[rep.perm]).abs().max()) < 1e-12 < 1e-5 < rep.max_abs_diff  # float32 alone passes 1e-5
    caption = p["verdict-nope"].caption
    assert "sees word order" not in caption and "permutation-EQUIVARIANT" in caption and "in float64" in caption
    assert bool(p["order-numbers"].table.loc[1, "equivariant"])


@pytest.mark.parametrize("view", ["attention", "heads", "query"])
def test_every_view_of_weights_says_when_mask_none_lets_a_query_attend_the_pad_tokens(models, view):
    """Views 3, 4 and 5 draw weights over the batch's [PAD] keys; under Mask 'none' those keys take weight like words,
    and each view says so where the sentence shown has them (a words walk: only view 3 did), and only then."""
    said = "Mask 'none': the [PAD] tokens added to line up A and B are attended to like words."
    padded = dataclasses.replace(SPEC, sentence_a="我爱我家", sentence_b="I like her", mask="none")  # A: 4 + 6 [PAD]
    p, result = panels(view, padded, models)
    weights = next(p[k].table for k in ("attention-weights", "heads-grid", "query-bars") if k in p)
    pad = [c for c in weights.columns if "[PAD]" in str(c)] if view != "query" else \
        [k for k in weights["key"] if "[PAD]" in k]
    assert pad, "the sentence shown has no [PAD] keys: the case is not tested"
    assert said in result.notices
    for quiet in (dataclasses.replace(padded, mask="paper"), dataclasses.replace(padded, sentence_b="你喜欢她")):
        assert said not in build_view(view, quiet, models).notices, quiet


@pytest.mark.parametrize("theme", THEMES)
def test_no_text_a_view_lays_out_is_under_the_smallest_type_shown(models, theme):
    """docs/app.md: no text of a chart is shown under 11 px (viz.theme.SMALLEST_SHOWN_PX, a phone's smallest comfortable
    type): ui/chart.js raises a shrunk chart's fonts to it, but a chart shown at its own size, and every export, show
    the sizes the figure sets. Every font size every figure of views 3, 4 and 5 sets (notes, tick labels, cell values,
    colour bars, hover) is that or more, in every theme (a mutation walk: notes at min(10, 0.8 of the text), 10 px in
    the default theme, passed every test)."""
    from viz.theme import SMALLEST_SHOWN_PX

    def sizes(node, key=""):
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "size" and "font" in key and isinstance(v, int | float):
                    yield key, v
                else:
                    yield from sizes(v, k)
        elif isinstance(node, list | tuple):
            for v in node:
                yield from sizes(v, key)

    for view in ("attention", "heads", "query"):
        for panel in build_view(view, FigureSpec(views=(view,), theme=theme), models).panels:
            if panel.figure is not None:
                small = [(k, v) for k, v in sizes(panel.figure.to_plotly_json()) if v < SMALLEST_SHOWN_PX]
                assert not small, (view, panel.key, small)


def _shown(result) -> tuple:
    """All a view's result shows: notices, hint, and each panel's key, title, caption, highlighted rows, figure
    and table."""
    return (result.notices, result.hint, [
        (p.key, p.title, p.caption, p.highlight, None if p.figure is None else p.figure.to_json(),
         p.table.to_csv() if p.has_table else None) for p in result.panels])


# a value for each selection control other than its default, each within SPEC's model and the trained one
OTHER_CHOICE = {"block": "decoder self", "layer": 1, "head": 2, "heads": (1, 3), "sentence": "b", "query": 2}


@pytest.mark.parametrize("view", [v for v in VIEW_BUILDERS if v != "translate"]
                         + [pytest.param("translate", marks=needs_trained)])
def test_a_view_changes_with_each_control_the_app_shows_for_it_and_with_no_other(models, view):
    """lab.views.USES says which selection controls each view reads: the app shows those above its figures (ui/look.py)
    and keys its cache of views on them alone (read_spec). A control it leaves out that the view read would draw
    another head's figures from the cache, and could not be changed; one it shows that the view does not read
    would do nothing."""
    from lab.compute import model_fields, run
    from lab.views import USES, read_spec

    assert set(USES) == set(OTHER_CHOICE)
    spec = dataclasses.replace(SPEC, model="zh-en") if view == "translate" else SPEC
    runs = functools.lru_cache(maxsize=None)(lambda key, a, b, mask: run(models.load(key), a, b, mask))
    models = Models(models.load, lambda s: runs(model_fields(s), s.sentence_a, s.sentence_b, s.mask))  # as the app's
    first = _shown(build_view(view, spec, models))
    for name, value in OTHER_CHOICE.items():
        other = dataclasses.replace(spec, **{name: value})
        if view in USES[name]:
            assert _shown(build_view(view, other, models)) != first, f"{view} is shown {name}, which changes nothing"
            assert read_spec(view, other) != read_spec(view, spec)
        else:
            assert _shown(build_view(view, other, models)) == first, f"{view} reads {name}, which the app hides"
            assert read_spec(view, other) == read_spec(view, spec)
