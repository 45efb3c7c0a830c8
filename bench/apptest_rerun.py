"""Streamlit reruns on the server, timed with streamlit.testing.v1.AppTest: a new sentence vs only layer/head.

Figure "rerun" of `python -m bench --app`. AppTest runs app.py in this process, as the server
would for one session, and returns when the run has finished: the time is the server's side of a
rerun (widgets, the cached forward pass, every figure built and serialised), without the network or
the browser. Each round changes sentence A (a new sentence: the whole script reruns, the forward pass
runs) and then only the layer or the head, twice:

- as a full-script rerun (what AppTest.run() always does; what the app did before the main area
  became an st.fragment), and
- as the fragment rerun the server really does for it (app.py main_area, key "main"): the rerun
  request names the fragment, as the browser's does, so the sidebar is not run at all.

Both are informational here; the target on a layer/head change (<= 0.2 of a sentence change) is in
the browser figure (bench/browser.py), which times what a user waits for.
"""

from __future__ import annotations

import contextlib
import functools
import statistics
import time
from pathlib import Path

from bench.app_figures import APP_SPECS, app_specs, sentence, source_tokens
from bench.appserver import APP
from bench.browser import app_spec
from bench.core import Context, Record, figure
from lab.spec import FigureSpec

TIMEOUT_S = 300.0  # one rerun of the base model at 512 tokens on a busy machine stays far below
FRAGMENT = "main"  # app.py: @st.fragment(key="main") def main_area


class AppScriptError(RuntimeError):
    """The app showed an error or raised while the benchmark drove it."""


def _check(at, what: str) -> None:
    problems = [e.value for e in at.exception] + [e.value for e in at.error]
    if problems:
        raise AppScriptError(f"app.py after {what}: {problems[0][:500]}")


def open_app(spec: FigureSpec, app: Path = APP):
    """AppTest on a share link of spec (its view, model size and sentences), after its first run."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(app), default_timeout=TIMEOUT_S)
    query = spec.to_query()
    query["views"] = ",".join(spec.views)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    _check(at, "the first run")
    return at


@contextlib.contextmanager
def fragment_only(at, key: str = FRAGMENT):
    """Inside: at.run() reruns only the fragment `key`, as the server does when a widget inside it
    changes (AppTest.run() alone always reruns the whole script)."""
    from streamlit.testing.v1 import local_script_runner

    ids = at._fragment_storage.resolve_target(key)
    if not ids:
        raise AppScriptError(f"app.py registered no fragment with key {key!r}")
    real = local_script_runner.RerunData
    local_script_runner.RerunData = functools.partial(real, fragment_id_queue=list(ids), is_fragment_scoped_rerun=True)
    try:
        yield at
    finally:
        local_script_runner.RerunData = real


def _switch(at, r: int, n_heads: int, n_layers: int):
    """Only the head (even rounds) or only the layer (odd rounds), set but not yet run."""
    if r % 2 == 0 or n_layers < 2:
        return at.selectbox(key="head").set_value((at.session_state["head"] + 1) % n_heads)
    return at.selectbox(key="layer").set_value((at.session_state["layer"] + 1) % n_layers)


def rerun_times(spec: FigureSpec, tokens: int, rounds: int, app: Path = APP) -> dict[str, list[float]]:
    """Seconds per rerun, one of each per round, interleaved: {"sentence": full script with a new
    sentence, "layer_head": full script with only the layer/head, "fragment": the fragment rerun
    with only the layer/head}."""
    at = open_app(spec, app)
    out: dict[str, list[float]] = {"sentence": [], "layer_head": [], "fragment": []}
    n = source_tokens(tokens)
    for r in range(rounds):
        at.session_state["sentence_a"] = sentence(n, salt=r + 1)  # the text box, typed into
        start = time.perf_counter()
        at.run()
        out["sentence"].append(time.perf_counter() - start)
        _check(at, "a new sentence")
        widget = _switch(at, r, spec.n_heads, spec.n_layers)
        start = time.perf_counter()
        widget.run()
        out["layer_head"].append(time.perf_counter() - start)
        _check(at, "a layer/head change (full script)")
        with fragment_only(at):
            widget = _switch(at, r, spec.n_heads, spec.n_layers)
            start = time.perf_counter()
            widget.run()
            out["fragment"].append(time.perf_counter() - start)
        _check(at, "a layer/head change (fragment)")
    return out


def _ratio(part: list[float], whole: list[float]) -> float:
    return statistics.median(p / w for p, w in zip(part, whole, strict=True))


def rerun_records(ctx: Context, specs: dict[str, FigureSpec], rounds: int) -> list[Record]:
    records = []
    for name, base in specs.items():
        for T in ctx.sizes:
            spec = app_spec(base, sentence(source_tokens(T)))
            t = rerun_times(spec, T, rounds)
            records += [
                Record(f"{name}.rerun_full_sentence_ms", T, statistics.median(t["sentence"]) * 1e3, "ms"),
                Record(f"{name}.rerun_full_layer_head_ms", T, statistics.median(t["layer_head"]) * 1e3, "ms"),
                Record(f"{name}.rerun_full_layer_head_ratio", T, _ratio(t["layer_head"], t["sentence"]), "x"),
                Record(f"{name}.rerun_fragment_layer_head_ms", T, statistics.median(t["fragment"]) * 1e3, "ms"),
                Record(f"{name}.rerun_fragment_layer_head_ratio", T, _ratio(t["fragment"], t["sentence"]), "x"),
            ]
    return records


@figure(
    "rerun",
    "A3. Server-side reruns (AppTest, attention view): a new sentence (full script) vs only the layer or "
    "head, as a full-script rerun and as the fragment rerun the server does",
    "AppTest runs app.py in-process on a share link; per round: sentence A changes (full script: sidebar, "
    "forward, figures), then only the head or layer as a full-script rerun (AppTest's own .run()) and as a "
    "rerun of the st.fragment 'main' only (cached forward, no sidebar). Server time only, no browser: the "
    "browser figure has the target. Medians; ratios paired per round.",
)
def app_rerun(ctx: Context) -> list[Record]:
    specs = app_specs(ctx) or {"app": APP_SPECS["app"]}
    return rerun_records(ctx, specs, rounds=3 if ctx.quick else 5)
