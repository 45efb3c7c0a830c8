"""The app benchmark's plumbing and the classroom load test's number check (no timing is asserted)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import numpy as np
import plotly.graph_objects as go
import pytest

from bench.app_figures import (
    APP_SPECS,
    CHARS,
    figure_payloads,
    payload_records,
    sentence,
    source_tokens,
    spec_for,
    stage_records,
)
from bench.browser import app_spec, app_url, chart_key, expected_for, expected_ticks
from bench.core import RECORD_KEYS, Context, Record
from bench.runner import APP_KEYS, MODEL_KEYS, parse_args
from lab.compute import load_model, model_fields, run
from lab.spec import FigureSpec
from lab.views import Models, ViewResult, build_view
from model import load_tokenizer

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "classroom_load.py"
_spec = importlib.util.spec_from_file_location("classroom_load", SCRIPT)
classroom = importlib.util.module_from_spec(_spec)
sys.modules["classroom_load"] = classroom  # dataclasses look their module up there
_spec.loader.exec_module(classroom)

APP = APP_SPECS["app"]


def tiny_context(sizes=(4, 6)) -> Context:
    from bench.configs import DEFAULT_APP_CONFIG

    return Context(configs={"app": DEFAULT_APP_CONFIG}, sizes=sizes, budget_s=0.0, min_repeats=1,
                   max_repeats=1)


# -- sentences ------------------------------------------------------------------------------------


def test_sentences_have_the_asked_token_count_and_neighbours_differ():
    tok = load_tokenizer("char")
    for n in (1, 8, 32, 100):
        text = sentence(n)
        assert len(tok.encode(text)) == n
        assert all(a != b for a, b in zip(text, text[1:], strict=False))
    assert sentence(32, salt=1) != sentence(32) and len(set(CHARS)) == len(CHARS)
    assert source_tokens(512) == 511  # room for [BOS] in a max_len-512 model
    spec = spec_for(APP, 12)
    assert spec.sentence_b == spec.sentence_a[::-1] and len(spec.sentence_a) == 12


# -- stage and payload figures --------------------------------------------------------------------


def test_stage_records_have_the_right_keys_and_ratios():
    ctx = tiny_context()
    records = stage_records(ctx, {"app": APP}, views=("attention", "tokens"))
    assert all(set(r.to_dict()) == set(RECORD_KEYS) for r in records)
    got = {(r.name, r.tokens) for r in records}
    names = ["tokenise_ms", "lab_run_ms", "view_attention_ms", "view_attention_ratio", "view_tokens_ms",
             "view_tokens_ratio", "sentence_to_figures_ms"]
    assert got == {(f"app.{n}", t) for n in names for t in (4, 6)}
    by = {(r.name, r.tokens): r for r in records}
    for T in (4, 6):
        ratio = by[("app.view_attention_ratio", T)]
        assert ratio.target == "<= 1" and ratio.ok == (ratio.value <= 1)
        # one round: the paired ratio is exactly the ratio of the two times
        expect = by[("app.view_attention_ms", T)].value / by[("app.lab_run_ms", T)].value
        assert ratio.value == pytest.approx(expect)
        assert by[("app.sentence_to_figures_ms", T)].value == pytest.approx(
            by[("app.lab_run_ms", T)].value + by[("app.view_attention_ms", T)].value)


def test_payload_is_the_utf8_json_of_each_figure():
    labels = [f"{i}:你" for i in range(50)]
    z = np.random.default_rng(0).random((50, 50)).astype(np.float32)
    fig = go.Figure(go.Heatmap(z=z, x=labels, y=labels))
    small = go.Figure(go.Scatter(x=[1, 2], y=[3, 4]))
    result = ViewResult(panels=[])
    from lab.views import Panel

    result.panels += [Panel("big", "t", fig), Panel("table-only", "t"), Panel("small", "t", small)]
    sizes = figure_payloads(result)
    assert set(sizes) == {"big", "small"}  # panels without a figure send no figure JSON
    text = fig.to_json()
    assert sizes["big"] == len(text.encode("utf-8"))
    assert json.loads(text)["data"][0]["type"] == "heatmap"
    # 2500 float32 cells in base64 at least, and the Chinese labels in UTF-8 (3 bytes each)
    assert sizes["big"] >= 2500 * 4 * 4 / 3 + 2 * 50 * 3
    assert sizes["big"] - sizes["small"] >= 2500 * 4 * 4 / 3  # both carry the template; z is the rest


def test_payload_records_flag_only_512_tokens_against_the_1mb_target():
    ctx = tiny_context(sizes=(4,))
    records = payload_records(ctx, {"app": APP}, views=("attention", "tokens"))
    names = {r.name for r in records}
    assert names == {"app.json_attention_max_MB", "app.json_attention_total_MB", "app.json_attention_ms"}
    by = {r.name: r for r in records}
    assert by["app.json_attention_max_MB"].target is None  # the 1 MB target applies at 512 tokens
    assert 0 < by["app.json_attention_max_MB"].value <= by["app.json_attention_total_MB"].value
    spec = spec_for(APP, 4)
    loaded = load_model(model_fields(spec))
    res = build_view("attention", spec, Models(lambda key: loaded, lambda s: run(loaded, s.sentence_a,
                                                                                  s.sentence_b, s.mask)))
    assert by["app.json_attention_max_MB"].value == pytest.approx(max(figure_payloads(res).values()) / 1e6,
                                                                   rel=0.05)


def test_runner_keeps_the_model_figures_by_default_and_adds_the_app_ones_on_request():
    assert set(APP_KEYS) == {"stages", "payload", "rerun", "sessions", "browser", "page"}
    assert not set(APP_KEYS) & set(MODEL_KEYS) and "stacks" in MODEL_KEYS
    assert parse_args(["--app"]).app and not parse_args([]).app


def test_session_costs_open_one_session_per_count_and_the_slope_is_per_session():
    from bench.apptest_rerun import objects_per_session, session_costs

    costs = session_costs(APP, counts=(3, 1), repeats=1, tokens=4)
    assert [c["sessions"] for c in costs] == [1, 3]  # counted up, whatever order they are asked in
    # sessions stay open (each holds its own widgets and forward pass): more sessions, more objects
    assert costs[1]["tracked"] > costs[0]["tracked"]
    assert all(c["gc_ms"] >= 0 and c["head_change_ms"] > 0 for c in costs)
    assert objects_per_session(costs) == (costs[1]["tracked"] - costs[0]["tracked"]) / 2
    fake = [{"sessions": 1, "tracked": 100}, {"sessions": 11, "tracked": 600}, {"sessions": 31, "tracked": 1600}]
    assert objects_per_session(fake) == 50  # from the fewest to the most sessions


def test_page_records_time_a_revisit_of_every_view_against_its_forward_and_build_no_view(builds):
    """Per size and view a record of the revisit's wall and CPU time and its ratio to the forward that feeds it (one
    round: exactly page CPU / forward CPU); view 7's under the trained model's name, once per size; and the timed
    reruns are page work: each view is built once, when its link opens, never in a revisit."""
    from bench.apptest_rerun import PAGE_TARGET, TRAINED_NAME, page_records, trained_models_present

    assert trained_models_present()  # the checkpoints ship in assets/models
    ctx = tiny_context(sizes=(4, 6))
    views = ("tokens", "order", "translate")
    records = page_records(ctx, {"app": APP}, rounds=2, views=views)
    assert all(set(r.to_dict()) == set(RECORD_KEYS) for r in records)
    json.dumps([r.to_dict() for r in records])
    names = {("app", "tokens"), ("app", "order"), (TRAINED_NAME, "translate")}
    expect = {(f"{n}.page_{v}_{what}", T) for n, v in names for what in ("ms", "cpu_ms", "ratio") for T in (4, 6)}
    expect |= {(f"{n}.page_forward_cpu_ms", T) for n in ("app", TRAINED_NAME) for T in (4, 6)}
    assert {(r.name, r.tokens) for r in records} == expect and len(records) == len(expect)
    by = {(r.name, r.tokens): r for r in records}
    for n, v in names:
        for T in (4, 6):
            ratio, cpu = by[(f"{n}.page_{v}_ratio", T)], by[(f"{n}.page_{v}_cpu_ms", T)]
            assert ratio.unit == "x" and ratio.target == PAGE_TARGET and ratio.ok == (ratio.value <= 1)
            assert cpu.value > 0 and by[(f"{n}.page_{v}_ms", T)].value > 0 and ratio.value > 0
    # each view built once per size (the link's first run), none in the untimed or the timed revisits
    for v in views:
        assert len(builds[v]) == 2 and {len(s.sentence_a) for s in builds[v]} == {4, 6}
    assert not any(builds[v] for v in builds if v not in views)


def test_page_records_ratio_is_the_pages_cpu_over_its_own_forward_and_the_forward_record_the_forwards(monkeypatch):
    """page_<v>_ratio is median_i(page CPU_i / forward CPU_i) (the PAGE_TARGET compares CPU with CPU, paired per
    round), not the page's wall time; page_forward_cpu_ms is the forward's CPU time over every view of the size; and
    the model of a config is loaded once for all its views and sizes. Page wall, page CPU and forward CPU take
    different times here, each view its own."""
    import bench.app_figures
    import bench.apptest_rerun as ar

    loads = []
    monkeypatch.setattr(bench.app_figures, "load_model", lambda key: loads.append(key) or "model")
    monkeypatch.setattr(ar, "load_model", lambda key: loads.append(key) or "model")
    cost = {"tokens": 1.0, "attention": 2.0}

    def page_times(spec, rounds, loaded=None, app=None):
        assert loaded == "model"
        c = cost[spec.views[0]]
        return {"page": [0.9 * c] * rounds, "page_cpu": [0.3 * c] * rounds, "forward_cpu": [0.1 * c] * rounds}

    monkeypatch.setattr(ar, "page_times", page_times)
    records = ar.page_records(tiny_context(sizes=(4, 6)), {"app": APP}, rounds=2, views=tuple(cost))
    by = {(r.name, r.tokens): r.value for r in records}
    for T in (4, 6):
        for v, c in cost.items():
            assert by[(f"app.page_{v}_ratio", T)] == pytest.approx(0.3 / 0.1)
            assert by[(f"app.page_{v}_cpu_ms", T)] == pytest.approx(0.3 * c * 1e3)
            assert by[(f"app.page_{v}_ms", T)] == pytest.approx(0.9 * c * 1e3)
        # the median over both views' rounds: 0.1 s and 0.2 s twice each
        assert by[("app.page_forward_cpu_ms", T)] == pytest.approx(0.15 * 1e3)
    assert len(loads) == 1, loads


def test_page_times_pair_one_forward_with_one_revisit_per_round(calls):
    from bench.apptest_rerun import page_times

    spec = app_spec(APP, sentence(5, salt=41), "attention")
    times = page_times(spec, rounds=3)
    assert set(times) == {"page", "page_cpu", "forward_cpu"}
    assert all(len(v) == 3 and min(v) > 0 for v in times.values())
    assert calls["sidebar"] == 1  # the link's first run alone: a revisit reruns view_area, not the whole script
    assert calls["forward"] <= 1  # the app's forward, once when the link opens (none where a test ran it before)


# -- browser: the longest main-thread task -----------------------------------------------------------


def test_the_longest_task_is_measured_in_the_page_and_forgotten_once_read(browser):
    from bench.browser import WATCH_TASKS_JS, longest_task_ms

    page = browser.new_page()
    try:
        page.set_content("<html><body>tasks</body></html>")
        page.evaluate(WATCH_TASKS_JS)
        busy = "(ms) => new Promise((done) => setTimeout(() => { const end = performance.now() + ms; " \
               "while (performance.now() < end) {} done(); }, 0))"
        page.evaluate(busy, 20)  # a short task: not a long one (<= 50 ms)
        assert longest_task_ms(page) == 0
        page.evaluate(busy, 90)
        page.evaluate(busy, 180)
        longest = longest_task_ms(page)
        assert 180 <= longest < 260  # the longer of the two: not the first (90), not their sum (270)
        assert longest_task_ms(page) == 0  # read once: forgotten
    finally:
        page.close()


# -- browser helpers: share links and expected charts ------------------------------------------------


def test_share_link_and_expected_ticks_follow_the_view():
    spec = FigureSpec(sentence_a="我有一只", sentence_b="只一有我", views=("attention",), theme="default")
    url = app_url("http://127.0.0.1:1/", spec)
    assert url.startswith("http://127.0.0.1:1/?") and "views=attention" in url and "sentence_a=" in url
    assert FigureSpec.from_query(dict(parse_qsl(urlsplit(url).query))) == spec  # the app reads it back
    ticks = expected_ticks(build_view("attention", spec, Models(load_model)), "attention")
    assert ticks[chart_key("attention", "attention-weights")] == [["0:我", "1:有", "2:一", "3:只"]] * 2


def test_a_share_query_opens_the_spec_it_was_made_of_and_always_names_its_views():
    """bench.browser.share_query, as ui/state.py share_query: the spec's non-default fields and the views always, so
    the app reads back the spec, whatever its views: several (in their order), or the default one alone."""
    from bench.browser import share_query

    for views in (("query", "attention"), ("attention",)):
        spec = FigureSpec(sentence_a="我有一只", views=views, theme="slide")
        query = share_query(spec)
        assert query["views"] == ",".join(views) and FigureSpec.from_query(query) == spec


def test_long_sentences_are_told_apart_by_z_values_when_labels_are_positions():
    # above 256 tokens a heatmap shows block means labelled by position: the same ticks for any
    # two sentences of that length, so the browser figure waits for the weights' first z values too
    first, second = (app_spec(APP, sentence(300, salt)) for salt in (0, 1))
    a, b = expected_for(first), expected_for(second)
    top = chart_key("attention", "attention-qkv")
    # Q, K, V (300 × d_k, within 256² cells) are drawn whole, so labelled by their tokens; the others by position
    assert a["charts"][top] != b["charts"][top]
    assert {k: v for k, v in a["charts"].items() if k != top} == {k: v for k, v in b["charts"].items() if k != top}
    key = chart_key("attention", "attention-weights")
    assert len(a["probes"][key]) == 8 and a["probes"][key] != b["probes"][key]
    # the chart on the screen (Q/K/V, the top one) tells them apart by its z sum: the browser figure times
    # the charts on the screen first (ui/chart.py draws the others when the page is idle)
    assert set(a["sums"]) >= {top, key} and a["sums"][top] != b["sums"][top]
    # the weights' rows each sum to 1: their sum is the same for both (so the weights chart has its probe)
    assert a["sums"][key] == pytest.approx(b["sums"][key])


# -- the classroom load test's number check -----------------------------------------------------


def test_session_sentences_are_all_different():
    n, steps = 30, 4
    texts = [classroom.session_sentence(i, k, n) for i in range(n) for k in range(steps)]
    assert len(set(texts)) == len(texts)
    assert all(8 <= len(t) <= 47 for t in texts)  # every tick label is shown (<= 48 per axis)


def test_together_the_whole_class_types_the_teachers_sentence_at_each_step():
    n, steps = 30, 4
    for k in range(steps):
        texts = {classroom.session_sentence(i, k, n, together=True) for i in range(n)}
        assert texts == {classroom.session_sentence(0, k, n)}  # one sentence per step: session 0's
    firsts = [classroom.session_sentence(0, k, n, together=True) for k in range(steps)]
    assert len(set(firsts)) == steps  # a new one at every step


def observed_from(view: str, text: str, b: str | None = None) -> dict:
    """What READ_CHART_JS would read from a correct page: the app's own figure, built here."""
    b = text[::-1] if b is None else b
    spec = FigureSpec(sentence_a=text, sentence_b=b, views=(view,), theme="default")
    panel = next(p for p in build_view(view, spec, Models(load_model)).panels
                 if p.key == classroom.CHECKED_PANEL[view])
    data = json.loads(panel.figure.to_json())  # base64 arrays -> decode like plotly.js does
    traces = []
    for t in panel.figure.data:
        z = None if getattr(t, "z", None) is None else np.asarray(t.z, dtype=np.float64).tolist()
        traces.append({"type": t.type, "role": (t.meta or {}).get("role"), "z": z})
    layout = data["layout"]
    return {"xticks": layout["xaxis"].get("ticktext", []), "xvals": layout["xaxis"].get("tickvals", []),
            "yticks": layout["yaxis"].get("ticktext", []), "yvals": layout["yaxis"].get("tickvals", []),
            "traces": traces}


