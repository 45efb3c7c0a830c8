"""One Plotly chart on the page that stays on the page: a new figure updates it in place.

st.plotly_chart (Streamlit 1.67) derives each chart's element id from the figure's JSON, so new
data is a new element: the browser unmounts the old chart and builds a new one with Plotly.newPlot,
six times per new sentence in the attention view (~420 ms of a ~600 ms redraw at 32 tokens,
measured in Chromium; plotly.js alone draws the same six figures in ~115 ms). Streamlit PR #16052
(open) would fix that upstream.

`chart()` is a Streamlit custom component (st.components.v2, rendered in the page, no iframe) whose
identity is its key: the same key keeps the same <div>, and a new figure goes through
Plotly.react, which updates the drawn chart instead of rebuilding it. Its script is ui/chart.js
(sizing, twins side by side, a phone's type, print, screen readers), which takes a few of Python's
values (_script). That script (~70 KB) is served once per browser from the static folder too
(`ensure_chart_js`); each chart's element carries only a loader of about 1 KB (ui/served.py LOADER): carried
inline, the script went with every chart of every rerun, ~440 of the ~520 KB a class's change sent.

plotly.js is the copy inside the plotly Python package (the version the figures were built for),
served once per browser from the app's static folder (`server.enableStaticServing`, set in
.streamlit/config.toml); `ensure_plotly_js()` puts it there. The figure travels as the same JSON
st.plotly_chart sends (plotly.io.to_json), as bytes, with the same config.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import plotly
import streamlit as st

from ui import served
from viz import crisp
from viz.fig import payload_json
from viz.theme import (
    APP_HEIGHT,
    CELL_PAD_EM,
    LEGEND_BELOW_UNDER,
    NARROW_WIDTH,
    SMALLEST_SHOWN_PX,
    cell_type_px,
    design_size,
    theme_spec,
)

ROOT = served.ROOT
STATIC = served.STATIC
PLOTLY_JS = f"plotly-{plotly.__version__}.min.js"  # versioned name: a browser never keeps an old copy
NAME = "attention_lab_chart"
# Themes without a size of their own (default, dark) are laid out for a 700 px column but read well down
# to about half a wide page (the order view's twins, ~520 px); narrower (a phone), a chart is shrunk.
FLUID_MIN_WIDTH = NARROW_WIDTH  # viz.theme lays a legend out under the plot for this width
# Twin charts stack where a column would be narrower than STACK_REM rem, or than STACK_FRACTION of their design width
# (chart.js stackBelow): a slide chart (1280 px) side by side in a 1920 px window was shown at 0.56 of its size, its
# type then smaller than the default theme's; stacked, each is shown whole
STACK_REM = 28
STACK_FRACTION = 0.7

# The component's script (ui/chart.js), read once: _script fills in the values it takes from Python.
JS = (ROOT / "ui" / "chart.js").read_text(encoding="utf-8")


# The title and caption in the look of st.subheader and st.caption (Streamlit 1.67's computed styles,
# from the theme's CSS variables), spaced by the 1rem gap Streamlit puts between elements.
CSS = """
.lab-chart-title {
  box-sizing: border-box; font-family: var(--st-heading-font); font-weight: 600; font-size: 1.75rem;
  line-height: 1.2; letter-spacing: -0.005em; color: var(--st-heading-color); margin: 0 0 1rem 0; padding: 0.75rem 0 0 0;
}
.lab-chart-caption {
  font-family: var(--st-font); font-size: 0.875rem; line-height: 1.6; color: var(--st-text-color);
  opacity: 0.75; margin: 1rem 0 0 0; overflow-wrap: break-word;
}
.lab-chart-title[hidden], .lab-chart-caption[hidden] { display: none; }
.lab-chart-box[data-waiting] { opacity: 0.33; transition: opacity 1s ease-in 0.5s; }
"""


def ensure_plotly_js(static: Path = STATIC) -> Path:
    """static/plotly-<version>.min.js, copied from the plotly package if missing or different; the path.

    Written to a temporary file and renamed, so a browser never reads half a file."""
    source = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    return served.put_static(static / PLOTLY_JS, source.read_bytes())


def print_colours() -> dict[str, str]:
    """The dark theme's colours and the default theme's for the same things (text, plot, axes, grid, masked and NaN
    cells, the palette), as a dark figure is printed (the script's PRINT_COLOURS); "__dark_paper__": the dark
    theme's paper colour, which tells a dark figure."""
    dark, light = theme_spec("dark"), theme_spec("default")
    keys = ("paper_bgcolor", "plot_bgcolor", "font_color", "axis_line_color", "grid_color", "mask_bg", "mask_fg",
            "mask_text", "nan_bg", "nan_fg", "nan_text")
    pairs = [(dark[k], light[k]) for k in keys] + list(zip(dark["palette"], light["palette"], strict=True))
    out = {on_dark.lower(): on_light.lower() for on_dark, on_light in pairs if on_dark.lower() != on_light.lower()}
    out["__dark_paper__"] = dark["paper_bgcolor"].lower()
    return out


def print_template() -> dict:
    """The default theme's plotly template (as a chart's payload carries it): a dark figure's, printed."""
    import plotly.graph_objects as go

    from viz.theme import apply_theme

    return json.loads(payload_json(apply_theme(go.Figure(), "default")))["layout"]["template"]


def _script() -> str:
    """chart.js with Python's values in place of its __FROM_PYTHON__ (the names it lists at its top)."""
    values = {
        "PLOTLY_URL": f"app/static/{PLOTLY_JS}",
        "APP_HEIGHT": APP_HEIGHT,
        "CRISP_TARGET": crisp.TARGET_PX,
        "CRISP_MAX": crisp.MAX_PX,
        "STACK_REM": STACK_REM,
        "STACK_FRACTION": STACK_FRACTION,
        "LEGEND_BELOW_UNDER": LEGEND_BELOW_UNDER,
        "NARROW_WIDTH": NARROW_WIDTH,
        "CELL_PAD_EM": CELL_PAD_EM,
        "SMALLEST_PX": SMALLEST_SHOWN_PX,
        "PRINT_COLOURS": print_colours(),
        "PRINT_TEMPLATE": print_template(),
    }
    return JS.replace("__FROM_PYTHON__", json.dumps(values, separators=(",", ":")))


CHART_JS_PREFIX = "attention-lab-chart-"  # + the script's hash: a browser never keeps an old copy

# What a chart shows where the charts' script did not load (ui/served.py LOADER), as the script says plotly.js did not
# load: in a box with an empty chart, to a screen reader too (role status); taken back once it loads.
SAID = """{
  box: (args) => args.parentElement.querySelector(":scope > .lab-chart-box[data-loader]"),
  loaded(args) { this.box(args)?.remove(); },
  failed(args, url) {
    if (this.box(args)) return;
    const box = document.createElement("div"), gd = document.createElement("div"), message = document.createElement("div");
    box.className = "lab-chart-box";
    box.dataset.loader = "";
    gd.className = "lab-chart";
    message.className = "lab-chart-message";
    message.setAttribute("role", "status");
    message.textContent = "This chart could not be drawn: its script did not load from " + url + ". The app serves " +
      "it from its static folder: server.enableStaticServing must stay on (.streamlit/config.toml next to app.py).";
    box.append(gd, message);
    args.parentElement.append(box);
  },
}"""


def ensure_chart_js(static: Path = STATIC) -> Path:
    """static/attention-lab-chart-<hash>.js: the charts' script (_script), written if missing or different, older
    copies removed (ui/served.py ensure_script); the path."""
    return served.ensure_script(CHART_JS_PREFIX, _script(), static)


def loader(script: Path) -> str:
    """The loader (ui/served.py LOADER) of the charts' script at `script`, which says in a chart's place that it
    did not load."""
    return served.loader(script, SAID)


@functools.cache
def _component():
    """Registered once per process; plotly.js and the charts' script put in place first. Where the folder
    cannot be written, the log says so, each chart carries the whole script (as before ensure_chart_js) and
    says that plotly.js did not load. Styles not isolated: plotly.js puts its own (modebar, hover labels) in
    the page's <head>, which a shadow root would not see."""
    def ensure() -> Path:
        ensure_plotly_js()
        return ensure_chart_js()

    js = served.inline_or_loader(ensure, _script(), SAID, what="plotly.js and the charts' script",
                                 then="the charts cannot draw")
    return st.components.v2.component(NAME, js=js, css=CSS, isolate_styles=False)


def design_width(theme: str) -> int:
    """The narrowest width in CSS px at which a figure of `theme` is drawn as it is laid out: a theme
    of fixed size (paper 600, slide 1280: viz.theme.design_size) is shrunk to fit below its width, as
    its export would look; the others follow the page's width down to FLUID_MIN_WIDTH."""
    return design_size(theme)[0] if theme_spec(theme)["width"] else FLUID_MIN_WIDTH


def chart(figure, *, key: str, config: dict, title: str = "", caption: str = "", row: str = "",
          theme: str = "default") -> None:
    """Draw `figure` (a go.Figure, styled with viz theme `theme`) under `key`; the same key on the next
    rerun updates it in place. Where the page gives it less width than the theme laid it out for
    (design_width: 1280 px for slides), it is drawn at that width and shown shrunk to fit, the values in its
    cells kept at the theme's cell type on the screen (viz.theme.cell_type_px), or left out where they no longer fit.

    title and caption (plain text, shown as text: never HTML or markdown) are drawn above and below
    the chart in the look of st.subheader and st.caption, by the same element (CSS). Charts side by
    side (in st.columns) share a `row` name: their titles take the tallest one's height, so the charts
    start level, and the columns stack where either would be narrower than STACK_REM rem or than STACK_FRACTION of
    the design width (slide charts, 1280 px, stack below 896 px columns)."""
    payload = ('{"figure":' + payload_json(figure) + ',"config":' + json.dumps(config)
               + ',"title":' + json.dumps(title) + ',"caption":' + json.dumps(caption)
               + ',"row":' + json.dumps(row) + ',"design":' + str(design_width(theme))
               + ',"wrapped":' + str(design_size(theme)[0]) + ',"cellType":' + str(cell_type_px(theme)) + "}")
    _component()(key=key, data=payload.encode("utf-8"), width="stretch", height="content")
