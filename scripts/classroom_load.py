"""A classroom on one server: N concurrent browser sessions against one `streamlit run app.py`.

    python scripts/classroom_load.py                         # 30 sessions, ~5-10 min on 2 busy cores
    python scripts/classroom_load.py --sessions 2 --actions 2 --timeout 60 --no-warmup   # a smoke test
    python scripts/classroom_load.py --json runs/classroom.json   # records in the bench format
    python scripts/classroom_load.py --compare runs/classroom.json  # this run against that one

Loopback only: the server listens on 127.0.0.1 on a free port; nothing else is contacted. Bounded:
every wait has a timeout, the whole run has a hard --timeout (a watchdog ends the process if even the
clean-up hangs), and the server is always terminated.

What it does: one Chromium (Playwright) with one browser context per student. Sessions open a share
link of the attention view with their own sentence (in batches), then, concurrently (at most
--concurrency acting at once, each pausing --think seconds between actions), alternately type a new
sentence and switch view (attention <-> heads). After every action the session reads the Plotly data
from its own page and checks the NUMBERS against what lab.compute computes here for its own sentence:
every tick label is its own token at that cell, the heatmap z has its own token count on both axes, and every z
value equals the locally computed softmax weight to 1e-4. A session that showed another session's
sentence fails that check. The server's RSS (VmRSS, and with its child processes) is sampled before,
during and after; its CPU seconds per rerun give the sessions-per-core estimate in docs/classroom.md.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import math
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from playwright.async_api import TimeoutError as PlaywrightTimeout  # noqa: E402

from bench.app_figures import sentence  # noqa: E402
from bench.appserver import app_server, cpu_seconds, rss_mib  # noqa: E402
from bench.browser import (  # noqa: E402
    APP_THEME,
    CHROMIUM,
    CHROMIUM_ARGS,
    INPUT_A,
    LABELS_DRAWN_JS,
    READ_CHART_JS,
    app_url,
    chart_key,
)
from bench.core import Record, compare_table, pivot_table  # noqa: E402
from lab.spec import FigureSpec  # noqa: E402

VIEWS = ("attention", "heads")
VIEW_BUTTONS = {"attention": "3 · Attention", "heads": "4 · Heads"}  # the segmented control's labels
CHECKED_PANEL = {"attention": "attention-weights", "heads": "heads-grid"}  # the chart whose numbers we check
TOL = 1e-4
POLL_MS = 100  # how often a waiting page checks for its charts (30 pages polling also cost CPU)
VIEWPORT = {"width": 1100, "height": 800}
WARM_TEXT = "春风拂面桃花盛开"  # the warm-up session's (a preset; no student's sentence: theirs use stride 7)


# -- what a session should see ------------------------------------------------------------------


def session_sentence(session: int, step: int, sessions: int, together: bool = False) -> str:
    """A sentence no other (session, step) gets: 8..47 tokens, its own start in the character cycle.
    together: the class follows the teacher, every session gets session 0's sentence at each step."""
    v = (0 if together else session) + sessions * step
    return sentence(8 + v % 40, salt=v % 23)  # (length, salt) distinct for v < lcm(40, 23) = 920


@dataclasses.dataclass(frozen=True)
class Expected:
    """What one chart must show: tick labels (both axes) and each heatmap trace's z."""

    ticks: list[str]  # every token's label ("i:piece"); a figure may show only every k-th one
    z: list[np.ndarray]  # one (T, T) matrix per heatmap trace of role "values", in trace order


_EXPECTED: dict[tuple[str, str, str], Expected] = {}


def expected(text: str, view: str, b: str | None = None) -> Expected:
    """The checked chart's numbers for sentence A = text and B (default: A reversed), by lab.compute.

    attention view: layer 0, head 0 of encoder self-attention, sentence A (the app's defaults);
    heads view: every head of layer 0. A and B run as one batch, so when B is longer A's row is padded
    with [PAD] (masked keys, weight 0), as in the app. Independent of viz: ticks are
    viz.display_labels of the tokens.
    """
    b = text[::-1] if b is None else b
    key = (text, view, b)
    if key not in _EXPECTED:
        from lab.compute import load_model, model_fields, run
        from model.analysis import all_head_weights, head_arrays, record
        from viz.labels import display_labels

        spec = FigureSpec(sentence_a=text, sentence_b=b)
        run_ = run(load_model(model_fields(spec)), spec.sentence_a, spec.sentence_b, spec.mask)
        pieces = run_.src_pieces(0)
        ticks = display_labels(pieces, len(pieces))
        if view == "attention":
            z = [head_arrays(record(run_.trace, "encoder self", 0), 0, 0)["weights"]]
        else:
            weights = all_head_weights(run_.trace, "encoder self", 0)  # (L, H, T, T)
            z = list(weights[0])
        _EXPECTED[key] = Expected(ticks, z)
    return _EXPECTED[key]


