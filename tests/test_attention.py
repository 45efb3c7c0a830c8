"""Attention is proven against torch.nn.MultiheadAttention and F.scaled_dot_product_attention."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from model import MultiHeadAttention, SelfAttention, causal_mask, padding_mask
from model.attention import AttentionRecord
from model.reference import copy_attention

# distinct sizes everywhere, so a wrong axis (heads split without transpose, mask on the wrong
# dimension) cannot hide behind equal numbers
B, H, TQ, TK, D = 3, 4, 5, 7, 24


def make_pair(seed=0, bias=True):
    torch.manual_seed(seed)
    ours = MultiHeadAttention(D, H, bias=bias).eval()
    theirs = copy_attention(ours, nn.MultiheadAttention(D, H, batch_first=True)).eval()
    return ours, theirs


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cross_attention_with_padding_mask_equals_torch(seed):
    ours, theirs = make_pair(seed)
    q, kv = torch.randn(B, TQ, D), torch.randn(B, TK, D)
    ids = torch.randint(1, 9, (B, TK))
    ids[0, 5:] = 0  # padding at the end of one row
    ids[2, 3:] = 0
    mask = padding_mask(ids, pad_id=0)  # (B, 1, 1, TK): True = may attend
    out, rec = ours(q, kv, kv, mask=mask)
    ref, ref_w = theirs(q, kv, kv, key_padding_mask=~mask[:, 0, 0], average_attn_weights=False)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=0)
    torch.testing.assert_close(rec.weights, ref_w, atol=1e-5, rtol=0)
    assert rec.weights.shape == (B, H, TQ, TK)


@pytest.mark.parametrize("seed", [0, 1])
def test_causal_self_attention_equals_torch(seed):
    ours, theirs = make_pair(seed)
    x = torch.randn(B, TK, D)
    mask = causal_mask(TK)
    out, rec = ours(x, x, x, mask=mask)
    ref, ref_w = theirs(x, x, x, attn_mask=~mask[0, 0], average_attn_weights=False)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=0)
    torch.testing.assert_close(rec.weights, ref_w, atol=1e-5, rtol=0)


def test_fused_and_traced_paths_agree():
    ours, _ = make_pair(3)
    q, kv = torch.randn(B, TQ, D), torch.randn(B, TK, D)
    mask = torch.rand(B, 1, TQ, TK) > 0.3
    mask[..., 0] = True  # every row keeps at least one key
    traced, rec = ours(q, kv, kv, mask=mask, return_trace=True)
    fused = ours(q, kv, kv, mask=mask, return_trace=False)
    torch.testing.assert_close(traced, fused, atol=1e-5, rtol=0)


def test_distinct_key_and_value_inputs_equal_torch_on_both_paths():
    """K and V from different inputs (torch's MultiheadAttention allows it): the traced path and the
    untraced one (three separate projections, not the stacked [W^K; W^V]) both take V from `value`."""
    ours, theirs = make_pair(10)
    q, k, v = torch.randn(B, TQ, D), torch.randn(B, TK, D), torch.randn(B, TK, D)
    mask = padding_mask(torch.tensor([[1] * TK, [1] * 4 + [0] * (TK - 4), [1] * TK]), 0)
    ref, ref_w = theirs(q, k, v, key_padding_mask=~mask[:, 0, 0], average_attn_weights=False)
    traced, rec = ours(q, k, v, mask=mask)
    fused = ours(q, k, v, mask=mask, return_trace=False)
    torch.testing.assert_close(traced, ref, atol=1e-5, rtol=0)
    torch.testing.assert_close(rec.weights, ref_w, atol=1e-5, rtol=0)
    torch.testing.assert_close(fused, ref, atol=1e-5, rtol=0)
    assert (fused - ours(q, k, k, mask=mask, return_trace=False)).abs().max() > 1e-2  # V is not K here
    with pytest.raises(ValueError, match="must share the batch size, and key and value their length"):
        ours(q, k, v[:, :-1])
    with pytest.raises(ValueError, match="must share the batch size"):
        ours(q[:-1], k, v, return_trace=False)


def test_record_matches_scaled_dot_product_attention():
    ours, _ = make_pair(4)
    q, kv = torch.randn(B, TQ, D), torch.randn(B, TK, D)
    mask = causal_mask(TK)[..., :TQ, :]
    _, rec = ours(q, kv, kv, mask=mask)
    ref = F.scaled_dot_product_attention(rec.q, rec.k, rec.v, attn_mask=mask)
    torch.testing.assert_close(rec.context, ref, atol=1e-5, rtol=0)
    torch.testing.assert_close(rec.scores, torch.einsum("bhqd,bhkd->bhqk", rec.q, rec.k))  # QKᵀ, per head
    torch.testing.assert_close(rec.scaled, torch.einsum("bhqd,bhkd->bhqk", rec.q, rec.k) / math.sqrt(D // H))


def test_values_come_from_w_v_not_w_k():
    # seed 000 computes V with the K projection; then changing W_v would change nothing
    ours, _ = make_pair(5)
    x = torch.randn(B, TQ, D)
    before = ours(x, return_trace=False)
    with torch.no_grad():
        ours.w_v.weight.add_(torch.randn_like(ours.w_v.weight))
    after = ours(x, return_trace=False)
    assert (before - after).abs().max() > 1e-2


@pytest.mark.parametrize("grad", [True, False])
def test_rows_sum_to_one_and_masked_weights_are_exactly_zero(grad):
    """With autograd and without it (the app's runs, where attention_weights masks and softmaxes in place on
    another branch: a mask skipped there alone let this test through)."""
    ours, _ = make_pair(6)
    x = torch.randn(B, TK, D)
    mask = causal_mask(TK)
    with torch.set_grad_enabled(grad):
        _, rec = ours(x, mask=mask)
        w = rec.weights
    assert w.requires_grad is grad
    torch.testing.assert_close(w.sum(-1), torch.ones(B, H, TK), atol=1e-6, rtol=0)
    assert torch.all(w.masked_select(~mask.expand_as(w)) == 0)
    assert torch.all(torch.isinf(rec.masked.masked_select(~mask.expand_as(w))))


def test_fully_masked_row_gives_zero_weights_and_no_nan_on_both_paths():
    ours, _ = make_pair(7)
    q, kv = torch.randn(B, TQ, D), torch.randn(B, TK, D)
    mask = torch.ones(B, 1, TQ, TK, dtype=torch.bool)
    mask[1, 0, 2] = False  # query 2 of batch 1 may attend to nothing
    traced, rec = ours(q, kv, kv, mask=mask)
    fused = ours(q, kv, kv, mask=mask, return_trace=False)
    assert not torch.isnan(traced).any() and not torch.isnan(fused).any()
    assert torch.all(rec.weights[1, :, 2] == 0)
    assert torch.all(rec.context[1, :, 2] == 0)
    torch.testing.assert_close(traced, fused, atol=1e-5, rtol=0)
    # the query still gets the output projection's bias, nothing from any value
    torch.testing.assert_close(traced[1, 2], ours.w_o.bias, atol=1e-6, rtol=0)
    # without autograd (as the app runs) attention_weights works in place on another branch: the same zeros
    with torch.no_grad():
        traced, rec = ours(q, kv, kv, mask=mask)
        assert not torch.isnan(traced).any() and torch.all(rec.weights[1, :, 2] == 0)
        assert not torch.isnan(rec.weights).any() and torch.all(rec.context[1, :, 2] == 0)


@pytest.mark.parametrize("d_k", [16, 256])
def test_scaling_by_sqrt_dk_gives_unit_variance_scores(d_k):
    """§3.2.1: for q, k of independent N(0, 1) components, q·k has variance d_k; the record's scaled
    scores (what the app shows as QKᵀ/√d_k) have variance 1, whatever d_k."""
    torch.manual_seed(0)
    q, k = torch.randn(1, 1, 300, d_k), torch.randn(1, 1, 300, d_k)  # 90,000 (query, key) pairs
    rec = AttentionRecord(q, k, torch.zeros_like(k), None)
    assert rec.scores.var().item() == pytest.approx(d_k, rel=0.1)
    assert rec.scaled.var().item() == pytest.approx(1.0, rel=0.1)


def test_bad_shapes_and_settings_are_value_errors():
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadAttention(10, 3)
    ours, _ = make_pair()
    x = torch.randn(B, TQ, D)
    with pytest.raises(ValueError, match="does not broadcast"):
        ours(x, mask=torch.ones(B, 1, TQ + 1, TQ, dtype=torch.bool))
    with pytest.raises(ValueError, match="boolean"):
        ours(x, mask=torch.ones(1, 1, TQ, TQ))
    with pytest.raises(ValueError, match="d_model"):
        ours(torch.randn(B, TQ, D + 1))


def journey_inputs():
    # seed 002: "Your journey starts with one step", 3-d embeddings
    return torch.tensor(
        [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
         [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]]
    )


def test_self_attention_reproduces_seed_002_numbers():
    torch.manual_seed(123)
    W_query, W_key, W_value = (torch.rand(3, 2) for _ in range(3))
    sa = SelfAttention.from_matrices(W_query, W_key, W_value)
    context, rec = sa(journey_inputs())
    # numbers printed in seed 002 / Raschka's ch. 3 for the 2nd token, "journey"
    torch.testing.assert_close(rec.q[0, 0, 1], torch.tensor([0.4306, 1.4551]), atol=1e-4, rtol=0)
    torch.testing.assert_close(
        rec.scores[0, 0, 1], torch.tensor([1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440]), atol=1e-4, rtol=0
    )
    torch.testing.assert_close(
        rec.weights[0, 0, 1], torch.tensor([0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820]), atol=1e-4, rtol=0
    )
    torch.testing.assert_close(context[1], torch.tensor([0.3061, 0.8210]), atol=1e-4, rtol=0)
    assert context.shape == (6, 2)


def test_self_attention_is_the_one_head_case_of_sdpa():
    torch.manual_seed(1)
    sa = SelfAttention(3, 5, qkv_bias=True)
    x = torch.randn(2, 6, 3)
    ctx, rec = sa(x, mask=causal_mask(6))
    ref = F.scaled_dot_product_attention(
        sa.W_query(x), sa.W_key(x), sa.W_value(x), attn_mask=causal_mask(6)[0]
    )
    torch.testing.assert_close(ctx, ref, atol=1e-6, rtol=0)
    assert rec.n_heads == 1 and sa.W_query.bias is not None


def test_self_attention_takes_a_T_by_T_mask_and_gives_the_same_context_untraced():
    """A (T, T) mask is the (1, 1, T, T) one; return_trace=False returns the context alone, the same
    numbers; x that is not (T, d_in) or (B, T, d_in) is refused by name."""
    torch.manual_seed(2)
    sa = SelfAttention(3, 5)
    x = torch.randn(6, 3)
    ctx, rec = sa(x, mask=causal_mask(6)[0, 0])  # (T, T)
    ref, _ = sa(x, mask=causal_mask(6))  # (1, 1, T, T)
    torch.testing.assert_close(ctx, ref, atol=0, rtol=0)
    assert torch.all(rec.weights[0, 0].triu(1) == 0) and rec.mask.shape == (1, 1, 6, 6)
    untraced = sa(x, mask=causal_mask(6)[0, 0], return_trace=False)
    assert isinstance(untraced, torch.Tensor) and untraced.shape == (6, 5)
    torch.testing.assert_close(untraced, ctx, atol=0, rtol=0)
    for bad in (torch.randn(6, 4), torch.randn(1, 2, 6, 3)):
        with pytest.raises(ValueError, match=r"x must have shape \(T, d_in=3\) or \(B, T, d_in\)"):
            sa(bad)


def test_untraced_path_follows_every_change_of_the_weights():
    # inference keeps [W^Q; W^K; W^V] (and [W^K; W^V]) stacked once; any change must rebuild them
    ours, _ = make_pair(8)
    q, kv = torch.randn(B, TQ, D), torch.randn(B, TK, D)

    def agree():
        with torch.no_grad():
            for args in ((q,), (q, kv, kv)):  # self-attention, cross-attention
                traced, _ = ours(*args, return_trace=True)  # separate W^Q, W^K, W^V: never cached
                torch.testing.assert_close(ours(*args, return_trace=False), traced, atol=1e-5, rtol=0)

    agree()
    for lin in (ours.w_q, ours.w_k, ours.w_v):
        for p in (lin.weight, lin.bias):
            with torch.no_grad():
                p.add_(torch.randn_like(p))  # in place: same tensor, same storage
            agree()
    other = MultiHeadAttention(D, H)
    ours.load_state_dict(other.state_dict())
    agree()
    ours.double()  # replaces every parameter's storage
    q, kv = q.double(), kv.double()
    agree()
    with torch.inference_mode():  # parameters made here have no version counter: no cache
        ours = MultiHeadAttention(D, H).double().eval()
        agree()


def test_untraced_path_trains_every_projection_like_the_traced_one():
    ours, _ = make_pair(9)
    q, kv = torch.randn(B, TQ, D), torch.randn(B, TK, D)
    mask = padding_mask(torch.tensor([[1] * TK, [1] * 4 + [0] * (TK - 4), [1] * TK]), 0)
    for args in ((q,), (q, kv, kv)):
        grads = []
        for trace in (False, True):
            ours.zero_grad()
            out = ours(*args, mask=mask if len(args) > 1 else None, return_trace=trace)
            (out[0] if trace else out).square().sum().backward()
            grads.append({n: p.grad.clone() for n, p in ours.named_parameters()})
        for name, g in grads[1].items():
            assert g.abs().sum() > 0, name
            torch.testing.assert_close(grads[0][name], g, atol=1e-4, rtol=1e-4)
