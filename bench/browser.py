"""The app in headless Chromium: page load, a new sentence, only the head, only the layer -> charts drawn.

Figure "browser" of `python -m bench --app`. One `streamlit run app.py` (bench/appserver.py) on a
free loopback port, one Chromium (Playwright, /usr/bin/chromium); each repeat opens a fresh browser
context on a share link of the attention view, waits until every chart is drawn, then types a new
sentence A (Enter commits it) and waits until the charts show it; then picks only another head, and
then only another layer, in their select boxes, and waits until the charts show that head / layer.
The sentence boxes live in an st.fragment (app.py main_area) and the layer and head boxes in one inside
it (view_area): a new sentence reruns main_area, with a new forward pass, and a head or layer view_area
alone; the head's and the layer's time over the sentence's (paired per repeat) has the target <= 0.2.

Each change is timed twice: until the charts on the screen show it (what the user waits for: ui/chart.py
draws those first; the figure's plain names, and the redraw target) and until every chart of the view
does (names ending "_all": the charts below the screen are drawn one per idle moment of the page).

"Drawn" means: no element is stale (Streamlit marks old output data-stale while a rerun runs), the
status widget shows no running script, no chart counted waits to be drawn, and every chart counted
carries the tick labels and the z values (their sum; the weights chart's first values) the view has
for that setting (computed here with lab.views.build_view, the function the app calls), so the
figure data in the page is the new sentence's, not the old one's.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from pathlib import Path
from urllib.parse import urlencode

import numpy as np

from bench.app_figures import APP_SPECS, app_specs, sentence, source_tokens
from bench.appserver import Server, app_server
from bench.core import Context, Record, figure, median_ratio
from lab.compute import load_model
from lab.spec import FigureSpec
from lab.views import Models, ViewResult, build_view

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]
VIEWPORT = {"width": 1400, "height": 900}
REDRAW_TARGET = "<= 500"  # ms, a new sentence at REDRAW_TARGET_TOKENS with the default model
REDRAW_TARGET_TOKENS = 32
SWITCH_TARGET = "<= 0.2"  # only the head / layer vs a new sentence, at every size
# "At 512 tokens ... the page stays interactive": no task on the page's main thread while it redraws
# may keep a click or a key waiting longer than 200 ms (the Interaction to Next Paint a page needs to
# count as responsive, web.dev/inp). plotly.js draws each chart in its own task.
INTERACTIVE_TARGET = "<= 200"
INTERACTIVE_TOKENS = 512
APP_THEME = "default"  # the app's own default theme (ui/state.py DEFAULTS)

# Is the page idle and does every expected chart show the expected tick labels, and the probed
# charts the expected first z values and z sums? (Long inputs are labelled by position only, so the labels
# alone cannot tell two sentences of the same length apart; their z values can.)
# arg: {charts: {chart key: [x ticktext, y ticktext]}, probes: {chart key: first z values of row 0},
#       sums: {chart key: sum of the first trace's finite z values}, visible: bool};
# keys are Streamlit element keys ("chart-<view>-<panel key>", the CSS class "st-key-<key>").
# visible: only the charts on the screen count (ui/chart.py draws those first; the others wait for an idle
# moment, their boxes marked data-waiting); else every chart, none waiting.
DRAWN_JS = """
(arg) => {
  if (document.querySelector('[data-stale="true"]')) return false;
  const status = document.querySelector('[data-testid="stStatusWidget"]');
  if (status && /Running|Stop/.test(status.innerText)) return false;
  const chart = (key) => document.querySelector('.st-key-' + key + ' .lab-chart');
  const onScreen = (gd) => {
    const r = gd.parentElement.getBoundingClientRect();
    return r.bottom > 0 && r.top < window.innerHeight && r.right > 0 && r.left < window.innerWidth;
  };
  const counted = (key) => {
    const gd = chart(key);
    return !arg.visible || (gd && onScreen(gd));
  };
  let shown = 0;
  for (const [key, ticks] of Object.entries(arg.charts)) {
    if (!counted(key)) continue;
    const gd = chart(key);
    if (!gd || !gd.layout || !gd._fullData || gd.parentElement.hasAttribute('data-waiting')) return false;
    const got = [(gd.layout.xaxis && gd.layout.xaxis.ticktext) || [],
                 (gd.layout.yaxis && gd.layout.yaxis.ticktext) || []];
    if (JSON.stringify(got) !== JSON.stringify(ticks)) return false;
    shown++;
  }
  if (!shown) return false;  // (visible) no chart on the screen yet: the page is still being laid out
  const close = (a, b) => Math.abs(a - b) <= 1e-5 * Math.max(1, Math.abs(b));
  for (const [key, values] of Object.entries(arg.probes || {})) {
    if (!counted(key)) continue;
    const gd = chart(key);
    const z = gd && gd._fullData && gd._fullData[0].z;
    if (!z || !z[0]) return false;
    for (let j = 0; j < values.length; j++) {
      const a = z[0][j], b = values[j];
      // an empty cell: NaN in a typed array, null in a plain list (viz.fig.PLAIN_MAX)
      const same = (b === null) ? (a === null || Number.isNaN(a)) : close(a, b);
      if (!same) return false;
    }
  }
  for (const [key, want] of Object.entries(arg.sums || {})) {
    if (!counted(key)) continue;
    const gd = chart(key);
    const z = gd && gd._fullData && gd._fullData[0].z;
    if (!z) return false;
    let sum = 0, size = 0;
    for (const row of z) for (const v of row) if (v !== null && Number.isFinite(v)) { sum += v; size += Math.abs(v); }
    if (Math.abs(sum - want) > 1e-5 * Math.max(1, size)) return false;
  }
  return true;
}
"""

# What one chart shows: tick labels and every heatmap trace's z, as plotly.js decoded it
# (gd._fullData: the base64 typed arrays the Python side sends, decoded to rows).
READ_CHART_JS = """
(key) => {
  const gd = document.querySelector('.st-key-' + key + ' .js-plotly-plot');
  if (!gd || !gd._fullData) return null;
  const traces = gd._fullData.map((t) => ({
    type: t.type,
    role: t.meta && t.meta.role,
    z: t.type === 'heatmap' && t.z ? Array.from(t.z, (row) => Array.from(row)) : null,
  }));
  const ax = (a) => ({text: (a && a.ticktext) || [], vals: (a && a.tickvals) || []});
  const x = ax(gd.layout.xaxis), y = ax(gd.layout.yaxis);
  return {xticks: x.text, xvals: x.vals, yticks: y.text, yvals: y.vals, traces};
}
"""

# Like DRAWN_JS, but each chart is given the full list of token labels of both axes: every tick shown
# must be the label of the cell it sits on (figures may label only every k-th cell), and the first
# heatmap must have one row per label. arg: {charts: {chart key: labels}}.
LABELS_DRAWN_JS = """
(arg) => {
  if (document.querySelector('[data-stale="true"], [data-waiting]')) return false;
  const status = document.querySelector('[data-testid="stStatusWidget"]');
  if (status && /Running|Stop/.test(status.innerText)) return false;
  for (const [key, labels] of Object.entries(arg.charts)) {
    const gd = document.querySelector('.st-key-' + key + ' .js-plotly-plot');
    if (!gd || !gd.layout || !gd._fullData || !gd._fullData[0].z) return false;
    if (gd._fullData[0].z.length !== labels.length) return false;
    for (const a of [gd.layout.xaxis, gd.layout.yaxis]) {
      const text = (a && a.ticktext) || [], vals = (a && a.tickvals) || [];
      if (!text.length || text.length !== vals.length) return false;
      for (let i = 0; i < text.length; i++) {
        if (labels[Math.round(vals[i])] !== text[i]) return false;
      }
    }
  }
  return true;
}
"""

INPUT_A = ".st-key-sentence_a input"

# Long tasks (main-thread tasks over 50 ms: the Long Tasks API) from now on, kept in the page.
WATCH_TASKS_JS = """
() => {
  window.__labTasks = [];
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) window.__labTasks.push(entry.duration);
  }).observe({type: "longtask"});
}
"""
# The longest of them since the last call (0: none over 50 ms), and forget them. The observer reports a
# task after it ends: two animation frames and a timer let the last one in first.
LONGEST_TASK_JS = """
() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(() => {
  const tasks = window.__labTasks || [];
  done(tasks.length ? Math.max(...tasks) : 0);
  tasks.length = 0;
}, 50))))
"""


def longest_task_ms(page) -> float:
    """The longest main-thread task (ms) since the page started watching (WATCH_TASKS_JS) or since the last
    call; 0 when none took over 50 ms."""
    return float(page.evaluate(LONGEST_TASK_JS))


def select_control(key: str) -> str:
    """The clickable box of the keyed st.selectbox `key` (a combobox input)."""
    return f".st-key-{key} [role='combobox']"


def chart_key(view: str, panel_key: str) -> str:
    """The Streamlit key ui/panels.py gives a panel's chart."""
    return f"chart-{view}-{panel_key}"


