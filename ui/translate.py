"""The translate view's extra: greedy decoding revealed step by step (its slider is the page's own state;
the view's figures, every head of cross-attention included, are lab.views.translate_view's)."""

from __future__ import annotations

import cachetools
import streamlit as st

import viz
from lab.compute import Run, model_fields
from lab.spec import FigureSpec
from lab.views import Panel, ViewResult, decoding_spec
from model.analysis import head_arrays
from ui import cache, focus
from ui.panels import render_panel
from ui.state import LINKED_STEP
from ui.text import md
from viz.labels import count_of
from viz.theme import theme_spec

# a link's decoding step past its translation (step=999 of 4): (the sentence, the step), said until the step moves (a
# bad-input walk: it opened on the last step without a word, where a link's layer past the model is said)
PAST_STEP = "_translate_step_past"


def linked_step_waits(spec: FigureSpec) -> None:
    """A link's decoding step while view 7 shows the random model, said under its hint (which says where to choose
    the trained one): it waits for zh-en (decoding_steps opens on it), where it was dropped without a word."""
    step = st.session_state.get(LINKED_STEP)
    if step is not None and spec.model != "zh-en":
        st.info(f"This link's step {step} is a decoding step of the trained model (zh-en): view 7 opens on it once "
                "that model is chosen.", icon=":material/info:")


def shared_step() -> int | None:
    """The decoding step a share link of view 7 carries: the slider's, or a link's step still waiting for the
    trained model (linked_step_waits), kept as the link that opened the page had it."""
    ss = st.session_state
    return ss.get(LINKED_STEP, ss.get("translate_step"))


def step_slider(text: str, n_dec: int) -> int:
    """The decoding step shown, 1 to n_dec, on a slider (none for a translation of one step): the step of a link, or
    the first, where the sentence `text` is new. A link's step is taken here, slider or none: a one-step translation
    left it in the share link (step=3 of 1), unsaid, for the next sentence to open on."""
    ss = st.session_state
    # a new sentence opens on its first step ([BOS] read, the first word predicted): its whole translation is
    # the view's own charts above, which the last step would only repeat
    # (a share link's step, the first sentence's: the step the sender's screen showed)
    if ss.get("_translate_step_of") != text:
        ss["_translate_step_of"], ss["translate_step"] = text, ss.pop(LINKED_STEP, 1)
        if ss["translate_step"] > n_dec:  # a link's step past this translation: said while it is shown
            ss[PAST_STEP] = (text, ss["translate_step"])
    ss["translate_step"] = step = min(max(ss.get("translate_step", 1), 1), n_dec)
    # dragged with the mouse, it lets its focus go (ui/focus.py): ← → flip heads again, as after any control
    # (a teacher's walk: after a drag → moved the step, not the head)
    if n_dec > 1:
        step = st.slider("Decoding step", 1, n_dec, key="translate_step", **focus.let_go("translate_step"),
                         help="Step t: the decoder has read t tokens ([BOS] and its own earlier outputs).")
    past = ss.get(PAST_STEP)
    if past is not None and past[0] == text and step == n_dec:  # as a link's layer past the model is
        st.warning(f"step = {past[1]} is not available here ({count_of(n_dec, 'decoding step')}); using {n_dec}.",
                   icon=":material/warning:")
    else:
        ss.pop(PAST_STEP, None)
    return step


def decoding_steps(run: Run, spec: FigureSpec) -> None:
    """A slider over decoding steps: at step t the decoder has read t tokens and predicts the next.

    The rows shown are the rows of the full pass: under the look-ahead mask row t depends only on
    tokens 0..t, so it is exactly what greedy decoding computed at step t.
    """
    row = run.shown_row(spec.sentence)
    sentence = run.sentences[row]
    n_dec, tgt, steps = len(sentence.tgt_ids), list(sentence.tgt_pieces), sentence.step_labels()
    predicted = sentence.predicted  # what greedy decoding wrote at each step (lab.compute.prepare), as labelled
    st.subheader("Watch it decode, one step at a time", anchor=False)
    step = step_slider(sentence.text, n_dec)
    read = " ".join(tgt[:step])
    # the charts' rows are numbered by position from 0, the steps from 1 (tokens read): name the row, so that step
    # 2 and the lesson's row "1:you→like" are seen to be one (a text audit found them read as one apart)
    row_label = viz.unique_labels(steps)[step - 1]
    st.info(md(f"Step {step} of {n_dec}: the decoder has read “{read}” and predicts “{predicted[step - 1]}” "
               f"(the charts' last row, {row_label})."), icon=":material/arrow_forward:")
    decoders = run.trace.decoder.layers
    layer = max(0, min(spec.layer, len(decoders) - 1))
    head = max(0, min(spec.head, decoders[layer].self_attn.n_heads - 1))
    self_panel, cross_panel = step_panels(run, spec, row, layer, head, step).panels
    left, right = st.columns(2)
    with left:
        render_panel(self_panel, "translate", spec, row="translate-step")
    with right:
        render_panel(cross_panel, "translate", spec, row="translate-step")


