"""The chart script's own title wrap (ui/chart.js, `rewrap`), run in Chromium, against viz.theme.wrap_text.

The server wraps a chart's title and notes for the width it lays the figure out for (viz.theme); the
browser wraps them again where the chart is drawn narrower (a phone, a sidebar, half-page twins).
Both must break the same way: between words or CJK characters, never inside a word, a tag, an
entity or an emoji, and never leaving a bare number at the start of a line when the word before it
can go down with it. With one width function given to both (one unit per character, as neither
measures fonts the same way), the two must break every line at the same places.
"""

from __future__ import annotations

import random
import re

import pytest
from conftest import CHROMIUM

import viz.theme as theme
from ui.chart import _script

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing (scripts/test.sh installs it)"),
]

SOFT_BREAK = '<br class="wrap">'
TEXTS = [
    "2. Scaled scores QKᵀ / √d_k (d_k = 16, same colours) — encoder self, layer 0, head 0",
    "Attention weights softmax(QKᵀ/√d_k) — decoder self, layer 1, head 3, sentence B",
    "春风拂面桃花盛开景色宜人，景色宜人桃花盛开春风拂面 — encoder self, layer 12, head 7",
    "我爱🐱 and 👍🏽! 我爱🐱 and 👍🏽! 🐱🐱🐱🐱🐱🐱 family 👨‍👩‍👧 layer 3",
    "שלום &lt;b&gt;bold?&lt;/b&gt; مرحبا &amp; more &#36;x&#36; text — query 12:&lt;b&gt;",
    "Scores QK<sup>T</sup> of query 5:她 against every key — encoder self, layer 0, head 2",
    "max |f(B) − P f(A)| = 3.6e-07 (colour range 0 … 2.54) with 4 tokens and 64 dimensions",
    "a word_that_is_much_longer_than_any_line_could_hold_at_all and then 12) items 7; 8: done",
]
UNIT_WIDTH = r"""
function textWidth(text, size, family) {  // the test's width: one unit per character, tags none, entities one
  return [...text.replace(/<[^>]*>/g, "").replace(/&[^;\s]+;/g, "M")].length * size;
}
"""


def unit_width(text: str, size: float) -> float:
    """UNIT_WIDTH in Python: code points (JavaScript's [...text] counts the same), tags none, entities one."""
    return len(re.sub(r"&[^;\s]+;", "x", re.sub(r"<[^<>]*>", "", text))) * size


def _wrap_functions() -> str:
    """The script's wrap: its constants, textWidth and rewrap, as a classic script (the module's other
    functions need plotly.js and Streamlit)."""
    js = _script()
    start, end = js.index("const SOFT_BREAK"), js.index("function fitTitle")
    return js[start:end] + "\nwindow.rewrap = rewrap;\n"


@pytest.fixture(scope="module")
def page(browser):
    page = browser.new_page()
    page.set_content("<html><body></body></html>")
    page.add_script_tag(content=_wrap_functions())
    yield page
    page.close()


def js_rewrap(page, text: str, room: float, size: float = 1.0, family: str = "sans-serif") -> tuple[str, int]:
    return tuple(page.evaluate("([t, r, s, f]) => rewrap(t, r, s, f)", [text, room, size, family]))


def test_the_script_breaks_lines_where_the_servers_wrap_does(page, monkeypatch):
    page.add_script_tag(content=UNIT_WIDTH)  # replaces the canvas measure for this module's page
    try:
        monkeypatch.setattr(theme, "text_width", unit_width)
        rng = random.Random(0)
        compared = wrapped = 0
        for text in TEXTS:
            for room in sorted({6, 9, 12, 17, 25, 40, *(rng.randint(5, 60) for _ in range(4))}):
                lines = theme.wrap_text(text, room, 1.0)
                got, added = js_rewrap(page, text, room)
                assert got.split(SOFT_BREAK) == lines, (text, room)
                assert added == len(lines) - 1
                assert got.replace(SOFT_BREAK, "") == text  # only breaks are added
                compared += 1
                wrapped += len(lines) > 1
        assert compared >= 60 and wrapped >= 40
    finally:
        page.reload()
        page.add_script_tag(content=_wrap_functions())


def test_a_bare_number_goes_down_with_the_word_before_it(page):
    text = "Weights — encoder self, layer 0, head 0"
    for room in range(60, 400, 7):
        got, _ = js_rewrap(page, text, room, 16)
        for line in got.split(SOFT_BREAK)[1:]:
            assert not line.startswith(("0", "1")), (room, got)  # "layer" / "0, head 0" never happens


def test_the_measured_wrap_never_cuts_an_emoji_a_tag_or_an_entity_and_keeps_hard_breaks(page):
    emoji = "我爱🐱 and 👍🏽! " * 6
    html = "&lt;b&gt;bold?&lt;/b&gt; QK<sup>T</sup> &amp; " * 6
    for text in (emoji, html, emoji + "<br>" + html):
        for room in (40, 80, 130, 200, 333):
            got, added = js_rewrap(page, text, room, 14)
            assert got.replace(SOFT_BREAK, "") == text
            assert got.count("<br>") == text.count("<br>")  # a hard break stays one
            lines = got.replace("<br>", SOFT_BREAK).split(SOFT_BREAK)
            assert added == got.count(SOFT_BREAK) and added > 0
            lone = page.evaluate(r"""(ls) => ls.filter((l) =>
                /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(l))""", lines)
            assert not lone, (room, lone)  # an emoji cut into its two UTF-16 halves
            for line in lines:
                assert line.count("<") == line.count(">")  # no tag cut in two
                assert line.count("&") == line.count(";")  # no entity cut in two
            widths = page.evaluate("([ls, s]) => ls.map((l) => textWidth(l.trimEnd(), s, 'sans-serif'))",
                                   [lines, 14])
            words = [len(theme._tokens(line)) for line in lines]
            assert all(w <= room + 0.5 or n == 1 for w, n in zip(widths, words, strict=True)), (room, lines, widths)
    fits = "short title"
    assert js_rewrap(page, fits, 500, 14) == (fits, 0)  # a line that fits is left as it is
