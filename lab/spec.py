"""FigureSpec: everything that decides what a figure shows, as one validated, shareable value.

The same spec is what the app's share link carries in its URL query parameters, what the app
shows as "the spec of this view", and what `python -m lab.export SPEC.json --out DIR` renders.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import typing
import unicodedata
from collections.abc import Mapping
from dataclasses import InitVar, dataclass, fields

MODELS = ("random", "zh-en")  # zh-en: the trained demo; positional picks zh-en or zh-en-nope
TOKENIZERS = ("char", "bpe")
POSITIONALS = ("sinusoidal", "learned", "none")
MASKS = ("paper", "none", "padding", "look-ahead")
BLOCKS = ("encoder self", "decoder self", "cross")
VIEWS = ("tokens", "positional", "attention", "heads", "query", "order", "translate")
THEMES = ("default", "paper", "paper-sans", "slide", "dark")
MIN_EXPORT_SIDE = 100  # an export width or height: 0 (the theme's own) or at least this many CSS px
FORMATS = ("svg", "pdf", "png")
NORMS = ("post", "pre")
DEVICES = ("auto", "cpu", "cuda", "mps")
MAX_CHARS = 2000  # longer pastes are cut, with a notice (the model's max_len bounds tokens too)
# the whole numbers' ranges, inclusive (width and height may also be 0: the theme's own)
_RANGES = {
    "d_model": (2, 1024), "n_heads": (1, 64), "n_layers": (1, 12), "d_ff": (1, 8192),
    "layer": (0, 63), "head": (0, 63), "query": (0, 100_000), "seed": (0, 2**31 - 1),
    "width": (MIN_EXPORT_SIDE, 8000), "height": (MIN_EXPORT_SIDE, 8000),
}


class SpecError(ValueError):
    """A spec that cannot be drawn; the message names the field (and `about`, the other fields a conflict is
    between: d_model's split into n_heads is n_heads's error, about d_model too)."""

    def __init__(self, field: str, message: str, about: tuple[str, ...] = ()) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message  # what is wrong with it, without its name
        self.about = about


@dataclass(frozen=True)
class FigureSpec:
    sentence_a: str = "你喜欢她"  # first sentence (the source in encoder views)
    sentence_b: str = "她喜欢你"  # second sentence, compared with the first
    model: str = "random"  # "random": a configurable random model; "zh-en": the trained translator
    tokenizer: str = "char"  # random model only; the trained model uses its own tokenizers
    positional: str = "sinusoidal"  # "none" removes position information (zh-en -> zh-en-nope)
    mask: str = "paper"  # see model.analysis.MASK_MODES
    block: str = "encoder self"  # which attention block the attention/heads/query views show
    layer: int = 0
    head: int = 0
    heads: tuple[int, ...] = ()  # heads to export; () = all heads
    query: int = 0  # the query token of the one-query view
    sentence: str = "a"  # which sentence the attention views show: "a" or "b"
    d_model: int = 64  # random model size ...
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int = 256
    norm: str = "post"
    seed: int = 0  # random model initialisation
    device: str = "cpu"
    views: tuple[str, ...] = ("attention",)  # views to export
    theme: str = "default"  # default | paper (serif) | paper-sans | slide | dark
    width: int = 0  # export size in CSS pixels; 0 = the theme's own (paper 600x480, slide 1280x720, else 900x600)
    height: int = 0
    scale: float = 3.125  # PNG scale factor: 3.125 x 96 dpi = 300 dpi
    format: str = "svg"
    # not a field: the ranges an impossible spec's advice picks its d_models and heads from (d_model's and n_heads's),
    # _RANGES where None; the app gives its boxes' narrower ones (ui.state.UI_LIMITS), so as not to offer a d_model
    # its box refuses (d_model 511 in 7 heads was told "choose 504 or 518", past the box's 512)
    offer: InitVar[Mapping[str, tuple[float, float]] | None] = None

    def __post_init__(self, offer: Mapping[str, tuple[float, float]] | None) -> None:
        offer = offer or _RANGES
        choices = {
            "model": MODELS, "tokenizer": TOKENIZERS, "positional": POSITIONALS, "mask": MASKS,
            "block": BLOCKS, "theme": THEMES, "format": FORMATS, "norm": NORMS, "device": DEVICES,
            "sentence": ("a", "b"),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise SpecError(name, f"{getattr(self, name)!r} is not one of {list(allowed)}")
        for view in self.views:
            if view not in VIEWS:
                raise SpecError("views", f"{view!r} is not one of {list(VIEWS)}")
        if not self.views:
            raise SpecError("views", "name at least one view")
        for name, (lo, hi) in _RANGES.items():
            value = getattr(self, name)
            if name in ("width", "height") and value == 0:
                continue  # the theme's own size
            if not lo <= value <= hi:
                raise SpecError(name, f"{value} is outside [{lo}, {hi}]")
        if not 0.1 <= self.scale <= 10:
            raise SpecError("scale", f"{self.scale} is outside [0.1, 10]")
        if self.d_model % self.n_heads:
            divisors = [h for h in range(1, min(self.d_model, offer["n_heads"][1]) + 1) if self.d_model % h == 0]
            some = ", ".join(map(str, divisors[:-1])) + (" or " if len(divisors) > 1 else "") + str(divisors[-1])
            # a prime d_model past the heads' range (97) splits into 1 head alone: "1 heads do" (a words walk)
            some = f"{some} heads do" if len(divisors) > 1 else "only 1 head does"
            raise SpecError(  # in words, not Python's list (a narrow-screen walk: "among [1, 2, 3, 5, 6, 10, 15, 30]")
                "n_heads",
                f"d_model {self.d_model} does not split into {self.n_heads} heads of a whole d_k = d_model / heads; "
                f"{some} (or choose another d_model)", about=("d_model",),
            )
        if self.positional == "sinusoidal" and self.d_model % 2:
            # the even d_models nearest that still split into n_heads (odd, as d_model is): d_model ± n_heads, where in
            # the range offered (1023 in 3 heads was offered 1026)
            lo, hi = offer["d_model"]
            near = " or ".join(str(m) for m in (self.d_model - self.n_heads, self.d_model + self.n_heads)
                               if lo <= m <= hi)
            raise SpecError("d_model", f"sinusoidal encoding needs an even d_model (sin and cos in pairs), got "
                                       f"{self.d_model}: choose {near}, or the 'learned' or 'none' positional encoding",
                             about=("positional",))
        if self.model == "zh-en" and self.positional == "learned":
            raise SpecError("positional", "the trained zh-en model comes with 'sinusoidal' or 'none'", about=("model",))
        for h in self.heads:
            if h < 0:
                raise SpecError("heads", f"head {h} is negative")
        for name in ("heads", "views"):
            items = getattr(self, name)
            twice = [x for i, x in enumerate(items) if x in items[:i]]
            if twice:
                raise SpecError(name, f"{twice[0]!r} is named twice")

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) to export at: the spec's own, or the theme's where it says 0."""
        from viz.theme import THEMES as THEME_STYLES  # lazily: validating a spec needs no plotly

        style = THEME_STYLES.get(self.theme, {})
        return (self.width or style.get("width") or 900, self.height or style.get("height") or 600)

    def export_size(self, figure_height: float | None = None) -> tuple[int, int]:
        """(width, height) to export a figure laid out `figure_height` px tall at (its layout.height, if
        set): `size`, except that where the spec's height is 0 a figure of its own height keeps it: a taller
        one (a grid of heads or three bar charts drawn at the theme's 480 px would crowd their parts) and a
        shorter one (a query x key matrix of one row, laid out short: drawn at the theme's 720 px it was one cell
        920 x 565 px, a regression walk)."""
        width, height = self.size
        if not self.height and figure_height:
            height = round(figure_height)
        return width, height

    # -- conversions ---------------------------------------------------------------------------
    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["heads"], d["views"] = list(self.heads), list(self.views)
        return d

    def to_json(self) -> str:
        """Indented JSON, Chinese as itself; control and format characters (category C: U+0000-001F, a
        right-to-left override U+202E, zero-width joiners) as \\uXXXX escapes, which read back the same and
        keep the text shown in one direction and on one line."""
        text = json.dumps(self.to_dict(), ensure_ascii=False, indent=2)
        return "".join(json.dumps(ch)[1:-1] if ch > "~" and unicodedata.category(ch)[0] == "C" else ch
                       for ch in text)  # json.dumps(ch): "\\u202e", a surrogate pair above U+FFFF

    @classmethod
    def from_dict(cls, data: dict, offer: Mapping[str, tuple[float, float]] | None = None) -> FigureSpec:
        """Strict: an unknown field or a wrong type is a SpecError naming the field (`offer`: as the constructor's)."""
        if not isinstance(data, dict):
            raise SpecError("spec", f"expected a JSON object, got {type(data).__name__}")
        hints = typing.get_type_hints(cls)
        known = {f.name for f in fields(cls)}
        values = {}
        for key, value in data.items():
            if key not in known:  # an empty key named "" (as a link's is): it said ": unknown field" (a fuzzing walk)
                raise SpecError(key or '""', f"unknown field; known fields: {sorted(known)}")
            values[key] = _coerce(key, hints[key], value)
        return cls(**values, offer=offer)

    @classmethod
    def from_json(cls, text: str) -> FigureSpec:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SpecError("spec", f"not valid JSON ({exc.msg} at line {exc.lineno})") from None
        return cls.from_dict(data)

    def to_query(self) -> dict[str, str]:
        """Flat string parameters for a share link: only the fields that differ from the defaults."""
        default = FigureSpec()
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value != getattr(default, f.name):
                out[f.name] = ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
        return out

    @classmethod
    def from_query(cls, params: Mapping[str, str], offer: Mapping[str, tuple[float, float]] | None = None) -> FigureSpec:
        """Parse share-link parameters (strings); unknown or malformed ones raise SpecError (`offer`: as the
        constructor's)."""
        hints, known = typing.get_type_hints(cls), {f.name for f in fields(cls)}  # offer is not a field
        data: dict = {}
        for key, raw in params.items():
            if key not in known:
                raise SpecError(key or '""', "unknown field in the link")
            kind = hints[key]
            try:
                if kind is int:
                    data[key] = _integer(raw)
                elif kind is float:
                    data[key] = _number(raw)
                elif kind == tuple[int, ...]:
                    data[key] = tuple(_integer(x) for x in raw.split(",") if x != "")
                elif kind == tuple[str, ...]:
                    data[key] = tuple(x for x in raw.split(",") if x != "")
                else:
                    data[key] = str(raw)
            except ValueError:
                raise SpecError(key, f"{raw!r} is not {_KIND_WORDS.get(kind, 'valid')}") from None
        return cls.from_dict(data, offer)