def expected_ticks(result: ViewResult, view: str) -> dict[str, list[list[str]]]:
    """Chart key -> [x ticktext, y ticktext] of every figure of a view, as the page must show them."""
    out = {}
    for p in result.panels:
        if p.figure is None:
            continue
        layout = p.figure.layout
        xt = list(layout.xaxis.ticktext or []) if layout.xaxis else []
        yt = list(layout.yaxis.ticktext or []) if layout.yaxis else []
        out[chart_key(view, p.key)] = [xt, yt]
    return out


def app_spec(base: FigureSpec, text: str, view: str = "attention") -> FigureSpec:
    """The spec the app builds for a share link with sentence A = text, B = A reversed."""
    return dataclasses.replace(base, sentence_a=text, sentence_b=text[::-1], views=(view,), theme=APP_THEME)


def share_query(spec: FigureSpec) -> dict[str, str]:
    """A share link's query of `spec` (ui/state.py share_query: non-default fields, the view always)."""
    return {**spec.to_query(), "views": ",".join(spec.views)}


def app_url(server_url: str, spec: FigureSpec) -> str:
    """A share link of `spec` on the server at server_url."""
    return f"{server_url}?{urlencode(share_query(spec))}"


_models = Models(load_model)
PROBE_PANEL = "attention-weights"  # its first z values tell two sentences of the same length apart
PROBE_VALUES = 8


