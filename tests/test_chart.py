"""ui/chart.py: the app's charts keep their element (and so their <div>) when the figure changes.

The browser half (the same <div> redrawn in place, full screen, plotly.js that cannot load) is in
tests/test_browser.py; here: plotly.js on the static path Streamlit serves, and what the server sends.
"""

from __future__ import annotations

import filecmp
import importlib
import json
import re
import tomllib
from pathlib import Path

import plotly
import plotly.io as pio
import pytest
from conftest import APP, ROOT, SMALL, charts

import ui.chart
import viz
from lab.spec import FigureSpec
from lab.views import build_view

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PLOTLY_MIN_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def test_plotly_js_is_the_plotly_packages_own_copy_under_a_versioned_name(tmp_path):
    target = ui.chart.ensure_plotly_js(tmp_path)
    assert target == tmp_path / f"plotly-{plotly.__version__}.min.js"
    assert filecmp.cmp(PLOTLY_MIN_JS, target, shallow=False)
    assert [p.name for p in tmp_path.iterdir()] == [target.name]  # no temporary file left behind


def test_a_damaged_copy_is_replaced_and_a_good_one_left_alone(tmp_path):
    target = tmp_path / ui.chart.PLOTLY_JS
    target.write_bytes(b"x" * PLOTLY_MIN_JS.stat().st_size)  # the right size, the wrong bytes
    ui.chart.ensure_plotly_js(tmp_path)
    assert filecmp.cmp(PLOTLY_MIN_JS, target, shallow=False)
    stamp = target.stat().st_mtime_ns
    ui.chart.ensure_plotly_js(tmp_path)
    assert target.stat().st_mtime_ns == stamp


def test_streamlit_serves_the_folder_plotly_js_is_copied_to():
    from streamlit import file_util

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["enableStaticServing"] is True
    assert Path(file_util.get_app_static_dir(str(APP))) == ui.chart.STATIC
    assert f'"app/static/{ui.chart.PLOTLY_JS}"' in ui.chart._script()


def test_the_charts_script_is_written_once_under_its_hash_and_older_copies_go(tmp_path):
    stale = tmp_path / f"{ui.chart.CHART_JS_PREFIX}0123456789abcdef.js"
    stale.write_text("// an older chart.js", encoding="utf-8")
    target = ui.chart.ensure_chart_js(tmp_path)
    assert target.read_text(encoding="utf-8") == ui.chart._script()
    assert [p.name for p in tmp_path.iterdir()] == [target.name]  # the stale copy gone, no temporary file
    stamp = target.stat().st_mtime_ns
    assert ui.chart.ensure_chart_js(tmp_path) == target and target.stat().st_mtime_ns == stamp


def test_each_chart_carries_a_loader_of_the_script_in_the_static_folder_not_the_script(make_app):
    """The script (~70 KB) went inline with every chart of every rerun: ~440 of the ~520 KB one change of the
    attention or heads view sent. The browser now loads it once, from where the loader says."""
    at = make_app(view="attention", sentence_a="你喜欢她", sentence_b="她喜欢你", **SMALL)
    sent = [e.proto for e in at.get("bidi_component") if e.proto.component_name == ui.chart.NAME]
    assert len(sent) == 6
    for proto in sent:
        assert len(proto.js_content) < 2000 and "loadPlotly" not in proto.js_content
        assert proto.ByteSize() < len(proto.bytes) + 3000  # the figure, and little besides
    (name,) = set(re.findall(r'"app/static/([^"]+\.js)"', sent[0].js_content))
    assert (ui.chart.STATIC / name).read_text(encoding="utf-8") == ui.chart._script()


@pytest.mark.parametrize("module, ensure, said", [("ui.chart", "ensure_chart_js", "the charts' script"),
                                                   ("ui.focus", "ensure_focus_js", "the focus script")])
def test_a_static_folder_that_cannot_take_a_script_sends_it_with_each_element(monkeypatch, caplog, module, ensure, said):
    """Where static/ cannot be written, the log says which script, and each chart (each focus request) carries the
    whole script, as before it was served (ui/served.py inline_or_loader)."""
    served = importlib.import_module(module)

    def read_only(static=None):
        raise PermissionError(13, "Read-only file system", str(ui.chart.STATIC))

    registered = {}
    monkeypatch.setattr(served, ensure, read_only)
    monkeypatch.setattr(served.st.components.v2, "component", lambda name, **kw: registered.update(kw) or print)
    served._component.cache_clear()
    try:
        with caplog.at_level("ERROR", logger="attention_lab"):
            served._component()
        script = served._script() if module == "ui.chart" else served.JS
        assert registered["js"] == script and said in caplog.text
    finally:
        served._component.cache_clear()


