"""Keyboard focus after a click that redraws the page under it.

A button that changes the view (view 4's "head 2" opens view 3) or an Examples item is gone, or closed,
when the rerun redraws the main area: the browser then puts the focus on the page's <body>, and the next
Tab started part way down the new page, past the controls. The callback asks for a place (ask), and the
end of the main area's run puts a small hidden component there (restore) whose script moves the focus to
it, only where the focus was lost or sits elsewhere in the same group (the browser may give it back to the
view bar's old option): a person who moved it elsewhere meanwhile keeps it.
"""

from __future__ import annotations

import functools
import json

import streamlit as st

NAME = "attention_lab_focus"
PENDING = "_refocus"

# Where the focus goes: the view bar's chosen view (after a head opened in another view), the Examples
# button (after an example filled the sentences).
VIEW_BAR = (".st-key-view", '[role="radio"][aria-checked="true"]')
EXAMPLES = (".st-key-preset", "button")

JS = """
export default function ({data}) {
  // the place: the first shown element matching `selector` (whose text is `text`, where given). The rerun's
  // elements may still be arriving (the view bar may still show the view before): look for ~2 s. Only where
  // the focus was lost (on the <body>, or on an element now gone) or is elsewhere in the same group (a view
  // bar's button that the browser gave it back to): a person who moved it meanwhile keeps theirs.
  const {selector, text, group} = JSON.parse(data);
  let tries = 0;
  const place = () => {
    const active = document.activeElement;
    const lost = !active || active === document.body || !active.isConnected || (group && active.closest(group));
    if (!lost) return;
    const target = [...document.querySelectorAll(selector)].find(
      (el) => el.offsetParent !== null && (!text || el.textContent.trim() === text));
    if (target === active) return;  // there, and kept since the last look: done
    if (target) target.focus();
    if (++tries < 40) setTimeout(place, 50);  // look again: the page, still settling, may take it back
  };
  requestAnimationFrame(place);
}
"""

CSS = """
.st-key-refocus { display: none; }
"""


def ask(group: str, selector: str, text: str = "") -> None:
    """From a widget's callback: after this rerun, the keyboard focus goes to `selector` (the one whose
    text is `text`, where given), in the element `group`."""
    st.session_state[PENDING] = {"group": group, "selector": f"{group} {selector}", "text": text}


@functools.cache
def _component():
    return st.components.v2.component(NAME, js=JS, css=CSS, isolate_styles=False)


def restore() -> None:
    """At the end of the main area: the focus asked for, if any (once)."""
    place = st.session_state.pop(PENDING, None)
    if place:
        _component()(key="refocus", data=json.dumps(place), height="content")
