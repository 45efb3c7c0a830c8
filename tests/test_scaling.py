"""Why ÷√d_k (§3.2.1): view 5 shows the weights softmax would give the raw scores. Those weights are
F.scaled_dot_product_attention's with scale=1 and softmax(q·k) in closed form; the forward pass
still uses eq. 1's 1/√d_k; the figure draws them where they are, and the view's numbers agree."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import viz
from lab.compute import load_model
from lab.spec import FigureSpec
from lab.views import Models, build_view
from model.analysis import head_arrays, record, unscaled_weights
from model.attention import AttentionRecord

B, H, TQ, TK, DK = 2, 3, 4, 6, 16  # distinct sizes: a wrong axis cannot hide


def make_record(seed: int = 0) -> AttentionRecord:
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, H, t, DK, generator=g, dtype=torch.float64) * 2 for t in (TQ, TK, TK))
    mask = torch.rand(B, 1, TQ, TK, generator=g) > 0.3
    mask[:, :, :, 0] = True  # every row keeps a key...
    mask[1, 0, 2] = False  # ...but this one: no key at all
    return AttentionRecord(q, k, v, mask)


def test_unscaled_weights_are_sdpa_with_scale_one_and_softmax_of_the_raw_scores():
    rec = make_record()
    u = rec.unscaled_weights  # (B, H, TQ, TK)
    empty = ~rec.allowed.any(-1)  # (B, H, TQ) rows with no allowed key
    assert empty.sum() == H  # row (1, :, 2)
    ref = F.scaled_dot_product_attention(rec.q, rec.k, rec.v, attn_mask=rec.mask, scale=1.0)
    torch.testing.assert_close((u @ rec.v)[~empty], ref[~empty], atol=1e-10, rtol=0)
    closed = torch.softmax((rec.q @ rec.k.transpose(-2, -1)).masked_fill(~rec.allowed, -math.inf), -1)
    torch.testing.assert_close(u[~empty], closed[~empty], atol=1e-12, rtol=0)
    assert torch.all(u[~rec.allowed] == 0)  # masked: exactly 0
    assert torch.all(u[empty] == 0)  # no key: all-zero weights, never NaN
    # the forward pass's weights keep eq. 1's 1/sqrt(d_k), and differ from these
    scaled = F.scaled_dot_product_attention(rec.q, rec.k, rec.v, attn_mask=rec.mask)
    torch.testing.assert_close((rec.weights @ rec.v)[~empty], scaled[~empty], atol=1e-10, rtol=0)
    assert (u - rec.weights).abs().max() > 0.1
    # without the scaling softmax is peakier: every row's largest weight is at least as large
    live = ~empty
    assert torch.all(u.amax(-1)[live] >= rec.weights.amax(-1)[live] - 1e-12)


def test_one_heads_unscaled_weights_pick_the_batch_row_and_head():
    rec = make_record(1)
    for b, h in [(0, 2), (1, 1)]:
        np.testing.assert_array_equal(unscaled_weights(rec, b, h), rec.unscaled_weights[b, h].numpy())
    with pytest.raises(ValueError, match="head 3 does not exist"):
        unscaled_weights(rec, 0, 3)


def test_query_bars_draw_the_unscaled_weights_over_the_weights_and_skip_masked_keys():
    s = np.array([6.0, -2.0, 3.0, 1.0, -np.inf])
    mask = np.isfinite(s)
    scaled = s / 4
    w = np.where(mask, np.exp(scaled - scaled[mask].max()), 0)
    w /= w.sum()
    u = np.where(mask, np.exp(s - s[mask].max()), 0)
    u /= u.sum()
    fig = viz.query_bars(s, scaled, w, key_labels=list("abcde"), mask=mask, unscaled_weights=u)
    (lines,) = [t for t in fig.data if (t.meta or {}).get("role") == "unscaled_weights"]
    assert list(lines.x) == [0, 1, 2, 3]  # no line for the masked key
    np.testing.assert_allclose(np.asarray(lines.y, dtype=float), u[:4], rtol=1e-6)
    assert lines.yaxis == "y3"  # on the weights' panel
    note = " ".join(a.text for a in fig.layout.annotations if a.name == "notes")
    plain = re.sub(r"<[^<>]*>", "", note)  # as it reads: "÷√dk" drawn with a subscript k
    assert f"largest weight {w.max():.3g}; without ÷√dk it would be {u.max():.3g}" in plain
    plain = viz.query_bars(s, scaled, w, key_labels=list("abcde"), mask=mask)
    assert not [t for t in plain.data if (t.meta or {}).get("role") == "unscaled_weights"]
    with pytest.raises(ValueError, match="unscaled_weights has 3 keys"):
        viz.query_bars(s, scaled, w, key_labels=None, unscaled_weights=u[:3])


@pytest.mark.parametrize("block", ["encoder self", "decoder self", "cross"])
def test_the_query_views_unscaled_weights_are_the_softmax_of_its_raw_scores(block):
    spec = FigureSpec(sentence_a="我爱我家", sentence_b="我家爱我", d_model=32, n_heads=2, n_layers=2, d_ff=32,
                      views=("query",), query=2, head=1, layer=1, block=block)
    models = Models(load_model)
    panel = {p.key: p for p in build_view("query", spec, models).panels}["query-bars"]
    table = panel.table
    score, allowed = table["score"].to_numpy(), table["may attend"].to_numpy()
    e = np.where(allowed, np.exp(score - score[allowed].max()), 0.0)
    np.testing.assert_allclose(table["weight without ÷√d_k"].to_numpy(), e / e.sum(), atol=1e-6)
    if block == "decoder self":
        assert not allowed.all()  # the look-ahead mask: future keys get no weight either way
    # the caption's variance is this head's raw scores' over every allowed cell
    a = head_arrays(record(models.run(spec).trace, block, 1), 0, 1)
    raw = a["scores"][a["allowed"]]
    d_k = spec.d_model // spec.n_heads
    assert f"variance d_k (here {d_k})" in panel.caption
    assert f"variance {raw.var():.3g}; its scaled scores, {raw.var() / d_k:.3g}" in panel.caption
    (lines,) = [t for t in panel.figure.data if (t.meta or {}).get("role") == "unscaled_weights"]
    np.testing.assert_allclose(np.asarray(lines.y, float), table["weight without ÷√d_k"][allowed], rtol=1e-5)
