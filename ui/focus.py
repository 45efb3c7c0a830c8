"""Keyboard focus after a click that redraws the page under it, and the ← → keys after a mouse click.

A button that changes the view (view 4's "head 2" opens view 3) or an Examples item is gone, or closed,
when the rerun redraws the main area: the browser then puts the focus on the page's <body>, and the next
Tab started part way down the new page, past the controls. The callback asks for a place (ask), and the
end of the main area's run puts a small hidden component there (restore) whose script moves the focus to
it, only where the focus was lost or sits elsewhere in the same group (the browser may give it back to the
view bar's old option): a person who moved it elsewhere meanwhile keeps it.

That is for the keyboard. A teacher at a projector clicks with the mouse and flips heads and layers with
← → (ui/look.py SHORTCUTS), which Streamlit ignores while the focus is in a control that takes arrow keys
itself: the view bar's option just clicked (← → moved its focus ring along the views), a select box (its
text input) or the Sentence radio (← → turned A into B). So where the last press was the mouse's (the
script watches pointer and key presses on the page from its first run on), a place asked for is not
focused, and a control changed by the mouse lets its focus go (release): ← → then reach the page.

Tab (or Shift+Tab) into the view bar, a radio group of buttons that is one Tab stop, lands on the view shown, not
on the group's first (or last) view, which Streamlit's control focused until a view was clicked.

The script (JS, ~6.5 KB) is served from the static folder as the charts' is (ui/served.py): the element carries a
loader of about 1 KB. Inline, it went with every request (a view clicked, a box changed with the mouse).
"""

from __future__ import annotations

import functools
import json

import streamlit as st

from ui import served

NAME = "attention_lab_focus"
PENDING = "_refocus"
WATCHING = "_focus_watching"  # the script was sent to this session's page
SENT = "_focus_sent"  # how many requests were sent to the page

# Where the focus goes: the view bar's chosen view (after a head opened in another view), the Examples
# button (after an example filled the sentences).
VIEW_BAR = (".st-key-view", '[role="radio"][aria-checked="true"]')
EXAMPLES = (".st-key-preset", "button")

JS = """
// Once per page: whether the last press was a pointer's (mouse, touch, pen) or a key's (a modifier key
// alone does not count).
// `presses` counts them: a look that began before the latest press stops (the person has moved on).
if (!window.__labFocusWatch) {
  window.__labFocusWatch = {pointer: false, presses: 0};
  const watch = window.__labFocusWatch;
  document.addEventListener("pointerdown", () => { watch.pointer = true; watch.presses++; }, true);
  document.addEventListener("keydown", (e) => {
    if (["Shift", "Control", "Alt", "Meta"].includes(e.key)) return;
    watch.pointer = false;
    watch.presses++;
  }, true);
  // The sidebar opened from the keyboard (Enter on », a button that goes as it opens): the focus fell to the
  // <body>, and the next Tab went past the sidebar into the main area (a teacher's walk). It goes to the
  // sidebar's first control instead; a sidebar opened with the mouse leaves the focus alone.
  new MutationObserver((records) => records.forEach(({target, oldValue}) => {
    if (target.dataset.collapsed !== "false" || oldValue !== "true" || watch.pointer) return;
    const presses = watch.presses;
    let tries = 0;
    const look = () => {  // until the » button has gone (~0.3 s): while it holds the focus, look again
      if (watch.presses !== presses || target.dataset.collapsed !== "false") return;
      const active = document.activeElement;
      const lost = !active || active === document.body || !active.isConnected;
      if (!lost && !active.closest('[data-testid="stExpandSidebarButton"]')) return;  // moved on
      // its first box (Model), not a "?" beside it, nor the « button that folds it again (hidden until the pointer
      // is over the sidebar)
      const shown = (el) => el.offsetParent !== null && getComputedStyle(el).visibility === "visible" && !el.disabled;
      const first = [...target.querySelectorAll("input")].find(shown) || [...target.querySelectorAll(
        'button, a[href], [tabindex]:not([tabindex="-1"])')].find(shown);
      if (lost && first) first.focus();
      else if (++tries < 30) setTimeout(look, 50);
    };
    setTimeout(look, 50);
  })).observe(document.body, {subtree: true, attributes: true, attributeFilter: ["data-collapsed"],
                              attributeOldValue: true});
  // The page's status lines (ui/look.py say_shown, ui/train.py's, hidden from the eye): polite live regions, so that
  // a screen reader hears the layer or head that ← → or a ◂ ▸ button chose (nothing was said: the focus stays where it
  // was), and a training run begin and end. A Streamlit container cannot carry the role: given here, to each such
  // line as it comes (a view, a rerun).
  const live = () => document.querySelectorAll(":is(.st-key-said, .st-key-said-train):not([role])").forEach((el) => {
    el.setAttribute("role", "status");
    el.setAttribute("aria-atomic", "true");
  });
  live();
  new MutationObserver(live).observe(document.body, {childList: true, subtree: true});
  // The view bar (Streamlit's segmented control: a radio group of buttons, one Tab stop) was entered with Tab at
  // its first view and with Shift+Tab at its last, whatever view was shown (until one was clicked): a screen
  // reader said "1 · Tokens, not checked" above view 5, and Space opened view 1. Entered from outside with the
  // keyboard, the focus goes to the chosen option, as a radio group's does (WAI-ARIA's radio group pattern).
  document.addEventListener("focusin", (e) => {
    const option = e.target;
    const group = !watch.pointer && option instanceof Element && option.getAttribute("role") === "radio"
      && option.closest('[role="radiogroup"]');
    if (!group || group.contains(e.relatedTarget)) return;
    const chosen = group.querySelector('[role="radio"][aria-checked="true"]');
    if (chosen && chosen !== option) chosen.focus();
  }, true);
}

export default function ({data}) {
  const {mode, selector, text, group, reveal} = JSON.parse(data);
  const watch = window.__labFocusWatch;
  const within = (el) => el && el !== document.body && el.isConnected && group && el.closest(group);
  const presses = watch.presses;
  let tries = 0;
  if (mode === "release") {
    // a control just changed by the mouse: let its focus go, so that the page's keys (← →) reach the page.
    // The rerun may still be redrawing it (a select box keeps its input): look for ~1 s, or until the next
    // press (the box opened again at once stays open).
    const release = () => {
      if (!watch.pointer || watch.presses !== presses) return;
      const active = document.activeElement;
      if (within(active)) active.blur();
      if (++tries < 20) setTimeout(release, 50);
    };
    requestAnimationFrame(release);
    return;
  }
  if (mode !== "place") return;  // "watch": only loads this script, which watches the presses above
  // the place: the first shown element matching `selector` (whose text is `text`, where given). The rerun's
  // elements may still be arriving (the view bar may still show the view before): look for ~2 s. Only where
  // the focus was lost (on the <body>, or on an element now gone) or is elsewhere in the same group (a view
  // bar's button that the browser gave it back to): a person who moved it meanwhile keeps theirs. After a
  // mouse click, the focus is only taken from the group (where the browser gave it back).
  let shown = !reveal;
  const place = () => {
    if (watch.presses !== presses) return;  // a press since: the person has moved on
    if (!shown) {  // a new view, opened from a button far down the page: its top on the screen, mouse or keys
      const bar = document.querySelector(group);
      const now = [...document.querySelectorAll(selector)].find((el) => el.offsetParent !== null);
      if (bar && now && (!text || now.textContent.trim() === text)) {  // the bar shows the view opened
        const r = bar.getBoundingClientRect();
        if (r.top < 0 || r.bottom > innerHeight) bar.scrollIntoView({block: "start"});
        shown = true;
      }
    }
    const active = document.activeElement;
    const lost = !active || active === document.body || !active.isConnected || within(active);
    if (!lost) return;
    if (watch.pointer) {
      if (within(active)) active.blur();
    } else {
      const target = [...document.querySelectorAll(selector)].find(
        (el) => el.offsetParent !== null && (!text || el.textContent.trim() === text));
      if (target === active) return;  // there, and kept since the last look: done
      if (target) target.focus();
    }
    if (++tries < 40) setTimeout(place, 50);  // look again: the page, still settling, may take it back
  };
  requestAnimationFrame(place);
}
"""

