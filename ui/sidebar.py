"""The sidebar: the model, and how figures look — nothing that depends on the view or the sentences.

The sentences (ui/sentences.py) and what to look at (view, block, layer, head...: ui/look.py) live in
the main area, inside the st.fragment that draws the figures, so changing them reruns that fragment
and not this sidebar. Widget keys are FigureSpec's field names, so one FigureSpec is built from
st.session_state, and a share link fills st.session_state back from a FigureSpec.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import streamlit as st

from lab.spec import MASKS, MIN_EXPORT_SIDE, THEMES
from model.device import available_devices
from ui import focus
from ui.state import (
    FIELD_NAMES,
    UI_LIMITS,
    choose_model,
    choose_theme,
    follows_page,
    keep_choice,
    keep_in_range,
)
from viz.theme import design_size, too_narrow

MASK_HELP = {
    "paper": "As in the paper: every block ignores [PAD] keys (added so that A and B line up), and the decoder's "
             "self-attention also hides future tokens (look-ahead).",
    "none": "Nothing is masked: [PAD] tokens and future tokens are attended like words. Shows what masks prevent.",
    "padding": "Only [PAD] keys are masked, in every block; the decoder may peek at future tokens.",
    "look-ahead": "[PAD] keys plus a look-ahead (causal) mask in encoder AND decoder self-attention: each token "
                  "sees only itself and earlier tokens, as in GPT-style models.",
}
POSITIONAL_HELP = {
    "sinusoidal": "sin/cos of the position at geometric frequencies, added to the token embeddings (§3.5).",
    "learned": "one trainable vector per position (random here: this model is untrained).",
    "none": "adds no position information: self-attention without a look-ahead mask (the encoder's, under the "
            "paper's masks) then cannot tell word order; a look-ahead mask still leaks some (view 6).",
}
THEME_HELP = ("default: for the screen (hover a cell for its value). paper / paper-sans: white, print sizes, "
              "values written in small matrices (serif or sans-serif type). slide: large type for a projector (charts, "
              "notes, tables and the values in small matrices). dark: dark background. Until you choose one, the figures "
              "follow the page: dark in dark mode, default otherwise.")


def _model_label(name: str) -> str:
    return {"random": "random (untrained; any size)", "zh-en": "zh-en (trained, zh → en)"}[name]


def model_section(trained_problem: str | None, notes: list[str]) -> None:
    st.header("Model")
    options = ["random"] if trained_problem else ["random", "zh-en"]
    keep_choice("model", options, notes, why=trained_problem or "")
    st.selectbox("Model", options, key="model", format_func=_model_label, on_change=choose_model,
                 args=(".st-key-model",),
                 help="random: a freshly initialised Transformer (seeded): the mechanics, not meaning. "
                      "zh-en: trained on a small Chinese→English corpus (model/train.py)."
                      + (f" Not available here: {trained_problem}." if trained_problem else ""))
    trained = st.session_state["model"] != "random"
    st.radio("Tokenizer", ["char", "bpe"], key="tokenizer", horizontal=True, disabled=trained, **focus.let_go("tokenizer"),
             help="char: one token per character, per Unicode code point (👍🏽 is 👍 + 🏽, two tokens). bpe: byte-pair "
                  "encoding over characters, not bytes: a character missing from its vocabulary is [UNK]; its merges "
                  "are learned on the bundled corpus (e.g. 喜欢 or ' like' become one token). The trained model has "
                  "its own per-character tokenizer.")
    if trained:  # the radio, greyed, keeps the random model's choice (bpe, say): the charts show characters
        st.caption("zh-en reads one token per character, with its own tokenizer; char / bpe is the random "
                   "model's.")
    positionals = ["sinusoidal", "none"] if trained else ["sinusoidal", "learned", "none"]
    keep_choice("positional", positionals, notes)
    st.selectbox("Positional encoding", positionals, key="positional", **focus.let_go("positional"),
                 format_func=(lambda p: {"sinusoidal": "sinusoidal (zh-en)", "none": "none (zh-en-nope)"}[p])
                 if trained else str,
                 help=" ".join(f"{k}: {v}" for k, v in POSITIONAL_HELP.items() if k in positionals)
                 + (" zh-en-nope is zh-en trained the same way without it." if trained else "")
                 + " (View 7's “Train it yourself” has its own choice, for the model it trains.)")
    st.selectbox("Mask", list(MASKS), key="mask", **focus.let_go("mask"),
                 help=" ".join(f"**{k}**: {v}" for k, v in MASK_HELP.items()))
    with st.expander("Model size (random model)", expanded=False, key="model-size"):
        for key, help_text in (
            ("d_model", "width of every token vector"),
            ("n_heads", "d_k = d_model / heads must be a whole number"),
            ("n_layers", "encoder layers (and as many decoder layers)"),
            ("d_ff", "inner width of the feed-forward network"),
            ("seed", "random initialisation"),
        ):
            number_box(FIELD_NAMES.get(key, key), key, help_text, disabled=trained)
        st.radio("LayerNorm placement", ["post", "pre"], key="norm", horizontal=True, disabled=trained, **focus.let_go("norm"),
                 help="post (the paper): x = LayerNorm(x + Sublayer(x)). pre: x = x + Sublayer(LayerNorm(x)).")
    devices = ["cpu"] + [d for d in available_devices() if d != "cpu"]
    keep_choice("device", devices, notes)
    st.selectbox("Device", devices, key="device", **focus.let_go("device"),
                 help="Where the forward pass runs. Every figure shows the same numbers on either, to float32 "
                      "rounding (full float32 on the GPU, no TF32). A GPU pays off for big models and long inputs; "
                      "the small default model is quicker on the CPU, since each GPU call has a fixed launch cost.")


def display_section() -> None:
    st.header("Figures")
    st.selectbox("Theme", list(THEMES), key="theme", help=THEME_HELP, on_change=choose_theme,
                 args=(".st-key-theme",))
    if st.session_state.get("theme") == "slide":  # its large type shrinks with its layout in a narrow column
        st.caption(f"Slide figures are laid out {design_size('slide')[0]} px wide, as exported, and shrink to fit a "
                   "narrower column. On a projector, collapse this sidebar («) or use a chart's full-screen "
                   "button for larger type. A link in the slide theme (the lesson's steps) opens with this "
                   "sidebar collapsed.")
    with st.expander("Export size", expanded=False, key="export-size"):
        for key, label in (("width", "width (CSS px)"), ("height", "height (CSS px)")):
            if 0 < st.session_state[key] < MIN_EXPORT_SIDE:  # typed: the smallest size there is, not an error
                st.session_state[key] = MIN_EXPORT_SIDE
            number_box(label, key, f"0 = the theme's own size: paper 600×480, slide 1280×720, otherwise 900×600 (a "
                                   f"figure laid out taller keeps its own height). Otherwise at least {MIN_EXPORT_SIDE}; "
                                   "figures are laid out for the theme's size, so a much smaller one can cut titles and "
                                   "labels.", step=100)
        laid_out = too_narrow(st.session_state.get("theme", "default"), st.session_state["width"])
        if laid_out:
            st.caption(f"Figures are laid out {laid_out} px wide: at {st.session_state['width']} px their titles "
                       "and labels can be cut. For one column of a paper, export at 0 and scale the PDF or SVG "
                       "(\\includegraphics[width=\\columnwidth]).")
        number_box("PNG scale", "scale", "PNG pixels per CSS pixel: 3.125 × 96 dpi = 300 dpi; 3 = 288 dpi.",
                   step=0.125, format="%.3f")


def number_box(label: str, key: str, help_text: str, step: float = 1, **kwargs) -> None:
    """A number box offering its UI_LIMITS range, its value (a link's, a preset's) first brought inside it; kwargs:
    st.number_input's."""
    lo, hi = UI_LIMITS[key]
    keep_in_range(key, lo, hi)
    st.number_input(label, min_value=lo, max_value=hi, step=step, key=key, help=help_text, **kwargs)


