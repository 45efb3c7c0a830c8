"""The encoder-decoder Transformer of "Attention Is All You Need" (Vaswani et al., 2017), Figure 1."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from model.attention import check_frozen, frozen_stamp, module_params
from model.config import TransformerConfig
from model.layers import DecoderLayer, DecoderLayerTrace, EncoderLayer, LayerNorm
from model.masks import causal_mask, combine_masks, kernel_mask, padding_mask
from model.positional import build_positional


@dataclass(eq=False)
class EmbeddingTrace:
    """The embedding step: `tokens` (B, T, d_model) are looked up again from the ids on demand (a gather,
    the call the forward pass made: the same numbers), unless autograd tracks the table (then kept)."""

    ids: torch.Tensor  # (B, T) the token ids
    positional: torch.Tensor  # (T, d_model) the positional encodings added (zeros for "none")
    summed: torch.Tensor  # (B, T, d_model) tokens + positional: the first layer's input (eval mode)
    embed: Embeddings | None = None  # else tokens = embed.lookup(ids), on demand
    stamp: tuple | None = None  # frozen_stamp of the table and the ids
    kept_tokens: torch.Tensor | None = None  # where they cannot be looked up again

    @property
    def tokens(self) -> torch.Tensor:
        """(B, T, d_model) token embeddings, already x sqrt(d_model) if scaled."""
        if self.embed is None:
            return self.kept_tokens
        check_frozen(module_params(self.embed.token), [self.ids], self.stamp, "the token ids")
        with torch.no_grad():
            return self.embed.lookup(self.ids)  # (B, T, d_model)

    def kept(self) -> tuple[torch.Tensor, ...]:
        """What this step keeps alive: the ids (or the tokens), the sum, and the positional rows unless they
        are a view of the model's own table (sinusoidal buffer, learned weights), which the model keeps."""
        pe = () if self.positional._base is not None else (self.positional,)
        return (self.ids if self.embed is not None else self.kept_tokens, self.summed, *pe)


@dataclass(eq=False)
class StackTrace:
    """One stack's trace (encoder or decoder): its embedding step, one record per layer, and its output."""

    embeddings: EmbeddingTrace
    layers: list = field(default_factory=list)  # EncoderLayerTrace or DecoderLayerTrace, one per layer
    output: torch.Tensor | None = None  # (B, T, d_model) the stack's output (after the final norm, if any)


@dataclass(eq=False)
class Trace:
    """What a traced forward keeps: see README "The trace". Make one with Trace.of."""

    encoder: StackTrace | None = None
    decoder: StackTrace | None = None
    kept_logits: torch.Tensor | None = None  # (B, T_tgt, tgt_vocab), where they cannot be recomputed
    generator: nn.Module | None = None  # else logits = generator(decoder.output), on demand
    stamp: tuple | None = None  # frozen_stamp of the generator and the decoder's output

    @classmethod
    def of(cls, encoder: StackTrace, decoder: StackTrace, generator: nn.Module, logits: torch.Tensor) -> Trace:
        """The trace of a forward pass whose decoder output gave `logits`: they are derived again on demand
        (the same call on the same tensor) unless autograd tracks the generator (frozen_stamp)."""
        stamp = frozen_stamp(module_params(generator), [decoder.output])
        if stamp is None:
            return cls(encoder, decoder, kept_logits=logits)
        return cls(encoder, decoder, generator=generator, stamp=stamp)

    @property
    def logits(self) -> torch.Tensor | None:
        """(B, T_tgt, tgt_vocab): the final linear of the decoder's output; softmax gives P(next token)."""
        if self.generator is None:
            return self.kept_logits
        check_frozen(module_params(self.generator), [self.decoder.output], self.stamp,
                     "the decoder output the logits come from")
        with torch.no_grad():
            return self.generator(self.decoder.output)  # (B, T_tgt, tgt_vocab)

    def nbytes(self) -> int:
        """Bytes of distinct tensor storage this trace keeps alive."""
        storages: dict[int, int] = {}

        def add(t):
            if isinstance(t, torch.Tensor):
                s = t.untyped_storage()
                storages[s.data_ptr()] = s.nbytes()

        for stack in (self.encoder, self.decoder):
            if stack is None:
                continue
            for t in (*stack.embeddings.kept(), stack.output):
                add(t)
            for layer in stack.layers:
                add(layer.output)
                recs = [layer.self_attn] + ([layer.cross_attn] if isinstance(layer, DecoderLayerTrace) else [])
                for rec in recs:
                    for t in rec.kept():
                        add(t)
        add(self.kept_logits)
        return sum(storages.values())


