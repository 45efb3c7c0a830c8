"""The garbage collector in a long-running app server: what is alive after the first page is frozen.

Streamlit's server runs gc.collect(2) after every script run, fragment reruns included (config
option runner.postScriptGC, on by default), on the script thread. A full collection walks every
object the collector tracks, and with torch, plotly, pandas and Streamlit loaded that is ~270,000
objects: 150-195 ms on this machine for each rerun, holding the GIL, so the server could not send
the page's last charts until it was over. (AppTest's script runner skips that collection, which is
why bench/apptest_rerun.py now runs it itself.)

gc.freeze() (Python >= 3.7) moves every object alive at the call into a permanent generation that
collections skip. Called once, after the first full script run, it freezes the modules, the loaded
model and Streamlit's own machinery: objects that live as long as the process anyway. Objects made
later (each session's runs, figures and widgets) are tracked and collected as before; reference
counting still frees frozen objects. Only a reference cycle among objects alive at that moment
would never be collected: a bounded, one-time cost.

What a full collection still walks is what the open sessions hold (~500-800 objects each), so the
per-rerun collection grew with the class: with 60 sessions open it tripled a head change. The app's
.streamlit/config.toml therefore turns it off (runner.postScriptGC = false). Python's own collector
still runs, a full collection only once the surviving objects have grown by a quarter, and the
frozen heap keeps that one cheap too (bench: `python -m bench --app --only sessions`).
"""

from __future__ import annotations

import gc

_frozen = False


def freeze_startup_heap() -> bool:
    """Collect, then freeze everything alive now, once per process; True on the call that froze.

    (Not gc.get_freeze_count() on every call: it walks the whole frozen list, ~30 ms.)"""
    global _frozen
    if _frozen:
        return False
    _frozen = True
    gc.collect(2)  # garbage made so far is freed, not frozen
    gc.freeze()
    return True
