"""Themes, colour scales and the Plotly config (viz.figure_config) shared by every figure.

A theme is applied last by each builder (`theme=` argument) and can be re-applied to any finished
figure with `apply_theme(fig, name)`. Themes only restyle (fonts, colours, lines, colour bars; a trace drawn in
a colour of the QUALITATIVE palette takes the theme's shade of it); they never change the data a figure shows.
"""

from __future__ import annotations

import base64
import re
from functools import cache, lru_cache

import numpy as np
import plotly.colors as pc
import plotly.graph_objects as go
from plotly.graph_objects import Figure as GoFigure  # noqa: I001 - bound once (go.X is a lazy lookup)

from viz.fig import Fig, Node, Patch, as_fig, node
from viz.labels import cell_texts

# Every family list starts with a font that has Chinese glyphs, so "你喜欢她" renders.
FONT_SANS = '"Noto Sans CJK SC", "Noto Sans", "DejaVu Sans", Arial, sans-serif'
FONT_SERIF = '"Noto Serif CJK SC", "Noto Serif", "DejaVu Serif", "Times New Roman", serif'

# The same lists for PDF export (viz.export.render): TrueType fonts only, where installed. Chromium (Skia)
# embeds a TrueType font as a CID font (/FontFile2) but the CFF-based Noto CJK fonts as Type 3 fonts, which
# publishers' checkers refuse (IEEE PDF eXpress, ACM, ICML). Latin in Liberation (Times / Arial metrics,
# narrower than Noto: a label laid out for Noto still fits), Chinese in AR PL UMing (serif, a Ming face) or
# WenQuanYi Zen Hei (sans), symbols (−, √, ᵀ) in DejaVu; the Noto fonts stay last for a machine without
# those (Debian: fonts-liberation fonts-arphic-uming fonts-wqy-zenhei fonts-dejavu-core). A PDF is not read
# by an SVG viewer that takes only the first family, so its list need not start with a Chinese font.
PDF_FONTS = {
    FONT_SANS: '"Liberation Sans", "WenQuanYi Zen Hei", "DejaVu Sans", ' + FONT_SANS,
    FONT_SERIF: '"Liberation Serif", "AR PL UMing CN", "DejaVu Serif", ' + FONT_SERIF,
}

# Colour scales (all colour-blind safe).
WEIGHTS_COLORSCALE = "Viridis"  # sequential, fixed [0, 1]; has no grey, and grey means "masked"
SCORES_COLORSCALE = "RdBu_r"  # diverging (ColorBrewer RdBu), blue < 0 < red, symmetric about 0
MAGNITUDE_COLORSCALE = "Cividis"  # sequential from 0: |differences|, entropies
MASK_ALLOWED_COLOR = "#d9ecf2"  # "may attend" cells in the boolean mask figure
# Okabe & Ito (2008) qualitative palette, black left out (it vanishes on the dark theme). The builders draw in
# these; apply_theme gives each trace drawn in one of them the theme's shade of it ("palette"): on a white plot,
# orange, sky blue and yellow were 2.2, 2.3 and 1.2:1, under the 3:1 WCAG 2.1 asks of lines, marks and bars (SC
# 1.4.11, an accessibility walk).
QUALITATIVE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442"]
# The same seven for a white plot, each in its own hue (OKLCH) darkened to 3:1 on white or more, and chosen so that
# their closest pair is no closer than Okabe-Ito's own, in normal vision and in simulated protan, deutan and tritan
# vision (Machado 2009; tests/test_viz_contrast.py): blue, ochre, green, plum, sky blue, rust, dark olive (7.1, 3.2,
# 4.6, 8.3, 3.1, 5.8, 10.4:1). Darkened only as far as 3:1, orange and yellow were one ochre to a deuteranope.
# (On the dark plot Okabe-Ito's own are 3.5:1 or more.)
QUALITATIVE_LIGHT = ["#045D91", "#C18507", "#018661", "#7E3360", "#3C9CD0", "#A84901", "#464100"]

THEMES: dict[str, dict] = {
    "default": dict(
        template="plotly_white",
        font_family=FONT_SANS,
        font_size=14,
        title_size=17,
        font_color="#262730",
        paper_bgcolor="#ffffff",
        plot_bgcolor="#ffffff",
        axis_line_color="#555555",
        axis_line_width=1,
        grid=True,
        grid_color="#e6e6e6",
        line_width=2.0,
        colorbar_thickness=16,
        mask_bg="#b3b3b3",
        mask_fg="#4d4d4d",
        mask_text="#000000",
        nan_bg="#f2f2f2",  # NaN cells: near the plot's colour, cross-hatched "x" (masked ones: grey, "/")
        nan_fg="#000000",
        nan_text="#000000",
        palette=QUALITATIVE_LIGHT,
        width=None,
        height=None,
    ),
    # Paper figure, designed at width x height CSS px = 600 x 480 and printed one column wide
    # (8.5 cm, so 1 px = 0.4 pt): 18 px text prints at ~7 pt, axis lines at ~0.4 pt; no
    # gridlines; serif (Noto Serif CJK SC). "paper-sans" below is the same in Noto Sans CJK SC.
    # Cell values (cell_type_px, 15 px) print at ~6 pt, the notes under a title (14 px) at ~5.6 pt. Not for two
    # columns at 1200 px wide: a figure is laid out for 600 x 480 whatever width it is drawn at (a reviewer's
    # walk: titles wrapped at 600 px, a 4 x 4 matrix drawn 2.5 : 1); README, 'Figures for papers'.
    "paper": dict(
        template="simple_white",
        font_family=FONT_SERIF,
        font_size=18,
        title_size=19,
        font_color="#000000",
        paper_bgcolor="#ffffff",
        plot_bgcolor="#ffffff",
        axis_line_color="#000000",
        axis_line_width=0.8,
        grid=False,
        grid_color="#ffffff",
        line_width=1.2,
        colorbar_thickness=12,
        mask_bg="#bdbdbd",
        mask_fg="#525252",
        mask_text="#000000",
        nan_bg="#f2f2f2",
        nan_fg="#000000",
        nan_text="#000000",
        palette=QUALITATIVE_LIGHT,
        width=600,
        height=480,
    ),
    "slide": dict(
        template="simple_white",
        font_family=FONT_SANS,
        font_size=22,
        title_size=28,
        font_color="#000000",
        paper_bgcolor="#ffffff",
        plot_bgcolor="#ffffff",
        axis_line_color="#000000",
        axis_line_width=2,
        grid=False,
        grid_color="#ffffff",
        line_width=3.5,
        colorbar_thickness=24,
        # notes over a plot and the values in its cells: shown at ~0.87 on a 1280 x 720 projector (the page's
        # width less its margins), 21 px is 18 px there, the page's own captions' size (ui/style.py); at the
        # others' 0.8 and 3 px less than the text they were 15.8 and 16.6 px (a teacher's walk: step 2's
        # "max |difference| 4.4e−15" and step 4's "largest weight 0.463" are notes)
        note_size=21,
        value_size=21,
        mask_bg="#a6a6a6",
        mask_fg="#262626",
        mask_text="#000000",
        nan_bg="#f2f2f2",
        nan_fg="#000000",
        nan_text="#000000",
        palette=QUALITATIVE_LIGHT,
        width=1280,
        height=720,
    ),
    "dark": dict(
        template="plotly_dark",
        font_family=FONT_SANS,
        font_size=14,
        title_size=17,
        font_color="#edebe8",  # Streamlit 1.67's dark page (bgColor, bodyText): the charts sit on it
        paper_bgcolor="#171614",
        plot_bgcolor="#171614",
        axis_line_color="#9e9e9e",
        axis_line_width=1,
        grid=True,
        grid_color="#33312d",
        line_width=2.0,
        colorbar_thickness=16,
        mask_bg="#6b6b6b",
        mask_fg="#c8c8c8",
        mask_text="#ffffff",
        nan_bg="#24231f",  # NaN cells: near the plot's colour, cross-hatched in light grey (#f2f2f2 was a white box)
        nan_fg="#e6e4e0",
        nan_text="#ffffff",
        palette=QUALITATIVE,
        width=None,
        height=None,
    ),
}
THEMES["paper-sans"] = dict(THEMES["paper"], font_family=FONT_SANS)
for _name, _t in THEMES.items():
    # Paper and slide: heatmaps write each cell's value by themselves (small matrices only, where it fits its cell):
    # a page and a projector have no mouse to hover with (a class adds up view 3's row of weights). The screen themes
    # leave them to the hover: writing them cost view 3 at 8 tokens ~0.8 ms, its figures then 1.1-1.6x the forward
    # pass that feeds them (issue #6 asks under 1x). Paper: a legend goes under the plot, where it does not take half
    # of a one-column figure's width.
    _t["auto_values"] = _name.startswith("paper") or _name == "slide"
    _t["legend_below"] = _name.startswith("paper")