def check_chart(observed: dict | None, want: Expected, tol: float = TOL) -> list[str]:
    """Problems with one chart read from the page (READ_CHART_JS), [] when it shows exactly `want`."""
    if observed is None:
        return ["chart not found on the page"]
    problems = []
    n = len(want.ticks)
    for axis in ("x", "y"):
        text, vals = list(observed.get(f"{axis}ticks") or []), list(observed.get(f"{axis}vals") or [])
        cells = [round(v) for v in vals]
        shown = [want.ticks[c] if 0 <= c < n else None for c in cells]
        if not text or len(text) != len(vals) or text != shown:
            problems.append(f"{axis} tick labels {text[:3]}... are not the own tokens {want.ticks[:3]}... ({n})")
    zs = [t["z"] for t in observed.get("traces", []) if t.get("role") == "values" and t.get("z") is not None]
    if len(zs) != len(want.z):
        problems.append(f"{len(zs)} heatmaps of values, expected {len(want.z)}")
    for i, (got, ref) in enumerate(zip(zs, want.z, strict=False)):
        got = np.asarray(got, dtype=np.float64)
        if got.shape != (n, n) or ref.shape != (n, n):
            problems.append(f"trace {i}: z shape {got.shape}, own token count {n}")
            continue
        blank = np.isnan(got)  # figures leave masked cells empty: their weight must be exactly 0
        if np.any(ref[blank] != 0):
            problems.append(f"trace {i}: {int(np.sum(ref[blank] != 0))} empty cells whose weight is not 0")
        diff = np.abs(got[~blank] - ref[~blank])
        worst = float(diff.max()) if diff.size else 0.0
        if not worst <= tol:  # (NaN in ref also fails here)
            problems.append(f"trace {i}: max |z - weights| = {worst:.3g} > {tol:g}")
    return problems


# -- driving sessions -----------------------------------------------------------------------------


@dataclasses.dataclass
class Result:
    latencies: dict[str, list[float]] = dataclasses.field(default_factory=lambda: {"load": [], "sentence": [], "view": []})
    checks: int = 0
    failures: list[str] = dataclasses.field(default_factory=list)
    reruns: int = 0  # actions that made the server run the script (loads included)
    phase: dict | None = None  # the acting phase: server CPU seconds, wall seconds, reruns


async def wait_drawn(page, view: str, want: Expected, timeout_s: float) -> None:
    charts = {chart_key(view, CHECKED_PANEL[view]): want.ticks}
    await page.wait_for_function(LABELS_DRAWN_JS, arg={"charts": charts}, polling=POLL_MS, timeout=timeout_s * 1e3)


async def check_page(page, session: int, view: str, text: str, result: Result, b: str | None = None) -> None:
    want = expected(text, view, b)
    observed = await page.evaluate(READ_CHART_JS, chart_key(view, CHECKED_PANEL[view]))
    typed = await page.locator(INPUT_A).input_value()
    problems = check_chart(observed, want)
    if typed != text:
        problems.append(f"sentence box shows {typed[:12]!r}..., not the session's own {text[:12]!r}...")
    result.checks += 1
    result.failures += [f"session {session}, {view}: {p}" for p in problems]


async def open_session(browser, url: str, session: int, text: str, timeout_s: float, result: Result):
    context = await browser.new_context(viewport=VIEWPORT)
    page = await context.new_page()
    spec = FigureSpec(sentence_a=text, sentence_b=text[::-1], views=("attention",), theme=APP_THEME)
    start = time.perf_counter()
    await page.goto(app_url(url, spec), wait_until="commit", timeout=timeout_s * 1e3)
    try:
        await wait_drawn(page, "attention", expected(text, "attention"), timeout_s)
    except PlaywrightTimeout:
        result.failures.append(f"session {session}: the first page did not show its charts within "
                               f"{timeout_s:.0f} s; page state: {await page_state(page)}")
        return context, None
    result.latencies["load"].append(time.perf_counter() - start)
    result.reruns += 1
    await check_page(page, session, "attention", text, result)
    return context, page


