"""Static export: every figure type in SVG, PDF and PNG as promised, reproducible files, strict
specs that never leave half an export behind, and the whole trace on disk and back."""

from __future__ import annotations

import asyncio
import csv
import dataclasses
import io
import json
import re
import stat
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import needs_trained, svg_pngs, trained_available
from PIL import Image

import viz
from lab import export as lx
from lab.spec import FigureSpec, SpecError
from lab.tracefile import load_trace, save_trace, trace_arrays
from lab.views import build_view
from viz import export as vx
from viz.theme import cell_text

ROOT = Path(__file__).resolve().parents[1]
HAS_BROWSER = vx.find_browser() is not None
needs_browser = pytest.mark.skipif(
    not HAS_BROWSER, reason="no Chromium for kaleido (apt-get install -y chromium, or set BROWSER_PATH)"
)

# One panel of every view that draws figures ("tokens" draws none): the figure TYPES.
FIGURE_TYPES = {
    "positional": "pe-dot-matrix",
    "attention": "attention-weights",
    "heads": "heads-grid",
    "query": "query-bars",
    "order": "diff-pe",
}
SMALL = dict(d_model=16, n_heads=2, n_layers=2, d_ff=32)  # tiny random model: fast, same figures


@pytest.fixture(scope="session")
def models():
    return lx.cli_models()


@pytest.fixture(scope="session")
def server():
    """One Chromium for the whole session; prints what keeping it warm buys."""
    if not HAS_BROWSER:
        pytest.skip("no Chromium for kaleido")
    import plotly.graph_objects as go

    fig = go.Figure(go.Heatmap(z=[[0.0, 1.0], [1.0, 0.0]], x=["0:你", "1:喜"], y=["0:你", "1:喜"]))
    t0 = time.perf_counter()
    vx.start_server()
    vx.render(fig, "png", width=200, height=200)
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    vx.render(fig, "png", width=200, height=200)
    warm = time.perf_counter() - t0
    print(f"\n[export benchmark] first export (starts Chromium) {cold:.2f} s, next export {warm:.2f} s")
    return vx


@pytest.fixture(scope="session")
def figures(models):
    spec = FigureSpec(theme="paper", **SMALL)
    out = {}
    for view, key in FIGURE_TYPES.items():
        panels = {p.key: p for p in build_view(view, spec, models).panels}
        out[view] = panels[key].figure
    return out


# ---------------------------------------------------------------------------- file checks
def svg_text(svg: bytes) -> str:
    root = ET.fromstring(svg)  # raises if the SVG is not well-formed XML
    assert root.tag.endswith("svg")
    return "".join(root.itertext())


def pdf_objects(pdf: bytes) -> bytes:
    """The PDF with every Flate stream inflated next to it (font dictionaries may be compressed)."""
    parts = [pdf]
    for m in re.finditer(rb"stream\r?\n(.*?)\r?\nendstream", pdf, re.S):
        try:
            parts.append(zlib.decompress(m.group(1)))
        except zlib.error:
            pass
    return b"\n".join(parts)


CJK_FONTS = {"paper": "UMingCN", "paper-sans": "WenQuanYiZenHei", "slide": "WenQuanYiZenHei"}  # viz.theme.PDF_FONTS


def pdf_fonts(pdf: bytes) -> list[tuple[str, str, str]]:
    """(Subtype, font name without its subset tag, what carries its glyphs) of every font in the PDF.

    Chromium (Skia) embeds a TrueType font as a Type0 font whose CIDFontType2 descendant carries a
    /FontFile2, and a CFF-based font (Noto CJK) as a Type3 font, each glyph an outline drawn in a
    /CharProcs procedure: publishers' checkers (IEEE PDF eXpress, ACM, ICML) refuse those.
    """
    import pikepdf

    out = []
    with pikepdf.open(io.BytesIO(pdf)) as doc:
        for obj in doc.objects:
            if not (isinstance(obj, pikepdf.Dictionary) and obj.get("/Type") == "/Font"):
                continue
            subtype = str(obj.get("/Subtype"))
            if subtype == "/CIDFontType2":
                continue  # a Type0 font's descendant: counted with it
            if subtype == "/Type0":
                cid = obj.DescendantFonts[0]
                files = [k for k in ("/FontFile", "/FontFile2", "/FontFile3") if k in cid.FontDescriptor]
                name = str(cid.FontDescriptor.FontName).split("+")[-1]
                out.append((subtype, name, f"{cid.Subtype} {' '.join(files)}"))
            else:
                out.append((subtype, "", "/CharProcs" if "/CharProcs" in obj else ""))
    return out


def assert_no_type3_fonts(pdf: bytes, cjk: str | None = None, what: str = "") -> None:
    """Every font a TrueType font embedded whole in its subset (/FontFile2), the Chinese in `cjk` (where
    given), and the text searchable (/ToUnicode)."""
    fonts = pdf_fonts(pdf)
    assert fonts and all(f[0] == "/Type0" and f[2] == "/CIDFontType2 /FontFile2" for f in fonts), (what, fonts)
    assert cjk is None or cjk in {f[1] for f in fonts}, (what, fonts)
    assert b"/ToUnicode" in pdf_objects(pdf)


# ---------------------------------------------------------------------------- every type, every format
@needs_browser
@pytest.mark.parametrize("view", list(FIGURE_TYPES))
def test_every_figure_type_exports_as_svg_pdf_and_png(server, figures, view):
    fig = figures[view]
    width, height, scale = 480, 360, 3.125  # 3.125 x 96 dpi = 300 dpi

    svg = vx.render(fig, "svg", width=width, height=height)
    text = svg_text(svg)
    assert "你" in text and "喜" in text, "token labels must be real text in the SVG"
    assert f'width="{width}"' in svg.decode() and f'height="{height}"' in svg.decode()

    pdf = vx.render(fig, "pdf", width=width, height=height)
    assert pdf.startswith(b"%PDF-") and pdf.rstrip().endswith(b"%%EOF")
    assert_no_type3_fonts(pdf, CJK_FONTS["paper"])  # paper theme: serif CJK

    png = vx.render(fig, "png", width=width, height=height, scale=scale)
    assert vx.png_size(png) == (round(width * scale), round(height * scale))
    assert vx.png_dpi(png) == pytest.approx(300, abs=0.1)


@needs_browser
def test_a_vector_file_is_width_by_height_whatever_the_png_scale(server):
    """render: SVG and PDF at width × height CSS px, PNG at that × scale (its docstring): the scale of a spec that
    asks for a 300 dpi PNG does not make its SVG or PDF three times as large."""
    import plotly.graph_objects as go

    fig = go.Figure(go.Heatmap(z=[[0.0, 1.0], [1.0, 0.0]], x=["0:你", "1:喜"], y=["0:你", "1:喜"]))
    svg = vx.render(fig, "svg", width=480, height=360, scale=3.125).decode()
    assert 'width="480"' in svg and 'height="360"' in svg
    box = re.search(rb"/MediaBox\s*\[\s*0 0 ([0-9.]+) ([0-9.]+)", vx.render(fig, "pdf", width=480, height=360, scale=3.125))
    assert (float(box[1]), float(box[2])) == pytest.approx((480 * 72 / 96, 360 * 72 / 96), abs=1)  # points


@needs_browser
@pytest.mark.parametrize("theme", ["slide", "paper-sans"])
def test_sans_themes_embed_the_sans_cjk_font_and_no_type3_font(server, models, theme):
    spec = FigureSpec(theme=theme, **SMALL)
    fig = {p.key: p for p in build_view("attention", spec, models).panels}["attention-weights"].figure
    assert_no_type3_fonts(vx.render(fig, "pdf", width=1280, height=720), CJK_FONTS[theme])
    if theme == "slide":
        with pytest.raises(vx.ExportError, match="make width/height larger"):
            vx.render(fig, "pdf", width=200, height=150)  # slide fonts leave no room: said, not a crash


@needs_browser
@needs_trained
def test_no_panel_of_any_view_puts_a_type3_font_in_its_pdf(server, models):
    """Every panel of every view, the lesson's sentences, paper theme: each glyph (Chinese, −, √, ᵀ, Σ, ω,
    ×, arrows) is in one of the TrueType fonts of viz.theme.PDF_FONTS, none falls back to Noto CJK."""
    from viz.theme import design_size

    drawn = 0
    for view in ("positional", "attention", "heads", "query", "order", "translate"):
        spec = FigureSpec(sentence_a="你喜欢她", sentence_b="她喜欢你", views=(view,), theme="paper",
                          model="zh-en" if view in ("order", "translate") else "random")
        for panel in build_view(view, spec, models).panels:
            if panel.figure is None:
                continue
            width, height = design_size("paper")
            pdf = vx.render(panel.figure, "pdf", width=width, height=max(height, panel.figure.layout.height or 0))
            assert_no_type3_fonts(pdf, what=panel.key)
            drawn += 1
    assert drawn >= 25


@needs_browser
def test_a_pdf_reads_back_as_text_with_the_models_weights_and_its_tokens(server, models):
    """An exported PDF's text is text (a /ToUnicode map for its glyphs, in whichever fonts): PDFium reads back
    the row and column tokens and every weight, each the model's own softmax weight to the 2 decimals shown."""
    import pypdfium2

    from model.analysis import record

    spec = FigureSpec(sentence_a="你喜欢她", sentence_b="她喜欢你", theme="paper", **SMALL)
    fig = {p.key: p for p in build_view("attention", spec, models).panels}["attention-weights"].figure
    pdf = pypdfium2.PdfDocument(vx.render(fig, "pdf", width=600, height=480))
    text = pdf[0].get_textpage().get_text_range()
    weights = record(models.run(spec).trace, "encoder self", 0).weights[0, 0].double().numpy()  # (T, T) A, head 0
    lines = [line.strip() for line in text.splitlines()]
    shown = [[float(v) for v in line.split()] for line in lines if re.fullmatch(r"(\d\.\d\d ?){4}", line)]
    np.testing.assert_allclose(shown, weights, atol=0.005 + 1e-9)  # printed with 2 decimals
    assert "0:你 1:喜 2:欢 3:她" in lines  # the keys, left to right
    assert [line for line in lines if re.fullmatch(r"\d:\S", line)] == ["0:你", "1:喜", "2:欢", "3:她"]  # queries
    assert lines.count("Σ = 1.000") == 4