THEME_NAMES = tuple(THEMES)


def note_size(t: dict) -> int:
    """The size of a figure's note lines (under its title) in theme settings `t`: its own, else 0.8 of its text's."""
    return t.get("note_size") or max(10, round(0.8 * t["font_size"]))


# Themes without a fixed size are drawn by the app at its column's width (~1,050 px in a 1500 px
# window, ~520 for charts side by side, ~560 in a 1024 px window) and the figure's own height (Plotly's
# default 450 px): lay them out for 700 px, which reads well down to ~480 (ui/chart.js shrinks below).
APP_WIDTH = 700
APP_HEIGHT = 450
# Drawn narrower than LEGEND_BELOW_UNDER px (a phone: the app draws at 480 px and shrinks), a legend beside
# the plot took up to half the width: the chart script (ui/chart.js legendBelow) puts it under the plot, with the
# margins layout.meta[NARROW_LEGEND] gives ({"r": px, "b": px}, laid out for NARROW_WIDTH).
NARROW_WIDTH = 480
LEGEND_BELOW_UNDER = 600  # a 1024 px window with the sidebar open draws charts 564 px wide: below there too
NARROW_LEGEND = "narrow_legend"
# Drawn NARROW_WIDTH wide (a phone), a colour bar beside the plot took as much of the width as the plot itself (view 3's
# weights: ~150 px of a 390 px phone's, key labels turned on their side): the chart script (ui/chart.js colorbarBelow)
# puts it under the plot, as long as the plot, with the right margin layout.meta[NARROW_COLORBAR] gives ({"r": px}).
NARROW_COLORBAR = "narrow_colorbar"
# layout.meta[ALONE] = {"margin": {side: px}, "theme": name}: the margins a figure laid out beside others (one
# margin for a column of figures, viz.attention.attention_step_figures) takes when drawn alone (viz.export.alone)
ALONE = "alone"
# layout.meta[ROUND] = True: a figure of round panels (viz.positional.pe_rotation's circles), drawn only as tall as
# they need at the width drawn (ui/chart.js roundPanels, viz.export.round_height)
ROUND = "round"
# A line break that apply_theme inserted to wrap a long title or note (it re-wraps from scratch
# each time). User text is escaped, so it can never contain this tag itself.
SOFT_BREAK = '<br class="wrap">'


def theme_spec(name: str) -> dict:
    """The settings of theme `name`; raises ValueError naming the valid themes."""
    if name not in THEMES:
        raise ValueError(f"unknown theme {name!r}; choose one of {', '.join(THEME_NAMES)}")
    return THEMES[name]


def type_scale(t: dict) -> float:
    """How many times the default theme's type a theme's is (1 where it is not larger): a layout worked out for
    the default theme's 14 px grows by it in a theme of larger type (slide 22 px, paper 18 px)."""
    return max(1.0, t["font_size"] / THEMES["default"]["font_size"])


def edge_px(font_size: float) -> int:
    """The white space around a figure's plots, legend and titles, in px: half the theme's type, at least 8."""
    return max(8, round(0.5 * font_size))


def design_size(theme: str, fig: go.Figure | None = None) -> tuple[int, int]:
    """(width, height) in CSS px a figure is laid out for: its own size if set, else the
    theme's export size, else the narrowest app container (APP_WIDTH x APP_HEIGHT)."""
    t = theme_spec(theme)
    width = (_prop(fig.layout, "width") if fig is not None else None) or t["width"] or APP_WIDTH
    height = (_prop(fig.layout, "height") if fig is not None else None) or t["height"] or APP_HEIGHT
    return int(width), int(height)


def too_narrow(theme: str, width: int) -> int | None:
    """The width a theme's figures are laid out for, where an export `width` (0 = the theme's own) is so
    much narrower that their titles and labels can be cut (figures are not laid out again); else None."""
    laid_out = design_size(theme)[0]
    return laid_out if width and width < 0.8 * laid_out else None