@pytest.mark.parametrize("view", ["attention", "heads"])
@pytest.mark.parametrize("step", [0, 1])  # 11 and 47 tokens (a figure may label every k-th cell only)
def test_number_check_passes_the_sessions_own_figure(view, step):
    text = classroom.session_sentence(3 + 6 * step, step, 30)
    assert classroom.check_chart(observed_from(view, text), classroom.expected(text, view)) == []


@pytest.mark.parametrize("view", ["attention", "heads"])
def test_number_check_follows_padding_when_sentence_b_is_longer(view):
    # a student retypes A shorter than B: A's row is padded with [PAD] keys (masked, weight 0)
    a, b = classroom.session_sentence(0, 0, 30), classroom.session_sentence(20, 0, 30)[::-1]
    assert len(b) > len(a)
    want = classroom.expected(a, view, b)
    assert len(want.ticks) == len(b) and want.ticks[-1].endswith("[PAD]")
    assert classroom.check_chart(observed_from(view, a, b), want) == []
    assert classroom.check_chart(observed_from(view, a), want)  # B = A reversed: no padding, caught


def test_number_check_catches_a_wrong_session_and_a_wrong_value():
    mine, theirs = classroom.session_sentence(0, 0, 30), classroom.session_sentence(1, 0, 30)
    want = classroom.expected(mine, "attention")
    other = observed_from("attention", theirs)  # another student's page
    problems = classroom.check_chart(other, want)
    assert any("own tokens" in p for p in problems) and any("shape" in p for p in problems)
    # the right tokens, one weight off by 1e-3: caught by the value comparison alone
    page = observed_from("attention", mine)
    page["traces"][0]["z"][1][2] += 1e-3
    problems = classroom.check_chart(page, want)
    assert len(problems) == 1 and "max |z - weights|" in problems[0]
    # a mismatching expected value is reported as a failure
    wrong = classroom.Expected(want.ticks, [want.z[0] + 0.01])
    assert classroom.check_chart(observed_from("attention", mine), wrong)
    assert classroom.check_chart(None, want) == ["chart not found on the page"]


