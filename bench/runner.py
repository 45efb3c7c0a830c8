"""`python -m bench`: run the registered figures, print a table, optionally write/compare JSON."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Iterable

import torch

import bench.app_figures  # noqa: F401  (the app's figures: stages, payload)
import bench.apptest_rerun  # noqa: F401  (rerun, sessions, page)
import bench.browser  # noqa: F401  (browser)
import bench.figures  # noqa: F401  (registers the built-in figures)
from bench.app_figures import APP_SIZES
from bench.configs import CONFIGS, QUICK_CONFIGS, QUICK_SIZES, SIZES
from bench.core import FIGURES, Context, Record, compare_table, machine_cores, pivot_table
from model.device import pick_device

APP_KEYS = ("stages", "payload", "rerun", "browser", "sessions", "page")  # --app: the app end to end (app.py, browser)
MODEL_KEYS = tuple(k for k in FIGURES if k not in APP_KEYS)  # the default run


def run(
    ctx: Context, keys: Iterable[str] | None = None, out: Callable[[str], None] = print
) -> list[Record]:
    """Run the figures named by keys (the model figures by default), printing each section."""
    keys = list(MODEL_KEYS) if keys is None else list(keys)
    unknown = [k for k in keys if k not in FIGURES]
    if unknown:
        raise ValueError(f"unknown figure(s) {unknown}; registered: {list(FIGURES)}")
    records: list[Record] = []
    for key in keys:
        fig = FIGURES[key]
        ctx.notes.clear()
        start = time.perf_counter()
        threads = torch.get_num_threads()
        with torch.no_grad():
            got = fig.fn(ctx)
        torch.set_num_threads(threads)  # a figure that runs app.py in-process gets the app's threads
        out(f"\n{fig.title}   [{key}, {time.perf_counter() - start:.1f} s]")
        out(f"  {fig.note}")
        out(pivot_table(got) if got else "(no records)")
        for line in ctx.notes:
            out(f"  - {line}")
        records += got
    return records


def summary(records: list[Record]) -> str:
    judged = [r for r in records if r.ok is not None]
    missed = [r for r in judged if not r.ok]
    lines = [f"\ntargets met: {len(judged) - len(missed)} of {len(judged)}"]
    lines += [
        f"  MISS {r.name} T={r.tokens}: {r.value:.4g} {r.unit}, target {r.target}" for r in missed
    ]
    return "\n".join(lines)


def load_average() -> float:
    """The 1-minute load average (NaN where the OS has none)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument(
        "--quick", action="store_true", help="short run: small model, sizes 8 and 32, few repeats"
    )
    p.add_argument("--json", metavar="PATH", help="write the records as a JSON list")
    p.add_argument(
        "--compare", metavar="PATH", help="print this run against an earlier --json file"
    )
    p.add_argument(
        "--app", action="store_true",
        help=f"the app end to end instead: {list(APP_KEYS)} at 8,32,128,512 tokens (needs app.py; "
        "the browser figure needs /usr/bin/chromium)",
    )
    p.add_argument("--only", metavar="KEYS", help=f"comma-separated figures, from {list(FIGURES)}")
    p.add_argument(
        "--sizes", metavar="N,N", type=_ints, help="token counts (default 8,16,32,128,512; --app 8,32,128,512; --quick 8,32)"
    )
    p.add_argument("--configs", metavar="NAMES", help=f"comma-separated, from {list(CONFIGS)}")
    p.add_argument("--budget", type=float, help="seconds of timed calls per measurement")
    p.add_argument("--pe-size", type=int, help="(max_len, d_model) of the PE table (default 512)")
    p.add_argument("--square-size", type=int, help="n of the n x n reference matmul (default 2048)")
    p.add_argument("--device", default="cpu", help="cpu (default), cuda or auto: where the models, their inputs "
                   "and the reference matmul run (the app figures' FigureSpec.device too); CUDA timings end "
                   "with a synchronize")
    p.add_argument("--threads", type=int, help="torch threads (default: this machine's cores)")
    p.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    p.add_argument("--list", action="store_true", help="list the registered figures and exit")
    return p.parse_args(argv)


def device(name: str) -> torch.device:
    """model.device.pick_device(name), or exit saying which devices this machine has."""
    try:
        return pick_device(name)
    except ValueError as exc:
        raise SystemExit(f"--device: {exc}") from None


