"""Scaled dot-product and multi-head attention ("Attention Is All You Need" §3.2).

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V                       (eq. 1)
    MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O,
        head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)                        (§3.2.2)

Masks are boolean, True = may attend. A masked score is set to -inf before the softmax, so its
weight is exactly 0. A query row whose every key is masked has no defined softmax (all -inf gives
NaN); here such a row gets all-zero weights and a zero context vector, and never a NaN.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from model.masks import NO_MASK, KernelMask, check_mask, fully_masked_rows, kernel_mask


def attention_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Raw scores Q K^T of eq. 1, before the scaling: (B, H, Tq, d_k) x (B, H, Tk, d_k) -> (B, H, Tq, Tk)."""
    return q @ k.transpose(-2, -1)  # (B, H, Tq, d_k) @ (B, H, d_k, Tk) -> (B, H, Tq, Tk)


def masked_scores(scaled: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Scaled scores with every cell a query may not attend set to -inf (eq. 1's masking, §3.2.3): (B, H, Tq, Tk)."""
    return scaled if mask is None else scaled.masked_fill(~mask, float("-inf"))


_MASK_CELLS: tuple = ()  # (mask, mask._version, blocked, empty) of the last few masks, newest first
MASK_CELLS_KEPT = 4  # a forward pass uses two masks (source and target)


def mask_cells(mask: torch.Tensor | None) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """(blocked, empty): ~mask (True = set to -inf) and the (…, Tq, 1) rows with no key; None when none.

    Every block of a stack gets the same mask tensor, so the inversion and the all() / any()
    passes are made once per mask, not once per block. An entry is reused only for the very same
    tensor at the same _version (which counts its in-place edits); a tensor made under
    torch.inference_mode() has no _version and is converted on every call.
    """
    global _MASK_CELLS
    if mask is None:
        return None, None
    try:
        version = mask._version
    except RuntimeError:  # an inference tensor: no version counter, so no safe cache key
        return _blocked_and_empty(mask)
    entries = _MASK_CELLS  # read once: another thread may replace the tuple meanwhile
    for cached, cached_version, blocked, empty in entries:
        if cached is mask and cached_version == version:
            return blocked, empty
    blocked, empty = _blocked_and_empty(mask)
    _MASK_CELLS = ((mask, version, blocked, empty),) + entries[: MASK_CELLS_KEPT - 1]
    return blocked, empty


def _blocked_and_empty(mask: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    if bool(mask.all()):  # nothing masked (no padding): skip the T^2 passes
        return None, None
    empty = fully_masked_rows(mask)  # (…, Tq, 1)
    return ~mask, (empty if bool(empty.any()) else None)


def attention_weights(q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor | None,
                      scale: float | None = None) -> torch.Tensor:
    """softmax(Q K^T / sqrt(d_k), masked cells at -inf) over keys (eq. 1): (B, H, Tq, Tk).

    scale replaces eq. 1's 1/sqrt(d_k) (as F.scaled_dot_product_attention's `scale` does); only
    AttentionRecord.unscaled_weights passes one (1.0), to show what the scaling is for.

    The forward pass and AttentionRecord.weights both call this, so the record's weights are the
    numbers the forward used. Every step is explicit, on ONE (B, H, Tq, Tk) buffer:
    - 1/sqrt(d_k) scales Q (Tq x d_k numbers) instead of the Tq x Tk scores: (Q / sqrt(d_k)) K^T
      equals Q K^T / sqrt(d_k) up to float rounding, bit for bit when sqrt(d_k) is a power of two;
    - masked_fill and softmax work in place when no gradient is needed (softmax's out= has no
      autograd, and its backward needs its output intact).
    A row with no allowed key gets all-zero weights instead of the softmax's NaN.
    """
    blocked, empty = mask_cells(mask)
    # eq. 1's 1/sqrt(d_k), applied to Q: (B, H, Tq, d_k)
    q_scaled = q / math.sqrt(q.size(-1)) if scale is None else q * scale
    scores = q_scaled @ k.transpose(-2, -1)  # Q K^T / sqrt(d_k): (B, H, Tq, d_k) @ (B, H, d_k, Tk) -> (B, H, Tq, Tk)
    if blocked is not None:
        scores.masked_fill_(blocked, float("-inf"))  # masked cells -> -inf, so their weight is 0
    if scores.requires_grad:
        if empty is None:
            return torch.softmax(scores, dim=-1)  # softmax over keys (eq. 1)
        # an all -inf row's NaN softmax would give NaN gradients even once its weights are zeroed
        finite = scores.masked_fill(empty, 0.0)
        return torch.softmax(finite, dim=-1).masked_fill(empty, 0.0)
    weights = torch.softmax(scores, dim=-1, out=scores)  # softmax over keys (eq. 1), in place
    return weights if empty is None else weights.masked_fill_(empty, 0.0)


def scaled_dot_product_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The slow path that materialises the attention matrix: returns (context, weights).

    context = softmax(Q K^T / sqrt(d_k)) V (eq. 1) with the weights from attention_weights, the
    same function AttentionRecord.weights calls.
    """
    weights = attention_weights(q, k, mask)  # (B, H, Tq, Tk)
    return weights @ v, weights  # (B, H, Tq, Tk) @ (B, H, Tk, d_k) -> (B, H, Tq, d_k)


@dataclass(eq=False)
class AttentionRecord:
    """Everything one attention block computed, per head.

    Only q, k, v and the mask are stored (O(T * d_model) numbers; the only T^2 tensor a record may hold
    is its boolean mask, shared by every block of a stack); everything else is derived on demand.
    weights and context come from attention_weights, the forward pass's
    own function, so they are the numbers it computed. scores, scaled and masked show eq. 1 step
    by step (Q K^T, then / sqrt(d_k), then -inf where masked); the forward scaled Q before the
    product, the same numbers up to float rounding (bit for bit when sqrt(d_k) is a power of two).
    """

    q: torch.Tensor  # (B, H, Tq, d_k) queries, Q W^Q split into heads
    k: torch.Tensor  # (B, H, Tk, d_k) keys
    v: torch.Tensor  # (B, H, Tk, d_k) values
    mask: torch.Tensor | None  # bool, broadcasts to (B, H, Tq, Tk); True = may attend; None = no mask

    @property
    def d_k(self) -> int:
        return self.q.size(-1)

    @property
    def n_heads(self) -> int:
        return self.q.size(1)

    @property
    def scores(self) -> torch.Tensor:
        """Raw Q K^T (eq. 1), (B, H, Tq, Tk)."""
        return attention_scores(self.q, self.k)

    @property
    def scaled(self) -> torch.Tensor:
        """Q K^T / sqrt(d_k) (eq. 1), (B, H, Tq, Tk)."""
        return self._scale(self.scores)

    def _scale(self, scores: torch.Tensor) -> torch.Tensor:
        return scores / math.sqrt(self.d_k)  # eq. 1's 1/sqrt(d_k): (B, H, Tq, Tk)

    def score_shape(self) -> tuple[int, int, int, int]:
        """(B, H, Tq, Tk)."""
        return (*self.q.shape[:-1], self.k.size(-2))

    @property
    def allowed(self) -> torch.Tensor:
        """The mask expanded to (B, H, Tq, Tk): True = may attend (all True without a mask)."""
        shape = self.score_shape()
        if self.mask is None:
            return torch.ones(shape, dtype=torch.bool, device=self.q.device)
        return self.mask.expand(shape)  # (B or 1, 1 or H, Tq or 1, Tk) -> (B, H, Tq, Tk), a view

    @property
    def masked(self) -> torch.Tensor:
        """Scaled scores with masked cells at -inf (eq. 1, §3.2.3), (B, H, Tq, Tk)."""
        return masked_scores(self.scaled, self.mask)

    @property
    def weights(self) -> torch.Tensor:
        """softmax(masked scores) over keys, (B, H, Tq, Tk); each row sums to 1 (0 if fully masked).

        Computed by attention_weights, the forward pass's own function: the numbers it used."""
        return attention_weights(self.q, self.k, self.mask)

    @property
    def unscaled_weights(self) -> torch.Tensor:
        """What the weights would be WITHOUT eq. 1's 1/sqrt(d_k): softmax(Q K^T, masked cells at
        -inf), (B, H, Tq, Tk), by attention_weights with scale 1 (the same masks, the same all-zero
        rows). The forward pass never uses it: views show it to explain the scaling (§3.2.1: for q and k
        of independent components with mean 0 and variance 1, q.k has variance d_k, which pushes softmax
        towards one key)."""
        return attention_weights(self.q, self.k, self.mask, scale=1.0)

    @property
    def context(self) -> torch.Tensor:
        """Per-head weighted sums of values, weights @ V (eq. 1), (B, H, Tq, d_k)."""
        return self.weights @ self.v  # (B, H, Tq, Tk) @ (B, H, Tk, d_k) -> (B, H, Tq, d_k)

    def steps(self) -> dict[str, torch.Tensor]:
        """scores, scaled, masked, weights and context at once, each derived from the one before
        by the properties' own expressions (the properties each start again from Q and K): the
        same numbers, bit for bit, for a view that shows every step."""
        scores = self.scores  # Q K^T, (B, H, Tq, Tk)
        scaled = self._scale(scores)  # / sqrt(d_k) (eq. 1), (B, H, Tq, Tk)
        weights = self.weights  # attention_weights: the forward pass's own numbers
        return {"scores": scores, "scaled": scaled, "masked": masked_scores(scaled, self.mask),
                "weights": weights, "context": weights @ self.v}

    def select(self, batch: int, head: int | None = None) -> AttentionRecord:
        """The record of one batch row (and one head, or all): views of q, k, v and the mask.

        Every derived step then costs only that row's (head's) work, not all B x H heads'."""
        b, h, mask = self._picked(batch, head)
        return AttentionRecord(self.q[b, h], self.k[b, h], self.v[b, h], mask)  # (1, H or 1, T, d_k) each

    def row_weights(self, batch: int) -> torch.Tensor:
        """select(batch).weights, (1, H, Tq, Tk): the same numbers, from q and k alone (a grid of every head's
        weights needs no values, and a ProjectedRecord then projects two of the three)."""
        b, h, mask = self._picked(batch, None)
        q, k = self._q_and_k()
        return attention_weights(q[b, h], k[b, h], mask)  # (1, H, Tq, d_k), (1, H, Tk, d_k) -> (1, H, Tq, Tk)

    def _q_and_k(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.q, self.k

    def _picked(self, batch: int, head: int | None) -> tuple[slice, slice, torch.Tensor | None]:
        """select's slices of the batch and head axes, and the mask of that row (and head)."""
        b = slice(batch, batch + 1)
        h = slice(None) if head is None else slice(head, head + 1)
        mask = self.mask
        if mask is not None:
            mask = mask.reshape((1,) * (4 - mask.dim()) + tuple(mask.shape))  # (B or 1, H or 1, Tq or 1, Tk)
            # this row (and head) where the mask has one per row (head): (1, H or 1, Tq or 1, Tk)
            mask = mask[b if mask.size(0) > 1 else slice(0, 1), h if mask.size(1) > 1 else slice(0, 1)]
        return b, h, mask

    def materialise(self) -> AttentionRecord:
        """A record holding q, k and v themselves: this one (a ProjectedRecord projects them once)."""
        return self

    def kept(self) -> tuple[torch.Tensor | None, ...]:
        """The tensors this record keeps alive: q, k, v and the mask."""
        return self.q, self.k, self.v, self.mask


def param_stamp(params: list[torch.Tensor]) -> tuple | None:
    """(data_ptr, _version) of each parameter, or None where what they compute may not be reused or
    recomputed later: autograd tracks them (training keeps what it computed), or they keep no version
    counter (made under torch.inference_mode()).

    A tensor's _version counts its in-place changes (copy_, load_state_dict, an optimizer step) and
    its data_ptr() changes when it is replaced or moved (.to()), so an equal stamp means equal weights.
    """
    if torch.is_grad_enabled() and any(p.requires_grad for p in params):
        return None
    return tensor_versions(params)


def tensor_versions(tensors) -> tuple | None:
    """(data_ptr, _version) of each tensor; None for inference tensors (no version counter)."""
    try:
        return tuple((t.data_ptr(), t._version) for t in tensors)
    except RuntimeError:
        return None


def frozen_stamp(params, inputs) -> tuple | None:
    """The stamp of a module's parameters and of the tensors it was applied to, or None where the result
    may not be recomputed later (param_stamp): a trace then keeps the result instead."""
    weights, data = param_stamp(list(params)), param_stamp(list(inputs))
    return None if weights is None or data is None else (weights, data)


def module_params(*modules: nn.Module) -> tuple[torch.Tensor, ...]:
    """The parameters of `modules` and their submodules, as Module.parameters() finds them, without its
    name and duplicate bookkeeping (several times faster: a traced forward stamps every block)."""
    out: list[torch.Tensor] = []
    todo = list(modules)
    while todo:
        m = todo.pop()
        out.extend(p for p in m._parameters.values() if p is not None)
        todo.extend(sub for sub in m._modules.values() if sub is not None)
    return tuple(out)


def check_frozen(params, inputs, stamp: tuple, what: str) -> None:
    """Raise where the module's parameters or the inputs changed since frozen_stamp: recomputing would
    show other numbers."""
    if (tensor_versions(params), tensor_versions(inputs)) != stamp:
        raise RuntimeError(f"the model's weights or {what} changed after this trace was taken: trace the model again")


class Replay:
    """A block input the trace does not keep: fn() computes it again, from `sources` (tensors the trace
    keeps anyway) with `modules`, the very call the forward pass made (so the same numbers bit for bit).

    E.g. a post-norm decoder layer's cross-attention queries come from LayerNorm(x + SelfAttn(x)), the
    stream after its self-attention sub-layer: the layer's input x is kept (the previous layer's output),
    so at short inputs that stream is replayed from it (one self-attention block) rather than kept
    (DecoderLayer.forward says where); pre-norm's LayerNorm(x) of a block's input is always replayed.
    A replay runs under torch.no_grad() and refuses a module in training mode (dropout would change it).
    """

    def __init__(self, fn, sources: tuple[torch.Tensor, ...], modules: tuple[nn.Module, ...],
                 shape: torch.Size) -> None:
        self.fn, self.sources, self.modules, self.shape = fn, sources, modules, shape

    def params(self) -> tuple[torch.Tensor, ...]:
        return module_params(*self.modules)

    def __call__(self) -> torch.Tensor:
        if any(m.training for m in self.modules):
            raise RuntimeError("the model was switched to training mode after this trace was taken (dropout "
                               "would change what the trace shows): call model.eval() or trace the model again")
        with torch.no_grad():
            return self.fn()


class ProjectedRecord(AttentionRecord):
    """An AttentionRecord that keeps the block's inputs instead of Q, K and V, and projects them again
    on demand (activation checkpointing, the trace's memory target of issue #6).

    q = split_heads(query W^Q^T + b^Q), and so k and v (§3.2.2), by the module's own layers: the call the
    forward pass made, on the very tensors it made it on, so the same numbers bit for bit (under the
    same torch thread settings). In the paper's post-norm layers the inputs are, for self-attention,
    the layer's input, which the trace keeps anyway (the embeddings or the previous layer's output: one
    storage, counted once), and for cross-attention the encoder's output (kept) and the decoder stream
    after its self-attention sub-layer: kept, or at short inputs replayed from the layer's input (a
    Replay, made by `replaying`). Pre-norm layers replay their LayerNorm of the stream the same way.
    `of` makes one only where neither the weights nor the inputs can change unseen; were either changed
    in place afterwards, q, k and v raise instead of showing other numbers.
    """

    def __init__(self, module: MultiHeadAttention, params: tuple[torch.Tensor, ...],
                 inputs: tuple[torch.Tensor | Replay, ...], mask: torch.Tensor | None, stamp: tuple) -> None:
        self.module, self.params, self.inputs, self.mask, self.stamp = module, params, inputs, mask, stamp

    @classmethod
    def of(cls, module: MultiHeadAttention, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
           inputs: tuple[torch.Tensor, ...], mask: torch.Tensor | None) -> AttentionRecord:
        """A ProjectedRecord of `inputs` (query, key, value), or the plain record of q, k, v where the
        weights or the inputs cannot be stamped (autograd tracks them, or inference tensors)."""
        params = module_params(module)  # what the stamp covers
        stamp = frozen_stamp(params, inputs)
        return AttentionRecord(q, k, v, mask) if stamp is None else cls(module, params, inputs, mask, stamp)

    def replaying(self, inputs: tuple[torch.Tensor | Replay, ...]) -> AttentionRecord:
        """This record with some inputs replayed instead of kept (`inputs`: the same tensors, or Replays of
        them), or this record itself where a replay's weights or sources cannot be stamped."""
        replays = [r for r in dict.fromkeys(inputs) if isinstance(r, Replay)]
        params = self.params + tuple(p for r in replays for p in r.params())
        stamp = frozen_stamp(params, self._sources(inputs))
        return self if stamp is None else ProjectedRecord(self.module, params, inputs, self.mask, stamp)

    @staticmethod
    def _sources(inputs) -> list[torch.Tensor]:
        """The tensors this record's numbers come from: kept inputs and the replays' sources."""
        out = []
        for t in inputs:
            out.extend(t.sources if isinstance(t, Replay) else (t,))
        return out

    def _project(self, *which: int) -> list[torch.Tensor]:
        """q, k and/or v (0, 1, 2), after one check that nothing they come from changed."""
        check_frozen(self.params, self._sources(self.inputs), self.stamp,
                     "the inputs of this block's queries, keys and values")
        m = self.module
        replayed: dict[int, torch.Tensor] = {}  # one replay per call, shared by the inputs it gives
        with torch.no_grad():
            out = []
            for i in which:
                x = self.inputs[i]
                if isinstance(x, Replay):
                    x = replayed[id(x)] if id(x) in replayed else replayed.setdefault(id(x), x())
                # x W^Q, x W^K or x W^V (§3.2.2), split into heads
                out.append(m.split_heads((m.w_q, m.w_k, m.w_v)[i](x)))  # (B, H, T, d_k)
            return out

    @property
    def q(self) -> torch.Tensor:  # (B, H, Tq, d_k)
        return self._project(0)[0]

    @property
    def k(self) -> torch.Tensor:  # (B, H, Tk, d_k)
        return self._project(1)[0]

    @property
    def v(self) -> torch.Tensor:  # (B, H, Tk, d_k)
        return self._project(2)[0]

    @property
    def d_k(self) -> int:
        return self.module.d_k

    @property
    def n_heads(self) -> int:
        return self.module.n_heads

    def score_shape(self) -> tuple[int, int, int, int]:
        (B, Tq, _), (_, Tk, _) = (t.shape for t in self.inputs[:2])  # a Replay knows its shape too
        return B, self.n_heads, Tq, Tk

    def materialise(self) -> AttentionRecord:
        """The plain record: q, k and v projected once (for work that needs them more than once)."""
        return AttentionRecord(*self._project(0, 1, 2), self.mask)

    @property
    def context(self) -> torch.Tensor:
        return self.materialise().context

    def steps(self) -> dict[str, torch.Tensor]:
        return self.materialise().steps()

    def select(self, batch: int, head: int | None = None) -> AttentionRecord:
        return self.materialise().select(batch, head)

    def _q_and_k(self) -> tuple[torch.Tensor, torch.Tensor]:
        q, k = self._project(0, 1)  # one check, one replay shared by both
        return q, k

    def kept(self) -> tuple[torch.Tensor | None, ...]:
        """The kept inputs (a replayed one: what it is replayed from) and the mask (no projection is kept)."""
        return *dict.fromkeys(self._sources(self.inputs)), self.mask

    def __repr__(self) -> str:
        shapes = ", ".join(str(tuple(t.shape)) for t in self.inputs)
        return f"ProjectedRecord(inputs {shapes}, heads {self.n_heads}, mask {self.mask is not None})"


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1..head_h) W^O with separate W^Q, W^K, W^V (§3.2.2)."""

    def __init__(self, d_model: int, n_heads: int, bias: bool = True, dropout: float = 0.0) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(
                f"d_model={d_model} is not divisible by n_heads={n_heads}: every head gets "
                "d_k = d_model / n_heads dimensions, so pick n_heads that divides d_model"
            )
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.dropout = dropout  # on the attention weights, as torch.nn.MultiheadAttention
        self.w_q = nn.Linear(d_model, d_model, bias=bias)  # all heads' W_i^Q side by side
        self.w_k = nn.Linear(d_model, d_model, bias=bias)  # all heads' W_i^K side by side
        self.w_v = nn.Linear(d_model, d_model, bias=bias)  # all heads' W_i^V side by side
        self.w_o = nn.Linear(d_model, d_model, bias=bias)  # W^O
        self._stacked: dict[int, tuple] = {}  # inference cache of stacked() (not a parameter)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, d_model) -> (B, H, T, d_k): head i owns columns i*d_k .. (i+1)*d_k - 1 (§3.2.2)."""
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.d_k).transpose(1, 2)  # (B, T, H, d_k) -> (B, H, T, d_k)

    def merge_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, H, T, d_k) -> (B, T, d_model): Concat(head_1, ..., head_h) (§3.2.2)."""
        B, H, T, d_k = x.shape
        return x.transpose(1, 2).reshape(B, T, H * d_k)  # (B, T, H, d_k) -> (B, T, d_model)

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor | None = None,
        value: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        return_trace: bool = True,
    ):
        """query (B, Tq, d_model), key/value (B, Tk, d_model) -> out (B, Tq, d_model) [, record].

        return_trace=True materialises the attention matrix and returns (out, AttentionRecord);
        return_trace=False takes torch's fused F.scaled_dot_product_attention and returns out.
        """
        key = query if key is None else key
        value = key if value is None else value
        for name, t in (("query", query), ("key", key), ("value", value)):
            if t.dim() != 3 or t.size(-1) != self.d_model:
                raise ValueError(
                    f"{name} must have shape (batch, length, d_model={self.d_model}), got {tuple(t.shape)}"
                )
        if key.shape[:2] != value.shape[:2] or query.size(0) != key.size(0):
            raise ValueError(
                f"query {tuple(query.shape)}, key {tuple(key.shape)} and value {tuple(value.shape)} "
                "must share the batch size, and key and value their length"
            )
        B, Tq, Tk = query.size(0), query.size(1), key.size(1)
        if not return_trace:
            if value is not key:  # K and V from different inputs: no shared projection
                return self.attend(query, key, kernel_mask(mask, (B, self.n_heads, Tq, Tk), query.dtype), value)
            return self.attend(query, key, kernel_mask(mask, (B, self.n_heads, Tq, Tk), query.dtype))
        mask = check_mask(mask, (B, self.n_heads, Tq, Tk))

        q = self.split_heads(self.w_q(query))  # Q W_i^Q for every head i (§3.2.2): (B, H, Tq, d_k)
        k = self.split_heads(self.w_k(key))  # K W_i^K: (B, H, Tk, d_k)
        v = self.split_heads(self.w_v(value))  # V W_i^V: (B, H, Tk, d_k)
        context, weights = scaled_dot_product_attention(q, k, v, mask)  # eq. 1 per head: (B, H, Tq, d_k)
        if self.training and self.dropout:
            # dropout on the attention weights, as nn.MultiheadAttention (the paper's §5.4 names only
            # the sub-layer outputs and the embedding sums)
            context = F.dropout(weights, self.dropout) @ v  # (B, H, Tq, Tk) @ (B, H, Tk, d_k) -> (B, H, Tq, d_k)
        out = self.w_o(self.merge_heads(context))  # Concat(head_1..head_h) W^O (§3.2.2): (B, Tq, d_model)
        return out, ProjectedRecord.of(self, q, k, v, (query, key, value), mask)

    def attend(
        self, query: torch.Tensor, key: torch.Tensor, mask: KernelMask = NO_MASK, value: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The untraced path, without checks (the caller validated shapes and made the KernelMask).

        query (B, Tq, d_model), key = value (B, Tk, d_model) -> out (B, Tq, d_model). Same maths as
        the traced path; Q, K and V come from one matmul against [W^Q; W^K; W^V] stacked on dim 0
        (self-attention) or Q from W^Q and K, V from one matmul against [W^K; W^V] (cross-attention),
        and torch's fused F.scaled_dot_product_attention computes eq. 1 without materialising it.
        """
        B, Tq, Tk, H, d_k = query.size(0), query.size(1), key.size(1), self.n_heads, self.d_k
        if value is not None:  # distinct key and value inputs: three separate projections
            q = self.split_heads(self.w_q(query))  # Q W_i^Q (§3.2.2): (B, H, Tq, d_k)
            k = self.split_heads(self.w_k(key))  # (B, H, Tk, d_k)
            v = self.split_heads(self.w_v(value))  # (B, H, Tk, d_k)
        elif key is query:  # self-attention: [Q K V] = X [W^Q; W^K; W^V]^T in one matmul
            qkv = F.linear(query, *self.stacked(self.w_q, self.w_k, self.w_v))  # (B, T, 3 d_model)
            q, k, v = qkv.view(B, Tq, 3, H, d_k).permute(2, 0, 3, 1, 4)  # (B, T, 3, H, d_k) -> 3 x (B, H, T, d_k)
        else:  # cross-attention: Q from the decoder, [K V] = memory [W^K; W^V]^T in one matmul
            q = self.split_heads(self.w_q(query))  # Q W_i^Q (§3.2.2): (B, H, Tq, d_k)
            kv = F.linear(key, *self.stacked(self.w_k, self.w_v))  # (B, Tk, 2 d_model)
            k, v = kv.view(B, Tk, 2, H, d_k).permute(2, 0, 3, 1, 4)  # (B, Tk, 2, H, d_k) -> 2 x (B, H, Tk, d_k)
        p = self.dropout if self.training else 0.0  # attention dropout in training only (as nn.MultiheadAttention)
        # eq. 1 in torch's fused kernel: softmax(Q K^T / sqrt(d_k) + bias) V, bias -inf where masked
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask.bias, dropout_p=p)  # (B, H, Tq, d_k)
        if mask.empty is not None:  # the fused kernel may give NaN on a row with no key; ours is 0
            context = context.masked_fill(mask.empty, 0.0)
        return self.w_o(self.merge_heads(context))  # Concat(head_1..head_h) W^O (§3.2.2): (B, Tq, d_model)

    def stacked(self, *linears: nn.Linear) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The linears' weights (and biases) stacked on dim 0, as nn.MultiheadAttention's in_proj_weight.

        With autograd on, torch.cat builds them every call so gradients reach each W. Without it
        (inference), the stacked copy is kept and rebuilt only when a parameter changed: a tensor's
        _version counts its in-place changes (copy_, load_state_dict, optimizer steps) and its
        data_ptr() changes when it is replaced or moved (.to()).
        """
        key = param_stamp([p for lin in linears for p in (lin.weight, lin.bias) if p is not None])
        if key is None:  # autograd tracks them, or inference tensors (no version counter)
            return stack_linears(linears)
        cached = self._stacked.get(len(linears))  # 3: [W^Q; W^K; W^V], 2: [W^K; W^V]
        if cached is None or cached[0] != key:
            cached = self._stacked[len(linears)] = (key, stack_linears(linears))
        return cached[1]


def stack_linears(linears) -> tuple[torch.Tensor, torch.Tensor | None]:
    """n linears d_model -> d_model as one d_model -> n * d_model: weights and biases on dim 0."""
    weight = torch.cat([lin.weight for lin in linears])  # (n * d_model, d_model)
    bias = None if linears[0].bias is None else torch.cat([lin.bias for lin in linears])  # (n * d_model,)
    return weight, bias


class SelfAttention(nn.Module):
    """Single-head self-attention with trainable W_query, W_key, W_value (seed 002 / Raschka ch. 3).

    context = softmax(X W_q (X W_k)^T / sqrt(d_out)) X W_v, with d_in -> d_out projections and no
    output projection. Accepts x of shape (T, d_in) or (B, T, d_in).
    """

    def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False) -> None:
        super().__init__()
        self.d_in, self.d_out = d_in, d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    @classmethod
    def from_matrices(cls, W_query: torch.Tensor, W_key: torch.Tensor, W_value: torch.Tensor) -> SelfAttention:
        """Use (d_in, d_out) matrices applied as x @ W (the seed's layout); nn.Linear stores W^T."""
        d_in, d_out = W_query.shape
        module = cls(d_in, d_out, qkv_bias=False)
        with torch.no_grad():
            for linear, matrix in ((module.W_query, W_query), (module.W_key, W_key), (module.W_value, W_value)):
                linear.weight.copy_(matrix.T)  # (d_out, d_in)
        return module

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, return_trace: bool = True):
        unbatched = x.dim() == 2
        if unbatched:
            x = x.unsqueeze(0)  # (1, T, d_in)
        if x.dim() != 3 or x.size(-1) != self.d_in:
            raise ValueError(f"x must have shape (T, d_in={self.d_in}) or (B, T, d_in), got {tuple(x.shape)}")
        if mask is not None and mask.dim() == 2:
            mask = mask[None, None]  # (Tq, Tk) -> (1, 1, Tq, Tk)
        T = x.size(1)
        mask = check_mask(mask, (x.size(0), 1, T, T))
        q = self.W_query(x).unsqueeze(1)  # (B, 1, T, d_out): one head
        k = self.W_key(x).unsqueeze(1)  # (B, 1, T, d_out)
        v = self.W_value(x).unsqueeze(1)  # (B, 1, T, d_out)
        context, _ = scaled_dot_product_attention(q, k, v, mask)  # eq. 1: (B, 1, T, d_out)
        context = context.squeeze(1)  # (B, T, d_out)
        if unbatched:
            context = context.squeeze(0)  # (T, d_out)
        if not return_trace:
            return context
        return context, AttentionRecord(q=q, k=k, v=v, mask=mask)
