"""What to look at: block, layer, head, heads, sentence and query token, in a row above the figures.

These controls live in the main area, inside the same st.fragment as the view picker and the
figures (app.py view_area, inside main_area), so changing them reruns only that fragment: the sidebar (model, figure
settings) is not rerun, and the forward pass comes from ui/cache.py.
Widget keys are FigureSpec's field names, as everywhere (ui/state.py). A choice made with the mouse lets the
focus go (ui/focus.py release), so that ← → flip heads and layers next.
"""

from __future__ import annotations

import dataclasses

import streamlit as st

from lab.compute import Run, Sentence, model_fields
from lab.spec import BLOCKS, FigureSpec
from lab.views import USES, order_draws_attention  # USES: which controls each view reads
from ui import cache, focus
from ui.state import keep_choice, step_choice
from ui.text import md
from viz import unique_labels
from viz.labels import count_of

BLOCK_HELP = ("encoder self: the source attends to itself. decoder self: the decoder input ([BOS] + tokens) "
              "attends to itself, with the look-ahead mask under the Mask 'paper' or 'look-ahead'. cross: each "
              "decoder token attends to the encoder's output.")

KEYS = tuple(USES)  # session_state keys of these controls (kept while a view does not draw them)
# Fixed widths keep the row compact and stable: the controls do not jump when labels change.
WIDTHS = {"block": 160, "layer": 110, "head": 110, "heads": 300, "query": 210}
# Keyboard shortcuts of the previous/next buttons (for a projector: flip through heads and layers).
# Streamlit ignores them while the focus is in a text box, so typing a sentence never triggers them.
SHORTCUTS = {"head": ("Left", "Right"), "layer": ("Shift+Left", "Shift+Right")}
KEY_NAMES = {"Left": "←", "Right": "→", "Shift+Left": "Shift+←", "Shift+Right": "Shift+→"}


def uses(view: str) -> set[str]:
    return {k for k, views in USES.items() if view in views}


def layers_heads(spec: FigureSpec, view: str) -> tuple[int, int]:
    """(layers of the block the view shows, heads) of the model the spec names."""
    if spec.model == "random":
        return spec.n_layers, spec.n_heads
    config = cache.load(model_fields(spec)).model.config
    decoder = view == "translate" or (view != "order" and spec.block != "encoder self")  # order: the encoder
    return (config.decoder_layers if decoder else config.n_layers), config.n_heads


NO_TOKENS = "no tokens yet"  # the query box with no sentence: one disabled choice that says why, not "0"


def query_labels(run: Run | None, spec: FigureSpec) -> list[str]:
    """Every query position of the block shown (decoder blocks: [BOS] + tokens), named as the charts name it ("2:我",
    "1:␣": viz.unique_labels, whitespace shown), where the box wrote "2: 我" beside an axis's "2:我"."""
    if run is None:
        return [NO_TOKENS]
    row = run.shown_row(spec.sentence)
    pieces = run.src_pieces(row) if spec.block == "encoder self" else run.tgt_pieces(row)
    return unique_labels(pieces, show_whitespace=True)


QUERY_BLOCK = "_query_block"  # the block whose positions the query token's number counts


def follow_the_token(sentence: Sentence | None, block: str, rows: int) -> None:
    """The query token is a position, and one source token can sit at another position in another block: the
    random model's decoder reads [BOS] + the same tokens, so the encoder's i is a decoder block's i + 1 (the
    number was kept, and pointed at another token, with nothing said). The query moves to the row of `block`
    (of `rows`) that reads the source token it read, as Sentence.source_token says (the one place for that
    rule); where it read none ([BOS], a trained model's translation, [PAD]) it keeps its number."""
    ss = st.session_state
    before = ss.get(QUERY_BLOCK)
    ss[QUERY_BLOCK] = block
    if before is None or before == block or sentence is None:
        return
    query = int(ss.get("query") or 0)
    token = sentence.source_token(before, query)
    if token is not None:
        ss["query"] = next((r for r in range(rows) if sentence.source_token(block, r) == token), query)


def steppers(key: str, count: int) -> None:
    """◂ ▸ buttons after a layer or head select box: the previous / next one, wrapping round, also on
    the keyboard (SHORTCUTS)."""
    for delta, shortcut, icon, word in ((-1, SHORTCUTS[key][0], ":material/chevron_left:", "Previous"),
                                        (1, SHORTCUTS[key][1], ":material/chevron_right:", "Next")):
        # the label names the button for a screen reader ("◂" alone was read as "chevron_left icon"); the
        # page hides it from the eye (ui/style.py), where the arrow and the select box beside it say it
        st.button(f"{word} {key}", icon=icon, key=f"{key}-{'prev' if delta < 0 else 'next'}", on_click=step_choice,
                  args=(key, count, delta), shortcut=shortcut, disabled=count < 2,
                  help=f"{word} {key} (key {KEY_NAMES[shortcut]})")