def test_the_focus_script_goes_once_to_the_static_folder_and_each_request_carries_its_loader(make_app):
    """ui/focus.py's script (~6.5 KB) went inline with every request for the focus (every view clicked, every box
    changed with the mouse: ~10% of the ~64 KB a view change sent). It is served as the charts' script is."""
    import ui.focus

    at = make_app(view="attention", sentence_a="你喜欢她", sentence_b="她喜欢你", **SMALL)
    def sent():
        return [e.proto for e in at.get("bidi_component") if e.proto.component_name == ui.focus.NAME]

    (first,) = sent()  # a session's first run: the script alone, which watches the presses from then on
    at.session_state[ui.focus.PENDING] = {"mode": "release", "group": ".st-key-view"}  # a view clicked, as it asks
    at.run()
    (request,) = sent()
    for proto in (first, request):
        assert len(proto.js_content) < 1000 and "__labFocusWatch" not in proto.js_content
    (name,) = set(re.findall(r'"app/static/([^"]+\.js)"', request.js_content))
    assert name.startswith(ui.focus.FOCUS_JS_PREFIX)
    assert (ui.chart.STATIC / name).read_text(encoding="utf-8") == ui.focus.JS
    assert json.loads(json.loads(request.json))["mode"] == "release"  # the data: a JSON string, sent as JSON


def test_each_script_keeps_its_own_copy_in_the_static_folder(tmp_path):
    """The charts' and the focus script are written side by side; each removes only its own older copies."""
    import ui.focus

    stale = tmp_path / f"{ui.focus.FOCUS_JS_PREFIX}0123456789abcdef.js"
    stale.write_text("// an older focus script", encoding="utf-8")
    chart = ui.chart.ensure_chart_js(tmp_path)
    focus = ui.focus.ensure_focus_js(tmp_path)
    assert focus.read_text(encoding="utf-8") == ui.focus.JS and focus.name.startswith(ui.focus.FOCUS_JS_PREFIX)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([chart.name, focus.name])  # the stale copy gone
    assert ui.chart.ensure_chart_js(tmp_path) == chart and chart.exists() and focus.exists()


def _state(text: str) -> dict:
    return {"view": "attention", "sentence_a": text, "sentence_b": "她喜欢你", **SMALL}


def test_each_chart_is_the_views_figure_and_config_under_its_panels_key(make_app):
    from ui.cache import models

    at = make_app(share=True, **_state("你喜欢她"))  # share: the share box open
    spec = FigureSpec.from_json(at.code[1].value)  # the spec the page shows (its share expander)
    assert spec.sentence_a == "你喜欢她" and "attention" in spec.views
    panels = [p for p in build_view("attention", spec, models()).panels if p.figure is not None]
    got = charts(at)
    assert [c["key"] for c in got] == [f"chart-attention-{p.key}" for p in panels]
    for chart, panel in zip(got, panels, strict=True):
        assert chart["figure"] == json.loads(pio.to_json(panel.figure, validate=False))  # what st.plotly_chart sent
        assert chart["config"] == viz.figure_config(f"attention-{panel.key}")
        assert (chart["title"], chart["caption"]) == (panel.title, panel.caption)  # drawn as text by the element


def test_a_new_sentence_keeps_every_charts_element_and_changes_its_figure(make_app):
    """The element id is what the browser keys a chart's <div> on: st.plotly_chart's changes with the
    figure (a new <div>, Plotly.newPlot); this one is the key alone (the same <div>, Plotly.react)."""
    at = make_app(**_state("你喜欢她"))
    def drawn():  # the charts (ui/chart.py), not the page's other components (ui/focus.py)
        return {e.proto.id: json.loads(e.proto.bytes) for e in at.get("bidi_component")
                if e.proto.component_name == ui.chart.NAME}

    before = drawn()
    at.session_state["sentence_a"] = "我爱我家"
    at.run()
    after = drawn()
    assert not at.exception and len(after) >= 5
    assert list(after) == list(before)
    assert all(after[i]["figure"] != before[i]["figure"] for i in after)


def test_a_static_folder_that_cannot_be_written_is_logged_not_raised(monkeypatch, caplog):
    def read_only(static=None):
        raise PermissionError(13, "Read-only file system", str(ui.chart.STATIC))

    monkeypatch.setattr(ui.chart, "ensure_plotly_js", read_only)
    ui.chart._component.cache_clear()
    try:
        with caplog.at_level("ERROR", logger="attention_lab"):
            assert callable(ui.chart._component())
        assert "could not put plotly.js" in caplog.text
    finally:
        ui.chart._component.cache_clear()