def z_probe(result: ViewResult, panel_key: str = PROBE_PANEL, count: int = PROBE_VALUES) -> list[float | None]:
    """The first `count` z values of row 0 of a panel's first trace (None for an empty, masked cell)."""
    fig = next(p.figure for p in result.panels if p.key == panel_key)
    row = np.asarray(fig.data[0].z, dtype=np.float64)[0, :count]
    return [None if np.isnan(v) else float(v) for v in row]


def z_sums(result: ViewResult, view: str) -> dict[str, float]:
    """Chart key -> the sum of the finite z values of its first trace, for every chart whose first trace is a
    heatmap: what tells two sentences of one length apart in whichever chart is on the screen (the top one,
    Q/K/V, is labelled by position too over 48 tokens)."""
    out = {}
    for p in result.panels:
        if p.figure is None or not p.figure.data or p.figure.data[0].type != "heatmap":
            continue
        z = np.asarray(p.figure.data[0].z, dtype=np.float64)
        out[chart_key(view, p.key)] = float(z[np.isfinite(z)].sum())
    return out


def expected_for(spec: FigureSpec) -> dict:
    """DRAWN_JS's argument for a spec: every chart's tick labels and z sum, and the probe of the weights
    chart (its rows sum to 1: its z sum is the same for any sentence of that length)."""
    view = spec.views[0]
    result = build_view(view, spec, _models)
    arg = {"charts": expected_ticks(result, view), "probes": {}, "sums": z_sums(result, view)}
    if any(p.key == PROBE_PANEL for p in result.panels):
        arg["probes"][chart_key(view, PROBE_PANEL)] = z_probe(result)
    return arg


