"""The translate view's extras: greedy decoding revealed step by step, and every head of cross-attention."""

from __future__ import annotations

import numpy as np
import streamlit as st

import viz
from lab.compute import Loaded, Run
from lab.spec import FigureSpec
from model.analysis import all_head_weights, head_arrays
from ui.text import md


def _row(run: Run, spec: FigureSpec) -> int:
    row = run.row(spec.sentence)
    return 0 if row is None else row


def decoding_steps(run: Run, loaded: Loaded, spec: FigureSpec) -> None:
    """A slider over decoding steps: at step t the decoder has read t tokens and predicts the next.

    The rows shown are the rows of the full pass: under the look-ahead mask row t depends only on
    tokens 0..t, so it is exactly what greedy decoding computed at step t.
    """
    row = _row(run, spec)
    sentence = run.sentences[row]
    n_dec, n_src = len(sentence.tgt_ids), len(sentence.src_ids)
    tgt, src = list(sentence.tgt_pieces), list(sentence.encoding.pieces)
    logits = run.trace.logits[row, :n_dec]  # (n_dec, V)
    predicted = [loaded.tgt_tokenizer.id_to_piece(int(i)) for i in logits.argmax(-1).tolist()]
    st.subheader("Watch it decode, one step at a time", anchor=False)
    if n_dec > 1:
        st.session_state["translate_step"] = min(max(st.session_state.get("translate_step", n_dec), 1), n_dec)
        step = st.slider("Decoding step", 1, n_dec, key="translate_step",
                         help="Step t: the decoder has read t tokens ([BOS] and its own earlier outputs).")
    else:
        step = 1
    read = " ".join(tgt[:step])
    st.info(md(f"Step {step} of {n_dec}: the decoder has read “{read}” and predicts “{predicted[step - 1]}”."),
            icon=":material/arrow_forward:")
    decoders = run.trace.decoder.layers
    layer = max(0, min(spec.layer, len(decoders) - 1))
    head = max(0, min(spec.head, decoders[layer].self_attn.n_heads - 1))
    sa = head_arrays(decoders[layer].self_attn, row, head)
    ca = head_arrays(decoders[layer].cross_attn, row, head)
    left, right = st.columns(2)
    with left:
        fig = viz.decoder_self_attention_heatmap(
            sa["weights"][:step, :step], target_labels=tgt[:step], mask=sa["allowed"][:step, :step],
            title=f"Decoder self-attention, layer {layer} head {head}", theme=spec.theme)
        st.plotly_chart(fig, config=viz.figure_config(f"decode-step{step}-self"), key="chart-translate-step-self",
                        theme=None, width="stretch")
    with right:
        fig = viz.cross_attention_heatmap(
            ca["weights"][:step, :n_src], target_labels=tgt[:step], source_labels=src,
            title=f"Cross-attention, layer {layer} head {head}", theme=spec.theme)
        st.plotly_chart(fig, config=viz.figure_config(f"decode-step{step}-cross"), key="chart-translate-step-cross",
                        theme=None, width="stretch")


def cross_heads(run: Run, spec: FigureSpec) -> None:
    """Every head of the chosen decoder layer's cross-attention, side by side."""
    row = _row(run, spec)
    sentence = run.sentences[row]
    n_dec, n_src = len(sentence.tgt_ids), len(sentence.src_ids)
    weights = all_head_weights(run.trace, "cross", row)[:, :, :n_dec, :n_src]  # (L, H, Tq, Ts), own tokens only
    layer = max(0, min(spec.layer, weights.shape[0] - 1))
    st.subheader(md(f"Cross-attention: every head of decoder layer {layer}"), anchor=False)
    fig = viz.heads_grid(np.asarray(weights[layer]), row_labels=list(sentence.tgt_pieces),
                         col_labels=list(sentence.encoding.pieces),
                         head_names=[f"head {h}" for h in range(weights.shape[1])], theme=spec.theme)
    st.plotly_chart(fig, config=viz.figure_config(f"cross-heads-layer{layer}"), key="chart-translate-cross-heads",
                    theme=None, width="stretch")
