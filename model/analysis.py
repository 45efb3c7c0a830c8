"""What the app asks of the model: masks by mode, traced runs, order checks, per-head arrays.

Torch in, torch or numpy out; nothing here draws.
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from model.attention import AttentionRecord
from model.masks import causal_mask, combine_masks, padding_mask
from model.transformer import StackTrace, Trace, Transformer

# Which cells each attention block may see, by mode (padding = keys that are [PAD]):
#   paper:      encoder self = padding; decoder self = padding AND look-ahead; cross = padding
#   none:       nothing masked anywhere (pads and the future are visible)
#   padding:    padding in every block; the decoder may peek at future tokens
#   look-ahead: padding AND look-ahead in encoder and decoder self-attention; cross = padding
MASK_MODES = ("paper", "none", "padding", "look-ahead")
BLOCKS = ("encoder self", "decoder self", "cross")


@dataclass(eq=False)
class Masks:
    """The three blocks' boolean masks of one mask mode (True = may attend; None = attend everywhere)."""

    encoder: torch.Tensor | None  # (B, 1, Ts|1, Ts) for encoder self-attention
    decoder: torch.Tensor | None  # (B, 1, Tt|1, Tt) for decoder self-attention
    cross: torch.Tensor | None  # (B, 1, 1, Ts) for encoder-decoder attention


def masks_for(model: Transformer, src: torch.Tensor, tgt: torch.Tensor, mode: str = "paper") -> Masks:
    """The masks of one mode, built with the same two helpers everywhere (True = may attend)."""
    if mode not in MASK_MODES:
        raise ValueError(f"mask mode {mode!r} is unknown: choose one of {MASK_MODES}")
    if mode == "none":
        return Masks(None, None, None)
    pad = model.config.pad_id
    src_pad, tgt_pad = padding_mask(src, pad), padding_mask(tgt, pad)
    look_src = causal_mask(src.size(1), src.device)
    look_tgt = causal_mask(tgt.size(1), tgt.device)
    if mode == "padding":
        return Masks(src_pad, tgt_pad, src_pad)
    if mode == "look-ahead":
        return Masks(combine_masks(src_pad, look_src), combine_masks(tgt_pad, look_tgt), src_pad)
    return Masks(src_pad, combine_masks(tgt_pad, look_tgt), src_pad)  # paper


@torch.no_grad()
def traced_forward(model: Transformer, src: torch.Tensor, tgt: torch.Tensor, mode: str = "paper") -> Trace:
    """One traced forward pass under the masks of `mode`."""
    m = masks_for(model, src, tgt, mode)
    memory, enc = model.encode(src, m.encoder, return_trace=True)
    out, dec = model.decode(tgt, memory, m.cross, m.decoder, return_trace=True)
    return Trace.of(enc, dec, model.generator, model.generator(out))


def record(trace: Trace, block: str, layer: int) -> AttentionRecord:
    """The attention record of one block ("encoder self", "decoder self", "cross") and layer."""
    if block not in BLOCKS:
        raise ValueError(f"block {block!r} is unknown: choose one of {BLOCKS}")
    stack = trace.encoder if block == "encoder self" else trace.decoder
    if not 0 <= layer < len(stack.layers):
        raise ValueError(f"layer {layer} does not exist: this stack has {len(stack.layers)} layers")
    lt = stack.layers[layer]
    return {"encoder self": lambda: lt.self_attn, "decoder self": lambda: lt.self_attn,
            "cross": lambda: lt.cross_attn}[block]()


def _one_head(rec: AttentionRecord, batch: int, head: int) -> AttentionRecord:
    """The record of one batch row and one head (its steps then cost that head's work only)."""
    if not 0 <= head < rec.n_heads:
        raise ValueError(f"head {head} does not exist: this block has {rec.n_heads} heads")
    return rec.select(batch, head)


def _numpy(t: torch.Tensor) -> np.ndarray:
    """A one-head (1, 1, ...) tensor as a float64 numpy array."""
    return t[0, 0].detach().to("cpu", torch.float64).numpy()


def head_arrays(rec: AttentionRecord, batch: int = 0, head: int = 0) -> dict[str, np.ndarray]:
    """Every step of eq. 1 for one head, as float64 numpy arrays (bool for `allowed`)."""
    one = _one_head(rec, batch, head)
    steps = one.steps()  # each step once, from the one before
    return {
        "q": _numpy(one.q), "k": _numpy(one.k), "v": _numpy(one.v),
        "allowed": one.allowed[0, 0].cpu().numpy().copy(),  # a copy: numpy would share the run's (cached) mask
        **{name: _numpy(t) for name, t in steps.items()},
    }


def unscaled_weights(rec: AttentionRecord, batch: int = 0, head: int = 0) -> np.ndarray:
    """One head's softmax weights WITHOUT eq. 1's 1/sqrt(d_k), (Tq, Tk) float64: what the scaling
    prevents (AttentionRecord.unscaled_weights)."""
    return _numpy(_one_head(rec, batch, head).unscaled_weights)


