"""Models and runs for a FigureSpec: tokenise, pad A and B into one batch, trace one forward pass."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

import torch

from lab.spec import FigureSpec
from model import Transformer, TransformerConfig, load_tokenizer, pick_device
from model.analysis import traced_forward, with_positional
from model.data import corpus_characters
from model.tokenizer import BOS_ID, PAD, PAD_ID, SPECIAL_TOKENS, UNK_ID, Encoding, TextTokenizer
from model.transformer import Trace
from viz.labels import count_of, invisible

RANDOM_MAX_LEN = 512  # tokens per sentence the random model takes; longer input is cut, with a notice
MAX_INPUT_CHARS = 20_000  # characters tokenised at all; beyond this a paste is cut first


@dataclass(eq=False)
class Loaded:
    """A read-only model with its tokenizers. Shared by every session: never mutate it."""

    name: str  # "random" | "zh-en" | "zh-en-nope"
    model: Transformer
    src_tokenizer: TextTokenizer
    tgt_tokenizer: TextTokenizer
    demo: object | None = None  # model.demo.DemoModel for trained models

    @property
    def trained(self) -> bool:
        return self.demo is not None


def model_fields(spec: FigureSpec) -> tuple:
    """The spec fields that decide the model (the cache key of load_model)."""
    if spec.model == "random":
        return (spec.model, spec.tokenizer, spec.positional, spec.d_model, spec.n_heads, spec.n_layers,
                spec.d_ff, spec.norm, spec.seed, spec.device)
    return (spec.model, spec.positional, spec.device)


def _device(name: str) -> torch.device:
    """pick_device(name); on CUDA with full-precision float32 matmuls, as on the CPU (TF32 would change
    the figures' numbers in the 4th digit)."""
    target = pick_device(name)
    if target.type == "cuda":
        torch.set_float32_matmul_precision("highest")
    return target


def load_model(key: tuple) -> Loaded:
    """Build (random) or load (trained) the model a spec names. Deterministic for a key."""
    if key[0] == "random":
        _, tokenizer, positional, d_model, n_heads, n_layers, d_ff, norm, seed, device = key
        tok = load_tokenizer(tokenizer)
        config = TransformerConfig(
            src_vocab_size=tok.vocab_size, tgt_vocab_size=tok.vocab_size, d_model=d_model,
            n_heads=n_heads, n_layers=n_layers, d_ff=d_ff, dropout=0.1, max_len=RANDOM_MAX_LEN,
            positional="sinusoidal" if d_model % 2 == 0 else "none", norm=norm, pad_id=PAD_ID,
        )
        gen_state = torch.random.get_rng_state()
        try:
            torch.manual_seed(seed)
            model = Transformer(config)
            if positional != config.positional:
                torch.manual_seed(seed + 1)
                # same weights, other positional encoding: toggling PE changes only PE
                model = with_positional(model, positional)
        finally:
            torch.random.set_rng_state(gen_state)
        model = model.to(_device(device)).eval()
        for p in model.parameters():
            p.requires_grad_(False)
        return Loaded("random", model, tok, tok)
    _, positional, device = key
    from model.demo import load_demo  # trained models appear with the demo assets

    name = "zh-en" if positional == "sinusoidal" else "zh-en-nope"
    target = _device(device)
    demo = load_demo(name, device=target) if target.type != "cpu" else load_demo(name)
    trained_characters(demo)  # drawn once with the model (~2 s), not when a sentence comes
    return Loaded(name, demo.model, demo.src_tokenizer, demo.tgt_tokenizer, demo)


def trained_characters(demo) -> frozenset[str]:
    """The characters of the sentences a shipped translator learned from (untrained_notice)."""
    return corpus_characters(demo.metadata.get("training", {}).get("corpus_seed", 0))


@dataclass(eq=False)
class Sentence:
    key: str  # "a" or "b"
    text: str  # the text as typed
    encoding: Encoding  # the source tokens (after any cut)
    tgt_ids: list[int]  # decoder input: [BOS] + ... (a translation for trained models)
    tgt_pieces: list[str]
    translation: str | None = None  # trained models: the greedy translation
    cut_from: int | None = None  # number of tokens before cutting, when the input was too long
    predicted: list[str] | None = None  # trained models: what step t wrote, having read tgt_pieces[t]

    @property
    def src_ids(self) -> list[int]:
        return list(self.encoding.ids)

    def step_labels(self) -> list[str]:
        """Each decoding step as "read→written" ("[BOS]→she"; no spaces, which a figure shows as ␣) where the model
        translates: labelled by the token it reads alone, a cross-attention row looked like a word alignment one
        step behind (a numbers walk: the row "you" put its weight on 喜欢, the word for the "like" it writes).
        Else (a random model) the tokens read."""
        if self.predicted is None:
            return list(self.tgt_pieces)
        return [f"{read}→{wrote}" for read, wrote in zip(self.tgt_pieces, self.predicted, strict=True)]

    @property
    def finished(self) -> bool:
        """Trained models: greedy decoding wrote [EOS] at its last step (else it stopped at the length limit)."""
        return self.predicted is None or self.predicted[-1:] == ["[EOS]"]

    def source_token(self, block: str, row: int) -> int | None:
        """The source token that query row `row` of `block` reads: the encoder's own row; in a decoder block row − 1
        where the decoder reads [BOS] + the source (a random model: no translation), else None ([BOS], or a
        translation's token). ui/look.py follow_the_token moves the query control between blocks by this rule."""
        if block != "encoder self":
            if self.predicted is not None or row < 1:
                return None
            row -= 1
        return row if row < len(self.encoding.offsets) else None


@dataclass(eq=False)
class Run:
    sentences: list[Sentence]  # the non-empty ones, in order a, b; row i of the batch is sentences[i]
    src: torch.Tensor  # (B, Ts) source ids, shorter rows padded with [PAD]
    tgt: torch.Tensor  # (B, Tt) decoder inputs
    trace: Trace
    notices: list[str] = field(default_factory=list)

    def row(self, key: str) -> int | None:
        for i, s in enumerate(self.sentences):
            if s.key == key:
                return i
        return None

    def shown_row(self, key: str) -> int:
        """The batch row of the sentence the views show: sentence `key`'s, or the other's where it is empty (the
        one row there is)."""
        row = self.row(key)
        return 0 if row is None else row

    def src_pieces(self, row: int) -> list[str]:
        """Source tokens of one batch row including the [PAD]s the batch added."""
        pieces = list(self.sentences[row].encoding.pieces)
        return pieces + [PAD] * (self.src.size(1) - len(pieces))

    def tgt_pieces(self, row: int) -> list[str]:
        pieces = list(self.sentences[row].tgt_pieces)
        return pieces + [PAD] * (self.tgt.size(1) - len(pieces))


def read_source(loaded: Loaded, key: str, text: str, notices: list[str]) -> tuple[str, Encoding, int | None]:
    """(text the model reads, its source tokens, token count before cutting or None).

    Random models read at most max_len - 1 tokens (room for [BOS]); trained translators read the text
    without whitespace, at most max_len characters. Longer input is cut, and a notice says so. Pieces
    the tokenizer does not know get a notice too (unknown_notice), and so does a special token's name typed in the
    text, read as its characters (spelled_specials_notice).
    """
    source, enc, cut_from = _within_limits(loaded, key, text, notices)
    owner = "the trained models'" if loaded.trained else f"the {loaded.src_tokenizer.name} tokenizer's"  # zh-en's = -nope's
    # the text the model reads: a random model's `source` runs on past its last token where its tokens were cut
    read = source[:enc.offsets[-1][1]] if cut_from is not None else source
    said = [unknown_notice(key, source, enc, owner), spelled_specials_notice(key, read)]
    if loaded.trained:  # one notice each for zh-en and zh-en-nope (view 6 runs both)
        said += [spaces_notice(key, text[:MAX_INPUT_CHARS], cut=len(text) > MAX_INPUT_CHARS),
                 untrained_notice(key, source, enc, trained_characters(loaded.demo))]
    notices += [note for note in said if note is not None and note not in notices]
    return source, enc, cut_from


def _within_limits(loaded: Loaded, key: str, text: str, notices: list[str]) -> tuple[str, Encoding, int | None]:
    """read_source's cuts, each with a notice: a paste to MAX_INPUT_CHARS, then the tokens past what the model takes.
    After the first cut the counts said are of the part read, and said so ("has 16,000 tokens" of a paste of 24,000
    read as the whole sentence's, a tokens walk)."""
    sentence = f"Sentence {key.upper()}"
    if len(text) > MAX_INPUT_CHARS:
        notices.append(f"{sentence} has {len(text):,} characters; only the first {MAX_INPUT_CHARS:,} are read.")
        text = text[:MAX_INPUT_CHARS]
        sentence, without_spaces = f"{sentence}'s first {MAX_INPUT_CHARS:,} characters are", "{:,} without spaces"
    else:
        sentence, without_spaces = f"{sentence} has", "{:,} characters (spaces removed)"
    if loaded.trained:
        source = loaded.demo.normalize(text)
        limit = loaded.model.config.max_len
        if len(source) <= limit:
            return source, loaded.src_tokenizer.encode(source), None
        # the pair's (zh-en, zh-en-nope: one max_len), so that view 6, which runs both, says it once
        notices.append(f"{sentence} {without_spaces.format(len(source))}; the trained models read at most {limit}, "
                       f"so only the first {limit} are translated and shown.")
        return source[:limit], loaded.src_tokenizer.encode(source[:limit]), len(source)
    enc = loaded.src_tokenizer.encode(text)
    limit = loaded.model.config.max_len - 1  # room for the [BOS] that prepare puts before them
    if len(enc) <= limit:
        return text, enc, None
    notices.append(f"{sentence} {len(enc):,} tokens; the model takes {limit}, "
                   f"so only the first {limit} are shown.")
    cut = Encoding(text=enc.text, pieces=enc.pieces[:limit], ids=enc.ids[:limit],
                   offsets=enc.offsets[:limit], is_special=enc.is_special[:limit])
    return text, cut, len(enc)


def _shown(piece: str) -> str:
    """A piece of text as a notice names it: quoted, or as code points where it would not show. Right-to-left
    text sits in a first-strong isolate (U+2068 ... U+2069), so that a list of Arabic or Hebrew letters keeps
    its order and its quotes (a bad-input walk read “ب“ ,”ح“ for “ح”, “ب”); a combining mark with nothing before
    it sits on a dotted circle, as Unicode's charts show one (it had sat on the quote mark)."""
    if any(invisible(c) for c in piece):  # every character not isprintable() is, and a variation selector too
        return " ".join(f"U+{ord(c):04X}" for c in piece)
    if piece and unicodedata.category(piece[0]).startswith("M"):
        piece = "◌" + piece
    if any(unicodedata.bidirectional(c) in ("R", "AL") for c in piece):
        piece = f"\u2068{piece}\u2069"
    return f"“{piece}”"


def _listed(pieces: list[str]) -> str:
    """The first 8 pieces as a notice names them (_shown), and how many more there are."""
    more = f" and {len(pieces) - 8} more" if len(pieces) > 8 else ""
    return ", ".join(_shown(p) for p in pieces[:8]) + more


def unknown_notice(key: str, source: str, enc: Encoding, owner: str) -> str | None:
    """A notice naming the pieces of a sentence its tokenizer read as [UNK] (None when there are none):
    the model gets one and the same token for all of them, so it cannot tell them apart. owner: whose
    vocabulary, possessive ("the char tokenizer's")."""
    unknown = list(dict.fromkeys(source[s:e] for (s, e), i in zip(enc.offsets, enc.ids, strict=True) if i == UNK_ID))
    if not unknown:
        return None
    return (f"Sentence {key.upper()}: {_listed(unknown)} {'is' if len(unknown) == 1 else 'are'} not in {owner} "
            "vocabulary, so the model reads [UNK] there: one and the same token for every unknown piece.")


def spelled_specials_notice(key: str, source: str) -> str | None:
    """A notice where `source`, the text the model reads (read_source passes the part before a cut, where a name past
    it was said to be read), spells a special token's name ("[BOS]"): it is read as those characters, not as
    the token (TextTokenizer sets encode_special_tokens; tokenizers' own encode would give [BOS], id 1, and a student
    comparing the two saw them differ with no word why)."""
    spelled = sorted((t for t in SPECIAL_TOKENS if t in source), key=source.index)
    if not spelled:
        return None
    one = len(spelled) == 1
    return (f"Sentence {key.upper()}: {', '.join(_shown(t) for t in spelled)} {'is' if one else 'are'} read as the "
            f"characters typed, not as the special token{'' if one else 's'} of {'that name' if one else 'those names'}"
            ", which only the model puts in ([BOS] first in the decoder's input, [EOS] where a translation ends, "
            "[PAD] to line up A and B, [UNK] for a character the vocabulary lacks).")


def spaces_notice(key: str, text: str, cut: bool = False) -> str | None:
    """A trained translator reads its sentence without whitespace (model.demo.DemoModel.normalize): say so
    where the sentence has some, or its token count differs from the random model's with no word why. cut: `text` is
    the first MAX_INPUT_CHARS characters of a longer paste, and the count is said of them."""
    removed = sum(c.isspace() for c in text)
    if not removed or not text.strip():
        return None
    whose = f"{'the' if cut else 'its'} {count_of(removed, 'whitespace character')}" + (
        f" of its first {MAX_INPUT_CHARS:,}" if cut else "")
    return (f"Sentence {key.upper()}: the trained models read Chinese, which is written without spaces, so {whose} "
            f"{'is' if removed == 1 else 'are'} removed before tokenising.")  # "1 whitespace character ... is", cut or not


def untrained_notice(key: str, source: str, enc: Encoding, seen: frozenset[str]) -> str | None:
    """Characters the translators have a token for but never met in their training sentences (English letters,
    digits: the vocabulary has them, the training data did not): what they make of them cannot be trusted, the
    translation included, however well they score on the sentences they learned from."""
    known = (source[s:e] for (s, e), i in zip(enc.offsets, enc.ids, strict=True) if i != UNK_ID)
    new = [c for c in dict.fromkeys(known) if c not in seen]
    if not new:
        return None
    it = "it" if len(new) == 1 else "them"
    return (f"Sentence {key.upper()}: {_listed(new)} never occur{'s' if len(new) == 1 else ''} in the sentences the "
            f"trained models learned from (short Chinese sentences such as 你喜欢她): they have a token for {it} but "
            f"learned nothing about {it}, so what they make of this sentence, the translation included, cannot be "
            "trusted.")


def prepare(loaded: Loaded, key: str, text: str, notices: list[str]) -> Sentence | None:
    """Tokenise one sentence, cut it to what the model takes (with a notice), make its decoder input."""
    if not text.strip():
        return None
    source, enc, cut_from = read_source(loaded, key, text, notices)
    if not len(enc):
        return None
    if loaded.trained:
        info = loaded.demo.translate_ids(source)  # greedy: [BOS] y1 .. yn [EOS]
        dec_ids = list(info.decoder_input)  # what the decoder read: [BOS] y1 .. yn, one step behind
        return Sentence(key, text, enc, dec_ids, list(info.out_pieces[: len(dec_ids)]),
                        translation=info.text, cut_from=cut_from,
                        predicted=list(info.out_pieces[1: len(dec_ids) + 1]))  # step t read out[t], wrote out[t + 1]
    # random model: the decoder reads [BOS] + the same tokens (there is no translation to show), max_len in all, as
    # read_source left room for the [BOS]
    return Sentence(key, text, enc, [BOS_ID, *enc.ids], ["[BOS]", *enc.pieces], cut_from=cut_from)


def _pad(rows: list[list[int]]) -> torch.Tensor:
    width = max(len(r) for r in rows)
    return torch.tensor([r + [PAD_ID] * (width - len(r)) for r in rows], dtype=torch.long)


def run(loaded: Loaded, sentence_a: str, sentence_b: str, mask: str) -> Run | None:
    """Trace one forward pass over the non-empty sentences (None when both are empty)."""
    notices: list[str] = []
    sentences = [s for s in (prepare(loaded, "a", sentence_a, notices), prepare(loaded, "b", sentence_b, notices)) if s]
    if not sentences:
        return None
    device = loaded.model.device
    src = _pad([s.src_ids for s in sentences]).to(device)
    tgt = _pad([s.tgt_ids for s in sentences]).to(device)
    trace = traced_forward(loaded.model, src, tgt, mask)
    return Run(sentences, src, tgt, trace, notices)