# A product inside a figure: U+22C5 (dot operator). The figures' first font, Noto Sans CJK, draws U+00B7 (·)
# as a full-width interpunct, "q・k"; U+22C5 comes from DejaVu Sans (next in the lists), as narrow as it should be.
DOT = "⋅"
_NARROW = set(" .,:;'|!()[]{}ijlrtfI/\\-·⋅")
# Symbols the CJK fonts first in every theme's list draw a full em wide (measured in Noto Sans/Serif CJK):
# "−∞" in a masked cell took two ems, not 1.2, and ran into the next cell's (a researcher's walk). The minus
# U+2212 is not among them (0.56 em), nor ⋅ (from DejaVu, see DOT) and · (the narrow interpunct above).
# √ is always set in DejaVu (viz.attention.ROOT), and ᵀ and ⋅ are not in them (drawn from the next font).
_FULL_EM = (set("∞±×÷␣") | {chr(c) for c in range(0x2190, 0x2400)} | {chr(c) for c in range(0x2500, 0x2600)}) - {
    "−", "⋅", "√"}
_WIDE = set("mwMW@%&")


def text_width(text: str, size: float) -> float:
    """Rough rendered width in px of one line, on the generous side (cut text is worse than an
    early line break): CJK 1 em, capitals and m/w 0.75 em, narrow marks 0.35 em, others 0.58 em.

    Tags (<br>, <sub>) count as nothing and HTML entities as one character.
    """
    return _ems(text) * size


def widest(texts, size: float) -> float:
    """text_width of the widest of `texts` (0 for none); the same tick labels are measured by
    every figure of a view, so the list is measured once (cached by its contents)."""
    return _widest_ems(tuple(str(s) for s in texts)) * size


@lru_cache(maxsize=1024)
def _widest_ems(texts: tuple[str, ...]) -> float:
    return max((_ems(s) for s in texts), default=0.0)


@lru_cache(maxsize=1 << 16)
def _ems(text: str) -> float:
    """text_width in em (cached: the same labels are measured by every figure of a view)."""
    plain = re.sub(r"&[^;\s]+;", "x", re.sub(r"<[^<>]*>", "", text))
    width = 0.0
    for ch in plain:
        if ord(ch) >= 0x2E80 or ch in _FULL_EM:
            width += 1.0
        elif ch in _NARROW:
            width += 0.35
        elif ch in _WIDE or ch.isupper():
            width += 0.75
        else:
            width += 0.58
    return width


def _tokens(line: str) -> list[str]:
    """Pieces a line may break between: single CJK characters and words (tags and entities
    inside a word stay in it), each with its trailing spaces. A word keeps a CJK character that follows it
    unspaced: a token's label "8:丸" is one piece (a note of PE curves' tokens broke after "8:")."""
    return re.findall(r"[\u2e80-\uffff]\s*|(?:<[^<>]*>|&[^;\s]+;|[^\s\u2e80-\uffff])+[\u2e80-\uffff]?\s*|\s+", line)


_NUMBER = re.compile(r"\d+[,.;:)]?\s*$")  # "0", "0,", "12)": a number that reads with the word before it


def wrap_text(text: str, width_px: float, size: float) -> list[str]:
    """Break a line (escaped HTML) into lines at most width_px wide at font `size`.

    Breaks after a space or between CJK characters, never inside a word, a tag or an entity
    (a word wider than the line stays whole on its own line). A bare number does not start a line
    where the word before it can go down with it ("layer" / "0, head 0" becomes "layer 0, head 0" on
    the next line); ui/chart.js (rewrap) wraps the same way. Lines keep their trailing space, so
    "".join(lines) == text.
    """
    lines: list[str] = []
    current: list[str] = []
    for piece in _tokens(text):
        trial = "".join(current) + piece
        if any(p.strip() for p in current) and piece.strip() and text_width(trial.rstrip(), size) > width_px:
            carry = []
            if _NUMBER.match(piece) and len(current) > 1 and current[-1].strip() and current[-1][-1:].isspace():
                carry = [current.pop()]  # the word the number belongs to goes down with it
            lines.append("".join(current))
            current = carry + [piece]
        else:
            current.append(piece)
    lines.append("".join(current))
    return lines


@lru_cache(maxsize=4096)
def soft_wrap(text: str, width_px: float, size: float) -> str:
    """`text` with its earlier soft breaks removed and new ones where it must wrap."""
    return SOFT_BREAK.join(wrap_text(unwrap(text), width_px, size))


def unwrap(text: str | None) -> str:
    """Undo soft_wrap: the text as one line again (hard <br> breaks are kept)."""
    return (text or "").replace(SOFT_BREAK, "")


def relative_luminance(rgb) -> np.ndarray:
    """WCAG 2's relative luminance of sRGB colours (..., 3), channels 0-255."""
    c = np.asarray(rgb, dtype=float) / 255.0
    c = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return c @ np.array([0.2126, 0.7152, 0.0722])


def cell_text_colors(z, zmin: float, zmax: float, colorscale) -> np.ndarray:
    """Per cell, "#000000" or "#ffffff": whichever contrasts more (WCAG 2) with the colour the cell is
    painted (its colour scale interpolated in RGB, as plotly.js does). plotly.js's own choice, #444 or
    white by the colour's brightness, put #444 on mid-tone cells (Cividis's olive: 2.7:1); the better of
    black and white gives every cell at least 4.5:1 (WCAG AA)."""
    z = _floats(z)
    at = (z - zmin) / ((zmax - zmin) or 1.0)
    at = np.clip(np.where(np.isnan(at), 0.0, at), 0.0, 1.0)  # a NaN as zmin
    key = colorscale if isinstance(colorscale, str) else tuple((float(s), str(c)) for s, c in colorscale)
    stops, rgb = _scale_rgb(key)
    # relative_luminance of each cell's colour rounded to whole channels, by table (this runs for every small matrix)
    lum = sum(weight * _LINEAR[np.rint(np.interp(at, stops, rgb[:, i])).astype(np.intp)]
              for i, weight in enumerate((0.2126, 0.7152, 0.0722)))
    return np.where((lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05), "#000000", "#ffffff")


_C = np.arange(256) / 255.0
_LINEAR = np.where(_C <= 0.04045, _C / 12.92, ((_C + 0.055) / 1.055) ** 2.4)  # sRGB channel 0-255 -> linear, as above


@lru_cache(maxsize=64)
def _scale_rgb(colorscale: str | tuple[tuple[float, str], ...]) -> tuple[np.ndarray, np.ndarray]:
    """A colour scale's stops (n,) and their sRGB colours (n, 3), read once per scale: plotly's lookup of
    a scale by name walks its whole catalogue of named scales (~2 ms, more than the rest of a small
    heads view's cell colours)."""
    scale = pc.get_colorscale(colorscale) if isinstance(colorscale, str) else colorscale
    stops = np.array([float(stop) for stop, _ in scale])
    rgb = np.array([pc.unlabel_rgb(pc.convert_colors_to_same_type([c], "rgb")[0][0]) for _, c in scale])
    stops.flags.writeable = rgb.flags.writeable = False  # shared by every later call
    return stops, rgb


