"""Themes, colour scales and the st.plotly_chart config shared by every figure.

A theme is applied last by each builder (`theme=` argument) and can be re-applied to any finished
figure with `apply_theme(fig, name)`. Themes only restyle (fonts, colours, lines, colour bars);
they never change the data a figure shows.
"""

from __future__ import annotations

import re

import plotly.graph_objects as go

# Every family list starts with a font that has Chinese glyphs, so "你喜欢她" renders.
FONT_SANS = '"Noto Sans CJK SC", "Noto Sans", "DejaVu Sans", Arial, sans-serif'
FONT_SERIF = '"Noto Serif CJK SC", "Noto Serif", "DejaVu Serif", "Times New Roman", serif'

# Colour scales (all colour-blind safe).
WEIGHTS_COLORSCALE = "Viridis"  # sequential, fixed [0, 1]; has no grey, and grey means "masked"
SCORES_COLORSCALE = "RdBu_r"  # diverging (ColorBrewer RdBu), blue < 0 < red, symmetric about 0
MAGNITUDE_COLORSCALE = "Cividis"  # sequential from 0: |differences|, entropies
MASK_ALLOWED_COLOR = "#d9ecf2"  # "may attend" cells in the boolean mask figure
# Okabe & Ito (2008) qualitative palette, black left out (it vanishes on the dark theme).
QUALITATIVE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442"]

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
        width=None,
        height=None,
    ),
    # Paper figure, designed at width x height CSS px = 600 x 480 and printed one column wide
    # (8.5 cm, so 1 px = 0.4 pt): 18 px text prints at ~7 pt, axis lines at ~0.4 pt; no
    # gridlines; serif (Noto Serif CJK SC). "paper-sans" below is the same in Noto Sans CJK SC.
    # Two columns (17.8 cm): export at 1200 px wide and the same sizes print at ~7.5 pt.
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
        mask_bg="#a6a6a6",
        mask_fg="#262626",
        mask_text="#000000",
        width=1280,
        height=720,
    ),
    "dark": dict(
        template="plotly_dark",
        font_family=FONT_SANS,
        font_size=14,
        title_size=17,
        font_color="#fafafa",
        paper_bgcolor="#0e1117",
        plot_bgcolor="#0e1117",
        axis_line_color="#9e9e9e",
        axis_line_width=1,
        grid=True,
        grid_color="#2b2f36",
        line_width=2.0,
        colorbar_thickness=16,
        mask_bg="#6b6b6b",
        mask_fg="#c8c8c8",
        mask_text="#ffffff",
        width=None,
        height=None,
    ),
}
THEMES["paper-sans"] = dict(THEMES["paper"], font_family=FONT_SANS)
for _name, _t in THEMES.items():
    # Paper: heatmaps write each cell's value by themselves (small matrices only), and a legend
    # goes under the plot, where it does not take half of a one-column figure's width.
    _t["auto_values"] = _t["legend_below"] = _name.startswith("paper")
THEME_NAMES = tuple(THEMES)


def theme_spec(name: str) -> dict:
    """The settings of theme `name`; raises ValueError naming the valid themes."""
    if name not in THEMES:
        raise ValueError(f"unknown theme {name!r}; choose one of {', '.join(THEME_NAMES)}")
    return THEMES[name]


def _role(trace) -> str | None:
    meta = trace.meta
    return meta.get("role") if isinstance(meta, dict) else None


