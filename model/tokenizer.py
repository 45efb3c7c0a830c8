"""Tokenisers: text -> pieces, ids and character offsets, built on HF `tokenizers`.

Three kinds, all sharing the same special tokens at fixed ids
([PAD]=0, [BOS]=1, [EOS]=2, [UNK]=3):

- "char": one token per Unicode code point (= one Python str index; an emoji built from
  several code points, like a ZWJ family, is several tokens). The natural unit for Chinese,
  where a character is already a morpheme. Spaces are tokens too, so decode is exact.
- "bpe": byte-pair encoding (Sennrich et al. 2016) trained on the bilingual corpus in
  assets/corpus/. Pre-tokenisation keeps a run of Han characters as ONE pre-token (merges
  never cross pre-token boundaries, so isolating each character would forbid words like 喜欢).
  A merge must be seen 4 times (min_frequency) and no corpus sentence occurs that often, so
  frequent words (喜欢, 位置编码) become tokens but whole sentences do not. A space is kept as the first character of the following Latin word (" like"), so the
  pieces concatenate back to the exact input text.
- "word": word level for English translation targets. Lowercased (documented loss), split on
  whitespace and punctuation, each Han character its own word; decode joins words with spaces.

Characters missing from a vocabulary (emoji, rare Han characters, control characters) become
[UNK]; nothing raises. decode() renders [UNK] as U+FFFD, the Unicode replacement character.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from tokenizers.processors import TemplateProcessing

PAD, BOS, EOS, UNK = "[PAD]", "[BOS]", "[EOS]", "[UNK]"
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK)  # index in this tuple = fixed id in every vocabulary
PAD_ID, BOS_ID, EOS_ID, UNK_ID = range(4)

TOKENIZER_NAMES = ("char", "bpe")  # for any input text: decode(encode(text)) == text modulo [UNK]
SHIPPED_TOKENIZERS = (*TOKENIZER_NAMES, "word")  # "word" is for English targets (lowercased)

ASSETS_DIR = Path(__file__).resolve().parents[1] / "assets"
CORPUS_DIR = ASSETS_DIR / "corpus"
TOKENIZERS_DIR = ASSETS_DIR / "tokenizers"

# Always in every character set, whatever the corpus: printable ASCII plus tab and newline.
BASE_ALPHABET = tuple(sorted(set(string.printable) - set("\r\x0b\x0c")))

# BPE pre-tokens (GPT-2's pattern, without byte-level, with Han runs separate from other
# letters): a Han run | optional space + other letters | optional space + digits |
# optional space + other symbols | whitespace. Together they cover every character.
_BPE_SPLIT = (
    r"\p{Han}+"
    r"| ?[\p{L}\p{M}&&[^\p{Han}]]+"
    r"| ?\p{N}+"
    r"| ?[^\s\p{L}\p{M}\p{N}]+"
    r"|\s+(?!\S)|\s+"
)
_REPLACEMENT_CHAR = "\ufffd"  # never in a vocabulary, so it always encodes to [UNK]
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Encoding:
    """One encoded text. Token t covers text[offsets[t][0]:offsets[t][1]] (Python str indices).

    Special tokens added by encode(add_special_tokens=True) cover the empty span (0, 0).
    For the char and bpe tokenizers, pieces[t] == text[start:end] unless the token is [UNK].
    """

    text: str
    pieces: tuple[str, ...]  # vocabulary strings, e.g. "喜欢", " like", "[UNK]"
    ids: tuple[int, ...]
    offsets: tuple[tuple[int, int], ...]  # (start, end), end exclusive
    is_special: tuple[bool, ...]  # True for [BOS]/[EOS] added around the text

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def bytes(self) -> tuple[bytes, ...]:
        """UTF-8 bytes of the text each token covers (b"" for added special tokens)."""
        # surrogatepass: a lone surrogate (not valid UTF-8) must not raise here either.
        return tuple(
            self.text[start:end].encode("utf-8", "surrogatepass") for start, end in self.offsets
        )


class TextTokenizer:
    """A read-only wrapper over a `tokenizers.Tokenizer` with the fixed special-token ids."""

    def __init__(self, tokenizer: Tokenizer, name: str, source: str = "<memory>") -> None:
        for token_id, token in enumerate(SPECIAL_TOKENS):
            found = tokenizer.token_to_id(token)
            if found != token_id:
                raise ValueError(f"{source}: expected {token} at id {token_id}, found id {found}")
        # Text that happens to contain "[BOS]" is ordinary text, not a control token.
        tokenizer.encode_special_tokens = True
        self._tokenizer = tokenizer
        self.name = name

    pad_id, bos_id, eos_id, unk_id = PAD_ID, BOS_ID, EOS_ID, UNK_ID

    def __repr__(self) -> str:
        return f"TextTokenizer(name={self.name!r}, vocab_size={self.vocab_size})"

    @property
    def vocab_size(self) -> int:
        return self._tokenizer.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str, add_special_tokens: bool = False) -> Encoding:
        """Pieces, ids and offsets of text; [BOS] ... [EOS] around it if add_special_tokens."""
        if not isinstance(text, str):
            raise TypeError(f"encode() takes a str, got {type(text).__name__}")
        # A lone surrogate (possible in a Python str, not in Rust) would make the binding raise;
        # swap it for U+FFFD, one code point for one, so the offsets still index `text`.
        safe_text = _LONE_SURROGATE.sub(_REPLACEMENT_CHAR, text)
        enc = self._tokenizer.encode(safe_text, add_special_tokens=add_special_tokens)
        # The Python binding reports offsets in characters (Unicode scalar values), which are
        # exactly Python str indices; no byte-to-char conversion is needed.
        return Encoding(
            text=text,
            pieces=tuple(enc.tokens),
            ids=tuple(enc.ids),
            offsets=tuple(enc.offsets),
            is_special=tuple(bool(m) for m in enc.special_tokens_mask),
        )

    def decode(self, ids: Iterable[int]) -> str:
        """Text of ids: [PAD]/[BOS]/[EOS] dropped, [UNK] shown as U+FFFD."""
        pieces = []
        for token_id in ids:
            token_id = int(token_id)
            if token_id in (PAD_ID, BOS_ID, EOS_ID):
                continue
            pieces.append(_REPLACEMENT_CHAR if token_id == UNK_ID else self.id_to_piece(token_id))
        return self._tokenizer.decoder.decode(pieces) if pieces else ""

    def id_to_piece(self, token_id: int) -> str:
        token_id = int(token_id)
        piece = self._tokenizer.id_to_token(token_id) if token_id >= 0 else None
        if piece is None:
            raise IndexError(
                f"token id {token_id} is outside the vocabulary (size {self.vocab_size})"
            )
        return piece

    def save(self, path: str | Path) -> None:
        """Write the tokenizer JSON (deterministic for a given vocabulary)."""
        Path(path).write_text(self._tokenizer.to_str(pretty=True) + "\n", encoding="utf-8")

    @classmethod
    def from_file(cls, path: str | Path) -> TextTokenizer:
        """Load a tokenizer JSON written by save(); the name is the file stem."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise FileNotFoundError(f"tokenizer file not found: {path}") from None
        except (OSError, UnicodeDecodeError) as err:
            raise ValueError(f"cannot read tokenizer file {path}: {err}") from err
        try:
            tokenizer = Tokenizer.from_str(text)
        except Exception as err:  # the binding raises a bare Exception on bad JSON
            raise ValueError(f"{path} is not a valid tokenizer file: {err}") from err
        return cls(tokenizer, name=path.stem, source=str(path))


