"""Static export: Plotly figures to SVG, PDF and PNG with kaleido 1.x and the system's Chromium.

    python -m viz.export SPEC.json --out DIR [--trace]

renders every panel of every view a FigureSpec names, in spec.format at spec.size (width x height; 0 = the theme's own)
(PNG x spec.scale), plus each panel's numbers as CSV and the spec itself, so a figure in a paper
can be regenerated exactly. Nothing is written unless everything validated and rendered.

One headless Chromium is kept open in a background thread (`start_server`): the first export
pays ~2.5 s to start it, later ones take ~0.2 s. Rendering is thread-safe (Streamlit runs
deferred downloads on other threads) and needs no network (MathJax is off; plotly.js is local).

No Streamlit here; torch-heavy imports happen only inside the CLI.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import copy
import io
import json
import os
import re
import struct
import sys
import tempfile
import threading
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import plotly.graph_objects as go

from viz.crisp import crisp_pdf, crisp_svg

if TYPE_CHECKING:  # lab is imported only where a spec is built (the CLI, not the app's render)
    from lab.views import ViewResult

FORMATS = ("svg", "pdf", "png")
MIME = {"svg": "image/svg+xml", "pdf": "application/pdf", "png": "image/png",
        "csv": "text/csv", "json": "application/json"}
CSS_DPI = 96  # Plotly sizes are CSS pixels: 96 per inch, so PNG scale s is 96*s dpi
MAX_PIXELS_PER_SIDE = 16_384  # Chromium cannot paint a larger canvas
START_TIMEOUT_S = 60.0
RENDER_TIMEOUT_S = 60.0
INSTALL_HELP = (
    "Static export (SVG, PDF, PNG) needs Chromium on the machine that runs Attention Lab: "
    "install it with `apt-get install -y chromium` (Debian/Ubuntu), or set BROWSER_PATH to a "
    "Chrome or Chromium executable."
)


class ExportError(RuntimeError):
    """An export that cannot be done; the message says why in one line."""


class NoBrowserError(ExportError):
    """No Chromium/Chrome was found: the message says how to install one."""


# -- the browser ------------------------------------------------------------------------------
def find_browser() -> str | None:
    """Path of the Chromium/Chrome kaleido will use: BROWSER_PATH, else PATH, else typical places."""
    env = os.environ.get("BROWSER_PATH")
    if env:
        return env if os.path.isfile(env) and os.access(env, os.X_OK) else None
    try:
        from choreographer.browsers.chromium import Chromium

        found = Chromium.find_browser(skip_local=False)
    except Exception:  # noqa: BLE001 - any failure to look means "not found"
        found = None
    for path in (found, "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"):
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def browser_available() -> bool:
    return find_browser() is not None


class _Server:
    """One kaleido.Kaleido (one headless Chromium tab) living in its own event-loop thread.

    kaleido's own start_sync_server() serialises callers through one shared return queue, which
    can hand one thread's image to another when two Streamlit sessions export at once; here each
    call gets its own future (asyncio.run_coroutine_threadsafe), with a timeout.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._kaleido = None
        self.starts = 0  # how many times a browser was started (tests: once per session)
        self._atexit = False

    @property
    def running(self) -> bool:
        return self._kaleido is not None

    def start(self) -> None:
        with self._lock:
            if self._kaleido is not None:
                return
            path = find_browser()
            if path is None:
                raise NoBrowserError(INSTALL_HELP)
            import kaleido

            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="kaleido-server", daemon=True)
            thread.start()

            async def open_browser():
                # mathjax=False: no CDN fetch (no network at run time); plotly.js comes from plotly.py
                k = kaleido.Kaleido(n=1, timeout=RENDER_TIMEOUT_S, mathjax=False, path=path)
                await k.open()
                return k

            try:
                k = asyncio.run_coroutine_threadsafe(open_browser(), loop).result(START_TIMEOUT_S)
            except BaseException as exc:
                loop.call_soon_threadsafe(loop.stop)
                thread.join(5)
                raise ExportError(f"could not start Chromium at {path}: {_one_line(exc)}") from None
            self._loop, self._thread, self._kaleido = loop, thread, k
            self.starts += 1
            if not self._atexit:
                atexit.register(self.stop)
                self._atexit = True

    def render(self, fig: dict, opts: dict) -> bytes:
        self.start()
        loop, k = self._loop, self._kaleido
        future = asyncio.run_coroutine_threadsafe(k.calc_fig(fig, opts=opts), loop)
        try:
            return future.result(RENDER_TIMEOUT_S + 5)
        except TimeoutError:
            future.cancel()
            self.stop()  # a wedged browser: the next call starts a fresh one
            raise ExportError(f"rendering took longer than {RENDER_TIMEOUT_S:.0f} s") from None
        except Exception as exc:  # noqa: BLE001
            if not self._browser_alive():
                self.stop()
            message = _one_line(exc)
            if "axis scaling" in message:  # plotly.js: margins + fonts leave no room for the plot
                message = (f"the plot does not fit in {opts['width']}x{opts['height']} px with this "
                           "theme's fonts and margins: make width/height larger")
            raise ExportError(f"rendering failed: {message}") from None

    def _browser_alive(self) -> bool:
        proc = getattr(self._kaleido, "subprocess", None)
        return proc is not None and proc.poll() is None

    def stop(self) -> None:
        with self._lock:
            loop, thread, k = self._loop, self._thread, self._kaleido
            self._loop = self._thread = self._kaleido = None
        if loop is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(k.close(), loop).result(10)
        except BaseException:  # noqa: BLE001 - closing a dead browser may fail; we stop anyway
            pass
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


