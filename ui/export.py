"""Download buttons next to each figure: SVG, PDF and PNG rendered on the server, and the trace.

Nothing is rendered while the page draws: each st.download_button gets a callable, which
Streamlit runs (on another thread) only when that button is clicked. Rendered bytes are cached
per (figure JSON, format, size, scale) for the whole server, bounded by bytes (EXPORT_CACHE_BYTES),
and one headless Chromium stays warm (viz.export), so a second download of anything takes ~0.2 s.
"""

from __future__ import annotations

import functools
import hashlib
import io
import stat
import zipfile
from collections.abc import Callable

import cachetools
import plotly.graph_objects as go
import streamlit as st

from lab.spec import FigureSpec
from ui.cache import shared
from viz import export as vx
from viz.fig import layout_value

_HELP = {
    "svg": "Vector, editable (Inkscape, Illustrator); text stays text. Fonts are not embedded: "
           "the viewer needs Noto CJK for Chinese.",
    "pdf": "Vector, for LaTeX (\\includegraphics); fonts embedded, Chinese included, as TrueType (Liberation, "
           "AR PL UMing or WenQuanYi Zen Hei): no Type 3 fonts, which publishers' checkers refuse, where the server "
           "has those fonts (README, 'Figures for papers').",
    "png": "Bitmap at {dpi:.0f} dpi ({w}×{h} px): spec.scale × 96 dpi.",
}


# Rendered files kept, by their bytes, for the whole server (ui.cache.shared): a class downloading the
# figure the teacher shows renders it once. Files range from KBs to MBs (a 300 dpi PNG of a 511-token
# heatmap: 0.5-0.8 MB; an export may be up to 16,384 px a side), so a count of entries (st.cache_data's
# bound) would not bound the memory; one file larger than this is not kept.
EXPORT_CACHE_BYTES = 64 * 2**20


def _render_key(fig_json: str, fmt: str, width: int, height: int, scale: float) -> tuple:
    """The cache key: a digest of the figure's JSON (up to MBs at 511 tokens), not the text itself."""
    return cachetools.keys.hashkey(hashlib.sha256(fig_json.encode("utf-8")).hexdigest(), fmt, width, height, scale)


@shared(EXPORT_CACHE_BYTES, len, key=_render_key)
def rendered(fig_json: str, fmt: str, width: int, height: int, scale: float) -> bytes:
    """viz.export.render, cached across sessions and reruns (keyed on the figure's JSON); a second click
    on the same download while the first renders waits for that render (one render, not two)."""
    return vx.render_json(fig_json, fmt, width=width, height=height, scale=scale)


@st.cache_data(max_entries=1, ttl=30, show_spinner=False)
def _browser() -> str | None:
    return vx.find_browser()


def _file_stem(key: str) -> str:
    stem = key.removeprefix("export-")
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in stem) or "figure"


def export_buttons(fig: go.Figure, key: str, spec: FigureSpec) -> None:
    """SVG, PDF and PNG downloads of `fig` at spec.export_size (spec.size, or the figure's own height
    where it sets one, taller or shorter; PNG × spec.scale).

    The figure is exported as drawn (it already carries spec.theme). Without a browser on the
    server, says how to install one instead.
    """
    if _browser() is None:
        st.caption(f"⚠️ {vx.install_help()}")
        return
    vx.warm_up()  # start Chromium in the background now, so the first click is fast
    fig_json = vx.figure_json(fig)  # a snapshot: later changes to fig do not leak into downloads
    stem = _file_stem(key)
    size = spec.export_size(layout_value(fig, "height"))  # as `python -m lab.export` does
    w, h = round(size[0] * spec.scale), round(size[1] * spec.scale)
    too_big = max(w, h) > vx.MAX_PIXELS_PER_SIDE
    cramped = ""  # an export size too small for the theme's margins: said here, not as a failed render on a click
    try:
        vx.check_room(fig, *size)
    except ValueError as exc:
        cramped = f"Export size (sidebar): {str(exc).partition(': ')[2]}."
        st.caption(f"⚠️ {cramped}")
    row = st.container(horizontal=True, gap="small", key=f"{key}-row")
    for fmt in vx.FORMATS:
        row.download_button(
            f"PNG {vx.CSS_DPI * spec.scale:.0f} dpi" if fmt == "png" else fmt.upper(),
            data=functools.partial(rendered, fig_json, fmt, *size, spec.scale if fmt == "png" else 1.0),
            file_name=f"{stem}.{fmt}",
            mime=vx.MIME[fmt],
            key=f"{key}-{fmt}",
            on_click="ignore",
            icon=":material/download:",
            disabled=bool(cramped) or (fmt == "png" and too_big),
            help=_help(fmt, cramped, too_big, w, h, spec.scale),
        )


def _help(fmt: str, cramped: str, too_big: bool, w: int, h: int, scale: float) -> str:
    """A download button's tooltip: why it is off, or what it gives."""
    if cramped:
        return cramped
    if fmt == "png" and too_big:
        return f"{w}×{h} px is more than Chromium can draw: lower the scale"
    return _HELP[fmt].format(dpi=vx.CSS_DPI * scale, w=w, h=h)


TRACE_DOWNLOAD_BYTES = 256 * 2**20  # the largest trace (its attention maps) the app builds for a download


# a zipped file's type and mode: a regular file, rw-r--r-- (zipfile gives a ZipInfo 0600 of no type, which `unzip`
# restores: a trace readable by its owner alone, where every figure is written as a plain open() makes it)
ZIPPED_MODE = stat.S_IFREG | 0o644


def _zip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as z:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=(2000, 1, 1, 0, 0, 0))
            info.external_attr = ZIPPED_MODE << 16
            z.writestr(info, data)
    return buf.getvalue()


def trace_download(run, spec: FigureSpec, key: str, *, config=None) -> None:
    """The whole trace of `run` (every q, k, v, score, weight, output) as .npz or .safetensors,
    each zipped with its JSON sidecar (tokens, spec, model config); built only when clicked."""
    from lab.tracefile import attention_map_bytes, trace_files

    size = attention_map_bytes(run)
    if size > TRACE_DOWNLOAD_BYTES:  # the download is built, zipped and held in the server's memory
        st.caption(f"This trace's attention maps alone are {size / 2**20:,.0f} MiB: more than the app builds for a "
                   f"download (at most {TRACE_DOWNLOAD_BYTES // 2**20} MiB; it would hold them in the server's "
                   "memory, twice). Save the spec above as SPEC.json and run `python -m lab.export SPEC.json "
                   "--out figures --trace` on your own machine, or shorten the sentences.")
        return

    def build(fmt: str) -> Callable[[], bytes]:
        return lambda: _zip(trace_files(run, spec, fmt=fmt, config=config))

    row = st.container(horizontal=True, gap="small", key=f"{key}-row")
    for fmt, label in (("npz", "Trace (.npz)"), ("safetensors", "Trace (.safetensors)")):
        row.download_button(
            label,
            data=build(fmt),
            file_name=f"trace-{fmt}.zip",
            mime="application/zip",
            key=f"{key}-{fmt}",
            on_click="ignore",
            icon=":material/download:",
            help=f"trace.{fmt} (arrays named like encoder.0.self_attn.weights) + trace.json "
                 "(tokens, spec, config); load with lab.tracefile.load_trace — never pickled.",
        )
