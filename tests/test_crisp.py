"""viz/crisp.py without a browser: the enlargement factor, and SVG and PDF files made here."""

from __future__ import annotations

import base64
import io
import json
import zlib

import numpy as np
import pikepdf
import pytest
from conftest import svg_pngs
from PIL import Image

from viz import crisp


def test_factor_reaches_the_target_and_never_the_cap():
    for longest in range(1, 5000):
        for other in (1, longest):
            k = crisp.factor(longest, other)
            assert k == crisp.factor(other, longest) >= 1
            if longest >= crisp.TARGET_PX:
                assert k == 1
            else:
                assert k * longest <= crisp.MAX_PX
                assert k * longest >= crisp.TARGET_PX or (k + 1) * longest > crisp.MAX_PX  # the cap stops it
                assert (k - 1) * longest < crisp.TARGET_PX  # the smallest such factor


def png_uri(pixels: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return b"data:image/png;base64," + base64.b64encode(out.getvalue())


def test_crisp_svg_enlarges_each_png_and_changes_nothing_else():
    rng = np.random.default_rng(0)
    cells = rng.integers(0, 256, (3, 5, 4), dtype=np.uint8)  # 3 rows x 5 columns, RGBA
    large = rng.integers(0, 256, (2, crisp.TARGET_PX, 3), dtype=np.uint8)  # already wide enough
    svg = (b'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">'
           b'<image width="300" height="180" xlink:href="' + png_uri(cells) + b'" style="image-rendering: pixelated;"/>'
           b'<image width="300" height="10" xlink:href="' + png_uri(large) + b'"/><text>0:\xe4\xbd\xa0</text></svg>')
    out = crisp.crisp_svg(svg)
    uris = [part.split(b'"')[0] for part in out.split(b'xlink:href="')[1:]]
    (first, drawn), (second, _) = svg_pngs(out)
    k = crisp.factor(5, 3)
    assert first.shape == (3 * k, 5 * k, 4) and drawn == (300, 180)
    assert np.array_equal(first, np.repeat(np.repeat(cells, k, 0), k, 1))
    assert uris[1] == png_uri(large) and np.array_equal(second, large)  # left as it was
    assert out.replace(uris[0], b"") == svg.replace(png_uri(cells), b"")  # nothing else changed
    assert crisp.crisp_svg(svg) == out  # the same bytes every time


def image_pdf(rgb: np.ndarray, alpha: np.ndarray | None, mask_bits: bytes | None = None) -> bytes:
    """A one-page PDF drawing `rgb` (with `alpha` as its soft mask) and, optionally, a 1-bit stencil."""
    pdf = pikepdf.new()
    h, w = rgb.shape[:2]
    image = pikepdf.Stream(pdf, zlib.compress(rgb.tobytes()), Type=pikepdf.Name.XObject,
                           Subtype=pikepdf.Name.Image, Width=w, Height=h, ColorSpace=pikepdf.Name.DeviceRGB,
                           BitsPerComponent=8, Filter=pikepdf.Name.FlateDecode)
    if alpha is not None:
        image.SMask = pikepdf.Stream(pdf, zlib.compress(alpha.tobytes()), Type=pikepdf.Name.XObject,
                                     Subtype=pikepdf.Name.Image, Width=w, Height=h,
                                     ColorSpace=pikepdf.Name.DeviceGray, BitsPerComponent=8,
                                     Filter=pikepdf.Name.FlateDecode)
    xobjects = {"/Im0": image}
    draw = b"q 200 0 0 120 10 10 cm /Im0 Do Q"
    if mask_bits is not None:
        xobjects["/Im1"] = pikepdf.Stream(pdf, mask_bits, Type=pikepdf.Name.XObject, Subtype=pikepdf.Name.Image,
                                          Width=8, Height=1, ImageMask=True, BitsPerComponent=1)
        draw += b" q 80 0 0 10 10 140 cm /Im1 Do Q"
    page = pikepdf.Page(pikepdf.Dictionary(Type=pikepdf.Name.Page, MediaBox=[0, 0, 300, 200],
                                           Resources=pikepdf.Dictionary(XObject=pikepdf.Dictionary(xobjects)),
                                           Contents=pikepdf.Stream(pdf, draw)))
    pdf.pages.append(page)
    out = io.BytesIO()
    pdf.save(out, deterministic_id=True)
    return out.getvalue()


def images(pdf: bytes) -> dict[str, np.ndarray]:
    with pikepdf.open(io.BytesIO(pdf)) as doc:
        image = doc.pages[0].Resources.XObject.Im0
        out = {"rgb": np.frombuffer(image.read_bytes(), np.uint8).reshape(int(image.Height), int(image.Width), 3)}
        if "/SMask" in image:
            s = image.SMask
            out["alpha"] = np.frombuffer(s.read_bytes(), np.uint8).reshape(int(s.Height), int(s.Width))
        if "/Im1" in doc.pages[0].Resources.XObject:
            out["stencil"] = doc.pages[0].Resources.XObject.Im1.read_bytes()
        return out


@pytest.mark.parametrize("with_alpha", [False, True])
def test_crisp_pdf_enlarges_each_image_and_its_soft_mask_alike(with_alpha):
    rng = np.random.default_rng(1)
    rgb = rng.integers(0, 256, (4, 6, 3), dtype=np.uint8)
    alpha = rng.integers(0, 256, (4, 6), dtype=np.uint8) if with_alpha else None
    pdf = image_pdf(rgb, alpha, mask_bits=b"\xa5")
    out = crisp.crisp_pdf(pdf)
    got, k = images(out), crisp.factor(6, 4)
    assert np.array_equal(got["rgb"], crisp.enlarge(rgb, k))
    if with_alpha:
        assert np.array_equal(got["alpha"], crisp.enlarge(alpha, k))
    assert got["stencil"] == b"\xa5"  # a 1-bit stencil mask is not an image of cells: left alone
    assert crisp.crisp_pdf(pdf) == out  # the same bytes every time


def test_crisp_pdf_returns_a_file_without_small_images_unchanged():
    pdf = image_pdf(np.zeros((1, crisp.TARGET_PX, 3), np.uint8), None)
    assert crisp.crisp_pdf(pdf) == pdf


def test_crisp_pdf_leaves_a_jpeg_alone():
    """A JPEG (DCTDecode) is a photograph, not plotly.js's cells: it is not enlarged (nor decoded)."""
    jpeg = io.BytesIO()
    Image.fromarray(np.full((4, 6, 3), 200, np.uint8)).save(jpeg, format="JPEG")
    pdf = pikepdf.new()
    image = pikepdf.Stream(pdf, jpeg.getvalue(), Type=pikepdf.Name.XObject, Subtype=pikepdf.Name.Image, Width=6,
                           Height=4, ColorSpace=pikepdf.Name.DeviceRGB, BitsPerComponent=8,
                           Filter=pikepdf.Name.DCTDecode)
    pdf.pages.append(pikepdf.Page(pikepdf.Dictionary(
        Type=pikepdf.Name.Page, MediaBox=[0, 0, 100, 100],
        Resources=pikepdf.Dictionary(XObject=pikepdf.Dictionary({"/Im0": image})),
        Contents=pikepdf.Stream(pdf, b"q 60 0 0 40 10 10 cm /Im0 Do Q"))))
    out = io.BytesIO()
    pdf.save(out, deterministic_id=True)
    assert crisp.crisp_pdf(out.getvalue()) == out.getvalue()


def test_crisp_pdf_given_the_heatmaps_cells_enlarges_only_images_of_their_size():
    """Chromium prints a pattern fill (a bar's, a masked cell's hatching) as an image the size of the plot: it is not
    a heatmap's cells, and was enlarged ×7 as if it were (a researcher's walk: a 7.4 MB PDF of a bar chart)."""
    rgb = np.random.default_rng(2).integers(0, 256, (4, 6, 3), dtype=np.uint8)
    pdf = image_pdf(rgb, None)
    assert crisp.crisp_pdf(pdf, cells={(4, 6), (5, 5)}) == pdf  # (width, height): 6 x 4 is no heatmap's
    assert np.array_equal(images(crisp.crisp_pdf(pdf, cells={(6, 4)}))["rgb"], crisp.enlarge(rgb, crisp.factor(6, 4)))


def test_heatmap_cells_reads_a_heatmaps_columns_and_rows_as_lists_or_plotlys_typed_arrays():
    import plotly.graph_objects as go

    from viz import export as vx

    fig = go.Figure([go.Heatmap(z=np.zeros((3, 4), np.float32)), go.Heatmap(z=[[1, 2], [3, 4], [5, 6]]),
                     go.Scatter(y=[1, 2])])
    assert crisp.heatmap_cells(vx.figure_dict(fig)) == {(4, 3), (2, 3)}
    assert crisp.heatmap_cells(json.loads(vx.figure_json(fig))) == {(4, 3), (2, 3)}  # the app's: {"shape": "3, 4"}
    assert crisp.heatmap_cells({"data": [{"type": "heatmap", "z": [[1, 2], [3]]}]}) == set()