# The step charts kept, by ViewResult.nbytes: a step's two ~0.1 MB (你喜欢她; 24 or 64 characters: 0.11), ~0.27 MB at
# the 63rd step of a translation cut at the length limit (我): ~30-80 steps of heads and sentences, where a class
# following the teacher through one sentence's 4 steps and 4 heads needs 16
STEP_CACHE_BYTES = 8 * 2**20


def _step_key(run: Run, spec: FigureSpec, row: int, layer: int, head: int, step: int) -> tuple:
    """step_panels' key: what the two charts show, and no more: the run (its model's fields, A and B, the paper's
    masks: ui.cache.run_for's key), the sentence's row, the layer, the head, the step and the theme."""
    traced = decoding_spec(spec)
    return cachetools.keys.hashkey(model_fields(traced), traced.sentence_a, traced.sentence_b, row, layer, head, step,
                                   spec.theme)


@cache.shared(STEP_CACHE_BYTES, ViewResult.nbytes, key=_step_key, info=True)
def step_panels(run: Run, spec: FigureSpec, row: int, layer: int, head: int, step: int) -> ViewResult:
    """The step's two charts (decoder self-attention, cross-attention: the first `step` rows of `row`'s decoding at
    `layer` and `head`), with their numbers and payloads, once per _step_key for the whole server, as ui.cache's views
    are (read-only from here on): built on every rerun, a change of the training panel's slider, an expander opened or
    a head flipped and flipped back replayed the head's projections and drew both charts again, the same."""
    sentence = run.sentences[row]
    n_src = len(sentence.src_ids)
    tgt, src, steps = list(sentence.tgt_pieces), list(sentence.encoding.pieces), sentence.step_labels()
    sa = head_arrays(run.trace.decoder.layers[layer].self_attn, row, head)
    ca = head_arrays(run.trace.decoder.layers[layer].cross_attn, row, head)
    self_w = sa["weights"][:step, :step]  # (t, t): what the decoder's own tokens attend to so far
    cross_w = ca["weights"][:step, :n_src]  # (t, Ts): each step over the source
    # the rows' Σ: in a theme with a size of its own (slide, paper, paper-sans), each chart drawn at its theme's width
    # (shrunk to fit); in the page's themes, half a page wide, its ~85 px came out of the plot's (a regression walk: 15
    # source tokens in 93 px), so there they are left to the view's whole charts above (a researcher's walk: "slide"
    # and "paper" by name left paper-sans without them)
    sums = theme_spec(spec.theme)["width"] is not None
    # each chart's own title names the step: a download of it is read away from the slider (a researcher's walk)
    return cache.with_payloads(ViewResult(panels=[
        Panel(f"step{step}-self", f"Step {step}: decoder self-attention",
              viz.decoder_self_attention_heatmap(self_w, target_labels=tgt[:step], step_labels=steps[:step],
                                                 mask=sa["allowed"][:step, :step], row_sums=sums,
                                                 title=f"Decoder self-attention, layer {layer}, head {head}, step {step}",
                                                 theme=spec.theme),
              viz.matrix_frame(self_w, steps[:step], tgt[:step])),
        Panel(f"step{step}-cross", f"Step {step}: cross-attention",
              viz.cross_attention_heatmap(cross_w, target_labels=tgt[:step], source_labels=src,
                                          step_labels=steps[:step], row_sums=sums,
                                          title=f"Cross-attention, layer {layer}, head {head}, step {step}",
                                          theme=spec.theme),
              viz.matrix_frame(cross_w, steps[:step], src)),
    ]))
