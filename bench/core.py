"""The benchmark's machinery: Record, the figure registry, timing, the context, the table.

Nothing here knows about any particular figure; bench/figures.py registers those.
"""

from __future__ import annotations

import gc
import math
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from model.config import TransformerConfig

# -- records ----------------------------------------------------------------------------------

RECORD_KEYS = ("name", "tokens", "value", "unit", "target", "ok")


def meets(value: float, target: str | None) -> bool | None:
    """Does value satisfy target ("<= 1.2", "< 3", ">= 0.5", "> 100")? None when no target."""
    if target is None:
        return None
    op, _, number = target.strip().partition(" ")
    bound = float(number)
    checks = {"<=": value <= bound, "<": value < bound, ">=": value >= bound, ">": value > bound}
    if op not in checks:
        raise ValueError(f"target {target!r} must look like '<= 1.2' or '> 100'")
    return bool(checks[op]) and math.isfinite(value)


@dataclass
class Record:
    """One figure of one run: what was measured, at how many tokens, and whether it met its target."""

    name: str  # e.g. "base.stacks_ratio": "<config>.<what>"
    tokens: int | None  # sequence length (source = target), or the table length for PE; None if n/a
    value: float
    unit: str  # "ms", "x", "MiB", "GFLOP/s", ...
    target: str | None = None  # "<= 1.2", "> 100", or None for an informational figure
    ok: bool | None = None  # filled from target when left None

    def __post_init__(self) -> None:
        self.value = float(self.value)
        if self.ok is None:
            self.ok = meets(self.value, self.target)

    def to_dict(self) -> dict:
        return {key: getattr(self, key) for key in RECORD_KEYS}

    @classmethod
    def from_dict(cls, data: dict) -> Record:
        return cls(**{key: data[key] for key in RECORD_KEYS})


# -- the registry -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Figure:
    key: str  # short id, used by --only
    title: str  # section heading in the table
    note: str  # what is measured and how, printed under the heading
    fn: Callable[[Context], list[Record]]


FIGURES: dict[str, Figure] = {}  # in registration order = the order they run and print


def figure(key: str, title: str, note: str = ""):
    """Register fn(ctx) -> list[Record] as a figure of `python -m bench` (see bench/__init__.py)."""

    def register(fn: Callable[[Context], list[Record]]):
        if key in FIGURES:
            raise ValueError(f"figure {key!r} is registered twice")
        FIGURES[key] = Figure(key, title, note, fn)
        return fn

    return register


# -- timing -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    median_s: float
    samples: tuple[float, ...]  # seconds, one per round, in round order

    @property
    def ms(self) -> float:
        return self.median_s * 1e3

    @property
    def repeats(self) -> int:
        return len(self.samples)


def median_ratio(parts: Sequence[float], wholes: Sequence[float]) -> float:
    """median_i(parts_i / wholes_i): each pair measured back to back (one round, one repeat), so a slow spell of a
    shared machine cancels out of the ratio instead of landing on one side of it (which the ratio of medians
    allows)."""
    return statistics.median(x / y for x, y in zip(parts, wholes, strict=True))


def paired_ratio(a: Timing, b: Timing) -> float:
    """median_i(a_i / b_i) over the rounds of one measure() call (median_ratio)."""
    if a.repeats != b.repeats:
        raise ValueError("paired_ratio needs two timings from the same measure() call")
    return median_ratio(a.samples, b.samples)


def measure(
    fns: dict[str, Callable[[], object]],
    *,
    budget_s: float,
    min_repeats: int,
    max_repeats: int,
    warmup: int = 2,
    heavy_repeats: int = 3,
) -> dict[str, Timing]:
    """Median wall time of each fn over repeated calls, after `warmup` untimed rounds.

    The functions run interleaved (a, b, a, b, ... in alternating order) so that a busy moment on
    a shared machine hits every contender alike. The number of rounds fills about budget_s,
    clamped to [min_repeats, max_repeats]; when one round alone outlasts budget_s (the base model
    at 512 tokens), heavy_repeats rounds are run instead.

    Warm-up goes on (up to 10 rounds, or about budget_s) until a round is within 25% of the
    fastest so far: the first calls after start-up or a thread-count change can be 100x slower.
    warmup=0 skips it (for slow pure-Python baselines that have nothing to warm).
    """
    round_s, fastest, spent = 0.0, math.inf, 0.0
    for k in range(10 if warmup else 0):
        start = time.perf_counter()
        for fn in fns.values():
            fn()
        round_s = time.perf_counter() - start
        spent += round_s
        stable = round_s <= 1.25 * fastest
        fastest = min(fastest, round_s)
        if k + 1 >= warmup and (stable or spent > budget_s):
            break
    samples: dict[str, list[float]] = {name: [] for name in fns}
    order = list(fns.items())

    def one_round(names_fns) -> float:
        total = 0.0
        for name, fn in names_fns:
            start = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - start)
            total += samples[name][-1]
        return total

    gc.collect()
    if not warmup:  # the first round sizes the run and counts as a sample
        round_s = one_round(order)
    repeats = int(min(max(budget_s / max(round_s, 1e-9), min_repeats), max_repeats))
    if round_s > budget_s:
        repeats = min(repeats, heavy_repeats)
    while len(samples[order[0][0]]) < repeats:
        one_round(order if len(samples[order[0][0]]) % 2 == 0 else order[::-1])
    return {name: Timing(statistics.median(s), tuple(s)) for name, s in samples.items()}