def all_head_weights(trace: Trace, block: str, batch: int = 0, dtype: torch.dtype = torch.float64) -> np.ndarray:
    """(layers, heads, Tq, Tk) softmax weights of one block kind, for grids and overviews.

    Each layer's weights for that batch row only, from its q and k (AttentionRecord.row_weights)."""
    stack = trace.encoder if block == "encoder self" else trace.decoder
    out = []
    for i in range(len(stack.layers)):
        one = record(trace, block, i).row_weights(batch)  # (1, H, Tq, Tk)
        out.append(one[0].detach().to("cpu", dtype).numpy())  # (H, Tq, Tk)
    return np.stack(out)  # layers x (H, Tq, Tk) -> (layers, H, Tq, Tk)


def mean_attention_entropy(weights: np.ndarray) -> np.ndarray:
    """Mean over queries of the entropy H = −Σ_j p_j log₂ p_j of each weight row, in bits.

    weights (..., T_q, T_k) -> (...). 0·log 0 counts as 0. A query with no key to attend has no entropy and is
    left out of the mean: the model gives its row all-zero weights (model/attention.py), a NaN softmax gives NaN.
    0 bits: a query looks at one key; log₂ n: uniform over n keys.
    """
    p = np.asarray(weights)
    if p.dtype not in (np.float32, np.float64):
        p = p.astype(np.float64)
    log_p = np.zeros_like(p)
    np.log2(p, out=log_p, where=p > 0)  # 0 where p = 0 (0·log 0 = 0); NaN stays out of the log
    h = -np.einsum("...k,...k->...", p, log_p)  # (..., T_q); a NaN row gives NaN
    h = np.where(np.all(p == 0, axis=-1), np.nan, h)  # (..., T_q): an all-zero row (no key) is no 0-bit query
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all rows NaN -> NaN
        return np.nanmean(h, axis=-1)


def with_positional(model: Transformer, kind: str) -> Transformer:
    """A NEW model with the same weights but another positional encoding (the cached one is never touched)."""
    config = dataclasses.replace(model.config, positional=kind)
    twin = Transformer(config).to(model.device)
    state = {k: v for k, v in model.state_dict().items() if ".positional." not in k}
    missing, unexpected = twin.load_state_dict(state, strict=False)
    if unexpected or any(".positional." not in k for k in missing):
        raise RuntimeError(f"weights do not fit the twin model: missing {missing}, unexpected {unexpected}")
    return twin.eval()


def match_permutation(a: Sequence, b: Sequence) -> list[int] | None:
    """perm with b[i] == a[perm[i]] for every i, or None when b is not a reordering of a.

    Repeated tokens are matched in order of appearance, the k-th of b with the k-th of a. In a model
    without positional information any matching gives the same f(b) - P f(a) (equal tokens give equal
    outputs); with PE or a causal mask another matching can give another number.
    """
    if len(a) != len(b):
        return None
    where: dict = defaultdict(list)
    for i, token in enumerate(a):
        where[token].append(i)
    perm = []
    for token in b:
        if not where[token]:
            return None
        perm.append(where[token].pop(0))
    return perm


@dataclass(eq=False)
class OrderReport:
    """Is f(B) = P f(A) when B = P A? (equivariance), and are the pooled outputs equal? (invariance)"""

    perm: list[int] | None  # B[i] = A[perm[i]]; None when B is not a reordering of A
    outputs_a: np.ndarray  # (Ta, d_model) encoder outputs for A
    outputs_b: np.ndarray  # (Tb, d_model) encoder outputs for B
    aligned_a: np.ndarray | None  # (Tb, d_model) P f(A): A's outputs in B's token order
    diff: np.ndarray | None  # (Tb, d_model) |f(B) - P f(A)|
    max_abs_diff: float | None  # max |f(B) - P f(A)|
    pooled_a: np.ndarray  # (d_model,) mean over tokens
    pooled_b: np.ndarray
    pooled_max_abs_diff: float  # max |mean f(A) - mean f(B)|
    tolerance: float
    trace_a: StackTrace | None = None  # A's encoder trace: every layer's attention weights, on demand
    trace_b: StackTrace | None = None
    attention_max_abs_diff: float | None = None  # max over layers and heads of |W(B) - P W(A) P^T|
    max_abs_diff_float64: float | None = None  # the same in float64, where float32's was just above the tolerance
    pooled_max_abs_diff_float64: float | None = None  # and the pooled outputs' then

    @property
    def equivariant(self) -> bool | None:
        """f(B) = P f(A) to the tolerance: in float64 where float32 rounding alone went past it."""
        if self.max_abs_diff_float64 is not None:
            return self.max_abs_diff_float64 <= self.tolerance
        return None if self.max_abs_diff is None else self.max_abs_diff <= self.tolerance

    @property
    def attention_permuted(self) -> bool | None:
        """W(B) = P W(A) P^T in every layer and head: B's weights are A's, rows and columns reordered."""
        return None if self.attention_max_abs_diff is None else self.attention_max_abs_diff <= self.tolerance

    def attention(self, layer: int, head: int) -> tuple[np.ndarray, np.ndarray]:
        """(A's (Ta, Ta), B's (Tb, Tb)) self-attention weights of one encoder layer and head, float64."""
        return tuple(t.layers[layer].self_attn.weights[0, head].double().cpu().numpy()  # (T, T)
                     for t in (self.trace_a, self.trace_b))

    @property
    def pooled_equal(self) -> bool:
        if self.pooled_max_abs_diff_float64 is not None:
            return self.pooled_max_abs_diff_float64 <= self.tolerance
        return self.pooled_max_abs_diff <= self.tolerance