class Embeddings(nn.Module):
    """Token embedding x sqrt(d_model) (§3.4) plus positional encoding (§3.5), then dropout."""

    def __init__(self, vocab_size: int, config: TransformerConfig) -> None:
        super().__init__()
        self.d_model, self.max_len = config.d_model, config.max_len
        self.scale = math.sqrt(config.d_model) if config.scale_embedding else 1.0  # §3.4: x sqrt(d_model)
        self.token = nn.Embedding(vocab_size, config.d_model, padding_idx=config.pad_id)
        self.positional = build_positional(config.positional, config.max_len, config.d_model)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, ids: torch.Tensor, return_trace: bool = False):
        """(B, T) ids -> Dropout(embedding x sqrt(d_model) + PE) (B, T, d_model) [, EmbeddingTrace] (§3.4, §3.5)."""
        if ids.dim() != 2:
            raise ValueError(f"token ids must have shape (batch, length), got {tuple(ids.shape)}")
        T = ids.size(1)
        if T == 0:
            raise ValueError("the input is empty: give at least one token")
        if T > self.max_len:
            raise ValueError(
                f"sequence of {T} tokens is longer than max_len={self.max_len}: shorten the input "
                "or build the model with a larger max_len (nothing is truncated silently)"
            )
        if ids.min() < 0 or ids.max() >= self.token.num_embeddings:
            raise ValueError(f"token ids must lie in [0, {self.token.num_embeddings}), got {ids.min()}..{ids.max()}")
        tokens = self.lookup(ids)  # embeddings x sqrt(d_model) (§3.4): (B, T, d_model)
        pe = self.positional(T)  # PE (§3.5): (T, d_model)
        summed = tokens + pe  # §3.5: PE added to the (scaled) embeddings, broadcast over the batch: (B, T, d_model)
        out = self.dropout(summed)  # §5.4: dropout on the sums (the identity in eval)
        if not return_trace:
            return out
        stamp = frozen_stamp(module_params(self.token), [ids])
        if stamp is None:  # autograd tracks the table (or inference tensors): keep what was computed
            return out, EmbeddingTrace(ids, pe, summed, kept_tokens=tokens)
        return out, EmbeddingTrace(ids, pe, summed, embed=self, stamp=stamp)

    def lookup(self, ids: torch.Tensor) -> torch.Tensor:
        """(B, T) ids -> (B, T, d_model): the embedding rows x sqrt(d_model) (§3.4)."""
        return self.token(ids) * self.scale  # (B, T, d_model) x sqrt(d_model) (§3.4)


def check_stack_input(name: str, t: torch.Tensor, d_model: int, batch: int | None = None) -> None:
    """A stack's input must be (B, T, d_model) (with the decoder's batch size, for the memory)."""
    if t.dim() != 3 or t.size(-1) != d_model or (batch is not None and t.size(0) != batch):
        want = "(batch, length, d_model)" if batch is None else f"(batch={batch}, length, d_model)"
        raise ValueError(f"{name} must have shape {want} with d_model={d_model}, got {tuple(t.shape)}")


