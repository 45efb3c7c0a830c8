"""Analytic FLOP count of one forward pass (1 multiply-add = 2 FLOPs).

Only matrix products are counted; LayerNorm, softmax, ReLU, bias adds, residual adds and the
embedding lookup are O(T * d_model) each and left out (as is usual). With B sentences, S source
tokens, T target tokens, d = d_model, f = d_ff, V = tgt_vocab_size, N encoder and M decoder layers:

    encoder layer   8 S d^2          (W^Q, W^K, W^V, W^O: 4 products of (S, d) x (d, d))
                  + 4 S^2 d          (Q K^T: 2 S S d, summed over heads; weights @ V: 2 S S d)
                  + 4 S d f          (FFN: (S, d) x (d, f) and (S, f) x (f, d))
    decoder layer   8 T d^2 + 4 T^2 d                      (masked self-attention)
                  + 4 T d^2 + 4 S d^2 + 4 T S d           (cross: W^Q, W^O on T; W^K, W^V on S)
                  + 4 T d f                                (FFN)
    generator       2 T d V

    forward = B * (N * encoder + M * decoder + generator)

The causal mask does not halve Q K^T: on CPU the full T x T scores are computed, then masked.
"""

from __future__ import annotations

from model.config import TransformerConfig


def encoder_layer_flops(c: TransformerConfig, S: int) -> int:
    d, f = c.d_model, c.d_ff
    return 8 * S * d * d + 4 * S * S * d + 4 * S * d * f


def decoder_layer_flops(c: TransformerConfig, S: int, T: int) -> int:
    d, f = c.d_model, c.d_ff
    self_attn = 8 * T * d * d + 4 * T * T * d
    cross_attn = 4 * T * d * d + 4 * S * d * d + 4 * T * S * d
    return self_attn + cross_attn + 4 * T * d * f


def forward_flops(c: TransformerConfig, S: int, T: int | None = None, batch: int = 1) -> int:
    """FLOPs of model(src, tgt) for a (batch, S) source and (batch, T) target (T defaults to S)."""
    T = S if T is None else T
    generator = 2 * T * c.d_model * c.tgt_vocab_size
    per_sentence = (
        c.n_layers * encoder_layer_flops(c, S)
        + c.decoder_layers * decoder_layer_flops(c, S, T)
        + generator
    )
    return batch * per_sentence


def matmul_flops(m: int, k: int, n: int) -> int:
    """(m, k) @ (k, n): m * n dot products of length k."""
    return 2 * m * k * n
