"""The app freezes the heap it has after its first page, so a full garbage collection is cheap, and its
server runs none after each rerun (runner.postScriptGC = false).

lab/heap.py says why: Streamlit runs gc.collect(2) after every script run by default, and with torch,
plotly, pandas and Streamlit loaded a full collection walked ~270,000 objects (150-195 ms a rerun). The
frozen heap leaves what the open sessions hold, which grows with the class: the app's config turns the
per-rerun collection off. These tests run in subprocesses: a frozen heap and Streamlit's parsed config
are for the whole process, and pytest's own must stay as they are.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_freeze_collects_garbage_first_then_freezes_once_and_later_cycles_are_still_collected():
    got = _run(
        "import gc, json, weakref\n"
        "from lab.heap import freeze_startup_heap\n"
        "class Box: pass\n"
        "def cycle():\n"
        "    a, b = Box(), Box(); a.other, b.other = b, a\n"
        "    return weakref.ref(a)\n"
        "gc.disable()  # only the calls below collect\n"
        "keep = [Box() for _ in range(1000)]\n"
        "before = cycle()  # garbage at the freeze: it must be collected, not frozen\n"
        "first = freeze_startup_heap()\n"
        "frozen = gc.get_freeze_count()\n"
        "second = freeze_startup_heap()\n"
        "after = cycle()  # garbage made after the freeze: a later full collection frees it\n"
        "alive_after_freeze = after() is not None\n"
        "gc.collect(2)\n"
        "print(json.dumps(dict(first=first, second=second, frozen=frozen, frozen_again=gc.get_freeze_count(),\n"
        "    before_dead=before() is None, after_alive_until_gc=alive_after_freeze, after_dead=after() is None,\n"
        "    kept_frozen=gc.is_tracked(keep[0]) and len(gc.get_objects()) < frozen)))\n"
    )
    assert got["first"] is True and got["second"] is False  # freezes once per process
    assert got["frozen"] >= 1000 and got["frozen_again"] == got["frozen"]
    assert got["before_dead"]  # the collection before the freeze freed the old cycle
    assert got["after_alive_until_gc"] and got["after_dead"]  # new cycles are collected as before
    assert got["kept_frozen"]  # what was alive is out of the collected generations


def test_after_the_first_page_a_full_collection_walks_a_small_part_of_the_heap():
    got = _run(
        "import gc, json\n"
        "from streamlit.testing.v1 import AppTest\n"
        "at = AppTest.from_file('app.py', default_timeout=240)\n"
        "at.run()\n"
        "assert not at.exception, at.exception\n"
        "at.run()  # a second rerun: the freeze happened once, on the first\n"
        "print(json.dumps(dict(frozen=gc.get_freeze_count(), tracked=len(gc.get_objects()))))\n"
    )
    # torch, plotly, pandas and Streamlit alone are >100,000 objects; what a full collection still walks
    # (the objects made since the first page) is a small fraction of that.
    assert got["frozen"] > 100_000
    assert got["tracked"] < 0.2 * got["frozen"]


def test_the_server_reads_no_collection_after_each_rerun_from_the_apps_config(tmp_path):
    """`streamlit run app.py` reads .streamlit/config.toml next to app.py, from any folder; AppTest
    benchmarks (bench/apptest_rerun.py) run with the same options. A wrong section or name fails here."""
    code = (
        "import json\n"
        "from streamlit import config\n"
        f"config._main_script_path = {str(ROOT / 'app.py')!r}  # what `streamlit run` sets\n"
        "config.get_config_options(force_reparse=True)\n"
        "from bench.apptest_rerun import _server_options\n"
        "print(json.dumps(dict(server=config.get_option('runner.postScriptGC'),\n"
        "                      default=config._config_options_template['runner.postScriptGC'].default_val,\n"
        "                      bench=_server_options()['runner.postScriptGC'])))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path,
                         timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["default"] is True  # Streamlit's default: a full collection after every rerun
    assert got["server"] is False and got["bench"] is False
