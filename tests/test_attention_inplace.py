"""The traced path's in-place, no-grad steps and its per-mask cache give the same numbers as torch."""

import math

import torch
import torch.nn.functional as F

from model import MultiHeadAttention, causal_mask
from model.attention import attention_weights

B, H, TQ, TK, D = 2, 4, 5, 7, 24  # distinct sizes: a wrong axis cannot hide


def torch_weights(q, k, mask):
    """softmax(Q K^T / sqrt(d_k)) with masked cells at -inf, written out with torch ops; NaN rows -> 0."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1).nan_to_num(0.0)


def test_no_grad_weights_equal_the_autograd_ones_and_torch_including_empty_rows():
    torch.manual_seed(0)
    q = torch.randn(B, H, TQ, 6, requires_grad=True)  # d_k = 6: sqrt(d_k) is not a power of two
    k = torch.randn(B, H, TK, 6, requires_grad=True)
    mask = torch.rand(B, 1, TQ, TK) > 0.4
    mask[1, 0, 3] = False  # a query row with no key at all
    mask[0, 0, :, 0] = True
    with_grad = attention_weights(q, k, mask)
    with torch.no_grad():
        in_place = attention_weights(q, k, mask)
    assert with_grad.requires_grad and not in_place.requires_grad
    torch.testing.assert_close(in_place, with_grad.detach(), atol=0, rtol=0)
    torch.testing.assert_close(in_place, torch_weights(q, k, mask).detach(), atol=1e-6, rtol=1e-5)
    assert torch.all(in_place[1, :, 3] == 0) and not torch.isnan(in_place).any()
    with_grad.square().sum().backward()  # the autograd path still trains q and k
    assert q.grad.abs().sum() > 0 and k.grad.abs().sum() > 0


def test_no_grad_traced_forward_matches_the_fused_kernel_and_the_record():
    torch.manual_seed(1)
    ours = MultiHeadAttention(D, H).eval()
    x = torch.randn(B, TK, D)
    mask = causal_mask(TK)
    with torch.no_grad():
        traced, rec = ours(x, mask=mask, return_trace=True)
        fused = ours(x, mask=mask, return_trace=False)
        ref = F.scaled_dot_product_attention(rec.q, rec.k, rec.v, attn_mask=mask)
        torch.testing.assert_close(traced, fused, atol=1e-5, rtol=0)
        torch.testing.assert_close(rec.context, ref, atol=1e-5, rtol=0)
        # the displayed step-by-step softmax(masked) agrees with the weights the forward used
        torch.testing.assert_close(rec.weights, torch.softmax(rec.masked, dim=-1), atol=1e-6, rtol=1e-5)


def test_a_mask_edited_in_place_is_not_served_from_the_cache():
    torch.manual_seed(2)
    q, k = torch.randn(B, H, TQ, 16), torch.randn(B, H, TK, 16)
    mask = torch.ones(1, 1, TQ, TK, dtype=torch.bool)
    with torch.no_grad():
        before = attention_weights(q, k, mask)
        mask[..., 2:] = False  # same tensor object, new contents
        after = attention_weights(q, k, mask)
    assert torch.all(after[..., 2:] == 0) and torch.all(before[..., 2:] > 0)
    torch.testing.assert_close(after, torch_weights(q, k, mask), atol=1e-6, rtol=1e-5)


def test_power_of_two_sqrt_dk_scales_q_with_bit_identical_scores():
    # d_k = 16: dividing Q by 4 first is exact, so the forward's weights equal the displayed steps' bit for bit
    torch.manual_seed(3)
    q, k = torch.randn(B, H, TQ, 16), torch.randn(B, H, TK, 16)
    mask = causal_mask(TK)[..., :TQ, :]
    with torch.no_grad():
        shown = torch.softmax((q @ k.transpose(-2, -1) / 4.0).masked_fill(~mask, float("-inf")), dim=-1)
        assert torch.equal(attention_weights(q, k, mask), shown)