def device_line(name: str) -> str:
    if torch.device(name).type == "cuda":
        return f"device: cuda ({torch.cuda.get_device_name()}; float32 matmul precision " \
               f"{torch.get_float32_matmul_precision()!r})"
    return f"device: {name}"


def make_context(args: argparse.Namespace) -> Context:
    names = (
        args.configs.split(",") if args.configs else list(QUICK_CONFIGS if args.quick else CONFIGS)
    )
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        raise SystemExit(f"unknown config(s) {unknown}; known: {list(CONFIGS)}")
    ctx = Context(
        configs={n: CONFIGS[n] for n in names},
        sizes=args.sizes or (QUICK_SIZES if args.quick else APP_SIZES if args.app else SIZES),
        quick=args.quick,
        device=str(device(args.device)),
    )
    if args.quick:
        ctx.budget_s, ctx.pe_size, ctx.square_size = 0.1, 256, 1024
    if args.budget is not None:
        ctx.budget_s = args.budget
    if args.pe_size is not None:
        ctx.pe_size = args.pe_size
    if args.square_size is not None:
        ctx.square_size = args.square_size
    return ctx


def json_engine() -> str:
    """What plotly.io.to_json uses to make a figure's payload: orjson when importable (requirements.txt
    pins it), else the json module, 2-3x slower. Payload and rerun figures depend on it."""
    import plotly.io as pio

    engine = pio.json.config.default_engine
    if engine == "auto":
        try:
            import orjson
        except ImportError:
            return "json"
        return f"orjson {orjson.__version__}"
    return engine


def json_engine_line() -> str:
    engine = json_engine()
    return f"figure payloads (plotly.io.to_json): {engine}" + (
        "" if engine.startswith("orjson") else "  -- orjson missing (pip install -r requirements.txt): "
                                                "payload and rerun times are 2-3x what a full install measures")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        for key, fig in FIGURES.items():
            print(f"{key:8s} {fig.title}")
        return 0
    cores = machine_cores()
    threads = args.threads or cores
    torch.set_num_threads(threads)
    ctx = make_context(args)
    print(
        f"Attention Lab benchmark{' (quick)' if ctx.quick else ''}: torch {torch.__version__}, "
        f"python {platform.python_version()}, {platform.machine()}\n"
        f"torch threads: {torch.get_num_threads()} (machine cores: {cores}); batch {ctx.batch}; "
        f"medians of >= {ctx.min_repeats} repeats ({ctx.heavy_repeats} when one round outlasts the budget) "
        f"after warm-up, ~{ctx.budget_s:g} s per measurement; "
        f"no_grad + eval()\n{device_line(ctx.device)}\n{json_engine_line()}"
    )
    for name, c in ctx.configs.items():
        print(
            f"config {name}: d_model {c.d_model}, heads {c.n_heads}, layers {c.n_layers}+{c.decoder_layers}, "
            f"d_ff {c.d_ff}, vocab {c.src_vocab_size}/{c.tgt_vocab_size}, norm {c.norm}"
        )
    load_start = load_average()
    print(
        f"load average (1 min) at start: {load_start:.2f}"
        + (f"  -- busy machine ({cores} cores): timings are noisy" if load_start > 0.5 else "")
        + ("; consider --threads 1" if load_start > cores and threads > 1 else "")
    )
    start = time.perf_counter()
    records = run(ctx, args.only.split(",") if args.only else APP_KEYS if args.app else None)
    load_end = load_average()
    print(f"\nload average (1 min) at end: {load_end:.2f}")
    records += [  # context for comparing runs: a busy machine explains a slow one
        Record("run.torch_threads", None, torch.get_num_threads(), "threads"),
        Record("run.on_cuda", None, torch.device(ctx.device).type == "cuda", "bool"),
        Record("run.orjson_payloads", None, json_engine().startswith("orjson"), "bool"),
        Record("run.load_avg_start", None, load_start, "load"),
        Record("run.load_avg_end", None, load_end, "load"),
    ]
    print(summary(records))
    print(f"total {time.perf_counter() - start:.0f} s")
    old = None
    if args.compare:
        with open(args.compare, encoding="utf-8") as f:
            old = [Record.from_dict(d) for d in json.load(f)]
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([r.to_dict() for r in records], f, indent=1)
        print(f"wrote {len(records)} records to {args.json}")
    if old is not None:
        print(f"\ncompared with {args.compare}:\n{compare_table(old, records)}")
    return 1 if args.strict and any(r.ok is False for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())
