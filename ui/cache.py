"""Cached models, runs and views.

Models and runs are st.cache_resource: one object per key for the whole server, shared by every
session and every rerun, never copied, so nothing here, in lab/, viz/ or ui/ may mutate a model, a
Run (its tensors, sentences, notices) or an OrderData. Models are keyed on their fields. Runs are
keyed on (model fields, sentence A, sentence B, mask) only: changing the layer, head, query, view or
theme reuses the forward pass, and a rerun reads it back without unpickling a copy (st.cache_data
would pickle every run on store and unpickle it on every read: most of a fragment rerun at
classroom sizes). The order view's own passes (A and B alone, with and without PE) are cached the
same way. Runs and order passes are bounded (max_entries) and dropped an hour after they were made.

A view's figures are shared the same way (view_result; a cachetools cache, since Streamlit's counts
entries, not bytes): built once per (view, spec) for the whole server, the spec's download settings aside
(no figure reads them) and the selection controls the view does not read (lab.views.USES: view 2 reads no
head), each figure's payload made once with them. A class on the teacher's sentence and layer builds each
figure once, not once per student, and going back to a head costs no figure work.
Bounded by bytes (VIEW_CACHE_BYTES), since a view of 512 tokens holds ~100x what one of 8 does, and
dropped an hour after it was made; a student waiting for the same view another is building waits for it
(one build, not two).
"""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import cachetools
import streamlit as st

from lab import compute
from lab.compute import Loaded, Run, model_fields
from lab.spec import FigureSpec
from lab.views import Models, OrderData, ViewResult, build_view, compared_pe, order_data, read_spec
from viz.fig import payload_json

TRAINED = ("zh-en", "zh-en-nope")  # with sinusoidal PE, without PE


@st.cache_resource(show_spinner="Loading the model…", max_entries=16)
def load(key: tuple) -> Loaded:
    """lab.compute.load_model, once per key for the whole server (read-only from here on)."""
    return compute.load_model(key)


RUNS_KEPT = 64  # runs (and order passes) kept: a class of 30, each with its own sentences, and then some
RUN_TTL = "1h"  # a lesson's runs are released after it


@st.cache_resource(show_spinner="Running the model…", max_entries=RUNS_KEPT, ttl=RUN_TTL)
def trace(key: tuple, sentence_a: str, sentence_b: str, mask: str) -> Run | None:
    """One traced forward pass over A and B; every session and rerun gets this same object (read-only)."""
    return compute.run(load(key), sentence_a, sentence_b, mask)


def run_for(spec: FigureSpec) -> Run | None:
    return trace(model_fields(spec), spec.sentence_a, spec.sentence_b, spec.mask)


@st.cache_resource(show_spinner="Comparing the orders…", max_entries=RUNS_KEPT, ttl=RUN_TTL)
def order(key: tuple, sentence_a: str, sentence_b: str, _spec: FigureSpec) -> OrderData:
    """The order view's forward passes (lab.views.order_data), keyed on the fields of the model with the encoding it
    compares with none (order_for) and the sentences; _spec (not hashed) only carries them."""
    return order_data(_spec, Models(load))


def order_for(spec: FigureSpec) -> OrderData:
    """The passes of the encoding compared (compared_pe) and none: the same for sinusoidal and none chosen, which
    were keyed apart, each switch between them running both models again (the trained pair's translations too)."""
    compared = dataclasses.replace(spec, positional=compared_pe(spec))
    return order(model_fields(compared), spec.sentence_a, spec.sentence_b, spec)


def models() -> Models:
    return Models(load, run_for, order_for)


SHARED_TTL_S = 60 * 60  # a lesson's views and downloads are released an hour after they were made


def shared(max_bytes: int, getsizeof, **kwargs):
    """A cache for the whole server (cachetools, since Streamlit's caches count entries, not bytes):
    bounded by `max_bytes` as getsizeof counts them, each entry dropped SHARED_TTL_S after it was made,
    and a caller asking for a key another is computing waits for that result (one computation, not two).
    An entry larger than the bound is returned but not kept. kwargs: cachetools.cached's (key, info)."""
    cache = cachetools.TTLCache(max_bytes, ttl=SHARED_TTL_S, getsizeof=getsizeof)
    return cachetools.cached(cache, condition=threading.Condition(), **kwargs)


# Views kept, by ViewResult.nbytes: ~150 of 8 tokens (~0.2 MB each), a handful of 512 (the base
# model's heads view at 512, ~150 MB by that count, is not kept at all). A class following the
# teacher needs a few views at a time; 30 students exploring alone added ~40 MiB at 64 MiB.
VIEW_CACHE_BYTES = 32 * 2**20
DOWNLOADS_ONLY = ("width", "height", "scale", "format")  # a spec's download settings, which no view's figures read


def _view_key(view: str, spec: FigureSpec) -> tuple:
    """view_result's key: the view and its spec but for DOWNLOADS_ONLY (a new export size in the sidebar built the
    view shown again, every figure the same; its downloads read the page's own spec) and the selection controls
    the view does not read (lab.views.read_spec: view 2 was built again for every head a student had visited in
    view 3, and once per student in a class on different heads)."""
    read = read_spec(view, spec)
    return cachetools.keys.hashkey(view, dataclasses.replace(read, **{f: getattr(FigureSpec, f) for f in DOWNLOADS_ONLY}))


@shared(VIEW_CACHE_BYTES, ViewResult.nbytes, info=True, key=_view_key)
def view_result(view: str, spec: FigureSpec) -> ViewResult:
    """lab.views.build_view with the app's models, once per (view, spec but what _view_key leaves out) for the whole
    server (read-only from here on, like a Run), with each figure's payload made (ui.chart sends it)."""
    return with_payloads(build_view(view, spec, models()))


def with_payloads(result: ViewResult) -> ViewResult:
    """result, each figure's payload made (viz.fig.payload_json keeps it on the figure): once, where the result is
    kept, not on every rerun that sends it (ui.chart)."""
    for panel in result.panels:
        if panel.figure is not None:
            payload_json(panel.figure)
    return result


def models_dir() -> Path:
    """Where the trained checkpoints live."""
    import model.demo as demo

    return Path(demo.MODELS_DIR)


@st.cache_resource(show_spinner="Checking the trained models…", max_entries=4)
def _trained_problem(directory: str, stamp: tuple) -> str | None:
    from model.demo import load_demo

    try:
        for name in TRAINED:
            load_demo(name)
    except Exception as exc:  # a broken checkpoint: offer the random model only, and say why
        return f"{type(exc).__name__}: {exc}"
    return None


def trained_problem() -> str | None:
    """None when both trained translators load; otherwise why they cannot be offered."""
    directory = models_dir()
    configs = [directory / name / "config.json" for name in TRAINED]
    missing = [str(c.parent) for c in configs if not c.exists()]
    if missing:
        return f"no checkpoint in {', '.join(missing)} (train one with `python -m model.train`)"
    stamp = tuple(c.stat().st_mtime_ns for c in configs)
    return _trained_problem(str(directory), stamp)