@needs_browser
def test_a_pdf_is_titled_by_its_figure_in_plain_text(server, models):
    """A researcher's walk: every exported PDF was titled "Kaleido-fier" (the page kaleido renders in), and asks its
    viewer to show that title (DisplayDocTitle): Preview, Acrobat and a browser's tab named each figure so. Its title
    is now the figure's, as plain text: plotly.js's markup read as drawn (a subscript as _Q, the wrapping line
    breaks as spaces), a sentence's markup as the characters typed, never a tag."""
    import pikepdf

    spec = FigureSpec(theme="paper", views=("attention", "query"), sentence_a="<b>&amp;你", **SMALL)
    panels = {p.key: p for view in spec.views for p in build_view(view, spec, models).panels}
    want = {
        "attention-qkv": "Q = XW_Q, K = XW_K, V = XW_V (one head) — encoder self, layer 0, head 0",
        "attention-scaled": "2. Scaled scores QKᵀ / √d_k (d_k = 8, same colours) — encoder self, layer 0, head 0",
        "query-bars": "Query 0:<: scores, scaled scores and weights over every key — encoder self, layer 0, head 0",
    }
    for key, title in want.items():
        pdf = vx.render(panels[key].figure, "pdf", width=600, height=480)
        with pikepdf.open(io.BytesIO(pdf)) as doc:
            assert str(doc.docinfo.get("/Title")) == title, key
    assert vx.render(panels["query-bars"].figure, "pdf", width=600, height=480) == vx.render(
        panels["query-bars"].figure, "pdf", width=600, height=480)  # still byte for byte the same


@needs_browser
def test_a_pdf_enlarges_its_heatmaps_cells_and_leaves_its_patterns_as_chromium_drew_them(server, models, monkeypatch):
    """A researcher's walk: view 5's context vector, whose bars carry a pattern per key, was a 7.4 MB PDF (the
    default 你喜欢她), a grid of heads with look-ahead hatching 1.7 MB: Chromium prints a pattern fill as an image
    about a pixel per point, the size of the plot, which viz.crisp took for a heatmap's cells and enlarged ×7 by
    nearest neighbour (3.7× the bytes, and each hatch line a staircase a smoothing viewer could no longer soften).
    Only images of one pixel per cell of the figure's own heatmaps (and their soft masks) are enlarged now."""
    from viz import crisp

    spec = FigureSpec(theme="paper", views=("attention", "heads", "query"), mask="look-ahead", **SMALL)
    panels = {p.key: p for view in spec.views for p in build_view(view, spec, models).panels}
    key = lambda a: (a.shape, a.tobytes())  # noqa: E731  (the same images, in any order)
    patterns = 0
    for name in ("attention-weights", "layers-heads", "query-context"):
        fig = panels[name].figure
        made = vx.render(fig, "pdf", width=600, height=480)
        with monkeypatch.context() as m:  # what plotly.js and Chromium made
            m.setattr(vx, "crisp_pdf", lambda b, **kw: b)
            plain = pdf_images(vx.render(fig, "pdf", width=600, height=480))
        cells = {(len(t.z[0]), len(t.z)) for t in fig.data if t.type == "heatmap"}
        want = [crisp.enlarge(p, crisp.factor(p.shape[1], p.shape[0])) if (p.shape[1], p.shape[0]) in cells else p
                for p in plain]
        assert sorted(map(key, pdf_images(made))) == sorted(map(key, want)), name
        patterns += sum((p.shape[1], p.shape[0]) not in cells for p in plain)
    assert patterns  # there were images of patterns to leave alone
    assert len(vx.render(panels["query-context"].figure, "pdf", width=600, height=480)) < 2_500_000


def test_pdf_fonts_swaps_every_theme_font_list_and_nothing_else(models):
    """A PDF's figure names the TrueType lists; SVG and PNG keep the theme's (the figure is not changed)."""
    from plotly.utils import PlotlyJSONEncoder

    from viz.theme import FONT_SANS, FONT_SERIF, PDF_FONTS

    for theme, font in (("paper", FONT_SERIF), ("slide", FONT_SANS), ("default", FONT_SANS)):
        spec = FigureSpec(theme=theme, **SMALL)
        fig = {p.key: p for p in build_view("attention", spec, models).panels}["attention-weights"].figure
        before = vx.figure_json(fig)
        data = vx.pdf_fonts(vx.figure_dict(fig))
        text = json.dumps(data, cls=PlotlyJSONEncoder, ensure_ascii=False)
        assert json.dumps(font)[1:-1] not in text.replace(json.dumps(PDF_FONTS[font])[1:-1], "")
        assert text.count(json.dumps(PDF_FONTS[font])[1:-1]) == before.count(json.dumps(font)[1:-1]) > 5
        assert json.loads(text) != json.loads(before)  # swapped for another list
        assert vx.figure_json(fig) == before  # the figure itself is not changed
        swapped_back = json.loads(text.replace(json.dumps(PDF_FONTS[font])[1:-1], json.dumps(font)[1:-1]))
        assert json.dumps(swapped_back, sort_keys=True) == json.dumps(json.loads(before), sort_keys=True)


@needs_browser
def test_the_browser_is_started_once_and_reused(server, figures):
    starts = vx.server_starts()
    for fmt in vx.FORMATS:
        vx.render(figures["attention"], fmt, width=300, height=300)
    assert vx.server_running() and vx.server_starts() == starts == 1


def test_png_dpi_chunk_is_written_and_valid():
    # a 1x1 PNG made by hand: IHDR, IDAT, IEND
    def chunk(kind, body):
        return len(body).to_bytes(4, "big") + kind + body + zlib.crc32(kind + body).to_bytes(4, "big")

    raw = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", (1).to_bytes(4, "big") * 2 + b"\x08\x02\x00\x00\x00")
           + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b""))
    out = vx.png_with_dpi(raw, 300)
    assert vx.png_size(out) == (1, 1) and vx.png_dpi(out) == pytest.approx(300, abs=0.1)
    assert vx.png_dpi(vx.png_with_dpi(out, 600)) == pytest.approx(600, abs=0.1)  # replaced, not added
    for kind, body in vx._png_chunks(out):  # every CRC still right
        pos = out.index(kind + body)
        assert int.from_bytes(out[pos + 4 + len(body) : pos + 8 + len(body)], "big") == zlib.crc32(kind + body)


def text_baselines(svg: bytes) -> list[tuple[str, float]]:
    """Each <text> of an SVG but the axes' and colour bars' tick labels as (its text, the y of its baseline on the
    page): its own y plus every translate() of the groups around it (plotly.js moves a scatter's text by one)."""
    root = ET.fromstring(svg)
    parent = {child: el for el in root.iter() for child in el}
    out = []
    for el in root.iter():
        if not el.tag.endswith("}text"):
            continue
        y, node = float(el.get("y") or 0), el
        if "tick" in (parent[el].get("class") or ""):
            continue
        while node is not None:
            if found := re.match(r"translate\(\s*[-\d.e]+\s*[, ]\s*([-\d.e]+)", node.get("transform") or ""):
                y += float(found.group(1))
            node = parent.get(node)
        out.append(("".join(el.itertext()), y))
    return out


@needs_browser
@pytest.mark.parametrize("theme", ["default", "paper", "paper-sans", "slide", "dark"])
def test_a_masked_cells_mark_sits_on_the_baseline_of_the_values_in_its_row(server, theme):
    """A paper-sans export of view 7: the "0" of a masked weight (and the "−∞" of a masked score) sat ~2 px above
    the values written in the other cells of its row. plotly.js writes a scatter's text 0.25 em below its point
    and a heatmap's cell text 0.35 em below its cell's centre; the marks are now a heatmap's cell text too."""
    import viz
    from viz.theme import design_size

    n = 5
    mask = np.tril(np.ones((n, n), dtype=bool))
    weights = np.where(mask, 1.0 / np.arange(1, n + 1)[:, None], 0.0)  # row i: 1/(i+1), "1.00" ... "0.20"
    scores = np.where(mask, np.arange(n * n, dtype=float).reshape(n, n) / 7, -np.inf)
    figs = {"0": viz.weights_heatmap(weights, row_labels=list("abcde"), mask=mask, show_values=True, theme=theme),
            "−∞": viz.scores_heatmap(scores, row_labels=list("abcde"), mask=mask, show_values=True, theme=theme)}
    for mark, fig in figs.items():
        width, height = design_size(theme)
        texts = text_baselines(vx.render(fig, "svg", width=width, height=height))
        marks = [y for text, y in texts if text == mark]
        values = [y for text, y in texts if re.fullmatch(r"−?\d+\.\d+", text)]
        assert len(marks) == (~mask).sum() and len(values) == mask.sum(), (mark, texts)
        for y in marks:  # the nearest value is one of its own row's (rows are ~50 px or more apart)
            nearest = min(values, key=lambda v: abs(v - y))
            assert abs(nearest - y) <= 0.25, (theme, mark, y, nearest)


# ---------------------------------------------------------------------------- the CLI
def write_spec(path: Path, data: dict) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


@needs_browser
def test_same_spec_twice_gives_identical_files(server, tmp_path):
    spec = write_spec(tmp_path / "spec.json", {"views": ["heads"], "format": "svg", **SMALL})
    for name in ("a", "b"):
        assert lx.main([str(spec), "--out", str(tmp_path / name), "--quiet"]) == 0
    a = {p.name: p.read_bytes() for p in (tmp_path / "a").iterdir()}
    b = {p.name: p.read_bytes() for p in (tmp_path / "b").iterdir()}
    assert a.keys() == b.keys()
    assert {"heads-heads-grid.svg", "heads-heads-grid.csv", "heads-layers-heads.svg", "heads-entropy.svg",
            "spec.json", "manifest.json"} <= a.keys()
    for name in a:
        assert a[name] == b[name], f"{name} differs between two exports of the same spec"
    # the spec written next to the figures regenerates them
    assert FigureSpec.from_json(a["spec.json"].decode()) == FigureSpec.from_dict(
        {"views": ["heads"], "format": "svg", **SMALL})
    # the CSV is the data: softmax weights of every head, each row summing to 1
    import pandas as pd

    weights = pd.read_csv(tmp_path / "a" / "heads-heads-grid.csv", index_col=[0, 1], encoding="utf-8-sig")
    assert list(weights.columns)[:2] == ["0:你", "1:喜"]
    assert sorted(set(weights.index.get_level_values(0))) == ["head 0", "head 1"]
    np.testing.assert_allclose(weights.to_numpy().sum(axis=1), 1.0, atol=1e-6)


