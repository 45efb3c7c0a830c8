"""The app's views as lists of Panels (a figure and/or a table, with the numbers behind it).

build_view(view, spec, models) is shared by app.py and `python -m lab.export`, so a figure drawn
in the browser and one exported from the same spec are the same figure.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import torch

import viz
from lab.compute import MAX_INPUT_CHARS, Loaded, Run, model_fields, read_source, run
from lab.spec import FigureSpec
from model.analysis import (
    OrderReport,
    all_head_weights,
    head_arrays,
    mean_attention_entropy,
    order_report,
    record,
    unscaled_weights,
)
from model.examples import JOURNEY_TEXT, journey_example
from model.positional import (
    frequencies,
    offset_dot_products,
    relative_rotation,
    sinusoidal_at,
    sinusoidal_encoding,
)
from viz.fig import kept_bytes
from viz.labels import count_of, named_surrogates, num, visible_controls
from viz.theme import DOT

# a translation of no words (greedy decoding wrote [EOS] first), said: "你喜欢她 → " read as a line the page failed to end
NO_WORDS = "(no words: greedy decoding wrote [EOS] first)"


class Panel:
    """One figure and/or table of a view.

    table: the numbers behind the figure (CSV), or the table itself; a DataFrame, or a function
    that makes it, called the first time `table` is read: most tables are only wanted on a
    click (show the numbers, download CSV), so a view need not pay for them up front.
    """

    __slots__ = ("key", "title", "figure", "_table", "caption", "highlight")

    def __init__(self, key: str, title: str, figure: go.Figure | None = None,
                 table: pd.DataFrame | Callable[[], pd.DataFrame] | None = None, caption: str = "",
                 highlight: list[bool] | None = None):
        self.key = key  # unique within a view: widget keys and file names
        self.title = title
        self.figure = figure
        self._table = table
        self.caption = caption  # plain text (never rendered as HTML)
        self.highlight = highlight  # for tables: rows to highlight

    @property
    def has_table(self) -> bool:
        return self._table is not None

    @property
    def table(self) -> pd.DataFrame | None:
        if callable(self._table):
            self._table = self._table()
        return self._table

    def __repr__(self) -> str:
        return f"Panel({self.key!r}, {self.title!r})"

    def held_arrays(self) -> list[np.ndarray]:
        """The numpy arrays a table not yet made holds (its function's closure and defaults, and
        the arrays in the lists, dicts and objects there, one level down)."""
        if not callable(self._table):
            return []
        cells = [c.cell_contents for c in (self._table.__closure__ or ())]
        return [a for v in cells + list(self._table.__defaults__ or ()) for a in _arrays_in(v, depth=2)]


def _arrays_in(obj, depth: int) -> list[np.ndarray]:
    if isinstance(obj, np.ndarray):
        return [obj]
    if depth == 0:
        return []
    if isinstance(obj, dict):
        items = list(obj.values())
    elif isinstance(obj, (list, tuple)):
        items = list(obj)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        items = [getattr(obj, f.name) for f in dataclasses.fields(obj)]
    else:
        return []
    return [a for v in items for a in _arrays_in(v, depth - 1)]


@dataclass(eq=False)
class ViewResult:
    """A view's panels, notices and hint. The app shares one per (view, spec) among its sessions, the spec's download
    settings aside (ui/cache.py view_result): nothing may change one once built, but for a Panel making its table."""

    panels: list[Panel] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # cut inputs and the like: show prominently
    hint: str | None = None  # nothing to draw, and why; or (with panels) a word on what they show

    def nbytes(self) -> int:
        """About the memory this result keeps alive beyond the run it reads, for a cache's bound:
        each figure's arrays and payload (viz.fig.kept_bytes), each table made, and for a table not
        yet made, the arrays its function holds, thrice (those arrays, and the float64 table a click
        makes of them, which the panel then keeps). Arrays shared by panels count once; 64 KiB for
        the rest (titles, labels, small tables). Against tracemalloc's count of what a cached view
        holds (tests/test_view_cache.py): above it from ~128 tokens, at most ~2x below it at 8."""
        total, held = 2**16, {}
        for panel in self.panels:
            if panel.figure is not None:
                total += kept_bytes(panel.figure)
            if panel.has_table and not callable(panel._table):
                total += int(panel._table.memory_usage(deep=True).sum())
            held.update((id(a), a.nbytes) for a in panel.held_arrays())
        return total + 3 * sum(held.values())


class Models:
    """How views get models and runs; the app passes Streamlit-cached functions, the CLI plain ones."""

    def __init__(self, load: Callable[[tuple], Loaded], trace: Callable[[FigureSpec], Run | None] | None = None,
                 order: Callable[[FigureSpec], OrderData] | None = None):
        self.load = load
        self._trace = trace
        self._order = order

    def model(self, spec: FigureSpec) -> Loaded:
        return self.load(model_fields(spec))

    def run(self, spec: FigureSpec) -> Run | None:
        if self._trace is not None:
            return self._trace(spec)
        return run(self.model(spec), spec.sentence_a, spec.sentence_b, spec.mask)

    def order(self, spec: FigureSpec) -> OrderData:
        """The order view's model work (order_data); the app passes a cached function."""
        if self._order is not None:
            return self._order(spec)
        return order_data(spec, self)


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().to("cpu", torch.float64).numpy()


def _labels(run_: Run, row: int, block: str) -> tuple[list[str], list[str]]:
    """(query labels, key labels) of a block, [PAD] included where the batch padded."""
    src, tgt = run_.src_pieces(row), run_.tgt_pieces(row)
    return {"encoder self": (src, src), "decoder self": (tgt, tgt), "cross": (tgt, src)}[block]


def _own_queries(run_: Run, row: int, block: str) -> int:
    """How many query rows of a block are the sentence's own tokens: the rest are the [PAD] rows the batch
    added to line it up with the longer sentence (not the sentence's, in any mask mode)."""
    s = run_.sentences[row]
    return len(s.src_ids) if block == "encoder self" else len(s.tgt_ids)


def _clamp(value: int, upper: int) -> int:
    return max(0, min(value, upper - 1))


# -- 1. tokens --------------------------------------------------------------------------------
LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"  # str.splitlines' line boundaries


def blank(text: str) -> str:
    """What a sentence with nothing to read is, in words: "is empty", or, where the student typed spaces or tabs,
    "holds only spaces", which every view reads as nothing (a narrow-screen walk: "is empty" for "   " read as
    wrong); line breaks are named as such, not as spaces (a spec file's "\n" for python -m lab.export: the app's one-line
    box makes a pasted or linked one a space, ui.state.one_line)."""
    if not text:
        return "is empty"
    kinds = {"line breaks" if c in LINE_BREAKS else "spaces" for c in text}
    return f"holds only {' and '.join(sorted(kinds, reverse=True))}, which the views read as nothing"


def tokens_view(spec: FigureSpec, models: Models) -> ViewResult:
    loaded = models.model(spec)
    tok = loaded.src_tokenizer
    out = ViewResult()
    encs = {}
    for key, text in (("a", spec.sentence_a), ("b", spec.sentence_b)):
        if not text.strip():
            out.notices.append(f"Sentence {key.upper()} {blank(text)}: type some words to see its tokens.")
            continue
        source, enc, _ = read_source(loaded, key, text, out.notices)  # what the model reads (cut if too long)
        encs[key] = enc
        offsets, shown, named = list(enc.offsets), source, tok.name
        if loaded.trained:  # it reads the text without whitespace: give each span in the text as typed
            typed = text[:MAX_INPUT_CHARS]
            at = loaded.demo.source_positions(typed)  # (len(normalized),) index in `typed` of each character
            offsets, shown = [(at[s], at[e - 1] + 1) for s, e in offsets], typed
            named = f"{loaded.name}: one per character, spaces skipped"
        table = viz.token_table(list(enc.pieces), list(enc.ids), offsets, text=shown)
        out.panels.append(Panel(f"tokens-{key}", f"Sentence {key.upper()}: {count_of(len(enc), 'token')} ({named})",
                                table=table))
    if len(encs) == 2:
        a, b = encs["a"], encs["b"]
        both = viz.token_comparison(list(a.pieces), list(a.ids), list(b.pieces), list(b.ids))
        # first: the table the view is for (lesson step 1 names it), on a 720 px projector without scrolling; it was
        # third, ~1,200 px down the slide theme's page, under the two sentences' own tables (a teacher's walk)
        out.panels.insert(0, Panel("tokens-compare", "A and B side by side (differing positions highlighted)",
                                   table=both, highlight=list(both["differs"])))
    if not encs:
        out.hint = "Type a sentence to begin."
    return out


