"""Masks hide what they should, and order matters only through positional information (FACTS.md)."""

import torch

from model import Transformer, TransformerConfig, causal_mask, combine_masks, padding_mask


def model_with(positional, n_layers=2, seed=0, **kw):
    torch.manual_seed(seed)
    c = TransformerConfig(
        src_vocab_size=50, tgt_vocab_size=45, d_model=32, n_heads=4, n_layers=n_layers, d_ff=64,
        dropout=0.0, positional=positional, **kw,
    )
    return Transformer(c).eval()


def test_mask_helpers_follow_one_convention():
    ids = torch.tensor([[5, 6, 0], [7, 0, 0]])
    pm = padding_mask(ids, 0)
    assert pm.shape == (2, 1, 1, 3) and pm.dtype == torch.bool
    assert pm[0, 0, 0].tolist() == [True, True, False]
    cm = causal_mask(3)
    assert cm.shape == (1, 1, 3, 3)
    assert cm[0, 0].tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    both = combine_masks(pm, cm, None)
    assert both.shape == (2, 1, 3, 3)
    assert both[1, 0].tolist() == [[True, False, False], [True, False, False], [True, False, False]]
    assert combine_masks(None, None) is None


def test_mask_helpers_refuse_what_they_cannot_mean_by_name():
    import pytest

    from model.masks import check_mask

    with pytest.raises(ValueError, match=r"padding_mask expects ids of shape \(batch, length\), got \(3,\)"):
        padding_mask(torch.tensor([5, 6, 0]), 0)  # a sentence without its batch axis
    for size in (0, -1, 2.0):
        with pytest.raises(ValueError, match=f"causal_mask size must be a positive integer, got {size!r}"):
            causal_mask(size)
    with pytest.raises(ValueError, match="mask has 5 dimensions; at most 4"):
        check_mask(torch.ones(1, 1, 1, 2, 2, dtype=torch.bool), (1, 1, 2, 2))


def test_future_tokens_do_not_change_past_outputs():
    model = model_with("sinusoidal")
    src, tgt = torch.randint(1, 50, (2, 6)), torch.randint(1, 45, (2, 7))
    t = 3
    changed = tgt.clone()
    changed[:, t + 1 :] = torch.randint(1, 45, (2, 7 - t - 1))
    a = model(src, tgt, model.src_mask(src), model.tgt_mask(tgt))
    b = model(src, changed, model.src_mask(src), model.tgt_mask(changed))
    torch.testing.assert_close(a[:, : t + 1], b[:, : t + 1], atol=1e-6, rtol=0)
    assert (a[:, t + 1 :] - b[:, t + 1 :]).abs().max() > 1e-3


def test_pad_tokens_do_not_change_real_token_outputs():
    model = model_with("sinusoidal")
    src = torch.tensor([[4, 9, 11, 0, 0], [3, 8, 2, 6, 0]])
    mask = model.src_mask(src)
    other = src.clone()
    other[src == 0] = torch.tensor([17, 23, 31])  # what sits under the pad positions changes
    a = model.encode(src, mask)
    b = model.encode(other, mask)  # ... with the same padding mask
    real = src != 0
    torch.testing.assert_close(a[real], b[real], atol=1e-6, rtol=0)
    tgt = torch.randint(1, 45, (2, 4))
    da = model.decode(tgt, a, mask, model.tgt_mask(tgt))
    db = model.decode(tgt, b, mask, model.tgt_mask(tgt))
    torch.testing.assert_close(da, db, atol=1e-6, rtol=0)


def permuted(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    while True:
        perm = torch.randperm(n, generator=g)
        if not torch.equal(perm, torch.arange(n)):
            return perm


def test_encoder_without_pe_is_permutation_equivariant_and_pooling_invariant():
    model = model_with("none")
    src = torch.randint(1, 50, (1, 7))
    for seed in range(3):
        perm = permuted(7, seed)
        out = model.encode(src)
        out_p = model.encode(src[:, perm])
        assert (out_p - out[:, perm]).abs().max() <= 1e-5  # f(Px) = P f(x)
        assert (out_p.mean(1) - out.mean(1)).abs().max() <= 1e-5  # mean pooling forgets order
        assert (out_p - out).abs().max() > 1e-3  # outputs move with their tokens
        # the attention matrix becomes P A P^T
        _, t = model.encode(src, return_trace=True)
        _, tp = model.encode(src[:, perm], return_trace=True)
        w, wp = t.layers[0].self_attn.weights, tp.layers[0].self_attn.weights
        torch.testing.assert_close(wp, w[:, :, perm][:, :, :, perm], atol=1e-6, rtol=0)


def test_encoder_with_sinusoidal_pe_sees_order():
    model = model_with("sinusoidal")
    src = torch.randint(1, 50, (1, 7))
    perm = permuted(7)
    out, out_p = model.encode(src), model.encode(src[:, perm])
    assert (out_p - out[:, perm]).abs().max() > 1e-2
    assert (out_p.mean(1) - out.mean(1)).abs().max() > 1e-3


def test_causal_attention_without_pe_still_sees_order():
    # the look-ahead mask itself leaks position (Haviv et al. 2022)
    src = torch.randint(1, 50, (1, 6))
    perm = torch.tensor([2, 0, 1, 4, 3, 5])  # shuffles earlier tokens, keeps the last one
    for n_layers, last_changes in ((1, False), (2, True)):
        model = model_with("none", n_layers=n_layers, seed=3)
        out = model.encode(src, causal_mask(6))
        out_p = model.encode(src[:, perm], causal_mask(6))
        assert (out_p - out[:, perm]).abs().max() > 1e-3  # not equivariant
        last_delta = (out_p[:, -1] - out[:, -1]).abs().max().item()
        assert (last_delta > 1e-4) is last_changes, (n_layers, last_delta)


def test_encoder_decoder_without_pe_gives_the_same_decoder_output_for_any_source_order():
    model = model_with("none")
    src = torch.randint(1, 50, (1, 6))
    tgt = torch.randint(1, 45, (1, 5))
    logits = model(src, tgt, model.src_mask(src), model.tgt_mask(tgt))
    for seed in range(3):
        p = src[:, permuted(6, seed)]
        logits_p = model(p, tgt, model.src_mask(p), model.tgt_mask(tgt))
        assert (logits_p - logits).abs().max() <= 1e-5
        assert torch.equal(model.greedy_decode(p, 1, 2, 6), model.greedy_decode(src, 1, 2, 6))
    with_pe = model_with("sinusoidal")
    p = src[:, permuted(6)]
    a = with_pe(src, tgt, with_pe.src_mask(src), with_pe.tgt_mask(tgt))
    b = with_pe(p, tgt, with_pe.src_mask(p), with_pe.tgt_mask(tgt))
    assert (a - b).abs().max() > 1e-3


def test_trace_memory_holds_no_quadratic_tensors():
    model = model_with("sinusoidal")
    src, tgt = torch.randint(1, 50, (1, 64)), torch.randint(1, 45, (1, 64))
    with torch.no_grad():
        _, trace = model(src, tgt, model.src_mask(src), model.tgt_mask(tgt), return_trace=True)
    # one float per head per score cell per block would be 6 blocks x 4 heads x 64 x 64 floats
    score_cells = 6 * 4 * 64 * 64 * 4
    assert trace.nbytes() < score_cells
    # and everything derivable is derived identically to the fused forward
    rec = trace.decoder.layers[1].cross_attn
    torch.testing.assert_close(rec.weights.sum(-1), torch.ones(1, 4, 64), atol=1e-5, rtol=0)
