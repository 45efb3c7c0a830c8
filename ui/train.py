"""Train it yourself: a fresh small translator trained in this session, loss curve drawn live.

The model is new for every press of the button and lives only in this run; the cached demo models
are never touched. The corpus and tokenizers are shared read-only (st.cache_resource).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
import torch

import viz
from lab.spec import FigureSpec
from lab.views import Panel
from ui.chart import chart as ui_chart
from ui.panels import render_panel
from ui.text import md

NOTHING_YET = "(nothing yet: [EOS] first)"  # an empty translation, said: early on the model ends at once
LOSS_AXIS = "cross-entropy, label-smoothed (ε = 0.1)"  # TrainSettings' label_smoothing, the paper's §5.4


@st.cache_resource(show_spinner="Preparing the corpus…")
def _corpus():
    """(train pairs, held-out pairs, source tokenizer, target tokenizer, encoded train pairs); read-only."""
    from model.data import generate_corpus, split_corpus
    from model.train import encode_pairs, make_tokenizers

    train_pairs, heldout = split_corpus(generate_corpus(0), seed=0)
    src_tok, tgt_tok = make_tokenizers(train_pairs)
    return train_pairs, heldout, src_tok, tgt_tok, encode_pairs(train_pairs, src_tok, tgt_tok)


def _train(steps: int, positional: str, theme: str, chart) -> dict:
    """One run, its loss drawn live into the placeholder `chart` (st.empty)."""
    from model.data import SEED_EXAMPLES
    from model.train import Trainer, TrainSettings, demo_config, translate_batch
    from model.transformer import Transformer

    _, heldout, src_tok, tgt_tok, data = _corpus()
    # the paper's schedule (eq. 3) with a warm-up that fits a short run: ~150 steps already translate
    settings = TrainSettings(steps=steps, batch_size=64, warmup=max(10, min(400, steps // 4)), device="cpu")
    progress = st.progress(0.0, text="Training…")
    losses: list[float] = []
    accuracy = 0.0
    every = max(1, steps // 15)
    with torch.random.fork_rng(devices=[]):  # seeding here leaves the server's global RNG as it was
        torch.manual_seed(0)
        model = Transformer(demo_config(positional, src_tok.vocab_size, tgt_tok.vocab_size))
        trainer = Trainer(model, data, settings)
        for stats in trainer.run(steps):
            losses.append(stats.loss)
            accuracy = stats.accuracy
            if stats.step % every == 0 or stats.step == steps:
                progress.progress(stats.step / steps,
                                  text=f"step {stats.step}/{steps}: loss {stats.loss:.3f}, "
                                       f"token accuracy {stats.accuracy:.0%}")
                with chart:  # one key per update: each replaces the last in the placeholder; named as kept
                    ui_chart(viz.loss_curves({run_name(positional, steps): losses}, y_title=LOSS_AXIS, theme=theme),
                             key=f"chart-train-progress-{stats.step}", config=viz.figure_config("training-loss"),
                             theme=theme)
    # 你喜欢她 and 她喜欢你, which only word order tells apart (the corpus's first seed examples, trained on), then
    # five sentences held out
    pairs = [*SEED_EXAMPLES[:2], *heldout[:5]]
    texts = [p.zh for p in pairs]
    outputs = [out or NOTHING_YET for out in translate_batch(model.eval(), texts, src_tok, tgt_tok)]
    table = pd.DataFrame({"Chinese": texts, "reference": [p.en for p in pairs], run_name(positional, steps): outputs})
    return {"losses": losses, "table": table, "steps": steps, "positional": positional, "accuracy": accuracy}


def trained_words(result: dict) -> str:
    """A run's end in words, for the panel's status line: "Trained 150 steps with positional encoding: yes
    (sinusoidal): loss 2.104, token accuracy 61%. The translations are below.\""""
    choice = TRAIN_PE_OPTIONS[result["positional"]]
    return (f"Trained {result['steps']} steps with positional encoding: {choice}: loss {result['losses'][-1]:.3f}, "
            f"token accuracy {result['accuracy']:.0%}. The translations are below.")


# The panel's own choice of positional encoding, named apart from the sidebar's "Positional encoding" (a student's walk:
# two controls of one name, one of them choosing the shipped model the charts above show, zh-en or zh-en-nope, the
# other the fresh model trained here; a student set one and looked for the change under the other)
TRAIN_PE_LABEL = "Train with positional encoding"  # the radio's label (written out there: tests/test_docs.py reads it)
TRAIN_PE_OPTIONS = {"sinusoidal": "yes (sinusoidal)", "none": "no"}


def train_pe_help(spec: FigureSpec) -> str:
    """The panel's radio's help: what it chooses, and that the sidebar's Positional encoding (its choice named) is
    another control, for the model the charts above show; neither changes the other."""
    if spec.model != "zh-en":  # no charts above: the view's hint asks for zh-en
        return ("For the fresh model trained here only. The sidebar's Positional encoding (now: "
                f"{spec.positional}) is the random model's, and with Model zh-en it picks the shipped translator "
                "that the charts above show (zh-en or zh-en-nope): neither choice changes the other.")
    shown = {"sinusoidal": "zh-en, sinusoidal", "none": "zh-en-nope, none"}.get(spec.positional, spec.positional)
    return ("For the fresh model trained here only. The charts above show the shipped model that the sidebar's "
            f"Positional encoding picks (now: {shown}): this choice does not change them, and that one does not "
            "change what is trained here.")


def run_name(positional: str, steps: int) -> str:
    """A run as its column and its loss line are named: "with PE, after 150 steps", "no PE, after 150 steps"."""
    return f"{'no PE' if positional == 'none' else 'with PE'}, after {steps} steps"


def kept_runs(results: dict[str, dict]) -> tuple[dict[str, list[float]], pd.DataFrame, pd.DataFrame]:
    """The last run of each positional encoding, with PE first: their losses by name, the same as a table (one
    column a run, one row a step: the chart's numbers), and one table of their translations side by side (a
    teacher's walk: the lesson says "train with and without PE and compare", and each run replaced the last)."""
    runs = [results[p] for p in ("sinusoidal", "none") if p in results]
    losses = {run_name(r["positional"], r["steps"]): r["losses"] for r in runs}
    by_step = pd.DataFrame({name: pd.Series(values, index=pd.RangeIndex(1, len(values) + 1, name="step"))
                            for name, values in losses.items()})
    table = runs[0]["table"]
    for r in runs[1:]:
        name = run_name(r["positional"], r["steps"])
        table = table.assign(**{name: r["table"][name]})  # the same sentences, in the same order
    return losses, by_step, table


def train_panel(spec: FigureSpec) -> None:
    theme = spec.theme
    st.subheader("Train it yourself", anchor=False)
    st.caption("A fresh translator (d_model 64, 4 heads, 2+2 layers) trained in your session with Adam and the "
               "paper's learning-rate schedule (eq. 3; its warm-up a quarter of the run, at least 10 steps, not the "
               "paper's 4,000) on the bundled Chinese→English corpus, 64 sentence pairs a step. The loss is the "
               "paper's label-smoothed cross-entropy (ε = 0.1): it levels off well above 0 even where every token is "
               "right (the smoothing spreads 0.1 of each target's probability evenly over the whole vocabulary). "
               "About 150 steps already translate short sentences; telling 你喜欢她 from 她喜欢你 takes longer, and "
               "without positional encoding it never comes.")
    st.session_state.setdefault("train_steps", 150)
    st.session_state.setdefault("train_positional", "sinusoidal")
    left, middle, right = st.columns([2, 2, 1])
    with left:
        st.slider("Training steps", 10, 600, step=10, key="train_steps")
    with middle:  # not the sidebar's Positional encoding, which picks the model the charts above show (train_pe_help)
        st.radio("Train with positional encoding", ["sinusoidal", "none"], key="train_positional", horizontal=True,
                 format_func=TRAIN_PE_OPTIONS.get, help=train_pe_help(spec))
    with right:
        go = st.button("Train", key="train_go", type="primary", icon=":material/play_arrow:")
    # for a screen reader, its focus left on Train while the run draws its progress and charts below: a status line
    # hidden from the eye (a polite live region: ui/focus.py, ui/style.py) says the run began and how it ended, and
    # keeps those words on later reruns (not said again)
    said = st.container(key="said-train").empty()
    results = st.session_state.setdefault("train_results", {})  # positional -> its last run
    if go:
        steps, positional = int(st.session_state["train_steps"]), st.session_state["train_positional"]
        said.caption(md(f"Training {steps} steps with positional encoding: {TRAIN_PE_OPTIONS[positional]}…"))
        live = st.empty()
        result = _train(steps, positional, theme, live)
        results[result["positional"]] = result
        st.session_state["train_said"] = trained_words(result)
    said.caption(md(st.session_state.get("train_said", "No run yet.")))
    if not results:
        return
    losses, by_step, table = kept_runs(results)
    if go and len(losses) > 1:
        live.empty()  # the run just drawn live goes into the chart of both
    # as every panel of the views (ui/panels.py): the numbers behind the chart and its downloads in an expander,
    # the table with its CSV (a regression walk: the loss curves had only the toolbar's SVG, and the slide
    # theme's table no CSV)
    if not go or len(losses) > 1:  # (one run just drawn live is its own chart)
        render_panel(Panel("loss", "Training loss", viz.loss_curves(losses, y_title=LOSS_AXIS, theme=theme), by_step),
                     "train", spec)
    other = f"{TRAIN_PE_LABEL}: {TRAIN_PE_OPTIONS['none' if 'sinusoidal' in results else 'sinusoidal']}"
    render_panel(Panel("translations", "Translations after training", table=table,
                       caption="The last run with each positional encoding is kept, side by side." + (
                           "" if len(losses) > 1 else f" Train again with “{other}” to compare the two.")),
                 "train", spec)
