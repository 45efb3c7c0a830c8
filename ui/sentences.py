"""The two sentences, in a row at the top of the main area: sentence A, sentence B, swap, examples.

They live inside the main area's st.fragment (app.py main_area), above the view picker and the
figures (app.py view_area, a fragment inside it). Typing a new sentence reruns main_area, and
view_area with it (a new forward pass, from ui/cache.py), but not the sidebar, whose settings do not
depend on the sentences; a view, layer or head change reruns only view_area, not these boxes.
Every element a rerun sends costs the browser time (bench: browser redraw), and the sidebar's widgets are about 20 of the ~55 elements a
whole-script rerun of the attention view sends.
Widget keys are FigureSpec's field names (plus "preset"), as everywhere (ui/state.py).
"""

from __future__ import annotations

import streamlit as st

from ui.state import PRESETS, apply_preset, swap_sentences


def sentences_row() -> None:
    """Sentence A and B share the row's width; the two buttons take only what their labels need."""
    with st.container(horizontal=True, vertical_alignment="bottom", gap="small", key="sentences"):
        st.text_input("Sentence A", key="sentence_a",
                      help="Any text: Chinese, English, emoji, right-to-left. The model reads A and B together (one "
                           "batch); in views 2-5 and 7, Sentence above the figures picks the one they show.")
        st.text_input("Sentence B", key="sentence_b",
                      help="Compared with A. Make it a reordering of A (她喜欢你) to see why order needs positions.")
        st.button("Swap A ↔ B", key="swap", on_click=swap_sentences)
        st.menu_button("Examples", list(PRESETS), key="preset", on_click=apply_preset, icon=":material/list:",
                       help="Fills sentence A and B with an example pair.")