def _floats(value) -> np.ndarray:
    """A trace's array as floats: nested lists, a numpy array, or a plotly.js typed array ({"dtype",
    "bdata", "shape"}, as a finished go.Figure holds float32 data)."""
    if isinstance(value, dict) and "bdata" in value:
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        return (flat.reshape([int(n) for n in str(shape).split(",")]) if shape else flat).astype(float)
    return np.asarray(value, dtype=float)


_COLORED = re.compile(r'^<span style="color:(#[0-9a-f]{6})">(.*)</span>$')


def cell_text(text: str) -> tuple[str, str | None]:
    """A value cell's text as (the text, its colour): ("0.25", "#000000"), or (text, None) where it is
    not coloured."""
    m = _COLORED.match(str(text))
    return (m.group(2), m.group(1)) if m else (str(text), None)


def _contrast_cell_texts(trace, layout, plain: list[list[str]]) -> None:
    """Write each value cell's text (`plain`) in cell_text_colors' colour (plotly.js's <span> markup, which the
    browser and the static exports draw alike), from the trace's own colour range or its coloraxis's; `plain` as
    it is where the trace has no colour range. Again on a figure restyled: the colours do not depend on the theme."""
    key = trace.get("coloraxis")
    axis = (layout.get(key) or {}) if key else {}
    lo, hi = (axis.get("cmin"), axis.get("cmax")) if axis else (trace.get("zmin"), trace.get("zmax"))
    scale = axis.get("colorscale") if axis else trace.get("colorscale")
    z = trace.get("z")
    if lo is None or hi is None or scale is None or z is None:
        trace["text"] = plain
        return
    colors = cell_text_colors(z, float(lo), float(hi), scale).tolist()
    trace["text"] = [[f'<span style="color:{c}">{text}</span>' if text else ""
                      for text, c in zip(row, crow, strict=True)] for row, crow in zip(plain, colors, strict=True)]


CELL_PAD_EM = 0.3  # room a value keeps in its cell (of its text size): less, and neighbours read as one number
# The smallest type a chart shows on the screen, in CSS px, whatever it is shrunk by (ui/chart.js readableType): a
# phone's smallest comfortable type, Apple's smallest text style (Caption 2, 11 pt = 11 CSS px on iOS) and Material 3's
# (Label Small, 11 sp), and the default theme's cell type (cell_type_px). On a 390 px phone the default theme's charts
# (laid out 480 px wide, shown at ~0.75) showed their notes at ~8 px and their tick labels at ~10.4 (a teacher's walk).
SMALLEST_SHOWN_PX = 11


def cell_type_px(theme: str) -> int:
    """The type of the values and marks written in cells ("0.25", "−∞"; a figure's notes can be smaller): the
    theme's own value_size (slide 21: 18 px as shown on a 1280 x 720 projector), else 3 px under its text, at least 9
    (paper 15, default 11). ui/chart.js (readableCells) keeps a figure shown shrunk from writing them smaller on the screen than
    this."""
    t = theme_spec(theme)
    return t.get("value_size") or max(9, t["font_size"] - 3)


def fit_cell_values(data, layout, theme: str) -> None:
    """Each value heatmap's cell texts, where they fit their cells as laid out (the figure's size less its
    margins, times the axes' domains), in cell_text_colors' colours; otherwise with one decimal fewer, down to
    one (scores and values: "16.4", not "16.44" run into the next cell's "−2.73"), otherwise none (the hover
    and the CSV keep every value). Run again after a figure's margins change (viz.attention.attention_step_figures
    gives five figures one margin; viz.export.alone gives a figure its own again). Every pass starts from the
    format the figure was made with (meta "format", viz.heatmap.add_heatmap), so wider cells get back what
    narrower ones took off. `data` and `layout` are the figure's own (a Fig's, or a lean Figure's pending dict):
    changed in place."""
    t = theme_spec(theme)
    size = cell_type_px(theme)
    width = layout.get("width") or t["width"] or APP_WIDTH
    height = layout.get("height") or t["height"] or APP_HEIGHT
    for trace in data:
        made = (trace.get("meta") or {}).get("format")  # set where the figure was made with values in its cells
        if trace.get("type") != "heatmap" or _role(trace) != "values" or not made:
            continue
        z = trace.get("z")
        if isinstance(z, dict):  # a typed array (restyled): the texts it has, as they are
            if not trace.get("text"):
                continue
            plain = [[cell_text(x)[0] for x in row] for row in trace["text"]]
            tries, shape = [(None, plain)], (len(plain), len(plain[0]) if plain else 0)
        else:
            # the format it was made with, else one decimal fewer, down to one, not whole numbers ("−17" and "0"
            # would hide a score of −0.4); not for weights ("0.0" for a weight hides too much)
            fewer = (f".{int(made[1:-1]) - 1}f" if trace["meta"].get("kind") != "weights"
                     and re.fullmatch(r"\.[2-9]f", made) else None)
            tries, shape = [(fmt, None) for fmt in (made, fewer) if fmt], np.shape(z)[:2]
        w, h = _cell_px(trace, layout, width, height, shape)
        # The texts the trace holds, coloured, and their widest (meta "shown": format, ems), from an earlier pass:
        # a figure is fitted again where its margins change (view 3's five matrices take one margin), and writing
        # the same texts and colours again each time made view 3's figures at 8 tokens cost 1.6x the forward pass
        # that feeds them (issue #6: under 1x).
        shown = trace["meta"].get("shown") if trace.get("text") else None
        for fmt, texts in tries:
            if fmt is not None and shown and shown[0] == fmt:
                widest_em = shown[1]  # the trace holds them, coloured
            else:
                texts = texts if texts is not None else cell_texts(z, fmt)
                widest_em = max((_ems(x) for row in texts for x in row if x), default=0.0)
            if _texts_fit(widest_em, w, h, size):
                trace["texttemplate"] = "%{text}"
                if texts is not None:
                    _contrast_cell_texts(trace, layout, texts)
                    if fmt is not None:  # its own meta (a copy's is shared)
                        trace["meta"] = {**trace["meta"], "shown": [fmt, widest_em]}
                break
        else:
            trace.pop("text", None)
            trace.pop("texttemplate", None)
            trace["meta"] = {k: v for k, v in trace["meta"].items() if k != "shown"}