# what a link's value should be, in words (a bad-input walk: "'1,x' is not a valid tuple", "'1e3' is not a valid int")
_KIND_WORDS = {int: "a whole number (such as 2)", float: "a number (such as 3.125)",
               tuple[int, ...]: "a list of whole numbers separated by commas (such as 0,2)"}
_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _integer(text: str) -> int:
    """A link's whole number as written there: ASCII digits only (Python's int() also reads "1_0" as 10 and
    full-width "１" as 1, and the notice then named a number the link does not hold)."""
    if not _INTEGER.fullmatch(text):
        raise ValueError(text)
    return int(text)


def _number(text: str) -> float:
    """A link's number as written there (ASCII, no "1_0", "inf" or "nan"), finite and not a nonzero value that
    rounds to 0 ("1e-400" became 0.0, and the notice said "0.0 is outside [0.1, 10]")."""
    value = float(text) if _NUMBER.fullmatch(text) else math.nan
    if not math.isfinite(value) or (value == 0 and any(c in "123456789" for c in text.split("e")[0].split("E")[0])):
        raise ValueError(text)
    return value


def _coerce(name: str, kind, value):
    """Check one JSON value against the field's type; ints are accepted for floats, never true or false."""
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecError(name, f"expected an integer, got {json.dumps(value, ensure_ascii=False)}")
        return value
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SpecError(name, f"expected a number, got {json.dumps(value, ensure_ascii=False)}")
        return float(value)
    if kind is str:
        if not isinstance(value, str):
            raise SpecError(name, f"expected a string, got {json.dumps(value, ensure_ascii=False)}")
        return value
    if kind == tuple[int, ...]:
        if not isinstance(value, list | tuple) or any(isinstance(v, bool) or not isinstance(v, int) for v in value):
            raise SpecError(name, "expected a list of integers")
        return tuple(value)
    if kind == tuple[str, ...]:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list | tuple) or any(not isinstance(v, str) for v in value):
            raise SpecError(name, "expected a list of strings")
        return tuple(value)
    raise SpecError(name, f"unsupported type {kind}")  # pragma: no cover