_SERVER = _Server()


def start_server() -> None:
    """Start the shared Chromium now (blocking, ~2.5 s); later renders reuse it."""
    _SERVER.start()


def warm_up() -> None:
    """Start the shared Chromium in the background if a browser exists; never raises."""
    if _SERVER.running or not browser_available():
        return

    def go_() -> None:
        try:
            _SERVER.start()
        except ExportError:
            pass

    threading.Thread(target=go_, name="kaleido-warm-up", daemon=True).start()


def stop_server() -> None:
    _SERVER.stop()


def server_running() -> bool:
    return _SERVER.running


def server_starts() -> int:
    """How many times this process started a browser (a warm server keeps this at 1)."""
    return _SERVER.starts


# -- figures to bytes -------------------------------------------------------------------------
def figure_dict(fig: go.Figure | dict) -> dict:
    """The figure as a plain dict with fixed trace uids (Plotly derives SVG ids from them)."""
    data = copy.deepcopy(fig) if isinstance(fig, dict) else fig.to_dict()
    for i, trace in enumerate(data.get("data", [])):
        trace["uid"] = f"t{i}"
    return data


def figure_json(fig: go.Figure | dict) -> str:
    """Canonical JSON of a figure: the same figure gives the same text (cache key, tests)."""
    from plotly.utils import PlotlyJSONEncoder  # numpy arrays as plotly.js reads them

    return json.dumps(figure_dict(fig), cls=PlotlyJSONEncoder, sort_keys=True, ensure_ascii=False)


