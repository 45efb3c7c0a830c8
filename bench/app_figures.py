"""The app's path, stage by stage: sentence -> tokens -> traced forward -> every figure of a view.

Two figures of `python -m bench --app`:

- "stages": time to tokenise, to trace the forward pass (lab.compute.run) and to build every
  figure of each view (lab.views.build_view on that run), for the app's default model and the
  base model. Target: a view's figures take less time than the forward that feeds them
  (view_<v>_ratio = figures / forward <= 1).
- "payload": the JSON each figure sends to the browser (UTF-8 bytes of fig.to_json(), which is
  what ui.chart sends the browser); target: at 512 tokens no figure above 1 MB.

The sentences are Chinese characters from the app's presets, one token each with the char tokenizer,
cycled with a stride so that neighbouring tokens differ; sentence B is A reversed (a reordering, as in
the app's presets), so the order view has a permutation to draw.
"""

from __future__ import annotations

import dataclasses
import time

from bench.core import Context, Record, figure, paired_ratio
from lab.compute import RANDOM_MAX_LEN, Loaded, Run, load_model, model_fields, run
from lab.spec import FigureSpec
from lab.views import Models, ViewResult, build_view, order_data

# The characters of the app's Chinese presets (ui/state.py PRESETS), without repeats.
CHARS = "你喜欢她我有一只猫爱家春风拂面桃花盛开景色宜人"
STRIDE = 7  # coprime with len(CHARS): neighbours differ, and a sentence cycles through all of them

# The app's default model (FigureSpec's defaults) and the paper's base model, as the app builds them.
APP_SPECS: dict[str, FigureSpec] = {
    "app": FigureSpec(),
    "base": FigureSpec(d_model=512, n_heads=8, n_layers=6, d_ff=2048),
}
DEFAULT_VIEW = "attention"
# Every view the random model draws, the default first. "translate" needs the trained zh-en model
# (for a random model it is a one-line hint), so it is not timed here.
TIMED_VIEWS = ("attention", "tokens", "positional", "heads", "query", "order")
APP_SIZES = (8, 32, 128, 512)

FIGURE_TARGET = "<= 1"  # figures_ms / forward_ms
PAYLOAD_TARGET = "<= 1"  # MB (10^6 bytes) per figure, at PAYLOAD_TARGET_TOKENS
PAYLOAD_TARGET_TOKENS = 512
MB = 1e6


def sentence(tokens: int, salt: int = 0) -> str:
    """`tokens` Chinese characters (one char-tokenizer token each); neighbours always differ.

    Different salts give different sentences of the same length (the load test gives each session
    its own).
    """
    n = len(CHARS)
    return "".join(CHARS[(salt + i * STRIDE) % n] for i in range(tokens))


def source_tokens(tokens: int) -> int:
    """Characters to type for `tokens`: the random model reads at most max_len - 1 source tokens
    (room for [BOS]), so 512 means 511 source tokens and a 512-token decoder input [BOS] + 511."""
    return min(tokens, RANDOM_MAX_LEN - 1)


def spec_for(base: FigureSpec, tokens: int, salt: int = 0, **changes) -> FigureSpec:
    a = sentence(source_tokens(tokens), salt)
    return dataclasses.replace(base, sentence_a=a, sentence_b=a[::-1], **changes)


def app_specs(ctx: Context) -> dict[str, FigureSpec]:
    """The configs of this run that the app can build (e.g. --quick: the app model only)."""
    return {name: dataclasses.replace(APP_SPECS[name], device=ctx.device)
            for name in ctx.configs if name in APP_SPECS}


def loaded_model(ctx: Context, key: tuple) -> Loaded:
    return ctx.memo(("app_loaded", key), lambda: load_model(key))


def models_for(ctx: Context, run_: Run | None) -> Models:
    """Models as the app passes them: cached loads, the one precomputed run and, computed once
    and then cached as the app caches it, the order view's model work (lab.views.order_data)."""
    plain = Models(lambda key: loaded_model(ctx, key), lambda _spec: run_)
    memo: dict = {}

    def order(spec: FigureSpec):
        key = (model_fields(spec), spec.sentence_a, spec.sentence_b)
        if key not in memo:
            memo[key] = order_data(spec, plain)
        return memo[key]

    return Models(plain.load, lambda _spec: run_, order)


def traced_run(ctx: Context, name: str, spec: FigureSpec) -> Run:
    loaded = loaded_model(ctx, model_fields(spec))
    key = ("app_run", name, spec.sentence_a, spec.sentence_b, spec.mask)
    return ctx.memo(key, lambda: run(loaded, spec.sentence_a, spec.sentence_b, spec.mask))


# -- stages -----------------------------------------------------------------------------------


