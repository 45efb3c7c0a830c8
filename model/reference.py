"""Copy our weights into PyTorch's own modules, to prove our numbers against theirs.

torch.nn.MultiheadAttention keeps [W_q; W_k; W_v] stacked on dim 0 in in_proj_weight (nn.Linear's
(out, in) layout, heads split contiguously) and W^O in out_proj. Its boolean masks mean
True = NOT allowed, the opposite of ours: flip with ~mask at this boundary only.
"""

from __future__ import annotations

import torch
from torch import nn

from model.attention import MultiHeadAttention
from model.layers import DecoderLayer, EncoderLayer, LayerNorm
from model.transformer import Transformer


@torch.no_grad()
def copy_attention(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> nn.MultiheadAttention:
    """Our W^Q, W^K, W^V, W^O (and biases) into torch's in_proj_weight / in_proj_bias and out_proj; returns theirs."""
    # torch packs W_Q, W_K, W_V as one (3·d_model, d_model) in_proj_weight, rows in that order
    theirs.in_proj_weight.copy_(torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight], dim=0))  # (3d, d)
    theirs.in_proj_bias.copy_(torch.cat([ours.w_q.bias, ours.w_k.bias, ours.w_v.bias], dim=0))  # (3d,)
    theirs.out_proj.weight.copy_(ours.w_o.weight)
    theirs.out_proj.bias.copy_(ours.w_o.bias)
    return theirs


@torch.no_grad()
def copy_norm(ours: LayerNorm, theirs: nn.LayerNorm) -> None:
    theirs.weight.copy_(ours.weight)
    theirs.bias.copy_(ours.bias)


@torch.no_grad()
def copy_linear(ours: nn.Linear, theirs: nn.Linear) -> None:
    theirs.weight.copy_(ours.weight)
    theirs.bias.copy_(ours.bias)


def torch_encoder_layer(ours: EncoderLayer) -> nn.TransformerEncoderLayer:
    """An nn.TransformerEncoderLayer (batch_first) holding our layer's weights."""
    a = ours.self_attn
    theirs = nn.TransformerEncoderLayer(
        a.d_model, a.n_heads, ours.ffn.linear1.out_features, dropout=0.0,
        activation=ours.ffn.activation_name, batch_first=True, norm_first=ours.sublayer1.pre,
        layer_norm_eps=ours.sublayer1.norm.eps,
    )
    copy_attention(a, theirs.self_attn)
    copy_linear(ours.ffn.linear1, theirs.linear1)
    copy_linear(ours.ffn.linear2, theirs.linear2)
    copy_norm(ours.sublayer1.norm, theirs.norm1)
    copy_norm(ours.sublayer2.norm, theirs.norm2)
    return theirs.eval()


def torch_decoder_layer(ours: DecoderLayer) -> nn.TransformerDecoderLayer:
    """An nn.TransformerDecoderLayer (batch_first) holding our layer's weights."""
    a = ours.self_attn
    theirs = nn.TransformerDecoderLayer(
        a.d_model, a.n_heads, ours.ffn.linear1.out_features, dropout=0.0,
        activation=ours.ffn.activation_name, batch_first=True, norm_first=ours.sublayer1.pre,
        layer_norm_eps=ours.sublayer1.norm.eps,
    )
    copy_attention(ours.self_attn, theirs.self_attn)
    copy_attention(ours.cross_attn, theirs.multihead_attn)
    copy_linear(ours.ffn.linear1, theirs.linear1)
    copy_linear(ours.ffn.linear2, theirs.linear2)
    copy_norm(ours.sublayer1.norm, theirs.norm1)
    copy_norm(ours.sublayer2.norm, theirs.norm2)
    copy_norm(ours.sublayer3.norm, theirs.norm3)
    return theirs.eval()


def torch_transformer(ours: Transformer) -> nn.Transformer:
    """An nn.Transformer (batch_first) with our weights: encoder/decoder stacks only.

    nn.Transformer always appends a final LayerNorm to both stacks; the paper's post-norm model has
    none, so the stacks are passed in as custom_encoder/custom_decoder with norm only for pre-norm.
    Embeddings and the final linear stay ours (nn.Transformer has neither).
    """
    c = ours.config

    def final_norm(norm):
        if norm is None:
            return None
        theirs = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps)
        copy_norm(norm, theirs)
        return theirs

    encoder = nn.TransformerEncoder(
        torch_encoder_layer(ours.encoder.layers[0]), c.n_layers, norm=final_norm(ours.encoder.norm),
        enable_nested_tensor=False,
    )
    decoder = nn.TransformerDecoder(
        torch_decoder_layer(ours.decoder.layers[0]), c.decoder_layers, norm=final_norm(ours.decoder.norm)
    )
    theirs = nn.Transformer(
        d_model=c.d_model, nhead=c.n_heads, custom_encoder=encoder, custom_decoder=decoder,
        dropout=0.0, batch_first=True,
    )
    # nn.Transformer.__init__ re-initialises every matrix (xavier): copy the weights in only now
    for i, layer in enumerate(ours.encoder.layers):
        theirs.encoder.layers[i] = torch_encoder_layer(layer)
    for i, layer in enumerate(ours.decoder.layers):
        theirs.decoder.layers[i] = torch_decoder_layer(layer)
    for mine, stack in ((ours.encoder.norm, theirs.encoder), (ours.decoder.norm, theirs.decoder)):
        if mine is not None:
            copy_norm(mine, stack.norm)
    return theirs.eval()