def check_size(fmt: str, width: int, height: int, scale: float = 1.0) -> None:
    """Raise ValueError naming the field when the image cannot be made."""
    if fmt not in FORMATS:
        raise ValueError(f"format: {fmt!r} is not one of {list(FORMATS)}")
    for name, value in (("width", width), ("height", height)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 10:
            raise ValueError(f"{name}: expected a whole number of pixels >= 10, got {value!r}")
    if not scale > 0:
        raise ValueError(f"scale: must be positive, got {scale!r}")
    if fmt == "png":
        for name, value in (("width", width), ("height", height)):
            if round(value * scale) > MAX_PIXELS_PER_SIDE:
                raise ValueError(
                    f"scale: {name} {value} x scale {scale:g} = {round(value * scale)} px is more "
                    f"than the {MAX_PIXELS_PER_SIDE} px Chromium can draw; lower scale or {name}"
                )


def render(fig: go.Figure | dict, fmt: str, *, width: int, height: int, scale: float = 1.0) -> bytes:
    """The figure as SVG, PDF or PNG bytes at width x height CSS px (PNG: x scale).

    Deterministic: the same figure gives byte-identical SVG and PNG, and a PDF that differs in
    nothing (its creation date is pinned). A PNG carries its dpi (96 x scale) in a pHYs chunk,
    so word processors and LaTeX place it at width/96 inches.
    """
    check_size(fmt, width, height, scale)
    opts = {"format": fmt, "width": width, "height": height, "scale": scale if fmt == "png" else 1}
    raw = _SERVER.render(figure_dict(fig), opts)
    if fmt == "svg":
        return _stable_svg(crisp_svg(raw))  # heatmaps crisp in any viewer (viz/crisp.py)
    if fmt == "pdf":
        return crisp_pdf(_stable_pdf(raw))  # dates pinned first: the rewritten file's /ID hashes them
    return png_with_dpi(raw, CSS_DPI * scale)


def render_json(fig_json: str, fmt: str, *, width: int, height: int, scale: float = 1.0) -> bytes:
    """render() for a figure given as JSON text (what caches key on)."""
    return render(json.loads(fig_json), fmt, width=width, height=height, scale=scale)


_SVG_UID = re.compile(rb'id="topdefs-([0-9a-f]+)"')


def _stable_svg(svg: bytes) -> bytes:
    """Replace plotly.js's random per-plot uid (in clip-path and gradient ids) by a fixed one."""
    m = _SVG_UID.search(svg)
    if m:
        svg = svg.replace(m.group(1), b"0" * len(m.group(1)))
    return svg


_PDF_DATE = re.compile(rb"/(CreationDate|ModDate) \(D:[0-9]{14}[^)]*\)")


def _stable_pdf(pdf: bytes) -> bytes:
    """Pin the creation/modification dates (same length, so the xref offsets stay valid)."""

    def pin(m: re.Match) -> bytes:
        head = b"/" + m.group(1) + b" (D:"
        body = m.group(0)[len(head):-1]
        fixed = b"20000101000000" + body[14:]
        return head + fixed + b")"

    return _PDF_DATE.sub(pin, pdf)


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) in pixels from the IHDR chunk."""
    if png[:8] != b"\x89PNG\r\n\x1a\n" or png[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    return struct.unpack(">II", png[16:24])


def png_dpi(png: bytes) -> float | None:
    """The dpi a PNG's pHYs chunk states (None without one)."""
    for kind, body in _png_chunks(png):
        if kind == b"pHYs" and body[8] == 1:  # unit 1 = metre
            return struct.unpack(">I", body[:4])[0] * 0.0254
    return None


def _png_chunks(png: bytes) -> Iterable[tuple[bytes, bytes]]:
    pos = 8
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        yield png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        pos += 12 + length


def png_with_dpi(png: bytes, dpi: float) -> bytes:
    """The PNG with a pHYs chunk stating `dpi` (any earlier pHYs dropped)."""
    ppm = round(dpi / 0.0254)
    body = struct.pack(">IIB", ppm, ppm, 1)
    phys = struct.pack(">I", len(body)) + b"pHYs" + body + struct.pack(">I", zlib.crc32(b"pHYs" + body))
    out = io.BytesIO()
    out.write(png[:8])
    for kind, data in _png_chunks(png):
        if kind == b"pHYs":
            continue
        out.write(struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data)))
        if kind == b"IHDR":
            out.write(phys)
    return out.getvalue()


# -- files ------------------------------------------------------------------------------------
def write_atomic(path: str | os.PathLike, data: bytes | str) -> Path:
    """Write via a temporary file in the same folder and os.replace: never a half-written file."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def export_figure(fig: go.Figure | dict, path: str | os.PathLike, *, width: int, height: int,
                  scale: float = 1.0, fmt: str | None = None) -> Path:
    """Render one figure to `path` (format from the suffix unless fmt is given)."""
    path = Path(path)
    fmt = fmt or path.suffix.lstrip(".").lower()
    return write_atomic(path, render(fig, fmt, width=width, height=height, scale=scale))


def table_csv(table) -> bytes:
    """A panel's numbers as CSV at full float precision (the CSV is the data), the same bytes as
    the app's CSV button: UTF-8 with a byte-order mark, so spreadsheets read Chinese correctly."""
    return table.to_csv(lineterminator="\n").encode("utf-8-sig")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


# -- a spec's figures -------------------------------------------------------------------------
@dataclass
class Planned:
    """One file to write: its name and its bytes."""

    name: str
    data: bytes