LESSON = Path(__file__).resolve().parent.parent / "docs" / "lesson.md"


@functools.cache
def lesson_markdown(theme: str | None = None) -> str:
    """docs/lesson.md for the sidebar: from "The thread of the lesson" on (the title and the note on
    the file's links and tests are for readers of the file), its step links made relative (they open
    this app, wherever it runs: a class server too), its headings made small. With a theme, every step
    link carries it: each opens a new session, which would otherwise start without the teacher's slide."""
    text = LESSON.read_text(encoding="utf-8")
    start = text.find("The thread of the lesson")
    text = text[start:] if start >= 0 else text
    text = text.replace("(http://localhost:8501/?", "(./?")
    if theme is not None:
        text = re.sub(r"\(\./\?([^)\s]+)\)", lambda m: f"(./?{m.group(1)}&theme={theme})", text)
    return re.sub(r"^## ", "#### ", text, flags=re.MULTILINE)


def lesson_section() -> None:
    """A 20-minute lesson in seven links (docs/lesson.md), drawn only while opened."""
    if not LESSON.is_file():
        return
    box = st.expander("A 20-minute lesson", key="lesson", on_change="rerun", icon=":material/school:")
    with box:
        if box.open:  # a theme chosen here travels with the links; one that follows the page does not
            st.markdown(lesson_markdown(None if follows_page() else st.session_state.get("theme")))


def sidebar(trained_problem: str | None) -> list[str]:
    """Draw the sidebar; returns notes on settings that were adjusted to what is offered."""
    notes: list[str] = []
    with st.sidebar:
        model_section(trained_problem, notes)
        display_section()
        lesson_section()
    return notes