def _texts_fit(widest_em: float, w: float, h: float, size: float) -> bool:
    """Texts whose widest is `widest_em` ems fit cells of w x h px at `size` px, with room either side."""
    return h >= size + 2 and w >= widest_em * size + max(4.0, CELL_PAD_EM * size)


def _x_span_px(trace, layout, width: float) -> float:
    """The width in px of `trace`'s x axis as laid out: the plot area (the figure less its margins) times the
    axis's domain."""
    margin = layout.get("margin") or {}
    xa = layout.get("xaxis" + (trace.get("xaxis") or "x")[1:]) or {}
    x0, x1 = xa.get("domain") or (0.0, 1.0)
    return (width - (margin.get("l") or 0) - (margin.get("r") or 0)) * (x1 - x0)


def _cell_px(trace, layout, width: float, height: float, shape: tuple[int, int]) -> tuple[float, float]:
    """A heatmap cell's (width, height) in px as laid out: the plot area (the figure less its margins)
    times its axes' domains, over its `shape`'s rows and columns; square where the y axis is tied to x
    (scaleanchor)."""
    margin = layout.get("margin") or {}
    ya = layout.get("yaxis" + (trace.get("yaxis") or "y")[1:]) or {}
    y0, y1 = ya.get("domain") or (0.0, 1.0)
    w = _x_span_px(trace, layout, width) / max(1, shape[1])
    h = (height - margin.get("t", 0) - margin.get("b", 0)) * (y1 - y0) / max(1, shape[0])
    return (min(w, h), min(w, h)) if ya.get("scaleanchor") else (w, h)


def _role(trace) -> str | None:
    meta = trace.get("meta")
    return meta.get("role") if isinstance(meta, dict) else None


@cache
def _patches(name: str) -> tuple[Patch, Patch, Patch | None, Patch]:
    """Theme `name` as patches parsed once: (layout, every axis, legend below or None, colour bars)."""
    t = theme_spec(name)
    edge = edge_px(t["font_size"])  # white space around everything
    layout = dict(
        template=t["template"],
        font=dict(family=t["font_family"], size=t["font_size"], color=t["font_color"]),
        title_font=dict(family=t["font_family"], size=t["title_size"], color=t["font_color"]),
        paper_bgcolor=t["paper_bgcolor"],
        plot_bgcolor=t["plot_bgcolor"],
        # a projector's type too (plotly: 13 px); the box in the figure's own colours, not in its trace's colour
        # with white or grey text, which plotly.js picks, at 3.1:1 on pink and 3.4:1 on green (an accessibility walk)
        hoverlabel=dict(font=dict(family=t["font_family"], size=t["font_size"], color=t["font_color"]),
                        bgcolor=t["paper_bgcolor"], bordercolor=t["axis_line_color"]),
        legend=dict(font=dict(family=t["font_family"], size=t["font_size"])),
        margin=dict(l=edge, r=edge, b=edge, pad=0),
    )
    axis = dict(
        showline=True,
        linecolor=t["axis_line_color"],
        linewidth=t["axis_line_width"],
        ticks="outside",
        tickcolor=t["axis_line_color"],
        gridcolor=t["grid_color"],
        zerolinecolor=t["grid_color"],
        automargin=True,
        # The margins hold the labels (_set_margins), so no label can overflow the figure. Plotly's
        # default here ("hide past div") still measures every tick label's box after each draw to
        # check: ~10 ms a chart in the browser.
        ticklabeloverflow="allow",
        # Plotly draws axis titles at 1.2x the text size; in a small figure that is too loud.
        title_font=dict(family=t["font_family"], size=t["font_size"], color=t["font_color"]),
    )
    if not t["grid"]:
        axis.update(showgrid=False, zeroline=False)
    legend_below = None
    if t.get("legend_below"):
        legend_below = dict(legend=dict(orientation="h", x=0.01, xanchor="left", xref="container",
                                        y=0, yanchor="bottom", yref="container",
                                        traceorder="normal",
                                        font=dict(size=t["font_size"] - 2)))
    colorbar = dict(
        thickness=t["colorbar_thickness"],
        outlinewidth=0,
        tickfont=dict(family=t["font_family"], size=t["font_size"] - 1, color=t["font_color"]),
        title=dict(font=dict(family=t["font_family"], size=t["font_size"], color=t["font_color"])),
    )
    return (Patch(node(layout)), Patch(node(axis)), (Patch(node(legend_below)) if legend_below else None),
            Patch(node(colorbar)))


@cache
def _shades(name: str) -> dict[str, str]:
    """Every theme's shade of each palette colour (lower-case hex) -> theme `name`'s shade of it."""
    own = theme_spec(name)["palette"]
    return {colour.lower(): own[i] for t in THEMES.values() for i, colour in enumerate(t["palette"])}


@lru_cache(maxsize=256)
def _reshade(colour: str, name: str) -> str | None:
    """`colour` in theme `name`'s shade ("#E69F00" -> "#C18507"; "rgba(230,159,0,0.5)" keeps its 0.5), or None
    where it is no palette colour or that shade already."""
    shades = _shades(name)
    if colour.startswith("rgba("):
        *rgb, alpha = colour[5:-1].split(",")
        try:
            shade = shades.get("#" + "".join(f"{int(v):02x}" for v in rgb)) if len(rgb) == 3 else None
        except ValueError:  # not the integer channels _rgba and plotly write
            return None
        return f"rgba({','.join(str(v) for v in pc.hex_to_rgb(shade))},{alpha})" if shade else None
    shade = shades.get(colour.lower())
    return shade if shade and shade != colour else None


def apply_theme(fig: Fig | go.Figure, name: str = "default") -> go.Figure:
    """Restyle `fig` in place with theme `name` ("default", "paper", "slide", "dark"); returns it.

    Besides fonts and colours it lays the figure out for the theme's size (design_size): tight
    margins that grow to fit the labels (automargin), axis titles at the text size, subplot
    titles and the title wrapped to the width they have.
    """
    t = theme_spec(name)
    finished, fig = (fig if isinstance(fig, GoFigure) else None), as_fig(fig)
    xs, ys = _style_layout(fig, t, name)
    width = design_size(name, fig)[0]  # nothing below changes the layout's width
    _wrap_subplot_titles(fig, t, width, xs)
    left = _left_of_plot(fig, t, ys)  # the title starts where the plot does; the left margin holds the labels
    _fit_title(fig, t, width, left, xs)
    _style_traces(fig, t, name)
    _set_margins(fig, t, width, left, xs, ys)
    _unline_thin_bars(fig, width)
    fit_cell_values(fig.data, fig.layout, name)  # once the margins, and so the cells' sizes, are known
    if finished is not None:  # a finished go.Figure is restyled in place, as plotly's update_* would
        out = fig.to_dict()
        with finished.batch_update():
            finished.layout = out["layout"]
            finished.data = []
            finished.add_traces(out["data"])
        return finished
    return fig.to_go()