def apply_theme(fig: go.Figure, name: str = "default") -> go.Figure:
    """Restyle `fig` in place with theme `name` ("default", "paper", "slide", "dark"); returns it."""
    t = theme_spec(name)
    fig.update_layout(
        template=t["template"],
        font=dict(family=t["font_family"], size=t["font_size"], color=t["font_color"]),
        title_font=dict(family=t["font_family"], size=t["title_size"], color=t["font_color"]),
        paper_bgcolor=t["paper_bgcolor"],
        plot_bgcolor=t["plot_bgcolor"],
        hoverlabel=dict(font_family=t["font_family"]),
        legend=dict(font=dict(family=t["font_family"], size=t["font_size"])),
    )
    axis = dict(
        showline=True,
        linecolor=t["axis_line_color"],
        linewidth=t["axis_line_width"],
        ticks="outside",
        tickcolor=t["axis_line_color"],
        gridcolor=t["grid_color"],
        zerolinecolor=t["grid_color"],
    )
    if not t["grid"]:
        axis.update(showgrid=False, zeroline=False)
    fig.update_xaxes(**axis)
    fig.update_yaxes(**axis)
    if t.get("legend_below"):
        fig.update_layout(legend=dict(orientation="h", x=0.01, xanchor="left", xref="container",
                                      y=0, yanchor="bottom", yref="container",
                                      traceorder="normal",
                                      font=dict(size=t["font_size"] - 2)))
    # Subplot titles are annotations: give them the theme's font too.
    for ann in fig.layout.annotations:
        if ann.name != "notes":
            ann.font = dict(family=t["font_family"], color=ann.font.color or t["font_color"])
    colorbar = dict(
        thickness=t["colorbar_thickness"],
        outlinewidth=0,
        tickfont=dict(family=t["font_family"], size=t["font_size"] - 1, color=t["font_color"]),
        title=dict(font=dict(family=t["font_family"], size=t["font_size"], color=t["font_color"])),
    )
    for key in fig.layout:
        if key.startswith("coloraxis"):
            fig.layout[key].colorbar.update(colorbar)
    _fit_title(fig, t)
    for trace in fig.data:
        role = _role(trace)
        if hasattr(trace, "colorbar") and getattr(trace, "showscale", None) is not False:
            trace.colorbar.update(colorbar)
        if role == "line":
            trace.line.width = t["line_width"]
        elif role == "mask":
            trace.fillpattern.bgcolor = t["mask_bg"]
            trace.fillpattern.fgcolor = t["mask_fg"]
            trace.fillcolor = t["mask_bg"]
        elif role == "mask_cells":  # heatmap fallback for masks with very many runs
            trace.colorscale = [[0, t["mask_bg"]], [1, t["mask_bg"]]]
        elif role == "mask_text":
            trace.textfont.color = t["mask_text"]
            trace.textfont.family = t["font_family"]
            trace.textfont.size = max(9, t["font_size"] - 3)
        if trace.type == "heatmap" and trace.texttemplate:
            trace.textfont.size = max(9, t["font_size"] - 3)
            trace.textfont.family = t["font_family"]
    return fig


def _text_width(text: str, size: float) -> float:
    """Rough rendered width in px: wide (CJK) characters 1 em, others 0.6 em."""
    return sum(size if ord(ch) > 0x2E80 else 0.6 * size for ch in re.sub(r"&[^;]+;", "x", text))


def _top_axis_height(fig: go.Figure, t: dict) -> int:
    """Room for tick labels of an x axis on top (they may be turned 90° when crowded)."""
    height = 0
    for key in fig.layout:
        ax = fig.layout[key]
        if key.startswith("xaxis") and ax.side == "top" and ax.showticklabels is not False:
            labels = [str(v) for v in (ax.ticktext or [])]
            longest = max((_text_width(s, t["font_size"]) for s in labels), default=0.0)
            height = max(height, int(max(1.6 * t["font_size"], longest)) + 8)
    return height


def _fit_title(fig: go.Figure, t: dict) -> None:
    """Title on one line at the top; note lines in a "notes" annotation just above the plot.

    Plotly anchors a multi-line title by its first line only, so notes live in an annotation
    (anchored by its whole height) and the top margin is counted from the lines here.
    """
    first, *rest = (fig.layout.title.text or "").split("<br>")
    old = [a for a in fig.layout.annotations if a.name == "notes"]
    lines = (old[0].text.split("<br>") if old else []) + rest
    note_size = max(10, round(0.8 * t["font_size"]))
    # make_subplots puts subplot titles at the top edge of the plot area: notes go above them.
    top_titles = any(
        a.name != "notes"
        and a.yref == "paper"
        and a.y is not None
        and a.y >= 0.98
        and a.yanchor == "bottom"
        for a in fig.layout.annotations
    )
    lift = int(1.6 * t["font_size"]) if top_titles else 0
    lift += _top_axis_height(fig, t)
    if old:
        old[0].update(
            text="<br>".join(lines),
            yshift=6 + lift,
            font=dict(family=t["font_family"], size=note_size, color=t["font_color"]),
        )
    elif lines:
        fig.add_annotation(
            name="notes",
            text="<br>".join(lines),
            xref="paper",
            x=0,
            xanchor="left",
            yref="paper",
            y=1,
            yanchor="bottom",
            yshift=6 + lift,
            showarrow=False,
            align="left",
            font=dict(family=t["font_family"], size=note_size, color=t["font_color"]),
        )
    height = 12 + (1.4 * t["title_size"] if first else 0) + len(lines) * 1.3 * note_size
    fig.update_layout(
        title=dict(
            text=first,
            x=0,
            xref="paper",
            xanchor="left",
            y=1,
            yref="container",
            yanchor="top",
            pad=dict(t=12),
        ),
        margin=dict(t=int(height) + 10 + lift),
    )


_FILENAME_BAD = re.compile(r"[^\w.-]+")


def figure_config(filename: str = "attention-lab") -> dict:
    """Config for st.plotly_chart(config=...): the camera button saves a 3x-scale SVG."""
    safe = _FILENAME_BAD.sub("_", str(filename)).strip("._") or "attention-lab"
    return {
        "displaylogo": False,
        "toImageButtonOptions": {"format": "svg", "filename": safe, "scale": 3},
    }