class Encoder(nn.Module):
    """A stack of N encoder layers (plus a final LayerNorm when pre-norm, as is standard)."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.d_model, self.n_heads = config.d_model, config.n_heads
        self.layers = nn.ModuleList(EncoderLayer(config) for _ in range(config.n_layers))
        self.norm = LayerNorm(config.d_model, config.layer_norm_eps) if config.norm == "pre" else None

    def forward(self, x, mask=None, return_trace: bool = False, trace: StackTrace | None = None):
        """x (B, T, d_model) -> (B, T, d_model); mask (bool, True = may attend) broadcasts to (B, H, T, T)."""
        check_stack_input("x", x, self.d_model)
        if not return_trace:  # the mask is checked and converted here, once for every layer
            mask = kernel_mask(mask, (x.size(0), self.n_heads, x.size(1), x.size(1)), x.dtype)
        for layer in self.layers:
            if return_trace:
                x, rec = layer(x, mask, return_trace=True)
                trace.layers.append(rec)
            else:
                x = layer(x, mask)
        return self.norm(x) if self.norm is not None else x


class Decoder(nn.Module):
    """A stack of N decoder layers (plus a final LayerNorm when pre-norm)."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.d_model, self.n_heads = config.d_model, config.n_heads
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.decoder_layers))
        self.norm = LayerNorm(config.d_model, config.layer_norm_eps) if config.norm == "pre" else None

    def forward(self, x, memory, src_mask=None, tgt_mask=None, return_trace=False, trace=None):
        """x (B, Tt, d_model), memory (B, Ts, d_model) -> (B, Tt, d_model); masks as in Transformer."""
        check_stack_input("x", x, self.d_model)
        check_stack_input("memory", memory, self.d_model, batch=x.size(0))
        if not return_trace:  # each mask is checked and converted here, once for every layer
            (B, Tt, _), Ts = x.shape, memory.size(1)
            src_mask = kernel_mask(src_mask, (B, self.n_heads, Tt, Ts), x.dtype)
            tgt_mask = kernel_mask(tgt_mask, (B, self.n_heads, Tt, Tt), x.dtype)
        for layer in self.layers:
            if return_trace:
                x, rec = layer(x, memory, src_mask, tgt_mask, return_trace=True)
                trace.layers.append(rec)
            else:
                x = layer(x, memory, src_mask, tgt_mask)
        return self.norm(x) if self.norm is not None else x


