"""The shipped demo translators: load_demo("zh-en") (sinusoidal PE) and load_demo("zh-en-nope") (none).

Both were trained by model/train.py with identical settings except the positional encoding.
With PE, 你喜欢她 → "you like her" and 她喜欢你 → "she likes you"; without PE the encoder sees a
bag of characters, so every reordering of a sentence gets the same translation.

Input rules for translate() / translate_ids():
- Whitespace is removed first (Chinese is written without spaces and the models never saw one):
  "你 喜欢 她" reads as "你喜欢她".
- One source token per character. A character the model never saw becomes [UNK] (id 3); nothing
  raises. (Printable ASCII is in the vocabulary too, but untrained: expect nonsense.)
- Empty text (or only whitespace) translates to "" without running the model.
- Text longer than config.max_len characters (64; the training sentences have at most 12) raises
  SourceTooLongError, a ValueError, rather than being cut silently.
- Decoding is greedy and stops at [EOS] or after config.max_len - 1 tokens.

load_demo caches: the same DemoModel object comes back every call. Treat it as read-only (its
parameters have requires_grad=False); to experiment, build a new Transformer or use
model.analysis.with_positional, which copies.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import torch

from model.checkpoint import MODELS_DIR, load_checkpoint
from model.config import TransformerConfig
from model.device import pick_device
from model.tokenizer import BOS_ID, EOS_ID, TextTokenizer
from model.transformer import Transformer

DEMO_NAMES = ("zh-en", "zh-en-nope")  # sinusoidal PE, no PE
_WHITESPACE = re.compile(r"\s+")


class SourceTooLongError(ValueError):
    """The source has more characters than the model's max_len."""


@dataclass(frozen=True)
class Translation:
    """One greedy translation, step by step."""

    source: str  # the input after whitespace removal
    src_ids: tuple[int, ...]  # one id per source character (no [BOS]/[EOS] on the source side)
    src_pieces: tuple[str, ...]  # the characters, "[UNK]" where unknown
    out_ids: tuple[int, ...]  # [BOS], then one id per decoding step (the last is [EOS] if finished)
    out_pieces: tuple[str, ...]  # "[BOS]", "she", "likes", "you", "[EOS]"
    text: str  # the English translation (specials dropped)

    @property
    def finished(self) -> bool:
        """True when decoding stopped at [EOS] rather than at the length limit."""
        return len(self.out_ids) > 1 and self.out_ids[-1] == EOS_ID

    @property
    def decoder_input(self) -> tuple[int, ...]:
        """The ids the decoder read, one step behind out_ids: step t read out_ids[t], predicted out_ids[t + 1]."""
        return self.out_ids[:-1]


@dataclass(frozen=True, eq=False)
class DemoModel:
    """A trained translator with its tokenizers; read-only when it comes from load_demo."""

    name: str
    model: Transformer  # eval mode
    src_tokenizer: TextTokenizer
    tgt_tokenizer: TextTokenizer
    config: TransformerConfig
    metadata: dict  # training settings and scores (see assets/models/<name>/config.json)

    @classmethod
    def from_directory(cls, directory: str | Path, device: str | torch.device = "cpu") -> DemoModel:
        """Load any checkpoint directory (uncached); errors are model.checkpoint.CheckpointError."""
        ckpt = load_checkpoint(directory, device)
        return cls(Path(directory).name, ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer, ckpt.config, ckpt.metadata)

    @staticmethod
    def normalize(text: str) -> str:
        """The text the model reads: all whitespace removed."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return _WHITESPACE.sub("", text)

    @staticmethod
    def source_positions(text: str) -> list[int]:
        """Where each character of normalize(text) sits in text: len(normalize(text)) indices, increasing."""
        kept, last = [], 0
        for gap in _WHITESPACE.finditer(text):
            kept.extend(range(last, gap.start()))
            last = gap.end()
        return kept + list(range(last, len(text)))

    def encode_source(self, text: str) -> tuple[list[int], list[str]]:
        """(ids, pieces) of the normalised source; raises SourceTooLongError beyond max_len."""
        source = self.normalize(text)
        if len(source) > self.config.max_len:
            raise SourceTooLongError(
                f"the source has {len(source)} characters (spaces removed) but {self.name} reads at most "
                f"{self.config.max_len} (it was trained on sentences of up to 12): shorten it"
            )
        enc = self.src_tokenizer.encode(source)
        return list(enc.ids), list(enc.pieces)

    @torch.no_grad()
    def translate_ids(self, text: str) -> Translation:
        """Greedy translation with every id and piece, for a step-by-step view."""
        source = self.normalize(text)
        src_ids, src_pieces = self.encode_source(source)
        if not src_ids:
            return Translation(source, (), (), (BOS_ID,), ("[BOS]",), "")
        src = torch.tensor([src_ids], dtype=torch.long, device=self.model.device)  # (1, Ts)
        ys = self.model.greedy_decode(src, BOS_ID, EOS_ID, max_new_tokens=self.config.max_len - 1)
        out = ys[0].tolist()  # (1, T) -> T ids of the one sentence
        if EOS_ID in out:
            out = out[: out.index(EOS_ID) + 1]
        pieces = tuple(self.tgt_tokenizer.id_to_piece(i) for i in out)
        return Translation(
            source, tuple(src_ids), tuple(src_pieces), tuple(out), pieces, self.tgt_tokenizer.decode(out)
        )

    def translate(self, text: str) -> str:
        """English for Chinese text ("" for empty text)."""
        return self.translate_ids(text).text

    @torch.no_grad()
    def translate_many(self, texts: list[str], batch_size: int = 256) -> list[str]:
        """translate() for many texts at once: padded batches, padding masked, same answers."""
        # here, not at the top: `import model` loads this module, and with model.train loaded too, runpy warned that
        # `python -m model.train` ran a module already imported
        from model.train import pad_rows

        sources = [self.encode_source(t)[0] for t in texts]
        out = [""] * len(texts)
        todo = [i for i, ids in enumerate(sources) if ids]
        for start in range(0, len(todo), batch_size):
            rows = todo[start : start + batch_size]
            src = pad_rows([sources[i] for i in rows]).to(self.model.device)  # (B, Ts)
            ys = self.model.greedy_decode(src, BOS_ID, EOS_ID, max_new_tokens=self.config.max_len - 1)
            for i, ids in zip(rows, ys.tolist(), strict=True):
                out[i] = self.tgt_tokenizer.decode(ids[: ids.index(EOS_ID)] if EOS_ID in ids else ids)
        return out


@functools.lru_cache(maxsize=8)
def _load_cached(name: str, device: str) -> DemoModel:
    demo = DemoModel.from_directory(MODELS_DIR / name, device)
    demo.model.requires_grad_(False)  # shared by every caller: nobody trains it
    return demo


def load_demo(name: str = "zh-en", device: str | torch.device = "cpu") -> DemoModel:
    """A shipped demo model, cached per (name, device): "zh-en" (sinusoidal PE) or "zh-en-nope" (no PE).

    device: "cpu" (default), "cuda", "mps" or "auto" (model.device.pick_device).
    """
    if name not in DEMO_NAMES:
        raise ValueError(f"unknown demo model {name!r}: choose one of {DEMO_NAMES}")
    resolved = pick_device(device) if device == "auto" else torch.device(device)
    return _load_cached(name, str(resolved))
