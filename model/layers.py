"""Encoder and decoder layers: sub-layers with residual connections and LayerNorm (§3.1, §3.3)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from model.attention import AttentionRecord, MultiHeadAttention, ProjectedRecord, Replay
from model.config import TransformerConfig
from model.masks import KernelMask, kernel_mask


class LayerNorm(nn.Module):
    """LayerNorm(x) = (x - mean) / sqrt(var + eps) * weight + bias (Ba et al., 2016), the LayerNorm of every
    sub-layer connection LayerNorm(x + Sublayer(x)) (§3.1).

    var is the BIASED variance (divide by n, not n - 1) with eps inside the square root, exactly
    as torch.nn.LayerNorm; x.std() would use n - 1 and give different numbers.
    """

    def __init__(self, d_model: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.register_buffer("eps_tensor", torch.tensor(eps), persistent=False)  # see forward
        self.weight = nn.Parameter(torch.ones(d_model))  # gain (gamma)
        self.bias = nn.Parameter(torch.zeros(d_model))  # shift (beta)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (..., d_model) -> same shape. Two passes (the mean, then the mean squared deviation):
        the same statistics as torch.var_mean, which is several times slower on CPU for T >= 128."""
        half = x.dtype in (torch.float16, torch.bfloat16)
        # half precision: the statistics in float32, as nn.LayerNorm accumulates them (in float16 the squares
        # overflow once |x - mean| > ~256 and the whole row came out as zeros)
        h = x.float() if half else x
        centred = h - h.mean(dim=-1, keepdim=True)  # x - mean: (..., d_model) - (..., 1)
        var = (centred * centred).mean(dim=-1, keepdim=True)  # biased: divide by n; (..., 1)
        # eps as a 0-d tensor: adding a Python float converts it to a tensor on every call
        normed = centred * torch.rsqrt(var + self.eps_tensor)  # (x - mean) / sqrt(var + eps)
        if half:
            normed = normed.to(x.dtype)
        return torch.addcmul(self.bias, normed, self.weight)  # normed * weight + bias


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, applied to each position separately (eq. 2)."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu") -> None:
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)  # between the two linears, as torch's Transformer layers
        self.activation_name = activation  # "relu" (eq. 2's max(0, ·)) or "gelu"
        self.activation = {"relu": F.relu, "gelu": F.gelu}[activation]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.activation(self.linear1(x))  # max(0, x W_1 + b_1) (eq. 2; or GELU): (B, T, d_ff)
        if self.training:  # not in eq. 2 (torch's layers drop here); nn.Dropout is the identity in eval: skip it
            h = self.dropout(h)
        return self.linear2(h)  # h W_2 + b_2 (eq. 2): (B, T, d_model)


class Residual(nn.Module):
    """One sub-layer connection with its OWN LayerNorm (§5.4 residual dropout).

    post-norm (paper): LayerNorm(x + Dropout(Sublayer(x)))
    pre-norm:          x + Dropout(Sublayer(LayerNorm(x)))
    """

    def __init__(self, d_model: int, dropout: float, norm: str, eps: float) -> None:
        super().__init__()
        self.norm = LayerNorm(d_model, eps)
        self.dropout = nn.Dropout(dropout)
        self.pre = norm == "pre"

    def forward(self, x: torch.Tensor, sublayer) -> tuple[torch.Tensor, object]:
        """sublayer(h) returns (output, extra); returns (new x, extra)."""
        if self.pre:  # x + Dropout(Sublayer(LayerNorm(x))): not the paper's order
            out, extra = sublayer(self.norm(x))
            return x + (self.dropout(out) if self.training else out), extra
        out, extra = sublayer(x)
        # §3.1 LayerNorm(x + Sublayer(x)), with §5.4's dropout on Sublayer(x) in training
        return self.norm(x + (self.dropout(out) if self.training else out)), extra


@dataclass(eq=False)
class EncoderLayerTrace:
    """What one encoder layer keeps of a traced forward pass: its self-attention record and its output."""

    self_attn: AttentionRecord  # encoder self-attention
    output: torch.Tensor  # (B, T, d_model) the layer's output


@dataclass(eq=False)
class DecoderLayerTrace:
    """What one decoder layer keeps: its masked self-attention and cross-attention records, and its output."""

    self_attn: AttentionRecord  # masked (causal) decoder self-attention
    cross_attn: AttentionRecord  # encoder-decoder attention: queries from the decoder, keys/values from memory
    output: torch.Tensor  # (B, T, d_model)


def _attend(attn: MultiHeadAttention, trace: bool, kv: torch.Tensor | None, mask):
    """Wrap an attention module as a sub-layer returning (out, record-or-None).

    Traced: mask is the boolean mask (checked by the module). Untraced: a KernelMask, already checked.
    """

    def run(h: torch.Tensor):
        key = h if kv is None else kv
        if trace:
            return attn(h, key, key, mask=mask, return_trace=True)
        return attn.attend(h, key, mask), None

    return run


