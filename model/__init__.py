"""Attention Lab's from-scratch Transformer (torch only; no Streamlit, no Plotly)."""

from model.attention import (
    AttentionRecord,
    MultiHeadAttention,
    SelfAttention,
    scaled_dot_product_attention,
)
from model.config import TransformerConfig
from model.device import available_devices, pick_device
from model.layers import DecoderLayer, EncoderLayer, FeedForward, LayerNorm
from model.masks import causal_mask, combine_masks, padding_mask
from model.positional import POSITIONAL_ENCODINGS, relative_rotation, sinusoidal_encoding
from model.tokenizer import TOKENIZER_NAMES, Encoding, TextTokenizer, load_tokenizer
from model.transformer import EmbeddingTrace, StackTrace, Trace, Transformer

__all__ = [
    "AttentionRecord",
    "Encoding",
    "TOKENIZER_NAMES",
    "TextTokenizer",
    "load_tokenizer",
    "DecoderLayer",
    "EmbeddingTrace",
    "EncoderLayer",
    "FeedForward",
    "LayerNorm",
    "MultiHeadAttention",
    "POSITIONAL_ENCODINGS",
    "SelfAttention",
    "StackTrace",
    "Trace",
    "Transformer",
    "TransformerConfig",
    "available_devices",
    "causal_mask",
    "combine_masks",
    "padding_mask",
    "pick_device",
    "relative_rotation",
    "scaled_dot_product_attention",
    "sinusoidal_encoding",
]

from model.demo import DemoModel, load_demo

__all__ += ["DemoModel", "load_demo"]