ROUNDING_RECHECK = 1e-3  # a float32 max |f(B) - P f(A)| above the tolerance but at most this is checked in float64


@torch.no_grad()
def _float64_diffs(model: Transformer, ids_a: Sequence[int], ids_b: Sequence[int], perm: list[int],
                          causal: bool) -> tuple[float, float]:
    """(max |f(B) - P f(A)|, max |mean f(A) - mean f(B)|) with a float64 copy of the encoder, on the CPU. A
    LayerNorm over few dimensions (d_model 2, pre-norm) can blow float32 rounding up past the tolerance: 3.57e-05
    for a no-PE encoder, which is exactly permutation-equivariant, was told as "the model sees word order" (a
    claims walk)."""
    # the encoder's half alone (the base model's whole float64 twin would be ~350 MB, its decoder unused)
    embed, encoder = (copy.deepcopy(m).to("cpu", torch.float64).eval() for m in (model.src_embed, model.encoder))
    outs = []
    for ids in (ids_a, ids_b):
        src = torch.tensor([list(ids)], dtype=torch.long)  # (1, T)
        mask = causal_mask(src.size(1), src.device) if causal else None
        outs.append(encoder(embed(src), mask)[0])  # model.encode in float64: (T, d_model)
    return float((outs[1] - outs[0][perm]).abs().max()), float((outs[1].mean(0) - outs[0].mean(0)).abs().max())


@torch.no_grad()
def order_report(
    model: Transformer, ids_a: Sequence[int], ids_b: Sequence[int], causal: bool = False, tolerance: float = 1e-5
) -> OrderReport:
    """Encode A and B alone (no padding) and compare them under the permutation that maps A to B."""
    dev = model.device
    src_a = torch.tensor([list(ids_a)], dtype=torch.long, device=dev)
    src_b = torch.tensor([list(ids_b)], dtype=torch.long, device=dev)
    mask_a = causal_mask(src_a.size(1), dev) if causal else None
    mask_b = causal_mask(src_b.size(1), dev) if causal else None
    out_a, trace_a = model.encode(src_a, mask_a, return_trace=True)
    out_b, trace_b = model.encode(src_b, mask_b, return_trace=True)
    fa, fb = (o[0].double().cpu().numpy() for o in (out_a, out_b))  # (Ta, d_model), (Tb, d_model)
    perm = match_permutation(list(ids_a), list(ids_b))
    aligned = diff = max_diff = attn_diff = exact = pooled_exact = None
    if perm is not None:
        aligned = fa[perm]  # (Tb, d_model): row i is A's output for the token that B has at i
        diff = np.abs(fb - aligned)
        max_diff = float(diff.max())
        # B = P A permutes the attention matrix too: W(B)[i, j] = W(A)[perm[i], perm[j]] (P W(A) P^T)
        p = torch.tensor(perm, device=dev)
        attn_diff = 0.0
        for la, lb in zip(trace_a.layers, trace_b.layers, strict=True):
            wa, wb = la.self_attn.weights[0], lb.self_attn.weights[0]  # (H, Ta, Ta), (H, Tb, Tb)
            attn_diff = max(attn_diff, float((wb - wa[:, p][:, :, p]).abs().max()))
        if tolerance < max_diff <= ROUNDING_RECHECK:  # rounding, or a difference? float64 tells
            exact, pooled_exact = _float64_diffs(model, ids_a, ids_b, perm, causal)
    pa, pb = fa.mean(0), fb.mean(0)
    return OrderReport(
        perm=perm, outputs_a=fa, outputs_b=fb, aligned_a=aligned, diff=diff, max_abs_diff=max_diff,
        pooled_a=pa, pooled_b=pb, pooled_max_abs_diff=float(np.abs(pa - pb).max()) if pa.shape == pb.shape else float("inf"),
        tolerance=tolerance, trace_a=trace_a, trace_b=trace_b, attention_max_abs_diff=attn_diff,
        max_abs_diff_float64=exact, pooled_max_abs_diff_float64=pooled_exact,
    )
