"""What a user sees, checked against numbers made here: tests written by mutation testing of lab/ and viz/.

Each test kills a small plausible bug (a mutant) that the rest of the suite let through: a figure drawing other
numbers than its own table, a label off by one between the control and the data, a colour range or a note that
states the wrong number. The expected numbers are recomputed from the model's own q, k, v and weights (torch,
numpy), or follow from the inputs, never copied from the code under test.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
import pytest
import torch

import viz
from lab.compute import load_model
from lab.spec import FigureSpec
from lab.views import Models, build_view, decoding_spec
from model.analysis import record
from tests.conftest import needs_trained


@pytest.fixture(scope="module")
def models():
    return Models(functools.lru_cache(maxsize=None)(load_model))


SPEC = FigureSpec(d_model=32, n_heads=4, n_layers=2, d_ff=64)  # d_k = 8: √d_k = 2.83 is not d_k
PADDED = dataclasses.replace(SPEC, sentence_a="你喜欢她", sentence_b="我爱你们大家都好")  # A: 4 tokens padded to 8


def panels(view: str, spec: FigureSpec, models: Models) -> dict:
    return {p.key: p for p in build_view(view, spec, models).panels}


def values(fig) -> list:
    """A figure's value heatmaps (not the overlays), in the order they were added."""
    return [t for t in fig.data if (t.meta or {}).get("role") == "values"]


def z_of(trace) -> np.ndarray:
    return np.asarray(trace.z, dtype=float)


def axis_number(trace) -> int:
    """The subplot a trace sits in: 1 for "x", k for "xk" (make_subplots numbers them row by row)."""
    name = trace.xaxis or "x"
    return int(name[1:] or 1)


def eq1(rec, row: int, head: int) -> dict[str, np.ndarray]:
    """Eq. 1 for one head, recomputed here from the record's q and k and the mask the model used."""
    q, k = rec.q[row, head].detach().double().cpu(), rec.k[row, head].detach().double().cpu()
    scores = q @ k.T
    scaled = scores / math.sqrt(q.shape[-1])
    if rec.mask is None:
        allowed = torch.ones_like(scores, dtype=torch.bool)
    else:
        allowed = torch.broadcast_to(rec.mask, rec.score_shape())[row, head].cpu()
    weights = torch.softmax(scaled.masked_fill(~allowed, float("-inf")), dim=-1)
    return {"scores": scores.numpy(), "scaled": scaled.numpy(), "allowed": allowed.numpy(), "weights": weights.numpy()}