def validate_for_export(spec, models) -> None:
    """Settings the spec accepts but this spec's model cannot draw: raise SpecError naming the field.

    The app clamps such values; an export must be exact, so it refuses them instead.
    """
    from lab.spec import SpecError

    fmt, scale = spec.format, spec.scale if spec.format == "png" else 1.0
    try:
        check_size(fmt, *spec.size, scale)
    except ValueError as exc:
        field, _, message = str(exc).partition(": ")
        raise SpecError(field, message) from None
    if "translate" in spec.views and spec.model != "zh-en":
        raise SpecError("views", "'translate' needs model 'zh-en' (the random model does not translate)")
    if not spec.sentence_a.strip() and not spec.sentence_b.strip():
        raise SpecError("sentence_a", "both sentences are empty: nothing to draw")
    attention_views = {"attention", "heads", "query", "translate"} & set(spec.views)
    if not attention_views:
        return
    config = models.model(spec).model.config
    n_layers = config.n_layers if spec.block == "encoder self" else config.decoder_layers
    if spec.layer >= n_layers:
        raise SpecError("layer", f"layer {spec.layer} does not exist: the {spec.block} stack has "
                                 f"{n_layers} layers (0..{n_layers - 1})")
    for name, values in (("head", [spec.head]), ("heads", list(spec.heads))):
        bad = [h for h in values if h >= config.n_heads]
        if bad:
            raise SpecError(name, f"head {bad[0]} does not exist: the model has {config.n_heads} "
                                  f"heads (0..{config.n_heads - 1})")
    text = spec.sentence_a if spec.sentence == "a" else spec.sentence_b
    if not text.strip():
        raise SpecError("sentence", f"sentence {spec.sentence!r} is empty")
    if "query" in spec.views:
        run = models.run(spec)
        row = run.row(spec.sentence)
        n_queries = len(run.tgt_pieces(row) if spec.block != "encoder self" else run.src_pieces(row))
        if spec.query >= n_queries:
            raise SpecError("query", f"query {spec.query} does not exist: the {spec.block} block "
                                     f"has {n_queries} query tokens (0..{n_queries - 1})")


def build_spec(spec, models) -> list[tuple[str, ViewResult]]:
    """Every view of `spec` built (figures and tables in memory), each checked drawable: raise
    SpecError naming the field otherwise. Needs no browser, so a bad spec is reported as such on a
    machine without one. Returns [(view, its ViewResult)] in spec.views order."""
    from lab.spec import SpecError
    from lab.views import build_view

    validate_for_export(spec, models)
    built = []
    for view in spec.views:
        result = build_view(view, spec, models)
        if result.hint and not result.panels:
            raise SpecError("views", f"{view!r} has nothing to draw: {result.hint}")
        built.append((view, result))
    return built


def plan_spec(spec, models, *, trace_format: str | None = None, warn=None,
              built: list[tuple[str, ViewResult]] | None = None) -> list[Planned]:
    """Everything `python -m viz.export` writes for `spec`, rendered in memory (nothing on disk).

    `built` is build_spec(spec, models) where the caller has it already."""
    built = build_spec(spec, models) if built is None else built
    ext = spec.format
    scale = spec.scale if ext == "png" else 1.0
    files: list[Planned] = [Planned("spec.json", (spec.to_json() + "\n").encode("utf-8"))]
    manifest = []
    for view, result in built:
        for note in result.notices:
            if warn:
                warn(f"{view}: {note}")
        for panel in result.panels:
            stem = f"{view}-{panel.key}"
            entry = {"view": view, "panel": panel.key, "title": panel.title, "files": []}
            if panel.caption:
                entry["caption"] = panel.caption
            if panel.figure is not None:
                wanted = panel.figure.layout.height
                if warn and wanted and wanted > spec.size[1]:
                    warn(f"{stem}: drawn at height {spec.size[1]} px; this figure is laid out for "
                         f"{wanted} px (raise `height` if it looks crowded)")
                files.append(Planned(f"{stem}.{ext}", render(panel.figure, ext, width=spec.size[0],
                                                              height=spec.size[1], scale=scale)))
                entry["files"].append(f"{stem}.{ext}")
            if panel.table is not None:
                files.append(Planned(f"{stem}.csv", table_csv(panel.table)))
                entry["files"].append(f"{stem}.csv")
            manifest.append(entry)
    if trace_format:
        from lab.tracefile import trace_files

        run = models.run(spec)
        config = models.model(spec).model.config
        for name, data in trace_files(run, spec, fmt=trace_format, config=config).items():
            files.append(Planned(name, data))
            manifest.append({"view": "trace", "panel": "trace", "title": "The whole trace of the run",
                             "files": [name]})
    files.append(Planned("manifest.json", (json.dumps(manifest, ensure_ascii=False, indent=2) + "\n").encode()))
    return files


