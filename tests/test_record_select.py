"""AttentionRecord.select: one (batch row, head) derives exactly the full record's numbers."""

import numpy as np
import pytest
import torch

from model.analysis import head_arrays
from model.attention import AttentionRecord
from model.masks import causal_mask, combine_masks, padding_mask


@pytest.mark.parametrize("kind", ["none", "padding", "padding+causal", "2d"])
def test_select_matches_the_full_record_for_every_row_and_head(kind):
    torch.manual_seed(0)
    B, H, T, d_k = 2, 3, 5, 4
    q, k, v = (torch.randn(B, H, T, d_k) for _ in range(3))
    ids = torch.tensor([[5, 6, 7, 0, 0], [5, 6, 7, 8, 9]])  # row 0 padded
    mask = {
        "none": None,
        "padding": padding_mask(ids, 0),
        "padding+causal": combine_masks(padding_mask(ids, 0), causal_mask(T, ids.device)),
        "2d": causal_mask(T, ids.device).reshape(T, T),
    }[kind]
    full = AttentionRecord(q, k, v, mask)
    steps = full.steps()  # every step at once, each from the one before: the properties' numbers
    assert set(steps) == {"scores", "scaled", "masked", "weights", "context"}
    for name, t in steps.items():
        assert torch.equal(t, getattr(full, name)), (kind, name)
    # and both are eq. 1, as torch computes it: QKᵀ by einsum, the context by F.scaled_dot_product_attention
    # (whose boolean mask is ours: True = may attend)
    torch.testing.assert_close(steps["scores"], torch.einsum("bhqd,bhkd->bhqk", q, k))
    torch.testing.assert_close(steps["context"], torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    for b in range(B):
        for h in range(H):
            one = full.select(b, h)
            assert one.q.shape == (1, 1, T, d_k)
            for name in ("scores", "scaled", "masked", "weights", "context", "allowed"):
                got, want = getattr(one, name)[0, 0], getattr(full, name)[b, h]
                assert torch.equal(got, want), (kind, b, h, name)
            # head_arrays derives each step once, from the one before: the same numbers, bit for bit,
            # as the record's properties (each of which starts again from Q and K)
            arrays = head_arrays(full, b, h)
            for name in ("q", "k", "v", "scores", "scaled", "masked", "weights", "context", "allowed"):
                want = getattr(full, name)[b, h]
                want = want.numpy() if name == "allowed" else want.double().numpy()
                assert np.array_equal(arrays[name], want), (kind, b, h, name)


def test_select_of_a_row_keeps_every_head():
    torch.manual_seed(1)
    B, H, T, d_k = 2, 3, 4, 4
    q, k, v = (torch.randn(B, H, T, d_k) for _ in range(3))
    mask = padding_mask(torch.tensor([[5, 6, 0, 0], [5, 6, 7, 8]]), 0)
    full = AttentionRecord(q, k, v, mask)
    for b in range(B):
        row = full.select(b)
        assert row.q.shape == (1, H, T, d_k)
        assert torch.equal(row.weights[0], full.weights[b])
        assert torch.equal(row.allowed[0], full.allowed[b])