class Transformer(nn.Module):
    """Encoder-decoder Transformer; logits = Linear(decoder output), softmax gives P(next token).

    Masks are explicit, as in torch.nn.Transformer: None means "attend everywhere". Use
    src_mask()/tgt_mask() for the standard padding and padding-AND-look-ahead masks.
    """

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.config = config
        self.src_embed = Embeddings(config.src_vocab_size, config)
        self.tgt_embed = Embeddings(config.tgt_vocab_size, config)
        self.encoder = Encoder(config)
        self.decoder = Decoder(config)
        self.generator = nn.Linear(config.d_model, config.tgt_vocab_size)  # final linear before softmax (§3.4)
        self._init_weights()

    def _init_weights(self) -> None:
        """Xavier-uniform matrices (as torch.nn.Transformer._reset_parameters) and token embeddings
        N(0, 1/d_model) (standard deviation d_model^-1/2), so that embedding × sqrt(d_model) (§3.4) starts
        with variance 1; the [PAD] row is zero. The paper does not state its initialisation; this is the common choice.

        Not done: §3.4 shares one matrix between the two embeddings and the pre-softmax linear
        (a shared zh-en vocabulary). Here source and target have their own vocabularies, so each
        embedding and the generator are separate matrices."""
        for name, p in self.named_parameters():
            if p.dim() > 1 and "positional" not in name:
                nn.init.xavier_uniform_(p)
        for emb in (self.src_embed.token, self.tgt_embed.token):
            with torch.no_grad():
                nn.init.normal_(emb.weight, std=self.config.d_model**-0.5)
                emb.weight[self.config.pad_id].zero_()

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    # -- masks: built in one place -------------------------------------------------------------
    def src_mask(self, src: torch.Tensor) -> torch.Tensor:
        """(B, 1, 1, Ts): keys that are not padding."""
        return padding_mask(src, self.config.pad_id)

    def tgt_mask(self, tgt: torch.Tensor) -> torch.Tensor:
        """(B, 1, Tt, Tt): keys that are not padding AND not in the future."""
        return combine_masks(padding_mask(tgt, self.config.pad_id), causal_mask(tgt.size(1), tgt.device))

    # -- the model ---------------------------------------------------------------------------
    def encode(self, src: torch.Tensor, src_mask: torch.Tensor | None = None, return_trace: bool = False):
        """src ids (B, Ts) -> memory (B, Ts, d_model) [, StackTrace]."""
        if not return_trace:
            return self.encoder(self.src_embed(src), src_mask)
        x, emb = self.src_embed(src, return_trace=True)
        trace = StackTrace(emb)
        trace.output = self.encoder(x, src_mask, return_trace=True, trace=trace)
        return trace.output, trace

    def decode(
        self,
        tgt: torch.Tensor,
        memory: torch.Tensor,
        src_mask: torch.Tensor | None = None,
        tgt_mask: torch.Tensor | None = None,
        return_trace: bool = False,
    ):
        """tgt ids (B, Tt) and memory (B, Ts, d_model) -> decoder output (B, Tt, d_model) [, StackTrace]."""
        if not return_trace:
            return self.decoder(self.tgt_embed(tgt), memory, src_mask, tgt_mask)
        x, emb = self.tgt_embed(tgt, return_trace=True)
        trace = StackTrace(emb)
        trace.output = self.decoder(x, memory, src_mask, tgt_mask, return_trace=True, trace=trace)
        return trace.output, trace

    def forward(
        self,
        src: torch.Tensor,
        tgt: torch.Tensor,
        src_mask: torch.Tensor | None = None,
        tgt_mask: torch.Tensor | None = None,
        return_trace: bool = False,
    ):
        """(B, Ts) source and (B, Tt) target ids -> logits (B, Tt, tgt_vocab) [, Trace]."""
        if not return_trace:
            memory = self.encode(src, src_mask)
            return self.generator(self.decode(tgt, memory, src_mask, tgt_mask))  # (B, Tt, tgt_vocab) (§3.4)
        memory, enc = self.encode(src, src_mask, return_trace=True)
        out, dec = self.decode(tgt, memory, src_mask, tgt_mask, return_trace=True)
        logits = self.generator(out)
        return logits, Trace.of(enc, dec, self.generator, logits)

    @torch.no_grad()
    def greedy_decode(
        self, src: torch.Tensor, bos_id: int, eos_id: int, max_new_tokens: int = 32
    ) -> torch.Tensor:
        """Greedy decoding: start from BOS, append argmax P(next | prefix, src) until EOS. (The paper decodes
        with beam search, beam size 4 and length penalty 0.6, §6.1; greedy is beam size 1.)

        Returns (B, <= 1 + max_new_tokens) ids starting with BOS; finished rows are padded.
        [PAD] and [BOS] are never chosen: a [PAD] written mid-sentence would read as a finished row's padding
        (and be masked as a key at the next step), a second [BOS] as a new start.
        """
        src_mask = self.src_mask(src)
        memory = self.encode(src, src_mask)
        ys = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
        limit = min(max_new_tokens, self.config.max_len - 1)
        never = torch.tensor(sorted({self.config.pad_id, bos_id}), device=src.device)  # ids argmax may not pick
        for _ in range(limit):
            out = self.decode(ys, memory, src_mask, self.tgt_mask(ys))
            logits = self.generator(out[:, -1])  # (B, tgt_vocab)
            logits[:, never] = float("-inf")
            next_id = logits.argmax(dim=-1)  # (B,): argmax P(next | prefix, src) over the tokens a step may write
            next_id = next_id.masked_fill(done, self.config.pad_id)
            ys = torch.cat([ys, next_id[:, None]], dim=1)  # (B, t + 1)
            done |= next_id == eos_id
            if bool(done.all()):
                break
        return ys
