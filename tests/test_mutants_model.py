"""Tests written to kill the mutants of the model's maths that the rest of the suite let through.

Each test names the bug it catches. Every expectation comes from torch's own modules (with our
weights copied in), from torch's functional ops written out step by step, or from closed-form maths.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from model import MultiHeadAttention, Transformer, TransformerConfig, causal_mask, padding_mask
from model.analysis import masks_for, match_permutation, order_report, record, traced_forward
from model.layers import LayerNorm, Residual
from model.positional import offset_dot_products, sinusoidal_at, sinusoidal_encoding
from model.reference import copy_attention, copy_norm

B, H, TQ, TK, D = 3, 4, 5, 7, 24  # distinct sizes: a wrong axis cannot hide
PAD, BOS, EOS = 0, 1, 2


def small_config(**kw) -> TransformerConfig:
    base = dict(src_vocab_size=40, tgt_vocab_size=37, d_model=32, n_heads=4, n_layers=2, d_ff=64, dropout=0.0)
    base.update(kw)
    return TransformerConfig(**base)


# --- attention: the untraced path, whatever the fused kernel does with a row that has no key ---------------


def classic_sdpa(q, k, v, attn_mask=None, dropout_p=0.0, **kwargs):
    """softmax(Q K^T / sqrt(d_k) + bias) V written out, as torch's docs give it and as older or other
    kernels compute it: a row whose bias is -inf everywhere comes out NaN (softmax of all -inf)."""
    assert dropout_p == 0.0 and not kwargs
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if attn_mask is not None:
        scores = scores + attn_mask
    return torch.softmax(scores, dim=-1) @ v


def test_untraced_path_zeroes_a_row_with_no_key_even_where_the_kernel_gives_nan(monkeypatch):
    """Kills: the fused path's masked_fill(mask.empty, 0) dropped (model/attention.py, attend). torch 2.13's CPU
    kernel happens to return 0 on such a row, so only a kernel that gives NaN shows the difference."""
    torch.manual_seed(0)
    ours = MultiHeadAttention(D, H).eval()
    q, kv = torch.randn(B, TQ, D), torch.randn(B, TK, D)
    mask = torch.ones(B, 1, TQ, TK, dtype=torch.bool)
    mask[1, 0, 2] = False  # query 2 of sentence 1 may attend to nothing
    bias = torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))
    assert torch.isnan(classic_sdpa(q[:, None], kv[:, None], kv[:, None], bias)).any()  # the kernel's NaN is real
    with torch.no_grad():
        traced, rec = ours(q, kv, kv, mask=mask)
        monkeypatch.setattr(F, "scaled_dot_product_attention", classic_sdpa)
        fused = ours(q, kv, kv, mask=mask, return_trace=False)  # cross-attention path
        fused_self = ours(q, mask=mask[..., :TQ], return_trace=False)  # self-attention path
        traced_self, _ = ours(q, mask=mask[..., :TQ])
    assert not torch.isnan(fused).any() and not torch.isnan(fused_self).any()
    torch.testing.assert_close(fused, traced, atol=1e-5, rtol=0)
    torch.testing.assert_close(fused_self, traced_self, atol=1e-5, rtol=0)
    # the empty row gets no value at all: W^O 0 + b^O
    torch.testing.assert_close(fused[1, 2], ours.w_o.bias, atol=1e-6, rtol=0)
    assert torch.all(rec.weights[1, :, 2] == 0)


def test_value_defaults_to_the_key_as_in_torch_multihead_attention():
    """Kills: `value = query if value is None` (the docstring: key/value (B, Tk, d_model), value = key)."""
    torch.manual_seed(1)
    ours = MultiHeadAttention(D, H).eval()
    theirs = copy_attention(ours, nn.MultiheadAttention(D, H, batch_first=True)).eval()
    q, kv = torch.randn(B, TQ, D), torch.randn(B, TK, D)
    with torch.no_grad():
        want, _ = theirs(q, kv, kv)
        traced, _ = ours(q, kv)
        fused = ours(q, kv, return_trace=False)
    torch.testing.assert_close(traced, want, atol=1e-5, rtol=0)
    torch.testing.assert_close(fused, want, atol=1e-5, rtol=0)


# --- dropout in training (§5.4): on the attention weights and on every sub-layer's output --------------------


def split(x: torch.Tensor) -> torch.Tensor:
    return x.view(x.size(0), x.size(1), H, D // H).transpose(1, 2)  # (B, T, D) -> (B, H, T, d_k)


def merge(x: torch.Tensor) -> torch.Tensor:
    return x.transpose(1, 2).reshape(x.size(0), x.size(2), D)  # (B, H, T, d_k) -> (B, T, D)


@pytest.mark.parametrize("trace", [True, False])
def test_attention_dropout_drops_attention_weights_in_training_only(trace):
    """Kills: no attention dropout in training, on the fused path (dropout_p=0) or on the traced path
    (weights @ v). The reference draws the same random numbers: F.dropout on softmax(QK^T/sqrt(d_k)), or
    F.scaled_dot_product_attention with dropout_p, after the same seed."""
    p = 0.4
    torch.manual_seed(2)
    ours = MultiHeadAttention(D, H, dropout=p).train()
    x = torch.randn(B, TK, D)
    with torch.no_grad():
        q, k, v = split(ours.w_q(x)), split(ours.w_k(x)), split(ours.w_v(x))
        torch.manual_seed(7)
        got = ours(x, return_trace=True)[0] if trace else ours(x, return_trace=False)
        torch.manual_seed(7)
        if trace:
            weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(D // H), dim=-1)
            context = F.dropout(weights, p, training=True) @ v
        else:
            context = F.scaled_dot_product_attention(q, k, v, dropout_p=p)
        want = ours.w_o(merge(context))
        undropped = ours.w_o(merge(F.scaled_dot_product_attention(q, k, v)))
        torch.testing.assert_close(got, want, atol=1e-5, rtol=0)
        assert (got - undropped).abs().max() > 1e-2  # dropout did change the output
        ours.eval()  # and in eval it is off: eq. 1 exactly, on both paths
        torch.testing.assert_close(ours(x, return_trace=trace)[0] if trace else ours(x, return_trace=False),
                                   undropped, atol=1e-5, rtol=0)


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_residual_dropout_drops_the_sublayer_output_in_training(norm):
    """Kills: Residual without its dropout in training (post-norm LayerNorm(x + Sublayer(x)), or pre-norm
    x + Sublayer(LayerNorm(x))). The reference is nn.LayerNorm with our weights and F.dropout after the
    same seed: post LayerNorm(x + Dropout(f(x))), pre x + Dropout(f(LayerNorm(x)))."""
    p = 0.5
    torch.manual_seed(3)
    res = Residual(D, p, norm, 1e-5).train()
    with torch.no_grad():
        res.norm.weight.normal_(1.0, 0.5)
        res.norm.bias.normal_(0.0, 0.5)
    ln = nn.LayerNorm(D)
    copy_norm(res.norm, ln)
    f = nn.Linear(D, D)
    x = torch.randn(B, TK, D)
    with torch.no_grad():
        torch.manual_seed(11)
        got, extra = res(x, lambda h: (f(h), "extra"))
        torch.manual_seed(11)
        if norm == "post":
            want = ln(x + F.dropout(f(x), p, training=True))
            plain = ln(x + f(x))
        else:
            want = x + F.dropout(f(ln(x)), p, training=True)
            plain = x + f(ln(x))
        assert extra == "extra"
        torch.testing.assert_close(got, want, atol=1e-5, rtol=0)
        assert (got - plain).abs().max() > 1e-2
        res.eval()
        torch.testing.assert_close(res(x, lambda h: (f(h), None))[0], plain, atol=1e-5, rtol=0)


# --- positional encoding: PE(i) . PE(i + k) -------------------------------------------------------------------


@pytest.mark.parametrize("d_model", [16, 128])
def test_offset_dot_products_are_the_tables_dot_products(d_model):
    """Kills: offset_dot_products averaging (or otherwise mis-summing) the cosines. The view draws it as
    PE(i) . PE(i + k): check it against the table itself, at several i, and against sum_i cos(omega_i k)."""
    offsets = torch.arange(-30, 31, dtype=torch.float64)
    got = offset_dot_products(offsets, d_model)
    pe = sinusoidal_at(torch.arange(0, 200), d_model)  # (200, d) float64
    for i in (40, 77, 120):
        table = torch.stack([pe[i] @ pe[i + int(k)] for k in offsets])
        torch.testing.assert_close(got, table, atol=1e-9, rtol=0)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    closed = torch.cos(offsets[:, None] / 10000 ** (two_i / d_model)).sum(-1)
    torch.testing.assert_close(got, closed, atol=1e-9, rtol=0)
    assert got[30].item() == pytest.approx(d_model / 2)  # offset 0: |PE(i)|^2 = d/2 pairs of sin^2 + cos^2


# --- embeddings: the [PAD] row ---------------------------------------------------------------------------------


@pytest.mark.parametrize("positional", ["sinusoidal", "none"])
def test_a_pad_token_embeds_to_the_positional_encoding_alone(positional):
    """Kills: the [PAD] embedding row not zeroed at initialisation (config: its row is kept at zero), which
    nn.Embedding(padding_idx=...) guarantees and _init_weights' normal_ would otherwise overwrite."""
    torch.manual_seed(4)
    model = Transformer(small_config(positional=positional, pad_id=PAD)).eval()
    ids = torch.tensor([[PAD, 5, PAD, 7, PAD]])
    for embed in (model.src_embed, model.tgt_embed):
        assert torch.all(embed.token.weight[PAD] == 0)
        with torch.no_grad():
            out = embed(ids)[0]  # (T, d_model)
        pe = sinusoidal_encoding(5, 32) if positional == "sinusoidal" else torch.zeros(5, 32)
        torch.testing.assert_close(out[ids[0] == PAD], pe[ids[0] == PAD], atol=0, rtol=0)
        assert (out[ids[0] != PAD] - pe[ids[0] != PAD]).abs().max() > 1e-2  # real tokens do add an embedding