def cli_models():
    """Models for the CLI: each model built once, each spec's run traced once."""
    import functools

    from lab.compute import load_model, run
    from lab.views import Models

    load = functools.lru_cache(maxsize=8)(load_model)

    @functools.lru_cache(maxsize=8)
    def trace(spec):
        return run(load(_model_key(spec)), spec.sentence_a, spec.sentence_b, spec.mask)

    return Models(load, trace)


def _model_key(spec):
    from lab.compute import model_fields

    return model_fields(spec)


def export_spec(spec, out_dir: str | os.PathLike, *, trace_format: str | None = None,
                models=None, warn=None, built: list[tuple[str, ViewResult]] | None = None) -> list[Path]:
    """Render everything first, then write each file atomically into out_dir; returns the paths."""
    models = models or cli_models()
    planned = plan_spec(spec, models, trace_format=trace_format, warn=warn, built=built)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return [write_atomic(out / p.name, p.data) for p in planned]


# -- command line -----------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m viz.export",
        description=(
            "Render the figures of an Attention Lab figure spec: for each view in spec.views, every "
            "panel as <view>-<panel>.<format> (spec.format at spec.size, PNG x "
            "spec.scale, themed with spec.theme), its numbers as <view>-<panel>.csv, the spec "
            "itself as spec.json (to regenerate the figures) and manifest.json (titles, captions)."
        ),
        epilog=("Example: python -m viz.export spec.json --out figures --trace. The app's "
                "'Share this view' box shows the spec of the current view. Exit status: 0 done, 2 bad "
                "spec or arguments, 3 no browser, 1 rendering failed."),
    )
    p.add_argument("spec", help="the figure spec, a JSON file ('-' reads standard input)")
    p.add_argument("--out", required=True, help="folder to write into (created if missing)")
    p.add_argument("--trace", action="store_true",
                   help="also write the whole trace of the run (trace.npz + trace.json)")
    p.add_argument("--trace-format", choices=("npz", "safetensors"), default="npz",
                   help="file format of --trace (default: npz)")
    p.add_argument("--quiet", action="store_true", help="print nothing but errors")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)

    def fail(message: str, code: int) -> int:
        print(f"viz.export: {message}", file=sys.stderr)
        return code

    try:
        text = sys.stdin.read() if args.spec == "-" else Path(args.spec).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return fail(f"cannot read {args.spec}: {_one_line(exc)}", 2)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        return fail(f"--out {args.out} exists and is not a folder", 2)

    from lab.spec import FigureSpec, SpecError

    models = cli_models()
    try:  # the whole spec is checked (and its views built) before a browser is asked for
        spec = FigureSpec.from_json(text)
        built = build_spec(spec, models)
    except SpecError as exc:
        return fail(f"bad spec: {exc}", 2)
    except Exception as exc:  # noqa: BLE001 - one line, never a traceback
        return fail(f"{type(exc).__name__}: {_one_line(exc)}", 1)
    if not browser_available():
        return fail(INSTALL_HELP, 3)
    warn = None if args.quiet else (lambda m: print(f"note: {m}", file=sys.stderr))
    try:
        paths = export_spec(spec, out, trace_format=args.trace_format if args.trace else None,
                            models=models, warn=warn, built=built)
    except SpecError as exc:
        return fail(f"bad spec: {exc}", 2)
    except NoBrowserError as exc:
        return fail(str(exc), 3)
    except Exception as exc:  # noqa: BLE001 - one line, never a traceback
        return fail(f"{type(exc).__name__}: {_one_line(exc)}", 1)
    if not args.quiet:
        for path in paths:
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
