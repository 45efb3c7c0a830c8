"""Tick labels that stay unique, user text that stays text, and numbers and counts as titles and notes say them.

Plotly merges repeated category labels (a heatmap over "I like her" would silently lose rows),
so every token label carries its position: "0:I", "1: ", "2:l". Plotly also renders some HTML
tags (and $...$ as LaTeX) in labels, hover text and titles, so user text is escaped first.
"""

from __future__ import annotations

import html
import math
import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

_VISIBLE = {" ": "␣", "\n": "⏎", "\t": "⇥", "\r": "␍", "\u3000": "□"}
# Unicode's Default_Ignorable_Code_Point characters outside categories C and Z, which draw as nothing too: the
# combining grapheme joiner, Hangul fillers (U+3164: a letter), Khmer inherent vowels, Mongolian and other variation
# selectors (U+FE0F follows most emoji typed on a phone: ❤️ is U+2764 U+FE0F).
_IGNORABLE = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180d\u180f\u3164\ufe00-\ufe0f\uffa0"
                        "\U000e0100-\U000e01ef]")


class Markup(str):
    """Plotly markup we wrote ourselves ("XW<sub>Q</sub>"), which escape_text passes as it is. User text never
    is one: any str operation on a Markup (+, f-string, replace) gives a plain str again, escaped in full, so
    a mistake shows a tag literally instead of rendering one. Join pieces with `markup`."""

    __slots__ = ()


def markup(*pieces: object) -> Markup:
    """Pieces joined into one Markup: a Markup as it is, anything else escaped (user text stays text)."""
    return Markup("".join(escape_text(p) for p in pieces))


def sub(text: str) -> str:
    """A subscript: "d" + sub("k") -> "d<sub>k</sub>" (for a Markup; plotly.js draws it smaller, lower)."""
    return f"<sub>{text}</sub>"


def escape_text(text: object) -> str:
    """User text -> a string Plotly shows literally (HTML tags and $...$ math disabled); a Markup as it is."""
    if isinstance(text, Markup):
        return str.__str__(text)
    return _escape(str(text))


@lru_cache(maxsize=1 << 14)
def _escape(text: str) -> str:  # cached: axis and value names repeat in every panel of a view
    return html.escape(text, quote=True).replace("$", "&#36;")


def signed(text: str) -> str:
    """A formatted number with a true minus sign (U+2212), as plotly.js writes on its axes: "-0.25" ->
    "−0.25", "1.2e-07" -> "1.2e−07"."""
    return text.replace("-", "\u2212")


def num(value: float, spec: str = ".3g") -> str:
    """A number for a title, note or caption: format(value, spec), minus signs true minus signs
    ("3.58e−07", "−0.25"), as the axes and cell values write them. An exact 0 in e notation is "0", as ".3g" writes
    it: view 5's note said "max difference 0.0e+00" where view 6's said "= 0" (a words walk). A large value that a
    "g" spec writes in e notation is written in the digits it rounds to, grouped as counts are: "1,230", where view 5
    said "raw scores have variance 1.23e+03" (a numbers walk), below 1e15 (past it, 16 digits or more in a row are
    harder to read than e+15); e notation asked for by name ("e") stays."""
    if value == 0 and spec.endswith("e"):
        return "0"
    text = format(value, spec)
    if "e+" in text and spec.endswith("g") and abs(value) < 1e15:
        text = format(float(text), ",.0f")  # "1.23e+03" -> "1,230": the same significant digits
    return signed(text)


def num_weight(value: float) -> str:
    """A softmax weight for a note: num(value), but never "1" or "0" for a weight that is not exactly that
    (a numbers walk read "without ÷√d_k it would be 1" for 0.9999995): then the digits it takes to say so."""
    text = num(value)
    for digits in (7, 9, 17):  # float32's digits first; a float64 near 1 may need more
        if text not in ("1", "0") or float(value) == float(text):
            break
        text = num(value, f".{digits}g")
    return text


