"""Hyper-parameters of the Transformer of "Attention Is All You Need" (Vaswani et al., 2017)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

NORM_PLACEMENTS = ("post", "pre")
ACTIVATIONS = ("relu", "gelu")


@dataclass(frozen=True)
class TransformerConfig:
    """Every size and switch of the model; the defaults are the paper's base model (Table 3)."""

    src_vocab_size: int = 1000  # source-side vocabulary (tokenizer's vocab_size)
    tgt_vocab_size: int = 1000  # target-side vocabulary; the final linear projects onto it
    d_model: int = 512  # width of every token vector (paper: d_model, §3.1)
    n_heads: int = 8  # attention heads per block (paper: h); d_k = d_model / n_heads (§3.2.2)
    n_layers: int = 6  # encoder layers (paper: N)
    n_decoder_layers: int | None = None  # decoder layers; None = same as n_layers
    d_ff: int = 2048  # inner width of the position-wise feed-forward network (eq. 2, §3.3)
    dropout: float = 0.1  # P_drop on sub-layer outputs and embedding sums (§5.4), and attention weights
    max_len: int = 5000  # longest sequence the positional encoding covers
    positional: str = "sinusoidal"  # "sinusoidal" | "learned" | "none" (see model.positional)
    norm: str = "post"  # "post": LayerNorm(x + Sublayer(x)) as in the paper; "pre": x + Sublayer(LayerNorm(x))
    activation: str = "relu"  # feed-forward non-linearity: "relu" (paper) or "gelu"
    scale_embedding: bool = True  # multiply token embeddings by sqrt(d_model) (paper §3.4)
    pad_id: int = 0  # id of the padding token (its embedding row is kept at zero)
    layer_norm_eps: float = 1e-5  # eps inside the square root of LayerNorm, as nn.LayerNorm

    def __post_init__(self) -> None:
        from model.positional import POSITIONAL_ENCODINGS  # avoid an import cycle

        def need(ok: bool, message: str) -> None:
            if not ok:
                raise ValueError(message)

        for name in ("src_vocab_size", "tgt_vocab_size", "d_model", "n_heads", "n_layers", "d_ff", "max_len"):
            value = getattr(self, name)
            need(isinstance(value, int) and value >= 1, f"{name} must be a positive integer, got {value!r}")
        need(
            self.n_decoder_layers is None
            or (isinstance(self.n_decoder_layers, int) and self.n_decoder_layers >= 1),
            f"n_decoder_layers must be None or a positive integer, got {self.n_decoder_layers!r}",
        )
        need(
            self.d_model % self.n_heads == 0,
            f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}: choose n_heads among "
            f"{[h for h in range(1, min(self.d_model, 64) + 1) if self.d_model % h == 0]} "
            "or change d_model",
        )
        need(0.0 <= self.dropout < 1.0, f"dropout must be in [0, 1), got {self.dropout!r}")
        need(
            self.positional in POSITIONAL_ENCODINGS,
            f"positional={self.positional!r} is unknown: choose one of {sorted(POSITIONAL_ENCODINGS)}",
        )
        need(
            not (self.positional == "sinusoidal" and self.d_model % 2),
            f"d_model={self.d_model} is odd, but sinusoidal encoding pairs dimensions (sin, cos): "
            "use an even d_model or positional='learned'/'none'",
        )
        need(self.norm in NORM_PLACEMENTS, f"norm={self.norm!r} is unknown: choose 'post' or 'pre'")
        need(
            self.activation in ACTIVATIONS,
            f"activation={self.activation!r} is unknown: choose 'relu' or 'gelu'",
        )
        need(self.layer_norm_eps > 0, f"layer_norm_eps must be > 0, got {self.layer_norm_eps!r}")
        need(
            0 <= self.pad_id < min(self.src_vocab_size, self.tgt_vocab_size),
            f"pad_id={self.pad_id} must be a valid id in both vocabularies",
        )

    @property
    def d_k(self) -> int:
        """Width of one head's queries, keys and values (paper: d_k = d_v = d_model / h)."""
        return self.d_model // self.n_heads

    @property
    def decoder_layers(self) -> int:
        """Decoder layers: n_decoder_layers, or n_layers where it is None (the paper's N = 6 for both stacks)."""
        return self.n_layers if self.n_decoder_layers is None else self.n_decoder_layers

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> TransformerConfig:
        """Build from a dict (e.g. a JSON checkpoint config); unknown keys are an error, not ignored."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown TransformerConfig field(s) {unknown}; known fields: {sorted(known)}")
        return cls(**data)
