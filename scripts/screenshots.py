"""Full-page screenshots of every view of the app (it starts its own server), for looking at, not for tests.

    python scripts/screenshots.py [--out artifacts/screenshots] [--views 3,5|all] [--width 1500]
        [--prefix before-] [--query "sentence_a=...&theme=paper"] [--dark]

Starts `streamlit run app.py` on a free loopback port, opens each view in headless Chromium
(/usr/bin/chromium) and saves PREFIX + <n>-<first word of the view's name>.png (3-attention.png,
6-order.png). Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
VIEWS = ["tokens", "positional", "attention", "heads", "query", "order", "translate"]  # lab.spec.VIEWS
VIEW_LABELS = ["1 · Tokens", "2 · Positional encoding", "3 · Attention step by step", "4 · Heads",
               "5 · One query", "6 · Order & positional encoding", "7 · Translate"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def streamlit_server(timeout: float = 90.0):
    """Yield (base URL, process) of `streamlit run app.py` on a free loopback port; stop it afterwards.

    The server's log goes to a temporary file (a pipe nobody reads could fill up and block it); it is
    printed when the server fails to start.
    """
    port = free_port()
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    log = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True,
    )
    url = f"http://127.0.0.1:{port}"

    def server_log() -> str:
        log.seek(0)
        return log.read()[-5000:]

    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"streamlit exited early:\n{server_log()}")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"streamlit did not answer on {url} within {timeout:.0f} s:\n{server_log()}")
            time.sleep(0.3)
        yield url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


RUNNING = '[data-testid="stStatusWidgetRunningIcon"]'


WAITING = "[data-waiting]"  # a chart not yet drawn with its figure (ui/chart.py draws those off the screen when idle)


def wait_idle(page, timeout_ms: int = 90_000) -> None:
    """Wait until Streamlit has run the script (the app's title is there and the running icon is gone)
    and every chart has drawn its figure (none waits for an idle moment)."""
    page.wait_for_selector("h1:has-text('Attention Lab')", timeout=timeout_ms)
    with contextlib.suppress(Exception):  # a quick rerun may finish before the icon shows
        page.wait_for_selector(RUNNING, timeout=1000)
    page.wait_for_selector(RUNNING, state="detached", timeout=timeout_ms)
    page.wait_for_timeout(500)  # plotly.js loads and the charts' script runs after the script has finished
    # settled: Streamlit has run and every chart element holds a chart drawn with its figure (one below the
    # screen is drawn when the page is idle: ui/chart.py) or saying why it cannot be; its value: how many
    settled = (f"() => {{ if (document.querySelector('{WAITING}, {RUNNING}')) return -1;"
               " const els = [...document.querySelectorAll('[data-testid=\"stMain\"] [class*=\"st-key-chart-\"]')];"
               " const ok = els.every(el => { const gd = el.querySelector('.lab-chart'); return gd && (gd._fullLayout"
               " || gd.parentElement.querySelector('.lab-chart-message').textContent); });"
               " return ok ? els.length : -1; }")
    last = None
    for _ in range(40):  # settled twice alike, 300 ms apart: a run that reruns the app (a view that switches the
        page.wait_for_function(f"() => ({settled})() >= 0", timeout=timeout_ms)  # model, a page turning dark)
        now = page.evaluate(settled)  # puts its charts on the page after a pause
        if now >= 0 and now == last:
            return
        last = now
        page.wait_for_timeout(300)


def full_screenshot(page, path: str, width: int = 1500) -> None:
    """Streamlit scrolls inside its own container, so grow the viewport to the content, then shoot."""
    height = page.evaluate(
        "() => Math.max(...['stMain', 'stSidebarContent'].map(id => "
        "(document.querySelector(`[data-testid=${id}]`) || {scrollHeight: 0}).scrollHeight))"
    )
    page.set_viewport_size({"width": width, "height": min(max(int(height) + 40, 800), 16000)})
    page.wait_for_timeout(600)  # plotly re-lays out to the new size
    page.screenshot(path=path, full_page=True)
    page.set_viewport_size({"width": width, "height": 1000})


# What the bare address (no query) shows: the app leaves it as it is, not writing the same page's link over it
# (ui/state.py keep_link: one history entry)
BARE = {"views": VIEWS[0], "sentence_a": "你喜欢她", "sentence_b": "她喜欢你"}


def wait_for_setting(page, key: str, value: str, timeout_ms: int = 90_000) -> None:
    """Wait until a run with `key` = `value` has finished: the app writes its settings into the URL
    (the share link) at the end of every run, but on the bare address it opened with (BARE), then the running icon
    goes away."""
    page.wait_for_function(
        "([k, v, bare]) => { const q = new URLSearchParams(window.location.search);"
        " return q.get(k) === v || (q.toString() === '' && bare === v); }",
        arg=[key, value, BARE.get(key)], timeout=timeout_ms,
    )
    wait_idle(page, timeout_ms)


def open_view(page, label: str) -> None:
    page.locator(".st-key-view").get_by_role("radio", name=label, exact=True).click()
    wait_for_setting(page, "views", VIEWS[VIEW_LABELS.index(label)])


def type_sentence(page, key: str, text: str) -> None:
    """Type into a sentence box and press Enter, then wait for the run that reads it."""
    box = page.locator(f".st-key-{key} input")
    box.fill(text)
    box.press("Enter")
    wait_for_setting(page, key, text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "artifacts" / "screenshots"),
                        help="folder to write into (default: artifacts/screenshots, git-ignored)")
    parser.add_argument("--query", default="", help="query string for the first page load (a share link)")
    parser.add_argument("--views", default="all", help="comma-separated view numbers (1-7) or 'all'")
    parser.add_argument("--prefix", default="", help="put before each file name: PREFIX3-attention.png")
    parser.add_argument("--width", type=int, default=1500, help="the browser window's width in px (default 1500)")
    parser.add_argument("--dark", action="store_true", help="the browser asks for a dark page (OS dark mode)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    labels = VIEW_LABELS if args.views == "all" else [VIEW_LABELS[int(i) - 1] for i in args.views.split(",")]
    with streamlit_server() as (url, _), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": args.width, "height": 1000},
                                color_scheme="dark" if args.dark else "light")
        page.goto(f"{url}/?{args.query}" if args.query else url)
        wait_idle(page)
        for label in labels:
            open_view(page, label)
            name = f"{args.prefix}{VIEW_LABELS.index(label) + 1}-{label.split('· ')[1].split()[0].lower()}.png"
            full_screenshot(page, str(out / name), args.width)
            print(out / name)
        browser.close()


if __name__ == "__main__":
    main()
