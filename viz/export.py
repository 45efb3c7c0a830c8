"""Static export: Plotly figures to SVG, PDF and PNG with kaleido 1.x and the system's Chromium.

Figures in, files out: `render` and `export_figure`, the CSV of a table (`table_csv`), PNG dpi and
atomic writes. Rendering a whole figure spec (`python -m lab.export SPEC.json --out DIR`) builds its
views first, so it lives with them in lab/export.py: viz knows nothing of specs, models or views.

One headless Chromium is kept open in a background thread (`start_server`): the first export
pays ~2.5 s to start it, later ones take ~0.2 s. Rendering is thread-safe (Streamlit runs
deferred downloads on other threads) and needs no network (MathJax is off; plotly.js is local).

No Streamlit, no torch and no lab here (tests/test_viz.py checks the imports).
"""

from __future__ import annotations

import asyncio
import atexit
import copy
import html
import io
import json
import logging
import math
import os
import re
import struct
import tempfile
import threading
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from viz.crisp import crisp_pdf, crisp_svg, heatmap_cells
from viz.fig import layout_value
from viz.theme import ALONE, PDF_FONTS, ROUND, SOFT_BREAK, fit_cell_values

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


def install_help() -> str:
    """INSTALL_HELP, led by what is wrong with BROWSER_PATH where it is set: find_browser() then looks nowhere else,
    and 'install it' alone sent someone whose Chromium is installed looking for the wrong fault."""
    env = os.environ.get("BROWSER_PATH")
    if env and find_browser() is None:
        return f"BROWSER_PATH={env} is not an executable file, and no other browser is looked for. {INSTALL_HELP}"
    return INSTALL_HELP


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


