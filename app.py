"""Attention Lab: type two sentences and follow them through a Transformer, view by view.

    streamlit run app.py

This file wires widgets to lab/ (numbers) and viz/ (figures); the parts live in ui/. Every widget
is keyed; one FigureSpec is built from them and passed to lab.views.build_view (through
ui.cache.view_result, which shares the result among sessions), so what the app draws is what
`python -m lab.export SPEC.json --out DIR` draws.

The page has two parts. The sidebar (model, figure settings) runs with the whole script. The main
area (the sentences, view picker, block/layer/head controls, figures, tables, downloads, share link)
is one st.fragment, `main_area`: changing a sentence, the view, the layer or the head reruns only the
fragment, so neither the sidebar nor the title above is redrawn (each element a rerun sends costs the
browser time, and each widget the server ~1 ms); a view, layer or head change takes the forward pass
from the cache, and a view some session has drawn already (the same spec) takes its figures from the
cache too. Below the sentence boxes, everything is a fragment inside it, `view_area`: a view, layer or
head change reruns only that, not the sentence boxes.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from urllib.parse import urlencode

import streamlit as st

from ui.state import sidebar_on_load  # reads the link; draws nothing

st.set_page_config(page_title="Attention Lab", page_icon="🔍", layout="wide", initial_sidebar_state=sidebar_on_load())

from lab.compute import model_fields  # noqa: E402  (set_page_config comes before anything drawn)
from lab.heap import freeze_startup_heap  # noqa: E402
from lab.spec import VIEWS, FigureSpec, SpecError  # noqa: E402
from lab.threads import app_torch_threads  # noqa: E402
from lab.views import blank, decoding_spec, traced_spec  # noqa: E402
from ui import cache, focus, look  # noqa: E402
from ui import export as ui_export  # noqa: E402
from ui.panels import render_result  # noqa: E402
from ui.sentences import sentences_row  # noqa: E402
from ui.sidebar import sidebar  # noqa: E402
from ui.state import (  # noqa: E402
    DEFAULTS,
    FIELD_NAMES,
    RANDOM_POSITIONAL,
    follows_page,
    init_state,
    keep_link,
    open_head,
    page_is_dark,
    page_turned,
    share_query,
    spec_from_state,
)
from ui.style import page_style  # noqa: E402
from ui.text import md  # noqa: E402
from ui.train import train_panel  # noqa: E402
from ui.translate import decoding_steps, linked_step_waits, shared_step  # noqa: E402
from viz.labels import count_of  # noqa: E402

log = logging.getLogger("attention_lab")

VIEW_LABELS = {
    "tokens": "1 · Tokens",
    "positional": "2 · Positional encoding",
    "attention": "3 · Attention step by step",
    "heads": "4 · Heads",
    "query": "5 · One query",
    "order": "6 · Order & positional encoding",
    "translate": "7 · Translate",
}
VIEW_INTROS = {
    "tokens": "The text becomes tokens; each token id picks one row of the embedding table. Positions where A and "
              "B differ are highlighted.",
    "positional": "Attention without a look-ahead mask ignores order, so the position is added to each token embedding: "
                  "PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d)).",
    "attention": "One head, every step of the weights in Attention(Q, K, V) = softmax(QKᵀ / √d_k) V: project to "
                 "Q, K, V; score every query against every key; scale by 1/√d_k; mask; softmax each row.",
    "heads": "The heads of a layer all read the same input, each through its own projections W_Q, W_K, W_V, so "
             "each can attend differently. Open any head step by step with the buttons under the grid.",
    "query": "One query token: its score against every key, the weights softmax makes of them, and the context "
             "vector they mix from the values.",
    "order": "When B reorders A's tokens, without positional encoding the encoder gives B's tokens A's outputs "
             "(to float rounding), reordered (permutation-equivariant), and the same mean: it cannot tell the "
             "sentences apart.",
    "translate": "The trained model (zh-en; zh-en-nope, its twin without positional encoding) translates greedily: "
                 "the decoder reads [BOS] and its own outputs, and cross-attention looks back at the source at every "
                 "step.",
}
INTRO = ("Type two sentences and follow them through a Transformer: tokens → positional encoding → scores → "
         "mask → softmax, head by head, and see why word order needs positional encoding.")


def on_view_change(trained_ok: bool) -> None:
    """Order and translate are about trained models: use them when they exist.

    Switching the model changes sidebar widgets, which a fragment rerun would not redraw: then the
    whole app reruns (st.rerun() in a callback); any other view change reruns only view_area. Back
    in another view with the model so switched, the page says once that it shows the trained model. A view
    clicked with the mouse lets go of the focus (ui/focus.py): the view bar kept the arrow keys for itself.
    """
    ss = st.session_state
    focus.release(".st-key-view")  # clicked with the mouse: ← → flip heads next, not the view bar's focus
    if trained_ok and ss.get("view") in ("order", "translate") and ss.get("model") == "random":
        ss["model"] = "zh-en"
        if ss.get("positional") == "learned":  # the trained pair has sinusoidal and none; back on random, learned
            ss["positional"], ss[RANDOM_POSITIONAL] = "sinusoidal", "learned"  # again (ui/state.py choose_model)
        ss["_switched_model"] = ss["_auto_model"] = True
        st.rerun()
    elif ss.pop("_auto_model", False) and ss.get("view") not in ("order", "translate") and ss.get("model") == "zh-en":
        ss["_still_trained"] = True  # back in a view the random model began with: say once which model it shows


def model_switch_notice(view: str) -> None:
    """What on_view_change did, said once in the view it leads to: it switched to the trained pair (views 6 and
    7), or this is a view the random model began with, still showing the trained one; and how to go back."""
    ss = st.session_state
    if ss.pop("_switched_model", False):
        why = ("this view also compares the two models' translations; the equivariance below holds for the random "
               "model as well" if view == "order" else "translating needs a trained model")
        if view == "translate" and ss.get("positional") == "none":  # the pair's twin translates: say which (a walk)
            why += "; Positional encoding is 'none', so it is zh-en-nope, the twin trained without it, that translates"
        st.info(f"Switched to the trained zh-en model (with and without positional encoding): {why}. Choose "
                "'random' under Model, in the sidebar, to go back.",
                icon=":material/swap_horiz:")
    if ss.pop("_still_trained", False):
        st.info("This view now shows the trained zh-en model too (chosen for views 6 and 7), not the random "
                "one. Choose 'random' under Model, in the sidebar, to go back.", icon=":material/swap_horiz:")


def model_line(spec: FigureSpec) -> None:
    """Which model, its size, its norm placement and its masking convention, in one line."""
    loaded = cache.load(model_fields(spec))
    c = loaded.model.config
    norm = ("post-norm: x = LayerNorm(x + Sublayer(x)), as in the paper" if c.norm == "post"
            else "pre-norm: x = x + Sublayer(LayerNorm(x))")
    if loaded.trained:
        score = loaded.demo.metadata.get("evaluation", {}).get("heldout_exact_match")
        who = f"trained {loaded.name}"
        if isinstance(score, float):
            share = "every held-out sentence" if score == 1 else f"{score:.0%} of the held-out sentences"
            who += f" (translates {share} exactly; none was seen in training)"
    else:
        who = f"random, seed {spec.seed}, {spec.tokenizer} tokenizer"
    st.container(key="model-line").caption(md(  # small in a slide page too (ui/style.py)
        f"Model: {who} · d_model {c.d_model} · {count_of(c.n_heads, 'head')} (d_k {c.d_k}) · "
        f"{count_of(c.n_layers, 'encoder layer')} + {count_of(c.decoder_layers, 'decoder layer')} · "
        f"positional encoding: {c.positional} · {norm} · masked scores are "
        "−∞ before the softmax, so masked weights are exactly 0; a row whose every key is masked gets all-zero "
        "weights (never NaN). Dropout is off (eval mode)."
    ))


def view_body(view: str, spec: FigureSpec, under_figures: Callable[[FigureSpec], None] | None = None) -> None:
    """The view's panels, then under_figures(spec) (the model line, on a projector), then view 7's training panel:
    the line describes the shipped model the figures show, not the one trained below it (a teacher's walk: under the
    panel, 'positional encoding: sinusoidal' sat right below its 'Train with positional encoding: no')."""
    models = cache.models()
    chosen, other = (spec.sentence_a, spec.sentence_b) if spec.sentence == "a" else (spec.sentence_b, spec.sentence_a)
    if view in look.USES["sentence"] and not chosen.strip() and other.strip():  # the views of one sentence
        shown = "B" if spec.sentence == "a" else "A"
        st.info(f"Sentence {spec.sentence.upper()} {blank(chosen)}: showing sentence {shown}.", icon=":material/info:")
    result = cache.view_result(view, spec)  # shared by every session (ui/cache.py)
    after = {}
    if view == "heads":
        after["heads-grid"] = lambda: head_buttons(spec, models)
    run = models.run(decoding_spec(spec)) if view == "translate" and spec.model == "zh-en" else None
    if run is not None:
        after["translation"] = lambda: decoding_steps(run, spec)
    render_result(result, view, spec, after=after, side_by_side=view == "order")
    if view == "translate":
        linked_step_waits(spec)
    if under_figures is not None:
        under_figures(spec)
    if view == "translate":
        st.divider()
        train_panel(spec)


def head_buttons(spec: FigureSpec, models) -> None:
    """One button per head of the layer shown: opens it in the step-by-step view."""
    run = models.run(spec)  # the heads view's own (it drew the grid these buttons sit under)
    stack = run.trace.encoder if spec.block == "encoder self" else run.trace.decoder
    layer = max(0, min(spec.layer, len(stack.layers) - 1))
    n_heads = stack.layers[layer].self_attn.n_heads
    with st.container(horizontal=True, gap="small", vertical_alignment="center", key="open-heads"):
        st.markdown(f"Open a head of layer {layer} step by step:")
        for h in range(n_heads):
            st.button(f"head {h}", key=f"open-head-{h}", on_click=open_head,
                      args=(layer, h, spec.block, VIEW_LABELS["attention"]),
                      icon=":material/open_in_new:",
                      help=f"Layer {layer}, head {h} in '3 · Attention step by step'")


def share(spec: FigureSpec) -> None:
    """Keep the address bar a share link of this view; show it and the spec JSON."""
    query = share_query(spec, theme_follows_page=follows_page(), step=shared_step())
    keep_link(query)  # and remember it: a later run that brings another is the browser's Back or Forward (ui/state.py)
    base = (st.context.url or "").split("?")[0]
    box = st.expander("Share this view · reproduce its figures", key="share", on_change="rerun")
    with box:  # drawn only while open (a lazy expander): a rerun sends one closed expander
        if not box.open:
            return
        st.caption("The address bar always holds this link: send it and the same view opens with the same "
                   "settings.")
        st.code(f"{base}?{urlencode(query)}", language=None)
        if len(spec.sentence_a) > 2000 or len(spec.sentence_b) > 2000:
            st.caption("The link carries the first 2,000 characters of each sentence.")
        # the command's own check, imported when the box opens
        from lab.export import validate_for_export

        try:
            validate_for_export(spec, cache.models())
            st.caption("Save this spec as SPEC.json and run `python -m lab.export SPEC.json --out figures` to write "
                       "the figures as SVG, PDF or PNG into the folder figures/.")
        except SpecError as exc:  # e.g. view 7 of the random model: the page's hint, a refusal for the command
            why = md(f"{FIELD_NAMES.get(exc.field, exc.field)}: {exc.message}")
            st.caption(f"`python -m lab.export` refuses this spec as it is ({why}); the link above still opens this "
                       "view.")
        spec_json = spec.to_json()
        st.code(spec_json, language="json")
        with st.container(horizontal=True, gap="small"):
            st.download_button("SPEC.json", data=spec_json.encode("utf-8"), file_name="SPEC.json",
                               mime="application/json", key="spec-json", on_click="ignore",
                               icon=":material/download:")
            if spec.sentence_a.strip() or spec.sentence_b.strip():
                trace = st.popover("Trace of this forward pass", icon=":material/download:", key="trace-menu",
                                   on_change="rerun")
                with trace:  # drawn only while open: it needs the whole forward pass
                    if trace.open:
                        st.caption("Every array of this forward pass (q, k, v, scores, weights, outputs of every "
                                   "layer and head), with the tokens, the spec and the model config:")
                        traced = traced_spec(spec)  # the run this view's figures show
                        ui_export.trace_download(cache.run_for(traced), traced, "trace",
                                                 config=cache.load(model_fields(traced)).model.config)


def spec_error(exc: SpecError) -> None:
    field = FIELD_NAMES.get(exc.field, exc.field)
    st.error(md(f"These settings cannot be drawn. {field}: {exc.message}"), icon=":material/block:")


@st.fragment(key="main")
def main_area(trained_ok: bool) -> None:
    """Everything that depends on the sentences, view, layer or head: a change there reruns only this.

    Reads the sidebar's settings from st.session_state (they are current: any sidebar change
    reruns the whole script, this fragment included). Never writes to the sidebar. A fragment rerun
    does not pass through main()'s guard, so this one has its own: never a traceback on the page.
    The sentence boxes are this fragment's own; the rest is a fragment inside it (view_area), so that a
    view, layer or head change reruns only that: not the sentence boxes either.
    """
    fragment_start()
    with guard("the main area"):
        sentences_row()
    view_area(trained_ok)


@st.fragment(key="view-area")
def view_area(trained_ok: bool) -> None:
    """The view bar, the block/layer/head controls, the figures and the share link: a change of the view, the
    layer or the head (every widget here) reruns only this fragment, inside main_area; a new sentence reruns
    main_area, and this with it. Its own guard and fragment_start, as main_area's: it reruns on its own."""
    fragment_start()
    with guard("this view"):
        _view_area(trained_ok)