def stepped_select(key: str, count: int, notes: list[str]) -> None:
    """The layer or head select box ("layer 0", "layer 1", …) and its ◂ ▸ buttons, close together (one
    group of the controls row); a value out of range becomes the first option, with a note."""
    keep_choice(key, list(range(count)), notes)
    with st.container(horizontal=True, gap="xxsmall", vertical_alignment="bottom", width="content",
                      key=f"{key}-group"):
        st.selectbox(key.capitalize(), list(range(count)), key=key, format_func=lambda i: f"{key} {i}",
                     width=WIDTHS[key], **focus.let_go(key))
        steppers(key, count)


def heads_select(n_heads: int, notes: list[str]) -> None:
    """The heads the grid shows (none chosen: all); heads the model lacks are dropped, with a note."""
    ss = st.session_state
    kept = [h for h in ss["heads"] if 0 <= h < n_heads]
    if len(kept) < len(ss["heads"]):  # a link's, or the last model's: say so, as stepped_select does
        gone = [h for h in ss["heads"] if h not in kept]
        there = f"{count_of(n_heads, 'head')}: " + (f"0 to {n_heads - 1}" if n_heads > 1 else "head 0")
        notes.append(f"heads = {gone} are not available here ({there}); using {kept if kept else 'all heads'}.")
    ss["heads"] = kept
    st.multiselect("Heads in the grid", list(range(n_heads)), key="heads", format_func=lambda i: f"head {i}",
                   placeholder="all heads", width=WIDTHS["heads"],
                   help="Pick heads for a figure with fewer panels; empty = all.")


def query_select(spec: FigureSpec, notes: list[str]) -> None:
    """The query token, one of the positions of the block and sentence `spec` shows (follow_the_token keeps it on
    its token where the block changed); off, with one choice that says why, where there is no sentence."""
    run = cache.run_for(spec)
    labels = query_labels(run, spec)
    follow_the_token(None if run is None else run.sentences[run.shown_row(spec.sentence)], spec.block, len(labels))
    keep_choice("query", list(range(len(labels))), notes)
    st.selectbox("Query token", list(range(len(labels))), key="query", format_func=lambda i: labels[i],
                 width=WIDTHS["query"], help="The query token whose scores and weights the bars show, whose lines "
                                             "the lines chart draws in colour, and whose context vector is shown.",
                 disabled=run is None, **focus.let_go("query"))


def look_controls(view: str, base: FigureSpec, notes: list[str]) -> set[str]:
    """The controls `view` uses, in one horizontal row; values out of range become the first option. The
    translate view with a random model draws none: it only asks for the trained model (a student's walk: its
    layer and head did nothing there). Returns the keys of the controls drawn."""
    used = uses(view)
    if not used or (view == "translate" and base.model == "random"):
        return set()
    if view == "order" and not order_draws_attention(base, cache.models()):
        return set()  # its layer and head choose only the attention panels, drawn where B reorders A
    ss = st.session_state
    with st.container(horizontal=True, gap="small", vertical_alignment="bottom", key="look"):
        if "block" in used:
            st.selectbox("Attention block", list(BLOCKS), key="block", help=BLOCK_HELP, width=WIDTHS["block"],
                         **focus.let_go("block"))
            base = dataclasses.replace(base, block=ss["block"])
        n_layers, n_heads = layers_heads(base, view)
        for key, count in (("layer", n_layers), ("head", n_heads)):
            if key in used:
                stepped_select(key, count, notes)
        if "heads" in used:
            heads_select(n_heads, notes)
        if "sentence" in used:
            st.radio("Sentence", ["a", "b"], key="sentence", horizontal=True, format_func=str.upper,
                     help="Which sentence the figures show.", **focus.let_go("sentence"))
        if "query" in used:
            query_select(base, notes)
    return used


def shown_words(view_label: str, spec: FigureSpec, drawn: set[str]) -> str:
    """What the figures show, as the controls drawn (`drawn`) set it: "Shown: 3 · Attention step by step, encoder
    self, layer 0, head 1, sentence A." (no user text: the query token and the heads' choice say themselves)."""
    parts = [view_label]
    if "block" in drawn:
        parts.append(spec.block)
    parts += [f"{key} {getattr(spec, key)}" for key in ("layer", "head") if key in drawn]
    if "sentence" in drawn:
        parts.append(f"sentence {spec.sentence.upper()}")
    return "Shown: " + ", ".join(parts) + "."


def say_shown(view_label: str, spec: FigureSpec, drawn: set[str]) -> None:
    """The page's status line, for a screen reader: ← → or a ◂ ▸ button redraw every chart and leave the focus where
    it was, so nothing was said. The line (hidden from the eye, ui/style.py) is a polite live region (ui/focus.py
    gives it the role, which a Streamlit container cannot carry), said as its words change."""
    st.container(key="said").caption(md(shown_words(view_label, spec, drawn)))