def _replay_normed(rec: AttentionRecord, sub: Residual, x: torch.Tensor) -> AttentionRecord:
    """Pre-norm: a self-attention block's query, key and value are LayerNorm(x), replayed from the layer's
    input x (which the trace keeps) instead of kept. Post-norm: they are x itself; nothing to replay."""
    if not (sub.pre and isinstance(rec, ProjectedRecord)):
        return rec
    normed = Replay(lambda: sub.norm(x), (x,), (sub,), x.shape)  # the call Residual.forward made
    return rec.replaying((normed, normed, normed))


class EncoderLayer(nn.Module):
    """Multi-head self-attention, then the feed-forward network, each wrapped in Residual (§3.1)."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        c = config
        self.self_attn = MultiHeadAttention(c.d_model, c.n_heads, dropout=c.dropout)
        self.ffn = FeedForward(c.d_model, c.d_ff, c.dropout, c.activation)
        self.sublayer1 = Residual(c.d_model, c.dropout, c.norm, c.layer_norm_eps)
        self.sublayer2 = Residual(c.d_model, c.dropout, c.norm, c.layer_norm_eps)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | KernelMask | None = None, return_trace: bool = False):
        """x (B, T, d_model) -> (B, T, d_model) [, EncoderLayerTrace]; mask broadcasts to (B, H, T, T)."""
        if not return_trace:
            B, T, _ = x.shape
            mask = kernel_mask(mask, (B, self.self_attn.n_heads, T, T), x.dtype)  # checked once
        x_in = x
        x, rec = self.sublayer1(x, _attend(self.self_attn, return_trace, None, mask))  # self-attention (§3.2.2)
        x, _ = self.sublayer2(x, lambda h: (self.ffn(h), None))  # position-wise FFN (eq. 2)
        if not return_trace:
            return x
        return x, EncoderLayerTrace(_replay_normed(rec, self.sublayer1, x_in), x)


class DecoderLayer(nn.Module):
    """Masked self-attention, encoder-decoder attention, feed-forward; each in Residual (§3.1)."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        c = config
        self.self_attn = MultiHeadAttention(c.d_model, c.n_heads, dropout=c.dropout)
        self.cross_attn = MultiHeadAttention(c.d_model, c.n_heads, dropout=c.dropout)
        self.ffn = FeedForward(c.d_model, c.d_ff, c.dropout, c.activation)
        self.sublayer1 = Residual(c.d_model, c.dropout, c.norm, c.layer_norm_eps)
        self.sublayer2 = Residual(c.d_model, c.dropout, c.norm, c.layer_norm_eps)
        self.sublayer3 = Residual(c.d_model, c.dropout, c.norm, c.layer_norm_eps)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        src_mask: torch.Tensor | None = None,
        tgt_mask: torch.Tensor | None = None,
        return_trace: bool = False,
    ):
        """x (B, Tt, d_model), memory (B, Ts, d_model) -> (B, Tt, d_model) [, DecoderLayerTrace]."""
        if not return_trace:
            (B, Tt, _), Ts, H = x.shape, memory.size(1), self.self_attn.n_heads
            src_mask = kernel_mask(src_mask, (B, H, Tt, Ts), x.dtype)  # each mask checked once
            tgt_mask = kernel_mask(tgt_mask, (B, H, Tt, Tt), x.dtype)
        x_in = x
        # masked self-attention (§3.2.3), then encoder-decoder attention: queries from the decoder, keys and
        # values from the encoder's output (§3.2.3), then the position-wise FFN (eq. 2)
        x, self_rec = self.sublayer1(x, _attend(self.self_attn, return_trace, None, tgt_mask))
        x, cross_rec = self.sublayer2(x, _attend(self.cross_attn, return_trace, memory, src_mask))
        x, _ = self.sublayer3(x, lambda h: (self.ffn(h), None))
        if not return_trace:
            return x
        self_rec = _replay_normed(self_rec, self.sublayer1, x_in)
        if isinstance(cross_rec, ProjectedRecord) and x_in.size(1) <= self.self_attn.d_k:
            # Its queries' input: replayed from x_in (the previous layer's output, kept) instead of kept,
            # where the replay's attention matrix, H * Tt^2 per row, is no larger than the Tt * d_model
            # floats it saves (Tt <= d_k); at longer inputs recomputing costs more than keeping.
            query = Replay(lambda: self.cross_query(x_in, tgt_mask), (x_in,), (self.sublayer1, self.self_attn,
                           self.sublayer2), cross_rec.inputs[0].shape)
            cross_rec = cross_rec.replaying((query, *cross_rec.inputs[1:]))
        return x, DecoderLayerTrace(self_rec, cross_rec, x)

    def cross_query(self, x: torch.Tensor, tgt_mask: torch.Tensor | None) -> torch.Tensor:
        """The cross-attention's query input, again from the layer's input x (B, Tt, d_model), with the
        calls forward made: the stream after the self-attention sub-layer, LayerNorm(x + SelfAttn(x))
        (post-norm), or pre-norm's LayerNorm of x + SelfAttn(LayerNorm(x)). Traced attention, as the
        traced forward pass: the same numbers bit for bit. (B, Tt, d_model)."""
        x1, _ = self.sublayer1(x, _attend(self.self_attn, True, None, tgt_mask))
        return self.sublayer2.norm(x1) if self.sublayer2.pre else x1