def _style_layout(fig: Fig, t: dict, name: str) -> tuple[list[Node], list[Node]]:
    """The theme's fonts and colours on the layout, every axis, the subplot titles and the colour axes' bars;
    returns the figure's (x axes, y axes), which every later step of apply_theme reads."""
    layout, axis, legend_below, colorbar = _patches(name)
    layout.apply(fig.layout)
    xs, ys = fig._axes("x"), fig._axes("y")
    for ax in xs + ys:
        axis.apply(ax)
        if ax.get("showticklabels") is False:  # an axis without labels (inner small multiples) needs no tick marks
            ax.ticks = ""
    if legend_below is not None:
        legend_below.apply(fig.layout)
    # Subplot titles are annotations: give them the theme's font too (wrapped to their panel later).
    for ann in fig.layout.get("annotations") or ():
        if ann.get("name") != "notes":
            ann.font = dict(family=t["font_family"], size=t["font_size"],
                            color=(ann.get("font") or {}).get("color") or t["font_color"])
    for key in fig.layout:
        if key.startswith("coloraxis"):
            colorbar.apply(fig.layout[key].child("colorbar"))
    return xs, ys


def _style_traces(fig: Fig, t: dict, name: str) -> None:
    """Each trace in the theme's shades, by what it draws (meta "role"): palette colours, lines, masked and
    NaN cells, cell values, heatmaps' colour bars."""
    colorbar = _patches(name)[3]
    for trace in fig.data:
        role = _role(trace)
        for part in ("line", "marker"):  # a palette colour: the theme's shade of it
            style = trace.get(part)
            if style and isinstance(colour := style.get("color"), str) and (shade := _reshade(colour, name)):
                style["color"] = shade
        if role == "bars" and ((trace.get("marker") or {}).get("pattern") or {}).get("fillmode") == "overlay":
            trace["marker"]["pattern"]["fgcolor"] = t["plot_bgcolor"]  # a bar's pattern: 3:1 on its palette shade
        if trace.get("type") == "heatmap" and trace.get("showscale") is not False:  # the trace types with a colorbar
            colorbar.apply(trace.child("colorbar"))
        if role == "line":
            trace.child("line").width = t["line_width"]
        elif role in ("mask", "nan"):  # masked cells (grey, hatched "/"), and NaN ones (the plot's colour, "x")
            bg, fg = t[f"{role}_bg"], t[f"{role}_fg"]
            trace.child("fillpattern").update(bgcolor=bg, fgcolor=fg)
            trace.fillcolor = bg
            trace.child("line").color = fg
        elif role in ("mask_cells", "nan_cells"):  # heatmap fallback for cells in very many runs
            bg = t[f"{role[:-6]}_bg"]
            trace.colorscale = [[0, bg], [1, bg]]
        elif role in ("mask_text", "nan_text"):
            trace.child("textfont").update(color=t[role], family=t["font_family"], size=cell_type_px(name))
        if trace.get("type") == "heatmap" and trace.get("texttemplate"):
            trace.child("textfont").update(size=cell_type_px(name), family=t["font_family"])


PLOT_FRACTION = 0.75  # of the figure's width the plot area gets (the rest: labels, colour bar)


def subplot_titles(fig: Fig | go.Figure, xs: list[Node] | None = None) -> list:
    """The subplot/column titles make_subplots wrote: horizontal annotations centred over a
    panel (their x is the centre of an x axis domain), each with that domain's width.
    xs: the figure's x axes, when the caller has them already."""
    centres = {}
    for ax in _x_axes(fig) if xs is None else xs:
        domain = _prop(ax, "domain")
        if domain:
            d0, d1 = domain
            centres[round((d0 + d1) / 2, 6)] = d1 - d0
    out = []
    for ann in _prop(fig.layout, "annotations") or ():
        name, x = _prop(ann, "name"), _prop(ann, "x")
        if name == "notes" or _prop(ann, "xref") != "paper" or _prop(ann, "yref") != "paper":
            continue
        if _prop(ann, "textangle") not in (None, 0) or x is None:
            continue
        width = centres.get(round(x, 6))
        if width is not None:
            out.append((ann, width))
    return out


def _prop(obj, name: str):
    """obj.name for a Node (dict.get: a Node's attribute lookup first fails as an attribute, then
    falls back to __getattr__, ~10x the cost) or a plotly object."""
    return obj.get(name) if type(obj) is Node else getattr(obj, name)


def _x_axes(fig: Fig | go.Figure) -> list:
    return [fig.layout[key] for key in fig.layout if key.startswith("xaxis")]


def _wrap_subplot_titles(fig: Fig, t: dict, width: float, xs: list[Node]) -> None:
    """Wrap each subplot title to its panel's width (the figure is `width` px wide), so neighbours
    never run into each other."""
    for ann, domain in subplot_titles(fig, xs):
        ann.text = soft_wrap(ann.get("text") or "", max(domain * width * PLOT_FRACTION, 3 * t["font_size"]),
                             t["font_size"])


def _lines(text: str | None) -> int:
    return len(re.findall(r"<br(\s+[^>]*)?>", text or "")) + 1


def _top_axis_height(t: dict, xs: list[Node]) -> int:
    """Room for tick labels of an x axis on top (they may be turned 90° when crowded)."""
    height = 0
    for ax in xs:
        if ax.get("side") == "top" and ax.get("showticklabels") is not False:
            labels = [str(v) for v in (ax.get("ticktext") or [])]
            if not labels:
                continue
            longest = widest(labels, t["font_size"])
            height = max(height, int(max(1.6 * t["font_size"], longest)) + 8)
    return height