def stage_records(
    ctx: Context, specs: dict[str, FigureSpec], views: tuple[str, ...] = TIMED_VIEWS
) -> list[Record]:
    """Median times of tokenise, lab.compute.run and build_view(view) per config and size.

    All stages run interleaved in one ctx.measure call, so the ratio figures / forward is paired
    round by round (a busy moment of a shared machine hits both sides).
    """
    records = []
    for name, base in specs.items():
        for T in ctx.sizes:
            spec = spec_for(base, T)
            loaded = loaded_model(ctx, model_fields(spec))
            run_ = traced_run(ctx, name, spec)
            models = models_for(ctx, run_)
            tok = loaded.src_tokenizer
            fns = {
                "tokenise": lambda tok=tok, s=spec: (tok.encode(s.sentence_a), tok.encode(s.sentence_b)),
                "forward": lambda ld=loaded, s=spec: run(ld, s.sentence_a, s.sentence_b, s.mask),
            }
            if "order" in views:  # the order view is fed by its own forward passes (A, B alone; PE and no PE)
                plain = Models(models.load)
                fns["order_forward"] = lambda s=spec, m=plain: order_data(s, m)
            for view in views:
                fns[view] = lambda v=view, s=spec, m=models: build_view(v, s, m)
            t = ctx.measure(fns)
            records += [
                Record(f"{name}.tokenise_ms", T, t["tokenise"].ms, "ms"),
                Record(f"{name}.lab_run_ms", T, t["forward"].ms, "ms"),
            ]
            if "order" in views:
                records.append(Record(f"{name}.order_forward_ms", T, t["order_forward"].ms, "ms"))
            for view in views:
                feed = t["order_forward"] if view == "order" else t["forward"]
                records += [
                    Record(f"{name}.view_{view}_ms", T, t[view].ms, "ms"),
                    Record(f"{name}.view_{view}_ratio", T, paired_ratio(t[view], feed), "x",
                           FIGURE_TARGET),
                ]
            if DEFAULT_VIEW in views:  # what one new sentence costs before Streamlit sends anything
                records.append(Record(f"{name}.sentence_to_figures_ms", T,
                                      t["forward"].ms + t[DEFAULT_VIEW].ms, "ms"))
    return records


@figure(
    "stages",
    "A1. Sentence -> tokens -> traced forward -> every figure of a view (lab.compute, lab.views)",
    "tokenise = the tokenizer on A and B; lab_run = lab.compute.run (tokenise + pad + traced forward "
    "over the batch of A and B); view_<v> = lab.views.build_view(v) on that run (Plotly figures and "
    "tables); ratio = figures / forward, paired per round. Sentences: T Chinese characters (char "
    "tokenizer), B = A reversed; T=512 is 511 source tokens + [BOS] (max_len 512). The order view is "
    "fed by its own passes (order_forward = lab.views.order_data: A and B encoded alone with and "
    "without PE, cached by the app like the run): its ratio is figures / order_forward.",
)
def app_stages(ctx: Context) -> list[Record]:
    specs = app_specs(ctx)
    if "base" in specs:
        ctx.note("translate is not timed: it needs the trained zh-en model (a hint for random models)")
    return stage_records(ctx, specs)


# -- payload ----------------------------------------------------------------------------------


def figure_payloads(result: ViewResult) -> dict[str, int]:
    """Panel key -> UTF-8 bytes of its figure's JSON (what ui.chart sends the browser); tables are not counted."""
    return {p.key: len(p.figure.to_json().encode("utf-8")) for p in result.panels if p.figure is not None}


def payload_records(
    ctx: Context, specs: dict[str, FigureSpec], views: tuple[str, ...] = TIMED_VIEWS
) -> list[Record]:
    records = []
    for name, base in specs.items():
        for T in ctx.sizes:
            spec = spec_for(base, T)
            models = models_for(ctx, traced_run(ctx, name, spec))
            for view in views:
                result = build_view(view, spec, models)
                start = time.perf_counter()
                sizes = figure_payloads(result)
                json_ms = (time.perf_counter() - start) * 1e3
                if not sizes:
                    continue  # a view of tables only (tokens)
                target = PAYLOAD_TARGET if T >= PAYLOAD_TARGET_TOKENS else None
                records += [
                    Record(f"{name}.json_{view}_max_MB", T, max(sizes.values()) / MB, "MB", target),
                    Record(f"{name}.json_{view}_total_MB", T, sum(sizes.values()) / MB, "MB"),
                    Record(f"{name}.json_{view}_ms", T, json_ms, "ms"),
                ]
    return records


@figure(
    "payload",
    "A2. Figure JSON sent to the browser, per view (largest figure and all figures of the view)",
    "UTF-8 bytes of fig.to_json() per figure (ui.chart sends that JSON); max = the largest "
    "figure of the view, total = the whole view; json_ms = serialising the view once. "
    "Target: no figure above 1 MB at 512 tokens.",
)
def app_payload(ctx: Context) -> list[Record]:
    return payload_records(ctx, app_specs(ctx))
