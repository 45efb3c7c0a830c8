"""Exported heatmaps stay crisp in every viewer, not only in browsers.

plotly.js draws an evenly spaced heatmap as an image of one pixel per cell and lets the viewer scale it
up: in SVG with the CSS `image-rendering: pixelated`, in the PDF Chromium prints with no /Interpolate
flag. Browsers and poppler scale it by nearest neighbour, but macOS Preview, Adobe Illustrator and
Inkscape smooth it, so a 4 x 4 attention matrix becomes a blurred gradient there (plotly.js #4149,
Kaleido #426): a figure for a paper must not depend on the viewer.

`crisp_svg` and `crisp_pdf` enlarge each such image by nearest neighbour, by a whole factor, to at
least TARGET_PX pixels on its longer side (at most MAX_PX). Every cell is then a block of identical
pixels, plotly.js's own colours pixel for pixel, so a smoothing viewer can soften only the cells'
edges, by one pixel of ~2,400 (600 dpi over a 4-inch figure). Images already that large, or that no whole
factor fits under MAX_PX, are left alone (plotly.js's heatmaps have at most 256 cells a side).
"""

from __future__ import annotations

import base64
import io
import math
import re
import zlib
from collections.abc import Collection

import numpy as np
from PIL import Image

TARGET_PX = 2400  # the enlarged image's longer side: ~600 dpi over 4 inches
MAX_PX = 4096  # never larger than this per side (a 256-cell matrix: x 10 = 2,560)


def factor(width: int, height: int) -> int:
    """The whole enlargement factor for an image of width x height pixels (1 = leave it)."""
    longest = max(width, height)
    if longest <= 0 or longest >= TARGET_PX:
        return 1
    return max(1, min(math.ceil(TARGET_PX / longest), MAX_PX // longest))


def enlarge(pixels: np.ndarray, k: int) -> np.ndarray:
    """(H, W, ...) -> (H * k, W * k, ...): each pixel a k x k block of itself (nearest neighbour)."""
    return np.repeat(np.repeat(pixels, k, axis=0), k, axis=1)  # (H*k, W, ...) then (H*k, W*k, ...)


_SVG_PNG = re.compile(rb'(<image\b[^>]*?href=")data:image/png;base64,([A-Za-z0-9+/=]+)(")')


def _png(match: re.Match) -> bytes:
    image = Image.open(io.BytesIO(base64.b64decode(match.group(2))))
    k = factor(*image.size)
    if k == 1:
        return match.group(0)
    big = Image.fromarray(enlarge(np.asarray(image), k), mode=image.mode)
    out = io.BytesIO()
    big.save(out, format="PNG", compress_level=6)  # no timestamp: the same bytes every time
    return match.group(1) + b"data:image/png;base64," + base64.b64encode(out.getvalue()) + match.group(3)


def heatmap_cells(data: dict) -> set[tuple[int, int]]:
    """The (columns, rows) of each heatmap of a figure dict: the size, one pixel per cell, of the image plotly.js
    draws it as (a z given as plotly's typed array, {"shape": "rows, columns", ...}, or as nested lists)."""
    out = set()
    for trace in data.get("data") or []:
        z = trace.get("z") if trace.get("type") == "heatmap" else None
        if isinstance(z, dict):
            shape = tuple(int(n) for n in str(z.get("shape", "")).split(",") if n.strip())
        else:
            try:
                shape = np.shape(z) if z is not None else ()
            except ValueError:  # rows of different lengths: no image of one pixel per cell
                shape = ()
        if len(shape) == 2:
            out.add((shape[1], shape[0]))
    return out


def crisp_svg(svg: bytes) -> bytes:
    """The SVG with each embedded PNG (plotly.js's heatmaps) enlarged by `factor`, nearest neighbour."""
    return _SVG_PNG.sub(_png, svg)


def crisp_pdf(pdf: bytes, cells: Collection[tuple[int, int]] | None = None) -> bytes:
    """The PDF with each 8-bit image (plotly.js's heatmaps, and their soft masks: the same size, so the
    same factor) enlarged by `factor`, nearest neighbour, losslessly (Flate), in the same colour space.

    cells: the (width, height) of the figure's heatmaps, one pixel per cell (`heatmap_cells`): only images of
    those sizes are enlarged (None: every image). Chromium also prints a pattern fill (a bar's, a masked cell's
    hatching) as an image the size of the plot, about a pixel per point: enlarged ×7 as if it were cells, view 5's
    context vector was 7.4 MB, and each hatch line a staircase that a smoothing viewer could no longer soften."""
    import pikepdf  # imported here: only PDF export needs it

    changed = False
    with pikepdf.open(io.BytesIO(pdf)) as doc:
        for obj in doc.objects:
            if not (isinstance(obj, pikepdf.Stream) and obj.get("/Subtype") == "/Image"):
                continue
            if obj.get("/BitsPerComponent") != 8 or obj.get("/ImageMask", False):
                continue
            width, height = int(obj.Width), int(obj.Height)
            if cells is not None and (width, height) not in cells:
                continue
            k = factor(width, height)
            if k == 1 or obj.get("/Filter") not in (None, pikepdf.Name.FlateDecode):  # e.g. a JPEG: not cells
                continue
            data = obj.read_bytes()  # decoded (Flate and predictors undone)
            if len(data) % (width * height):
                continue
            pixels = np.frombuffer(data, np.uint8).reshape(height, width, -1)  # (H, W, components)
            obj.write(zlib.compress(enlarge(pixels, k).tobytes(), 6), filter=pikepdf.Name.FlateDecode)
            if "/DecodeParms" in obj:
                del obj.DecodeParms
            obj.Width, obj.Height = width * k, height * k
            changed = True
        if not changed:
            return pdf
        out = io.BytesIO()
        doc.save(out, deterministic_id=True)
    return out.getvalue()