def _left_of_plot(fig: Fig, t: dict, ys: list[Node]) -> float:
    """Estimated px left of the plot area: the widest y tick label, ticks, the y axis title."""
    left = 0.0
    for ax in ys:
        if ax.get("side") == "right" or ax.get("overlaying"):
            continue
        if ax.get("domain") and ax.get("anchor") and ax.get("anchor") != "x":  # only the first column's axes
            xa = fig.layout.get("xaxis" + ax.get("anchor")[1:])  # a read: never adds an empty axis
            if isinstance(xa, Node) and xa.get("domain") and xa.get("domain")[0] > 0.01:
                continue
        px = 0.0
        if ax.get("showticklabels") is not False:
            px += widest(ax.get("ticktext") or ["−0.00"], t["font_size"]) + 10
        if (ax.get("title") or {}).get("text"):
            px += 1.5 * t["font_size"]
        left = max(left, px)
    return left


def _tick_labels(ax: Node) -> list[str]:
    """The tick labels an axis shows: its ticktext, else Plotly's numbers (guessed from its range)."""
    if ax.get("ticktext"):
        return [str(v) for v in ax.get("ticktext")]
    ends = [v for v in (ax.get("range") or ()) if isinstance(v, (int, float))]
    return [f"{v:.2g}".replace("-", "−") for v in ends] + ["−0.00"]


def _colorbar_px(bar: dict | None, lo, hi, t: dict) -> float:
    """Width of a colour bar at the right edge: bar, tick labels, its title (written sideways), pads."""
    bar = bar or {}
    ends = tuple(float(v) for v in (lo, hi) if isinstance(v, (int, float)))
    title = bool((bar.get("title") or {}).get("text"))
    return _colorbar_width(bar.get("thickness") or 30, ends, title, t["font_size"])


@lru_cache(maxsize=1024)
def _colorbar_width(thickness: float, ends: tuple[float, ...], title: bool, f: float) -> float:
    labels = [f"{v:.2g}".replace("-", "−") for v in ends] or ["−0.00"]
    if ends and max(ends) - min(ends) < 10:  # ticks at fractions: "0.25", "−0.25"
        labels.append("−0.25" if min(ends) < 0 else "0.25")
    return thickness + widest(labels, f - 1) + (1.3 * f + 4 if title else 0) + 34


def _legend_px(fig: Fig, t: dict, width: float, horizontal: bool | None = None) -> tuple[float, float]:
    """(right, below) px a legend takes: beside the plot (vertical, Plotly's default) or under it
    (horizontal, rows of entries as wide as the figure). horizontal: as if it were (None: as it is)."""
    layout = fig.layout
    if layout.get("showlegend") is False:
        return 0.0, 0.0
    # Plotly lists scatter and bar traces unless told not to, other types only when told to.
    shown = [tr for tr in fig.data
             if (tr.get("showlegend") if tr.get("showlegend") is not None else tr.get("type") in ("scatter", "bar"))]
    names = [str(tr.get("name") or f"trace {i}") for i, tr in enumerate(shown)]
    if not names or (len(fig.data) < 2 and layout.get("showlegend") is not True):
        return 0.0, 0.0  # Plotly draws no legend for a single trace
    legend = layout.get("legend") or Node()
    size = ((legend.get("font") or {}).get("size")) or t["font_size"]
    if horizontal is None:
        horizontal = legend.get("orientation") == "h"
    items = [text_width(str(n), size) + (60 if horizontal else 50) for n in names]
    title = ((legend.get("title") or {}).get("text")) or ""
    if horizontal:
        room = width - 2 * edge_px(t["font_size"])
        rows, used = 1, 0.0
        for w in items:
            if used and used + w > room:
                rows, used = rows + 1, 0.0
            used += w
        return 0.0, rows * (1.3 * size + 6) + 10 + (1.3 * size if title else 0)
    return max(items + [text_width(title, size) + 10]) + 18, 0.0


def _colorbar_beside_px(fig: Fig, t: dict) -> float:
    """The width the colour bars beside the plot take (one per colour axis or heatmap: the widest), 0 for none."""
    bars = [_colorbar_px(v.get("colorbar"), v.get("cmin"), v.get("cmax"), t)
            for k, v in fig.layout.items() if k.startswith("coloraxis") and v.get("showscale") is not False]
    bars += [_colorbar_px(tr.get("colorbar"), tr.get("zmin"), tr.get("zmax"), t) for tr in fig.data
             if tr.get("type") == "heatmap" and not tr.get("coloraxis") and tr.get("showscale") is not False]
    return max(bars, default=0.0)


def _right_axes_px(t: dict, ys: list[Node]) -> float:
    """The widest tick labels of right-hand y axes (row sums), with their pad."""
    axes = [widest(_tick_labels(ax), t["font_size"]) + 12 for ax in ys
            if ax.get("side") == "right" and ax.get("showticklabels") is not False]
    return max(axes, default=0.0)


def _below_plot(fig: Fig, t: dict, width: float, xs: list[Node]) -> float:
    """Estimated px under the plot area: x tick labels of the bottom row (turned 90° when they do
    not fit side by side, as Plotly turns them) and the x axis title."""
    f = t["font_size"]
    plot_width = width * PLOT_FRACTION
    below = 0.0
    for ax in xs:
        if ax.get("side") == "top" or ax.get("overlaying"):
            continue
        ya = fig.layout.get("yaxis" + (ax.get("anchor") or "y")[1:])
        if isinstance(ya, Node) and ya.get("domain") and ya.get("domain")[0] > 0.01:  # not the bottom row
            continue
        px = 0.0
        if ax.get("showticklabels") is not False:
            labels = _tick_labels(ax)
            wide = widest(labels, f)
            d0, d1 = ax.get("domain") or (0.0, 1.0)
            fits = len(labels) * (wide + 8) <= (d1 - d0) * plot_width or ax.get("tickangle") == 0 or not ax.get("ticktext")
            px += (1.3 * f if fits else wide + 4) + 14
        if (ax.get("title") or {}).get("text"):
            px += 1.5 * f + 6
        below = max(below, px)
    return below


THIN_BAR_PX = 4.0  # a bar drawn narrower than this keeps no outline