def test_same_spec_twice_gives_the_same_figure_json(models):
    spec = FigureSpec(**SMALL)
    first = vx.figure_json(build_view("heads", spec, models).panels[0].figure)
    second = vx.figure_json(build_view("heads", spec, lx.cli_models()).panels[0].figure)  # fresh models
    assert first == second


@needs_browser
def test_pdf_and_png_are_byte_reproducible(server, figures):
    fig = figures["heads"]
    assert vx.render(fig, "pdf", width=400, height=300) == vx.render(fig, "pdf", width=400, height=300)
    assert vx.render(fig, "png", width=400, height=300) == vx.render(fig, "png", width=400, height=300)


def pdf_images(pdf: bytes) -> list[np.ndarray]:
    """Each 8-bit image of a PDF (soft masks included) as its decoded pixels (H, W, C)."""
    import pikepdf

    with pikepdf.open(io.BytesIO(pdf)) as doc:
        return [np.frombuffer(o.read_bytes(), np.uint8).reshape(int(o.Height), int(o.Width), -1)
                for o in doc.objects if isinstance(o, pikepdf.Stream) and o.get("/Subtype") == "/Image"]


def shown(pixels: np.ndarray, size: tuple[int, int], how=Image.Resampling.BILINEAR) -> np.ndarray:
    """The image drawn at `size` by a viewer that smooths (BILINEAR: macOS Preview, Illustrator, Inkscape)
    or that does not (NEAREST: browsers, poppler)."""
    return np.asarray(Image.fromarray(pixels.squeeze()).resize(size, how)).astype(int)


def exact_share(drawn: np.ndarray, exact: np.ndarray) -> float:
    """The share of pixels drawn in their exact colour (within 2 of 255 per channel)."""
    return float((np.abs(drawn - exact).max(axis=-1) <= 2).mean())