def test_records_of_a_run_are_bench_records():
    args = classroom.parse_args(["--sessions", "2"])
    result = classroom.Result(latencies={"load": [1.0, 2.0], "sentence": [0.5], "view": [0.7]}, checks=6,
                              reruns=4, phase={"cpu_s": 1.2, "wall_s": 3.0, "reruns": 2, "client_cpu_s": 2.0})
    samples = [("started", 70.0, 70.0), ("warm", 400.0, 1400.0), ("during", 420.0, 1420.0), ("after", 410.0, 1410.0)]
    records = classroom.records_of(args, result, samples, cpu_total=5.0)
    by = {r.name: r for r in records}
    assert all(isinstance(r, Record) and r.tokens == 2 for r in records)
    assert by["classroom.server_cpu_per_rerun_ms"].value == pytest.approx(600)
    assert by["classroom.rss_growth_per_session_MiB"].value == pytest.approx(10)
    assert by["classroom.failed_checks"].ok is True
    assert by["classroom.rerun_p95_ms"].value == pytest.approx(np.percentile([500, 700], 95))


@pytest.mark.browser
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="needs /usr/bin/chromium")
@pytest.mark.skipif(importlib.util.find_spec("playwright") is None, reason="needs playwright")
def test_classroom_load_two_sessions_end_to_end(tmp_path):
    out = tmp_path / "classroom.json"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--sessions", "2", "--actions", "2", "--timeout", "60", "--no-warmup",
         "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=90,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    by = {d["name"]: d for d in json.loads(out.read_text())}
    assert by["classroom.failed_checks"]["value"] == 0
    assert by["classroom.number_checks"]["value"] == 2 * (1 + 2)  # a load and two actions per session
    assert by["classroom.rss_peak_MiB"]["value"] > 0


@pytest.mark.slow
def test_the_app_server_leaves_no_log_behind_and_says_the_logs_end_when_it_cannot_start(tmp_path, monkeypatch):
    """Every server the browser figure and the classroom load test started left its streamlit-*.log in /tmp (82 of
    them on a machine of a few days' sessions): the log is read for the error that ends a failed start, then removed,
    on any exit."""
    import tempfile

    from bench.appserver import app_server

    logs = tmp_path / "tmp"
    logs.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(logs))
    app = tmp_path / "app.py"
    app.write_text("import streamlit as st\nst.write('x')\n")
    with app_server(app, start_timeout=120) as server:
        assert server.log_path.parent == logs and server.log_path.exists()
    assert server.proc.poll() is not None and not any(logs.iterdir())
    with pytest.raises(RuntimeError, match="(?s)streamlit exited with .*does not exist"), app_server(tmp_path / "none.py"):
        pass
    assert not any(logs.iterdir())