def _unline_thin_bars(fig: Fig, width: float) -> None:
    """Bars drawn narrower than THIN_BAR_PX lose the outline the plotly templates give every bar (0.5 px each
    side, white, or the page's colour in dark): it covered them. The base model's pooled outputs (512 dimensions,
    A and B side by side, ~0.35 px a bar at paper's 600 px) were an empty plot (an export walk). A trace that sets
    its own outline (view 5's unscaled weights) keeps it. Called once the margins are set."""
    by_axis: dict[str, list[Node]] = {}
    for trace in fig.data:
        if trace.get("type") == "bar" and trace.get("orientation") != "h" and trace.get("x") is not None:
            by_axis.setdefault(trace.get("xaxis") or "x", []).append(trace)
    side_by_side = fig.layout.get("barmode") == "group"
    for traces in by_axis.values():
        try:
            x = np.concatenate([np.asarray(tr["x"], dtype=np.float64).ravel() for tr in traces])
            slots = float(x.max() - x.min()) + 1.0 if x.size else 1.0
        except (TypeError, ValueError):  # categories: one slot each
            slots = float(max(len(tr["x"]) for tr in traces))
        slot_px = _x_span_px(traces[0], fig.layout, width) / max(slots, 1.0)
        for trace in traces:  # a bar's own width (in x units: view 6's pooled B, half of A's), else bargap 0.2's share
            own = trace.get("width")
            share = own if isinstance(own, (int, float)) else 0.8 / (len(traces) if side_by_side else 1)
            if slot_px * share < THIN_BAR_PX:  # (child() makes the node: asked only here, no empty "line" left)
                line = trace.child("marker").child("line")
                if "width" not in line:
                    line["width"] = 0


def _set_margins(fig: Fig, t: dict, width: float, left: float, xs: list[Node], ys: list[Node]) -> None:
    """Margins that already hold the tick labels, axis titles and colour bars.

    The axes keep automargin as a safety net, but Plotly then only has to grow a margin when an
    estimate here falls short: every margin it grows costs the browser a second full layout pass
    (about half of a figure's drawing time).
    """
    edge = edge_px(t["font_size"])
    legend_r, legend_b = _legend_px(fig, t, width)  # beside the plot or under it
    bar = _colorbar_beside_px(fig, t)
    axes_r = _right_axes_px(t, ys)
    m = fig.layout.child("margin")
    m["l"] = round(edge + left + 6)
    m["r"] = round(edge + bar + axes_r + legend_r)
    m["b"] = round(edge + _below_plot(fig, t, width, xs) + legend_b)
    # In a theme that follows the page's width, the chart script (ui/chart.js) puts a legend or a colour bar that
    # stands beside the plot under it when the chart is drawn narrow: the margins it takes then (layout.meta).
    if legend_r and not t["width"]:
        under = _legend_px(fig, t, NARROW_WIDTH, horizontal=True)[1]
        fig.layout.child("meta")[NARROW_LEGEND] = {
            "r": round(edge + bar + axes_r),
            "b": round(edge + _below_plot(fig, t, NARROW_WIDTH, xs) + under),
        }
    elif bar and not t["width"]:  # the chart script measures the room under the plot for a colour bar itself
        fig.layout.child("meta")[NARROW_COLORBAR] = {"r": round(edge + axes_r + legend_r)}


def _fit_title(fig: Fig, t: dict, width: float, left: float, xs: list[Node]) -> None:
    """Title at the top, wrapped to the width; note lines in a "notes" annotation above the plot.

    The title and the notes start where the plot starts (x = 0 on the paper) and are wrapped to
    the width left of the figure there. Plotly lifts a multi-line title by 0.7 em (it anchors it
    by its first line), so the pad gives that back; notes live in an annotation (anchored by its
    whole height). The top margin is counted from the lines here.
    """
    first, *rest = ((fig.layout.get("title") or {}).get("text") or "").split("<br>")
    old = [a for a in fig.layout.get("annotations") or () if a.get("name") == "notes"]
    lines = [unwrap(x) for x in (old[0].get("text").split("<br>") if old else [])] + rest
    notes_px = note_size(t)
    # from where the plot starts (the left margin _set_margins gives: the labels, the figure's edge and a pad) to
    # the figure's edge of white at the right, as ui/chart.js's fitTitle counts it (width - margin.l - edge - 4):
    # from the labels' end it let a line run 2 px past the figure (view 3's weights at 39 tokens: "encoder" cut)
    edge = edge_px(t["font_size"])
    room = width - round(edge + left + 6) - edge - 4
    first = soft_wrap(first, room, t["title_size"]) if first else first
    notes = "<br>".join(soft_wrap(x, room, notes_px) for x in lines)
    title_lines = _lines(first) if first else 0
    note_lines = _lines(notes) if lines else 0
    lift = _above_plot(fig, t, xs)
    font = dict(family=t["font_family"], size=notes_px, color=t["font_color"])
    if old:
        old[0].update(text=notes, yshift=6 + lift, font=font)
    elif lines:
        fig.add_annotation(name="notes", text=notes, xref="paper", x=0, xanchor="left", yref="paper", y=1,
                           yanchor="bottom", yshift=6 + lift, showarrow=False, align="left", font=font)
    height = 12 + note_lines * 1.3 * notes_px
    if title_lines:
        height += 1.4 * t["title_size"] + 1.3 * t["title_size"] * (title_lines - 1)
    title = fig.layout.child("title")  # plain property names: set directly, as update_layout would
    dict.update(title, text=first, x=0, xref="paper", xanchor="left", y=1, yref="container", yanchor="top")
    title.child("pad")["t"] = 12 + (round(0.7 * t["title_size"]) if title_lines > 1 else 0)
    fig.layout.child("margin")["t"] = int(height) + 10 + lift


def _above_plot(fig: Fig, t: dict, xs: list[Node]) -> int:
    """px between the plot area's top and the notes over it: the top row's subplot titles (make_subplots puts them
    on the plot area's top edge, so the notes go above them) and the tick labels of an x axis on top."""
    top = [
        a
        for a in fig.layout.get("annotations") or ()
        if a.get("name") != "notes"
        and a.get("yref") == "paper"
        and a.get("y") is not None
        and a.get("y") >= 0.98
        and a.get("yanchor") == "bottom"
    ]
    lift = 0
    if top:
        size = max(((a.get("font") or {}).get("size") or t["font_size"]) for a in top)
        lift = int((0.3 + 1.3 * max(_lines(a.get("text")) for a in top)) * size)
    return lift + _top_axis_height(t, xs)


_FILENAME_BAD = re.compile(r"[^\w.-]+")


def figure_config(filename: str = "attention-lab") -> dict:
    """Plotly config for the app's charts (ui/chart.py): the camera button saves a 3x-scale SVG (ui/chart.py
    puts its own in place of plotly.js's, which enlarges the heatmaps' images as viz/crisp.py does); no
    button sends the chart anywhere (plotly.js 3's "Share chart..." uploads to Plotly Cloud)."""
    safe = _FILENAME_BAD.sub("_", str(filename)).strip("._") or "attention-lab"
    return {
        "displaylogo": False,
        "showSendToCloud": False,
        "toImageButtonOptions": {"format": "svg", "filename": safe, "scale": 3},
    }