def _finish(tokenizer: Tokenizer, name: str, decoder) -> TextTokenizer:
    """Shared tail of every builder: special tokens, [BOS] $A [EOS] template, decoder."""
    tokenizer.add_special_tokens(list(SPECIAL_TOKENS))
    tokenizer.post_processor = TemplateProcessing(
        single=f"{BOS} $A {EOS}", special_tokens=[(BOS, BOS_ID), (EOS, EOS_ID)]
    )
    tokenizer.decoder = decoder
    return TextTokenizer(tokenizer, name=name)


def _alphabet(texts: Iterable[str]) -> list[str]:
    """Every character of texts plus BASE_ALPHABET, sorted by code point (deterministic)."""
    chars = set(BASE_ALPHABET)
    for text in texts:
        chars.update(text)
    return sorted(chars - {_REPLACEMENT_CHAR})


def build_char_tokenizer(texts: Iterable[str]) -> TextTokenizer:
    """One token per character; the vocabulary is every character of texts plus ASCII."""
    vocab = {token: i for i, token in enumerate(SPECIAL_TOKENS)}
    for char in _alphabet(texts):
        vocab.setdefault(char, len(vocab))
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    # Every code point is its own pre-token, whitespace included.
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    return _finish(tokenizer, "char", decoders.Fuse())