def launch(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


def wait_drawn(page, expect: dict, timeout_s: float, polling="raf", visible: bool = False) -> None:
    """Until DRAWN_JS holds for `expect` (from expected_for): for every chart of the view, or (visible)
    for those on the screen."""
    page.wait_for_function(DRAWN_JS, arg=dict(expect, visible=visible), polling=polling, timeout=timeout_s * 1e3)


def wait_shown(page, expect: dict, timeout_s: float) -> tuple[float, float]:
    """Seconds from now until the charts on the screen show `expect`, and until every chart does."""
    start = time.perf_counter()
    wait_drawn(page, expect, timeout_s, visible=True)
    shown = time.perf_counter() - start
    wait_drawn(page, expect, timeout_s)
    return shown, time.perf_counter() - start


@dataclasses.dataclass
class BrowserTiming:
    """Seconds per repeat, until the charts on the screen show the change (load_s, redraw_s, head_s,
    layer_s) and until every chart of the view does (the same names + "_all"; ui/chart.py draws the
    charts below the screen when the page is idle)."""
    load_s: list[float]
    redraw_s: list[float]  # a new sentence: the fragment reruns, with the forward pass
    head_s: list[float] = dataclasses.field(default_factory=list)  # only the head: the fragment reruns
    layer_s: list[float] = dataclasses.field(default_factory=list)  # only the layer
    load_all_s: list[float] = dataclasses.field(default_factory=list)
    redraw_all_s: list[float] = dataclasses.field(default_factory=list)
    head_all_s: list[float] = dataclasses.field(default_factory=list)
    layer_all_s: list[float] = dataclasses.field(default_factory=list)
    # the longest main-thread task (ms) while each of those redrew (longest_task_ms)
    tasks_ms: dict[str, list[float]] = dataclasses.field(
        default_factory=lambda: {"redraw": [], "head": [], "layer": []})


def pick(page, key: str, label: str, expect: dict, timeout_s: float) -> tuple[float, float]:
    """Open the select box `key`, pick the option `label`; seconds from the pick to the charts on the screen
    drawn, and to every chart drawn."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.locator(select_control(key)).click()
    option = page.get_by_role("option", name=label, exact=True)
    try:
        option.wait_for(timeout=2000)
    except PlaywrightTimeout:  # the click only focused the box (it happens in the sidebar): open it
        page.keyboard.press("ArrowDown")
        option.wait_for(timeout=timeout_s * 1e3)
    # Playwright's click first waits until the option is visible, still (two animation frames alike)
    # and not covered: while the list still opens that wait is tens of ms, and not the app's. So wait
    # first (a trial click), then click at the option's centre at once, as a hand would.
    option.click(trial=True)
    box = option.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    return wait_shown(page, expect, timeout_s)


def switch_specs(spec: FigureSpec) -> tuple[FigureSpec, FigureSpec | None]:
    """(only the next head, then also the next layer; None with one layer) after `spec`."""
    head = dataclasses.replace(spec, head=(spec.head + 1) % spec.n_heads)
    layer = dataclasses.replace(head, layer=(spec.layer + 1) % spec.n_layers) if spec.n_layers > 1 else None
    return head, layer


def time_page(browser, server: Server, base: FigureSpec, tokens: int, repeats: int,
              timeout_s: float = 120.0, switches: bool = True) -> BrowserTiming:
    """`repeats` fresh contexts: load a share link and wait for the charts on the screen, then for every
    chart; then a new sentence; then (switches) only the head, then only the layer."""
    n = source_tokens(tokens)
    timing = BrowserTiming([], [])
    for r in range(repeats):
        first = app_spec(base, sentence(n, salt=2 * r))
        second = app_spec(base, sentence(n, salt=2 * r + 1))
        expect_first, expect_second = expected_for(first), expected_for(second)
        if expect_first == expect_second:
            raise ValueError(f"two sentences of {n} tokens that the charts cannot tell apart")
        head, layer = switch_specs(second) if switches else (None, None)
        expect_head = expected_for(head) if head else None
        expect_layer = expected_for(layer) if layer else None
        if head and expect_head == expect_second or layer and expect_layer == expect_head:
            raise ValueError(f"two heads or layers at {n} tokens that the charts cannot tell apart")
        context = browser.new_context(viewport=VIEWPORT)
        try:
            page = context.new_page()
            start = time.perf_counter()
            page.goto(app_url(server.url, first), wait_until="commit")
            shown, drawn = wait_shown(page, expect_first, timeout_s)
            timing.load_s.append(time.perf_counter() - start - drawn + shown)
            timing.load_all_s.append(time.perf_counter() - start)
            page.evaluate(WATCH_TASKS_JS)
            box = page.locator(INPUT_A)
            box.fill(second.sentence_a)
            longest_task_ms(page)  # forget the tasks of typing
            box.press("Enter")
            shown, drawn = wait_shown(page, expect_second, timeout_s)
            timing.redraw_s.append(shown)
            timing.redraw_all_s.append(drawn)
            timing.tasks_ms["redraw"].append(longest_task_ms(page))
            if head:
                shown, drawn = pick(page, "head", f"head {head.head}", expect_head, timeout_s)
                timing.head_s.append(shown)
                timing.head_all_s.append(drawn)
                timing.tasks_ms["head"].append(longest_task_ms(page))
            if layer:
                shown, drawn = pick(page, "layer", f"layer {layer.layer}", expect_layer, timeout_s)
                timing.layer_s.append(shown)
                timing.layer_all_s.append(drawn)
                timing.tasks_ms["layer"].append(longest_task_ms(page))
        finally:
            context.close()
    return timing


def browser_records(ctx: Context, specs: dict[str, FigureSpec], repeats: int,
                    app: Path | None = None) -> list[Record]:
    from playwright.sync_api import sync_playwright

    records = []
    kwargs = {"app": app} if app else {}
    # The server runs with the app's own threads (lab.threads.app_torch_threads: one torch thread
    # unless OMP_NUM_THREADS is set), as `streamlit run app.py` does.
    with app_server(torch_threads=None, **kwargs) as server, sync_playwright() as p:
        browser = launch(p)
        try:
            for name, base in specs.items():
                # warm-up: the first session loads the model and compiles the page (not timed)
                time_page(browser, server, base, min(ctx.sizes), 1)
                for T in ctx.sizes:
                    t = time_page(browser, server, base, T, repeats)
                    target = REDRAW_TARGET if (name == "app" and T == REDRAW_TARGET_TOKENS) else None
                    ms = lambda times: statistics.median(times) * 1e3  # noqa: E731
                    records += [
                        Record(f"{name}.browser_load_ms", T, ms(t.load_s), "ms"),
                        Record(f"{name}.browser_load_all_ms", T, ms(t.load_all_s), "ms"),
                        Record(f"{name}.browser_redraw_ms", T, ms(t.redraw_s), "ms", target),
                        Record(f"{name}.browser_redraw_all_ms", T, ms(t.redraw_all_s), "ms"),
                    ]
                    for what, times, every in (("head", t.head_s, t.head_all_s), ("layer", t.layer_s, t.layer_all_s)):
                        if times:
                            records += [
                                Record(f"{name}.browser_{what}_ms", T, ms(times), "ms"),
                                Record(f"{name}.browser_{what}_all_ms", T, ms(every), "ms"),
                                Record(f"{name}.browser_{what}_ratio", T, median_ratio(times, t.redraw_s), "x",
                                       SWITCH_TARGET),
                            ]
                    interactive = INTERACTIVE_TARGET if T == INTERACTIVE_TOKENS else None
                    for what, tasks in t.tasks_ms.items():
                        if tasks:  # the worst repeat: one long freeze is what a user notices
                            records.append(Record(f"{name}.browser_{what}_longest_task_ms", T, max(tasks), "ms",
                                                  interactive))
            records.append(Record("browser.server_rss_MiB", None, server.rss(), "MiB"))
        finally:
            browser.close()
    return records


@figure(
    "browser",
    "A4. Headless Chromium: page load, new sentence, only the head, only the layer -> charts drawn",
    "streamlit run app.py on 127.0.0.1, Playwright + /usr/bin/chromium (1400 x 900 window); attention "
    "view of a share link; a fresh browser context per repeat; 'drawn' = no stale element, no running "
    "script, and the charts' tick labels, z sums (and the weights chart's first values) equal those "
    "lab.views.build_view gives for the new setting. load/redraw/head/layer: until the charts on the "
    "screen are drawn (what the user sees; ui/chart.py draws those first); _all: until every chart of the "
    "view is, those below the screen drawn one per idle moment. head/layer: from picking the option (a "
    "fragment rerun, cached forward); ratio = that time / the new sentence's (a fragment rerun too, with "
    "the forward pass), on the screen, paired per repeat. Median of repeats. longest_task: the longest "
    "main-thread task (Long Tasks API, over 50 ms; 0 = none) until every chart was drawn, the worst repeat; "
    "at 512 tokens <= 200 ms keeps the page interactive (a click or key waits at most that long).",
)
def app_browser(ctx: Context) -> list[Record]:
    if not Path(CHROMIUM).exists():
        ctx.note(f"skipped: {CHROMIUM} is missing")
        return []
    specs = app_specs(ctx) or {"app": APP_SPECS["app"]}
    return browser_records(ctx, specs, repeats=2 if ctx.quick else 3)
