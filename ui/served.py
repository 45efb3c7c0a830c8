"""The page's scripts, served once per browser from the app's static folder, not sent with every rerun.

A Streamlit component (st.components.v2) carries its script inline: every rerun that draws the element sends it
again. The charts' script (ui/chart.js, ~70 KB) went with every chart of every rerun, ~440 of the ~520 KB one change
of the attention view sent; the focus script (ui/focus.py, ~6.5 KB) with every view changed by a mouse click. Each is
written once to the static folder under its hash (`ensure_script`: a browser never keeps an old copy, older copies
removed), and its element carries a loader of about 1 KB (`loader`) that imports it once per page. Where the folder
cannot be written, the element carries the whole script as before (`inline_or_loader`).

Streamlit serves <app dir>/static/ at app/static/ (`server.enableStaticServing`, set in .streamlit/config.toml).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from pathlib import Path

from viz.export import write_atomic

ROOT = Path(__file__).resolve().parent.parent
STATIC = ROOT / "static"  # Streamlit serves <app dir>/static/ at app/static/ (server.enableStaticServing)
log = logging.getLogger("attention_lab")


def put_static(target: Path, data: bytes) -> Path:
    """target (in the static folder) holding data: written where missing or different, through viz.export's
    write_atomic (a temporary file renamed, so a browser never reads half a file); the path."""
    if not (target.is_file() and target.read_bytes() == data):
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, data)
    return target


def ensure_script(prefix: str, text: str, static: Path = STATIC) -> Path:
    """static/<prefix><hash>.js holding text: written if missing or different (put_static), the older copies of
    the same prefix removed; the path."""
    data = text.encode("utf-8")
    target = put_static(static / f"{prefix}{hashlib.sha256(data).hexdigest()[:16]}.js", data)
    for old in static.glob(f"{prefix}*.js"):
        if old != target:
            old.unlink(missing_ok=True)
    return target


# What an element carries in place of its script: the script from the static folder, imported once per page (a
# module: one copy of its state for every element of the component), then called as Streamlit calls a component's
# script; until it has come, the element's cleanup waits for it. A script that cannot load is said by __SAID__
# (where the component has something to say: the charts say it in the chart's place), and the next rerun tries again
# under another URL (?try=: the browser keeps a failed import's failure). Sent with every element of every rerun:
# its comments are here, not in it.
LOADER = """let script = null, loading = null, failed = 0;
const said = __SAID__;
export default function (args) {
  if (script) return script.default(args);
  const url = new URL(__URL__ + (failed ? "?try=" + failed : ""), document.baseURI).href;
  loading ??= import(url).then((m) => (script = m), (err) => {
    loading = null;
    failed += 1;
    throw err;
  });
  let cleanup = null, gone = false;
  loading.then((m) => {
    if (gone) return;
    said?.loaded(args);
    cleanup = m.default(args);
  }, () => gone || said?.failed(args, __URL__));
  return () => { gone = true; if (typeof cleanup === "function") cleanup(); };
}
"""


def loader(script: Path, said: str = "null") -> str:
    """LOADER for the script at `script` (in the static folder, served at app/static/); said: a JavaScript object
    {failed(args, url), loaded(args)} that shows, and takes back, a script that did not load (null: nothing)."""
    return LOADER.replace("__SAID__", said).replace("__URL__", json.dumps(f"app/static/{script.name}"))


def inline_or_loader(ensure: Callable[[], Path], script: str, said: str = "null", what: str = "its script",
                     then: str = "it goes with each element") -> str:
    """The loader of the script that ensure() puts in the static folder; where the folder cannot be written, the
    log says so (what could not be put there, and what follows) and the whole script goes inline, as before it was
    served."""
    try:
        return loader(ensure(), said)
    except OSError:
        log.exception("Attention Lab could not put %s in %s: %s", what, STATIC, then)
        return script