async def act(page, session: int, step: int, sessions: int, state: dict, timeout_s: float, result: Result):
    """Even steps type a new sentence; odd steps switch view. Timed to the page showing the change."""
    if step % 2 == 0:
        text = session_sentence(session, step // 2 + 1, sessions, state["together"])
        box = page.locator(INPUT_A)
        await box.fill(text)
        start = time.perf_counter()
        await box.press("Enter")
        state["text"], kind = text, "sentence"
    else:
        view = VIEWS[(VIEWS.index(state["view"]) + 1) % len(VIEWS)]
        button = page.locator(".st-key-view button", has_text=VIEW_BUTTONS[view])
        start = time.perf_counter()
        await button.click()
        state["view"], kind = view, "view"
    try:
        await wait_drawn(page, state["view"], expected(state["text"], state["view"], state["b"]), timeout_s)
    except PlaywrightTimeout:
        result.failures.append(f"session {session}, step {step} ({kind}): the page did not show the change "
                               f"within {timeout_s:.0f} s; page state: {await page_state(page)}")
        return False
    result.latencies[kind].append(time.perf_counter() - start)
    result.reruns += 1
    await check_page(page, session, state["view"], state["text"], result, state["b"])
    return True


PAGE_STATE_JS = """
() => {
  const status = document.querySelector('[data-testid="stStatusWidget"]');
  const input = document.querySelector('.st-key-sentence_a input');
  const plots = [...document.querySelectorAll('.js-plotly-plot')];
  const gd = plots[plots.length - 1];
  const errors = [...document.querySelectorAll('[data-testid="stException"], [data-testid="stAlertContentError"]')];
  return {
    status: status ? status.innerText.slice(0, 40) : null,
    stale: document.querySelectorAll('[data-stale="true"]').length,
    charts: plots.length,
    last_chart_ticks: gd && gd.layout && gd.layout.xaxis ? (gd.layout.xaxis.ticktext || []).slice(0, 3) : null,
    sentence_a: input ? input.value.slice(0, 12) : null,
    errors: errors.map((e) => e.innerText.slice(0, 200)),
    connection: (document.querySelector('[data-testid="stConnectionStatus"]') || {}).innerText || null,
  };
}
"""


async def page_state(page) -> str:
    """What a page shows, for a failure message (never raises)."""
    try:
        return json.dumps(await asyncio.wait_for(page.evaluate(PAGE_STATE_JS), 10), ensure_ascii=False)
    except Exception as exc:  # a crashed or hung page
        return f"unreadable ({type(exc).__name__}: {str(exc)[:200]})"


async def drive(args, server, result: Result, samples: list) -> None:
    from playwright.async_api import async_playwright

    n = args.sessions
    steps = args.actions
    together = args.together
    for i in range(n):  # the driver's own numbers first, so computing them does not overlap the load
        b = session_sentence(i, 0, n, together)[::-1]
        for k in range(steps // 2 + 2):
            for view in VIEWS:
                expected(session_sentence(i, k, n, together), view, b)
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            samples.append(("started", server.rss(), tree_rss(server.pid)))
            # one warm-up session (not counted): imports, the model load (a cached resource, once per
            # server) and anything the app starts on first use; the baseline RSS is taken after it
            if args.warmup:
                warm = Result()
                context, _ = await open_session(browser, server.url, -1, WARM_TEXT, args.wait, warm)
                await context.close()
                result.failures += warm.failures
                samples.append(("warm", server.rss(), tree_rss(server.pid)))
            sessions = []
            for first in range(0, n, args.batch):  # page loads in batches
                batch = range(first, min(n, first + args.batch))
                sessions += await asyncio.gather(*(
                    open_session(browser, server.url, i, session_sentence(i, 0, n, together), args.wait, result)
                    for i in batch
                ))
                samples.append((f"{len(sessions)} open", server.rss(), tree_rss(server.pid)))
            gate = asyncio.Semaphore(args.concurrency)
            cpu_start, wall_start = server.cpu(), time.perf_counter()
            client_start = browser_cpu(server.pid)
            reruns_start = result.reruns

            async def student(i: int, page) -> None:
                first = session_sentence(i, 0, n, together)  # B stays the first sentence reversed: only A is retyped
                state = {"text": first, "b": first[::-1], "view": "attention", "together": together}
                await asyncio.sleep(args.think * i / n)  # spread the class's first actions
                for step in range(steps):
                    async with gate:
                        if not await act(page, i, step, n, state, args.wait, result):
                            return  # this student's page is stuck: the failure says how; the class goes on
                    await asyncio.sleep(args.think)

            async def sample_rss() -> None:
                while True:
                    await asyncio.sleep(1.0)
                    samples.append(("during", server.rss(), tree_rss(server.pid)))

            sampler = asyncio.create_task(sample_rss())
            try:
                await asyncio.gather(*(student(i, page) for i, (_, page) in enumerate(sessions) if page))
            finally:
                sampler.cancel()
            result.phase = {
                "cpu_s": server.cpu() - cpu_start,
                "client_cpu_s": browser_cpu(server.pid) - client_start,
                "wall_s": time.perf_counter() - wall_start,
                "reruns": result.reruns - reruns_start,
            }
            samples.append(("all acted", server.rss(), tree_rss(server.pid)))
            for context, _ in sessions:
                await context.close()
        finally:
            await browser.close()


def descendants(pid: int) -> list[int]:
    out, stack = [], [pid]
    while stack:
        p = stack.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                kids = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            out += kids
            stack += kids
    return out


def browser_cpu(server_pid: int) -> float:
    """CPU seconds of this script's child processes outside the server (Chromium, Playwright's driver)."""
    skip = {server_pid, *descendants(server_pid)}
    total = 0.0
    for p in descendants(os.getpid()):
        if p not in skip:
            value = cpu_seconds(p)
            if not math.isnan(value):
                total += value
    return total


def tree_rss(pid: int) -> float:
    """RSS of a process and all its descendants (e.g. the export Chromium the app may start), MiB."""
    total, stack = 0.0, [pid]
    while stack:
        p = stack.pop()
        value = rss_mib(p)
        if not math.isnan(value):
            total += value
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                stack += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                pass
    return total


# -- report ---------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    return float(np.percentile(np.asarray(values), q))


def records_of(args, result: Result, samples: list, cpu_total: float) -> list[Record]:
    n = args.sessions
    acted = result.latencies["sentence"] + result.latencies["view"]
    warm = [s for s in samples if s[0] == "warm"]
    base = warm[0] if warm else (samples[0] if samples else ("", float("nan"), float("nan")))
    rss = [s[1] for s in samples]
    tree = [s[2] for s in samples]
    phase = result.phase or {"cpu_s": float("nan"), "wall_s": float("nan"), "reruns": 0}
    cpu_per_rerun = phase["cpu_s"] / phase["reruns"] if phase["reruns"] else float("nan")
    recs = [
        Record("classroom.sessions", n, n, "sessions"),
        Record("classroom.reruns", n, result.reruns, "reruns"),
        Record("classroom.number_checks", n, result.checks, "checks"),
        Record("classroom.failed_checks", n, len(result.failures), "failures", "<= 0"),
        Record("classroom.load_p50_ms", n, percentile(result.latencies["load"], 50) * 1e3, "ms"),
        Record("classroom.load_p95_ms", n, percentile(result.latencies["load"], 95) * 1e3, "ms"),
        Record("classroom.sentence_p50_ms", n, percentile(result.latencies["sentence"], 50) * 1e3, "ms"),
        Record("classroom.view_p50_ms", n, percentile(result.latencies["view"], 50) * 1e3, "ms"),
        Record("classroom.rerun_p50_ms", n, percentile(acted, 50) * 1e3, "ms"),
        Record("classroom.rerun_p95_ms", n, percentile(acted, 95) * 1e3, "ms"),
        Record("classroom.rerun_max_ms", n, max(acted, default=float("nan")) * 1e3, "ms"),
        Record("classroom.server_cpu_per_rerun_ms", n, cpu_per_rerun * 1e3, "ms"),
        Record("classroom.server_cpu_total_s", n, cpu_total, "s"),
        Record("classroom.act_phase_wall_s", n, phase["wall_s"], "s"),
        Record("classroom.act_phase_server_cpu_s", n, phase["cpu_s"], "s"),
        Record("classroom.act_phase_browser_cpu_s", n, phase.get("client_cpu_s", float("nan")), "s"),
        Record("classroom.rss_started_MiB", n, rss[0] if rss else float("nan"), "MiB"),
        Record("classroom.rss_warm_MiB", n, base[1], "MiB"),
        Record("classroom.rss_peak_MiB", n, max(rss, default=float("nan")), "MiB"),
        Record("classroom.rss_after_MiB", n, rss[-1] if rss else float("nan"), "MiB"),
        Record("classroom.rss_growth_per_session_MiB", n,
               (max(rss) - base[1]) / n if rss else float("nan"), "MiB"),
        Record("classroom.tree_rss_warm_MiB", n, base[2], "MiB"),
        Record("classroom.tree_rss_peak_MiB", n, max(tree, default=float("nan")), "MiB"),
    ]
    return recs


def watchdog(seconds: float, cleanup) -> threading.Timer:
    """Hard stop: after `seconds`, run cleanup (kill the server) and end the process."""

    def fire() -> None:
        print(f"\nclassroom_load: hard timeout of {seconds:.0f} s reached; stopping", file=sys.stderr, flush=True)
        try:
            cleanup()
        finally:
            os._exit(124)

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    return timer


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sessions", type=int, default=30, help="concurrent browser sessions (students)")
    p.add_argument("--actions", type=int, default=4, help="actions per session after its page load")
    p.add_argument("--batch", type=int, default=5, help="page loads started together")
    p.add_argument("--concurrency", type=int, default=10, help="sessions acting at the same moment, at most")
    p.add_argument("--think", type=float, default=2.0, help="seconds a student pauses between actions")
    p.add_argument("--wait", type=float, default=180.0, help="seconds one page may take to show a change")
    p.add_argument("--timeout", type=float, default=1200.0, help="hard limit for the whole run, seconds")
    p.add_argument("--no-warmup", dest="warmup", action="store_false",
                   help="skip the uncounted warm-up session (quicker; RSS growth then includes start-up)")
    p.add_argument("--torch-threads", type=int, default=1, help="OMP/MKL threads of the server")
    p.add_argument("--together", action="store_true",
                   help="the class follows the teacher: every session types the same sentences (each its "
                        "own moment), so sessions share cached views; default: each its own sentences")
    p.add_argument("--json", metavar="PATH", help="write the records (bench format) here")
    p.add_argument("--compare", metavar="PATH", help="print this run against an earlier --json file")
    args = p.parse_args(argv)
    args.wait = min(args.wait, args.timeout)
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"classroom_load: {CHROMIUM} is missing", file=sys.stderr)
        return 2
    deadline = time.monotonic() + args.timeout
    load_start = os.getloadavg()[0]
    result, samples = Result(), []
    print(f"classroom load test{' (together: one sentence for the class)' if args.together else ''}: "
          f"{args.sessions} sessions, {args.actions} actions each, batches of "
          f"{args.batch}, at most {args.concurrency} acting at once, {args.think:g} s think time; "
          f"load average {load_start:.2f} on {os.cpu_count()} cores", flush=True)
    start = time.perf_counter()
    with app_server(torch_threads=args.torch_threads) as server:
        timer = watchdog(args.timeout, lambda: server.proc.kill())
        cpu0 = server.cpu()
        try:
            remaining = deadline - time.monotonic()
            asyncio.run(asyncio.wait_for(drive(args, server, result, samples), timeout=max(1.0, remaining - 15)))
            status = "completed"
        except TimeoutError:
            status = "timed out"
        except Exception as exc:  # report what went wrong with the numbers gathered so far
            status = f"failed: {type(exc).__name__}: {str(exc)[:400]}"
        time.sleep(3)  # sessions closed: let the server drop them
        samples.append(("after", server.rss(), tree_rss(server.pid)))
        cpu_total = cpu_seconds(server.pid) - cpu0
        timer.cancel()
    load_end = os.getloadavg()[0]
    records = records_of(args, result, samples, cpu_total)
    records += [Record("run.load_avg_start", None, load_start, "load"),
                Record("run.load_avg_end", None, load_end, "load")]
    print(f"\n{status} in {time.perf_counter() - start:.0f} s; load average {load_start:.2f} -> {load_end:.2f}")
    print(pivot_table(records))
    print("\nserver RSS (MiB; server alone / with child processes):")
    for label, rss, tree in samples:
        if label != "during":
            print(f"  {label:>10}: {rss:7.1f} / {tree:7.1f}")
    during = [s for s in samples if s[0] == "during"]
    if during:
        print(f"  {'during':>10}: max {max(s[1] for s in during):7.1f} / {max(s[2] for s in during):7.1f} "
              f"({len(during)} samples)")
    for kind, values in result.latencies.items():
        if values:
            print(f"  {kind:>8} latency: n={len(values)}, median {statistics.median(values) * 1e3:.0f} ms, "
                  f"p95 {percentile(values, 95) * 1e3:.0f} ms, max {max(values) * 1e3:.0f} ms")
    if result.failures:
        print(f"\n{len(result.failures)} failed number checks:")
        for line in result.failures[:20]:
            print("  " + line)
    else:
        print(f"\nall {result.checks} number checks passed (ticks = own tokens, z = own weights to {TOL:g})")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps([r.to_dict() for r in records], indent=1))
        print(f"wrote {len(records)} records to {args.json}")
    if args.compare:
        old = [Record.from_dict(d) for d in json.loads(Path(args.compare).read_text())]
        print(f"\ncompared with {args.compare}:\n{compare_table(old, records)}")
    ok = status == "completed" and not result.failures and result.checks > 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