# --- greedy decoding --------------------------------------------------------------------------------------------


def model_with_early_eos(n: int = 8, seed: int = 0):
    """A random model and n sources where about half the rows emit [EOS] first and the rest go on.

    [PAD] is never predicted (a trained model does not), and the [EOS] bias sits midway between the
    rows' first-step margins, so the batch holds rows that finish at step 1 and rows that do not."""
    torch.manual_seed(seed)
    model = Transformer(small_config(max_len=16)).eval()
    lengths = [6, 4, 5, 6, 3, 6, 5, 6][:n]
    src = torch.full((n, max(lengths)), PAD)
    for r, length in enumerate(lengths):
        src[r, :length] = torch.randint(3, 40, (length,))
    with torch.no_grad():
        model.generator.bias[PAD] = -1e4
        margins = []
        for r, length in enumerate(lengths):  # each source alone, unpadded
            s, ys = src[r : r + 1, :length], torch.full((1, 1), BOS)
            logits = model(s, ys, model.src_mask(s), model.tgt_mask(ys))[0, -1]
            margins.append((logits.masked_fill(torch.arange(37) == EOS, -math.inf).max() - logits[EOS]).item())
        ordered = sorted(margins)
        model.generator.bias[EOS] += (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    return model, src, lengths


def test_greedy_rows_stop_at_their_own_eos_and_match_decoding_each_source_alone():
    """Kills: finished rows that keep generating after their [EOS] (no [PAD] fill), and a batch that stops
    when ANY row finishes. Each row must be exactly what greedy decoding of its source alone gives."""
    model, src, lengths = model_with_early_eos()
    ys = model.greedy_decode(src, BOS, EOS, max_new_tokens=12)
    finished_at = []
    for r, length in enumerate(lengths):
        row = ys[r].tolist()
        assert row[0] == BOS
        alone = model.greedy_decode(src[r : r + 1, :length], BOS, EOS, max_new_tokens=12)[0].tolist()
        if EOS in row:
            end = row.index(EOS) + 1
            assert all(t == PAD for t in row[end:]), (r, row)  # nothing after [EOS] but padding
            finished_at.append(end)
        else:
            end = len(row)
        assert row[:end] == alone, (r, row, alone)
    assert finished_at and min(finished_at) < ys.size(1)  # the test's premise: a row finished early ...
    assert any(EOS not in ys[r, : min(finished_at)].tolist() for r in range(len(lengths)))  # ... others went on
    # each step is the argmax of the teacher-forced logits of the prefix so far
    for r, length in enumerate(lengths):
        row = ys[r : r + 1]
        s = src[r : r + 1, :length]
        with torch.no_grad():
            logits = model(s, row[:, :-1], model.src_mask(s), model.tgt_mask(row[:, :-1]))[0]
        steps = (row[0, 1:] != PAD).nonzero().flatten()
        assert torch.equal(logits.argmax(-1)[steps], row[0, 1:][steps])


def test_greedy_output_fits_the_model_and_stops_after_max_len_minus_one_tokens():
    """Kills: the length limit raised to max_len. demo.py: "stops at [EOS] or after config.max_len - 1
    tokens", so [BOS] + output is at most max_len ids: a sequence the decoder can read back in one pass."""
    torch.manual_seed(5)
    max_len = 7
    model = Transformer(small_config(max_len=max_len)).eval()
    with torch.no_grad():
        model.generator.bias[EOS] = -1e4  # never finishes: only the length limit stops it
    src = torch.randint(3, 40, (2, 5))
    for budget, want in ((3, 4), (max_len - 1, max_len), (50, max_len)):
        ys = model.greedy_decode(src, BOS, EOS, max_new_tokens=budget)
        assert ys.shape == (2, want), budget
        with torch.no_grad():
            logits = model(src, ys, model.src_mask(src), model.tgt_mask(ys))  # the whole output, read back
        assert logits.shape == (2, want, 37)


def test_greedy_never_writes_pad_or_bos_even_where_they_score_highest():
    """A [PAD] written mid-sentence would read as a finished row's padding (masked as a key at the next step), a
    second [BOS] as a new start: each step is the argmax over the other tokens, whatever [PAD] and [BOS] score."""
    torch.manual_seed(7)
    model = Transformer(small_config(max_len=10)).eval()
    with torch.no_grad():
        model.generator.bias[PAD] = 1e4  # unguarded, every step would write [PAD] ...
        model.generator.bias[BOS] = 1e3  # ... and, were [PAD] barred alone, [BOS]
        model.generator.bias[EOS] = -1e4  # only the length limit stops it: every step is checked
    src = torch.randint(3, 40, (3, 6))
    ys = model.greedy_decode(src, BOS, EOS, max_new_tokens=9)
    assert ys.shape == (3, 10) and (ys[:, 0] == BOS).all()
    assert not ((ys[:, 1:] == PAD) | (ys[:, 1:] == BOS)).any(), ys
    with torch.no_grad():
        logits = model(src, ys[:, :-1], model.src_mask(src), model.tgt_mask(ys[:, :-1]))  # (3, 9, 37)
    assert (logits.argmax(-1) == PAD).all()  # the premise: PAD scores highest at every step
    logits[..., [PAD, BOS]] = -math.inf
    assert torch.equal(logits.argmax(-1), ys[:, 1:])  # the best of the rest, step by step


# --- the app's mask modes and order reports -----------------------------------------------------------------------


def test_every_mask_mode_but_none_hides_source_padding_from_cross_attention():
    """Kills: masks_for's "paper" mode (or another) leaving cross-attention unmasked: decoder queries must
    never attend to [PAD] keys of the source (eq. 1: weight exactly 0), and each row still sums to 1."""
    torch.manual_seed(6)
    model = Transformer(small_config(n_heads=2)).eval()
    src = torch.tensor([[5, 6, 7, 8, 9], [9, 10, 11, PAD, PAD]])
    tgt = torch.tensor([[BOS, 5, 6, 7], [BOS, 9, PAD, PAD]])
    pad_keys = (src == PAD)[:, None, None, :].expand(2, 2, 4, 5)  # (B, H, Tt, Ts)
    for mode in ("paper", "padding", "look-ahead", "none"):
        m = masks_for(model, src, tgt, mode)
        trace = traced_forward(model, src, tgt, mode)
        for layer in range(2):
            w = record(trace, "cross", layer).weights
            torch.testing.assert_close(w.sum(-1), torch.ones(2, 2, 4), atol=1e-5, rtol=0)
            if mode == "none":
                assert m.cross is None and torch.all(w[pad_keys] > 0)
            else:
                assert torch.equal(m.cross.expand(2, 1, 4, 5), padding_mask(src, PAD).expand(2, 1, 4, 5))
                assert torch.all(w[pad_keys] == 0), (mode, layer)
    # and the record's context is F.scaled_dot_product_attention's under the source padding mask
    rec = record(traced_forward(model, src, tgt, "paper"), "cross", 1)
    want = F.scaled_dot_product_attention(rec.q, rec.k, rec.v, attn_mask=padding_mask(src, PAD))
    torch.testing.assert_close(rec.context, want, atol=1e-5, rtol=0)


def test_repeated_tokens_are_matched_in_order_so_a_sentence_is_its_own_identity():
    """Kills: match_permutation pairing repeats last-first. Documented: the k-th occurrence in b goes with the
    k-th in a. With PE the matching changes the numbers: a sentence compared with itself must be the identity
    permutation, with zero difference, also when a token repeats."""
    a = list("我爱我家我")
    assert match_permutation(a, a) == list(range(len(a)))
    b = list("家我爱我我")
    perm = match_permutation(a, b)
    assert [a[i] for i in perm] == b
    for token in set(b):  # each token's occurrences in b take a's occurrences in increasing order
        assigned = [perm[i] for i, t in enumerate(b) if t == token]
        assert assigned == [i for i, t in enumerate(a) if t == token]
    torch.manual_seed(0)
    model = Transformer(small_config(positional="sinusoidal", src_vocab_size=30)).eval()
    ids = [5, 6, 5, 7, 5]  # repeats, with PE: each occurrence has its own output
    report = order_report(model, ids, ids)
    assert report.perm == list(range(5))
    assert report.equivariant is True and report.max_abs_diff == 0.0
    assert report.attention_max_abs_diff == 0.0


# --- sanity: this file's references are eq. 1 with our own modules ---------------------------------------------


def test_the_references_above_are_torch_multihead_attention():
    """split/merge/classic_sdpa, used as references above, equal nn.MultiheadAttention on our weights (causal)."""
    torch.manual_seed(8)
    ours = MultiHeadAttention(D, H).eval()
    theirs = copy_attention(ours, nn.MultiheadAttention(D, H, batch_first=True)).eval()
    x = torch.randn(B, TK, D)
    mask = causal_mask(TK)
    bias = torch.zeros(1, 1, TK, TK).masked_fill(~mask, float("-inf"))
    with torch.no_grad():
        want, _ = theirs(x, x, x, attn_mask=~mask[0, 0])
        got = ours.w_o(merge(classic_sdpa(split(ours.w_q(x)), split(ours.w_k(x)), split(ours.w_v(x)), bias)))
    torch.testing.assert_close(got, want, atol=1e-5, rtol=0)
    ln = LayerNorm(D)
    ref = nn.LayerNorm(D)
    copy_norm(ln, ref)
    torch.testing.assert_close(ln(x), ref(x), atol=1e-5, rtol=0)
