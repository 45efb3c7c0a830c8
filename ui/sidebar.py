"""The sidebar: sentences, the model, what to look at, and how figures look.

Widget keys are FigureSpec's field names (plus "preset" and "view"), so one FigureSpec is built
from st.session_state, and a share link fills st.session_state back from a FigureSpec.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import streamlit as st

from lab.compute import Run, model_fields
from lab.spec import BLOCKS, MASKS, THEMES, FigureSpec, SpecError
from model.device import available_devices
from ui import cache
from ui.state import (
    PRESETS,
    apply_preset,
    keep_choice,
    keep_in_range,
    spec_from_state,
    swap_sentences,
)
from viz import visible_whitespace

MASK_HELP = {
    "paper": "As in the paper: every block ignores [PAD] keys (added to line A and B up), and the decoder's "
             "self-attention also hides future tokens (look-ahead).",
    "none": "Nothing is masked: [PAD] tokens and future tokens are attended like words. Shows what masks prevent.",
    "padding": "Only [PAD] keys are masked, in every block; the decoder may peek at future tokens.",
    "look-ahead": "[PAD] keys plus a look-ahead (causal) mask in encoder AND decoder self-attention: each token "
                  "sees only itself and earlier tokens, as in GPT-style models.",
}
POSITIONAL_HELP = {
    "sinusoidal": "sin/cos of the position at geometric frequencies, added to the token embeddings (§3.5).",
    "learned": "one trainable vector per position (random here: this model is untrained).",
    "none": "no position information at all: self-attention then cannot tell word order.",
}
BLOCK_HELP = ("encoder self: the source attends to itself. decoder self: the decoder input ([BOS] + tokens) "
              "attends to itself, with the look-ahead mask in 'paper' mode. cross: each decoder token "
              "attends to the encoder's output.")
THEME_HELP = ("default: for the screen. paper / paper-sans: white, print sizes, values written in small matrices "
              "(serif or sans-serif type). slide: large type for a projector. dark: dark background.")
UI_LIMITS = {"d_model": (2, 512), "n_heads": (1, 64), "n_layers": (1, 6), "d_ff": (1, 2048), "seed": (0, 2**31 - 1),
             "width": (0, 8000), "height": (0, 8000), "scale": (0.1, 10.0)}

# which "what to look at" controls each view uses
USES = {
    "block": {"attention", "heads", "query"},
    "layer": {"attention", "heads", "query", "translate"},
    "head": {"attention", "query", "translate"},
    "heads": {"heads"},
    "sentence": {"positional", "attention", "heads", "query", "translate"},
    "query": {"query"},
}


@dataclass
class Sidebar:
    spec: FigureSpec | None  # None when the settings are impossible (error says why)
    error: SpecError | None = None
    notes: list[str] = field(default_factory=list)  # settings that were adjusted to what is offered


def _model_label(name: str) -> str:
    return {"random": "random (untrained; any size)", "zh-en": "zh-en (trained Chinese → English translator)"}[name]


def sentences_section() -> None:
    st.header("Sentences")
    st.selectbox("Examples", list(PRESETS), index=None, key="preset", on_change=apply_preset,
                 placeholder="Load an example pair…", help="Fills sentence A and B.")
    st.text_input("Sentence A", key="sentence_a",
                  help="Any text: Chinese, English, emoji, right-to-left. The source sentence in encoder views.")
    st.text_input("Sentence B", key="sentence_b",
                  help="Compared with A. Make it a reordering of A (她喜欢你) to see why order needs positions.")
    st.button("Swap A ↔ B", key="swap", on_click=swap_sentences)


def model_section(trained_problem: str | None, notes: list[str]) -> None:
    st.header("Model")
    options = ["random"] if trained_problem else ["random", "zh-en"]
    keep_choice("model", options, notes)
    st.selectbox("Model", options, key="model", format_func=_model_label,
                 help="random: a freshly initialised Transformer (seeded): the mechanics, not meaning. "
                      "zh-en: trained on a small Chinese→English corpus (model/train.py)."
                      + (f" Not available here: {trained_problem}." if trained_problem else ""))
    trained = st.session_state["model"] != "random"
    st.radio("Tokenizer", ["char", "bpe"], key="tokenizer", horizontal=True, disabled=trained,
             help="char: one token per character. bpe: byte-pair merges learned on the bundled corpus "
                  "(e.g. 喜欢 or ' like' become one token). The trained model has its own per-character tokenizer.")
    positionals = ["sinusoidal", "none"] if trained else ["sinusoidal", "learned", "none"]
    keep_choice("positional", positionals, notes)
    st.selectbox("Positional encoding", positionals, key="positional",
                 format_func=(lambda p: {"sinusoidal": "sinusoidal (zh-en)", "none": "none (zh-en-nope, trained without)"}[p])
                 if trained else str,
                 help=" ".join(f"{k}: {v}" for k, v in POSITIONAL_HELP.items() if k in positionals))
    st.selectbox("Mask", list(MASKS), key="mask",
                 help=" ".join(f"**{k}**: {v}" for k, v in MASK_HELP.items()))
    with st.expander("Model size (random model)", expanded=False):
        for key, label, help_text in (
            ("d_model", "d_model", "width of every token vector"),
            ("n_heads", "heads", "d_k = d_model / heads must be a whole number"),
            ("n_layers", "layers", "encoder layers (and as many decoder layers)"),
            ("d_ff", "d_ff", "inner width of the feed-forward network"),
            ("seed", "seed", "random initialisation"),
        ):
            lo, hi = UI_LIMITS[key]
            keep_in_range(key, lo, hi)
            st.number_input(label, min_value=lo, max_value=hi, step=1, key=key, disabled=trained, help=help_text)
        st.radio("LayerNorm placement", ["post", "pre"], key="norm", horizontal=True, disabled=trained,
                 help="post (the paper): x = LayerNorm(x + Sublayer(x)). pre: x = x + Sublayer(LayerNorm(x)).")
    devices = ["cpu"] + [d for d in available_devices() if d != "cpu"]
    keep_choice("device", devices, notes)
    st.selectbox("Device", devices, key="device", help="Where the forward pass runs.")


def _layers_heads(spec: FigureSpec, view: str) -> tuple[int, int]:
    """(layers of the block the view shows, heads) of the model the spec names."""
    if spec.model == "random":
        return spec.n_layers, spec.n_heads
    config = cache.load(model_fields(spec)).model.config
    decoder = view == "translate" or spec.block != "encoder self"
    return (config.decoder_layers if decoder else config.n_layers), config.n_heads


def _query_labels(run: Run | None, spec: FigureSpec) -> list[str]:
    if run is None:
        return ["0"]
    row = run.row(spec.sentence)
    row = 0 if row is None else row
    pieces = run.src_pieces(row) if spec.block == "encoder self" else run.tgt_pieces(row)
    return [f"{i}: {visible_whitespace(p)}" for i, p in enumerate(pieces)]


def look_section(view: str, base: FigureSpec | None, notes: list[str]) -> None:
    uses = {k for k, views in USES.items() if view in views}
    if not uses:
        return
    st.header("What to look at")
    if "block" in uses:
        st.selectbox("Attention block", list(BLOCKS), key="block", help=BLOCK_HELP)
        if base is not None:
            base = dataclasses.replace(base, block=st.session_state["block"])
    if base is not None:
        n_layers, n_heads = _layers_heads(base, view)
    else:
        n_layers, n_heads = int(st.session_state["n_layers"]), max(1, int(st.session_state["n_heads"]))
    if "layer" in uses:
        keep_choice("layer", list(range(n_layers)), notes)
        st.selectbox("Layer", list(range(n_layers)), key="layer", format_func=lambda i: f"layer {i}")
    if "head" in uses:
        keep_choice("head", list(range(n_heads)), notes)
        st.selectbox("Head", list(range(n_heads)), key="head", format_func=lambda i: f"head {i}")
    if "heads" in uses:
        st.session_state["heads"] = [h for h in st.session_state["heads"] if 0 <= h < n_heads]
        st.multiselect("Heads in the grid", list(range(n_heads)), key="heads", format_func=lambda i: f"head {i}",
                       placeholder="all heads", help="Pick heads for a figure with fewer panels; empty = all.")
    if "sentence" in uses:
        st.radio("Sentence", ["a", "b"], key="sentence", horizontal=True, format_func=str.upper,
                 help="Which sentence the attention figures show.")
    if "query" in uses and base is not None:
        labels = _query_labels(cache.run_for(base), base)
        keep_choice("query", list(range(len(labels))))
        st.selectbox("Query token", list(range(len(labels))), key="query", format_func=lambda i: labels[i],
                     help="The token whose attention the bars show.")


def display_section() -> None:
    st.header("Figures")
    st.selectbox("Theme", list(THEMES), key="theme", help=THEME_HELP)
    with st.expander("Export size", expanded=False):
        for key, label in (("width", "width (CSS px)"), ("height", "height (CSS px)")):
            keep_in_range(key, *UI_LIMITS[key])
            st.number_input(label, min_value=UI_LIMITS[key][0], max_value=UI_LIMITS[key][1], step=50, key=key,
                            help="0 = the theme's own size: paper 600×480 (one column), slide 1280×720, "
                                 "otherwise 900×600. Otherwise at least 100.")
        keep_in_range("scale", *UI_LIMITS["scale"])
        st.number_input("PNG scale", min_value=0.1, max_value=10.0, step=0.125, format="%.3f", key="scale",
                        help="PNG pixels per CSS pixel: 3.125 × 96 dpi = 300 dpi; 3 = 288 dpi.")


def sidebar(view: str, trained_problem: str | None) -> Sidebar:
    notes: list[str] = []
    with st.sidebar:
        sentences_section()
        model_section(trained_problem, notes)
        try:
            base: FigureSpec | None = spec_from_state()
            error = None
        except SpecError as exc:
            base, error = None, exc
        look_section(view, base, notes)
        display_section()
    if error is not None:
        return Sidebar(None, error, notes)
    try:
        return Sidebar(spec_from_state(), None, notes)
    except SpecError as exc:
        return Sidebar(None, exc, notes)