CSS = """
.st-key-refocus { display: none; }
.st-key-view { scroll-margin-top: 4rem; }  /* revealed: below Streamlit's header, which lies over the page's top */
"""


def ask(group: str, selector: str, text: str = "", reveal: bool = False) -> None:
    """From a widget's callback: after this rerun, the keyboard focus goes to `selector` (the one whose
    text is `text`, where given), in the element `group`; after a mouse click, it only leaves the group.
    reveal: the page scrolls to `group` where it is off the screen, however the click came (a teacher's walk:
    view 4's "head 2", far down the page, opened view 3 half way down its Q, K, V)."""
    st.session_state[PENDING] = {"mode": "place", "group": group, "selector": f"{group} {selector}", "text": text,
                                 "reveal": reveal}


def release(group: str) -> None:
    """From a widget's callback (on_change=focus.release, args=(group,)): after this rerun, where the change
    was the mouse's, the focus leaves the element `group` (the control), so that ← → flip heads and layers."""
    st.session_state[PENDING] = {"mode": "release", "group": group}


def let_go(key: str) -> dict:
    """The on_change and args of a control (widget key `key`) that, changed with the mouse, lets its focus go
    (release): st.selectbox(..., key=key, **focus.let_go(key))."""
    return dict(on_change=release, args=(f".st-key-{key}",))


FOCUS_JS_PREFIX = "attention-lab-focus-"  # + the script's hash


def ensure_focus_js(static=served.STATIC):
    """static/attention-lab-focus-<hash>.js: the script (JS), written if missing or different, older copies removed
    (ui/served.py ensure_script); the path."""
    return served.ensure_script(FOCUS_JS_PREFIX, JS, static)


@functools.cache
def _component():
    """Registered once per process, its script put in the static folder first (where that cannot be written, the
    log says so and the element carries the whole script). A script that does not load shows nothing: the page works
    without it, the focus left where the browser puts it, and the next request tries again."""
    js = served.inline_or_loader(lambda: ensure_focus_js(), JS, what="the focus script",
                                 then="it goes with each request")
    return st.components.v2.component(NAME, js=js, css=CSS, isolate_styles=False)


def restore() -> None:
    """At the end of the main area: the focus asked for, if any (once); on a session's first run, the script
    alone, which from then on watches whether the mouse or the keyboard was pressed last."""
    place = st.session_state.pop(PENDING, None)
    if place is None and st.session_state.get(WATCHING):
        return
    st.session_state[WATCHING] = True
    # numbered: the same request twice in a row (a view clicked, then another: "release" the view bar both
    # times) is new data, so the page runs the script again (the same data left the focus in the view bar)
    n = st.session_state[SENT] = st.session_state.get(SENT, 0) + 1
    _component()(key="refocus", data=json.dumps({**(place or {"mode": "watch"}), "n": n}), height="content")
