"""Shared fixtures: the app under streamlit.testing (AppTest), its figures as JSON, small models.

AppTest runs app.py in this process, so a test sees exactly what a browser would be sent: every
element's proto, each Plotly chart's figure JSON (`.proto.spec`), and session_state.
"""

from __future__ import annotations

import base64
import json
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `pytest` as well as `python -m pytest`
    sys.path.insert(0, str(ROOT))

APP = ROOT / "app.py"
# A small random model keeps every forward pass in milliseconds; distinct sizes keep axes apart.
SMALL = {"d_model": 16, "n_heads": 2, "n_layers": 2, "d_ff": 32}


def trained_available() -> bool:
    return all((ROOT / "assets" / "models" / name / "config.json").exists() for name in ("zh-en", "zh-en-nope"))


needs_trained = pytest.mark.skipif(not trained_available(), reason="the trained demo models (assets/models) are missing")


def randomise_norms(module):
    """Every LayerNorm its own random weight and bias: at their init (1, 0) all norms are the same
    function, so a norm wired to the wrong sub-layer would still match torch. Returns the module."""
    import torch

    from model import LayerNorm

    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, LayerNorm):
                m.weight.normal_(1.0, 0.5)
                m.bias.normal_(0.0, 0.5)
    return module


def unique_sentence(prefix: str = "frag") -> str:
    """A sentence no earlier test has run: neither its forward pass nor its views are cached."""
    return f"{prefix} {uuid.uuid4().hex[:8]}"


@pytest.fixture
def builds(monkeypatch) -> dict[str, list]:
    """The spec of every view built, per view name (lab.views.build_view's builders, wrapped)."""
    import lab.views

    seen: dict[str, list] = {name: [] for name in lab.views.VIEW_BUILDERS}
    for name, real in list(lab.views.VIEW_BUILDERS.items()):
        def recording(spec, models, name=name, real=real):
            seen[name].append(spec)
            return real(spec, models)

        monkeypatch.setitem(lab.views.VIEW_BUILDERS, name, recording)
    return seen


@pytest.fixture(autouse=True)
def fresh_view_cache():
    """Each test starts with no shared views (ui.cache.view_result keeps them for the whole process,
    as the server does): a test that changes how a view is built sees its change."""
    cache = sys.modules.get("ui.cache")
    if cache is not None:
        cache.view_result.cache_clear()
    translate = sys.modules.get("ui.translate")
    if translate is not None:  # view 7's step charts, kept the same way
        translate.step_panels.cache_clear()


@pytest.fixture
def make_app() -> Callable[..., object]:
    """make_app(**state) -> an AppTest of app.py, run once with `state` in st.session_state
    (link={...} sets the URL's query parameters, as a share link does)."""
    from streamlit.testing.v1 import AppTest

    def make(link: dict[str, str] | None = None, run: bool = True, **state):
        at = AppTest.from_file(str(APP), default_timeout=60)
        if link:
            at.query_params.update(link)
        for key, value in state.items():
            at.session_state[key] = value
        return at.run() if run else at

    return make


@pytest.fixture
def calls(monkeypatch) -> dict[str, int]:
    """How often the forward pass (lab.compute.run) and the sidebar (ui.sidebar.sidebar) ran."""
    import lab.compute
    import ui.sidebar

    counts = {"forward": 0, "sidebar": 0}

    def counting(name, real):
        def wrapper(*args, **kwargs):
            counts[name] += 1
            return real(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(lab.compute, "run", counting("forward", lab.compute.run))
    monkeypatch.setattr(ui.sidebar, "sidebar", counting("sidebar", ui.sidebar.sidebar))
    return counts


@pytest.fixture(scope="module")
def one_torch_thread():
    """One torch thread while a module's tests run (tiny models; on two busy cores more threads spin)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def decode_array(value) -> np.ndarray:
    """Plotly's JSON array: a list, or {"dtype", "bdata" (base64), "shape"} for numpy input."""
    if isinstance(value, dict) and "bdata" in value:
        raw = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        if shape:
            raw = raw.reshape([int(s) for s in str(shape).split(",")])
        return raw.astype(np.float64)
    return np.asarray(value, dtype=np.float64)


def svg_pngs(svg: str | bytes) -> list[tuple[np.ndarray, tuple[int, int]]]:
    """Each PNG embedded in an SVG (plotly.js's heatmaps) as (pixels (H, W, C), drawn size (width, height) in
    CSS px), in document order."""
    import io
    import xml.etree.ElementTree as ET

    from PIL import Image

    out = []
    for el in ET.fromstring(svg).iter():
        href = el.get("{http://www.w3.org/1999/xlink}href") or el.get("href") or ""
        if el.tag.endswith("image") and href.startswith("data:image/png;base64,"):
            pixels = np.asarray(Image.open(io.BytesIO(base64.b64decode(href.split(",", 1)[1]))))
            out.append((pixels, (round(float(el.get("width") or 0)), round(float(el.get("height") or 0)))))
    return out


def charts(at) -> list[dict]:
    """Every chart the page holds (ui/chart.py), as the browser receives it: {"figure", "config", "title",
    "caption"} from the component's bytes; its element key under "key"."""
    from ui.chart import NAME

    out = []
    for element in at.get("bidi_component"):
        if element.proto.component_name == NAME:
            out.append(json.loads(element.proto.bytes) | {"key": element.proto.id.split("-", 2)[-1]})
    return out


def chart_texts(at) -> list[str]:
    """Each chart's title and caption (drawn as plain text by the chart element, ui/chart.py), in order."""
    return [t for chart in charts(at) for t in (chart.get("title", ""), chart.get("caption", "")) if t]


def figures(at) -> list[dict]:
    """Every Plotly figure the page holds, as the JSON the browser receives."""
    return [chart["figure"] for chart in charts(at)]


def traces(fig: dict, role: str) -> list[dict]:
    return [t for t in fig["data"] if (t.get("meta") or {}).get("role") == role]


def title(fig: dict) -> str:
    t = fig["layout"].get("title", {})
    return t.get("text", "") if isinstance(t, dict) else str(t)


# -- the real app in a real browser (tests/test_browser.py) ----------------------------------
CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = ROOT / "artifacts" / "screenshots"  # git-ignored; look at them after a run


@pytest.fixture(scope="module")
def streamlit_url():
    """`streamlit run app.py` on a free loopback port for the module's tests; stopped afterwards."""
    from scripts.screenshots import streamlit_server

    with streamlit_server(timeout=120) as (url, _proc):
        yield url


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium from the system (/usr/bin/chromium); nothing is downloaded."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (scripts/test.sh installs the Debian chromium package)")
    from playwright.sync_api import sync_playwright

    from scripts.screenshots import CHROMIUM_ARGS

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def history_navigation(monkeypatch):
    """history_navigation(at, query): the browser's Back or Forward as Streamlit 1.67 sends it: a rerun with the
    address bar's `query`, the widget values the page still shows, and is_history_navigation (from popstate)."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import ScriptRunContext

    flag = {"on": False}
    real_reset = ScriptRunContext.reset

    def reset(self, *args, **kwargs):
        real_reset(self, *args, **kwargs)
        self.is_history_navigation = flag["on"]

    monkeypatch.setattr(ScriptRunContext, "reset", reset)

    def navigate(at, query: dict[str, str]):
        at.query_params.clear()
        at.query_params.update(query)
        flag["on"] = True
        try:
            return at.run()
        finally:
            flag["on"] = False

    return navigate