# -- 2. positional encoding -------------------------------------------------------------------
@dataclass(frozen=True)
class PEReference:
    """The positional view's numbers that depend only on (span, d_model), not on the sentence.

    Read-only arrays (float64): the sinusoidal table (span, d); the curves of the drawn dims on a
    0.1-step grid of positions; PE(m)·PE(m+k) for every offset k in (-span, span)."""

    table: np.ndarray  # (span, d) sinusoidal_encoding
    dims: tuple[int, ...]  # the dimensions the curves show
    fine: np.ndarray  # (F,) positions 0, 0.1, ..., span - 1
    curves: np.ndarray  # (F, len(dims)) sinusoidal_at(fine, d, dims)
    offsets: np.ndarray  # (2 span - 1,) -span + 1 ... span - 1
    dots: np.ndarray  # (2 span - 1,) offset_dot_products(offsets, d)
    pairs: tuple[int, ...]  # the (sin, cos) pairs i the clock-hand figure draws
    omegas: tuple[float, ...]  # their frequencies omega_i
    rotation_error: float  # max |PE(pos + 1) - R_1 PE(pos)| over positions 0 .. span - 2, float64


@functools.lru_cache(maxsize=16)
def pe_reference(span: int, d: int) -> PEReference:
    """PEReference for (span, d), computed once (a sentence of up to 50 tokens always has span 50),
    with the clock-hand figure's pairs and the model's check of PE(pos + 1) = R_1 PE(pos)."""
    fine = torch.arange(0, span - 1 + 1e-9, 0.1, dtype=torch.float64)
    dims = sorted({0, 1, 2, 3, d // 2, d - 2} & set(range(d)))
    offsets = torch.arange(-span + 1, span, dtype=torch.float64)
    arrays = [_np(sinusoidal_encoding(span, d)), fine.numpy(), _np(sinusoidal_at(fine, d, dims)),
              offsets.numpy(), _np(offset_dot_products(offsets, d))]
    for a in arrays:
        a.setflags(write=False)  # shared by every session: nothing may change them
    table, fine_np, curves, offsets_np, dots = arrays
    # PE(pos + 1) = R_1 PE(pos): one 2x2 rotation by omega_i per (sin, cos) pair, the same for every pos
    exact = sinusoidal_at(torch.arange(span, dtype=torch.float64), d)  # (span, d) float64
    shifted = exact[:-1] @ relative_rotation(1, d).T  # (span - 1, d): R_1 PE(pos), row by row
    error = float((exact[1:] - shifted).abs().max()) if span > 1 else 0.0
    pairs = tuple(sorted({0, d // 16, d // 8} & set(range(d // 2))))  # omega 1, 10^-0.5, 10^-1 rad per position
    omegas = tuple(frequencies(d)[list(pairs)].tolist())
    return PEReference(table, tuple(dims), fine_np, curves, offsets_np, dots, pairs, omegas, error)


def _by_position(values: np.ndarray, dims, name: str) -> pd.DataFrame:
    """PE values (positions, len(dims)) for a CSV: a row per position, a column per dimension named `name` with its
    number (the rotation's "PE(pos, 8)"); matrix_frame's "row" and "4:dim 32" (its token labels' i: numbering, of
    nothing here) read as dimension 4 or 432 (a researcher's walk)."""
    return pd.DataFrame(values, index=pd.RangeIndex(len(values), name="position"),
                        columns=[name.format(j) for j in dims])


ROTATION_MIN = 12  # positions the clock-hand figure draws at least: enough for the slow hands to be seen turning


def _sinusoidal_panels(out: ViewResult, d: int, n: int, sentence, th: str) -> None:
    """View 2's panels of the sinusoidal table (§3.5) for d_model = d (even), the sentence's n positions marked."""
    span = max(n, 50)
    ref = pe_reference(span, d)  # depends on (span, d) only: computed once for every sentence that short
    table, dims = ref.table, list(ref.dims)
    out.panels.append(Panel("pe-matrix", f"Sinusoidal PE, positions 0–{span - 1} × {d} dimensions",
                            viz.pe_heatmap(table, theme=th), lambda: _by_position(table, range(d), "{}")))
    out.panels.append(Panel(
        "pe-curves", "PE(pos, 2i) = sin(pos/10000^(2i/d)), PE(pos, 2i+1) = cos(…): the sentence's positions marked",
        viz.pe_curves(ref.fine, ref.curves, dims=dims, d_model=d,
                      marked_positions=list(range(n)), marked_labels=list(sentence.encoding.pieces), theme=th),
        lambda: _by_position(table[:, dims], dims, "PE(pos, {})"),
    ))
    turns = table[:max(n, ROTATION_MIN)]  # (positions, d): the sentence's, and at least ROTATION_MIN
    pair_dims = [2 * i + j for i in ref.pairs for j in (0, 1)]  # each pair's sin and cos dimension
    out.panels.append(Panel(
        "pe-rotation", "Each (sin, cos) pair turns by a fixed angle per position: PE(pos + k) = Rₖ · PE(pos)",
        viz.pe_rotation(turns, pairs=ref.pairs, omegas=ref.omegas, labels=list(sentence.encoding.pieces),
                        error=ref.rotation_error, theme=th),
        lambda: pd.DataFrame(
            turns[:, pair_dims],
            index=pd.Index(viz.unique_labels(list(sentence.encoding.pieces) + [""] * (len(turns) - n)),
                           name="position"),
            columns=[f"PE(pos, {j})" for j in pair_dims]),
        caption="Pair i of dimensions (2i, 2i+1) holds (sin ωᵢ·pos, cos ωᵢ·pos): a point on the unit circle that "
                "turns by ωᵢ radians from one position to the next. So moving k positions is a fixed rotation "
                "Rₖ, the same at every position, which is why PE(m)·PE(n) depends only on n − m (below) and "
                "attention can learn relative offsets (§3.5).",
    ))
    own = table[:n]  # (n, d): the sentence's positions
    gram = own @ own.T  # (n, d) @ (d, n) -> (n, n): PE(m)·PE(n)
    out.panels.append(Panel("pe-dot-matrix", "PE(m)·PE(n) for the sentence's positions: constant along diagonals",
                            viz.pe_dot_matrix(gram, labels=list(sentence.encoding.pieces), theme=th),
                            lambda: viz.matrix_frame(gram, list(sentence.encoding.pieces),
                                                     list(sentence.encoding.pieces))))
    offsets, values = ref.offsets, ref.dots
    shape, short = _dot_curve_shape(offsets, values, d)
    out.panels.append(Panel(
        "pe-dot-curve", f"PE(m)·PE(m+k) = Σᵢ cos(ωᵢ k), over the frequencies ωᵢ: symmetric in k, {shape}",
        viz.pe_dot_curve(offsets, values, theme=th,
                         title=f"PE(m){DOT}PE(m+k) over the offset k: symmetric, {short}"),
        lambda: pd.DataFrame({"dot": values}, index=pd.Index(offsets.astype(int), name="offset")),
    ))


DECAYED = 0.9  # PE(m)·PE(m+k) "decays" over the offsets drawn where its far half stays under 90% of PE(m)·PE(m)


def _dot_curve_shape(offsets: np.ndarray, values: np.ndarray, d: int) -> tuple[str, str]:
    """What the curve PE(m)·PE(m+k) over the offsets drawn does, in words (the panel's title, the figure's): it
    decays overall where its far half (|k| ≥ half the span) stays under DECAYED of its value at k = 0. Not so for
    a small d_model (a claims walk: "decays overall" under d_model = 2, where it is cos k, back to 0.9998 at
    k = 44; under 4, cos k + cos(k/100), still 1.96 of 2)."""
    far = values[np.abs(offsets) >= (offsets.max() + 1) / 2]
    top, peak = float(far.max()), float(values[offsets == 0][0])
    if d == 2:
        return ("periodic: d_model = 2 has one frequency (ω = 1), so it is cos k and never decays",
                "periodic (cos k), never decays")
    if top >= DECAYED * peak:
        return (f"with only {d // 2} frequencies it barely decays over these offsets (up to {num(top, '.3g')} of "
                f"{num(peak, '.3g')} for |k| ≥ {int(offsets.max() + 1) // 2})", "barely decays over these offsets")
    return "decays overall but not monotonically", "decays overall"


def positional_view(spec: FigureSpec, models: Models) -> ViewResult:
    run_ = models.run(spec)
    if run_ is None:
        return ViewResult(hint="Type a sentence to see its positional encodings.")
    loaded = models.model(spec)
    d = loaded.model.config.d_model
    row = run_.shown_row(spec.sentence)
    sentence = run_.sentences[row]
    n = len(sentence.encoding)
    th = spec.theme
    out = ViewResult(notices=list(run_.notices))
    kind = loaded.model.config.positional
    if d % 2:  # no sinusoidal table to draw (it needs pairs of dimensions); the model's own encoding still is
        out.hint = (f"d_model={d} is odd: the sinusoidal encoding's panels need pairs of dimensions (choose an even "
                    "d_model to see them)." + ("" if kind == "none" else f" Below: this model's own ({kind}) "
                                               "encoding, added to its token embeddings."))
    else:
        _sinusoidal_panels(out, d, n, sentence, th)
    emb = run_.trace.encoder.embeddings
    tokens, pe, summed = _np(emb.tokens[row, :n]), _np(emb.positional[:n]), _np(emb.summed[row, :n])
    out.panels.append(Panel(
        "embedding-pe", f"Token embedding (×√d_model), the positional encoding added ({kind}) and their sum",
        viz.embedding_pe_figure(tokens, pe, labels=list(sentence.encoding.pieces), summed=summed, theme=th),
        lambda: pd.concat({name: viz.matrix_frame(m, list(sentence.encoding.pieces)) for name, m in  # its 3 panels
                           (("token embedding", tokens), ("positional encoding", pe), ("sum", summed))},
                          names=["panel"]),
    ))
    if kind == "none":
        # (said above the view's panels: the sinusoidal ones first, the model's own last)
        out.notices.append("This model adds NO positional encoding: "
                           + ("in the panel below, its middle matrix is all zeros." if d % 2 else
                              "in the last panel, its middle matrix is all zeros; the sinusoidal panels before it "
                              "show what that encoding would add."))
    elif kind == "learned":
        out.notices.append("This model's positional encoding is learned: a row of weights per position, not the "
                           f"formula. Untrained, they are small random numbers (largest |value| here "
                           f"{num(np.abs(pe).max(), '.2g')}, the token embeddings' {num(np.abs(tokens).max(), '.2g')}), so they barely "
                           "show in the " + ("panel below" if d % 2 else "last panel") + ", which adds them."
                           + ("" if d % 2 else " The panels before it show sinusoidal encoding for comparison."))
    return out


# -- 3. attention step by step ----------------------------------------------------------------
def _selected(spec: FigureSpec, models: Models):
    """What views 3-5 show: (the run, the block's attention record at the layer, (layer, head, batch row), (query
    labels, key labels)), the spec's layer and head kept within the model's; None where there is no run."""
    run_ = models.run(spec)
    if run_ is None:
        return None
    trace = run_.trace
    stack = trace.encoder if spec.block == "encoder self" else trace.decoder
    layer = _clamp(spec.layer, len(stack.layers))
    rec = record(trace, spec.block, layer)
    head = _clamp(spec.head, rec.n_heads)
    row = run_.shown_row(spec.sentence)
    return run_, rec, (layer, head, row), _labels(run_, row, spec.block)


def attention_view(spec: FigureSpec, models: Models) -> ViewResult:
    selected = _selected(spec, models)
    if selected is None:
        return ViewResult(hint="Type a sentence to see its attention.")
    run_, rec, (layer, head, row), (rows, cols) = selected
    a = head_arrays(rec, row, head)
    where_txt = f"{spec.block}, layer {layer}, head {head}, sentence {run_.sentences[row].key.upper()}"
    figs = viz.attention_step_figures(
        q=a["q"], k=a["k"], v=a["v"], scores=a["scores"], scaled_scores=a["scaled"], weights=a["weights"],
        mask=a["allowed"], row_labels=rows, col_labels=cols, theme=spec.theme,  # always: step 3 is always shown
        where=f"{spec.block}, layer {layer}, head {head}",  # in each figure's title: full screen, exports
        cross=spec.block == "cross",
    )
    out = ViewResult(notices=list(run_.notices), hint=_decoder_reads(spec))
    out.panels.append(Panel(
        "attention-qkv", f"Q, K, V of one head (d_k = {rec.d_k}) — {where_txt}", figs["qkv"],
        lambda: pd.concat({"Q": viz.matrix_frame(a["q"], rows), "K": viz.matrix_frame(a["k"], cols),
                           "V": viz.matrix_frame(a["v"], cols)}, names=["matrix"]),
        caption=_qkv_caption(spec.block, layer, models.model(spec).model.config),
    ))
    nothing_masked = a["allowed"].all()
    steps = {  # each step's panel: its title, and the (query x key) matrix behind its figure
        "scores": ("1. Scores QKᵀ (raw)", a["scores"]),
        "scaled": (f"2. Scaled scores QKᵀ / √d_k (÷ {np.sqrt(rec.d_k):.3g})", a["scaled"]),
        "mask": ("3. Mask: True = may attend" + (" (nothing is masked here)" if nothing_masked else ""),
                 a["allowed"].astype(int)),
        "masked": ("4. Masked scores (masked cells are −∞)", a["masked"]),
        "weights": ("5. Weights = softmax over each row (each sums to 1)", a["weights"]),
    }
    for key, (title, matrix) in steps.items():
        caption = _nothing_masked(spec) if key == "mask" and nothing_masked else ""
        out.panels.append(Panel(f"attention-{key}", title, figs[key],
                                lambda matrix=matrix: viz.matrix_frame(matrix, rows, cols), caption=caption))
    out.notices += _pad_attended(spec, rows, cols)
    return out


def _pad_attended(spec: FigureSpec, rows: list[str], cols: list[str]) -> list[str]:
    """The notice of views 3, 4 and 5 where Mask 'none' lets a query attend the [PAD] tokens of the batch (a words
    walk: views 4 and 5 drew their weights without it)."""
    if spec.mask == "none" and any("[PAD]" in p for p in rows + cols):
        return ["Mask 'none': the [PAD] tokens added to line up A and B are attended to like words."]
    return []


def _decoder_reads(spec: FigureSpec) -> str:
    """What the random model's decoder reads, where a view shows it (a text audit: nothing said that its rows
    are the source sentence again, standing in for the translation it does not have)."""
    if spec.block == "encoder self" or spec.model != "random":
        return ""
    return ("The random model has no translation to read: its decoder reads [BOS] + this sentence's own tokens, "
            "standing in for a target sentence. The trained zh-en model (Model, in the sidebar) reads its own "
            "translation.")


def _qkv_caption(block: str, layer: int, config) -> str:
    """What X (and M) in the Q, K, V title are, and the biases it leaves out (a text audit: X was never said)."""
    embedded = "the token embeddings" + (" (× √d_model)" if config.scale_embedding else "") + (
        " plus positional encoding" if config.positional != "none" else ", with no positional encoding")
    stream = embedded if layer == 0 else f"layer {layer - 1}'s output"
    norm = config.norm
    if block == "cross":
        x = (f"X is the decoder's stream after layer {layer}'s self-attention sublayer; M, the encoder's last "
             "output")
    else:
        x = f"X is this layer's input, one row a token: {stream}"
    if norm == "pre":
        x += " — pre-norm: X after the sublayer's LayerNorm"
    return (f"{x}. Each projection adds its bias as well (Q = XW_Q + b_Q); one head's Q, K, V are its d_k columns "
            "of them.")


def _nothing_masked(spec: FigureSpec) -> str:
    """Where to look to see a mask, when the one shown masks nothing (the default view often)."""
    if spec.mask == "none":
        return "The sidebar's Mask is 'none': nothing is ever masked. Choose 'paper' to see the masks."
    ways = []
    if spec.mask == "paper" and spec.block != "decoder self":
        ways.append("choose the block 'decoder self' for the look-ahead mask (no token sees the future)")
    if spec.mask == "look-ahead" and spec.block != "cross":
        ways.append("type a longer sentence: one token has no future to hide")
    if spec.block == "decoder self" and spec.model != "random":  # its keys are the translation's tokens
        ways.append("give the other sentence a longer translation: this one's is then padded with [PAD] keys, "
                    "which are masked")
    else:
        ways.append("make the other sentence longer: this one is then padded with [PAD] keys, which are masked")
    return "To see a mask, " + "; or ".join(ways) + "."  # the title already says nothing is masked here


# -- 4. heads ---------------------------------------------------------------------------------
def heads_view(spec: FigureSpec, models: Models) -> ViewResult:
    selected = _selected(spec, models)
    if selected is None:
        return ViewResult(hint="Type a sentence to see its heads.")
    run_, rec, (layer, _, row), (rows, cols) = selected
    weights = all_head_weights(run_.trace, spec.block, row, torch.float32)  # (L, H, Tq, Tk)
    allowed = rec.allowed[row, 0].cpu().numpy()
    mask = None if allowed.all() else allowed
    heads = list(spec.heads) or list(range(weights.shape[1]))
    heads = [h for h in heads if h < weights.shape[1]] or [0]
    # the heads picked ("Heads in the grid"), or all of them
    which = "All heads" if len(heads) == weights.shape[1] else ("Head " if len(heads) == 1 else "Heads ") + ", ".join(
        map(str, heads))
    out = ViewResult(notices=list(run_.notices) + _pad_attended(spec, rows, cols), hint=_decoder_reads(spec))
    out.panels.append(Panel(
        "heads-grid", f"{which} of layer {layer} ({spec.block})",
        viz.heads_grid(weights[layer, heads], row_labels=rows, col_labels=cols, mask=mask,
                       head_names=[f"head {h}" for h in heads], theme=spec.theme,
                       title=f"{which} of layer {layer}, {spec.block}"),  # full screen and exports show this
        lambda: pd.concat({f"head {h}": viz.matrix_frame(weights[layer, h], rows, cols) for h in heads},
                          names=["head"]),
    ))
    out.panels.append(Panel(
        "layers-heads", f"Every layer × every head ({spec.block})",
        viz.layers_heads_grid(weights, row_labels=rows, col_labels=cols, mask=mask, theme=spec.theme,
                              title=f"Every layer (rows) × every head (columns), {spec.block}"),
        lambda: pd.concat({f"layer {ly} head {h}": viz.matrix_frame(weights[ly, h], rows, cols)
                           for ly in range(weights.shape[0]) for h in range(weights.shape[1])},
                          names=["layer and head"]),
    ))
    own = _own_queries(run_, row, spec.block)
    entropy = mean_attention_entropy(weights[..., :own, :])  # (L, H): the sentence's own queries only
    keys = allowed[:own].sum(-1)  # (own,): the keys each query may attend; each uniform over them: the most
    out.panels.append(Panel(
        "entropy", "Mean attention entropy (bits) per layer and head: low = focused, high = spread out",
        viz.entropy_overview(entropy, keys_per_query=keys, theme=spec.theme,
                             title=f"Mean attention entropy per layer and head, {spec.block}"),
        lambda: pd.DataFrame(entropy, index=pd.Index([f"layer {ly}" for ly in range(entropy.shape[0])], name="layer"),
                             columns=[f"head {h}" for h in range(entropy.shape[1])]),  # unique already: no "i:"
        caption="" if own == len(rows) else
        f"The mean is over this sentence's own {count_of(own, 'query')}: the {len(rows) - own} "
        + ("[PAD] row that lines it up with the other sentence in the batch is left out." if len(rows) - own == 1 else
           "[PAD] rows that line it up with the other sentence in the batch are left out."),
    ))
    return out


# -- 5. one query -----------------------------------------------------------------------------
def _context_frame(weights: np.ndarray, v: np.ndarray, context: np.ndarray, keys: list[str],
                   query: str) -> pd.DataFrame:
    """The context panel's numbers: each key's value vector v ("v of 1: like"), then what the figure's bars draw,
    each key's wⱼ·vⱼ ("w·v of 1: like"; a reviewer's walk: the bars were in no CSV) and the sum of those the figure
    draws as one grey bar ("w·v of 2 other keys (5:h, 7:r)"), then z = Σⱼ wⱼ vⱼ of the query
    ("z of 2:我"). Under bare positions a numbers walk read "8:context" as a ninth token."""
    keys = viz.unique_labels(keys)
    parts = np.asarray(weights)[:, None] * v  # (Tk, 1) * (Tk, d_k) -> (Tk, d_k): w_j v_j, viz.context_vector_figure's bars
    names = [f"v of {key}" for key in keys] + [f"w·v of {key}" for key in keys]
    rows = [v, parts]
    rest = viz.context_key_bars(weights)[1]
    if rest:  # the figure's grey bar: their sum
        names.append(f"w·v of {len(rest)} other keys ({', '.join(keys[j] for j in rest)})")
        rows.append(parts[rest].sum(axis=0, keepdims=True))
    names.append(f"z of {query}")
    return pd.DataFrame(np.vstack([*rows, context]), index=pd.Index(names, name="row"))  # (2 Tk [+ 1] + 1, d_k)


def _journey_word(sentence, block: str, q: int) -> int | None:
    """Which of the textbook's words holds the page's query token q (the char tokenizer's "1:o" is in word 0,
    'Your'; bpe's " journey" is word 1; a space, the word after it), or None where the query is no piece of the
    text: the decoder's [BOS], or a trained model's translation. A student's walk found the textbook panel
    following the query's index, so that under the char tokenizer query "1:o" showed 'journey'."""
    token = sentence.source_token(block, q)
    if token is None:
        return None
    enc = sentence.encoding
    start = enc.offsets[token][0]
    ends = [m.end() for m in re.finditer(r"\S+", enc.text)]
    return next((w for w, end in enumerate(ends) if end > start), None)


def _journey_panels(spec: FigureSpec, word: int | None, qlabel: str) -> list[Panel]:
    """The textbook's own example beside the app's: its query is the word holding the page's query token, or
    (none holds it) the word at the query's index, said so."""
    ex = journey_example()
    with torch.no_grad():
        context, rec = ex.attention(ex.inputs)
    a = head_arrays(rec, 0, 0)
    q = _clamp(spec.query if word is None else word, len(ex.words))
    words = list(ex.words)
    piece = qlabel.split(":", 1)[-1].strip(" ␣")  # the query token as typed: "" for a space
    which = (f"word {q} of the text: this page's query {qlabel} is not one of its words" if word is None else
             "" if piece == words[q] else f"the word {'of' if piece else 'after'} this page's query {qlabel}")
    table = pd.DataFrame({"key": words, "score ω": a["scores"][q], "scaled ω/√d_k": a["scaled"][q],
                          "weight α": a["weights"][q]})
    return [
        Panel("journey-bars", f"The textbook's own numbers (Raschka, Build a Large Language Model from Scratch, §3.4): query '{words[q]}' "
              + (f"({which}; " if which else "(") + "3-d inputs, W from torch.manual_seed(123))",
              viz.query_bars(a["scores"][q], a["scaled"][q], a["weights"][q], key_labels=words,
                             query_label=words[q], theme=spec.theme,
                             # its own title names the textbook: a slide page hides the heading above it (a
                             # regression walk: on a projector it read as a second result of the model's)
                             title=f"Textbook (Raschka, section 3.4): query '{words[q]}'" + (f" ({which})" if which else "")
                                   + ": scores, scaled scores and weights"), table),
        Panel("journey-context", f"Context vector z for '{words[q]}' = Σⱼ wⱼ vⱼ",
              viz.context_vector_figure(a["weights"][q], a["v"], key_labels=words, query_label=words[q],
                                        context=a["context"][q], theme=spec.theme,
                                        title=f"Textbook (Raschka, section 3.4): context vector z for '{words[q]}' = Σⱼ wⱼ vⱼ"),
              _context_frame(a["weights"][q], a["v"], a["context"][q], words, f"{q}:{words[q]}"),
              caption=f"z = {np.round(_np(context[q]), 4).tolist()}"
                      + (" — the tutorial prints tensor([0.3061, 0.8210]) for it." if words[q] == "journey" else
                         ". The tutorial prints z for 'journey' only (word 1; choose a query token in it): "
                         "tensor([0.3061, 0.8210]).")),
    ]


def query_view(spec: FigureSpec, models: Models) -> ViewResult:
    selected = _selected(spec, models)
    if selected is None:
        return ViewResult(hint="Type a sentence to pick a query token.")
    run_, rec, (layer, head, row), (rows, cols) = selected
    a = head_arrays(rec, row, head)
    q = _clamp(spec.query, len(rows))
    qlabel = viz.unique_labels(rows, show_whitespace=True)[q]  # "2:我", "1:␣": the position tells repeats apart
    where = f"{spec.block}, layer {layer}, head {head}"  # in each figure's own title: full screen, exports
    out = ViewResult(notices=list(run_.notices) + _pad_attended(spec, rows, cols), hint=_decoder_reads(spec))
    allowed = a["allowed"][q]
    unscaled = unscaled_weights(rec, row, head)[q]  # (Tk,) softmax(q·k) without ÷√d_k: what the scaling prevents

    def table():
        # the key labels every table and CSV of the app writes ("1: like", as matrix_frame does): a numbers walk
        # found this one alone writing the charts' "1:␣like", so a join of two views' CSVs missed its keys
        return pd.DataFrame({"key": viz.unique_labels(cols), "score": a["scores"][q],
                             "scaled": a["scaled"][q],
                             "may attend": allowed, "weight": a["weights"][q],
                             "weight without ÷√d_k": unscaled})
    d_k = a["q"].shape[-1]
    own = _own_queries(run_, row, spec.block)
    raw = a["scores"][:own][a["allowed"][:own]]  # this head's raw scores q·k, every allowed (own query, key)
    spread = (f" This head's raw scores have variance {num(raw.var())}; its scaled scores, {num(raw.var() / d_k)}."
              if raw.size > 1 else "")
    out.panels.append(Panel(
        "query-bars", f"Query {qlabel}: scores, scaled scores and softmax weights over every key",
        viz.query_bars(a["scores"][q], a["scaled"][q], a["weights"][q], key_labels=cols, query_label=qlabel,
                       mask=None if allowed.all() else allowed, unscaled_weights=unscaled, theme=spec.theme,
                       title=f"Query {qlabel}: scores, scaled scores and weights over every key — {where}"),
        table,
        caption=f"Why ÷√d_k (§3.2.1): if q and k have independent components of mean 0 and variance 1, q·k has "
                f"variance d_k (here {d_k}): the larger d_k, the larger the raw scores, until softmax puts nearly "
                f"all the weight on one key, where its gradients vanish. Dividing by √d_k brings that variance back "
                f"to 1 (for such q and k: a trained head's need not be). The outlined bars show the weights softmax would give the raw scores.{spread}",
    ))
    out.panels.append(Panel(
        "query-lines", f"Every query's weights as lines, {qlabel} highlighted ({spec.block}, layer {layer}, head {head})",
        viz.attention_lines(a["weights"], query_labels=rows, key_labels=cols, query=q, mask=a["allowed"],
                            theme=spec.theme, title=f"Attention as lines: query → key, more opaque = larger weight "
                                                    f"— {where}"),
        lambda: viz.matrix_frame(a["weights"], rows, cols),
        caption="The same softmax weights as the heatmap of view 3, drawn as lines: queries on the left, keys on "
                "the right, every other query's line half as opaque as its weight (in steps of a tenth), so that the "
                "chosen one stands out; a masked key (weight exactly 0) gets no line. "
                "The chosen query's lines are in colour and on top, darker and wider the nearer its largest weight "
                "(none under 1% of it); hover over (or tap) a key's dot for its weight, or open the numbers below "
                "for every weight.",
    ))
    out.panels.append(Panel(
        "query-context", f"Context vector of {qlabel} = Σⱼ wⱼ vⱼ ({spec.block}, layer {layer}, head {head})",
        viz.context_vector_figure(a["weights"][q], a["v"], key_labels=cols, query_label=qlabel,
                                  context=a["context"][q], theme=spec.theme,
                                  title=f"Context vector of query {qlabel} = Σⱼ wⱼ vⱼ — {where}"),
        lambda: _context_frame(a["weights"][q], a["v"], a["context"][q], cols, viz.unique_labels(rows)[q]),
    ))
    if run_.sentences[row].text.strip() == JOURNEY_TEXT:
        out.panels.extend(_journey_panels(spec, _journey_word(run_.sentences[row], spec.block, q), qlabel))
    return out


# -- 6. order and positional encoding ---------------------------------------------------------
def compared_pe(spec: FigureSpec) -> str:
    """The encoding view 6 compares with none: the random model's learned one where the sidebar chose it
    (a student's walk: under "learned" the view showed sinusoidal numbers), else sinusoidal (the trained pair
    has that and none)."""
    return "learned" if spec.model == "random" and spec.positional == "learned" else "sinusoidal"


def _pe_pair(spec: FigureSpec, models: Models) -> tuple[Loaded, Loaded]:
    with_pe = models.model(dataclasses.replace(spec, positional=compared_pe(spec)))
    without = models.model(dataclasses.replace(spec, positional="none"))
    return with_pe, without


def _same_tokens(report) -> bool:
    """B is A token for token: the reordering is the identity, and every model gives B A's outputs."""
    return report.perm is not None and list(report.perm) == list(range(len(report.perm)))


SAME_TOKENS = ("B is A token for token (no reordering), so every model gives B exactly A's outputs: there is "
               "nothing to compare. Reorder A's tokens in B — e.g. 你喜欢她 and 她喜欢你.")


def _matched_in_order(pieces: list[str]) -> str:
    """Where B repeats a token, which of A's equal tokens each is matched with is a choice: say which."""
    if len(set(pieces)) == len(pieces):
        return ""
    return (" B repeats a token: the k-th of B is matched with the k-th of A (in a model that sees position, "
            "another matching gives another number).")


def _verdict(report, pe_name: str, pieces_a: list[str], pieces_b: list[str], *, with_pe: bool) -> str:
    if report.perm is None:
        if report.pooled_equal:  # e.g. B = A twice without PE: one mean, though B reorders nothing
            why = (": B holds A's tokens in the same proportions, and without position information a token's output "
                   "depends only on the token and those proportions, so the model cannot tell the two sentences apart "
                   "by their mean." if _same_proportions(pieces_a, pieces_b) else ".")
            return (f"{pe_name}: B is not a reordering of A's tokens, so there is no permutation to compare; yet the "
                    f"mean-pooled outputs are the same (max difference {num(report.pooled_max_abs_diff)}, float "
                    f"rounding){why}")
        return (f"{pe_name}: B is not a reordering of A's tokens, so there is no permutation to compare; "
                f"the mean-pooled outputs differ by up to {num(report.pooled_max_abs_diff)}.")
    if _same_tokens(report):
        unknown = " (Here the tokenizer reads their characters as [UNK]: A and B are the same tokens.)" if (
            "[UNK]" in pieces_b) else ""
        return f"{pe_name}: {SAME_TOKENS}{unknown}"
    if report.equivariant and not with_pe:
        exact = report.max_abs_diff_float64
        rounding = "float rounding" if exact is None else f"float32 rounding: {num(exact)} in float64"
        return (f"{pe_name}: B's token outputs are A's, only reordered (max |f(B) − P f(A)| = "
                f"{num(report.max_abs_diff)}, {rounding}). Self-attention is permutation-EQUIVARIANT, and the "
                f"mean-pooled output is INVARIANT (max difference {num(report.pooled_max_abs_diff)}): "
                "the model cannot tell the two sentences apart.")
    if report.equivariant:  # with PE, yet the same outputs: the positions were lost on the way, not ignored
        return (f"{pe_name}: B's token outputs are nevertheless A's, reordered (max |f(B) − P f(A)| = "
                f"{num(report.max_abs_diff)}; pooled {num(report.pooled_max_abs_diff)}): the positions added to "
                "the embeddings did not survive to the output. A very small model can lose them: e.g. a LayerNorm "
                "over d_model = 2 dimensions leaves each token only ±1 per dimension.")
    return (f"{pe_name}: the outputs differ (max |f(B) − P f(A)| = {num(report.max_abs_diff)}; pooled "
            f"{num(report.pooled_max_abs_diff)}): the model sees word order.{_matched_in_order(pieces_b)}")


def _same_proportions(pieces_a: list[str], pieces_b: list[str]) -> bool:
    """A's and B's tokens in the same proportions (B = A repeated, reordered or not): each token's share of A is its
    share of B. Without PE and mask, softmax weights then come out the same, and so does each token's output."""
    a, b = Counter(pieces_a), Counter(pieces_b)
    return set(a) == set(b) and all(a[t] * len(pieces_b) == b[t] * len(pieces_a) for t in a)


def _unmatched(pieces_a: list[str], pieces_b: list[str], spec: FigureSpec) -> str:
    """Which tokens keep B from being a reordering of A (a student's walk: with the bpe tokenizer "I like her" and
    "her like I" are not, " like" and "like" being two pieces, and nothing said why)."""
    a, b = Counter(pieces_a), Counter(pieces_b)
    only_a, only_b = sorted((a - b).elements()), sorted((b - a).elements())

    def listed(pieces: list[str], other: Counter, name: str) -> str:
        # a piece once with its count ('[UNK]' ×7): a narrow-screen walk read '[UNK]' seven times over; one the
        # other sentence has too, with both counts (a text audit: "only in B: '[UNK]' ×6" where A had 3 of them)
        counts = sorted(Counter(pieces).items())
        own = "B" if name == "A" else "A"
        return ", ".join(f"'{viz.visible_whitespace(p)}'" + (f" ({n + other[p]} in {own}, {other[p]} in {name})"
                                                              if other[p] else f" ×{n}" if n > 1 else "")
                         for p, n in counts[:8]) + (" …" if len(counts) > 8 else "")

    if not only_a and not only_b:
        return ""
    text = (" Tokens A has more of: " + (listed(only_a, b, "B") or "none") + "; B has more of: "
            + (listed(only_b, a, "A") or "none") + ".")
    if spec.model == "random" and spec.tokenizer != "char" and any(p != p.strip() for p in only_a + only_b):
        text += (f" The {spec.tokenizer} tokenizer keeps a word's leading space in its token (see view 1): "
                 "the char tokenizer reads one character per token.")
    return text


@dataclass(eq=False)
class OrderData:
    """What the order view computes with the models: with and without PE, A and B encoded alone."""

    compared: list[tuple[str, str, OrderReport, list[str], list[str]]]  # (name, slug, report, pieces A, B)
    causal: OrderReport | None  # the no-PE model again, with a look-ahead mask
    notices: list[str]
    translations: pd.DataFrame | None  # trained models only


def order_data(spec: FigureSpec, models: Models) -> OrderData:
    """Encode A and B alone with and without PE (and without PE, causally) and compare them."""
    with_pe, without = _pe_pair(spec, models)
    compared, notices = [], []
    for name, loaded in ((f"with {compared_pe(spec)} PE", with_pe), ("without PE", without)):
        own: list[str] = []
        (source_a, ea, _), (source_b, eb, _) = (read_source(loaded, k, t, own) for k, t in
                                                (("a", spec.sentence_a), ("b", spec.sentence_b)))
        notices.extend(n for n in own if n not in notices)
        ids_a, ids_b = list(ea.ids), list(eb.ids)
        sources = (source_a, source_b)
        rep = order_report(loaded.model, ids_a, ids_b)
        if loaded is without:
            nope_ids = (ids_a, ids_b)  # the no-PE model's own tokens, for the causal check below
        compared.append((name, "pe" if loaded is with_pe else "nope", rep, list(ea.pieces), list(eb.pieces)))
    causal = order_report(without.model, *nope_ids, causal=True)
    translations = None
    if with_pe.trained:
        translations = pd.DataFrame({
            "sentence": [named_surrogates(spec.sentence_a), named_surrogates(spec.sentence_b)],  # a table holds no lone one
            "with PE (zh-en)": [with_pe.demo.translate(t) or NO_WORDS for t in sources],
            "without PE (zh-en-nope)": [without.demo.translate(t) or NO_WORDS for t in sources],
        })
    return OrderData(compared, causal if causal.perm is not None else None, notices, translations)


def _aligned_top(rep) -> float:
    """The largest |value| of a token-output map: A's outputs, B's, and |A − B| with B in A's order."""
    a, b = np.asarray(rep.outputs_a, dtype=np.float64), np.asarray(rep.outputs_b, dtype=np.float64)
    return viz.symmetric_range(a, b, np.abs(a - b[np.argsort(rep.perm)]))


def _order_hint(spec: FigureSpec) -> str:
    """Why view 6 has nothing to compare, or "" when it has."""
    missing = [(key, text) for key, text in (("A", spec.sentence_a), ("B", spec.sentence_b)) if not text.strip()]
    if missing:  # which one, and why: "   " read as nothing (a bad-input walk: B of spaces got the general hint)
        said = "; ".join(f"sentence {key} {blank(text)}" for key, text in missing)
        return f"Type two sentences — e.g. 你喜欢她 and 她喜欢你 — to compare their order ({said})."
    if compared_pe(spec) == "sinusoidal" and spec.model == "random" and spec.d_model % 2:
        return (f"This view compares the model with and without sinusoidal PE, which needs pairs of "
                f"dimensions: d_model is {spec.d_model}. Choose an even d_model (Model size), or "
                "learned positional encoding.")
    return ""


def _compares_attention(rep: OrderReport) -> bool:
    """B reorders A, other than A itself: the attention panels have something to show."""
    return rep.perm is not None and not _same_tokens(rep)


def order_draws_attention(spec: FigureSpec, models: Models) -> bool:
    """Whether view 6 draws its attention panels, the only ones its layer and head choose (the app draws those
    controls only then: a bad-input walk found them moving nothing)."""
    return not _order_hint(spec) and any(_compares_attention(rep) for _, _, rep, _, _ in models.order(spec).compared)


def order_view(spec: FigureSpec, models: Models) -> ViewResult:
    if hint := _order_hint(spec):
        return ViewResult(hint=hint)
    data = models.order(spec)
    out = ViewResult(notices=list(data.notices))
    if spec.mask == "look-ahead":  # the sidebar's Mask does not reach the first two rows: say where it is
        where = ("the look-ahead case is its last row and verdict, 'without PE, look-ahead mask'" if data.causal
                 else "its look-ahead comparison needs B to reorder A's tokens")
        out.notices.append("Mask 'look-ahead': this view encodes A and B each alone, with no padding and no mask, "
                           f"with and without PE; {where}.")
    rows = []
    compared = data.compared
    # one colour range for both difference maps, so "with" and "without" compare side by side: the outputs'
    # size (rounding noise stays dark), or the largest difference where that is larger (nothing clipped)
    reference = max(max(float(np.abs(rep.outputs_a).max()), rep.max_abs_diff or 0.0) for _, _, rep, _, _ in compared)
    # and one for both token-output maps (A, B aligned, |A − B|): the outputs with PE and without on one scale
    aligned_top = max((_aligned_top(rep) for _, _, rep, _, _ in compared if rep.perm is not None), default=None)
    for name, slug, rep, pieces_a, pieces_b in compared:
        # the verdict first: these two carry the lesson (narrower than its columns, the page shows the table turned)
        rows.append(_numbers_row(name, rep))
        caption = _verdict(rep, name[0].upper() + name[1:], pieces_a, pieces_b, with_pe=slug == "pe")
        if rep.perm is None:
            caption += _unmatched(pieces_a, pieces_b, spec)
        out.panels.append(Panel(f"verdict-{slug}", f"Verdict {name}", caption=caption))
        if _same_tokens(rep):  # B = A: nothing to compare, the verdict says so; no figure of zeros under it
            continue
        if rep.perm is not None:
            inv = np.argsort(rep.perm)  # A's token j sits at position inv[j] in B
            out.panels.append(Panel(
                f"aligned-{slug}", f"Token outputs {name}: A, B reordered to A's order, |A − B|",
                viz.aligned_outputs_figure(rep.outputs_a, rep.outputs_b[inv], labels_a=pieces_a, labels_b=pieces_b,
                                           positions_b=inv.tolist(), zmax=aligned_top, theme=spec.theme,
                                           title=f"Outputs per token {name}, B reordered to A's token order"),
                lambda rep=rep, inv=inv, pieces_a=pieces_a, pieces_b=pieces_b: pd.concat({  # the figure's 3 panels
                    "A": viz.matrix_frame(rep.outputs_a, pieces_a),
                    "B (aligned)": viz.matrix_frame(rep.outputs_b, pieces_b).iloc[inv],  # B's own labels, A's order
                    "|A − B|": viz.matrix_frame(np.abs(rep.outputs_a - rep.outputs_b[inv]), pieces_a)},
                    names=["panel"]),
            ))
            if _compares_attention(rep):  # B = A: nothing to compare (the verdict says so)
                out.panels.append(_attention_panel(spec, rep, name, slug, pieces_a, pieces_b, inv))
            out.panels.append(Panel(
                f"diff-{slug}", f"|f(B) − P f(A)| {name} (rows in B's order)",
                viz.order_difference_heatmap(rep.diff, row_labels=pieces_b, reference=reference, theme=spec.theme,
                                             title=f"|f(B) − P f(A)| per token and dimension, {name}"),
                lambda rep=rep, pieces_b=pieces_b: viz.matrix_frame(rep.diff, pieces_b),
            ))
        out.panels.append(Panel(
            f"pooled-{slug}", f"Mean-pooled outputs {name}",
            viz.pooled_outputs_figure(rep.pooled_a, rep.pooled_b, theme=spec.theme,
                                      title=f"Pooled outputs (mean over tokens) {name}"),
            lambda rep=rep: pd.DataFrame({"A": rep.pooled_a, "B": rep.pooled_b}, index=pd.RangeIndex(len(rep.pooled_a), name="dimension")),
        ))
    if data.causal is not None:
        rows.append(_numbers_row("without PE, look-ahead mask", data.causal))
        out.panels.append(_causal_verdict(data.causal, pieces_b=compared[-1][4]))
    out.panels.insert(0, Panel("order-numbers", "The numbers", table=pd.DataFrame(rows)))
    if data.translations is not None:
        out.panels.insert(1, Panel("translations", "Translations with and without positional encoding",
                                   table=data.translations))
    return out


def _causal_verdict(causal: OrderReport, pieces_b: list[str]) -> Panel:
    """View 6's last verdict: whether a stack without PE but with a look-ahead mask sees the order."""
    if _same_tokens(causal):
        text = f"With a look-ahead mask and no PE: {SAME_TOKENS}"
    elif causal.equivariant and causal.attention_permuted is False:  # attention saw the order, the outputs not
        text = ("With a look-ahead mask and no PE, attention does see the order (max |W(B) − P W(A) Pᵀ| = "
                f"{num(causal.attention_max_abs_diff)}), yet the outputs come out as A's, reordered (max |f(B) − P f(A)| "
                f"= {num(causal.max_abs_diff)}): the order was lost after attention. A very small model can lose "
                "it: e.g. a LayerNorm over d_model = 2 dimensions leaves each token only ±1 per dimension.")
    elif causal.equivariant:
        text = ("With a look-ahead mask and no PE, these two inputs happen to give the same outputs (max "
                f"|f(B) − P f(A)| = {num(causal.max_abs_diff)}).")
    else:
        text = ("Without PE but WITH a look-ahead (causal) mask, order still shows: "
                f"max |f(B) − P f(A)| = {num(causal.max_abs_diff)}. Each token sees a different number of "
                "predecessors, so the mask itself leaks position (Haviv et al. 2022)." + _matched_in_order(pieces_b))
    heading = "A causal stack without PE" + ("" if causal.equivariant or _same_tokens(causal) else " still sees order")
    return Panel("verdict-causal", heading, caption=text)


def _numbers_row(name: str, rep: OrderReport) -> dict:
    """One model's row of view 6's table. Where B is A token for token there is nothing to compare: its
    comparisons are blank, as where B is no reordering at all (a regression walk: "equivariant True" with PE,
    beside "B reorders A False")."""
    same = _same_tokens(rep)
    return {"model": name, "equivariant": None if same else rep.equivariant,
            "pooled equal": None if same else rep.pooled_equal,
            "max |f(B) − P f(A)|": None if same else rep.max_abs_diff,
            "max |mean f(A) − mean f(B)|": None if same else rep.pooled_max_abs_diff,
            "max |W(B) − P W(A) Pᵀ|": None if same else rep.attention_max_abs_diff,
            "B reorders A": _compares_attention(rep)}


def _aligned_attention_table(wa, wb, aligned, pieces_a, pieces_b, inv) -> pd.DataFrame:
    """The attention panels' numbers: B's rows keep B's own "position:piece" labels, as in the figure; the
    key columns are named by A's tokens, which B's aligned columns hold too (one set of columns for all)."""
    a = viz.matrix_frame(wa, pieces_a, pieces_a)
    b = viz.matrix_frame(wb, pieces_b, pieces_b).iloc[inv, inv]  # (Ta, Ta) = aligned, B's labels
    b.columns = a.columns
    diff = viz.matrix_frame(np.abs(wa - aligned), pieces_a, pieces_a)
    return pd.concat({"A": a, "B (aligned)": b, "|A − B|": diff}, names=["panel"])


def _attention_panel(spec: FigureSpec, rep: OrderReport, name: str, slug: str, pieces_a: list[str],
                     pieces_b: list[str], inv: np.ndarray) -> Panel:
    """One encoder layer and head (the spec's, within the model's): W(A), B's weights with rows and columns
    in A's order (Pᵀ W(B) P), and their difference; the caption gives the largest over every layer and head."""
    layers = len(rep.trace_a.layers)
    layer = _clamp(spec.layer, layers)
    head = _clamp(spec.head, rep.trace_a.layers[layer].self_attn.n_heads)
    wa, wb = rep.attention(layer, head)  # (Ta, Ta), (Tb, Tb)
    aligned = wb[np.ix_(inv, inv)]  # (Ta, Ta): row and column i are B's for A's token i
    where = f"encoder layer {layer}, head {head}"
    worst = rep.attention_max_abs_diff
    if rep.attention_permuted:
        caption = (f"{name[0].upper() + name[1:]}: B's attention weights are A's with rows and columns reordered, "
                   f"W(B) = P W(A) Pᵀ, in every layer and head (max difference {num(worst)}, float rounding): "
                   "attention alone cannot see where a token is, only which tokens are there.")
    else:
        caption = (f"{name[0].upper() + name[1:]}: B's attention weights are not A's reordered: max |W(B) − P W(A) Pᵀ| "
                   f"= {num(worst)} over every layer and head ({count_of(layers, 'layer')}).")
    return Panel(
        f"attn-{slug}", f"Attention weights {name}: A, B in A's order, |A − B|",
        viz.aligned_attention_figure(wa, aligned, labels_a=pieces_a, labels_b=pieces_b, positions_b=inv.tolist(),
                                     theme=spec.theme, title=f"Self-attention weights {name}, {where}, B in A's order"),
        lambda: _aligned_attention_table(wa, wb, aligned, pieces_a, pieces_b, inv),
        caption=caption,
    )


# -- 7. translation ---------------------------------------------------------------------------
def decoding_spec(spec: FigureSpec) -> FigureSpec:
    """The spec whose run the translate view shows: the paper's masks, whatever the sidebar's Mask.

    Greedy decoding (the translation shown) runs the model as it was trained, with those masks; one
    traced pass over [BOS] y1 .. yn reproduces its step t in row t only under the look-ahead mask
    (row t then sees tokens 0..t, what step t had read). Under 'none' row t would read the later
    tokens of the model's own output, and under 'look-ahead' the encoder would read causally: the
    rows would show steps that greedy decoding never took."""
    return spec if spec.mask == "paper" else dataclasses.replace(spec, mask="paper")


def traced_spec(spec: FigureSpec) -> FigureSpec:
    """The spec whose run a trace download holds: the run its figures show. The translate view alone
    shows the paper-mask run (decoding_spec); a spec of several views, the spec's own."""
    return decoding_spec(spec) if tuple(spec.views) == ("translate",) else spec


def translate_view(spec: FigureSpec, models: Models) -> ViewResult:
    if spec.model != "zh-en":
        # where: on a phone the sidebar is folded away behind » (a narrow-screen walk opened a link to view 7)
        return ViewResult(hint="Choose the trained model (zh-en) under Model, in the sidebar, to watch it translate.")
    run_ = models.run(decoding_spec(spec))
    if run_ is None:
        return ViewResult(hint="Type a Chinese sentence, e.g. 你喜欢她, to translate it.")
    row = run_.shown_row(spec.sentence)
    s = run_.sentences[row]
    src, tgt = run_.src_pieces(row), run_.tgt_pieces(row)
    trace = run_.trace
    layer = _clamp(spec.layer, len(trace.decoder.layers))
    out = ViewResult(notices=list(run_.notices))
    if spec.mask != "paper":
        out.notices.append(f"Translate decodes with the paper's masks, whatever the sidebar's Mask ('{spec.mask}', "
                           "which the other views use): greedy decoding runs the model as it was trained, and each "
                           "step reads only the tokens before it.")
    if not s.finished:  # a bad-input walk: 我 alone came out as "i i i … i", 63 times, told as any translation
        out.notices.append(f"Sentence {s.key.upper()}: the decoder never wrote [EOS], so greedy decoding stopped at "
                           f"its limit of {len(s.tgt_ids)} tokens: this translation is cut off, not finished. Trained "
                           "on short Chinese sentences (such as 你喜欢她), the model can repeat itself on a sentence "
                           "unlike them.")
    read = s.text if s.cut_from is None else f"{s.encoding.text}…"  # a long paste: what the model read
    # controls shown as ⟨U+XXXX⟩: a right-to-left override (U+202E) would turn "→ translation" around
    # which of the pair translated, in the heading: the sidebar's Positional encoding swaps zh-en for zh-en-nope and the
    # page looked the same but for the model line, under the figures on a projector (a teacher's walk)
    name = models.model(decoding_spec(spec)).name
    heading = f"Greedy translation by {name}" + (" (no positional encoding)" if name == "zh-en-nope" else "")
    out.panels.append(Panel("translation", heading, caption=f"{visible_controls(read)} → {s.translation or NO_WORDS}"))
    self_rec = trace.decoder.layers[layer].self_attn
    cross_rec = trace.decoder.layers[layer].cross_attn
    head = _clamp(spec.head, cross_rec.n_heads)
    sa, ca = head_arrays(self_rec, row, head), head_arrays(cross_rec, row, head)
    # the sentence's own steps and source tokens: the [PAD]s that line it up with the other sentence are
    # no part of its translation (as in the step-by-step panels, ui/translate.py)
    n_dec, n_src = len(s.tgt_ids), len(s.src_ids)
    tgt, src = tgt[:n_dec], src[:n_src]
    cross_w, cross_ok = ca["weights"][:n_dec, :n_src], ca["allowed"][:n_dec, :n_src]  # (Tt, Ts)
    self_w, self_ok = sa["weights"][:n_dec, :n_dec], sa["allowed"][:n_dec, :n_dec]  # (Tt, Tt)
    steps = s.step_labels()  # (Tt,) "[BOS]→she": the row of the step that read [BOS] and wrote "she"
    out.panels.append(Panel(
        "cross", f"Cross-attention, layer {layer}, head {head}: each decoding step (row: the token it reads → "
                 "the token it writes) over the source",
        viz.cross_attention_heatmap(cross_w, target_labels=tgt, source_labels=src, step_labels=steps,
                                    mask=None if cross_ok.all() else cross_ok, theme=spec.theme,
                                    title=f"Cross-attention: each decoding step over the source, layer {layer}, "
                                          f"head {head}"),
        viz.matrix_frame(cross_w, steps, src),
    ))
    out.panels.append(Panel(
        "decoder-self", f"Decoder masked self-attention, layer {layer}, head {head}",
        viz.decoder_self_attention_heatmap(self_w, target_labels=tgt, step_labels=steps, mask=self_ok,
                                           theme=spec.theme,
                                           title=f"Decoder self-attention (causal: each step sees the tokens read so "
                                                 f"far), layer {layer}, head {head}"),
        viz.matrix_frame(self_w, steps, tgt),
    ))
    every = cross_rec.row_weights(row)[0, :, :n_dec, :n_src].double().cpu().numpy()  # (H, Tt, Ts)
    out.panels.append(Panel(
        "cross-heads", f"Cross-attention: every head of decoder layer {layer}",  # one chart: full screen stays
        viz.heads_grid(every, row_labels=steps, col_labels=src, head_names=[f"head {h}" for h in range(len(every))],
                       theme=spec.theme, title=f"Cross-attention: every head of decoder layer {layer}",
                       axis_names=viz.STEP_HOVER["source"]),  # as the chart above
        lambda: pd.concat({f"head {h}": viz.matrix_frame(w, steps, src) for h, w in enumerate(every)}, names=["head"]),
    ))
    return out


VIEW_BUILDERS: dict[str, Callable[[FigureSpec, Models], ViewResult]] = {
    "tokens": tokens_view,
    "positional": positional_view,
    "attention": attention_view,
    "heads": heads_view,
    "query": query_view,
    "order": order_view,
    "translate": translate_view,
}


# The selection controls each view reads, and so the ones the app shows above its figures (ui/look.py): a view's
# result is the same whatever the others hold (tests/test_views.py changes each, and each one shown changes it).
USES = {
    "block": {"attention", "heads", "query"},
    "layer": {"attention", "heads", "query", "order", "translate"},
    "head": {"attention", "query", "order", "translate"},
    "heads": {"heads"},
    "sentence": {"positional", "attention", "heads", "query", "translate"},
    "query": {"query"},
}


def read_spec(view: str, spec: FigureSpec) -> FigureSpec:
    """spec with each selection control `view` does not read (USES) at its default: what a cache of views keys on
    (ui.cache.view_result), so that a view does not wait for a build of the figures it holds already because
    a control it does not show moved (a student back in view 2 from another head of view 3; a class on 30 heads
    sharing one view 2)."""
    return dataclasses.replace(spec, **{name: getattr(FigureSpec, name) for name, views in USES.items()
                                        if view not in views})


def build_view(view: str, spec: FigureSpec, models: Models) -> ViewResult:
    if view not in VIEW_BUILDERS:
        raise ValueError(f"view {view!r} is unknown: choose one of {sorted(VIEW_BUILDERS)}")
    return VIEW_BUILDERS[view](spec, models)