# -- view 3: the step figures draw the scaled scores, divided by √d_k ------------------------------------------
def test_the_scaled_and_masked_score_figures_draw_qk_over_root_dk(models):
    """Mutants: the scaled-scores figure fed the raw scores; the masked-scores figure fed the raw scores; the
    panel title saying "÷ d_k" for "÷ √d_k". Each figure is checked against q·k / √d_k made here, the masked
    one blank (NaN) exactly where the model's mask forbids."""
    spec = dataclasses.replace(PADDED, block="decoder self", layer=1, head=2)  # look-ahead and padding masks
    p = panels("attention", spec, models)
    run = models.run(spec)
    rec = record(run.trace, "decoder self", 1)
    want = eq1(rec, 0, 2)
    d_k = rec.q.shape[-1]
    assert not want["allowed"].all()  # something is masked: the masked figure has blanks to check
    (raw,), (scaled,), (masked,), (weights,) = (values(p[f"attention-{key}"].figure)
                                                for key in ("scores", "scaled", "masked", "weights"))
    np.testing.assert_allclose(z_of(raw), want["scores"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(z_of(scaled), want["scaled"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(z_of(masked), np.where(want["allowed"], want["scaled"], np.nan), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(z_of(weights), np.where(want["allowed"], want["weights"], np.nan), atol=1e-6)
    assert f"÷ {math.sqrt(d_k):.3g})" in p["attention-scaled"].title, p["attention-scaled"].title


# -- view 4: every panel of the grids is the head and layer it is titled ------------------------------------------
def test_the_layers_by_heads_grid_puts_layer_l_head_h_in_row_l_column_h(models):
    """Mutant: the (L, H, T, T) weights flattened head-major while the rows are titled by layer and the columns
    by head. Each panel's cells are checked against softmax(q·k/√d_k) of the layer and head its place names."""
    spec = dataclasses.replace(PADDED, block="encoder self")
    p = panels("heads", spec, models)
    run = models.run(spec)
    figure = p["layers-heads"].figure
    n_layers, n_heads = spec.n_layers, spec.n_heads
    traces = values(figure)
    assert len(traces) == n_layers * n_heads
    for trace in traces:
        layer, head = divmod(axis_number(trace) - 1, n_heads)
        want = eq1(record(run.trace, "encoder self", layer), 0, head)
        np.testing.assert_allclose(z_of(trace), np.where(want["allowed"], want["weights"], np.nan), atol=1e-6,
                                   err_msg=f"panel of layer {layer}, head {head}")
    columns = [a.text for a in figure.layout.annotations if a.text.startswith("head ")]
    assert columns == [f"head {h}" for h in range(n_heads)]
    assert [figure.layout[f"yaxis{'' if ly == 0 else ly * n_heads + 1}"].title.text for ly in range(n_layers)] == [
        f"layer {ly} · query" for ly in range(n_layers)]


def test_the_heads_grid_titles_each_picked_head_by_its_own_index(models):
    """Mutant: with heads 1 and 3 picked, the panels titled "head 0", "head 1". Each panel's title must name the
    head whose weights (recomputed here) it draws."""
    spec = dataclasses.replace(SPEC, heads=(1, 3), layer=1)
    p = panels("heads", spec, models)
    run = models.run(spec)
    rec = record(run.trace, "encoder self", 1)
    figure = p["heads-grid"].figure
    titles = [a.text for a in figure.layout.annotations if a.text.startswith("head ")]
    traces = values(figure)
    assert titles == ["head 1", "head 3"] and len(traces) == 2
    for title, trace in zip(titles, traces, strict=True):
        head = int(title.split()[1])
        np.testing.assert_allclose(z_of(trace), eq1(rec, 0, head)["weights"], atol=1e-6, err_msg=title)
        np.testing.assert_allclose(p["heads-grid"].table.loc[title].to_numpy(), eq1(rec, 0, head)["weights"],
                                   atol=1e-6)


# -- view 7: the translate view's figures, their layer, head and axes -------------------------------------------
@needs_trained
@pytest.mark.parametrize("layer, head", [(1, 2), (0, 3)])
def test_the_translate_views_panels_show_the_chosen_layer_and_head_with_keys_named_by_the_tokens_read(
        models, layer, head):
    """Mutants: the decoder self-attention always head 0; its keys (x axis) labelled "read→written" like its rows;
    the every-head panel titled layer + 1. Numbers recomputed from the decoder's q and k, labels from the tokens."""
    spec = FigureSpec(model="zh-en", sentence_a="你喜欢她", layer=layer, head=head, views=("translate",))
    p = panels("translate", spec, models)
    run = models.run(decoding_spec(spec))
    s = run.sentences[0]
    n_dec, n_src = len(s.tgt_ids), len(s.src_ids)
    self_w = eq1(record(run.trace, "decoder self", layer), 0, head)
    cross = record(run.trace, "cross", layer)
    np.testing.assert_allclose(p["decoder-self"].table.to_numpy(), self_w["weights"][:n_dec, :n_dec], atol=1e-6)
    np.testing.assert_allclose(p["cross"].table.to_numpy(), eq1(cross, 0, head)["weights"][:n_dec, :n_src], atol=1e-6)
    # the decoder's rows are decoding steps "i:read→wrote"; its keys are the tokens read, "i:read"
    read = list(s.tgt_pieces)
    steps = [f"{i}:{r}→{w}" for i, (r, w) in enumerate(zip(read, s.predicted, strict=True))]
    layout = p["decoder-self"].figure.layout
    assert list(layout.xaxis.ticktext) == [f"{i}:{r}" for i, r in enumerate(read)]
    assert list(layout.yaxis.ticktext) == steps
    # every head of that layer, titled by that layer
    heads = p["cross-heads"]
    assert heads.title.endswith(f"decoder layer {layer}") and f"decoder layer {layer}" in heads.figure.layout.title.text
    for h, trace in enumerate(values(heads.figure)):
        np.testing.assert_allclose(z_of(trace), eq1(cross, 0, h)["weights"][:n_dec, :n_src], atol=1e-6)


# -- view 6: order, its numbers recomputed from each model's own encoder ------------------------------------------
def _encoded(loaded, text: str) -> np.ndarray:
    ids = list(loaded.src_tokenizer.encode(text).ids)
    with torch.no_grad():
        out = loaded.model.encode(torch.tensor([ids], device=loaded.model.device))
    return out[0].double().cpu().numpy()  # (T, d_model)


def test_the_order_numbers_and_pooled_outputs_are_each_models_own(models):
    """Mutants: the numbers table's token and pooled maxima swapped; the pooled CSV's A and B swapped. Both
    checked against A and B encoded alone here, each with the model of its row."""
    a, b = "我爱你们好", "们好我爱你"  # B = P A, a 5-cycle (no token repeats: P is read off the text)
    spec = dataclasses.replace(SPEC, sentence_a=a, sentence_b=b)
    p = panels("order", spec, models)
    numbers = p["order-numbers"].table.set_index("model")
    perm = [a.index(ch) for ch in b]  # B[i] = A[perm[i]]
    for name, slug, positional in (("with sinusoidal PE", "pe", "sinusoidal"), ("without PE", "nope", "none")):
        loaded = models.model(dataclasses.replace(spec, positional=positional))
        fa, fb = _encoded(loaded, a), _encoded(loaded, b)
        pooled_a, pooled_b = fa.mean(0), fb.mean(0)
        assert numbers.loc[name, "max |f(B) − P f(A)|"] == pytest.approx(np.abs(fb - fa[perm]).max(), abs=1e-5)
        assert numbers.loc[name, "max |mean f(A) − mean f(B)|"] == pytest.approx(np.abs(pooled_a - pooled_b).max(),
                                                                                 abs=1e-5)
        pooled = p[f"pooled-{slug}"]
        np.testing.assert_allclose(pooled.table["A"].to_numpy(), pooled_a, atol=1e-5)
        np.testing.assert_allclose(pooled.table["B"].to_numpy(), pooled_b, atol=1e-5)
        bars = {t.name: np.asarray(t.y, dtype=float) for t in pooled.figure.data if (t.meta or {}).get("role") == "bars"}
        np.testing.assert_allclose(bars["A"], pooled_a, atol=1e-5)
        np.testing.assert_allclose(bars["B"], pooled_b, atol=1e-5)
    # with PE the two maxima differ (else a swap could not show): the test has teeth
    pe = numbers.loc["with sinusoidal PE"]
    assert abs(pe["max |f(B) − P f(A)|"] - pe["max |mean f(A) − mean f(B)|"]) > 1e-3


def test_the_token_output_maps_colour_range_is_the_largest_value_they_draw(models):
    """Mutant: the shared colour range taken from |A − B| with B NOT reordered, a difference no panel draws (for
    this pair, 5 tokens in a 5-cycle, it is the larger): the scale was wider than any value shown. The range must
    be ± the largest |value| of the panels drawn: A, B in A's order, and their difference (recomputed here)."""
    a, b = "我爱你们好", "们好我爱你"
    spec = dataclasses.replace(SPEC, sentence_a=a, sentence_b=b)
    p = panels("order", spec, models)
    pos_in_b = [b.index(ch) for ch in a]  # A's token i sits at position pos_in_b[i] in B
    tops = []
    for positional, slug in (("sinusoidal", "pe"), ("none", "nope")):
        loaded = models.model(dataclasses.replace(spec, positional=positional))
        fa, fb = _encoded(loaded, a), _encoded(loaded, b)
        aligned = fb[pos_in_b]
        drawn = [z_of(t) for t in values(p[f"aligned-{slug}"].figure)]
        np.testing.assert_allclose(drawn[0], fa, atol=1e-5)
        np.testing.assert_allclose(drawn[1], aligned, atol=1e-5)
        np.testing.assert_allclose(drawn[2], np.abs(fa - aligned), atol=1e-5)
        tops.append(max(np.abs(fa).max(), np.abs(fb).max(), np.abs(fa - aligned).max()))
    for slug in ("pe", "nope"):
        axis = p[f"aligned-{slug}"].figure.layout.coloraxis
        assert axis.cmax == pytest.approx(max(tops), rel=1e-5) and axis.cmin == pytest.approx(-max(tops), rel=1e-5)


# -- view 2: the clock hands' angles and the dot-product curve's peaks ------------------------------------------
def test_the_clock_panels_give_each_pairs_angle_per_position_in_degrees(models):
    """Mutant: the panel titles wrote ωᵢ in radians with a degree sign ("ω = 1°" for 57.3°). ωᵢ = 10000^(−2i/d)
    rad for the pair i each panel draws (its trace's meta), in degrees here."""
    d = 64
    spec = FigureSpec(sentence_a="你喜欢她", d_model=d, n_heads=4, n_layers=1, d_ff=32, views=("positional",))
    figure = panels("positional", spec, models)["pe-rotation"].figure
    pairs = [t.meta["pair"] for t in figure.data if (t.meta or {}).get("role") == "positions"]
    titles = [a.text for a in figure.layout.annotations if a.text.startswith("ω = ")]
    assert len(pairs) == len(titles) >= 2
    for i, title in zip(pairs, titles, strict=True):
        assert title == f"ω = {math.degrees(10000.0 ** (-2 * i / d)):.3g}°", (i, title)


def test_the_dot_curve_marks_only_peaks_past_offset_zero_as_the_not_monotonic_evidence(models):
    """Mutant: k = 0 (the global maximum, d/2) counted among the 'local peaks' that show the curve is not
    monotonic. The marked peaks must be the k > 0 where Σᵢ cos(ωᵢ k) (recomputed here) tops both neighbours."""
    d = 128
    spec = FigureSpec(sentence_a="你喜欢她", d_model=d, n_heads=4, n_layers=1, d_ff=32, views=("positional",))
    panel = panels("positional", spec, models)["pe-dot-curve"]
    ks = np.arange(-49, 50)
    omega = 10000.0 ** (-np.arange(0, d, 2) / d)
    dots = np.cos(np.outer(ks, omega)).sum(1)
    peaks = [int(k) for j, k in enumerate(ks[1:-1], start=1) if k > 0 and dots[j] > dots[j - 1] and dots[j] > dots[j + 1]]
    assert len(peaks) >= 3  # FACTS.md: at d = 128 the curve rises again near k = 11, 17, 23, ...
    marked = [t for t in panel.figure.data if (t.meta or {}).get("role") == "marks"]
    assert len(marked) == 1
    assert [round(float(x)) for x in marked[0].x] == peaks
    notes = " ".join(a.text for a in panel.figure.layout.annotations if a.name == "notes")
    assert f"local peaks at k = {peaks[0]}, {peaks[1]}, {peaks[2]}" in notes and "k = 0" not in notes


# -- viz: hovers, notes and labels of the shared figure builders ------------------------------------------------
def test_query_bars_hover_names_the_key_under_each_bar_when_a_key_in_the_middle_is_masked():
    """Mutants: each bar's hover label taken from the first keys rather than its own (the bars of key 3 said
    "key 2:c" once key 1 was masked), for the value bars and the masked bars. The label under bar x is "x:piece"."""
    pieces = ["a", "b", "c", "d", "e"]
    scores = np.array([1.0, 2.0, -1.0, 0.5, 3.0])
    allowed = np.array([True, False, True, False, True])
    scaled = scores / 2.0
    e = np.where(allowed, np.exp(scaled - scaled.max()), 0.0)
    fig = viz.query_bars(scores, scaled, e / e.sum(), key_labels=pieces, mask=allowed, unscaled_weights=e / e.sum())
    seen = 0
    for trace in fig.data:
        if trace.type != "bar" or trace.customdata is None:
            continue
        xs = [int(x) for x in trace.x]
        assert list(trace.customdata) == [f"{x}:{pieces[x]}" for x in xs], (trace.meta, xs)
        role = (trace.meta or {}).get("role")
        if role == "masked_bars":
            assert xs == [1, 3]
        elif role == "bars" and trace.name == "score":
            np.testing.assert_allclose(np.asarray(trace.y, float), scores[xs], rtol=1e-6)
        seen += 1
    assert seen >= 5  # score, scaled, weight, unscaled weight, masked bars of two panels


def test_a_row_sum_note_gives_the_largest_distance_from_one_below_as_well_as_above():
    """Mutant: the note of a heatmap too tall for a "Σ = …" per row said max |Σ − 1| from the largest sum only,
    missing a row that sums to less than 1. Here row 5 sums to 1 − 3e−4, another to 1 + 1e−6."""
    rng = np.random.default_rng(0)
    w = rng.random((60, 60))
    w /= w.sum(1, keepdims=True)
    w[5] *= 1 - 3e-4
    w[9] *= 1 + 1e-6
    expected = format(np.abs(w.sum(1) - 1).max(), ".1e").replace("-", "\u2212")
    fig = viz.weights_heatmap(w, row_labels=None)
    text = viz.theme.unwrap(fig.layout.title.text) + " ".join(a.text for a in fig.layout.annotations or ())
    assert f"max |Σ − 1| = {expected}" in text, text


def test_a_row_sum_note_says_every_row_sums_to_1_only_where_it_does():
    """Rows of 0.5 were said to "sum to 1 (max |Σ − 1| = 5.0e−01)": now their range, and not all to 1."""
    w = np.full((60, 60), 1 / 120)  # every row sums to 0.5
    w[3] *= 2  # one to 1
    fig = viz.weights_heatmap(w, row_labels=None)
    text = viz.theme.unwrap(fig.layout.title.text) + " ".join(a.text for a in fig.layout.annotations or ())
    assert "every row sums to 1" not in text and "rows sum to 0.5 … 1, not all to 1" in text, text


def test_the_large_input_note_names_rows_then_columns():
    """Mutant: "Large input (C×R)". A 300 × 40 matrix (300 query rows, 40 key columns) is said to be 300×40."""
    fig = viz.matrix_heatmap(np.random.default_rng(1).random((300, 40)), kind="values")
    text = " ".join(a.text for a in fig.layout.annotations or ()) + viz.theme.unwrap(fig.layout.title.text)
    assert "Large input (300×40)" in text, text


def test_the_attention_difference_panel_names_its_cells_by_a_tokens(models):
    """Mutant: the |A − B| panel of view 6's attention labelled with B's own "position:piece" labels. Its cells are
    A's token pairs (B was reordered to A's order): its key axis and its hover must say A's labels."""
    a, b = "我爱你们好", "们好我爱你"
    p = panels("order", dataclasses.replace(SPEC, sentence_a=a, sentence_b=b), models)
    own_a = [f"{i}:{ch}" for i, ch in enumerate(a)]
    own_b_aligned = [f"{b.index(ch)}:{ch}" for ch in a]
    figure = p["attn-nope"].figure
    assert list(figure.layout.xaxis.ticktext) == own_a and list(figure.layout.xaxis2.ticktext) == own_b_aligned
    assert list(figure.layout.xaxis3.ticktext) == own_a
    diff = values(figure)[2]
    labels = diff.meta[viz.heatmap.HOVER_LABELS]
    assert list(labels["x"]) == own_a and list(labels["y"]) == own_a


def test_the_heads_view_of_sentence_b_uses_bs_own_mask_not_as(models):
    """Mutant: view 4 took batch row 0's mask (A's, padded from 4 to 8 keys) for sentence B: B's keys 4-7, which
    it attends to, were hatched as masked and the entropy's colour range topped at 4 keys. B has 8 tokens and no
    padding: every cell is drawn with its weight (recomputed here), and the range is log2(8) bits."""
    spec = dataclasses.replace(PADDED, sentence="b", layer=1)
    p = panels("heads", spec, models)
    rec = record(models.run(spec).trace, "encoder self", 1)
    for h, trace in enumerate(values(p["heads-grid"].figure)):
        want = eq1(rec, 1, h)
        assert want["allowed"].all()
        np.testing.assert_allclose(z_of(trace), want["weights"], atol=1e-6, err_msg=f"head {h}")
    assert not [t for t in p["heads-grid"].figure.data if (t.meta or {}).get("role") in ("mask", "mask_cells")]
    assert f"{np.log2(8):.2f} bits = uniform over 8 keys" in p["entropy"].figure.layout.annotations[0].text


@needs_trained
def test_the_translate_views_every_head_panel_is_the_chosen_sentences(models):
    """Mutant: the every-head cross-attention panel read batch row 0 (sentence A) whatever sentence was chosen.
    With B chosen, each head's panel is B's own cross-attention, recomputed here from row 1's q and k."""
    spec = FigureSpec(model="zh-en", sentence_a="你喜欢她", sentence_b="我们都喜欢老师", sentence="b",
                      views=("translate",))
    p = panels("translate", spec, models)
    run = models.run(decoding_spec(spec))
    s = run.sentences[1]
    assert s.key == "b"
    n_dec, n_src = len(s.tgt_ids), len(s.src_ids)
    cross = record(run.trace, "cross", 0)
    traces = values(p["cross-heads"].figure)
    assert len(traces) == cross.n_heads
    for h, trace in enumerate(traces):
        np.testing.assert_allclose(z_of(trace), eq1(cross, 1, h)["weights"][:n_dec, :n_src], atol=1e-6)
    np.testing.assert_allclose(p["cross"].table.to_numpy(), eq1(cross, 1, 0)["weights"][:n_dec, :n_src], atol=1e-6)


def test_the_token_tables_bytes_are_those_of_the_text_each_token_covers(models):
    """Mutant: the bytes and byte count of a token taken from its piece, not from the text it covers: the bpe
    tokenizer's [UNK] for "é" said 5 bytes "5b 55 4e 4b 5d" (the letters of "[UNK]"), where the text has 2."""
    text = "I like her café"
    spec = dataclasses.replace(SPEC, tokenizer="bpe", sentence_a=text, sentence_b="")
    table = panels("tokens", spec, models)["tokens-a"].table
    assert "[UNK]" in list(table["piece"])  # the case that tells the piece's bytes from the text's
    for _, row in table.iterrows():
        raw = text[row["start"]:row["end"]].encode("utf-8")
        assert row["text"] == text[row["start"]:row["end"]]
        assert row["bytes"] == raw.hex(" ") and row["n_bytes"] == len(raw), row.to_dict()


# -- view 2: the embedding panel is the chosen sentence's, at its own positions ----------------------------------
def test_the_embedding_panel_is_the_chosen_sentences_tokens_and_positions_0_to_n(models):
    """Mutants: the token-embedding panel read batch row 0 (sentence A) whatever sentence was chosen; the
    positional-encoding panel took positions 1 … n for 0 … n − 1 (seen only where the sentence is the shorter
    one: the batch holds more positions than it has tokens). Recomputed here from the embedding table
    (× √d_model, §3.4) and the closed-form sinusoidal table (§3.5) for B's own ids."""
    from model.positional import sinusoidal_at

    a, b = "我爱你们大家都好", "你喜欢她"  # B the shorter: its 4 positions in a batch of 8
    spec = dataclasses.replace(SPEC, sentence_a=a, sentence_b=b, sentence="b", views=("positional",))
    panel = panels("positional", spec, models)["embedding-pe"]
    model = models.model(spec).model
    d = model.config.d_model
    ids = torch.tensor(models.model(spec).src_tokenizer.encode(b).ids)
    assert len(ids) == 4
    tokens = (model.src_embed.token.weight[ids].double() * math.sqrt(d)).cpu().numpy()
    pe = sinusoidal_at(torch.arange(len(ids)), d).numpy()
    drawn = [z_of(t) for t in values(panel.figure)]
    assert len(drawn) == 3
    np.testing.assert_allclose(drawn[0], tokens, atol=1e-5)
    np.testing.assert_allclose(drawn[1], pe, atol=1e-6)
    np.testing.assert_allclose(drawn[2], tokens + pe, atol=1e-5)
    table = panel.table
    np.testing.assert_allclose(table.loc["token embedding"].to_numpy(), tokens, atol=1e-5)
    np.testing.assert_allclose(table.loc["positional encoding"].to_numpy(), pe, atol=1e-6)
    assert list(table.loc["sum"].index) == [f"{i}:{ch}" for i, ch in enumerate(b)]


# -- view 5: the context vector's numbers, for cross-attention too -----------------------------------------------
def test_the_context_table_names_z_by_the_query_and_holds_w_times_v(models):
    """Mutant: the context CSV's last row "z of …" named by the KEY at the query's index, not the query. In
    cross-attention they differ: query 2 of the decoder reads "喜" ([BOS] 你 喜 …), key 2 of the source is "欢".
    The rows are each key's v, each wⱼ·vⱼ and z = Σⱼ wⱼ vⱼ, recomputed here from the record's q, k and v."""
    text, q = "你喜欢她", 2
    spec = dataclasses.replace(SPEC, sentence_a=text, block="cross", layer=1, head=3, query=q, views=("query",))
    table = panels("query", spec, models)["query-context"].table
    rec = record(models.run(spec).trace, "cross", 1)
    want = eq1(rec, 0, 3)
    v = rec.v[0, 3].detach().double().cpu().numpy()  # (Ts, d_k)
    w = want["weights"][q]
    decoder_reads = ["[BOS]", *text]
    keys = [f"{j}:{ch}" for j, ch in enumerate(text)]
    assert list(table.index[: 2 * len(text)]) == [f"v of {k}" for k in keys] + [f"w·v of {k}" for k in keys]
    assert table.index[-1] == f"z of {q}:{decoder_reads[q]}" and decoder_reads[q] != text[q]
    np.testing.assert_allclose(table.iloc[: len(text)].to_numpy(), v, atol=1e-6)
    np.testing.assert_allclose(table.iloc[len(text): 2 * len(text)].to_numpy(), w[:, None] * v, atol=1e-6)
    np.testing.assert_allclose(table.iloc[-1].to_numpy(), w @ v, atol=1e-5)


def test_a_dot_curve_that_barely_decays_says_how_many_frequencies_and_how_high_it_stays(models):
    """Mutant: "with only {d} frequencies" for d_model's d/2 (sin, cos) pairs. The title's count is the number of
    distinct ωᵢ = 10000^(−2i/d) the table uses, and its numbers the curve's largest value over the far half of the
    offsets drawn (|k| ≥ span/2) and its value at k = 0, recomputed here from Σᵢ cos(ωᵢ k). At d_model = 4 (6 already
    decays) it is cos k + cos(k/100)."""
    d_model = 4
    spec = dataclasses.replace(SPEC, d_model=d_model, n_heads=1, d_ff=8, views=("positional",))
    panel = panels("positional", spec, models)["pe-dot-curve"]
    k = panel.table.index.to_numpy()
    omegas = np.unique(10000.0 ** (-np.arange(0, d_model, 2) / d_model))
    dots = np.cos(np.outer(k, omegas)).sum(1)
    span = int(k.max()) + 1
    far = dots[np.abs(k) >= span / 2].max()
    assert far >= 0.9 * dots[k == 0][0]  # the premise: it barely decays here
    said = (f"with only {len(omegas)} frequencies it barely decays over these offsets (up to "
            f"{viz.labels.num(far, '.3g')} of {viz.labels.num(dots[k == 0][0], '.3g')} for |k| ≥ {span // 2})")
    assert said in panel.title, panel.title


# -- view 6: the numbers and colour ranges that compare the two models --------------------------------------------
def _encoded_attention(loaded, text: str) -> np.ndarray:
    """(layers, heads, T, T) self-attention weights of the encoder for `text` alone, each softmax(q·k/√d_k)
    recomputed from the layer's own q and k (eq1)."""
    ids = torch.tensor([list(loaded.src_tokenizer.encode(text).ids)], device=loaded.model.device)
    with torch.no_grad():
        _, trace = loaded.model.encode(ids, None, return_trace=True)
    return np.stack([[eq1(layer.self_attn, 0, h)["weights"] for h in range(layer.self_attn.n_heads)]
                     for layer in trace.layers])


def test_the_attention_caption_gives_the_largest_difference_over_every_layer_and_head(models):
    """Mutant: the caption's "max |W(B) − P W(A) Pᵀ| = … over every layer and head" computed from the one layer
    and head drawn. With PE, B = P A: the largest |W(B) − W(A)[P, P]| over every layer and head (recomputed here)
    is said, and it is more than the drawn head's own (the premise that tells the two apart)."""
    a, b = "我爱你们好", "们好我爱你"
    spec = dataclasses.replace(SPEC, sentence_a=a, sentence_b=b, layer=0, head=0, views=("order",))
    perm = [a.index(ch) for ch in b]  # B[i] = A[perm[i]]
    loaded = models.model(dataclasses.replace(spec, positional="sinusoidal"))
    wa, wb = _encoded_attention(loaded, a), _encoded_attention(loaded, b)
    diffs = np.abs(wb - wa[:, :, perm][:, :, :, perm])  # (L, H, T, T)
    worst = diffs.max()
    assert diffs[0, 0].max() < worst - 1e-3  # layer 0, head 0 is not where the largest difference is
    caption = panels("order", spec, models)["attn-pe"].caption
    said = f"= {viz.labels.num(worst)} over every layer and head ({spec.n_layers} layers)"
    assert said in caption, caption


def test_both_difference_maps_share_one_colour_range_from_both_models(models):
    """Mutant: the |f(B) − P f(A)| maps' shared colour range taken from the first model (with PE) alone. The
    range tops at the larger, over both models, of max |f(A)| and max |f(B) − P f(A)| (recomputed here), and the
    two maps, side by side, share it."""
    a, b = "我爱你们好", "们好我爱你"
    spec = dataclasses.replace(SPEC, sentence_a=a, sentence_b=b, views=("order",))
    perm = [a.index(ch) for ch in b]
    tops = {}
    for positional, slug in (("sinusoidal", "pe"), ("none", "nope")):
        loaded = models.model(dataclasses.replace(spec, positional=positional))
        fa, fb = _encoded(loaded, a), _encoded(loaded, b)
        tops[slug] = max(np.abs(fa).max(), np.abs(fb - fa[perm]).max())
    assert tops["nope"] > tops["pe"] * (1 + 1e-3)  # the premise: the second model's range is the larger
    p = panels("order", spec, models)
    for slug in ("pe", "nope"):
        figure = p[f"diff-{slug}"].figure
        zmax = [t.zmax for t in values(figure)] + [figure.layout.coloraxis.cmax]
        assert max(z for z in zmax if z is not None) == pytest.approx(max(tops.values()), rel=1e-5), slug


def test_the_pooled_equal_column_says_whether_the_means_agree_not_whether_b_reorders_a(models):
    """Mutant: view 6's "pooled equal" column filled with "equivariant", which is blank where B is no reordering.
    B = A's tokens twice: without PE the means agree (each token's output is the same in both), with PE they do
    not; both recomputed here from A and B encoded alone."""
    a, b = "你喜欢她", "她喜欢你你喜欢她"
    spec = dataclasses.replace(SPEC, sentence_a=a, sentence_b=b, views=("order",))
    numbers = panels("order", spec, models)["order-numbers"].table.set_index("model")
    for name, positional, equal in (("with sinusoidal PE", "sinusoidal", False), ("without PE", "none", True)):
        loaded = models.model(dataclasses.replace(spec, positional=positional))
        gap = np.abs(_encoded(loaded, a).mean(0) - _encoded(loaded, b).mean(0)).max()
        assert (gap < 1e-5) == equal and (equal or gap > 1e-3)  # far from the tolerance either way
        assert numbers.loc[name, "pooled equal"] == equal, name
        assert numbers.loc[name, "max |mean f(A) − mean f(B)|"] == pytest.approx(gap, abs=1e-5)


def test_the_aligned_outputs_csv_holds_b_in_as_order_as_the_figure_draws(models):
    """Mutant: the "B (aligned)" rows of the token-output CSV put in order by P (B's order of A) rather than by its
    inverse (A's order of B): for a 5-cycle the two differ. Row i holds B's output for A's token i, labelled with
    B's own "position:piece", as the figure's middle panel draws it."""
    a, b = "我爱你们好", "们好我爱你"
    spec = dataclasses.replace(SPEC, sentence_a=a, sentence_b=b, views=("order",))
    pos_in_b = [b.index(ch) for ch in a]  # A's token i sits at pos_in_b[i] in B
    assert pos_in_b != [a.index(ch) for ch in b]  # P is not its own inverse here
    p = panels("order", spec, models)
    for positional, slug in (("sinusoidal", "pe"), ("none", "nope")):
        fb = _encoded(models.model(dataclasses.replace(spec, positional=positional)), b)
        aligned = p[f"aligned-{slug}"].table.loc["B (aligned)"]
        assert list(aligned.index) == [f"{j}:{b[j]}" for j in pos_in_b]
        np.testing.assert_allclose(aligned.to_numpy(), fb[pos_in_b], atol=1e-5)
        np.testing.assert_allclose(z_of(values(p[f"aligned-{slug}"].figure)[1]), aligned.to_numpy(), atol=1e-6)


def _encoded_causal(loaded, text: str) -> np.ndarray:
    """The encoder's outputs for `text` alone under a look-ahead mask (query i sees keys 0 … i), (T, d_model)."""
    from model import causal_mask

    ids = torch.tensor([list(loaded.src_tokenizer.encode(text).ids)], device=loaded.model.device)
    with torch.no_grad():
        out = loaded.model.encode(ids, causal_mask(ids.size(1), ids.device))
    return out[0].double().cpu().numpy()


def test_each_verdict_states_its_own_models_largest_differences(models):
    """Mutants: a verdict's numbers swapped for one another: the pooled difference given for the token outputs' in
    the look-ahead verdict, the token outputs' for the pooled ones in the with-PE and without-PE verdicts. Each
    verdict says its model's row of the numbers table, and each row is recomputed here from A and B encoded alone,
    with PE, without, and without PE under a look-ahead mask (to float rounding: the traced pass the view runs may
    round otherwise than this untraced one)."""
    a, b = "我爱你们好", "们好我爱你"
    spec = dataclasses.replace(SPEC, sentence_a=a, sentence_b=b, views=("order",))
    perm = [a.index(ch) for ch in b]
    num = viz.labels.num
    p = panels("order", spec, models)
    numbers = p["order-numbers"].table.set_index("model")
    with_pe = models.model(dataclasses.replace(spec, positional="sinusoidal"))
    without = models.model(dataclasses.replace(spec, positional="none"))
    said = {}
    for slug, row, fa, fb in (("pe", "with sinusoidal PE", _encoded(with_pe, a), _encoded(with_pe, b)),
                              ("nope", "without PE", _encoded(without, a), _encoded(without, b)),
                              ("causal", "without PE, look-ahead mask", _encoded_causal(without, a),
                               _encoded_causal(without, b))):
        tokens, pooled = numbers.loc[row, "max |f(B) − P f(A)|"], numbers.loc[row, "max |mean f(A) − mean f(B)|"]
        assert tokens == pytest.approx(np.abs(fb - fa[perm]).max(), abs=1e-5), row
        assert pooled == pytest.approx(np.abs(fb.mean(0) - fa.mean(0)).max(), abs=1e-5), row
        assert num(tokens) != num(pooled)  # the premise: a swap would show
        said[slug] = (num(tokens), num(pooled))
    pe, nope, causal = (p[f"verdict-{slug}"].caption for slug in ("pe", "nope", "causal"))
    assert f"max |f(B) − P f(A)| = {said['pe'][0]}; pooled {said['pe'][1]})" in pe, pe
    assert f"(max |f(B) − P f(A)| = {said['nope'][0]}, float rounding)" in nope, nope
    assert f"INVARIANT (max difference {said['nope'][1]})" in nope, nope
    assert f"max |f(B) − P f(A)| = {said['causal'][0]}." in causal, causal


def test_a_rounding_verdict_gives_the_float64_difference_it_names(models):
    """Mutant: "float32 rounding: X in float64" giving the float32 difference (3.57e−05) as X. d_model 2, pre-norm:
    the no-PE encoder's float32 outputs miss P f(A) by more than the tolerance; a float64 copy of it (made here)
    gives B's outputs as A's reordered to ~1e−13."""
    import copy
    import re

    spec = dataclasses.replace(SPEC, d_model=2, n_heads=1, d_ff=4, norm="pre", sentence_a="I like her",
                               sentence_b="her like I", views=("order",))
    loaded = models.model(dataclasses.replace(spec, positional="none"))
    twin = copy.deepcopy(loaded.model).to("cpu", torch.float64)
    ids_a, ids_b = (list(loaded.src_tokenizer.encode(t).ids) for t in (spec.sentence_a, spec.sentence_b))
    seen: dict[int, int] = {}  # the k-th of a token in B is the k-th of it in A
    perm = []
    for i in ids_b:
        perm.append([j for j, t in enumerate(ids_a) if t == i][seen.get(i, 0)])
        seen[i] = seen.get(i, 0) + 1
    with torch.no_grad():
        ea, eb = (twin.encode(torch.tensor([ids]))[0].numpy() for ids in (ids_a, ids_b))
    exact = np.abs(eb - ea[perm]).max()
    float32 = panels("order", spec, models)["order-numbers"].table.set_index("model").loc[
        "without PE", "max |f(B) − P f(A)|"]
    assert exact < 1e-12 and float32 > 1e-5  # the premise: float32 alone passes the tolerance
    caption = panels("order", spec, models)["verdict-nope"].caption
    assert f"(max |f(B) − P f(A)| = {viz.labels.num(float32)}, float32 rounding: " in caption, caption
    said = re.search(r"float32 rounding: (\S+) in float64", caption)
    assert said and float(said.group(1).replace("\u2212", "-")) == pytest.approx(exact, abs=1e-12), caption


def test_the_difference_maps_rows_are_bs_tokens_in_bs_order(models):
    """Mutant: the |f(B) − P f(A)| map's rows labelled with A's tokens while they hold B's, in B's order (row i:
    B's token i against A's same token). Rows, labels and cells checked against A and B encoded alone."""
    a, b = "我爱你们好", "们好我爱你"
    spec = dataclasses.replace(SPEC, sentence_a=a, sentence_b=b, views=("order",))
    perm = [a.index(ch) for ch in b]
    own_b = [f"{i}:{ch}" for i, ch in enumerate(b)]
    p = panels("order", spec, models)
    for positional, slug in (("sinusoidal", "pe"), ("none", "nope")):
        loaded = models.model(dataclasses.replace(spec, positional=positional))
        fa, fb = _encoded(loaded, a), _encoded(loaded, b)
        panel = p[f"diff-{slug}"]
        (trace,) = values(panel.figure)
        assert list(panel.figure.layout.yaxis.ticktext) == own_b, slug
        assert list(trace.meta[viz.heatmap.HOVER_LABELS]["y"]) == own_b, slug
        assert list(panel.table.index) == own_b, slug
        np.testing.assert_allclose(z_of(trace), np.abs(fb - fa[perm]), atol=1e-5)
        np.testing.assert_allclose(panel.table.to_numpy(), np.abs(fb - fa[perm]), atol=1e-5)


@needs_trained
def test_the_spaces_notice_counts_every_whitespace_character_the_model_drops(models):
    """Mutant: the trained model's notice counting only the spaces (" ") it drops, not a tab or the ideographic
    space U+3000 a Chinese keyboard types. The count said is the number of characters the tokens do not cover:
    one token per character read, so len(text) − tokens."""
    words, gaps = ["你", "喜欢", "她", "们"], [" ", "\t", "\u3000"]
    text = "".join(w + g for w, g in zip(words, gaps + [""], strict=True))
    spec = FigureSpec(model="zh-en", sentence_a=text, sentence_b="", views=("tokens",))
    result = build_view("tokens", spec, models)
    (table,) = [p.table for p in result.panels if p.key == "tokens-a"]
    dropped = len(text) - len(table)
    assert dropped == len(gaps) and "".join(table["text"]) == "".join(words)
    (notice,) = [n for n in result.notices if "without spaces" in n]
    assert f"its {dropped} whitespace characters are removed" in notice, notice


def test_the_attention_difference_panel_is_the_absolute_difference_it_names(models):
    """Mutant: the third panel of view 6's attention figure drawn as W(A) − W(B aligned), signed, under its title
    |A − B| (and on the weights' 0 … 1 colours, where a negative cell shows as 0). Its cells and the note's max are
    |W(A) − W(B)[P⁻¹, P⁻¹]|, recomputed here from A and B encoded alone, with PE (where they differ both ways)."""
    a, b = "我爱你们好", "们好我爱你"
    spec = dataclasses.replace(SPEC, sentence_a=a, sentence_b=b, layer=1, head=2, views=("order",))
    pos_in_b = [b.index(ch) for ch in a]
    loaded = models.model(dataclasses.replace(spec, positional="sinusoidal"))
    wa = _encoded_attention(loaded, a)[1, 2]
    wb = _encoded_attention(loaded, b)[1, 2][np.ix_(pos_in_b, pos_in_b)]  # B's weights in A's token order
    assert (wa - wb).min() < -1e-3 and (wa - wb).max() > 1e-3  # the premise: the sign matters
    figure = panels("order", spec, models)["attn-pe"].figure
    drawn = [z_of(t) for t in values(figure)]
    np.testing.assert_allclose(drawn[0], wa, atol=1e-6)
    np.testing.assert_allclose(drawn[1], wb, atol=1e-6)
    np.testing.assert_allclose(drawn[2], np.abs(wa - wb), atol=1e-6)
    notes = " ".join(a.text for a in figure.layout.annotations if a.name == "notes")
    assert f"max |A − B| = {viz.labels.num(np.abs(wa - wb).max())}" in notes, notes


def test_the_context_figures_legend_gives_each_bars_own_weight_and_the_other_keys_sum():
    """Mutant: the grey "N other keys (Σ w = …)" bar's legend summing the weights of the keys drawn with a bar of
    their own. Each key bar's legend gives its key's weight; the grey one the sum of the weights of the keys it
    adds up (those with no bar of their own), whose Σ wⱼ vⱼ it draws."""
    rng = np.random.default_rng(3)
    n = 20
    w = np.exp(2 * rng.normal(size=n))
    w /= w.sum()
    v = rng.normal(size=(n, 6))
    labels = [f"t{j}" for j in range(n)]
    fig = viz.context_vector_figure(w, v, key_labels=labels)
    bars = [t for t in fig.data if (t.meta or {}).get("role") == "bars"]
    own = [int(t.name.split(":", 1)[0]) for t in bars if "other keys" not in t.name]
    (grey,) = [t for t in bars if "other keys" in t.name]
    rest = sorted(set(range(n)) - set(own))
    assert own and rest
    for t, j in zip(bars, own, strict=False):
        assert t.name == f"{j}:t{j} (w = {w[j]:.3f})"
        np.testing.assert_allclose(np.asarray(t.y, float), w[j] * v[j], atol=1e-6)
    assert grey.name == f"{len(rest)} other keys (Σ w = {w[rest].sum():.3f})", grey.name
    np.testing.assert_allclose(np.asarray(grey.y, float), w[rest] @ v[rest], atol=1e-6)


def test_the_chosen_querys_lines_are_scaled_by_its_own_largest_weight_and_count_the_faint_ones():
    """Mutants: the chosen query's lines banded (and the note's "÷ its largest") by the largest weight of the whole
    matrix, not of its own row; the note's "N of its weights under 1% of that" counting the faint weights of every
    query. Here the chosen row's largest is 0.4 (another row's 0.9), and two of its weights are under 1% of 0.4."""
    w = np.array([[0.05, 0.9, 0.01, 0.02, 0.01, 0.01],
                  [0.4, 0.3, 0.2998, 1e-4, 1e-4, 0.0],  # the chosen query: key 5 masked (weight exactly 0)
                  [0.2, 0.2, 0.2, 0.2, 0.199, 0.001],
                  [0.5, 0.49, 0.005, 0.002, 0.002, 0.001]])
    chosen = 1
    row = w[chosen]
    top = row.max()
    faint = int(((row > 0) & (row < 0.01 * top)).sum())
    assert top < w.max() and faint == 2 and ((w > 0) & (w < 0.01 * w.max(axis=1, keepdims=True))).sum() > faint
    fig = viz.attention_lines(w, query_labels=list("abcd"), key_labels=list("uvwxyz"), query=chosen)
    notes = " ".join(a.text for a in fig.layout.annotations if a.name == "notes")
    assert f"1:b's lines: darker and wider by weight ÷ its largest, {viz.labels.num(top)}" in notes, notes
    assert f"{faint} of its weights under 1% of that: no line" in notes, notes
    drawn = set()
    for trace in (t for t in fig.data if (t.meta or {}).get("role") == "query-lines"):
        keys = {round((y - 0.0) * 5) for y in trace.y[1::3]}  # each line ends at its key's y, j / 5 for 6 keys
        band = trace.meta["band"]
        for j in keys:
            assert band / 20 <= row[j] / top < (band + 1) / 20 or (band == 19 and row[j] == top), (j, band)
        drawn |= keys
    assert drawn == {j for j in range(6) if row[j] >= 0.01 * top}


def test_the_clock_hovers_give_each_pairs_angle_in_radians_and_its_two_dimensions(models):
    """Mutant: the hover's "ω = … rad" written in degrees (57.3 rad for 1 rad). ωᵢ = 10000^(−2i/d) rad per position
    for the pair i of each panel (its trace's meta), whose dimensions are 2i (sin, x) and 2i + 1 (cos, y)."""
    d = 64
    spec = FigureSpec(sentence_a="你喜欢她", d_model=d, n_heads=4, n_layers=1, d_ff=32, views=("positional",))
    figure = panels("positional", spec, models)["pe-rotation"].figure
    traces = [t for t in figure.data if (t.meta or {}).get("role") == "positions"]
    assert len(traces) >= 2
    for t in traces:
        i = t.meta["pair"]
        hover = t.hovertemplate
        assert f"ω = {10000.0 ** (-2 * i / d):.4g} rad<br>" in hover, hover
        assert f"PE(pos, {2 * i}) = sin = %{{x:.4f}}" in hover and f"PE(pos, {2 * i + 1}) = cos = %{{y:.4f}}" in hover
        positions = np.arange(len(t.x))
        np.testing.assert_allclose(np.asarray(t.x, float), np.sin(positions * 10000.0 ** (-2 * i / d)), atol=1e-6)


# -- view 1: the counts in its titles and notices --------------------------------------------------------------
def test_the_unknown_notice_names_eight_pieces_and_counts_the_rest(models):
    """Mutant: "… and N more" counting every unknown piece, the eight named included. Eleven distinct Arabic letters
    (none in the char tokenizer's vocabulary, one of them twice): the notice names eight, the first eight in the
    text, and says how many of the distinct [UNK] pieces of the token table are left."""
    text = "ابتثجحخدذرزب"  # 12 letters, ب twice
    spec = dataclasses.replace(SPEC, sentence_a=text, sentence_b="", views=("tokens",))
    result = build_view("tokens", spec, models)
    table = next(p.table for p in result.panels if p.key == "tokens-a")
    unknown = list(dict.fromkeys(table.loc[table["piece"] == "[UNK]", "text"]))
    assert len(unknown) == 11 and len(table) == len(text)
    (notice,) = [n for n in result.notices if n.startswith("Sentence A:")]
    named = ", ".join(f"“\u2068{c}\u2069”" for c in unknown[:8])
    assert notice.startswith(f"Sentence A: {named} and {len(unknown) - 8} more are not in"), notice


def test_a_token_tables_title_counts_its_tokens_not_the_texts_characters(models):
    """Mutant: "Sentence A: N tokens" giving the sentence's characters. The bpe tokenizer reads "I like her café" (15
    characters) in fewer tokens: the title says the number of rows of its token table."""
    text = "I like her café"
    spec = dataclasses.replace(SPEC, tokenizer="bpe", sentence_a=text, sentence_b="", views=("tokens",))
    panel = next(p for p in build_view("tokens", spec, models).panels if p.key == "tokens-a")
    assert len(panel.table) != len(text) and "".join(panel.table["text"]) == text
    assert panel.title == f"Sentence A: {len(panel.table)} tokens (bpe)", panel.title


@needs_trained
def test_a_cut_sentences_notice_counts_the_characters_the_trained_model_would_read(models):
    """Mutant: the trained models' cut notice giving the characters as typed, spaces included ("has 100
    characters (spaces removed)"). It counts what is left once whitespace goes, and the tokens shown are the first
    max_len of those."""
    text = "你喜欢她 " * 20  # 100 characters, 80 of them not spaces
    spec = FigureSpec(model="zh-en", sentence_a=text, sentence_b="", views=("tokens",))
    result = build_view("tokens", spec, models)
    limit = models.model(spec).model.config.max_len
    kept = "".join(c for c in text if not c.isspace())
    assert len(kept) > limit and len(kept) != len(text)
    (cut,) = [n for n in result.notices if "read at most" in n]
    assert cut.startswith(f"Sentence A has {len(kept)} characters (spaces removed); the trained models read at most "
                          f"{limit}, so only the first {limit} are"), cut
    table = next(p.table for p in result.panels if p.key == "tokens-a")
    assert "".join(table["piece"]) == kept[:limit]


# -- one colour range for the panels of one figure ---------------------------------------------------------------
def test_the_qkv_panels_share_a_range_that_holds_q_k_and_v(models):
    """Mutant: the Q, K, V figure's shared colour range taken from Q alone, so that K's or V's larger values were
    clipped at Q's largest. The range is ± the largest |value| of the three, recomputed from the record."""
    run = models.run(dataclasses.replace(PADDED, views=("attention",)))

    def qkv(block, layer, head):
        rec = record(run.trace, block, layer)
        return [t[0, head].detach().double().cpu().numpy() for t in (rec.q, rec.k, rec.v)]

    # the first head whose K or V holds a larger |value| than its Q (the premise that tells the mutant apart)
    block, layer, head = next((b, ly, h) for b in ("encoder self", "decoder self", "cross") for ly in range(2)
                              for h in range(4) if np.abs(qkv(b, ly, h)[0]).max() < 0.99 * max(
                                  np.abs(m).max() for m in qkv(b, ly, h)[1:]))
    q, k, v = qkv(block, layer, head)
    top = max(np.abs(q).max(), np.abs(k).max(), np.abs(v).max())
    spec = dataclasses.replace(PADDED, block=block, layer=layer, head=head, views=("attention",))
    figure = panels("attention", spec, models)["attention-qkv"].figure
    drawn = [z_of(t) for t in values(figure)]
    np.testing.assert_allclose(drawn[0], q, atol=1e-6)
    np.testing.assert_allclose(drawn[1], k, atol=1e-6)
    np.testing.assert_allclose(drawn[2], v, atol=1e-6)
    axis = figure.layout.coloraxis
    assert axis.cmax == pytest.approx(top, rel=1e-6) and axis.cmin == pytest.approx(-top, rel=1e-6)


def test_the_embedding_panels_share_a_range_that_holds_the_sum(models):
    """Mutant: the embedding figure's shared colour range taken from the embedding and the positional encoding
    alone, so that their sum, the panel the model reads, was clipped. The range is ± the largest |value| of the three,
    recomputed from the embedding rows (× √d_model) and the closed-form table."""
    from model.positional import sinusoidal_at

    spec = dataclasses.replace(SPEC, sentence_a="你喜欢她们", views=("positional",))
    figure = panels("positional", spec, models)["embedding-pe"].figure
    loaded = models.model(spec)
    d = loaded.model.config.d_model
    ids = torch.tensor(loaded.src_tokenizer.encode(spec.sentence_a).ids)
    tokens = (loaded.model.src_embed.token.weight[ids].double() * math.sqrt(d)).cpu().numpy()
    pe = sinusoidal_at(torch.arange(len(ids)), d).numpy()
    top = max(np.abs(tokens).max(), np.abs(pe).max(), np.abs(tokens + pe).max())
    assert max(np.abs(tokens).max(), np.abs(pe).max()) < top * (1 - 1e-3)  # the premise: the sum holds the largest
    axis = figure.layout.coloraxis
    assert axis.cmax == pytest.approx(top, rel=1e-5) and axis.cmin == pytest.approx(-top, rel=1e-5)