@needs_browser
@pytest.mark.parametrize("fmt", ["svg", "pdf"])
def test_heatmaps_stay_crisp_in_viewers_that_smooth_images(server, figures, models, fmt, monkeypatch):
    """plotly.js embeds a heatmap as one pixel per cell, scaled up by the viewer: smoothed there, a 4 x 4
    attention matrix is a blurred gradient. The export enlarges each such image by nearest neighbour
    (viz/crisp.py): plotly.js's own pixels, each cell a block, so smoothing can blur only its edges."""
    from viz import crisp

    panels = {p.key: p for p in build_view("attention", FigureSpec(theme="paper", **SMALL), models).panels}
    for fig in (panels["attention-weights"].figure, figures["heads"]):
        made = vx.render(fig, fmt, width=480, height=360)
        with monkeypatch.context() as m:  # what plotly.js and Chromium made
            m.setattr(vx, "crisp_svg", lambda b: b)
            m.setattr(vx, "crisp_pdf", lambda b, **kw: b)
            plain_file = vx.render(fig, fmt, width=480, height=360)
        if fmt == "svg":
            got, sizes = zip(*svg_pngs(made), strict=True)
            plain = [p for p, _ in svg_pngs(plain_file)]
        else:  # a PDF places its images by matrix: take the SVG's size for the same figure
            got, plain = pdf_images(made), pdf_images(plain_file)
            sizes = [max((s for _, s in svg_pngs(vx.render(fig, "svg", width=480, height=360))),
                         key=lambda s: s[0] * s[1])] * len(got)
        assert plain and len(got) == len(plain)
        want = [crisp.enlarge(p, crisp.factor(p.shape[1], p.shape[0])) for p in plain]
        key = lambda a: (a.shape, a.tobytes())  # noqa: E731  (the same images, in any order)
        assert sorted(map(key, got)) == sorted(map(key, want)), "plotly.js's pixels, each a k x k block"
        assert all(max(w.shape[:2]) >= crisp.TARGET_PX for w in want)
        # The largest heatmap, as a smoothing viewer draws it, against its exact cells (nearest neighbour):
        i = max(range(len(got)), key=lambda j: got[j].size)
        source = next(p for p in plain if key(crisp.enlarge(p, got[i].shape[0] // p.shape[0])) == key(got[i]))
        exact = shown(source, sizes[i], Image.Resampling.NEAREST)
        assert exact_share(shown(got[i], sizes[i]), exact) >= 0.95  # each cell its own colour but at its edges
        if max(source.shape[:2]) <= 16:
            assert exact_share(shown(source, sizes[i]), exact) < 0.5  # what such a viewer showed before: a gradient


@pytest.mark.parametrize(
    "data, field",
    [
        ({"colour": "red"}, "colour"),  # unknown field
        ({"layer": "1"}, "layer"),  # wrong type
        ({"n_heads": 3}, "n_heads"),  # 64 is not divisible by 3
        ({"layer": 5, **SMALL}, "layer"),  # the model has 2 layers
        ({"heads": [0, 7], "views": ["heads"], **SMALL}, "heads"),  # the model has 2 heads
        ({"format": "png", "width": 6000, "scale": 4}, "scale"),  # 24000 px: more than Chromium draws
        ({"views": ["translate"]}, "views"),  # the random model does not translate
        ({"views": ["order"], "sentence_b": " "}, "views"),  # order needs two sentences
        ({"views": ["query"], "query": 9, **SMALL}, "query"),  # 你喜欢她 has 4 query tokens
        ({"views": ["order"], "layer": 9, **SMALL}, "layer"),  # view 6's attention: the encoder's 2 layers
        ({"views": ["order"], "head": 7, **SMALL}, "head"),
        ({"sentence_a": " ", "sentence_b": "\u3000"}, "sentence_a"),  # both empty: nothing to draw
        ({"sentence": "b", "sentence_b": "  ", **SMALL}, "sentence"),  # the sentence the views show is empty
        # sizes below the theme's margins: a bad spec before anything is drawn (it was "rendering failed")
        ({"views": ["query"], "width": 340, "height": 260, "theme": "paper"}, "height"),
        ({"views": ["attention"], "width": 100, "height": 100, "format": "png"}, "width"),
    ],
)
@pytest.mark.parametrize("browser", ["as found", "missing"])
def test_bad_spec_exits_nonzero_naming_the_field_and_writes_nothing(tmp_path, capsys, monkeypatch, data,
                                                                   field, browser):
    """The whole spec is checked before a browser is asked for: without Chromium, a bad spec is still
    reported as the bad spec (exit 2), not as a missing browser (exit 3)."""
    if browser == "missing":
        monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-chromium-here"))
        assert vx.find_browser() is None
    spec = write_spec(tmp_path / "spec.json", data)
    out = tmp_path / "out"
    code = lx.main([str(spec), "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert f"bad spec: {field}:" in err
    assert not out.exists() or not any(out.iterdir())


def test_a_spec_is_refused_only_for_a_head_its_views_draw(models):
    """A researcher's walk: view 4 draws every head of a layer (its `heads` field picks some), so the app keeps the
    head chosen in view 3 as it is; with heads 4 -> 2 in the sidebar there, its link and SPEC.json said head 3, and
    python -m lab.export refused them ("head: head 3 does not exist") for figures that show no one head. A head is
    checked where a view draws one (views 3, 5, 6, 7), the `heads` where view 4 draws them, as the app's controls do."""
    spec = FigureSpec(views=("heads",), head=3, **SMALL)  # SMALL: 2 heads
    assert [view for view, _ in lx.build_spec(spec, models)] == ["heads"]
    for views in (("heads", "attention"), ("query",)):
        with pytest.raises(SpecError, match=r"^head: head 3 does not exist"):
            lx.build_spec(dataclasses.replace(spec, views=views), models)
    assert lx.build_spec(FigureSpec(views=("attention",), heads=(5,), **SMALL), models)  # view 3 draws one head
    with pytest.raises(SpecError, match=r"^heads: head 5 does not exist"):
        lx.build_spec(FigureSpec(views=("heads",), heads=(0, 5), **SMALL), models)


def test_view_6_is_refused_a_layer_or_head_only_where_it_draws_attention(models):
    """View 6 draws its attention panels (the only ones its layer and head choose) only where B reorders A; where B
    is A token for token it draws none, and the app no layer or head controls, so a link's layer 9 there was refused
    by python -m lab.export for figures no layer chooses (a words walk's note)."""
    same = FigureSpec(views=("order",), sentence_a="你喜欢她", sentence_b="你喜欢她", layer=9, head=7, **SMALL)
    assert [view for view, _ in lx.build_spec(same, models)] == ["order"]
    for field in ("layer", "head"):
        reordered = dataclasses.replace(same, sentence_b="她喜欢你", **{("head" if field == "layer" else "layer"): 0})
        with pytest.raises(SpecError, match=rf"^{field}: {field} \d does not exist: view 'order'"):
            lx.build_spec(reordered, models)


def test_a_refusal_counts_layers_and_heads_in_words_that_agree(models):
    """A words walk: the share box said "`python -m lab.export` refuses this spec as it is (layer: layer 1 does not
    exist: view 'order' compares the encoder's self-attention, which has 1 layers (0..0))" of a one-layer model. One
    layer, head or query token is said in the singular with its number; more, in the plural with their range."""
    one = dict(d_model=16, n_heads=1, n_layers=1, d_ff=32)
    for spec, said in (
        (FigureSpec(views=("order",), layer=1, **one), "layer: layer 1 does not exist: view 'order' compares the "
                                                       "encoder's self-attention, which has 1 layer (layer 0)"),
        (FigureSpec(views=("order",), head=1, **one), "which has 1 head (head 0)"),
        (FigureSpec(views=("attention",), layer=1, **one), "the encoder self stack has 1 layer (layer 0)"),
        (FigureSpec(views=("attention",), head=1, **one), "the model has 1 head (head 0)"),
        (FigureSpec(views=("query",), sentence_a="x", sentence_b="y", query=1, **one), "the encoder self block has 1 query token "
                                                                        "(query token 0)"),
        (FigureSpec(views=("attention",), layer=2, **SMALL), "the encoder self stack has 2 layers (0..1)"),
    ):
        with pytest.raises(SpecError) as refused:
            lx.validate_for_export(spec, models)
        assert said in f"{refused.value.field}: {refused.value.message}"


def test_cli_in_a_real_process_prints_one_line_and_help_works(tmp_path):
    spec = write_spec(tmp_path / "spec.json", {"layer": 1.5})
    proc = subprocess.run([sys.executable, "-m", "lab.export", str(spec), "--out", str(tmp_path / "o")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert "layer:" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "o").exists()
    helped = subprocess.run([sys.executable, "-m", "lab.export", "--help"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert helped.returncode == 0 and "--out" in helped.stdout and "--trace" in helped.stdout


def test_a_failure_half_way_writes_no_file(tmp_path, monkeypatch, capsys):
    """Everything is rendered before anything is written: a crash on the 2nd figure leaves nothing."""
    calls = []

    def flaky(fig, fmt, **kw):
        calls.append(fmt)
        if len(calls) == 2:
            raise vx.ExportError("Chromium went away")
        return b"<svg/>"

    monkeypatch.setattr(vx, "render", flaky)
    monkeypatch.setattr(vx, "browser_available", lambda: True)
    spec = write_spec(tmp_path / "spec.json", {"views": ["attention"], **SMALL})
    out = tmp_path / "out"
    assert lx.main([str(spec), "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert "Chromium went away" in err and len(err.splitlines()) == 1
    assert len(calls) == 2 and (not out.exists() or not any(out.iterdir()))


def test_written_files_are_readable_as_a_plain_open_would_make_them(tmp_path):
    """A researcher's walk: exports were 0600 (mkstemp's mode) under a 022 umask, so co-authors, a web server
    or a CI artifact could not read them."""
    path = vx.write_atomic(tmp_path / "a.csv", "x\n1\n")
    with open(tmp_path / "plain.csv", "w") as f:
        f.write("x\n1\n")
    assert stat.S_IMODE(path.stat().st_mode) == stat.S_IMODE((tmp_path / "plain.csv").stat().st_mode)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~vx.UMASK


def test_export_figure_takes_its_format_from_the_suffix_and_refuses_a_size_it_cannot_make(tmp_path, monkeypatch):
    """viz.export's own API, for a figure made in Python: the format from the suffix (any case) unless fmt is
    given; a format, size or scale it cannot make is a ValueError naming the field, before any browser, and
    leaves no file."""
    fig = viz.weights_heatmap(np.eye(2), row_labels=["a", "b"])
    with pytest.raises(ValueError, match=r"format: 'gif' is not one of \['svg', 'pdf', 'png'\]"):
        vx.export_figure(fig, tmp_path / "fig.gif", width=600, height=400)
    for size, said in (((5, 400), "width: expected a whole number of pixels >= 10, got 5"),
                       ((600, 400.5), "height: expected a whole number of pixels >= 10, got 400.5"),
                       ((600, True), "height: expected a whole number of pixels >= 10, got True")):
        with pytest.raises(ValueError, match=re.escape(said)):
            vx.export_figure(fig, tmp_path / "fig.svg", width=size[0], height=size[1])
    with pytest.raises(ValueError, match="scale: must be positive, got 0"):
        vx.export_figure(fig, tmp_path / "fig.png", width=600, height=400, scale=0)
    assert list(tmp_path.iterdir()) == []
    made = []
    monkeypatch.setattr(vx, "render", lambda f, fmt, **kw: made.append((fmt, kw)) or fmt.encode())
    assert vx.export_figure(fig, tmp_path / "Fig.PDF", width=600, height=400).read_bytes() == b"pdf"
    assert vx.export_figure(fig, tmp_path / "fig.out", width=600, height=400, scale=2, fmt="png").read_bytes() == b"png"
    assert made == [("pdf", dict(width=600, height=400, scale=1.0)), ("png", dict(width=600, height=400, scale=2))]


def test_a_write_that_fails_leaves_neither_a_file_nor_its_temporary(tmp_path):
    (tmp_path / "taken").mkdir()  # os.replace cannot put a file where a folder is
    with pytest.raises(OSError):
        vx.write_atomic(tmp_path / "taken", b"<svg/>")
    assert [p.name for p in tmp_path.iterdir()] == ["taken"] and not any((tmp_path / "taken").iterdir())


def test_write_atomic_leaves_no_temporary_file(tmp_path):
    vx.write_atomic(tmp_path / "a.svg", b"<svg/>")
    vx.write_atomic(tmp_path / "a.svg", b"<svg></svg>")
    assert [p.name for p in tmp_path.iterdir()] == ["a.svg"]
    assert (tmp_path / "a.svg").read_bytes() == b"<svg></svg>"


class _FakeKaleido:
    """A kaleido.Kaleido whose open() takes open_s seconds and close() close_s; what was made, what it did (events:
    "opened", "closing", "closed", in order) and whether it was closed are kept."""

    made: list = []
    open_s = 0.0
    close_s = 0.0

    def __init__(self, **_):
        self.closed = False
        self.events = []
        _FakeKaleido.made.append(self)

    async def open(self):
        await asyncio.sleep(self.open_s)
        self.events.append("opened")

    async def close(self):
        self.events.append("closing")
        await asyncio.sleep(self.close_s)
        self.closed = True
        self.events.append("closed")

    async def calc_fig(self, fig, opts):
        return b"drawn"


@pytest.fixture
def fake_kaleido(monkeypatch):
    import kaleido

    monkeypatch.setattr(kaleido, "Kaleido", _FakeKaleido)
    monkeypatch.setattr(vx, "find_browser", lambda: "/usr/bin/chromium")
    monkeypatch.setattr(_FakeKaleido, "made", [])
    return _FakeKaleido


def test_a_browser_that_does_not_open_in_time_is_closed_not_left_running(monkeypatch, fake_kaleido):
    """A re-read of viz/export.py: a Chromium that did not open within START_TIMEOUT_S was given up with its
    Kaleido never closed, so the browser it had started could run on, one more each try."""
    monkeypatch.setattr(fake_kaleido, "open_s", 30.0)
    monkeypatch.setattr(vx, "START_TIMEOUT_S", 0.2)
    server = vx._Server()
    with pytest.raises(vx.ExportError, match="could not start Chromium"):
        server.start()
    assert len(fake_kaleido.made) == 1 and fake_kaleido.made[0].closed
    assert not server.running


def test_a_browser_given_up_stops_opening_before_it_is_closed(monkeypatch, fake_kaleido):
    """The opening a late Chromium was given up on is stopped first, then the browser closed: left going on during
    the close, an open() that ends while close() still runs starts the browser after its close began, and it runs
    on (here: open ends at 1 s, after the 0.2 s given up on it; the close takes until 2.2 s)."""
    monkeypatch.setattr(fake_kaleido, "open_s", 1.0)
    monkeypatch.setattr(fake_kaleido, "close_s", 2.0)
    monkeypatch.setattr(vx, "START_TIMEOUT_S", 0.2)
    with pytest.raises(vx.ExportError, match="could not start Chromium"):
        vx._Server().start()
    (k,) = fake_kaleido.made
    assert k.events == ["closing", "closed"], k.events  # never opened: not after its close began, not at all


def test_a_render_whose_browser_another_render_stopped_fails_in_one_line_at_once(monkeypatch, fake_kaleido):
    """A re-read of viz/export.py: render read the server's (loop, Kaleido) after start(), and a render on another
    thread that stopped a wedged browser in between left it a None: an AttributeError, a traceback in the app.
    start() hands the pair over under its lock, and a loop stopped since is said in one line, not waited on."""
    server = vx._Server()
    start = server.start

    def start_then_stopped_elsewhere():
        pair = start()
        server.stop()  # what a timed-out render on another thread does
        return pair

    monkeypatch.setattr(server, "start", start_then_stopped_elsewhere)
    began = time.monotonic()
    with pytest.raises(vx.ExportError, match="restarted during this export"):
        server.render({}, {})
    assert time.monotonic() - began < 15
    monkeypatch.setattr(server, "start", start)
    assert server.render({}, {}) == b"drawn"  # the next export starts a fresh one
    server.stop()


def test_no_browser_is_a_one_line_install_hint(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-chromium-here"))
    assert vx.find_browser() is None
    spec = write_spec(tmp_path / "spec.json", {"views": ["attention"]})
    assert lx.main([str(spec), "--out", str(tmp_path / "out")]) == 3
    err = capsys.readouterr().err.strip()
    assert "apt-get install -y chromium" in err and len(err.splitlines()) == 1
    assert f"BROWSER_PATH={tmp_path / 'no-chromium-here'} is not an executable file" in err  # the fault, first
    assert err.startswith(f"lab.export: BROWSER_PATH={tmp_path / 'no-chromium-here'} "), err
    assert not (tmp_path / "out").exists()
    monkeypatch.delenv("BROWSER_PATH")  # unset, where none is found: the install hint alone
    monkeypatch.setattr(vx, "find_browser", lambda: None)
    assert vx.install_help() == vx.INSTALL_HELP



def test_a_download_without_the_browser_browser_path_names_says_what_is_wrong_with_it(tmp_path, monkeypatch):
    """install_help() leads with BROWSER_PATH's fault only where it has one: a download asked of the browser server
    (an app's PNG button) says it as the CLI does, and a BROWSER_PATH that is an executable is not called one that
    is not."""
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-chromium-here"))
    with pytest.raises(vx.NoBrowserError) as raised:
        vx._Server().start()
    assert str(raised.value) == vx.install_help() and str(raised.value).startswith("BROWSER_PATH=")
    monkeypatch.setenv("BROWSER_PATH", sys.executable)  # an executable file: found, nothing wrong with it
    assert vx.find_browser() == sys.executable and vx.install_help() == vx.INSTALL_HELP


def test_warm_up_starts_a_browser_only_where_one_exists_and_none_runs(tmp_path, monkeypatch):
    """viz.export.warm_up (each export panel calls it): a thread that starts Chromium where a browser exists and the
    shared one is not running yet; where none exists, or one runs already, no thread is started at all."""
    started = []

    class Thread:  # the thread warm_up would start: named, not run
        def __init__(self, *, target, name, daemon):
            self.name = name

        def start(self):
            started.append(self.name)

    monkeypatch.setattr(vx.threading, "Thread", Thread)
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-chromium-here"))
    vx.warm_up()  # no browser
    monkeypatch.setenv("BROWSER_PATH", sys.executable)  # a browser (an executable file), and the shared one running
    monkeypatch.setattr(vx._Server, "running", property(lambda self: True))
    vx.warm_up()
    assert started == []
    monkeypatch.setattr(vx._Server, "running", property(lambda self: False))  # a browser, none running: started
    vx.warm_up()
    assert started == ["kaleido-warm-up"]

# ---------------------------------------------------------------------------- the trace
@pytest.mark.parametrize("fmt", ["npz", "safetensors"])
def test_trace_round_trip(tmp_path, models, fmt):
    spec = FigureSpec(sentence_b="她喜欢你们", **SMALL)  # B is longer: A gets a [PAD]
    run = models.run(spec)
    data_path, json_path = save_trace(run, spec, tmp_path / "trace", format=fmt,
                                      config=models.model(spec).model.config)
    assert data_path.name == f"trace.{fmt}" and json_path.name == "trace.json"
    arrays, meta = load_trace(data_path)

    trace = run.trace
    expected = {
        "encoder.0.self_attn.weights": trace.encoder.layers[0].self_attn.weights,
        "decoder.1.cross_attn.scores": trace.decoder.layers[1].cross_attn.scores,
        "decoder.1.self_attn.allowed": trace.decoder.layers[1].self_attn.allowed,
        "encoder.embeddings.positional": trace.encoder.embeddings.positional,
        "decoder.output": trace.decoder.output,
        "logits": trace.logits,
        "src.ids": run.src,
    }
    for name, tensor in expected.items():
        np.testing.assert_array_equal(arrays[name], tensor.numpy(), err_msg=name)
    reference = trace_arrays(run)
    assert arrays.keys() == reference.keys()
    for name in reference:
        assert arrays[name].dtype == reference[name].dtype
        np.testing.assert_array_equal(arrays[name], reference[name], err_msg=name)

    # the file is self-consistent: scores = Q Kᵀ, masked keys get weight exactly 0, rows sum to 1
    q, k = arrays["encoder.1.self_attn.q"], arrays["encoder.1.self_attn.k"]
    np.testing.assert_allclose(arrays["encoder.1.self_attn.scores"], q @ np.swapaxes(k, -1, -2), rtol=1e-5, atol=1e-5)
    w, allowed = arrays["encoder.1.self_attn.weights"], arrays["encoder.1.self_attn.allowed"]
    assert allowed.dtype == np.bool_ and not allowed.all()  # A's [PAD] key is masked
    assert (w[~allowed] == 0).all()
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-6)

    # the sidecar: tokens of each row, the spec (which regenerates the run) and the shapes
    a_row, b_row = meta["rows"]
    assert a_row["src_tokens"] == ["你", "喜", "欢", "她", "[PAD]"]
    assert b_row["src_tokens"] == ["她", "喜", "欢", "你", "们"]
    assert FigureSpec.from_dict(meta["spec"]) == spec
    assert meta["config"]["d_model"] == 16 and meta["config"]["n_heads"] == 2
    assert meta["arrays"]["encoder.0.self_attn.weights"]["shape"] == [2, 2, 5, 5]
    assert load_trace(json_path)[1] == meta and load_trace(tmp_path / "trace")[1] == meta


@pytest.mark.parametrize("fmt", ["npz", "safetensors"])
def test_a_trace_of_a_sentence_with_a_lone_surrogate_is_written_and_reads_it_back(tmp_path, models, monkeypatch,
                                                                                   capsys, fmt):
    """A re-read of lab/tracefile.py: a spec file's "\\ud800" (no character and no UTF-8; the tokenizer reads it as
    [UNK]) drew its figures, but `python -m lab.export --trace` stopped with "UnicodeEncodeError: 'utf-8' codec can't
    encode character '\\ud800'", the sidecar's JSON holding it as itself. It is written as JSON's \\ud800 escape,
    which reads back as the same text, from the sidecar and from inside a .safetensors."""
    spec = FigureSpec(sentence_a="你\ud800她", **SMALL)
    data_path, json_path = save_trace(models.run(spec), spec, tmp_path / "t", format=fmt)
    meta = json.loads(json_path.read_bytes().decode("utf-8"))
    assert meta["rows"][0]["text"] == "你\ud800她" and FigureSpec.from_dict(meta["spec"]) == spec
    assert load_trace(json_path)[1] == meta
    if fmt == "safetensors":
        json_path.unlink()
        assert load_trace(data_path)[1] == meta
    monkeypatch.setattr(vx, "render", lambda fig, fmt, **kw: b"<svg/>")
    monkeypatch.setattr(vx, "browser_available", lambda: True)
    written = tmp_path / "spec.json"  # as a spec file holds it: the \\ud800 escape (ensure_ascii)
    written.write_text(json.dumps({"sentence_a": "你\ud800她", "views": ["tokens", "attention"], **SMALL}))
    assert lx.main([str(written), "--out", str(tmp_path / "out"), "--trace", "--trace-format", fmt, "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    assert load_trace(tmp_path / "out" / "trace")[1]["rows"][0]["text"] == "你\ud800她"


def test_trace_files_never_need_pickle(tmp_path, models):
    spec = FigureSpec(**SMALL)
    data_path, _ = save_trace(models.run(spec), spec, tmp_path / "t.npz", format="npz")
    with np.load(data_path, allow_pickle=False) as npz:  # object arrays would raise here
        assert all(npz[name].dtype != object for name in npz.files)


def test_safetensors_trace_carries_its_sidecar_inside(tmp_path, models):
    spec = FigureSpec(**SMALL)
    data_path, json_path = save_trace(models.run(spec), spec, tmp_path / "t", format="safetensors")
    meta = json.loads(json_path.read_text(encoding="utf-8"))
    json_path.unlink()
    assert load_trace(data_path)[1] == meta


def test_a_trace_not_there_or_of_an_unknown_format_is_named_and_a_config_may_be_a_dict(tmp_path, models):
    spec = FigureSpec(**SMALL)
    with pytest.raises(FileNotFoundError, match=re.escape(f"no trace data file for {tmp_path / 'nothing'} "
                                                          "(looked for .npz and .safetensors)")):
        load_trace(tmp_path / "nothing")
    with pytest.raises(ValueError, match=re.escape("format: 'hdf5' is not one of ['npz', 'safetensors']")):
        save_trace(models.run(spec), spec, tmp_path / "t", format="hdf5")
    assert list(tmp_path.iterdir()) == []
    save_trace(models.run(spec), spec, tmp_path / "t", config={"d_model": 16, "note": "mine"})
    assert load_trace(tmp_path / "t")[1]["config"] == {"d_model": 16, "note": "mine"}


@pytest.mark.parametrize("fmt", ["npz", "safetensors"])
def test_an_unreadable_trace_is_named_with_what_is_wrong_and_never_told_to_unpickle(tmp_path, models, fmt):
    """A researcher's walk: a trace.npz that is not one (a failed download, another file so named) said numpy's
    "This file contains pickled (object) data. If you trust the file you can load it unsafely using the
    `allow_pickle=` keyword argument", advice that runs any code a file carries; a cut one "File is not a zip file",
    a broken sidecar a bare JSONDecodeError, none naming the file. Each is now a TraceFileError (a ValueError) that
    names the file and says what is wrong in one line, and never mentions unpickling."""
    from lab.tracefile import TraceFileError

    spec = FigureSpec(**SMALL)
    data_path, json_path = save_trace(models.run(spec), spec, tmp_path / "t", format=fmt)
    whole = data_path.read_bytes()
    for broken, what in ((b"garbage", data_path.name), (whole[: len(whole) // 3], data_path.name)):
        data_path.write_bytes(broken)
        with pytest.raises(TraceFileError) as caught:
            load_trace(data_path)
        said = str(caught.value)
        assert said.startswith(f"{what}: not a readable Attention Lab trace") and "\n" not in said, said
        assert "pickle" not in said.lower(), said
    data_path.write_bytes(whole)
    json_path.write_text("{not json", encoding="utf-8")
    with pytest.raises(TraceFileError, match=r"^t\.json: not valid JSON \(line 1"):
        load_trace(data_path)
    json_path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(TraceFileError, match=r"^t\.json: not a trace's sidecar \(a JSON list, not an object\)"):
        load_trace(tmp_path / "t")
    assert issubclass(TraceFileError, ValueError)


@needs_browser
def test_cli_trace_flag_writes_the_trace_next_to_the_figures(server, tmp_path):
    spec = write_spec(tmp_path / "spec.json", {"views": ["query"], "format": "png", "scale": 1, **SMALL})
    assert lx.main([str(spec), "--out", str(tmp_path / "out"), "--trace", "--quiet"]) == 0
    arrays, meta = load_trace(tmp_path / "out" / "trace.npz")
    assert meta["rows"][0]["src_tokens"][:4] == ["你", "喜", "欢", "她"]
    assert "encoder.0.self_attn.weights" in arrays
    # height 0 in the spec: the theme's 600, or the figure's own where it is laid out taller (620 px)
    assert vx.png_size((tmp_path / "out" / "query-query-bars.png").read_bytes()) == (900, 620)


# ---------------------------------------------------------------------------- the Streamlit helper
def _app(browser_path: str):
    import os

    os.environ["BROWSER_PATH"] = browser_path
    import plotly.graph_objects as go
    import streamlit as st

    from lab.spec import FigureSpec
    from ui.export import _browser, export_buttons

    _browser.clear()
    st.plotly_chart(go.Figure(go.Bar(x=["你"], y=[1])), key="f")
    export_buttons(go.Figure(go.Bar(x=["你"], y=[1])), "export-attention-weights", FigureSpec(scale=3.125))


@pytest.mark.parametrize("present", [True, False])
def test_export_buttons_offer_every_format_or_explain_the_install(present, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    if present and not HAS_BROWSER:
        pytest.skip("no Chromium")
    from ui.export import _browser

    path = vx.find_browser() if present else str(tmp_path / "missing")
    monkeypatch.setenv("BROWSER_PATH", path or "")
    try:
        at = AppTest.from_function(_app, args=(path,)).run(timeout=60)
    finally:  # the app's 30 s cache of "no browser" would turn off the downloads of the tests after this one
        _browser.clear()
    assert not at.exception
    buttons = at.get("download_button")
    captions = " ".join(c.value for c in at.caption)
    if present:
        labels = [b.proto.label for b in buttons]
        assert labels == ["SVG", "PDF", "PNG 300 dpi"]
        assert [b.proto.id.split("-")[-1] for b in buttons]  # keyed widgets
    else:
        assert not buttons and "apt-get install -y chromium" in captions
        assert f"BROWSER_PATH={path} is not an executable file" in captions  # what is wrong, as the CLI says it


def test_the_download_cache_renders_a_file_once_and_keeps_at_most_its_bytes(monkeypatch):
    """Rendered downloads are shared by the whole server (a class downloading one figure renders it once)
    and bounded by their bytes, not their count (a file is KBs to MBs). The newest
    stay, the oldest go first, a file larger than the bound is served but not kept, and the key is a
    digest of the figure's JSON, not the JSON itself."""
    import ui.export as ue

    calls = []

    def fake_render(fig_json, fmt, *, width, height, scale):
        calls.append(fig_json)
        return bytes(int(fig_json))  # a file of that many bytes

    monkeypatch.setattr(ue.vx, "render_json", fake_render)
    cache = ue.rendered.cache
    cache.clear()
    mib = 2**20
    assert ue.rendered(str(mib), "png", 600, 480, 1.0) == bytes(mib)
    assert ue.rendered(str(mib), "png", 600, 480, 1.0) == bytes(mib) and len(calls) == 1  # rendered once
    assert ue.rendered(str(mib), "svg", 600, 480, 1.0) and len(calls) == 2  # another format: its own file
    n = ue.EXPORT_CACHE_BYTES // (8 * mib) + 4
    for i in range(n):  # more 8 MiB files than the bound holds
        ue.rendered(str(8 * mib + i), "png", 600, 480, 1.0)
        assert cache.currsize <= ue.EXPORT_CACHE_BYTES
    assert len(calls) == 2 + n
    ue.rendered(str(8 * mib + n - 1), "png", 600, 480, 1.0)  # the newest is kept
    assert len(calls) == 2 + n
    ue.rendered(str(mib), "png", 600, 480, 1.0)  # the oldest was dropped: rendered again
    assert len(calls) == 3 + n
    huge = str(ue.EXPORT_CACHE_BYTES + 1)
    assert len(ue.rendered(huge, "png", 600, 480, 1.0)) == ue.EXPORT_CACHE_BYTES + 1  # served, not kept
    assert cache.currsize <= ue.EXPORT_CACHE_BYTES and all(len(repr(k)) < 200 for k in cache)
    cache.clear()


def test_trace_download_zip_holds_a_loadable_trace_and_sidecar(tmp_path, models):
    import zipfile

    from lab.tracefile import trace_files
    from ui.export import _zip

    spec = FigureSpec(**SMALL)
    run = models.run(spec)
    blob = _zip(trace_files(run, spec, fmt="safetensors"))
    with zipfile.ZipFile(__import__("io").BytesIO(blob)) as z:
        assert sorted(z.namelist()) == ["trace.json", "trace.safetensors"]
        z.extractall(tmp_path)
    arrays, meta = load_trace(tmp_path / "trace.safetensors")
    np.testing.assert_array_equal(arrays["decoder.0.cross_attn.weights"],
                                  run.trace.decoder.layers[0].cross_attn.weights.numpy())
    assert meta["rows"][0]["src_tokens"] == ["你", "喜", "欢", "她"]


def test_trace_download_unzips_to_files_others_can_read(tmp_path):
    """A researcher's walk: the trace's zip stored its files as 0600 of no file type (zipfile's default for a ZipInfo),
    so `unzip` made trace.npz and trace.json readable by their owner alone (rw-------), where every figure is written
    as a plain open() makes it: a co-author, a web server or a CI artifact could not read them. Stored as regular files,
    rw-r--r--, as zip(1) stores a file made under the usual 022 umask."""
    import shutil
    import subprocess
    import zipfile

    from ui.export import _zip

    blob = _zip({"trace.npz": b"x", "trace.json": b"{}"})
    with zipfile.ZipFile(__import__("io").BytesIO(blob)) as z:
        for info in z.infolist():
            mode = info.external_attr >> 16
            assert stat.S_ISREG(mode) and stat.S_IMODE(mode) == 0o644, (info.filename, oct(mode))
    if shutil.which("unzip"):
        (tmp_path / "trace.zip").write_bytes(blob)
        subprocess.run(["unzip", "-q", str(tmp_path / "trace.zip"), "-d", str(tmp_path / "out")], check=True)
        for name in ("trace.npz", "trace.json"):
            assert stat.S_IMODE((tmp_path / "out" / name).stat().st_mode) & 0o044 == 0o044  # group and others read


@pytest.mark.parametrize("derived", [True, False])
@pytest.mark.parametrize("sizes", [dict(SMALL, sentence_b="我爱你们大家都好"), dict(d_model=32, n_heads=8, n_layers=3)])
def test_the_attention_maps_size_is_known_before_the_trace_is_built(models, sizes, derived):
    from lab.tracefile import attention_map_bytes

    run = models.run(FigureSpec(**sizes))
    arrays = trace_arrays(run, derived=derived)
    maps = ("scores", "scaled", "masked", "weights", "allowed")
    assert attention_map_bytes(run, derived=derived) == sum(
        a.nbytes for name, a in arrays.items() if name.rsplit(".", 1)[-1] in maps)


def test_a_trace_too_big_for_the_server_is_not_built_and_says_how_to_get_it(monkeypatch):
    from streamlit.testing.v1 import AppTest

    import ui.export

    monkeypatch.setattr(ui.export, "TRACE_DOWNLOAD_BYTES", ui.export.TRACE_DOWNLOAD_BYTES)  # restored after

    def script():
        import streamlit as st

        import ui.export as ue
        from lab.compute import load_model
        from lab.spec import FigureSpec
        from lab.views import Models

        spec = FigureSpec(d_model=16, n_heads=2, n_layers=2, d_ff=32)
        ue.TRACE_DOWNLOAD_BYTES = st.session_state["cap"]
        ue.trace_download(Models(load_model).run(spec), spec, "trace")

    from lab.compute import load_model
    from lab.tracefile import attention_map_bytes
    from lab.views import Models

    size = attention_map_bytes(Models(load_model).run(FigureSpec(**SMALL)))
    for cap, offered in ((size, True), (size - 1, False)):
        at = AppTest.from_function(script, default_timeout=60)
        at.session_state["cap"] = cap
        at.run()
        assert not at.exception
        buttons = at.get("download_button")
        said = [c.value for c in at.caption if "python -m lab.export SPEC.json --out figures --trace" in c.value]
        assert (len(buttons), len(said)) == ((2, 0) if offered else (0, 1)), (cap, size)


def test_a_figure_laid_out_taller_or_shorter_than_the_theme_is_exported_at_its_own_height_unless_the_spec_says():
    spec = FigureSpec(theme="paper")  # 600 x 480
    assert spec.export_size(None) == (600, 480)
    assert spec.export_size(620) == (600, 620)  # view 5's three bar charts, laid out 620 px tall
    # a one-row matrix laid out short: at the theme's 480 px its one cell was 300 x 330 px (a regression walk)
    assert spec.export_size(288) == (600, 288)
    assert FigureSpec(theme="paper", height=400).export_size(620) == (600, 400)  # the spec's own size wins
    assert FigureSpec(theme="paper", height=400).export_size(288) == (600, 400)


@needs_browser
def test_the_query_bars_export_at_their_own_height_and_a_figure_that_cannot_fit_is_named(server, models, monkeypatch):
    spec = FigureSpec(views=("query",), theme="paper", format="png", scale=1.0, **SMALL)
    files = {p.name: p.data for p in lx.plan_spec(spec, models)}
    bars = build_view("query", spec, models).panels[0].figure
    assert bars.layout.height > 480 and vx.png_size(files["query-query-bars.png"]) == (600, bars.layout.height)

    def cramped(fig, fmt, **kw):
        raise vx.ExportError("the plot does not fit in 600x480 px")

    monkeypatch.setattr(vx, "render", cramped)
    with pytest.raises(vx.ExportError, match=r"^query-query-bars: the plot does not fit"):  # a render's failure
        lx.plan_spec(spec, models)
    # a size the margins leave no plot in is a bad spec naming the figure, before anything is rendered
    with pytest.raises(SpecError, match=r"^height: query-query-context: 260 px leaves the plot"):
        lx.plan_spec(dataclasses.replace(spec, width=340, height=260), models)


def test_the_export_says_each_notice_once_and_warns_of_a_width_its_figures_are_not_laid_out_for(models,
                                                                                                monkeypatch):
    monkeypatch.setattr(vx, "render", lambda fig, fmt, **kw: b"<svg/>")  # the layout is not at stake here
    said: list[str] = []
    spec = FigureSpec(views=("tokens", "attention", "heads"), sentence_b="我😀你", theme="paper", width=340,
                      height=260, **SMALL)
    lx.plan_spec(spec, models, warn=said.append)
    assert sum("[UNK]" in s for s in said) == 1, said
    assert sum("laid out for 600 px wide and drawn at 340" in s for s in said) == 1
    said.clear()
    lx.plan_spec(dataclasses.replace(spec, width=0, height=0), models, warn=said.append)
    assert not any("laid out for" in s for s in said)


def test_a_figure_too_tall_for_a_png_at_its_own_height_is_a_bad_spec_naming_it_before_any_rendering(
        tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(vx, "render", lambda *a, **k: pytest.fail("nothing is rendered for a bad spec"))
    spec = write_spec(tmp_path / "spec.json", {"views": ["heads"], "d_model": 64, "n_heads": 16, "n_layers": 12,
                                               "d_ff": 64, "format": "png", "scale": 6})
    assert lx.main([str(spec), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("lab.export: bad spec: scale: heads-") and len(err.splitlines()) == 1, err
    assert not (tmp_path / "out").exists()


def test_the_cli_prints_each_file_it_wrote_unless_quiet(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(vx, "render", lambda fig, fmt, **kw: b"<svg/>")
    monkeypatch.setattr(vx, "browser_available", lambda: True)
    spec = write_spec(tmp_path / "spec.json", {"views": ["attention"], **SMALL})
    assert lx.main([str(spec), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert sorted(printed) == sorted(str(p) for p in (tmp_path / "out").iterdir()) and len(printed) > 3
    assert lx.main([str(spec), "--out", str(tmp_path / "again"), "--quiet"]) == 0
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("fault", ["no spec file", "out is a file", "out is under a file", "absent device"])
def test_the_cli_says_in_one_line_why_it_cannot_start(tmp_path, monkeypatch, capsys, fault):
    """A spec that cannot be read or a --out that is a file, or under one (it was found only once every figure was
    rendered, a NotADirectoryError, exit 1): exit 2, naming it, nothing rendered. A device this machine lacks (a spec
    written on a GPU machine, run on a laptop): exit 1, naming the devices it has."""
    from model.device import DEVICE_CHOICES, available_devices, pick_device

    monkeypatch.setattr(vx, "render", lambda *a, **k: pytest.fail("nothing is rendered"))
    spec, out = tmp_path / "spec.json", tmp_path / "out"
    absent = [d for d in DEVICE_CHOICES if d not in (*available_devices(), "auto")]
    if fault == "absent device" and not absent:
        pytest.skip("this machine has every device")
    write_spec(spec, {"views": ["attention"], **SMALL, **({"device": absent[0]} if fault == "absent device" else {})})
    if fault == "no spec file":
        spec = tmp_path / "nowhere.json"
    if fault == "out is a file":
        out.write_text("x")
    if fault == "out is under a file":
        out.write_text("x")
        out = out / "figures"
    monkeypatch.setattr(vx, "browser_available", lambda: True)
    code = lx.main([str(spec), "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    said = {"no spec file": (2, f"lab.export: cannot read {spec}: "),
            "out is a file": (2, f"lab.export: --out {out} exists and is not a folder"),
            "out is under a file": (2, f"lab.export: --out {out}: {out.parent} is not a folder"),
            "absent device": (1, f"lab.export: ValueError: device={absent[0]!r} is not available on this machine; "
                                 f"available: {available_devices()}")}[fault]
    assert code == said[0] and err.startswith(said[1]), err
    assert out.is_file() if fault == "out is a file" else not out.exists()
    assert fault != "out is under a file" or out.parent.read_text() == "x"
    assert pick_device("auto") == pick_device(available_devices()[0])
    with pytest.raises(ValueError, match="device='tpu' is unknown"):
        pick_device("tpu")


def test_out_may_be_folders_not_made_yet_and_a_path_that_cannot_be_looked_up_is_said_in_one_line(
        tmp_path, monkeypatch, capsys):
    """lab.export.out_problem: --out may be any number of folders not made yet (export_spec makes them, parents
    and all); under a file, the file it would have to be made in is named, however deep; a path the system cannot
    look up (a name longer than a file name may be) is an exit 2 in one line, not a traceback."""
    assert lx.out_problem(tmp_path / "new" / "figures" / "2026") is None
    (tmp_path / "paper.pdf").write_text("x")
    said = lx.out_problem(tmp_path / "paper.pdf" / "a" / "b")
    assert said == f"--out {tmp_path / 'paper.pdf' / 'a' / 'b'}: {tmp_path / 'paper.pdf'} is not a folder"
    monkeypatch.setattr(vx, "render", lambda *a, **k: pytest.fail("nothing is rendered"))
    spec = write_spec(tmp_path / "spec.json", {"views": ["attention"], **SMALL})
    out = tmp_path / ("x" * 300) / "figures"  # ENAMETOOLONG: os.stat raises, as for a folder this user may not read
    assert lx.main([str(spec), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"lab.export: --out {out}: ") and len(err.splitlines()) == 1 and "Traceback" not in err


def test_the_old_command_says_where_it_moved_and_fails():
    proc = subprocess.run([sys.executable, "-m", "viz.export", "spec.json", "--out", "x"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "python -m lab.export" in proc.stderr


@needs_trained
def test_the_translate_views_trace_is_the_run_its_figures_show(models, tmp_path, monkeypatch):
    """View 7 draws the paper-mask run whatever the Mask (lab.views.decoding_spec): its trace is that run."""
    monkeypatch.setattr(vx, "render", lambda fig, fmt, **kw: b"<svg/>")
    spec = FigureSpec(model="zh-en", views=("translate",), mask="none")
    files = {p.name: p.data for p in lx.plan_spec(spec, models, trace_format="npz")}
    (tmp_path / "trace.npz").write_bytes(files["trace.npz"])
    (tmp_path / "trace.json").write_bytes(files["trace.json"])
    arrays, meta = load_trace(tmp_path / "trace.npz")
    assert meta["spec"]["mask"] == "paper"
    shown = {p.key: p for p in build_view("translate", spec, models).panels}["decoder-self"].table.to_numpy()
    n = shown.shape[0]
    np.testing.assert_allclose(arrays["decoder.0.self_attn.weights"][0, 0, :n, :n], shown, atol=1e-6)


@needs_browser
def test_cell_values_are_drawn_in_black_or_white_whichever_reads_better_on_their_cell(server, figures):
    # plotly.js's own choice, #444 or white by brightness, put #444 (2.7:1) on Viridis's and Cividis's mid
    # tones; here the exported SVG is read back: each value's text has the colour picked for its cell
    fig = figures["attention"]  # the paper theme writes the weights into their cells
    heat = next(t for t in fig.data if (t.meta or {}).get("role") == "values")
    svg = server.render(fig, "svg", width=600, height=480).decode()
    drawn = {text: color for color, text in re.findall(
        r'<tspan style="[^"]*fill: ?(#[0-9a-f]{6}|rgb\([^)]*\))[^"]*">([^<]+)</tspan>', svg)}
    wanted = {cell_text(t)[0]: cell_text(t)[1] for row in heat.text for t in row if t}
    assert wanted and set(wanted.values()) <= {"#000000", "#ffffff"}
    rgb = {"#000000": "rgb(0, 0, 0)", "#ffffff": "rgb(255, 255, 255)"}
    for text, color in wanted.items():
        assert drawn.get(text) in (color, rgb[color]), (text, color, drawn.get(text))


@needs_browser
@pytest.mark.parametrize("theme", ["default", "dark", "paper", "slide"])
def test_the_context_vectors_keys_keep_their_patterns_in_a_static_export(server, models, theme):
    """View 5's stacked bars carry a pattern per key besides its colour (WCAG 1.4.1): the exported SVG draws each
    key's bars, and its legend entry, filled with a pattern of its own, opaque, in the plot's colour."""
    spec = FigureSpec(theme=theme, sentence_a="你喜欢她们吗", **SMALL)  # 6 keys: the encoder's last query sees all
    spec = dataclasses.replace(spec, query=5)
    fig = {p.key: p for p in build_view("query", spec, models).panels}["query-context"].figure
    keys = [i for i, t in enumerate(fig.data) if t.type == "bar"]
    assert len(keys) == 6
    svg = server.render(fig, "svg", width=900, height=600).decode()
    patterns = dict(re.findall(r'<pattern id="([^"]+)"[^>]*>(.*?)</pattern>', svg))
    fills = set(re.findall(r"fill: ?url\('?#([^')]+)'?\)", svg))
    drawn = []
    for i in keys:
        bar, legend = next(p for p in patterns if p.endswith(f"-t{i}") and "legend" not in p), f"-legend-t{i}"
        assert bar in fills and any(p.endswith(legend) and p in fills for p in patterns), i
        shape = re.sub(r"<rect[^>]*/>", "", patterns[bar])  # the pattern less its background, the bar's colour
        assert 'opacity="0.5"' not in shape and shape, (i, shape)
        bg = fig.layout.plot_bgcolor.lstrip("#")
        assert f"rgb({int(bg[:2], 16)}, {int(bg[2:4], 16)}, {int(bg[4:], 16)})" in shape  # in the plot's colour
        drawn.append(re.sub(r"rgb\([^)]*\)", "", shape))  # its shape, whatever its colour
    assert len(set(drawn)) == len(drawn)


def test_an_export_records_what_made_it_commit_packages_and_model_files(models, monkeypatch, tmp_path):
    """provenance.json beside the figures: a reviewer's "with which code, torch and weights?". A random model's
    weights come from torch's generator (the torch version matters), a trained model's from its files."""
    import hashlib

    import torch

    import lab.provenance as prov

    monkeypatch.setattr(vx, "render", lambda fig, fmt, **kw: b"figure")  # no browser needed: only the files
    spec = FigureSpec(views=("tokens",), **SMALL)
    files = {p.name: p.data for p in lx.plan_spec(spec, models)}
    made = json.loads(files["provenance.json"])
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    if head.returncode == 0:  # a git checkout (CI's clean clone is one)
        assert made["attention_lab"]["commit"] == head.stdout.strip()
        assert isinstance(made["attention_lab"]["changed"], bool)
    assert made["packages"]["torch"] == torch.__version__ and made["python"] == sys.version.split()[0]
    char = ROOT / "assets" / "tokenizers" / "char.json"
    assert made["tokenizers"]["char.json"] == hashlib.sha256(char.read_bytes()).hexdigest()
    if trained_available():
        weights = ROOT / "assets" / "models" / "zh-en" / "model.safetensors"
        assert made["trained_models"]["zh-en"]["model.safetensors"] == hashlib.sha256(weights.read_bytes()).hexdigest()
        assert set(made["trained_models"]) >= {"zh-en", "zh-en-nope"}
    monkeypatch.setattr(prov, "ROOT", tmp_path)  # not a git checkout (an unpacked copy): said, not guessed
    assert prov.commit() == {"commit": "unknown"}


def test_provenance_says_unknown_or_not_installed_where_it_cannot_tell(monkeypatch, tmp_path):
    """No git on the machine, a package missing, the trained models' folder missing: said so, never a crash."""
    import lab.provenance as prov

    def no_git(*args, **kwargs):
        raise FileNotFoundError("git")

    monkeypatch.setattr(prov.subprocess, "run", no_git)
    assert prov.commit() == {"commit": "unknown"}
    assert prov._version("attention-lab-no-such-package") == "not installed"
    monkeypatch.setattr(prov, "MODELS_DIR", tmp_path / "models")
    assert prov.file_hashes(tmp_path / "models") == {} and prov.trained_models() == {}


@needs_browser
@pytest.mark.parametrize("theme", ["paper", "default"])
def test_the_clock_exports_without_a_blank_band_under_its_circles(theme):
    """The clock's circles stay round (their y axes give up domain toward the top): exported at its theme's
    size, a blank band ~1/3 of the image lay under them. It is exported only as tall as the circles need at
    that width (viz.export.round_height), and any other figure at the height asked for."""
    from PIL import Image

    from lab.export import cli_models
    from viz.theme import design_size

    result = build_view("positional", FigureSpec(views=("positional",), theme=theme), cli_models())
    figs = {p.key: p.figure for p in result.panels if p.figure is not None}
    width, height = design_size(theme, figs["pe-rotation"])
    png = Image.open(io.BytesIO(vx.render(figs["pe-rotation"], "png", width=width, height=height)))
    assert png.size[0] == width and 0.5 * height < png.size[1] < 0.9 * height, (png.size, height)
    ink = np.asarray(png.convert("L")) < 200  # dark pixels: text, axes, points
    rows = np.flatnonzero(ink.any(axis=1))
    assert png.size[1] - rows.max() < 0.06 * png.size[1], (rows.max(), png.size)  # the x titles near the bottom
    other = vx.render(figs["pe-matrix"], "png", width=width, height=height)
    assert vx.png_size(other) == (width, height)



@needs_browser
@needs_trained
def test_the_manifest_keeps_what_the_app_says_above_a_view(models):
    """A researcher's walk: view 6 exported for an English pair uses the trained zh-en models, and the app's notice
    that they never saw these letters reached only the export's stderr. Each panel's entry keeps its view's
    notices; a view with none has no such key."""
    spec = FigureSpec(views=("order",), model="zh-en", sentence_a="the cat", sentence_b="cat the", format="svg")
    built = lx.build_spec(spec, models)
    (said,) = [result.notices for _, result in built]
    assert any("never occur in the sentences the trained models learned from" in n for n in said)
    manifest = json.loads(next(f.data for f in lx.plan_spec(spec, models, built=built) if f.name == "manifest.json"))
    assert manifest and all(e["notices"] == said for e in manifest)
    plain = json.loads(next(f.data for f in lx.plan_spec(FigureSpec(views=("tokens",)), models)
                            if f.name == "manifest.json"))
    assert plain and all("notices" not in e for e in plain)  # 你喜欢她 / 她喜欢你: nothing to say


def test_a_library_logging_what_it_ignores_with_a_traceback_prints_one_line(capfd):
    """choreographer logs "JSONError decoding message. Ignoring" with its traceback now and then (a researcher's
    walk saw it once in four exports); the export says one line, never a traceback."""
    import logging

    vx.quiet_chatty_loggers()  # as the export server does when it starts
    logger = logging.getLogger(vx.CHATTY_LOGGERS[0])
    assert hasattr(logger, "debug2")  # still logistro's own logger
    handler = logging.StreamHandler()
    logger.addHandler(handler)
    try:
        try:
            json.loads("{not json")
        except ValueError:
            logger.exception("JSONError decoding message. Ignoring")
    finally:
        logger.removeHandler(handler)
    err = capfd.readouterr().err.strip()
    assert err.startswith("JSONError decoding message. Ignoring: Expecting property name")
    assert "Traceback" not in err and len(err.splitlines()) == 1


def test_text_a_spreadsheet_would_run_as_a_formula_is_quoted_in_the_csv():
    """A bad-input walk: the translations CSV carried a sentence '=HYPERLINK("http://x","click")你' as it was,
    which a spreadsheet runs. Such text now starts with ' (OWASP); numbers, negative ones too, stay numbers."""
    table = pd.DataFrame({"sentence": ['=HYPERLINK("http://x","click")你', "@SUM(A1)", "-2+3", "-", "你喜欢她"],
                          "score": [-0.5, 1.0, -2.0, 0.25, 3.0]})
    rows = list(csv.reader(io.StringIO(vx.table_csv(table).decode("utf-8-sig"))))
    assert rows[0] == ["sentence", "score"]
    assert [r[0] for r in rows[1:]] == ["'=HYPERLINK(\"http://x\",\"click\")你", "'@SUM(A1)", "'-2+3", "-", "你喜欢她"]
    assert [float(r[1]) for r in rows[1:]] == [-0.5, 1.0, -2.0, 0.25, 3.0]


def test_the_same_weight_reads_the_same_from_every_csv_and_equals_the_models_float32_exactly(models):
    """A researcher's walk: view 3's weights CSV wrote head 0's first weight 0.27644914388656616 and view 4's grid
    0.27644914, the same float32 written as float64 there and as float32's shortest digits here; read back (pandas,
    numpy: float64) they differed by ~5e-9, so joining two downloads found them unequal. A float32 column is now
    written as its exact value, as float64 writes it: every CSV gives the model's own float32 weights, exactly."""
    from model.analysis import record

    spec = FigureSpec(views=("attention", "heads"), **SMALL)

    def read(view, key, **kw):
        table = {p.key: p for p in build_view(view, spec, models).panels}[key].table
        return pd.read_csv(io.BytesIO(vx.table_csv(table)), encoding="utf-8-sig", **kw)

    step = read("attention", "attention-weights", index_col=0).to_numpy()
    grid = read("heads", "heads-grid", index_col=[0, 1]).loc["head 0"].to_numpy()
    every = read("heads", "layers-heads", index_col=[0, 1]).loc["layer 0 head 0"].to_numpy()
    model = record(models.run(spec).trace, "encoder self", 0).weights[0, 0].numpy()  # float32 (T, T)
    assert model.dtype == np.float32
    for name, written in (("view 3", step), ("view 4 grid", grid), ("view 4 every layer", every)):
        assert np.array_equal(written, model.astype(np.float64)), name


@pytest.mark.parametrize("sentence", ["你喜欢她们吗", "Your journey starts with one step"])
def test_every_number_a_figure_draws_in_bars_or_cells_is_in_its_csv(models, sentence):
    """A reviewer's walk: the numbers behind a figure are the ones it draws. View 5's context vector draws each
    key's wⱼ·vⱼ as a bar, and its CSV held v and z only (the textbook's, z alone): no bar's height was in it."""
    spec = FigureSpec(sentence_a=sentence, query=1, views=("attention",), **SMALL)
    checked = 0
    for view in ("positional", "attention", "heads", "query", "order"):
        for panel in build_view(view, spec, models).panels:
            if panel.figure is None or panel.table is None:
                continue
            drawn = np.concatenate([np.asarray(t.z if t.type == "heatmap" else t.y, dtype=float).ravel()
                                    for t in panel.figure.data if t.type in ("heatmap", "bar")] or [np.empty(0)])
            drawn = drawn[np.isfinite(drawn)]
            table = pd.read_csv(io.BytesIO(vx.table_csv(panel.table)), encoding="utf-8-sig")
            written = table.select_dtypes("number").to_numpy(dtype=float).ravel()
            written = np.sort(written[np.isfinite(written)])
            for x in drawn:  # each drawn number (float32 in the figure) among the written ones
                near = written[np.clip(np.searchsorted(written, x), 1, len(written) - 1) - 1:][:2]
                assert np.isclose(near, x, rtol=1e-6, atol=1e-7).any(), (view, panel.key, x)
            checked += panel.key.endswith("context")
    assert checked == (2 if sentence.startswith("Your") else 1)


def test_the_cli_makes_view_6s_passes_once_for_its_check_and_its_figures(monkeypatch):
    """validate_for_export asks whether view 6 draws attention (order_draws_attention: its passes of A and B with and
    without PE), and view 6's figures read the same passes: the CLI's models make them once per spec, not twice."""
    import lab.views

    calls = []
    real = lab.views.order_data
    monkeypatch.setattr(lab.views, "order_data", lambda spec, models: calls.append(spec) or real(spec, models))
    spec = FigureSpec(views=("order",), **SMALL)
    assert [view for view, _ in lx.build_spec(spec, lx.cli_models())] == ["order"]
    assert len(calls) == 1, calls


def test_auto_picks_cuda_then_mps_then_cpu_as_it_says_on_a_machine_with_both(monkeypatch):
    """model.device.pick_device says "auto" picks cuda, then mps, then cpu; available_devices put mps first where
    both were present, so auto picked mps."""
    import torch

    from model.device import available_devices, pick_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert available_devices() == ["cuda", "mps", "cpu"]
    assert pick_device("auto") == torch.device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert available_devices() == ["mps", "cpu"] and pick_device("auto") == torch.device("mps")