def fragment_start() -> None:
    """What each fragment's rerun does first: it runs in a thread of its own, whose torch threads main() did not
    set (lab/threads.py); and where the page went light or dark since the last full run, the whole app reruns to
    follow it (the sidebar's Theme box too)."""
    app_torch_threads()
    if page_turned():
        st.rerun(scope="app")


@contextlib.contextmanager
def guard(what: str):
    """Never a traceback on the page: one line that says what failed (the server log has the details)."""
    try:
        yield
    except Exception as exc:
        log.exception("Attention Lab failed drawing %s", what)
        st.error(md(f"Something went wrong drawing {what} ({type(exc).__name__}: {str(exc)[:300]}). "
                    "Try other settings; the server log has the details."))


def link_error_notice() -> None:
    """A link that could not be opened says so until the first change of a setting (in the main area, a
    fragment: drawn in main() it would stay on the page through every fragment rerun)."""
    ss = st.session_state
    if "_link_error" not in ss:
        return
    settings = repr([ss.get(key) for key in DEFAULTS])
    if ss.setdefault("_link_error_settings", settings) != settings:  # moved on: the message goes
        del ss["_link_error"], ss["_link_error_settings"]
        return
    st.error(md(ss["_link_error"]))  # ui/state.py link_error_message


def _view_area(trained_ok: bool) -> None:
    ss = st.session_state
    for key in look.KEYS:  # keep the values of controls this view does not draw (see init_state)
        ss[key] = ss[key]
    link_error_notice()
    st.segmented_control("View", list(VIEWS), key="view", format_func=VIEW_LABELS.get, required=True,
                         on_change=on_view_change, args=(trained_ok,), label_visibility="collapsed")
    view = ss["view"]
    try:
        base = spec_from_state()
    except SpecError as exc:  # impossible model settings: say which, draw nothing
        spec_error(exc)
        return
    notes: list[str] = []
    drawn = look.look_controls(view, base, notes)
    for note in notes:
        st.warning(md(note))
    try:
        spec = spec_from_state()
    except SpecError as exc:
        spec_error(exc)
        return
    # the view's name as the heading between the page's title (h1) and the panels' (h3), for a screen reader's
    # list of headings; hidden from the eye, where the view bar above shows it (ui/style.py)
    st.container(key="view-heading").header(VIEW_LABELS[view], anchor=False)
    look.say_shown(VIEW_LABELS[view], spec, drawn)  # said to a screen reader as it changes (← → flip heads)
    st.container(key="view-intro").caption(md(VIEW_INTROS[view]))  # small in a slide page too (ui/style.py)
    model_switch_notice(view)
    try:
        slide = spec.theme == "slide"  # a projector: the figures first, the model's description under them
        if not slide:
            model_line(spec)
        view_body(view, spec, under_figures=model_line if slide else None)
    except Exception as exc:  # a bug: say so in one line (the log has the traceback), keep the spec below
        log.exception("Attention Lab could not draw the %s view for %s", view, spec.to_json())
        st.error(md(f"This view could not be drawn ({type(exc).__name__}: {str(exc)[:300]}). The spec below "
                    "reproduces it; the server log has the details."), icon=":material/error:")
    share(spec)
    focus.restore()  # where a click that redrew the page asked the keyboard's focus to go (ui/focus.py)


def main() -> None:
    app_torch_threads()  # one torch thread unless OMP_NUM_THREADS is set (lab/threads.py says why)
    init_state()
    slide = st.session_state.get("theme") == "slide"
    page_style(slide=slide, dark=page_is_dark())
    st.title("Attention Lab", anchor=False)  # no "Link to heading": a Tab stop linking to the page it is on
    if not slide:  # a projector's page keeps its height for the figures (the teacher says what this is)
        st.markdown(INTRO)
    problem = cache.trained_problem()
    for note in sidebar(problem):
        st.warning(md(note))
    main_area(problem is None)
    freeze_startup_heap()  # once per process: the full GC after each rerun then skips it (lab/heap.py)


with guard("this page"):  # never a traceback on the page; the server log has it
    main()