def synchronized(fns: dict[str, Callable[[], object]], device: str) -> dict[str, Callable[[], object]]:
    """fns as they are on the CPU; on CUDA each followed by torch.cuda.synchronize()."""
    if torch.device(device).type != "cuda":
        return fns

    def wrap(fn):
        def run():
            out = fn()
            torch.cuda.synchronize()
            return out

        return run

    return {name: wrap(fn) for name, fn in fns.items()}


# -- the context every figure receives ---------------------------------------------------------


def machine_cores() -> int:
    """CPU cores this process may run on (the affinity mask, not the host's total)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@dataclass
class Context:
    """Run settings and shared, lazily built objects (models, inputs, memoised timings)."""

    configs: dict[str, TransformerConfig]  # name -> config, e.g. {"base": ..., "app": ...}
    sizes: tuple[int, ...]  # token counts (source = target length)
    quick: bool = False
    budget_s: float = 2.0  # seconds of timed calls per measurement
    min_repeats: int = 5
    max_repeats: int = 200
    heavy_repeats: int = 3  # rounds when a single round outlasts budget_s
    batch: int = 1  # one sentence, as in the app
    pe_size: int = 512  # (max_len, d_model) of the positional-encoding table
    square_size: int = 2048  # n of the n x n @ n x n reference matmul
    seed: int = 0
    device: str = "cpu"  # where models, inputs and the reference matmul live ("cuda": timed with a sync)
    notes: list[str] = field(default_factory=list)  # extra lines for the current section
    _cache: dict = field(default_factory=dict, repr=False)

    def measure(self, fns: dict[str, Callable[[], object]], warmup: int = 2) -> dict[str, Timing]:
        """ctx-configured measure(); on a GPU each call ends with a synchronize, so the time is the
        work's, not the launch's (CUDA runs asynchronously)."""
        return measure(
            synchronized(fns, self.device),
            budget_s=self.budget_s,
            min_repeats=self.min_repeats,
            max_repeats=self.max_repeats,
            warmup=warmup,
            heavy_repeats=self.heavy_repeats,
        )

    def memo(self, key, build: Callable[[], object]):
        """build() once per run per key (models, reference timings shared between figures)."""
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    def note(self, line: str) -> None:
        self.notes.append(line)

    def model(self, config_name: str):
        """Our Transformer for that config, seeded, in eval mode."""
        from model.transformer import Transformer

        def build():
            torch.manual_seed(self.seed)  # seeded on the CPU: the same weights on every device
            return Transformer(self.configs[config_name]).eval().to(self.device)

        return self.memo(("model", config_name), build)

    def torch_model(self, config_name: str):
        """torch.nn.Transformer holding our model's weights (stacks only), in eval mode."""
        from model.reference import torch_transformer

        return self.memo(
            ("torch_model", config_name),
            lambda: torch_transformer(self.model(config_name)).eval().to(self.device),
        )

    def inputs(self, config_name: str, tokens: int):
        """(src, tgt, src_mask, tgt_mask): random non-pad ids, (batch, tokens) each, and our masks."""

        def build():
            config, model = self.configs[config_name], self.model(config_name)
            gen = torch.Generator().manual_seed(self.seed + tokens)
            low = config.pad_id + 1  # no padding: every position is a real token
            src = torch.randint(low, config.src_vocab_size, (self.batch, tokens), generator=gen)
            tgt = torch.randint(low, config.tgt_vocab_size, (self.batch, tokens), generator=gen)
            src, tgt = src.to(self.device), tgt.to(self.device)  # (batch, tokens) each
            return src, tgt, model.src_mask(src), model.tgt_mask(tgt)

        return self.memo(("inputs", config_name, tokens), build)


# -- output -----------------------------------------------------------------------------------


def fmt(value: float) -> str:
    if value != value or math.isinf(value):  # NaN / inf
        return str(value)
    a = abs(value)
    if a == 0:
        return "0"
    if a >= 1e5 or a < 1e-3:
        return f"{value:.2e}"
    if a >= 100:
        return f"{value:.0f}"
    if a >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}" if a < 1 else f"{value:.2f}"


def _mark(ok: bool | None) -> str:
    return "" if ok is None else (" ok" if ok else " MISS")


def pivot_table(records: list[Record]) -> str:
    """Rows = record names (in first-seen order), columns = token counts; a cell is value + ok/MISS."""
    names: list[str] = []
    tokens: list[int | None] = []
    cells: dict[tuple[str, int | None], Record] = {}
    for r in records:
        if r.name not in names:
            names.append(r.name)
        if r.tokens not in tokens:
            tokens.append(r.tokens)
        cells[(r.name, r.tokens)] = r
    tokens.sort(key=lambda t: -1 if t is None else t)
    first = {name: next(r for r in records if r.name == name) for name in names}
    header = ["figure", "unit", "target"] + ["-" if t is None else f"T={t}" for t in tokens]
    rows = [header]
    for name in names:
        row = [name, first[name].unit, first[name].target or ""]
        for t in tokens:
            r = cells.get((name, t))
            row.append("" if r is None else fmt(r.value) + _mark(r.ok))
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = []
    for k, row in enumerate(rows):
        text = [
            c.ljust(w) if i < 3 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(text).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def compare_table(old: list[Record], new: list[Record]) -> str:
    """For every (name, tokens) in both runs: old value, new value and new / old."""
    before = {(r.name, r.tokens): r for r in old}
    rows = [["figure", "tokens", "unit", "before", "now", "now/before"]]
    for r in new:
        o = before.get((r.name, r.tokens))
        if o is None:
            continue
        change = r.value / o.value if o.value else float("nan")
        rows.append(
            [
                r.name,
                "-" if r.tokens is None else str(r.tokens),
                r.unit,
                fmt(o.value),
                fmt(r.value),
                fmt(change),
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    )