class _OneLine(logging.Filter):
    """A record logged with its exception (logger.exception) becomes one line: the message and the error, no
    traceback. choreographer logs 'JSONError decoding message. Ignoring' so, now and then, and carries on:
    `python -m lab.export` printed a library's traceback (a researcher's walk), where it says one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info:
            error = record.exc_info[1]
            record.msg, record.args = f"{record.getMessage()}: {one_line(error) if error else ''}".rstrip(": "), ()
            record.exc_info = record.exc_text = None
        return True


CHATTY_LOGGERS = ("choreographer.channels.pipe",)  # logs what it ignores with a traceback


def quiet_chatty_loggers() -> None:
    """_OneLine on CHATTY_LOGGERS, once. After choreographer made them: logistro's loggers have methods a plain
    logging.Logger lacks (debug2), and one made first by logging.getLogger would stand in for them."""
    import choreographer.channels.pipe  # noqa: F401  (its logger, made by logistro)

    for name in CHATTY_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _OneLine) for f in logger.filters):
            logger.addFilter(_OneLine())


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

    def start(self) -> tuple[asyncio.AbstractEventLoop, Any]:
        """The running (loop, Kaleido), started first where none runs. Read under the lock: a render on another
        thread that stops a wedged browser cannot leave this caller half of a server (a None where a Kaleido was)."""
        with self._lock:
            if self._kaleido is not None:
                return self._loop, self._kaleido
            path = find_browser()
            if path is None:
                raise NoBrowserError(install_help())
            import kaleido

            quiet_chatty_loggers()
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="kaleido-server", daemon=True)
            thread.start()

            made = []  # the Kaleido, once made: closed if it does not open in time (its Chromium may have started)

            async def open_browser():
                # mathjax=False: no CDN fetch (no network at run time); plotly.js comes from plotly.py
                made.append(kaleido.Kaleido(n=1, timeout=RENDER_TIMEOUT_S, mathjax=False, path=path))
                await made[0].open()
                return made[0]

            opening = asyncio.run_coroutine_threadsafe(open_browser(), loop)
            try:
                k = opening.result(START_TIMEOUT_S)
            except BaseException as exc:
                opening.cancel()
                if made:
                    try:
                        asyncio.run_coroutine_threadsafe(made[0].close(), loop).result(10)
                    except BaseException:  # noqa: BLE001 - closing a half-opened browser may fail; we stop anyway
                        pass
                loop.call_soon_threadsafe(loop.stop)
                thread.join(5)
                raise ExportError(f"could not start Chromium at {path}: {one_line(exc)}") from None
            self._loop, self._thread, self._kaleido = loop, thread, k
            self.starts += 1
            if not self._atexit:
                atexit.register(self.stop)
                self._atexit = True
            return loop, k

    def render(self, fig: dict, opts: dict) -> bytes:
        loop, k = self.start()
        if not loop.is_running():  # stopped by a render on another thread since: a coroutine sent now would never run
            raise ExportError("the browser was restarted during this export: try again")
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
            message = one_line(exc)
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

    def start_quietly() -> None:
        try:
            _SERVER.start()
        except ExportError:
            pass

    threading.Thread(target=start_quietly, name="kaleido-warm-up", daemon=True).start()


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


def alone(data: dict) -> dict:
    """A figure dict as drawn on its own (an export, one file per figure): the margins it shared with the
    figures beside it in the app back to its own (layout.meta[viz.theme.ALONE]), its cell values fitted to
    the cells so laid out; in place. Others as they are."""
    layout = data.get("layout") or {}
    own = (layout.get("meta") or {}).get(ALONE) if isinstance(layout.get("meta"), dict) else None
    if own:
        layout["margin"] = {**(layout.get("margin") or {}), **own["margin"]}
        fit_cell_values(data.get("data") or [], layout, own["theme"])
    return data


def round_height(data: dict, width: int, height: int) -> int:
    """The height to draw a figure of round panels at (layout.meta[ROUND]: viz.positional.pe_rotation's
    circles, kept round, their y axes giving up domain toward the top): its plot only as tall as its widest
    panel needs at `width`, not a blank band under the circles (ui/chart.js roundPanels, the app's twin).
    `height` for any other figure, or where the panels need all of it."""
    layout = data.get("layout") or {}
    if not (layout.get("meta") or {}).get(ROUND):
        return height
    m = layout.get("margin") or {}
    plot_w, plot_h = width - m.get("l", 0) - m.get("r", 0), height - m.get("t", 0) - m.get("b", 0)
    need = 0.0
    for name, x in layout.items():
        y = layout.get("y" + name[1:]) if re.fullmatch(r"xaxis\d*", name) else None
        if not y or not x.get("range") or not y.get("range"):
            continue
        (x0, x1), (y0, y1) = x.get("domain") or (0, 1), y.get("domain") or (0, 1)
        span = abs(y["range"][1] - y["range"][0]) / abs(x["range"][1] - x["range"][0])
        need = max(need, plot_w * (x1 - x0) * span / (y1 - y0))
    return height if not 0 < need < plot_h else math.ceil(height - (plot_h - need))


def pdf_fonts(node):
    """The figure dict with each theme font list (viz.theme.FONT_SANS, FONT_SERIF) swapped for its PDF
    list (viz.theme.PDF_FONTS: TrueType fonts, so that the PDF carries no Type 3 font), in place."""
    if isinstance(node, dict):
        for key, value in node.items():
            node[key] = PDF_FONTS[value] if isinstance(value, str) and value in PDF_FONTS else pdf_fonts(value)
    elif isinstance(node, list) and node and isinstance(node[0], (dict, list)):  # not a row of numbers
        for i, value in enumerate(node):
            if isinstance(value, (dict, list)):
                node[i] = pdf_fonts(value)
    return node


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


MIN_PLOT_PX = 20  # a plot smaller than this beside the margins: plotly.js fails ("axis scaling") or draws a sliver


def check_room(fig: go.Figure | dict, width: int, height: int) -> None:
    """Raise ValueError naming width or height where the figure's margins, its own as exported alone, leave its
    plot under MIN_PLOT_PX at that size: said before anything is rendered, as a bad spec (a researcher's walk:
    340x260 failed as 'rendering failed' after the figures before it were drawn). Figures are laid out for
    their theme's size and not again for a smaller one (README, "Sizes")."""
    margin = dict(layout_value(fig, "margin") or {})
    meta = layout_value(fig, "meta")
    own = meta.get(ALONE) if isinstance(meta, dict) else None
    if own:
        margin.update(own["margin"])
    for name, size, a, b in (("width", width, "l", "r"), ("height", height, "t", "b")):
        taken = margin.get(a, 0) + margin.get(b, 0)
        if size - taken < MIN_PLOT_PX:
            raise ValueError(f"{name}: {size} px leaves the plot {size - taken} px beside this theme's margins "
                             f"({taken} px): give at least {taken + MIN_PLOT_PX}, or 0 for the theme's size (then "
                             "scale the vector file)")


def render(fig: go.Figure | dict, fmt: str, *, width: int, height: int, scale: float = 1.0) -> bytes:
    """The figure as SVG, PDF or PNG bytes at width x height CSS px (PNG: x scale).

    Deterministic: the same figure gives byte-identical SVG and PNG, and a PDF that differs in
    nothing (its creation date is pinned). A PNG carries its dpi (96 x scale) in a pHYs chunk,
    so word processors and LaTeX place it at width/96 inches.
    """
    check_size(fmt, width, height, scale)
    data = alone(figure_dict(fig))
    opts = {"format": fmt, "width": width, "height": round_height(data, width, height),
            "scale": scale if fmt == "png" else 1}
    raw = _SERVER.render(pdf_fonts(data) if fmt == "pdf" else data, opts)
    if fmt == "svg":
        return _stable_svg(crisp_svg(raw))  # heatmaps crisp in any viewer (viz/crisp.py)
    if fmt == "pdf":  # dates pinned first: the rewritten file's /ID hashes them
        return titled_pdf(crisp_pdf(_stable_pdf(raw), cells=heatmap_cells(data)), plain_title(data))
    return png_with_dpi(raw, CSS_DPI * scale)


_SUB = re.compile(r"<(sub|sup)>(.*?)</\1>", re.DOTALL)
_TAG = re.compile(r"<[^>]*>")


def plain_title(data: dict) -> str:
    """A figure dict's title as plain text (a PDF's /Title): plotly.js's markup read as it draws it, a subscript as
    _Q and a superscript as ^2 (XW<sub>Q</sub> -> XW_Q, as the manifest's titles write d_k), the line breaks
    viz.theme wrapped it at gone, others a space, other tags dropped, then its escapes undone, so that a sentence's
    "<b>" is those three characters (user text is escaped in a figure: no tag of its survives as one). "" for none."""
    title = (data.get("layout") or {}).get("title")
    text = title.get("text") if isinstance(title, dict) else title
    if not isinstance(text, str):
        return ""
    text = text.replace(SOFT_BREAK, "")
    text = re.sub(r"<br\s*/?>", " ", text)
    text = _SUB.sub(lambda m: ("_" if m[1] == "sub" else "^") + m[2], text)
    return " ".join(html.unescape(_TAG.sub("", text)).split())


def titled_pdf(pdf: bytes, title: str) -> bytes:
    """The PDF titled `title` (its /Title, which Chromium's PDFs ask a viewer to show, DisplayDocTitle: it was
    kaleido's page's "Kaleido-fier" on every figure), or untitled for "" (the viewer shows the file's name)."""
    import pikepdf  # imported here: only PDF export needs it

    with pikepdf.open(io.BytesIO(pdf)) as doc:
        if title:  # a lone surrogate (named as such in a figure, never drawn) cannot be written: U+FFFD
            doc.docinfo["/Title"] = title.encode("utf-8", "replace").decode("utf-8")
        elif "/Title" in doc.docinfo:
            del doc.docinfo["/Title"]
        out = io.BytesIO()
        doc.save(out, deterministic_id=True)
    return out.getvalue()


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
def _read_umask() -> int:
    """The process's file-creation mask (reading it means setting it: set back at once, once, at import,
    before the app's threads)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


UMASK = _read_umask()


def write_atomic(path: str | os.PathLike, data: bytes | str) -> Path:
    """Write via a temporary file in the same folder and os.replace: never a half-written file. The file gets
    the mode a plain open() would give it (0o666 less the umask): mkstemp's own 0o600 left co-authors and a web
    server unable to read the figures."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~UMASK)
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


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet reads a cell starting so as a formula


def _not_a_formula(value):
    """A text cell a spreadsheet would run as a formula ('=HYPERLINK(…)' typed as a sentence), quoted with a
    leading ' as OWASP advises; a lone '-' or '+' token, and numbers, as they are."""
    if isinstance(value, str) and len(value) > 1 and value.startswith(FORMULA_START):
        return "'" + value
    return value


def table_csv(table) -> bytes:
    """A panel's numbers as CSV at full float precision (the CSV is the data), the same bytes as
    the app's CSV button: UTF-8 with a byte-order mark, so spreadsheets read Chinese correctly. Every
    column has a name: an index of bare row numbers (0, 1, ... unnamed) is left out. Text that a spreadsheet
    would run as a formula starts with a ' (a bad-input walk: a sentence '=HYPERLINK(…)' went out as it was). A float32
    column is written as its exact value, as a float64 one is, so that one model number reads the same from every CSV."""
    numbered = isinstance(table.index, pd.RangeIndex) and table.index.name is None
    text = [c for c in table.columns if table[c].dtype == object or pd.api.types.is_string_dtype(table[c])]
    single = [c for c in table.columns if table[c].dtype == "float32"]
    if text or single:
        table = table.copy()
        for c in text:
            table[c] = table[c].map(_not_a_formula)
        for c in single:  # its exact value, as float64 writes it (view 4's float32 weights were 0.27644914 where view
            table[c] = table[c].astype("float64")  # 3 wrote the same weight 0.27644914388656616: unequal, read back)
    return table.to_csv(lineterminator="\n", index=not numbered).encode("utf-8-sig")


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


if __name__ == "__main__":  # the spec export moved to lab (it builds the views): say so, do not succeed silently
    import sys

    print("python -m viz.export has moved: run python -m lab.export SPEC.json --out DIR [--trace]", file=sys.stderr)
    sys.exit(2)
