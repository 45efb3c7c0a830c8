"""A Streamlit rerun, timed with streamlit.testing.v1.AppTest: a new sentence vs only layer/head.

Figure "rerun" of `python -m bench --app`. AppTest runs app.py in this process, as the server
would for one session, and returns when the script has finished: the time is the server's side of a
rerun (widgets, the cached forward pass, every figure built and serialised), without the network or
the browser. Each round changes sentence A (a new sentence: the forward pass runs) and then only the
layer or the head (the forward pass comes from the cache; the figures are rebuilt).

Target: a layer/head change costs at most a fifth of a sentence change (ratio <= 0.2).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from bench.app_figures import APP_SPECS, app_specs, sentence, source_tokens
from bench.appserver import APP
from bench.browser import app_spec
from bench.core import Context, Record, figure
from lab.spec import FigureSpec

RERUN_TARGET = "<= 0.2"
TIMEOUT_S = 300.0  # one rerun of the base model at 512 tokens on a busy machine stays far below


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


def rerun_times(spec: FigureSpec, tokens: int, rounds: int, app: Path = APP) -> dict[str, list[float]]:
    """Seconds per rerun: {"sentence": [...], "layer_head": [...]}, one of each per round, interleaved."""
    at = open_app(spec, app)
    n_heads, n_layers = spec.n_heads, spec.n_layers
    out: dict[str, list[float]] = {"sentence": [], "layer_head": []}
    n = source_tokens(tokens)
    for r in range(rounds):
        start = time.perf_counter()
        at.text_input(key="sentence_a").set_value(sentence(n, salt=r + 1)).run()
        out["sentence"].append(time.perf_counter() - start)
        _check(at, "a new sentence")
        if r % 2 == 0 or n_layers < 2:
            widget = at.selectbox(key="head").set_value((at.session_state["head"] + 1) % n_heads)
        else:
            widget = at.selectbox(key="layer").set_value((at.session_state["layer"] + 1) % n_layers)
        start = time.perf_counter()
        widget.run()
        out["layer_head"].append(time.perf_counter() - start)
        _check(at, "a layer/head change")
    return out


def rerun_records(ctx: Context, specs: dict[str, FigureSpec], rounds: int) -> list[Record]:
    records = []
    for name, base in specs.items():
        for T in ctx.sizes:
            spec = app_spec(base, sentence(source_tokens(T)))
            t = rerun_times(spec, T, rounds)
            ratio = statistics.median(h / s for h, s in zip(t["layer_head"], t["sentence"], strict=True))
            records += [
                Record(f"{name}.rerun_sentence_ms", T, statistics.median(t["sentence"]) * 1e3, "ms"),
                Record(f"{name}.rerun_layer_head_ms", T, statistics.median(t["layer_head"]) * 1e3, "ms"),
                Record(f"{name}.rerun_layer_head_ratio", T, ratio, "x", RERUN_TARGET),
            ]
    return records


@figure(
    "rerun",
    "A3. Streamlit rerun (AppTest, attention view): a new sentence vs only the layer or head",
    "AppTest runs app.py in-process on a share link; per round: sentence A changes (forward + figures), "
    "then only the head or layer (cached forward, figures rebuilt). Medians; ratio = layer/head / sentence, "
    "paired per round.",
)
def app_rerun(ctx: Context) -> list[Record]:
    specs = app_specs(ctx) or {"app": APP_SPECS["app"]}
    return rerun_records(ctx, specs, rounds=3 if ctx.quick else 5)