def count_of(n: int, noun: str) -> str:
    """How many, in words that agree, for every layer (app, ui, lab, viz): "1 head", "0 heads", "2 heads", "20,000
    tokens" (grouped, as the notices write counts); a noun ending in a consonant and y takes -ies ("2 queries")."""
    if n == 1:
        return f"1 {noun}"
    plural = noun[:-1] + "ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" else noun + "s"
    return f"{n:,} {plural}"


def cell_texts(z, value_format: str) -> list[list[str]]:
    """Each cell of a matrix written with the Python format spec `value_format` (".2f", ".1e"), minus
    signs true minus signs; "" for a NaN or infinite cell (the overlays write those)."""
    finite, minus = math.isfinite, "\u2212"  # signed(), inline: this runs for every cell of every small matrix
    return [[format(v, value_format).replace("-", minus) if finite(v) else "" for v in row]
            for row in np.asarray(z, dtype=float).tolist()]


def visible_whitespace(text: str) -> str:
    """Show spaces, newlines, tabs and invisible characters as visible marks (" " -> "␣")."""
    out = []
    for ch in str(text):
        if ch in _VISIBLE:
            out.append(_VISIBLE[ch])
        elif invisible(ch):
            out.append(code_point(ch))
        else:
            out.append(ch)
    return "".join(out)


def invisible(ch: str) -> bool:
    """A character that draws as nothing, or as a box, and so is named by its code point where a token is shown:
    controls, format characters (zero-width, bidi), separators other than the marked ones, and the default-ignorable
    letters and marks (a variation selector U+FE0F, a Hangul filler U+3164)."""
    return unicodedata.category(ch)[0] in "CZ" or _IGNORABLE.match(ch) is not None


def code_point(ch: str) -> str:
    """"⟨U+202E⟩": a character named by its code point."""
    return f"⟨U+{ord(ch):04X}⟩"


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def named_surrogates(text: str) -> str:
    """`text` with each lone surrogate named by its code point, ⟨U+D800⟩: a spec file's "\\ud800" without its pair,
    which python -m lab.export reads (the tokenizer reads it as [UNK]), is no character and has no UTF-8, so a
    table (pandas' Arrow strings), a CSV file or a figure cannot hold it as itself (a fuzzing walk: the tokens view
    and the trained order view raised UnicodeEncodeError)."""
    return _LONE_SURROGATE.sub(lambda m: code_point(m.group()), text)


def visible_controls(text: str) -> str:
    """Show control and format characters (category C: U+0000-001F, the right-to-left override U+202E,
    zero-width joiners...) as ⟨U+XXXX⟩, spaces and everything else as they are: a sentence quoted in running
    text, where an override would turn the rest of the line around and a control draws as a box."""
    return "".join(code_point(ch) if unicodedata.category(ch)[0] == "C" else ch for ch in str(text))


def unique_labels(
    pieces: Sequence[object], *, escape: bool = False, show_whitespace: bool = False
) -> list[str]:
    """Position-prefixed labels "i:piece", unique even when pieces repeat.

    escape=True html-escapes the piece (for Plotly); show_whitespace=True draws " " as "␣".
    """
    labels = []
    for i, piece in enumerate(pieces):
        text = str(piece)
        if show_whitespace:
            text = visible_whitespace(text)
        if escape:
            text = escape_text(text)
        labels.append(f"{i}:{text}")
    return labels


def display_labels(pieces: Sequence[object] | None, n: int) -> list[str]:
    """What figures put on a token axis: unique, escaped, whitespace visible; None -> "0".."n-1"."""
    if pieces is None:
        return [str(i) for i in range(n)]
    pieces = tuple(str(p) for p in pieces)
    if len(pieces) != n:
        raise ValueError(f"got {len(pieces)} labels for an axis of length {n}")
    return list(_display(pieces))


@lru_cache(maxsize=256)
def _display(pieces: tuple[str, ...]) -> tuple[str, ...]:
    """display_labels, cached: every figure of a view labels the same tokens."""
    return tuple(unique_labels(pieces, escape=True, show_whitespace=True))
