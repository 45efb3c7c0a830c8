"""Session state: defaults, presets, share links, and the one FigureSpec built from the widgets.

Every widget is keyed and gets its value from st.session_state only (never a `value=` default as
well), so callbacks, presets and share links can set any widget before it is drawn. Everything lives
in st.session_state: two browser tabs never see each other's settings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from lab.spec import MAX_CHARS, VIEWS, FigureSpec, SpecError
from ui import focus


def state_from_spec(spec: FigureSpec) -> dict[str, object]:
    """The widget values that show `spec`: its fields, heads as a list (the multiselect's value) and, for its views,
    the first as `view` (the page shows one at a time)."""
    values: dict[str, object] = {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec) if f.name != "views"}
    values["heads"] = list(spec.heads)
    values["view"] = spec.views[0]
    return values


# Widget values of a fresh session: FigureSpec's defaults, opening on the first view (the walk-through starts at
# the tokens; a share link always names its view)
DEFAULTS = {**state_from_spec(FigureSpec()), "view": VIEWS[0]}
# The figure theme follows the page's (light or dark, from the browser's colour scheme or Streamlit's
# settings menu) until the person picks one in the sidebar (choose_theme) or a link sets it.
FOLLOWS_PAGE = "_theme_follows_page"
RANDOM_ONLY = ("tokenizer", "d_model", "n_heads", "n_layers", "d_ff", "norm", "seed")  # ignored by zh-en

# label -> (sentence A, sentence B)
PRESETS: dict[str, tuple[str, str]] = {
    "你喜欢她 / 她喜欢你 — same characters, opposite meaning": ("你喜欢她", "她喜欢你"),
    "我有一只猫 / 我爱我家 — a repeated character": ("我有一只猫", "我爱我家"),
    "春风拂面桃花盛开景色宜人 — a long line, clauses swapped": ("春风拂面桃花盛开景色宜人", "景色宜人桃花盛开春风拂面"),
    "Your journey starts with one step — Raschka's 3-d example (view 5)": (
        "Your journey starts with one step", "step one with starts journey Your"),
    "I like her / her like I — English, repeated letters": ("I like her", "her like I"),
    "Emoji, right-to-left, HTML — text stays text": ("我爱🐱 and 👍🏽!", "שלום <b>bold?</b> مرحبا"),
}


def sidebar_on_load() -> str:
    """st.set_page_config's initial_sidebar_state. A link that opens in the slide theme (a projector: the
    lesson's step links carry the teacher's theme, each in a new tab) starts with the sidebar collapsed, so
    the slide figures get the page's width; any other start leaves it to Streamlit ("auto": open on a wide
    screen). Decided on a session's first run and kept: a theme chosen later in the sidebar does not fold
    the sidebar away under the pointer, and one opened by hand stays open."""
    ss = st.session_state
    if "_sidebar" not in ss:
        ss["_sidebar"] = "collapsed" if st.query_params.get("theme") == "slide" else "auto"
    return ss["_sidebar"]


def init_state() -> None:
    """Fill missing keys (defaults, or a share link on a session's first run) and keep widget values;
    the figure theme takes the page's light or dark until one is chosen (FOLLOWS_PAGE).

    Re-assigning a widget's key to itself keeps its value while the widget is not drawn (a control
    that only one view shows), instead of Streamlit dropping it.
    """
    ss = st.session_state
    if "_started" not in ss:
        ss["_started"] = True
        open_link(st.query_params.to_dict())  # a key given twice: its last value
    elif history_navigation():  # the browser's Back or Forward: the address bar holds another link of this page
        open_link(st.query_params.to_dict(), navigated=True)
    for key, value in DEFAULTS.items():
        ss[key] = ss[key] if key in ss else value  # re-assigned where set: kept (see above)
    if follows_page():
        ss["theme"] = page_theme()


LINK_KEPT = "_link_kept"  # keep_link has run in this session (not on its first run)


def history_navigation() -> bool:
    """Whether this run is the browser's Back or Forward: Streamlit 1.67 says so with the rerun the page's popstate
    sends, with the address bar's query (each change of a setting pushed one link of this page: keep_link). Not a guess
    from the query: a rerun brings the address bar's query whenever it comes, so a link behind the last change (the
    lesson's box opened just after a change) looked like Back, and a Back pressed while a run was still going looked
    like a change (a Back/Forward walk)."""
    ctx = get_script_run_ctx()
    return bool(getattr(ctx, "is_history_navigation", False))


def keep_link(query: dict[str, str]) -> None:
    """Keep the address bar a share link of this view (app.py share): write `query` unless it holds it, or unless the
    session's first run found the bare address (no query) that opens this same page, view 1 with every default. Each
    write from a rerun that is not Back or Forward is a new history entry: the first run's made two entries of the bare
    page (a student's walk: after view 2, Back showed view 1, and Back again view 1 once more, not the page before)."""
    ss = st.session_state
    params = st.query_params.to_dict()
    bare = not params and LINK_KEPT not in ss and query == share_query(
        dataclasses.replace(FigureSpec(), views=(VIEWS[0],)), theme_follows_page=True)
    if params != query and not bare:
        st.query_params.from_dict(query)
    ss[LINK_KEPT] = True


def open_link(params: dict[str, str], navigated: bool = False) -> None:
    """Set the widgets from a share link's query `params`: on a session's first run, or (`navigated`) where the browser
    went Back or Forward to another link of this page, which then shows that link's settings, every one it does not
    carry at its default (no query, or nothing in it the app can use: the page as first opened), its theme followed
    from the page where it names none (a share link names a theme unless it followed the page), and view 7 on the
    link's decoding step."""
    ss = st.session_state
    step, step_error = linked_step(params.pop(STEP, None))  # the page's own, not the spec's
    if navigated:
        ss.pop(LINKED_STEP, None)
        ss.pop("_translate_step_of", None)  # view 7 opens on the link's step, or the first (ui/translate.py)
        for key in (RANDOM_POSITIONAL, *MODEL_SWITCH):  # the link decides the model: no switch of view 6 or 7 stays
            ss.pop(key, None)
    if step is not None:  # ui/translate.py decoding_steps opens the link's sentence on it
        ss[LINKED_STEP] = step
    spec, errors, dropped = spec_from_link(params) if params else (None, [], [])
    errors = _repeated(params) + errors + step_error
    if spec is not None and len(spec.views) > 1:  # an export's spec names several
        errors.append(SpecError("views", f"this app shows one view at a time: {spec.views[0]} (python -m "
                                         f"lab.export draws {', '.join(spec.views)})"))
    linked_theme = "theme" in params and spec is not None and "theme" not in dropped
    if navigated:
        ss[FOLLOWS_PAGE] = not linked_theme
    elif not linked_theme and "theme" not in ss:  # nobody chose one (a link's bad one left out): the page's
        ss[FOLLOWS_PAGE] = True                   # light or dark
    if spec is not None:  # a share link decides every setting it carries, and the defaults the rest
        for key, value in state_from_spec(spec).items():
            ss[key] = one_line(value) if key in ("sentence_a", "sentence_b") else value
    elif navigated:  # no query, or nothing in it to use: the page as it first opened, its notice saying so
        ss.update({key: list(value) if isinstance(value, list) else value for key, value in DEFAULTS.items()})
    if errors:  # said until a setting changes (app.py link_error_notice)
        ss["_link_error"] = link_error_message(errors, dropped, opened=spec is not None)


STEP, LINKED_STEP = "step", "_linked_step"  # view 7's decoding step in a share link, and where a link's waits


def linked_step(value: str | None) -> tuple[int | None, list[SpecError]]:
    """A link's decoding step of view 7 ("step=2": the decoder has read 2 tokens), or what is wrong with it.
    The step slider is the page's own state, not the spec's (the figures export without it), so a share link
    opened on step 1 where the teacher's screen showed step 2 (lesson step 7's row "1:you→like")."""
    if value is None:
        return None, []
    if value.isascii() and value.isdigit() and int(value) >= 1:
        return int(value), []
    return None, [SpecError(STEP, f"{value!r} is not a decoding step, a whole number from 1 (such as 2)")]


def one_line(text: str) -> str:
    """A link's sentence as the one-line box can hold it: each line break a space, as the box makes of a pasted
    one. The box (an <input>) drops line breaks from a value it is given, so a link's "你喜欢%0A她" showed
    "你喜欢她" above figures of 你喜欢⏎她 (a narrow-screen walk), and Enter in the box changed them silently."""
    return text.replace("\r\n", " ").replace("\r", " ").replace("\n", " ")


def _repeated(params: dict[str, str]) -> list[SpecError]:
    """A key the link gives more than once, said (st.query_params.to_dict() keeps its last value)."""
    return [SpecError(key, f"given {len(values)} times: the last, {params[key]!r}, is used")
            for key in params if len(values := st.query_params.get_all(key)) > 1]


# A spec's field as the page names its control, where the two differ: the sidebar's boxes (ui/sidebar.py labels
# its number boxes so) and view 4's "Heads in the grid" above the figures, apart from the box called heads (a link's
# heads=1,1 said "Showing the default heads instead", of a box it never changed). A spec's error on the page
# (app.py spec_error) and a link's (link_field) name them so too: an odd d_model said "with the default positional
# sinusoidal".
FIELD_NAMES = {"n_heads": "heads", "n_layers": "layers", "heads": "heads in the grid", "positional": "positional encoding",
               "norm": "LayerNorm placement"}


# The sidebar's number boxes' ranges (ui/sidebar.py): narrower than a FigureSpec's for the model's size, so that one
# student cannot take a class server's cores (python -m lab.export draws up to FigureSpec's limits). The app's specs
# offer a d_model or heads from these where theirs cannot be drawn (FigureSpec's offer).
UI_LIMITS = {"d_model": (2, 512), "n_heads": (1, 64), "n_layers": (1, 6), "d_ff": (1, 2048), "seed": (0, 2**31 - 1),
             "width": (0, 8000), "height": (0, 8000), "scale": (0.1, 10.0)}


def _beyond_the_sidebar(spec: FigureSpec) -> SpecError | None:
    """The first field of `spec` outside the sidebar's range (UI_LIMITS), which the sidebar would otherwise cut to
    its end silently (a link's d_model 600 with 24 heads became 512 with 24: not divisible, nothing drawn)."""
    for name, (lo, hi) in UI_LIMITS.items():
        value = getattr(spec, name)
        if not lo <= value <= hi:
            return SpecError(name, f"{value:g} is more than this app offers, up to {hi:g} (python -m lab.export draws "
                                   "it)" if value > hi else f"{value:g} is less than this app offers, {lo:g}")
    return None


def spec_from_link(params: dict[str, str]) -> tuple[FigureSpec | None, list[SpecError], list[str]]:
    """A share link's spec, what in it could not be used, and the fields left out for it. A field that is
    unknown, malformed or impossible is left out (a known one takes its default), and the rest of the link
    kept: a typo in the layer does not lose the sentences and the view. None where nothing of the link is
    left to use."""
    given, params, errors, dropped, seen = params, dict(params), [], [], set()
    known = {f.name for f in dataclasses.fields(FigureSpec)}
    for key in [k for k in params if k not in known]:
        errors.append(SpecError(key or '""', "unknown field in the link"))
        del params[key]
    while params:
        try:
            spec = FigureSpec.from_query(params, offer=UI_LIMITS)
            beyond = _beyond_the_sidebar(spec)
            if beyond is None:
                return spec, errors, dropped
            raise beyond
        except SpecError as exc:
            # a conflict with a default put in for a field left out: said so (a bad-input walk: d_model=7&n_heads=7
            # said "d_model 64 does not split into 7 heads" of a link that never says 64)
            # (a field the conflict is about, exc.field or exc.about, that the link does not give is a default; an
            # error about one field alone, a range or a typo, names none: n_heads=100 said "with the default d_model")
            said, about = exc.message, (exc.field, *exc.about)
            stood_in = [f"{FIELD_NAMES.get(f, f)} {getattr(FigureSpec, f)}"
                        + (f" (the link's {shorter(given[f])} could not be used)" if f in dropped else "")
                        for f in about if f and f not in params and f in known]
            field = next((f for f in about if f in params), None)  # the link's own field that goes
            if said not in seen:  # d_model's conflict with the default n_heads: said once
                seen.add(said)  # named by the link's field (d_model=7 alone said "heads (n_heads in the link)")
                errors.append(SpecError(field or exc.field, f"with the default {' and '.join(stood_in)}, {said}"
                                        if stood_in else said))
            if field is None:  # not one field's fault: nothing of the link can be used
                return None, errors, dropped
            del params[field]  # one fewer each time: the loop ends
            dropped.append(field)
    return None, errors, dropped


def link_field(field: str) -> str:
    """A link's field as a notice names it: by the sidebar's box, and as the link spells it where that differs
    ("heads (n_heads in the link)": a link's error named n_heads, a box the sidebar calls heads)."""
    return f"{FIELD_NAMES[field]} ({field} in the link)" if field in FIELD_NAMES else field


def shorter(text: str, most: int = 20) -> str:
    """A link's value as a notice quotes it: its first `most` characters, "…" where it goes on."""
    return text if len(text) <= most else text[:most] + "…"


def link_error_message(errors: list[SpecError], dropped: list[str], opened: bool) -> str:
    """What app.py's notice says about a link that could not be used in full (opened: what was left of it,
    without the known fields `dropped`)."""
    said = "; ".join(f"{link_field(e.field)}: {e.message}" for e in errors)
    if not opened:
        return f"This link cannot be opened ({said}); showing the default settings instead."
    shown = ", ".join(FIELD_NAMES.get(f, f) for f in sorted(dropped))  # by the box: the error named the link's
    instead = f" Showing the default {shown} instead." if dropped else ""
    return f"Part of this link cannot be used ({said}).{instead} Everything else is as the link says."


def page_is_dark() -> bool:
    """st.context.theme: the page's light or dark as of this rerun (the page turning dark does not
    rerun the app: the figures follow at the next interaction, see page_turned)."""
    return st.context.theme.type == "dark"


def page_theme() -> str:
    """The figure theme that sits on this page: "dark" on a dark page, else "default"."""
    return "dark" if page_is_dark() else "default"


def follows_page() -> bool:
    """Whether the figure theme follows the page (nobody chose one)."""
    return bool(st.session_state.get(FOLLOWS_PAGE))


def page_turned() -> bool:
    """The figures follow the page, and it turned light or dark since the last full run (init_state
    sets the theme, and the sidebar shows it, only then): a fragment rerun must become a full one."""
    return follows_page() and st.session_state.get("theme") != page_theme()


RANDOM_POSITIONAL = "_random_positional"  # the random model's learned PE, set aside while the trained pair is shown
# What app.py on_view_change notes where view 6 or 7 switched the random model to zh-en: the switch (to say once in
# the view it leads to), and that it was automatic (said again, once, back in a view the random model began with)
MODEL_SWITCH = ("_auto_model", "_switched_model", "_still_trained")


def choose_model(group: str = "") -> None:
    """The Model box's callback: back on the random model after a view switched to the trained pair, its learned
    positional encoding again (the switch made it sinusoidal, which an odd d_model cannot draw); picked with
    the mouse, the box lets its focus go (ui/focus.py release)."""
    ss = st.session_state
    if ss.get("model") == "random" and RANDOM_POSITIONAL in ss:
        ss["positional"] = ss.pop(RANDOM_POSITIONAL)
    if group:
        focus.release(group)


def choose_theme(group: str = "") -> None:
    """The Theme box's callback: a theme picked by hand stays, whatever the page does; picked with the mouse,
    the box lets its focus go (ui/focus.py release), so that ← → flip heads next."""
    st.session_state.pop(FOLLOWS_PAGE, None)
    if group:
        focus.release(group)


def spec_from_state() -> FigureSpec:
    """The one FigureSpec the widgets describe; raises SpecError (naming the field) when impossible."""
    ss = st.session_state
    values = {f.name: ss[f.name] for f in dataclasses.fields(FigureSpec) if f.name in ss}
    values["heads"] = tuple(sorted(int(h) for h in ss["heads"]))
    values["views"] = (ss["view"],)
    if ss["model"] != "random":  # the trained model has its own size: keep the spec free of stale values
        defaults = FigureSpec()
        values.update({k: getattr(defaults, k) for k in RANDOM_ONLY})
    return FigureSpec(**values, offer=UI_LIMITS)


def share_query(spec: FigureSpec, theme_follows_page: bool = False, step: int | None = None) -> dict[str, str]:
    """Query parameters of a share link: the spec's non-default fields, the view always included. A
    theme chosen (in the sidebar or by a link) is always in it; one that only follows the page (dark
    on a dark page) is left out, so the link opens in the receiver's own light or dark. `step`: the
    translate view's decoding step (ui/translate.py), kept in the link of that view past the first step (where a
    link without one opens)."""
    shared = dataclasses.replace(
        spec, sentence_a=spec.sentence_a[:MAX_CHARS], sentence_b=spec.sentence_b[:MAX_CHARS]
    )
    query = shared.to_query()
    if theme_follows_page:
        query.pop("theme", None)  # the receiver's page decides
    else:
        query["theme"] = spec.theme  # chosen, even "default": it stays so on a dark page too
    query["views"] = ",".join(spec.views)  # even when it is the spec default: a link is never empty
    if step is not None and step > 1 and spec.views[0] == "translate":
        query[STEP] = str(step)
    return query


# -- callbacks (run before the script, so they may set any widget's value) -----------------------
def apply_preset() -> None:
    """The Examples menu (a menu button: its value is the example clicked, for this rerun only)."""
    label = st.session_state.get("preset")
    if label in PRESETS:
        st.session_state["sentence_a"], st.session_state["sentence_b"] = PRESETS[label]
        focus.ask(*focus.EXAMPLES)  # the menu closed under the keyboard's focus


def swap_sentences() -> None:
    ss = st.session_state
    ss["sentence_a"], ss["sentence_b"] = ss["sentence_b"], ss["sentence_a"]


def open_head(layer: int, head: int, block: str, label: str = "") -> None:
    """From the heads overview to one head, step by step; the keyboard's focus (the button went with view
    4) to the view bar's option `label`, the view now shown."""
    st.session_state.update(layer=layer, head=head, block=block, view="attention")
    focus.ask(*focus.VIEW_BAR, label, reveal=True)


# -- keeping values inside what the widgets offer ------------------------------------------------
def keep_choice(key: str, options: Sequence, note: list[str] | None = None, why: str = "") -> None:
    """Before a choice widget is drawn: a value it does not offer becomes its first option (the note says `why`
    it is not offered, where there is a reason to give)."""
    if st.session_state.get(key) not in options:
        if note is not None and st.session_state.get(key) is not None:
            because = f" ({why})" if why else ""
            note.append(f"{key} = {st.session_state.get(key)!r} is not available here{because}; using {options[0]!r}.")
        st.session_state[key] = options[0]


def step_choice(key: str, count: int, delta: int) -> None:
    """A previous/next button's callback: the option `delta` steps from the current one, wrapping round
    (options 0 .. count-1, as the layer and head select boxes have)."""
    st.session_state[key] = (int(st.session_state.get(key) or 0) + delta) % max(1, count)


def keep_in_range(key: str, lo: int | float, hi: int | float) -> None:
    value = st.session_state.get(key)
    st.session_state[key] = min(max(value, lo), hi)

