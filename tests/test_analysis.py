"""The app's computations: mask modes, per-head arrays, permutation matching, order reports."""

import numpy as np
import pytest
import torch

from model import Transformer, TransformerConfig
from model.analysis import (
    all_head_weights,
    head_arrays,
    masks_for,
    match_permutation,
    mean_attention_entropy,
    order_report,
    record,
    traced_forward,
    with_positional,
)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    c = TransformerConfig(src_vocab_size=30, tgt_vocab_size=30, d_model=16, n_heads=4, n_layers=2,
                          d_ff=32, dropout=0.0, positional="sinusoidal")
    return Transformer(c).eval()


SRC = torch.tensor([[5, 6, 7, 8], [9, 10, 0, 0]])
TGT = torch.tensor([[1, 5, 6, 7, 8], [1, 9, 10, 0, 0]])


def test_mask_modes_mask_exactly_what_they_say(model):
    paper = masks_for(model, SRC, TGT, "paper")
    assert paper.encoder.expand(2, 1, 4, 4)[1, 0, :, 2:].any().item() is False  # pads hidden
    assert paper.decoder[0, 0].tolist() == torch.ones(5, 5, dtype=torch.bool).tril().tolist()
    none = masks_for(model, SRC, TGT, "none")
    assert none.encoder is None and none.decoder is None and none.cross is None
    pad = masks_for(model, SRC, TGT, "padding")
    assert pad.decoder.expand(2, 1, 5, 5)[0, 0].all()  # padding only: the future is visible
    look = masks_for(model, SRC, TGT, "look-ahead")
    assert look.encoder.expand(2, 1, 4, 4)[0, 0].tolist() == torch.ones(4, 4, dtype=torch.bool).tril().tolist()
    with pytest.raises(ValueError, match="mask mode"):
        masks_for(model, SRC, TGT, "sideways")


def test_head_arrays_are_the_steps_of_equation_one(model):
    trace = traced_forward(model, SRC, TGT, "paper")
    a = head_arrays(record(trace, "decoder self", 1), batch=1, head=2)
    assert a["scores"].shape == (5, 5) and a["q"].shape == (5, 4)
    np.testing.assert_allclose(a["scores"], a["q"] @ a["k"].T, atol=1e-5)
    np.testing.assert_allclose(a["scaled"], a["scores"] / 2.0, atol=1e-6)  # sqrt(d_k = 4)
    assert np.all(np.isneginf(a["masked"][~a["allowed"]]))
    assert np.all(a["weights"][~a["allowed"]] == 0)
    np.testing.assert_allclose(a["weights"].sum(1), 1.0, atol=1e-6)
    np.testing.assert_allclose(a["context"], a["weights"] @ a["v"], atol=1e-6)
    assert not a["allowed"][0, 1] and not a["allowed"][4, 4]  # future, and a [PAD] key
    with pytest.raises(ValueError, match="head 4 does not exist"):
        head_arrays(record(trace, "cross", 0), head=4)
    with pytest.raises(ValueError, match="layer 2 does not exist"):
        record(trace, "cross", 2)


def test_all_head_weights_and_entropy(model):
    trace = traced_forward(model, SRC, TGT, "paper")
    w = all_head_weights(trace, "cross")
    assert w.shape == (2, 4, 5, 4)
    for b in range(2):  # each batch row its own weights: row 1 is the padded source
        wb = all_head_weights(trace, "cross", batch=b)
        for layer in range(2):
            np.testing.assert_array_equal(wb[layer], record(trace, "cross", layer).weights[b].double().numpy())
    assert not np.array_equal(all_head_weights(trace, "cross", batch=1), w)
    ent = mean_attention_entropy(w)  # bits
    assert ent.shape == (2, 4)
    assert np.all(ent <= np.log2(4) + 1e-9) and np.all(ent >= 0)
    # each row by the definition, −Σ p log₂ p, then the mean over the queries
    want = np.array([[np.mean([-sum(p * np.log2(p) for p in row if p > 0) for row in w[layer, h]])
                      for h in range(4)] for layer in range(2)])
    np.testing.assert_allclose(ent, want, rtol=1e-6)
    uniform, one_hot = np.full((6, 6), 1 / 6), np.eye(6)
    np.testing.assert_allclose(mean_attention_entropy(np.stack([uniform, one_hot])), [np.log2(6), 0.0], atol=1e-12)
    # a fully masked query row (NaN) is left out of the mean, not turned into a number
    half = np.vstack([uniform[:3], np.full((3, 6), np.nan)])
    assert mean_attention_entropy(half) == pytest.approx(np.log2(6))


def test_entropy_leaves_out_a_query_with_no_key_as_the_model_gives_it():
    """The model gives a query row whose every key is masked all-zero weights, never NaN (model/attention.py).
    mean_attention_entropy said such rows were NaN and skipped; an all-zero row came out as 0 bits, "looks at one
    key", and pulled the head's mean down. It is left out, as a NaN row is."""
    from model.attention import AttentionRecord

    torch.manual_seed(2)
    q, k = torch.randn(1, 2, 4, 6), torch.randn(1, 2, 6, 6)
    mask = torch.ones(1, 1, 4, 6, dtype=torch.bool)
    mask[0, 0, 1] = False  # query 1 may attend to no key
    w = AttentionRecord(q, k, torch.zeros_like(k), mask).weights.double().numpy()  # (1, 2, 4, 6)
    assert np.all(w[0, :, 1] == 0) and not np.isnan(w).any()  # the model's own form of "no key"
    kept = w[..., [0, 2, 3], :]  # (1, 2, 3, 6): the queries that have keys
    np.testing.assert_allclose(mean_attention_entropy(w), mean_attention_entropy(kept), rtol=1e-12)
    assert np.isnan(mean_attention_entropy(np.zeros((3, 5)))).all()  # no query has a key: no mean


