"""Attention masks. One convention everywhere: boolean, True = this query MAY attend to this key.

Masks broadcast to (B, H, Tq, Tk). Every mask this package makes, takes or keeps in a trace is this
kind. Where it is used, "not allowed" becomes -inf in the scores (masked_fill(~mask, -inf) in
model/attention.py, the additive bias of kernel_mask below): eq. 1's masking, not a second
convention. Only torch.nn.MultiheadAttention's and nn.Transformer's masks mean True = blocked;
they are flipped at that boundary (model/reference.py, the tests), never stored flipped.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


def padding_mask(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """(B, T) token ids -> (B, 1, 1, T): True where the KEY is a real token, False where it is padding."""
    if ids.dim() != 2:
        raise ValueError(f"padding_mask expects ids of shape (batch, length), got {tuple(ids.shape)}")
    return (ids != pad_id)[:, None, None, :]  # (B, 1, 1, Tk)


def causal_mask(size: int, device: torch.device | str | None = None) -> torch.Tensor:
    """(1, 1, T, T) look-ahead mask: query i may attend to keys j <= i (no peeking at the future).

    §3.2.3: the decoder's illegal (leftward-flowing) connections are masked out, -inf in eq. 1's softmax.
    """
    if not isinstance(size, int) or size < 1:
        raise ValueError(f"causal_mask size must be a positive integer, got {size!r}")
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()[None, None]  # (1, 1, T, T)


def combine_masks(*masks: torch.Tensor | None) -> torch.Tensor | None:
    """Logical AND of "may attend" masks (padding AND causal); None means "no restriction"."""
    result = None
    for mask in masks:
        if mask is None:
            continue
        result = mask if result is None else result & mask
    return result


def check_mask(mask: torch.Tensor | None, shape: tuple[int, int, int, int]) -> torch.Tensor | None:
    """Validate that a mask is boolean and broadcasts to shape = (B, H, Tq, Tk)."""
    if mask is None:
        return None
    if mask.dtype != torch.bool:
        raise ValueError(f"mask must be boolean (True = may attend), got dtype {mask.dtype}")
    if mask.dim() > 4:
        raise ValueError(f"mask has {mask.dim()} dimensions; at most 4 (B, H, Tq, Tk) are allowed")
    for m, s in zip(reversed(mask.shape), reversed(shape), strict=False):  # from the last dim on
        if m != s and m != 1:
            if s == 1:
                raise ValueError(f"mask of shape {tuple(mask.shape)} would enlarge scores of shape {shape}")
            raise ValueError(
                f"mask of shape {tuple(mask.shape)} does not broadcast to (B, H, Tq, Tk) = {shape}; "
                "build it with padding_mask(ids, pad_id) or causal_mask(T)"
            )
    return mask


def fully_masked_rows(mask: torch.Tensor) -> torch.Tensor:
    """(…, Tq, 1) True where a query row may attend to no key at all."""
    return ~mask.any(dim=-1, keepdim=True)  # (…, Tq, Tk) -> (…, Tq, 1)


@dataclass(frozen=True)
class KernelMask:
    """A mask checked ONCE (at a stack's boundary), in the form the fused kernel takes.

    bias is the additive form of "masked scores are -inf" (eq. 1): 0 where a query may attend,
    -inf where it may not, added to Q K^T / sqrt(d_k) inside F.scaled_dot_product_attention.
    It is None when every key may be attended (e.g. a padding mask of a sentence with no padding),
    so the kernel skips the addition. empty marks rows with no allowed key (set to 0 after the
    kernel, which may give NaN there); None when there is no such row.
    """

    bias: torch.Tensor | None  # float, broadcasts to (B, H, Tq, Tk); None = attend everywhere
    empty: torch.Tensor | None  # bool (…, Tq, 1); None = every row has a key to attend


NO_MASK = KernelMask(None, None)


def kernel_mask(
    mask: torch.Tensor | KernelMask | None, shape: tuple[int, int, int, int], dtype: torch.dtype
) -> KernelMask:
    """Validate a boolean mask for scores of shape (B, H, Tq, Tk) and convert it once for all layers.

    A KernelMask passes through unchanged (it was checked where it was made).
    """
    if isinstance(mask, KernelMask):
        return mask
    mask = check_mask(mask, shape)
    if mask is None or bool(mask.all()):
        return NO_MASK
    empty = fully_masked_rows(mask)
    # the mask's own shape, broadcasting to (B, H, Tq, Tk): 0 where allowed, -inf where masked (eq. 1)
    bias = torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill_(~mask, float("-inf"))
    return KernelMask(bias, empty if bool(empty.any()) else None)