def train_bpe_tokenizer(
    texts: Sequence[str], vocab_size: int = 4000, min_frequency: int = 4
) -> TextTokenizer:
    """BPE merges learnt from texts: the most frequent adjacent pair is merged, repeatedly,
    until vocab_size or until no pair occurs min_frequency times (Sennrich et al. 2016).

    On the shipped corpus min_frequency is what stops training (about 1,700 tokens): a merge
    must be seen 4 times, and no sentence of the corpus occurs that often, so a frequent word
    (喜欢, 位置编码, " attention") becomes a token while an unspaced sentence does not.
    """
    tokenizer = Tokenizer(models.BPE(unk_token=UNK, fuse_unk=False))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(_BPE_SPLIT), behavior="isolated")
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=_alphabet(texts),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return _finish(tokenizer, "bpe", decoders.Fuse())


def build_word_tokenizer(texts: Sequence[str], min_frequency: int = 1) -> TextTokenizer:
    """Word level (lowercased): words and punctuation marks; each Han character is a word."""
    tokenizer = Tokenizer(models.WordLevel(unk_token=UNK))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(r"\p{Han}"), behavior="isolated"),
            pre_tokenizers.Whitespace(),  # \w+ | [^\w\s]+
        ]
    )
    trainer = trainers.WordLevelTrainer(
        vocab_size=1_000_000,
        min_frequency=min_frequency,
        special_tokens=list(SPECIAL_TOKENS),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    # Join words with spaces, then glue punctuation back: "i like her ." -> "i like her."
    return _finish(tokenizer, "word", decoders.WordPiece(prefix="##", cleanup=True))


def read_corpus(corpus_dir: str | Path = CORPUS_DIR) -> tuple[list[str], list[str]]:
    """(Chinese lines, English lines) of the shipped corpus, in file order.

    seed_prose.txt: the lines of our tutorials (shared/seeds) that contain Han characters,
        at most 200 characters, whitespace collapsed, duplicates dropped;
    english_notes.txt: plain English sentences;
    sentences_zh_en.tsv: hand-written "Chinese<TAB>English" sentence pairs.
    """
    corpus_dir = Path(corpus_dir)
    zh_lines = (corpus_dir / "seed_prose.txt").read_text(encoding="utf-8").splitlines()
    en_lines = (corpus_dir / "english_notes.txt").read_text(encoding="utf-8").splitlines()
    for line in (corpus_dir / "sentences_zh_en.tsv").read_text(encoding="utf-8").splitlines():
        zh, en = line.split("\t")
        zh_lines.append(zh)
        en_lines.append(en)
    return [line for line in zh_lines if line], [line for line in en_lines if line]


def build_shipped_tokenizers(corpus_dir: str | Path = CORPUS_DIR) -> dict[str, TextTokenizer]:
    """The tokenizers in assets/tokenizers/, rebuilt from the corpus (same output every run)."""
    zh_lines, en_lines = read_corpus(corpus_dir)
    everything = zh_lines + en_lines
    return {
        "char": build_char_tokenizer(everything),
        "bpe": train_bpe_tokenizer(everything),
        "word": build_word_tokenizer(en_lines),
    }


@functools.cache  # = lru_cache(maxsize=None)
def load_tokenizer(name: str) -> TextTokenizer:
    """The shipped tokenizer `name` from assets/tokenizers/ (cached: tokenizers are read-only)."""
    if name not in SHIPPED_TOKENIZERS:
        raise ValueError(f"unknown tokenizer {name!r}; choose one of {SHIPPED_TOKENIZERS}")
    return TextTokenizer.from_file(TOKENIZERS_DIR / f"{name}.json")