def test_head_arrays_hand_out_a_copy_of_the_mask_not_the_runs_own(model):
    """The app's runs are cached and shared by every session: writing into a view's array must not
    change the mask the next session draws."""
    trace = traced_forward(model, SRC, TGT, "paper")
    rec = record(trace, "decoder self", 0)
    before = rec.mask.clone()
    allowed = head_arrays(rec, batch=1, head=0)["allowed"]
    allowed[:] = ~allowed
    assert torch.equal(rec.mask, before)


def test_match_permutation_handles_repeats_and_refuses_non_permutations():
    a, b = list("我爱我家"), list("家我爱我")
    perm = match_permutation(a, b)
    assert [a[i] for i in perm] == b and sorted(perm) == [0, 1, 2, 3]
    assert match_permutation(list("你喜欢她"), list("她喜欢你")) == [3, 1, 2, 0]
    assert match_permutation(list("abc"), list("abd")) is None
    assert match_permutation(list("ab"), list("abc")) is None


def layer0_weights(model, ids) -> torch.Tensor:
    """(H, T, T) encoder layer 0's softmax(QKᵀ/√d_k) from its own weights, by hand (no trace, no record)."""
    d = model.config.d_model
    assert model.config.scale_embedding
    with torch.no_grad():
        x = model.src_embed.token(torch.tensor([ids])) * d ** 0.5  # (1, T, d_model), §3.4
        if model.config.positional == "sinusoidal":  # §3.5, in closed form
            pos, i = torch.arange(len(ids))[:, None].double(), torch.arange(0, d, 2).double()
            angle = pos / 10000 ** (i / d)  # (T, d/2)
            x = x + torch.stack([angle.sin(), angle.cos()], dim=-1).reshape(len(ids), d).float()  # sin, cos interleaved
        att = model.encoder.layers[0].self_attn
        H, dk = att.n_heads, att.d_k
        q, k = (w(x).view(1, len(ids), H, dk).transpose(1, 2) for w in (att.w_q, att.w_k))  # (1, H, T, d_k)
        return torch.softmax(q @ k.transpose(-1, -2) / dk ** 0.5, dim=-1)[0]  # (H, T, T)


def test_order_report_permutes_the_attention_matrix_without_pe(model):
    """B = P A permutes the attention matrix: W(B) = P W(A) Pᵀ, i.e. W(B)[i, j] = W(A)[perm[i], perm[j]], in
    every layer and head, without PE; with PE not. A 5-cycle, so P and Pᵀ differ: aligning with the inverse
    permutation, or permuting rows only, would not match."""
    a, b = [5, 6, 7, 8, 9], [6, 7, 8, 9, 5]
    perm = match_permutation(a, b)
    inv = list(np.argsort(perm))
    assert perm != inv
    nope = with_positional(model, "none")
    r = order_report(nope, a, b)
    assert r.attention_permuted is True and r.attention_max_abs_diff <= 1e-6
    for layer in range(2):
        for head in range(4):
            wa, wb = r.attention(layer, head)
            np.testing.assert_allclose(wb, wa[np.ix_(perm, perm)], atol=1e-6)
            assert np.abs(wb - wa[np.ix_(inv, inv)]).max() > 1e-3  # the other direction is not it
            assert np.abs(wb - wa[perm]).max() > 1e-3  # nor rows alone
    # the report's weights are the layer's softmax(QKᵀ/√d_k), computed here by hand
    for m, rep in ((nope, r), (model, order_report(model, a, b))):
        for ids, t in ((a, 0), (b, 1)):
            want = layer0_weights(m, ids).double().numpy()
            got = np.stack([rep.attention(0, h)[t] for h in range(4)])
            np.testing.assert_allclose(got, want, atol=1e-6)
    with_pe = order_report(model, a, b)
    worst = max(np.abs(wb - wa[np.ix_(perm, perm)]).max()
                for layer in range(2) for head in range(4) for wa, wb in [with_pe.attention(layer, head)])
    assert with_pe.attention_permuted is False and with_pe.attention_max_abs_diff == pytest.approx(worst, abs=1e-7)
    assert worst > 1e-3
    causal = order_report(nope, a, b, causal=True)  # the mask leaks order into the weights too
    assert causal.attention_permuted is False
    assert order_report(nope, a, [5, 6, 7, 9, 9]).attention_max_abs_diff is None  # not a reordering


def test_order_report_separates_pe_from_no_pe(model):
    a, b = [5, 6, 7, 8], [8, 6, 7, 5]
    with_pe = order_report(model, a, b)
    assert with_pe.equivariant is False and not with_pe.pooled_equal
    nope = with_positional(model, "none")
    r = order_report(nope, a, b)
    assert r.equivariant and r.pooled_equal and r.max_abs_diff <= 1e-5
    np.testing.assert_allclose(r.aligned_a, r.outputs_a[[3, 1, 2, 0]])
    assert order_report(nope, a, b, causal=True).equivariant is False
    assert order_report(nope, a, [5, 6, 7, 9]).perm is None
    # the twin shares every weight but never changes the cached model
    assert model.config.positional == "sinusoidal"
    torch.testing.assert_close(nope.encoder.layers[0].self_attn.w_q.weight, model.encoder.layers[0].self_attn.w_q.weight)
