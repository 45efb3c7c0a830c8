"""The real app (`streamlit run app.py`) in headless Chromium: type, switch views, see the charts.

Full-page screenshots of every view land in artifacts/screenshots/ (git-ignored): look at them.
"""

from __future__ import annotations

import contextlib
import itertools
import re

import numpy as np
import pytest
from conftest import CHROMIUM, SCREENSHOTS, needs_trained, svg_pngs, trained_available

from scripts.screenshots import (
    RUNNING,
    VIEW_LABELS,
    full_screenshot,
    open_view,
    type_sentence,
    wait_for_setting,
    wait_idle,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing (scripts/test.sh installs it)"),
]

HTML_A = "<img src=x onerror=alert(1)>"
ERRORS = '[data-testid="stException"], [data-testid="stAlertContentError"]'


@pytest.fixture
def page(browser, streamlit_url):
    """A fresh tab (a new Streamlit session) that records every dialog the page tries to open."""
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    tab = context.new_page()
    tab.set_default_timeout(60_000)
    tab.dialogs = []
    tab.on("dialog", lambda d: (tab.dialogs.append(d.message), d.dismiss()))
    tab.script_errors = []  # uncaught exceptions in the page's JavaScript, and console errors
    tab.on("pageerror", lambda exc: tab.script_errors.append(f"uncaught: {exc}"))
    tab.on("console", lambda m: m.type == "error" and tab.script_errors.append(f"console: {m.text}"))
    tab.goto(streamlit_url)
    wait_idle(tab)
    yield tab
    context.close()
    assert tab.script_errors == []  # the charts' own script (ui/chart.js) included


def drawn_charts(page) -> int:
    """Plotly charts that really drew: a .js-plotly-plot holding its SVG (waits for the first one)."""
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
    return page.locator(".js-plotly-plot .main-svg").count()


@contextlib.contextmanager
def opened_tab(browser, url: str, width: int = 1280, height: int = 720, **options):
    """A fresh session (its own browser context: a 1280 x 720 projector unless told), opened at `url` and idle;
    closed afterwards. `options`: the context's others (color_scheme="dark")."""
    context = browser.new_context(viewport={"width": width, "height": height}, **options)
    try:
        tab = context.new_page()
        tab.set_default_timeout(60_000)
        tab.goto(url)
        wait_idle(tab)
        yield tab
    finally:
        context.close()


def draw_every_chart(page, pause_ms: int) -> None:
    """Scroll to each chart in turn, so that each draws (a chart off the screen waits), and wait until none waits."""
    drawn_charts(page)
    for i in range(page.locator(".js-plotly-plot").count()):
        page.locator(".js-plotly-plot").nth(i).scroll_into_view_if_needed()
        page.wait_for_timeout(pause_ms)
    page.wait_for_function("() => !document.querySelector('[data-waiting]')", timeout=20_000)


def test_every_view_draws_in_the_browser(page):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for n, label in enumerate(VIEW_LABELS, start=1):
        open_view(page, label)
        assert page.locator(ERRORS).count() == 0, f"an error or traceback on {label}"
        if label.endswith("Tokens"):
            page.wait_for_selector('[data-testid="stDataFrame"]')
            assert page.locator('[data-testid="stDataFrame"]').count() >= 3
        else:
            assert drawn_charts(page) > 0, f"no chart drew on {label}"
        full_screenshot(page, str(SCREENSHOTS / f"browser-{n}-{label.split('· ')[1].split()[0].lower()}.png"))
    assert page.dialogs == []


def test_typed_sentences_reach_the_figures_with_every_repeated_token(page):
    type_sentence(page, "sentence_a", "我爱我家")
    type_sentence(page, "sentence_b", "I like her")
    open_view(page, "3 · Attention step by step")
    assert page.locator(ERRORS).count() == 0 and drawn_charts(page) > 0
    ticks = page.eval_on_selector_all(".js-plotly-plot .ytick text", "els => els.map(e => e.textContent)")
    assert {"0:我", "1:爱", "2:我", "3:家"} <= set(ticks)  # 我 twice: two rows, never merged
    full_screenshot(page, str(SCREENSHOTS / "browser-repeated-tokens.png"))


def test_html_input_is_shown_literally_and_never_runs(page):
    type_sentence(page, "sentence_a", HTML_A)
    open_view(page, "3 · Attention step by step")
    assert drawn_charts(page) > 0
    assert page.locator("img[src='x']").count() == 0
    open_view(page, "5 · One query")  # its charts' titles quote a token of the input: as text
    assert f"Query 0:{HTML_A[0]}: scores" in headings(page)
    assert page.locator(".lab-chart-title").count() > 0
    assert page.locator(".lab-chart-title *, .lab-chart-caption *").count() == 0  # text only, no elements
    if trained_available():
        open_view(page, "7 · Translate")  # switches to the trained model, whose caption quotes the input
        assert f"{HTML_A} →" in page.locator('[data-testid="stMain"]').inner_text()
    else:
        page.get_by_text("Share this view").click()
        assert HTML_A in page.locator('[data-testid="stCode"]').last.inner_text()
    assert page.locator(ERRORS).count() == 0
    assert page.locator("img[src='x']").count() == 0
    assert page.dialogs == []  # onerror=alert(1) never ran
    full_screenshot(page, str(SCREENSHOTS / "browser-html-input.png"))


def test_impossible_settings_show_a_sentence_not_a_traceback(page, streamlit_url):
    page.goto(f"{streamlit_url}/?views=attention&d_model=30&n_heads=2")  # valid: 30 / 2
    wait_idle(page)
    assert drawn_charts(page) > 0
    page.get_by_text("Model size (random model)").click()
    heads = page.locator(".st-key-n_heads input")
    heads.fill("4")
    heads.press("Enter")
    page.wait_for_selector('[data-testid="stAlertContentError"]')
    wait_idle(page)
    assert page.locator('[data-testid="stException"]').count() == 0
    error = page.locator('[data-testid="stAlertContentError"]')
    assert error.count() == 1 and "heads: d_model 30 does not split into 4 heads" in error.inner_text()
    full_screenshot(page, str(SCREENSHOTS / "browser-impossible.png"))


# Counts elements Streamlit marks stale (re-running) from now on, in the sidebar and in the main area, and (also
# counted in main) in the row of sentence boxes.
STALE_COUNTER = """() => { window.__stale = {sidebar: 0, main: 0, sentences: 0};
  new MutationObserver((records) => { for (const r of records) {
    if (r.target.getAttribute('data-stale') !== 'true') continue;
    if (r.target.closest('.st-key-sentences')) window.__stale.sentences++;
    window.__stale[r.target.closest('[data-testid="stSidebar"]') ? 'sidebar' : 'main']++; } })
  .observe(document.body, {subtree: true, attributes: true, attributeFilter: ['data-stale']}); }"""


def pick(page, key: str, label: str) -> None:
    page.locator(f".st-key-{key} [role='combobox']").click()
    page.get_by_role("option", name=label, exact=True).click()


def headings(page) -> str:
    return " ".join(page.locator('[data-testid="stMain"] h3').all_inner_texts())


def test_layer_head_and_view_changes_rerun_only_the_main_area(page):
    open_view(page, "3 · Attention step by step")
    page.evaluate(STALE_COUNTER)
    pick(page, "layer", "layer 1")
    wait_for_setting(page, "layer", "1")
    pick(page, "head", "head 1")
    wait_for_setting(page, "head", "1")
    assert "layer 1, head 1" in headings(page)
    open_view(page, "4 · Heads")
    stale = page.evaluate("() => window.__stale")
    assert stale["sidebar"] == 0 and stale["main"] > 0, stale  # the fragment reran, the sidebar did not,
    assert stale["sentences"] == 0, stale  # nor the sentence boxes (12 before view_area was a fragment of its own)
    page.locator(".st-key-open-head-2").get_by_role("button", name="head 2").click()  # open head 2 step by step
    wait_for_setting(page, "views", "attention")
    wait_for_setting(page, "head", "2")
    assert "layer 1, head 2" in headings(page)
    assert page.locator(".st-key-head [role='combobox']").input_value() == "head 2"
    assert page.evaluate("() => window.__stale")["sidebar"] == 0
    # A new sentence (typed in the main area, inside the fragment) reruns the fragment with a new forward
    # pass, and the charts show it; tests/test_app_fragment.py proves the sidebar code does not run.
    type_sentence(page, "sentence_a", "我爱我家")
    page.wait_for_function("""() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
        .some(gd => ((gd.layout.yaxis || {}).ticktext || []).includes('0:我'))""", timeout=30_000)
    assert page.evaluate("() => window.__stale")["sidebar"] == 0
    assert page.locator(ERRORS).count() == 0


def test_arrow_keys_step_the_head_shift_arrows_the_layer_but_not_while_typing(page):
    """For a projector: → / ← flip through heads, Shift+→ / Shift+← through layers (the ◂ ▸ buttons' shortcuts);
    the same keys inside a sentence box only move its cursor."""
    open_view(page, "3 · Attention step by step")
    page.locator('[data-testid="stMain"] h3').first.click()  # the focus on the page, not on a control
    for head in ("1", "2"):
        page.keyboard.press("ArrowRight")
        wait_for_setting(page, "head", head)
    page.keyboard.press("ArrowLeft")
    wait_for_setting(page, "head", "1")
    page.keyboard.press("Shift+ArrowRight")
    wait_for_setting(page, "layer", "1")
    assert "layer 1, head 1" in headings(page)
    assert page.locator(".st-key-head [role='combobox']").input_value() == "head 1"
    box = page.locator(".st-key-sentence_a input")
    box.click()
    for key in ("ArrowRight", "ArrowLeft", "Shift+ArrowRight", "ArrowRight"):
        box.press(key)
    page.wait_for_timeout(1500)  # time for a rerun that must not come
    wait_idle(page)
    assert page.evaluate("() => Object.fromEntries(new URLSearchParams(window.location.search))").get("head") == "1"
    assert page.locator(".st-key-head [role='combobox']").input_value() == "head 1"
    assert "layer 1, head 1" in headings(page)


def test_after_a_mouse_click_on_a_control_the_arrow_keys_still_flip_heads(page):
    """A teacher clicks with the mouse and flips heads with → . The focus stayed in the control clicked: on
    the view bar → moved its focus ring to the next view, in a select box (the sidebar's too) or the Sentence
    radio it did nothing or turned A into B. After a mouse click the control lets its focus go (ui/focus.py release); the keyboard's
    own path (the focus kept on the view bar) is test_the_keyboard_focus_stays_on_the_page_after_a_click…."""
    head = page.locator(".st-key-head [role='combobox']")

    def right_to(value: str) -> None:
        page.keyboard.press("ArrowRight")
        page.wait_for_function("([el, v]) => el.value === v", arg=[head.element_handle(), value])
        wait_idle(page)

    open_view(page, "3 · Attention step by step")  # a click on the view bar
    right_to("head 1")
    open_view(page, "4 · Heads")  # the same control twice in a row: the focus let go both times
    open_view(page, "3 · Attention step by step")
    right_to("head 2")
    page.locator(".st-key-head").click()
    page.get_by_role("option", name="head 3").click()
    wait_for_setting(page, "head", "3")
    right_to("head 0")  # round to the first
    page.locator(".st-key-sentence").get_by_text("B", exact=True).click()
    wait_for_setting(page, "sentence", "b")
    right_to("head 1")
    assert page.locator(".st-key-sentence input[type=radio]").nth(1).is_checked()  # still B
    page.locator(".st-key-sentence").get_by_text("A", exact=True).click()  # and back: twice in a row
    page.wait_for_function("() => !new URLSearchParams(location.search).has('sentence')")  # A: the default
    wait_idle(page)
    right_to("head 2")
    assert page.locator(".st-key-sentence input[type=radio]").nth(0).is_checked()  # still A
    page.locator(".st-key-mask [role='combobox']").click()  # a sidebar box: the whole app reruns
    if not page.get_by_role("option", name="none", exact=True).count():
        page.keyboard.press("ArrowDown")  # in the sidebar the click may only focus the box
    page.get_by_role("option", name="none", exact=True).click()
    wait_for_setting(page, "mask", "none")
    right_to("head 3")
    open_view(page, "4 · Heads")
    page.locator(".st-key-open-head-2 button").first.click()  # opens view 3 at head 2
    wait_for_setting(page, "views", "attention")
    assert not page.evaluate("() => !!document.activeElement.closest('.st-key-view')")  # not on the view bar
    right_to("head 3")
    right_to("head 0")


def test_a_folded_sidebar_is_no_tab_stop_and_opened_from_the_keyboard_takes_the_focus(browser, streamlit_url):
    """A teacher's walk, on a lesson link (slide theme: the sidebar starts folded): its 16 controls were the
    page's first Tab stops, focused off the screen (↓ opened the Model list out of sight); Enter on » then left
    the focus on the <body>, and the next Tab went past the sidebar."""
    with opened_tab(browser, f"{streamlit_url}/?views=attention&theme=slide") as tab:
        focused = "() => [document.activeElement.getAttribute('aria-label'), document.activeElement.closest('[data-testid=\"stSidebar\"]') !== null]"
        stops = []
        for _ in range(4):
            tab.keyboard.press("Tab")
            stops.append(tab.evaluate(focused))
        assert not any(inside for _, inside in stops), stops  # nothing in the folded sidebar
        assert ["Expand sidebar", False] in stops, stops
        while tab.evaluate(focused)[0] != "Expand sidebar":
            tab.keyboard.press("Shift+Tab")
        tab.keyboard.press("Enter")
        tab.wait_for_function("() => document.activeElement.getAttribute('aria-label') === 'Model'")
        assert tab.evaluate(focused) == ["Model", True]
        box = tab.locator('[data-testid="stSidebar"] input[aria-label="Model"]').bounding_box()
        assert box["x"] >= 0 and 0 <= box["y"] <= 720  # on the screen


def test_a_head_opened_with_the_mouse_from_far_down_view_4_opens_view_3_at_its_top(page):
    """A teacher's walk: "head 2" under view 4's grid opened view 3 with the page still scrolled ~500 px, half way
    down its Q, K, V. The view bar comes back on the screen, below Streamlit's header, mouse or keys."""
    open_view(page, "4 · Heads")
    drawn_charts(page)
    button = page.locator(".st-key-open-head-2 button").first
    button.scroll_into_view_if_needed()
    assert page.locator(".st-key-view").evaluate("e => e.getBoundingClientRect().bottom") < 0  # scrolled past it
    button.click()
    wait_for_setting(page, "views", "attention")
    page.wait_for_function("() => { const r = document.querySelector('.st-key-view').getBoundingClientRect();"
                           " return r.top >= 0 && r.bottom <= innerHeight; }")
    header = page.locator('[data-testid="stHeader"]').evaluate("e => e.getBoundingClientRect().bottom")
    assert page.locator(".st-key-view").evaluate("e => e.getBoundingClientRect().top") >= header - 1
    right = page.locator(".st-key-head [role='combobox']")
    page.keyboard.press("ArrowRight")  # and the keys still flip heads (the mouse's click let the focus go)
    page.wait_for_function("el => el.value === 'head 3'", arg=right.element_handle())


def test_after_dragging_the_decoding_step_the_arrow_keys_flip_heads(page):
    """A teacher's walk: after the decoding-step slider was dragged with the mouse, → moved the step, not the head."""
    if not trained_available():
        pytest.skip("the trained zh-en model is not shipped here")
    open_view(page, "7 · Translate")  # switches to the trained zh-en model
    step = page.locator(".st-key-translate_step input[type='range']")
    step.wait_for(state="attached")
    wait_idle(page)
    track = page.locator(".st-key-translate_step [role='group'] > div").first
    track.scroll_into_view_if_needed()
    box = track.bounding_box()
    page.mouse.click(box["x"] + box["width"] - 2, box["y"] + box["height"] / 2)  # the last step, with the mouse
    page.wait_for_function("el => el.value === '4'", arg=step.element_handle())
    wait_idle(page)
    head = page.locator(".st-key-head [role='combobox']")
    page.keyboard.press("ArrowRight")
    page.wait_for_function("el => el.value === 'head 1'", arg=head.element_handle())
    wait_idle(page)
    assert step.input_value() == "4"


def test_every_control_of_the_one_query_view_fits_one_row_on_a_1500_px_screen(page):
    """The widest controls row (block, layer ◂ ▸, head ◂ ▸, sentence, query token) on one line; the
    layer buttons' hints read ⇧← ⇧→ (ui/style.py), the keys they name still step the layer."""
    open_view(page, "5 · One query")
    look = page.locator(".st-key-look")
    tops = look.evaluate("e => [...e.children].map(c => Math.round(c.getBoundingClientRect().top))")
    assert len(tops) == 5 and len(set(tops)) == 1, tops  # block, layer group, head group, sentence, query
    hints = [page.locator(f".st-key-layer-{side} kbd").first.evaluate("k => getComputedStyle(k, '::after').content")
             for side in ("prev", "next")]
    assert hints == ['"⇧←"', '"⇧→"'], hints
    assert page.locator(".st-key-layer-next kbd").first.get_attribute("aria-label") == "Shortcut Shift + →"
    page.locator('[data-testid="stMain"] h3').first.click()
    page.keyboard.press("Shift+ArrowRight")
    wait_for_setting(page, "layer", "1")
    assert page.locator(".st-key-look").evaluate(
        "e => new Set([...e.children].map(c => Math.round(c.getBoundingClientRect().top))).size") == 1


def test_a_share_link_opens_the_same_view_layer_and_head(page, streamlit_url):
    page.goto(f"{streamlit_url}/?views=attention&layer=1&head=3&block=cross")
    wait_idle(page)
    assert drawn_charts(page) > 0
    assert "cross, layer 1, head 3" in headings(page)
    for key, shown in (("block", "cross"), ("layer", "layer 1"), ("head", "head 3")):
        assert page.locator(f".st-key-{key} [role='combobox']").input_value() == shown


def test_the_browsers_back_button_shows_the_view_before_and_forward_the_one_after(browser, streamlit_url):
    """A teacher's walk: from lesson step 3 (a slide link) to view 4, then the browser's Back. The address bar went
    back to view 3's link for a moment and Streamlit reran with it, but the app kept view 4 and wrote its link back:
    Back did nothing on the screen. Now Back shows view 3 (its block and head too) and keeps its link; Forward view 4."""
    checked = ".st-key-view [role='radio'][aria-checked='true']"
    with opened_tab(browser, f"{streamlit_url}/?views=attention&sentence_a=你喜欢她&sentence_b=她喜欢你"
                             "&block=decoder+self&theme=slide") as tab:
        tab.keyboard.press("ArrowRight")  # head 1, then view 4
        wait_for_setting(tab, "head", "1")
        open_view(tab, "4 · Heads")
        tab.go_back()
        wait_for_setting(tab, "views", "attention")
        tab.wait_for_timeout(1500)  # had the app kept view 4, it would have written its link back by now
        assert tab.locator(checked).inner_text() == "3 · Attention step by step"
        assert "decoder self, layer 0, head 1" in headings(tab)
        assert "views=attention" in tab.url and "head=1" in tab.url
        tab.go_forward()
        wait_for_setting(tab, "views", "heads")
        tab.wait_for_timeout(1500)
        assert tab.locator(checked).inner_text() == "4 · Heads" and "views=heads" in tab.url


def test_the_page_opened_without_a_link_takes_one_history_entry_so_back_from_its_first_view_leaves(browser,
                                                                                                  streamlit_url):
    """A student opens the bare address (no query), goes to view 2, then presses Back twice. The first run put view 1's
    link into the address bar as a new history entry, so the page held two entries for one view: the second Back
    showed view 1 again, the same page, and a third was needed to leave. The bare address is view 1's link already:
    the first run now leaves it so, and the first change is the page's second entry."""
    with opened_tab(browser, f"{streamlit_url}/") as tab:
        assert tab.evaluate("history.length") == 2  # the blank tab, and the page
        open_view(tab, "2 · Positional encoding")
        assert tab.evaluate("history.length") == 3
        tab.go_back()
        wait_idle(tab)
        assert tab.locator(".st-key-view [role='radio'][aria-checked='true']").inner_text() == "1 · Tokens"
        tab.go_back()
        tab.wait_for_url("about:blank")


def test_forward_pressed_twice_at_once_shows_the_link_it_lands_on(browser, streamlit_url):
    """A student's walk: an example, Swap A ↔ B, Back twice to the first link, then Forward twice at once. The first
    Forward's run was cut short by the second before the app had noted its link, so the second was taken for a change
    of a setting: the page kept the first link's sentences (the boxes' values, sent with the rerun) under the last
    link's address, and view 5's query token came back as its label from the old sentence ('0:a'), so the view said
    "Something went wrong drawing this view (TypeError ...)". Each Back or Forward now opens the link it brings."""
    with opened_tab(browser, f"{streamlit_url}/?views=query&sentence_a=abc") as tab:
        tab.locator(".st-key-preset button").first.click()
        tab.get_by_text("I like her / her like I", exact=False).first.click()
        wait_for_setting(tab, "sentence_a", "I like her")
        tab.locator(".st-key-swap button").click()
        wait_for_setting(tab, "sentence_a", "her like I")
        tab.go_back()
        wait_for_setting(tab, "sentence_a", "I like her")
        tab.go_back()
        wait_for_setting(tab, "sentence_a", "abc")
        tab.go_forward()
        tab.go_forward()  # before the first one's run has finished
        wait_for_setting(tab, "sentence_a", "her like I")
        tab.wait_for_timeout(1500)
        wait_idle(tab)
        assert "sentence_a=her+like+I" in tab.url
        shown = [tab.locator(f".st-key-{key} input").input_value() for key in ("sentence_a", "sentence_b")]
        assert shown == ["her like I", "I like her"]
        assert tab.locator(ERRORS).count() == 0, tab.locator(ERRORS).all_inner_texts()


def test_a_bad_links_message_goes_at_the_first_change_though_only_the_main_area_reruns(page, streamlit_url):
    page.goto(f"{streamlit_url}/?views=attention&layer=abc")
    wait_idle(page)
    error = page.locator('[data-testid="stAlertContentError"]')
    assert error.count() == 1 and "layer" in error.inner_text()
    open_view(page, "4 · Heads")  # a fragment rerun: the sidebar and the page above the main area stay
    assert "All heads of layer" in headings(page)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stAlertContentError\"]')",
                           timeout=15_000)


def test_numbers_and_downloads_of_a_figure_open_on_demand(page):
    open_view(page, "3 · Attention step by step")
    weights = "attention-attention-weights"
    assert page.locator(f".st-key-csv-{weights}").count() == 0  # nothing built until asked for
    assert page.locator("[data-testid='stDataFrame']").count() == 0
    page.locator(f".st-key-numbers-{weights} summary").first.click()  # one expander: downloads and numbers
    csv = page.locator(f".st-key-csv-{weights} button").first
    csv.wait_for()
    page.locator(f".st-key-numbers-{weights} [data-testid='stDataFrame']").wait_for()
    with page.expect_download() as download:
        csv.click()
    text = open(download.value.path(), encoding="utf-8-sig").read()
    assert text.splitlines()[0].split(",")[1:] == ["0:你", "1:喜", "2:欢", "3:她"]
    assert page.locator(f".st-key-csv-{weights}").count() == 1  # only the opened figure's
    assert page.locator(ERRORS).count() == 0


def test_the_examples_menu_fills_both_sentences_and_redraws_only_the_main_area(page):
    from ui.state import PRESETS

    label = next(k for k in PRESETS if k.startswith("我有一只猫"))
    a, b = PRESETS[label]
    open_view(page, "3 · Attention step by step")
    page.evaluate(STALE_COUNTER)
    page.locator(".st-key-preset button").first.click()
    page.get_by_text(label, exact=True).click()
    page.wait_for_function("""([a, b]) => document.querySelector('.st-key-sentence_a input').value === a
        && document.querySelector('.st-key-sentence_b input').value === b""", arg=[a, b])
    page.wait_for_function("""() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
        .some(gd => ((gd.layout.yaxis || {}).ticktext || []).includes('4:猫'))""", timeout=30_000)
    wait_idle(page)
    assert page.evaluate("() => window.__stale")["sidebar"] == 0  # a fragment run: the sidebar stays
    assert page.locator(ERRORS).count() == 0


# -- ui/chart.py: a chart keeps its <div>; Plotly.react redraws it in place ------------------------
WEIGHTS_CHART = ".st-key-chart-attention-attention-weights .js-plotly-plot"
SIZE = "gd => [gd._fullLayout.width, gd._fullLayout.height]"


def test_a_new_sentence_and_a_new_head_redraw_every_chart_in_its_own_div(page):
    open_view(page, "3 · Attention step by step")
    assert drawn_charts(page) >= 5
    count = page.evaluate("""() => { const divs = [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')];
        divs.forEach((gd, i) => { gd.__mark = i; }); return divs.length; }""")
    ticks = page.eval_on_selector(WEIGHTS_CHART, "gd => gd.layout.yaxis.ticktext")
    weights = page.eval_on_selector(WEIGHTS_CHART, "gd => Array.from(gd._fullData[0].z[0])")
    type_sentence(page, "sentence_a", "我爱我家")
    page.wait_for_function(f"""() => (document.querySelector('{WEIGHTS_CHART}').layout.yaxis.ticktext || [])
        .includes('0:我')""", timeout=30_000)
    pick(page, "head", "head 1")
    wait_for_setting(page, "head", "1")
    marks = page.evaluate("""() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
        .map(gd => gd.__mark)""")
    assert marks == list(range(count))  # the same <div>s, in the same order: none was rebuilt
    assert page.eval_on_selector(WEIGHTS_CHART, "gd => gd.layout.yaxis.ticktext") != ticks
    assert page.eval_on_selector(WEIGHTS_CHART, "gd => Array.from(gd._fullData[0].z[0])") != weights
    assert "head 1" in headings(page) and page.locator(ERRORS).count() == 0
    open_view(page, "4 · Heads")  # the step-by-step charts leave the page, then come back
    open_view(page, "3 · Attention step by step")
    assert drawn_charts(page) > 0
    assert page.locator('[data-testid="stMain"] .js-plotly-plot').count() == count
    boxes = page.eval_on_selector_all('[data-testid="stMain"] [class*="st-key-chart-"]',
                                      "els => els.map(e => e.querySelectorAll('.lab-chart-box').length)")
    assert boxes == [1] * count


# Every Plotly.react call from now on: the chart's key and whether its box was on the screen then.
REACT_LOG = """() => { window.__reacts = []; const real = window.__react = window.__react || Plotly.react;
  Plotly.react = function (gd, ...rest) {
    const r = gd.parentElement.getBoundingClientRect();
    const key = [...gd.closest('[class*="st-key-chart-"]').classList].find(c => c.startsWith('st-key-chart-'));
    window.__reacts.push([key.slice('st-key-'.length), r.bottom > 0 && r.top < window.innerHeight]);
    return real.call(this, gd, ...rest);
  }; }"""
CHART_TICKS = """() => Object.fromEntries([...document.querySelectorAll('[data-testid="stMain"] .lab-chart')].map(gd =>
  [[...gd.closest('[class*="st-key-chart-"]').classList].find(c => c.startsWith('st-key-chart-')).slice(7),
   [gd.parentElement.hasAttribute('data-waiting'), (gd.layout && gd.layout.yaxis.ticktext || []).includes('1:爱')]]))"""


NO_IDLE = "() => { window.__idle = window.__idle || window.requestIdleCallback; window.requestIdleCallback = () => 0; }"
IDLE = "() => { window.requestIdleCallback = window.__idle; }"
MAIN = "document.querySelector('[data-testid=\"stMain\"]')"  # what the page scrolls in


def chart_states(page, label: str) -> dict[str, list[bool]]:
    """Chart key (without "chart-") -> [waiting, its y ticks include `label`]."""
    return page.evaluate(CHART_TICKS.replace("1:爱", label))


def scroll_to(page, key: str, below: float) -> None:
    """Scroll the main area so that the top of chart `key`'s box is `below` px under the bottom of the screen
    (negative: on it)."""
    page.evaluate(f"""([key, below]) => {{ const main = {MAIN};
        const box = document.querySelector('.st-key-' + key + ' .lab-chart-box').getBoundingClientRect();
        main.scrollTop += box.top - (main.getBoundingClientRect().bottom + below); }}""", [key, below])


def run_only(page, key: str, value: str) -> None:
    """Until the rerun with `key` = `value` has finished (not waiting for the charts, as wait_for_setting does)."""
    page.wait_for_function("([k, v]) => new URLSearchParams(window.location.search).get(k) === v", arg=[key, value])
    page.wait_for_selector(RUNNING, state="detached")
    page.wait_for_timeout(800)  # the charts' script has run: with no idle callback, those off the screen wait


def test_charts_on_the_screen_draw_first_and_the_others_when_idle_or_scrolled_to(page):
    # ui/chart.py: a new sentence draws the charts on the screen at once; one below waits (data-waiting, its
    # old figure) for an idle moment of the page, or until scrolled near, whichever comes first
    open_view(page, "3 · Attention step by step")
    assert drawn_charts(page) >= 5
    page.evaluate(REACT_LOG)
    type_sentence(page, "sentence_a", "我爱我家")  # waits until no chart waits (scripts/screenshots.py)
    reacts = page.evaluate("() => window.__reacts")
    assert len(reacts) >= 6 and reacts[0][1], reacts  # the first chart drawn was on the screen
    assert [on for _, on in reacts] == sorted((on for _, on in reacts), reverse=True), reacts  # then the rest
    assert not reacts[-1][1], reacts  # some waited below the screen ...
    assert all(drawn for waiting, drawn in chart_states(page, "1:爱").values() if not waiting)  # ... all drawn now

    page.evaluate(NO_IDLE)
    box = page.locator(".st-key-sentence_a input")
    box.fill("你爱我家")
    box.press("Enter")
    run_only(page, "sentence_a", "你爱我家")  # the page is idle: with no idle callback, the charts below wait
    top, scores = "attention-attention-qkv", "attention-attention-scores"
    scaled, weights = "attention-attention-scaled", "attention-attention-weights"
    state = chart_states(page, "0:你")
    assert state[f"chart-{top}"] == [False, True], state  # on the screen: drawn with the new sentence
    assert state[f"chart-{weights}"] == [True, False], state  # below: still its old figure, waiting
    page.wait_for_function(f"() => getComputedStyle(document.querySelector('.st-key-chart-{weights} .lab-chart-box'))"
                           ".opacity === '0.33'", timeout=5000)  # and looks stale meanwhile, as Streamlit's do
    scroll_to(page, f"chart-{scores}", below=120)  # near the screen (within 200 px of it): drawn
    page.wait_for_function(f"() => !document.querySelector('.st-key-chart-{scores} [data-waiting]')", timeout=10_000)
    assert chart_states(page, "0:你")[f"chart-{scaled}"] == [True, False]  # further below: still waits
    scroll_to(page, f"chart-{weights}", below=-300)  # scrolled to: drawn, idle or not
    page.wait_for_function(f"() => !document.querySelector('.st-key-chart-{weights} [data-waiting]')", timeout=10_000)
    state = chart_states(page, "0:你")
    assert state[f"chart-{weights}"] == [False, True] and state[f"chart-{scaled}"] == [True, False], state

    page.evaluate(IDLE)  # at the bottom, the next head (→): the weights first, then the nearest above, up to the top
    scroll_to(page, f"chart-{top}", below=-400)  # (the observer hears of it: the charts still waiting draw)
    page.wait_for_function("() => !document.querySelector('[data-waiting]')", timeout=10_000)
    scroll_to(page, f"chart-{weights}", below=-300)
    page.locator(f".st-key-chart-{weights} h3").click()  # the focus on the page, not on a control
    page.evaluate(REACT_LOG)
    page.keyboard.press("ArrowRight")
    wait_for_setting(page, "head", "1")
    reacts = page.evaluate("() => window.__reacts")
    order = [key for key, _ in reacts]
    # those on the screen or near it (within 200 px) at once, then the others upwards, nearest first
    assert all(order.index(key) < order.index(f"chart-{scaled}") for key, on in reacts if on), reacts
    assert order[-3:] == [f"chart-{scaled}", f"chart-{scores}", f"chart-{top}"], order
    assert all(v == [False, True] for v in chart_states(page, "0:你").values())
    assert "head 1" in headings(page)


def test_new_charts_on_the_screen_draw_at_once_and_a_new_width_redraws_every_chart(page):
    # a chart new on the page (another view) draws at once where it is on the screen, idle or not; a new
    # width draws every chart at once (one left at the old width would stick out of the narrower page); in
    # full screen the charts behind it wait, and those on the screen draw when it is left
    open_view(page, "3 · Attention step by step")
    page.evaluate(NO_IDLE)
    page.locator(".st-key-view").get_by_role("radio", name="4 · Heads", exact=True).click()
    run_only(page, "views", "heads")
    states = chart_states(page, "0:你")
    first = next(iter(states))
    assert states[first][0] is False and any(waiting for waiting, _ in states.values()), states
    page.evaluate(IDLE)
    page.locator(".st-key-view").get_by_role("radio", name="3 · Attention step by step", exact=True).click()
    wait_for_setting(page, "views", "attention")
    page.evaluate(NO_IDLE)
    page.set_viewport_size({"width": 900, "height": 1000})
    page.wait_for_timeout(1500)
    assert page.evaluate("() => document.querySelectorAll('[data-waiting]').length") == 0
    assert page.evaluate(f"() => {MAIN}.scrollWidth <= {MAIN}.clientWidth")  # no chart sticks out sideways
    widths = page.eval_on_selector_all('[data-testid="stMain"] .lab-chart',
                                       "gds => gds.map(gd => [gd._fullLayout.width * gd.__lab.scale, "
                                       "gd.parentElement.parentElement.clientWidth])")
    assert all(shown <= room + 1 for shown, room in widths), widths

    page.hover(WEIGHTS_CHART)  # full screen: → draws head 1 there; the charts behind it wait
    page.locator(f"{WEIGHTS_CHART} .modebar-btn[data-title^='Full screen']").click()
    page.wait_for_function(f"() => document.querySelector('{WEIGHTS_CHART}')._fullLayout.height === window.innerHeight")
    page.keyboard.press("ArrowRight")
    run_only(page, "head", "1")
    waiting = page.evaluate("() => [...document.querySelectorAll('[data-waiting]')].map(b => "
                            "[...b.closest('[class*=\"st-key-chart-\"]').classList].join(' '))")
    assert waiting and not any("attention-weights" in w for w in waiting), waiting
    page.evaluate("() => document.exitFullscreen()")
    page.wait_for_function("() => !document.fullscreenElement")
    page.wait_for_function(  # the charts on the screen (or within 200 px of it) are drawn; the others wait
        f"() => {{ const m = {MAIN}.getBoundingClientRect(); return !document.querySelector('{WEIGHTS_CHART}')"
        ".parentElement.hasAttribute('data-waiting') && [...document.querySelectorAll('[data-waiting]')].every(b => {"
        " const r = b.getBoundingClientRect(); return r.top > m.bottom + 200 || r.bottom < m.top - 200; }); }")
    page.evaluate(IDLE)


# positional: the clock, only as tall as its circles; query: a lower row's panel titles wrapped again; translate at
# 320 px: plotly.js's automargin moves the plot right of the y labels, and the titles wrap again for it (efb1483)
@pytest.mark.parametrize(("view", "width"), [("attention", 390), ("positional", 390), ("query", 390),
                                             pytest.param("translate", 320, marks=needs_trained)])
def test_on_a_phone_a_chart_not_yet_drawn_holds_the_height_it_will_take(browser, streamlit_url, view, width):
    """A chart not yet drawn holds the height it will take, so the page does not jump when it draws. A review measured
    the jump on a 390 px phone: 15-32 px for most charts of views 2-7 (each title, note or panel title the chart
    wraps again, which the held height left out), and on a touch screen the first chart's title wrapped for a guessed
    toolbar of 140 px where it is 134. The height held is the chart's layout as it is drawn, to the pixel. At 320 px
    two of view 7's charts were drawn again a line (14 px) taller than held: plotly.js moved their plots right of the y
    labels (automargin), and their titles, which start at the plot, wrapped again for it."""
    context = browser.new_context(viewport={"width": width, "height": 844}, is_mobile=True, has_touch=True)
    tab = context.new_page()
    tab.add_init_script("window.__held = {}; new MutationObserver(() => document.querySelectorAll('.lab-chart-box')"
                        ".forEach(b => { const k = b.closest('[class*=\"st-key-chart-\"]'); if (b.style.minHeight && k)"
                        " window.__held[k.className] = parseFloat(b.style.minHeight); })).observe(document, "
                        "{subtree: true, childList: true, attributes: true, attributeFilter: ['style']});")
    tab.goto(f"{streamlit_url}/?views={view}" + ("&model=zh-en" if view == "translate" else
                                                 "&sentence_a=" + "春风拂面桃花盛开景色宜人" * 2))
    wait_idle(tab)
    held = tab.evaluate("() => window.__held")
    drawn = tab.evaluate("() => Object.fromEntries([...document.querySelectorAll('.lab-chart-box')].map(b => "
                         "[b.closest('[class*=\"st-key-chart-\"]').className, b.getBoundingClientRect().height]))")
    context.close()
    assert len(held) >= (3 if view == "query" else 5), held
    assert all(abs(height - drawn[key]) <= 1 for key, height in held.items()), {k: (h, drawn[k]) for k, h in held.items()}


@pytest.mark.parametrize("width", [390, 820])  # a phone; a tablet, where charts are not shrunk to fit
def test_on_a_touch_screen_the_toolbar_keeps_three_buttons_and_every_title_keeps_clear_of_it(browser, streamlit_url,
                                                                                              width):
    """No pointer hovers on a phone, so plotly.js shows its toolbar all the time, and it ran over every chart's
    title ("Positional encoding P[toolbar]"). On a touch screen the toolbar keeps reset, camera and full screen,
    and each title is wrapped to end left of it. With a mouse (the other tests) nothing changes. A narrow-screen
    walk: at 820 px titles ran 12-31 px under it (the first draw, before any toolbar, guessed 100 px; it is 134)."""
    with opened_tab(browser, f"{streamlit_url}/?views=positional&sentence_a=你喜欢她&sentence_b=她喜欢你", width, 844,
                    is_mobile=True, has_touch=True) as tab:
        assert tab.evaluate("() => matchMedia('(hover: none)').matches")  # what the chart's script asks
        boxes = tab.evaluate("""() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
            .filter(gd => gd.querySelector('.modebar') && gd.querySelector('.gtitle'))
            .map(gd => { const bar = gd.querySelector('.modebar');
                return {title: gd.querySelector('.gtitle').getBoundingClientRect().toJSON(),
                        bar: bar.getBoundingClientRect().toJSON(), opacity: getComputedStyle(bar.firstChild).opacity,
                        buttons: bar.querySelectorAll('.modebar-btn').length, width: bar.offsetWidth, k: gd.__lab.scale,
                        empty: [...bar.querySelectorAll('.modebar-group')].filter((g) => !g.children.length)
                            .map((g) => g.offsetWidth).filter(Boolean),
                        sizes: [...bar.querySelectorAll('.modebar-btn')].map((b) => {
                            const r = b.getBoundingClientRect(); return [r.width, r.height]; })}; })""")
        tab.screenshot(path=str(SCREENSHOTS / "browser-touch-toolbar.png"))
        tab.goto(f"{streamlit_url}/?views=tokens&sentence_a=你喜欢她&sentence_b=她喜欢你")  # tables: their toolbar
        wait_idle(tab)
        tables = tab.evaluate("""() => [...document.querySelectorAll('[data-testid="stElementToolbar"]')]
            .filter((t) => t.checkVisibility()).map((t) => {
            let box = t.closest('[data-testid="stElementContainer"]');  // the heading: before it, or before its pair
            while (!box.previousElementSibling) box = box.parentElement;
            const above = box.previousElementSibling;
            return [t.getBoundingClientRect().top, above.getBoundingClientRect().bottom, getComputedStyle(t).opacity]; })""")
        tab.goto(f"{streamlit_url}/?views=attention")  # the ◂ ▸ buttons: no key hints without a keyboard
        wait_idle(tab)
        hints = tab.evaluate("""() => [...document.querySelectorAll('[data-testid="stMain"] button kbd')]
            .map((k) => k.getBoundingClientRect().width)""")
        tab.locator(".st-key-preset button:visible").first.click()  # the Examples menu: on the screen, wrapped
        tab.wait_for_selector('[role="menuitem"]')
        menu = tab.evaluate("""() => [...document.querySelectorAll('[role="menuitem"]')].map((e) =>
            [e.textContent, e.getBoundingClientRect().right <= innerWidth, [...e.querySelectorAll('*')].every((c) =>
                c.scrollWidth <= c.clientWidth + 1)])""")
    assert len(boxes) >= 4, boxes
    for box in boxes:
        title, bar = box["title"], box["bar"]
        assert box["buttons"] == 3 and float(box["opacity"]) > 0.5, box  # shown without hovering, three buttons
        # in two groups (reset; camera and full screen), each 8 px before its buttons: the groups TOUCH_REMOVED empties
        # took 8 px each, a faint stripe of the toolbar's background, and the titles kept clear of them too
        assert box["empty"] == [], box
        assert abs(box["width"] - (2 * 8 + 3 * (max(22, 25 / box["k"] - 12) + 2 * 6))) <= 1, box  # chart.js touchToolbar
        assert title["right"] <= bar["left"] or title["top"] >= bar["bottom"], box
        assert all(w >= 24 and h >= 24 for w, h in box["sizes"]), box  # to tap (WCAG 2.2: 24 x 24 px)
    # the two side by side, A, B: shown without hovering, under the heading; on a phone they are HTML, which has no
    # toolbar (ui/panels.py PHONE_COLUMNS)
    assert len(tables) == (3 if width > 480 else 0), tables
    assert all(float(opacity) > 0.5 and top >= bottom - 1 for top, bottom, opacity in tables), tables
    assert len(menu) >= 5 and all(inside and whole for _, inside, whole in menu), menu  # 393 px on a 390 screen
    assert len(hints) >= 4 and not any(hints), hints  # hidden ("⇧←" means nothing on a phone)


# each chart's toolbar buttons as shown on the screen: [width, height] (after the chart's CSS scale)
TOOLBAR_BUTTONS = """() => [...document.querySelectorAll('[data-testid="stMain"] .lab-chart')].map((gd) =>
    [gd.__lab.scale, [...gd.querySelectorAll('.modebar-btn')].map((b) => {
        const r = b.getBoundingClientRect(); return [r.width, r.height]; })])"""


def test_on_a_narrower_phone_the_toolbar_buttons_are_still_24_px_to_tap(browser, streamlit_url):
    """A phone walk at 360 px (many Android phones) and 320 (the narrowest): the charts' toolbar buttons, 34 px as laid
    out, are shown at the chart's scale, 25 px on a 390 px phone (0.75) but 23 at 360 (0.68) and 20 at 320 (0.6), under
    WCAG 2.2's 24 x 24 and side by side with no room between them. Shown shrunk, they are drawn as much larger."""
    with opened_tab(browser, f"{streamlit_url}/?views=query", 360, 740, is_mobile=True, has_touch=True) as tab:
        shown = {360: tab.evaluate(TOOLBAR_BUTTONS)}
        tab.set_viewport_size({"width": 320, "height": 640})
        tab.wait_for_function("() => [...document.querySelectorAll('.lab-chart')].every((gd) => gd.__lab.scale < 0.65)")
        tab.wait_for_timeout(300)
        shown[320] = tab.evaluate(TOOLBAR_BUTTONS)
    for width, charts in shown.items():
        assert len(charts) == 3 and all(k < 0.7 and len(sizes) == 3 for k, sizes in charts), (width, charts)
        assert all(w >= 24 and h >= 24 for _, sizes in charts for w, h in sizes), (width, charts)


# Each line of a chart's title that the chart's script broke (a soft break) on a touch screen, where the toolbar shows
# all the time: [title, the line, the word(s) it sent down, px from where those would end on the line to the toolbar's
# left edge, as shown]. A bare number goes down with the word before it (ui/chart.js rewrap), so both are measured.
TITLE_BREAKS_BEFORE_TOOLBAR = r"""() => [...document.querySelectorAll('[data-testid="stMain"] .lab-chart')].flatMap((gd) => {
    const bar = gd.querySelector('.modebar'), k = gd.__lab.scale, text = gd.layout.title.text || '';
    const spans = [...gd.querySelectorAll('.gtitle tspan.line')], title = gd.querySelector('.gtitle');
    const breaks = text.match(/<br[^>]*>/g) || [];
    if (!bar || spans.length !== breaks.length + 1) return [];
    const ruler = document.createElement('canvas').getContext('2d');
    const s = getComputedStyle(title);
    ruler.font = `${s.fontSize} ${s.fontFamily}`;
    const lines = text.split(/<br[^>]*>/);
    return breaks.flatMap((br, i) => {
        if (!/wrap/.test(br)) return [];
        const words = lines[i + 1].trim().split(/\s+/);
        const down = /^\d+[,.;:)]?$/.test(words[1] || '') ? words.slice(0, 2).join(' ') : words[0];
        const end = spans[i].getBoundingClientRect().right + ruler.measureText(' ' + down).width * k;
        return [[lines[0].slice(0, 30), lines[i].trim(), down, bar.getBoundingClientRect().left - end]];
    }); })"""


@pytest.mark.parametrize("width", [390, 820])  # shown at 0.75 on a phone; a tablet's charts are not shrunk
def test_on_a_touch_screen_a_title_wraps_only_where_its_next_word_would_reach_the_toolbar(browser, streamlit_url,
                                                                                           width):
    """A phone walk: each chart's title kept ~45-95 px (as laid out) clear of the toolbar beside it, where 8 were meant:
    the toolbar's width, read in the chart's own px, was divided by the chart's scale as if it were the screen's (134
    px read as 180 at 0.75), and "PE over positions for" sent "chosen" down to a line of its own with room for it."""
    with opened_tab(browser, f"{streamlit_url}/?views=positional", width, 844, is_mobile=True, has_touch=True) as tab:
        draw_every_chart(tab, 200)
        breaks = tab.evaluate(TITLE_BREAKS_BEFORE_TOOLBAR)
    assert len(breaks) >= (4 if width < 480 else 1), breaks
    assert all(room < 4 for *_, room in breaks), breaks  # what went down would have run under the toolbar


def test_on_a_phone_made_wider_a_title_wraps_for_the_toolbar_as_now_drawn(browser, streamlit_url):
    """A review of the toolbar's reserve: a 320 px phone's toolbar buttons are drawn larger (ui/style.py, by the
    chart's --lab-scale: 157 px as laid out at 0.6, 134 at 0.75), and a chart drawn again at 390 px (the window made
    wider, the phone turned) measured its toolbar before the new scale reached it, at 320's 157 px: "Each (sin, cos)
    pair turns by" sent "ωᵢ" down with 17 px to spare. And a chart drawn for the first time there (view 5, opened
    after) took the widest toolbar seen on the page, 320's, for its own: "Context vector of query 0:你 =" sent "Σⱼ"
    down with 6 px to spare. The scale is set before the toolbar is measured, and a toolbar seen stands for one at
    the same scale only: each word sent down would have reached the toolbar, as in a tab opened at 390 px."""
    breaks = {}
    with opened_tab(browser, f"{streamlit_url}/?views=positional", 320, 700, is_mobile=True, has_touch=True) as tab:
        draw_every_chart(tab, 200)
        tab.set_viewport_size({"width": 390, "height": 844})
        tab.wait_for_function("() => [...document.querySelectorAll('.lab-chart')].every((gd) => gd.__lab.scale > 0.7)")
        tab.wait_for_timeout(500)
        draw_every_chart(tab, 200)
        breaks["drawn again"] = tab.evaluate(TITLE_BREAKS_BEFORE_TOOLBAR)
        tab.evaluate("() => window.scrollTo(0, 0)")
        open_view(tab, VIEW_LABELS[4])
        draw_every_chart(tab, 200)
        breaks["drawn first"] = tab.evaluate(TITLE_BREAKS_BEFORE_TOOLBAR)
    assert all(len(found) >= 2 for found in breaks.values()), breaks
    assert all(room < 4 for found in breaks.values() for *_, room in found), breaks


def test_a_chart_goes_full_screen_and_back_and_follows_the_page_width(page):
    open_view(page, "3 · Attention step by step")
    drawn_charts(page)
    width, height = page.eval_on_selector(WEIGHTS_CHART, SIZE)
    page.hover(WEIGHTS_CHART)
    page.locator(f"{WEIGHTS_CHART} .modebar-btn[data-title^='Full screen']").click()
    page.wait_for_function(f"() => document.querySelector('{WEIGHTS_CHART}')._fullLayout.height === window.innerHeight")
    assert page.evaluate("() => document.fullscreenElement.className") == "lab-chart-box"
    assert page.evaluate("() => getComputedStyle(document.fullscreenElement).backgroundColor") == "rgb(255, 255, 255)"
    assert page.eval_on_selector(WEIGHTS_CHART, SIZE) == page.evaluate("() => [window.innerWidth, window.innerHeight]")
    page.screenshot(path=str(SCREENSHOTS / "browser-chart-full-screen.png"))
    inside = []
    for key in ["Tab"] * 9 + ["Shift+Tab"] * 3:  # Tab goes round the chart's own controls, not the page behind it
        page.keyboard.press(key)
        inside.append(page.evaluate("() => document.fullscreenElement.contains(document.activeElement)"
                                    " && document.activeElement !== document.fullscreenElement"))
    assert all(inside), inside
    page.set_viewport_size({"width": 1200, "height": 800})  # the window changes while in full screen
    page.wait_for_function(f"() => document.querySelector('{WEIGHTS_CHART}')._fullLayout.height === 800")
    assert page.eval_on_selector(WEIGHTS_CHART, SIZE) == [1200, 800]
    page.set_viewport_size({"width": 1500, "height": 1000})
    page.evaluate("() => document.exitFullscreen()")
    page.wait_for_function("() => !document.fullscreenElement")
    page.wait_for_function(f"([w, h]) => {{ const gd = document.querySelector('{WEIGHTS_CHART}');"
                           "return gd._fullLayout.width === w && gd._fullLayout.height === h; }",
                           arg=[width, height])
    page.set_viewport_size({"width": 1000, "height": 1000})
    page.wait_for_function(f"(w) => document.querySelector('{WEIGHTS_CHART}')._fullLayout.width < w - 300",
                           arg=width)
    # as tall as before, plus the lines its title took again at the narrower width (the plot keeps its height)
    grown = page.eval_on_selector(WEIGHTS_CHART, "gd => gd._fullLayout.margin.t - gd.__lab.spec.figure.layout.margin.t")
    assert page.eval_on_selector(WEIGHTS_CHART, SIZE)[1] == height + grown
    buttons = page.eval_on_selector_all(f"{WEIGHTS_CHART} .modebar-btn", "els => els.map(e => e.dataset.title)")
    assert "Download plot" in buttons and not any("Share" in b for b in buttons)  # nothing is sent anywhere


def test_the_full_screen_button_is_named_for_what_it_does_in_and_out_of_full_screen(browser, streamlit_url):
    """A screen reader's walk on a phone: in full screen the chart's full-screen button was still "Full screen (Esc
    leaves)", name and tooltip, so nobody was told that pressing it now leaves. It is named for what it does in each
    state, and named back on leaving, by the button or by the page (document.exitFullscreen, as Esc leaves)."""
    chart = ".st-key-chart-query-query-bars"
    names = """(c) => [...document.querySelectorAll(`${c} .modebar-btn`)].filter((b) => /full screen/i.test(b.dataset.title))
        .map((b) => [b.dataset.title, b.getAttribute('aria-label')])"""
    with opened_tab(browser, f"{streamlit_url}/?views=query", 390, 844, is_mobile=True, has_touch=True) as tab:
        def press(name: str, full: bool) -> list:
            tab.locator(chart).get_by_role("button", name=name, exact=True).click(timeout=5_000)
            tab.wait_for_function("(full) => Boolean(document.fullscreenElement) === full", arg=full)
            tab.wait_for_timeout(300)
            return tab.evaluate(names, chart)

        seen = [tab.evaluate(names, chart)]
        seen.append(press("Full screen (Esc leaves)", True))
        seen.append(press("Leave full screen (Esc)", False))
        seen.append(press("Full screen (Esc leaves)", True))
        tab.evaluate("() => document.exitFullscreen()")
        tab.wait_for_function("() => !document.fullscreenElement")
        tab.wait_for_timeout(300)
        seen.append(tab.evaluate(names, chart))
    shown, leave = ["Full screen (Esc leaves)"] * 2, ["Leave full screen (Esc)"] * 2
    assert seen == [[shown], [leave], [shown], [leave], [shown]], seen


# the chart's size and title as drawn, and the focus: the name of the button that has it, and whether it is the chart's
DRAWN_AND_FOCUS = """(sel) => { const gd = document.querySelector(sel), a = document.activeElement;
    return {size: [gd._fullLayout.width, gd._fullLayout.height], title: gd.layout.title.text,
            focus: [a.dataset.title || a.tagName, gd.contains(a)]}; }"""


def test_a_chart_left_full_screen_by_the_keyboard_is_drawn_as_before_with_the_focus_on_its_button(browser,
                                                                                                  streamlit_url):
    """A keyboard walk on a phone (a keyboard case, a switch): Enter on view 5's full-screen button, then Esc (here
    document.exitFullscreen: headless Chromium's Esc is the browser's own). The focus stayed on the button, named for
    what it does, but the chart came back 22 px shorter than it left: its first draw wrapped its title for a guessed
    toolbar of 140 px (none drawn yet on the page), the real one 134, and was drawn again only where the guess was
    short; drawn again (back from full screen, a turned phone) "scaled scores" took a line less. A chart is drawn
    again where its toolbar's guess was off either way, so it is drawn as it will be drawn again."""
    chart = ".st-key-chart-query-query-bars .lab-chart"
    with opened_tab(browser, f"{streamlit_url}/?views=query", 390, 844, is_mobile=True, has_touch=True) as tab:
        tab.locator(f"{chart} .modebar-btn[data-title^='Full screen']").focus()
        seen = [tab.evaluate(DRAWN_AND_FOCUS, chart)]
        for key, full in [(lambda: tab.keyboard.press("Enter"), True), (lambda: tab.evaluate("document.exitFullscreen()"),
                                                                        False)]:
            key()
            tab.wait_for_function("(full) => Boolean(document.fullscreenElement) === full", arg=full)
            tab.wait_for_function("(sel) => { const gd = document.querySelector(sel); return gd.__lab.size === "
                                  "(document.fullscreenElement ? `${innerWidth}x${innerHeight}` : "
                                  "String(gd.parentElement.parentElement.clientWidth)); }", arg=chart)
            tab.wait_for_timeout(300)
            seen.append(tab.evaluate(DRAWN_AND_FOCUS, chart))
    before, inside, after = seen
    assert before["focus"] == ["Full screen (Esc leaves)", True], seen
    assert inside["focus"] == ["Leave full screen (Esc)", True] and inside["size"][1] > before["size"][1], seen
    assert after == before, seen  # the focus back on the button, named to go full screen, the chart as it was

# A chart's width laid out (plotly), shown (after ui/chart.py's CSS scale), its column's, its box's height
# and the shown height; and the texts of the chart (titles, labels) that stick out of what is shown.
SHOWN = """gd => { const r = gd.querySelector('.main-svg').getBoundingClientRect();
    const texts = [...gd.querySelectorAll('.main-svg text')].filter((t) => t.textContent.trim())
        .map((t) => t.getBoundingClientRect()).filter((b) => b.width > 0);
    return {laid: gd._fullLayout.width, shown: r.width, room: gd.parentElement.parentElement.clientWidth,
            box: gd.parentElement.getBoundingClientRect().height, drawn: r.height, scale: gd.__lab.scale,
            texts: texts.length, cut: texts.filter((b) => b.left < r.left - 1 || b.right > r.right + 1 ||
                                                         b.top < r.top - 1 || b.bottom > r.bottom + 1).length}; }"""
GRID_CHART = ".st-key-chart-heads-layers-heads .js-plotly-plot"


def cell_centre(page, selector: str, row: int, col: int) -> list[float]:
    """Where on the screen the centre of heatmap cell (row, col) is shown, the chart's scale included."""
    page.locator(selector).scroll_into_view_if_needed()
    return page.eval_on_selector(selector, """(gd, [row, col]) => { const fl = gd._fullLayout;
        const r = gd.querySelector('.main-svg').getBoundingClientRect(), k = gd.__lab.scale;
        return [r.left + (fl.xaxis._offset + fl.xaxis.c2p(col)) * k, r.top + (fl.yaxis._offset + fl.yaxis.c2p(row)) * k];
    }""", [row, col])


def test_a_slide_chart_in_a_narrower_column_is_drawn_at_1280_px_and_shown_whole_with_hover_on_the_cell(
        browser, streamlit_url):
    """The slide theme lays a figure out for 1280 px (its export). In a 1024 px window's column a chart is
    drawn at 1280 px and shown shrunk to the column: every title and label inside it (before, drawn at the
    column's width with slide-sized text, titles were cut), its box as tall as what is shown, and the
    hover still names the cell under the mouse. In a column wider than 1280 px it is drawn at the
    column's width, not scaled."""
    context = browser.new_context(viewport={"width": 1024, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{streamlit_url}/?theme=slide&views=heads")
    wait_idle(page)
    page.wait_for_selector(f"{GRID_CHART} .main-svg")
    grid = page.eval_on_selector(GRID_CHART, SHOWN)
    assert grid["laid"] == 1280 and grid["room"] < 1000
    assert abs(grid["shown"] - grid["room"]) <= 1 and grid["scale"] == pytest.approx(grid["room"] / 1280)
    assert abs(grid["box"] - grid["drawn"]) <= 1
    assert grid["texts"] > 10 and grid["cut"] == 0
    open_view(page, "3 · Attention step by step")
    page.wait_for_selector(f"{WEIGHTS_CHART} .main-svg")
    weights = page.eval_on_selector(WEIGHTS_CHART, SHOWN)
    assert weights["laid"] == 1280 and abs(weights["shown"] - weights["room"]) <= 1 and weights["cut"] == 0
    rows, cols = page.eval_on_selector(WEIGHTS_CHART, "gd => [gd.layout.yaxis.ticktext, gd.layout.xaxis.ticktext]")
    assert len(rows) >= 3 and len(cols) >= 3
    for row, col in ((len(rows) - 1, 1), (0, len(cols) - 1)):  # far from the top left, where a scale error grows
        page.mouse.move(*cell_centre(page, WEIGHTS_CHART, row, col))
        page.wait_for_function("([q, k]) => [...document.querySelectorAll('.hoverlayer .hovertext')]"
                               ".some((e) => e.textContent.includes('query ' + q) && e.textContent.includes('key ' + k))",
                               arg=[rows[row], cols[col]], timeout=10_000)
        page.mouse.move(1, 1)
    page.set_viewport_size({"width": 2200, "height": 900})  # a column wider than the slide: no scale
    page.wait_for_function(f"() => document.querySelector('{WEIGHTS_CHART}').__lab.scale === 1")
    wide = page.eval_on_selector(WEIGHTS_CHART, SHOWN)
    assert wide["room"] > 1280 and wide["laid"] == wide["shown"] == wide["room"]
    assert page.eval_on_selector(WEIGHTS_CHART, "gd => gd.style.transform + gd.parentElement.style.height") == ""
    assert page.locator(ERRORS).count() == 0 and errors == []
    context.close()


LONG = "喜猫桃人一拂色我春开欢爱花你只面宜有风景她家盛" * 3  # 69 tokens: more rows than ticks


def test_hovering_a_cell_the_ticks_skip_still_names_its_tokens(page, streamlit_url):
    """Over ~48 tokens a side the axes label every k-th cell only; the hover of a cell between two
    ticks names its query and key tokens ("query 31:欢"), not just their positions ("query 31")."""
    page.goto(f"{streamlit_url}/?views=attention&sentence_a={LONG}")
    wait_idle(page)
    page.wait_for_selector(f"{WEIGHTS_CHART} .main-svg")
    ticks, labels = page.eval_on_selector(WEIGHTS_CHART, """gd => [gd.layout.yaxis.tickvals,
        gd.data.find((t) => t.meta && t.meta.role === 'values').meta.hover_labels.y]""")
    assert len(labels) == len(LONG) and len(ticks) < len(labels) // 2  # the encoder reads the sentence; thinned
    row = next(i for i in range(len(labels) - 1, 0, -1) if float(i) not in ticks)
    col = next(i for i in range(1, len(labels)) if float(i) not in ticks)
    assert labels[row].startswith(f"{row}:") and labels[row] != str(row)
    page.mouse.move(*cell_centre(page, WEIGHTS_CHART, row, col))
    page.wait_for_function("() => document.querySelector('.hoverlayer .hovertext')", timeout=10_000)
    hover = page.eval_on_selector(".hoverlayer .hovertext", "e => e.textContent")
    assert f"query {labels[row]}" in hover and f"key {labels[col]}" in hover, hover


CUT_TITLES = """() => [...document.querySelectorAll('.js-plotly-plot')].flatMap((gd) => {
    const r = gd.querySelector('.main-svg').getBoundingClientRect();
    return [...gd.querySelectorAll('.main-svg .gtitle, .main-svg .annotation text')]
        .filter((t) => t.textContent.trim() && t.getBoundingClientRect().width > 0)
        .filter((t) => { const b = t.getBoundingClientRect(); return b.left < r.left - 1 || b.right > r.right + 1; })
        .map((t) => t.textContent); })"""


OVERLAPPING_TITLES = """() => [...document.querySelectorAll('.js-plotly-plot')].flatMap((gd) => {
    const boxes = [...gd.querySelectorAll('.main-svg .annotation text')].filter((t) => t.textContent.trim())
        .map((t) => [t.textContent, t.getBoundingClientRect()]);
    return boxes.flatMap(([a, p], i) => boxes.slice(i + 1).filter(([, q]) => p.left < q.right - 1 &&
        q.left < p.right - 1 && p.top < q.bottom - 1 && q.top < p.bottom - 1).map(([b]) => a + ' / ' + b)); })"""


LEGENDS = """() => [...document.querySelectorAll('.js-plotly-plot')].flatMap((gd) => {
    const legend = gd.querySelector('.main-svg .legend');
    if (!legend || !legend.getBoundingClientRect().width) return [];
    const box = (sel) => { const e = gd.querySelector(sel); return e ? e.getBoundingClientRect() : null; };
    const l = legend.getBoundingClientRect(), plot = box('.nsewdrag'), x = box('.g-xtitle'), svg = box('.main-svg');
    return [{legend: [l.left, l.top, l.right, l.bottom], plot: [plot.left, plot.top, plot.right, plot.bottom],
             xtitle: x ? x.bottom : plot.bottom, svg: [svg.left, svg.top, svg.right, svg.bottom],
             below: ((gd.__lab.spec.figure.layout.legend || {}).orientation === 'h')}]; })"""


# a phone; a 1024 px window with the sidebar open (a 564 px column: a teacher's walk found the context vector's
# legend beside its plot taking 40% of it); a laptop with the sidebar open (a 640 px column)
@pytest.mark.parametrize("width", [390, 1024, 1100])
def test_chart_titles_drawn_narrower_than_laid_out_wrap_again_rather_than_run_off_the_edge(browser, streamlit_url,
                                                                                             width):
    """The page's themes lay figures out for 700 px, and a chart follows its column down to 480 px (then
    shrinks): its title and note lines, wrapped for 700 px, ran off the right edge ("… — encoder self,
    laye"). They are wrapped again to the width drawn, and the plot moves down by the lines added."""
    with opened_tab(browser, f"{streamlit_url}/?views=query", width, 900) as page:
        rewrapped, legends = {}, {}
        for label in ("5 · One query", "3 · Attention step by step", "2 · Positional encoding", "6 · Order & positional encoding"):
            open_view(page, label)
            drawn_charts(page)
            page.wait_for_timeout(500)  # every chart of the view drawn
            widths = page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')].map((g) => g._fullLayout.width)")
            assert min(widths) < 690, widths  # drawn narrower than laid out: the case under test
            assert page.evaluate(CUT_TITLES) == [], label
            assert page.evaluate(OVERLAPPING_TITLES) == [], label  # panel titles side by side never run into each other
            titles = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].map((gd) => {
                const lines = (l) => ((l.title || {}).text || '').split('<br').length;
                return [lines(gd.layout), lines(gd.__lab.spec.figure.layout), gd._fullLayout.margin.t,
                        gd.__lab.spec.figure.layout.margin.t]; })""")
            for drawn_lines, laid_lines, drawn_top, laid_top in titles:  # more lines: a top margin grown to hold them
                assert drawn_lines >= laid_lines and (drawn_lines > laid_lines) <= (drawn_top > laid_top), titles
            rewrapped[label] = any(t[0] > t[1] for t in titles)
            for chart in page.evaluate(LEGENDS):  # a legend beside the plot took half a phone's chart
                (ll, lt, lr, lb), (pl, _, pr, pb), (sl, _, sr, sb) = chart["legend"], chart["plot"], chart["svg"]
                assert sl - 1 <= ll and lr <= sr + 1 and lb <= sb + 1, (label, chart)  # inside its chart
                assert lt >= pb - 1 or width > 1024, (label, chart)  # under LEGEND_BELOW_UNDER px: every legend below
                if width <= 1024 or chart["below"]:  # under the plot and its x title (narrower than 600 px, every legend)
                    assert lt >= max(pb, chart["xtitle"]) - 1, (label, chart)
                    assert width != 390 or pr - pl >= 0.7 * (sr - sl), (label, chart)  # the plot as wide as it can be
                else:  # beside it, as laid out
                    assert ll >= pr - 1, (label, chart)
            legends[label] = len(page.evaluate(LEGENDS))
            # the clock's round panels: the plot only as tall as they need (it left ~150 px blank under them at 1024)
            for blank in page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')]
                    .filter((gd) => (gd.layout.meta || {}).round).map((gd) => { const L = gd._fullLayout;
                        const bottom = Math.max(...Object.keys(L).filter((k) => /^yaxis\\d*$/.test(k))
                                                    .map((k) => L[k]._offset + L[k]._length));
                        return L.height - L.margin.b - bottom; })"""):
                assert -1 <= blank <= 3, (label, width, blank)
            if label == "2 · Positional encoding":
                assert page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')].filter((gd) => (gd.layout.meta || {}).round).length") == 1
    if width == 390:  # on a phone (charts drawn at 480 px) titles must take more lines than at 700
        assert all(rewrapped.values()), rewrapped
    assert legends["5 · One query"] >= 1 and legends["2 · Positional encoding"] >= 1, legends  # the case under test


# each title or note line of a chart on the toolbar (shown all the time on a touch screen): [its text, px it reaches in]
UNDER_TOOLBAR = """() => [...document.querySelectorAll('[data-testid="stMain"] .lab-chart')].flatMap((gd) => {
    const bar = gd.querySelector('.modebar').getBoundingClientRect();
    return [...gd.querySelectorAll('.main-svg .gtitle, .main-svg .annotation text')].map((t) =>
        [t.textContent, t.getBoundingClientRect()]).filter(([, r]) => r.width > 0 && r.left < bar.right &&
        bar.left < r.right && r.top < bar.bottom && bar.top < r.bottom).map(([t, r]) => [t, r.right - bar.left]); })"""


@pytest.mark.skipif(not trained_available(), reason="the translate view needs the trained models")
@pytest.mark.parametrize("touch", [False, True])
def test_on_a_320_px_phone_titles_start_where_the_plot_does_and_keep_inside_the_chart_and_clear_of_its_toolbar(
        browser, streamlit_url, touch):
    """A review at 320 px: view 7's step chart's title "Decoder self-attention, layer 0, head 0" ran 7 px past the
    chart's right edge, and on a touch screen two titles ran 7-13 px under the toolbar. Raised to a phone's type
    (readableType) the y labels need more than the server's left margin, plotly.js's automargin moves the plot right
    (up to 26 px of the chart's), and the title and notes, which start at the plot, were wrapped for the margin as laid
    out. The margin it takes is kept, and the chart drawn again where its titles wrap otherwise."""
    with opened_tab(browser, f"{streamlit_url}/?views=translate&model=zh-en", 320, 700,
                    **({"is_mobile": True, "has_touch": True} if touch else {})) as tab:
        draw_every_chart(tab, 200)
        tab.wait_for_timeout(300)
        cut, under = tab.evaluate(CUT_TITLES), tab.evaluate(UNDER_TOOLBAR) if touch else []
        starts = tab.evaluate("""() => [...document.querySelectorAll('[data-testid="stMain"] .lab-chart')].map((gd) =>
            gd._fullLayout._size.l - gd.__lab.spec.figure.layout.margin.l)""")
    # the case under test: plotly.js moved a plot right of the margin laid out (kept, where the titles wrap otherwise)
    assert len(starts) >= 5 and max(starts) >= 20, starts
    assert cut == [] and under == [], (cut, under)


def test_in_full_screen_the_arrow_keys_flip_heads_and_the_chart_stays_full_screen(page):
    """A projector demo: one chart full screen, → shows the next head in it, without leaving full screen."""
    open_view(page, "3 · Attention step by step")
    drawn_charts(page)
    weights = f"document.querySelector('{WEIGHTS_CHART}')._fullData[0].z"  # the drawn weights, row by row
    before = page.evaluate(f"() => JSON.stringify(Array.from({weights}, (row) => Array.from(row)))")
    page.hover(WEIGHTS_CHART)
    page.locator(f"{WEIGHTS_CHART} .modebar-btn[data-title^='Full screen']").click()
    page.wait_for_function(f"() => document.querySelector('{WEIGHTS_CHART}')._fullLayout.height === window.innerHeight")
    page.keyboard.press("ArrowRight")
    wait_for_setting(page, "head", "1")
    page.wait_for_function(f"(old) => JSON.stringify(Array.from({weights}, (row) => Array.from(row))) !== old",
                           arg=before)  # head 1's weights are drawn
    assert page.evaluate("() => document.fullscreenElement && document.fullscreenElement.className") == "lab-chart-box"
    assert page.eval_on_selector(WEIGHTS_CHART, SIZE) == page.evaluate("() => [window.innerWidth, window.innerHeight]")
    assert "layer 0, head 1" in headings(page)
    page.evaluate("() => document.exitFullscreen()")


def test_a_chart_says_why_when_plotly_js_cannot_load(browser, streamlit_url):
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    try:
        tab = context.new_page()
        tab.route("**/app/static/plotly-*", lambda route: route.abort())  # the charts' own script still loads
        tab.goto(f"{streamlit_url}/?views=attention")
        wait_idle(tab)
        message = tab.locator(".lab-chart-message").first
        message.wait_for(state="attached")
        tab.wait_for_function("() => document.querySelector('.lab-chart-message').textContent.length > 0")
        assert "plotly.js did not load" in message.inner_text()
        assert tab.locator('[data-testid="stException"]').count() == 0
        # said to a screen reader as it comes, as Streamlit's own notices are (a screen reader's walk: it was silent)
        assert tab.get_by_role("status").filter(has_text="plotly.js did not load").count() >= 1
    finally:
        context.close()


def test_a_chart_says_why_when_its_script_cannot_load_and_draws_once_it_can(browser, streamlit_url):
    """The charts' script comes from the static folder (ui/chart.py ensure_chart_js), as plotly.js does."""
    from ui.chart import CHART_JS_PREFIX

    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    try:
        tab = context.new_page()
        blocked = [True]
        tab.route(f"**/app/static/{CHART_JS_PREFIX}*",
                  lambda route: route.abort() if blocked[0] else route.continue_())
        tab.goto(f"{streamlit_url}/?views=attention")
        wait_idle(tab)
        message = tab.locator(".lab-chart-message").first
        message.wait_for(state="attached")
        assert "its script did not load" in message.inner_text() and "enableStaticServing" in message.inner_text()
        assert tab.get_by_role("status").filter(has_text="its script did not load").count() >= 1
        assert tab.locator('[data-testid="stException"]').count() == 0
        blocked[0] = False  # the next rerun tries again, and draws
        tab.locator(".st-key-view button", has_text="4 · Heads").click()
        tab.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length >= 3")
    finally:
        context.close()


def test_a_chart_that_plotly_js_fails_to_draw_says_so_in_its_place(page):
    """A review of the charts' script: paint caught what Plotly.react threw at once, not a failure that came later
    (its promise rejected): the chart kept its old figure or stayed blank without a word, and the page had an
    uncaught rejection. It says so in its place, as a chart whose plotly.js did not load does."""
    open_view(page, "3 · Attention step by step")
    drawn_charts(page)
    page.evaluate("() => { window.Plotly.react = () => Promise.reject(new Error('the GPU process went away')); }")
    page.locator('[data-testid="stMain"] h3').first.click()  # the focus on the page, not on a control
    page.keyboard.press("ArrowRight")  # the next head: every chart on the screen drawn again
    wait_for_setting(page, "head", "1")
    page.wait_for_timeout(500)
    said = page.evaluate("() => [...document.querySelectorAll('[data-testid=\"stMain\"] .lab-chart')]"
                         ".filter(gd => !gd.parentElement.hasAttribute('data-waiting'))"
                         ".map(gd => gd.__lab.message.textContent)")
    assert said and all(s == "This chart could not be drawn: the GPU process went away" for s in said), said
    assert page.get_by_role("status").filter(has_text="the GPU process went away").count() == len(said)
    assert page.script_errors == []  # no uncaught rejection


def test_a_theme_chosen_live_draws_what_a_fresh_page_of_that_theme_draws(page, browser, streamlit_url):
    """Plotly.react moves each kept chart to the new layout; nothing of the old theme stays behind."""
    from viz.theme import THEMES

    look = """els => els.map(gd => { const l = gd._fullLayout;
        return [l.paper_bgcolor, l.plot_bgcolor, l.font.family, l.font.size, l.height, l.margin.l, l.margin.t]; })"""
    charts = '[data-testid="stMain"] .js-plotly-plot'
    open_view(page, "3 · Attention step by step")
    drawn_charts(page)
    before = page.eval_on_selector_all(charts, look)
    page.locator(".st-key-theme [role='combobox']").click()
    if not page.get_by_role("option", name="slide", exact=True).count():
        page.keyboard.press("ArrowDown")  # in the sidebar the click may only focus the box
    page.get_by_role("option", name="slide", exact=True).click()
    wait_for_setting(page, "theme", "slide")
    page.wait_for_function(f"""(size) => [...document.querySelectorAll('{charts}')]
        .every(gd => gd._fullLayout.font.size === size)""", arg=THEMES["slide"]["font_size"])
    live = page.eval_on_selector_all(charts, look)
    with opened_tab(browser, f"{streamlit_url}/?views=attention&theme=slide", 1500, 1000) as fresh:
        open_sidebar(fresh)  # a slide link opens with it folded: the same column as the live page's
        drawn_charts(fresh)
        assert live == fresh.eval_on_selector_all(charts, look)
    assert len(live) == len(before) >= 5 and all(a != b for a, b in zip(live, before, strict=True))


PAGE_AND_CHART_COLOURS = """() => [getComputedStyle(document.querySelector('[data-testid="stApp"]')).backgroundColor,
    ...[...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot .main-svg:first-child')]
       .map(svg => getComputedStyle(svg).backgroundColor)]"""


def test_on_a_dark_page_the_charts_are_dark_and_follow_the_page_until_a_theme_is_chosen(browser, streamlit_url):
    """The browser asks for dark (the operating system's dark mode): Streamlit's page is dark, and so are the
    charts, in the page's own colour; the page turning light, the next interaction follows (a head change, which
    reruns only the main area, reruns the whole app for it); a theme chosen stays."""
    with opened_tab(browser, f"{streamlit_url}/?views=attention", 1500, 1000, color_scheme="dark") as tab:
        drawn_charts(tab)
        page_bg, *charts = tab.evaluate(PAGE_AND_CHART_COLOURS)
        assert len(charts) >= 5 and set(charts) == {page_bg} != {"rgb(255, 255, 255)"}, (page_bg, charts)
        assert tab.locator(".st-key-theme [role='combobox']").input_value() == "dark"
        full_screenshot(tab, str(SCREENSHOTS / "browser-dark-page.png"))
        tab.emulate_media(color_scheme="light")  # the system turns light; no rerun yet
        tab.locator('[data-testid="stMain"] h1').click()  # focus off any box: → flips the head (a fragment rerun)
        tab.keyboard.press("ArrowRight")
        tab.wait_for_function(f"() => ({PAGE_AND_CHART_COLOURS})().every(c => c === 'rgb(255, 255, 255)')")
        wait_idle(tab)
        assert tab.locator(".st-key-theme [role='combobox']").input_value() == "default"
        assert tab.locator(".st-key-head [role='combobox']").input_value() == "head 1"  # and the head moved on
        tab.locator(".st-key-theme [role='combobox']").click()
        if not tab.get_by_role("option", name="dark", exact=True).count():
            tab.keyboard.press("ArrowDown")
        tab.get_by_role("option", name="dark", exact=True).click()
        wait_for_setting(tab, "theme", "dark")  # chosen: in the link, and kept on the light page
        tab.wait_for_function(f"() => ({PAGE_AND_CHART_COLOURS})().slice(1).every(c => c !== 'rgb(255, 255, 255)')")
        page_bg, *charts = tab.evaluate(PAGE_AND_CHART_COLOURS)
        assert page_bg == "rgb(255, 255, 255)" and len(charts) >= 5 and "rgb(255, 255, 255)" not in charts


TWIN_ROWS = """() => {
    // Per row of twin charts: each title's text height (a Range: what min-height cannot change), its
    // min-height, and where and how wide each chart and its plot area are, against the main area's width.
    const rows = {};
    const main = document.querySelector('[data-testid="stMainBlockContainer"]');
    const inner = main.clientWidth - parseFloat(getComputedStyle(main).paddingLeft)
                  - parseFloat(getComputedStyle(main).paddingRight);
    for (const title of document.querySelectorAll('[data-testid="stMain"] h3.lab-chart-title')) {
        if (!title.dataset.row) continue;
        const range = document.createRange();
        range.selectNodeContents(title);
        const box = title.parentElement.querySelector('.lab-chart-box').getBoundingClientRect();
        const gd = title.parentElement.querySelector('.js-plotly-plot');
        (rows[title.dataset.row] ||= []).push({text: range.getBoundingClientRect().height, top: box.top,
                                              plot: box.top + gd._fullLayout._size.t,  // the plot area's top
                                              bottom: box.bottom, share: box.width / inner,
                                              padded: title.style.minHeight !== ""});
    }
    return rows;
}"""


def twin_rows(page, width: int) -> dict:
    """TWIN_ROWS once the page has settled at this width: two readings 250 ms apart agree (the charts
    redraw to a new width one by one, each on its own resize callback; a busy machine takes longer)."""
    page.set_viewport_size({"width": width, "height": 1000})
    page.wait_for_timeout(250)
    last = page.evaluate(TWIN_ROWS)
    for _ in range(80):  # at most ~20 s
        page.wait_for_timeout(250)
        rows = page.evaluate(TWIN_ROWS)
        if rows == last:
            return rows
        last = rows
    return last


def assert_side_by_side_and_level(rows: dict) -> None:
    for name, (left, right) in rows.items():
        assert abs(left["top"] - right["top"]) <= 1, (name, left, right)  # level, whatever the titles
        assert abs(left["plot"] - right["plot"]) <= 1, (name, left, right)  # and so are the plots' first rows
        assert 0.4 < left["share"] < 0.5 and 0.4 < right["share"] < 0.5, (name, left, right)


def assert_stacked_full_width(rows: dict) -> None:
    for name, (first, second) in rows.items():
        assert second["top"] > first["bottom"], (name, first, second)  # one under the other
        assert first["share"] > 0.95 and second["share"] > 0.95, (name, first, second)
        assert not first["padded"] and not second["padded"], (name, first, second)


def test_twin_charts_sit_level_side_by_side_and_stack_where_half_the_width_is_too_narrow(page):
    open_view(page, "6 · Order & positional encoding")
    drawn_charts(page)
    rows = twin_rows(page, 1500)
    assert set(rows) == {"order-diff", "order-pooled"} and all(len(r) == 2 for r in rows.values()), rows
    left, right = rows["order-diff"]
    assert left["text"] > right["text"] + 10, rows  # the case that matters: one title wraps, one does not
    assert_side_by_side_and_level(rows)
    for width in (1100, 600):  # a laptop with the sidebar open, a phone
        assert_stacked_full_width(twin_rows(page, width))
    assert_side_by_side_and_level(twin_rows(page, 1500))
    assert page.locator(ERRORS).count() == 0


# every Plotly.react from now on, counted per chart (its st-key-chart-… class)
COUNT_DRAWS = """() => { window.__draws = {}; const react = Plotly.react;
    Plotly.react = function (gd, ...rest) {
        const key = gd.closest('[class*="st-key-chart-"]').className.match(/st-key-chart-(\\S+)/)[1];
        window.__draws[key] = (window.__draws[key] || 0) + 1;
        return react.call(this, gd, ...rest); }; }"""


@pytest.mark.skipif(not trained_available(), reason="the order view switches to the trained models")
def test_a_twin_going_full_screen_and_back_leaves_the_chart_behind_it_as_drawn(page, streamlit_url):
    """A review of the charts' script: a chart of a pair going full screen drew its twin again, hidden behind it, at
    the twin's own top (the row's top leaves out a chart in full screen), and coming back drew it again level with
    it: two draws of a chart nobody could see, each as long as the one in full screen. A chart hidden behind another
    in full screen is not levelled; back, the pair is level as before with no draw of the twin."""
    page.goto(f"{streamlit_url}/?views=order&sentence_a=你喜欢她&sentence_b=她喜欢你")
    wait_idle(page)
    chart = ".st-key-chart-order-diff-pe .lab-chart"
    page.locator(chart).scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    before = twin_rows(page, 1500)
    page.evaluate(COUNT_DRAWS)
    page.evaluate(f"() => document.querySelector('{chart}').parentElement.requestFullscreen()")
    page.wait_for_function(f"() => document.querySelector('{chart}')._fullLayout.height === innerHeight")
    page.evaluate("() => document.exitFullscreen()")
    page.wait_for_function(f"() => !document.fullscreenElement && document.querySelector('{chart}').__lab.size"
                           f" === String(document.querySelector('{chart}').parentElement.parentElement.clientWidth)")
    page.wait_for_timeout(500)
    assert page.evaluate("() => window.__draws") == {"order-diff-pe": 2}  # in and out, its twin never
    assert twin_rows(page, 1500) == before
    assert_side_by_side_and_level(before)


@pytest.mark.skipif(not trained_available(), reason="the order view switches to the trained models")
def test_printed_each_chart_of_a_pair_is_drawn_once_each_time_and_level(page, streamlit_url, tmp_path):
    """A review of the charts' script: printed, every chart is drawn again for the paper, and a pair's second chart
    was drawn twice each time (its twin's draw levelled it, then its own turn drew it again). Each chart is drawn once
    each time, and the pair is as it was on the screen afterwards."""
    page.goto(f"{streamlit_url}/?views=order&sentence_a=你喜欢她&sentence_b=她喜欢你")
    wait_idle(page)
    draw_every_chart(page, 100)
    before = twin_rows(page, 1500)
    assert_side_by_side_and_level(before)
    charts = page.evaluate("() => [...document.querySelectorAll('[data-testid=\"stMain\"] .lab-chart')].map(gd =>"
                           " gd.closest('[class*=\"st-key-chart-\"]').className.match(/st-key-chart-(\\S+)/)[1])")
    page.evaluate(COUNT_DRAWS)
    page.evaluate(f"() => matchMedia('print').addEventListener('change', (e) => {{ if (e.matches) {{"
                  f" window.__onPaper = ({TWIN_ROWS})(); window.__printDraws = {{...window.__draws}}; }} }})")
    printed(page, tmp_path / "order.pdf")
    page.wait_for_timeout(1000)  # back on the screen
    assert len(charts) >= 6 and set(before) >= {"order-diff", "order-pooled"}, (charts, before)
    # before the paper's layout (beforeprint) and on it (the print media query), then once back on the screen
    assert page.evaluate("() => window.__printDraws") == dict.fromkeys(charts, 2)
    assert page.evaluate("() => window.__draws") == dict.fromkeys(charts, 3)
    on_paper = page.evaluate("() => window.__onPaper")
    assert set(on_paper) == set(before), on_paper
    for name, (first, second) in on_paper.items():  # on paper's narrower page, stacked (or level, side by side)
        assert second["top"] > first["bottom"] or abs(first["plot"] - second["plot"]) <= 1, (name, first, second)
    assert twin_rows(page, 1500) == before


@pytest.mark.skipif(not trained_available(), reason="the order view switches to the trained models")
def test_a_new_width_draws_each_chart_of_a_pair_once_and_level(page, streamlit_url):
    """A review of the charts' script: a new width (the window, the sidebar) drew each chart again from its own
    ResizeObserver, and a pair's first chart levelled with its twin's top margin at the old width, so the second
    was drawn twice (as a stale twin, then again to level the first). Each is drawn once, the pair level."""
    page.goto(f"{streamlit_url}/?views=order&sentence_a=你喜欢她&sentence_b=她喜欢你")
    wait_idle(page)
    draw_every_chart(page, 100)
    assert_side_by_side_and_level(twin_rows(page, 1500))
    charts = page.evaluate("() => [...document.querySelectorAll('[data-testid=\"stMain\"] .lab-chart')].map(gd =>"
                           " gd.closest('[class*=\"st-key-chart-\"]').className.match(/st-key-chart-(\\S+)/)[1])")
    page.evaluate(COUNT_DRAWS)
    rows = twin_rows(page, 1400)
    assert_side_by_side_and_level(rows)
    assert page.evaluate("() => window.__draws") == dict.fromkeys(charts, 1)


@pytest.mark.skipif(not trained_available(), reason="the translate view needs the trained models")
def test_the_translate_views_step_charts_sit_level_or_stack(page):
    open_view(page, "7 · Translate")
    drawn_charts(page)
    rows = twin_rows(page, 1500)
    assert set(rows) == {"translate-step"}, rows
    assert_side_by_side_and_level(rows)
    assert_stacked_full_width(twin_rows(page, 1100))
    assert page.locator(ERRORS).count() == 0


# every x axis's tick labels (plotly.js: .xtick, .x2tick, ... in .xaxislayer-above): pairs of one axis that overlap,
# and of two panels side by side that come within 3 px ("20:a0:t" read as one)
OVERLAPPING_X_LABELS = """() => [...document.querySelectorAll('.js-plotly-plot')].flatMap((gd) => {
    const boxes = [...gd.querySelectorAll('.main-svg .xaxislayer-above text')].filter((t) => t.textContent.trim())
        .map((t) => [t.textContent, t.getBoundingClientRect(), t.parentElement.getAttribute('class')])
        .filter(([, b]) => b.width > 0);
    return boxes.flatMap(([a, p, axis], i) => boxes.slice(i + 1).filter(([, q, other]) => {
        const gap = axis === other ? 0 : 3;
        return p.left < q.right + gap && q.left < p.right + gap && p.top < q.bottom - 1 && q.top < p.bottom - 1; })
        .map(([b]) => a + ' / ' + b)); })"""


def test_token_labels_drawn_narrower_than_laid_out_are_thinned_not_run_together(page, streamlit_url):
    """A bad-input walk: 21 source tokens in the translate view's step charts, side by side (each ~450 px of the
    700 laid out), turned 90° and ran into each other. Drawn narrower, an axis keeps every k-th label."""
    from urllib.parse import quote

    page.goto(f"{streamlit_url}/?views=translate&model=zh-en&sentence_a=" + quote("Hello world, attention!"))
    wait_idle(page)
    drawn_charts(page)
    page.wait_for_timeout(500)
    assert page.evaluate(OVERLAPPING_X_LABELS) == []
    shown = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].map((gd) =>
        [gd._fullLayout.width, (gd.layout.xaxis || {}).tickvals, (gd.__lab.spec.figure.layout.xaxis || {}).tickvals])""")
    thinned = [(w, len(now), len(laid)) for w, now, laid in shown if isinstance(now, list) and isinstance(laid, list)
               and len(now) < len(laid)]
    assert thinned and all(w < 690 for w, _, _ in thinned), shown  # the twins: thinned, not the full-width charts


@pytest.mark.skipif(not trained_available(), reason="the translate view needs the trained models")
def test_a_step_chart_beside_its_twin_labels_every_source_token_where_a_smaller_type_fits_them(page, streamlit_url):
    """A wide-screen walk (1500 px, the sidebar open): view 7's step cross-attention, beside its twin in ~510 px of
    the 700 laid out, labelled every other one of 16 source tokens, since at 14 px one label per 1.3 lines fitted
    14. Where every label fits by that rule at a smaller type, no smaller than the cell values' (11 px), each is
    drawn so (ui/chart.js thinTicks); the hover names the cells either way."""
    from urllib.parse import quote

    from viz.theme import cell_type_px

    sentence = "我们的老师不喜欢他们的大白猫小狗"  # 16 characters the model knows
    page.goto(f"{streamlit_url}/?views=translate&model=zh-en&sentence_a={quote(sentence)}")
    wait_idle(page)
    chart = page.locator("[class*='st-key-chart-translate-step'][class*='-cross'] .js-plotly-plot")
    chart.scroll_into_view_if_needed()
    page.wait_for_function("gd => !gd.parentElement.hasAttribute('data-waiting') && gd._fullLayout",
                           arg=chart.element_handle())
    drawn = chart.evaluate("""gd => [...gd.querySelectorAll('.xaxislayer-above .xtick text')].map((t) => [t.textContent,
        parseFloat(getComputedStyle(t).fontSize), t.getBoundingClientRect().left + t.getBoundingClientRect().width / 2])""")
    chart.screenshot(path=str(SCREENSHOTS / "browser-step-cross-1500.png"))
    assert [text for text, _, _ in drawn] == [f"{i}:{c}" for i, c in enumerate(sentence)], drawn
    size = drawn[0][1]
    assert cell_type_px("default") <= size < 14, drawn  # smaller than the page's 14 px, not under its cells' type
    centres = sorted(x for _, _, x in drawn)
    assert min(b - a for a, b in itertools.pairwise(centres)) >= 1.3 * size - 0.5, drawn  # the rule they fit by


# Under each chart drawn wider than laid out: [title, drawn width, px from the lowest of its x axis titles, x tick
# labels, legend and colour bars to the chart's bottom edge, that edge (viz.theme.edge_px), x labels and axis titles
# outside the svg, its plot's height as drawn less its height as laid out]
BELOW_THE_PLOT = """(appHeight) => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
    .filter((gd) => gd._fullLayout.width > (gd.__lab.spec.figure.layout.width || gd.__lab.spec.wrapped) + 1)
    .map((gd) => {
        const svg = gd.querySelector('svg.main-svg').getBoundingClientRect();
        const boxes = (selector) => [...gd.querySelectorAll(selector)].map((e) => e.getBoundingClientRect())
            .filter((b) => b.width > 0 && b.height > 0);
        const labels = boxes('.xaxislayer-above text, [class^="g-x"][class$="title"] text');
        const under = labels.concat(boxes('.legend, .colorbar')).map((b) => b.bottom);
        const out = labels.concat(boxes('[class^="g-y"][class$="title"] text'))  // a short plot's y title reaches below
            .filter((b) => b.bottom > svg.bottom + 0.5 || b.left < svg.left - 0.5 || b.right > svg.right + 0.5).length;
        const laid = gd.__lab.spec.figure.layout, m = laid.margin || {};
        return [gd.__lab.spec.title, gd._fullLayout.width, (svg.bottom - Math.max(...under)) / (gd.__lab.scale || 1),
                Math.max(8, Math.round(0.5 * gd._fullLayout.font.size)), out,
                gd._fullLayout._size.h - ((laid.height || appHeight) - (m.t || 0) - (m.b || 0))];
    })"""


@pytest.mark.skipif(not trained_available(), reason="the translate view needs the trained models")
def test_a_chart_drawn_wider_than_laid_out_keeps_no_empty_band_under_its_x_axis_title(browser, streamlit_url):
    """A look walk: view 7's decoder self-attention at a long sentence, laid out for 700 px, has target labels that do
    not fit side by side there, and its bottom margin holds them turned (~133 px); drawn 820 px wide (a 1280 px page)
    or 1460 (1920), plotly.js lays them flat and, since it only grows a margin, ~65 px stayed empty under the x axis
    title (view 4's heads grids, their labels turned at either width, ~20 px). Drawn wider than laid out, a chart's
    bottom margin holds what is under the plot at the width drawn (ui/chart.js fitBottom), its plot as tall; where
    its labels stay turned (the grid at 820 px, the step charts side by side at 722), none is cut."""
    from urllib.parse import quote

    from viz.theme import APP_HEIGHT

    sentence = "我们今天在学校的图书馆里一起读了一本关于机器学习和神经网络的书"
    with opened_tab(browser, f"{streamlit_url}/?views=translate&model=zh-en&sentence_a={quote(sentence)}",
                    1920, 1000) as tab:
        draw_every_chart(tab, 100)
        wide = tab.evaluate(BELOW_THE_PLOT, APP_HEIGHT)
        tab.set_viewport_size({"width": 1280, "height": 1000})  # every chart drawn again, at 820 px (twins: stacked)
        draw_every_chart(tab, 100)
        tab.wait_for_function("() => [...document.querySelectorAll('.js-plotly-plot')].every((gd) => "
                              "gd._fullLayout.width < 1000)")
        wide += tab.evaluate(BELOW_THE_PLOT, APP_HEIGHT)
    assert len(wide) >= 8, wide
    assert [w for w in wide if w[4]] == [], wide  # every x label and axis title inside the chart
    assert [w for w in wide if abs(w[5]) > 1] == [], wide  # each plot as tall as laid out (no margin grown back)
    gaps = [(title, width, gap) for title, width, gap, edge, _, _ in wide if not edge - 1 <= gap <= edge + 8]
    assert gaps == [], gaps  # was 60-78 px at the self-attention


def test_on_a_phone_the_key_labels_of_heads_side_by_side_never_run_together(browser, streamlit_url):
    """A phone walk: view 4's grids, drawn at 480 px (laid out for 700), read "0:t 10:t 20:a0:t": a panel's last
    label ran into the next panel's first. Drawn narrower, the chart's script thins the labels and clears a
    panel's right end as the server does at the laid-out width."""
    with opened_tab(browser, f"{streamlit_url}/?views=heads&sentence_a=the%20cat%20sat%20on%20the%20mat"
                             "&sentence_b=the%20mat%20sat%20on%20the%20cat", 390, 844, is_mobile=True, has_touch=True) as tab:
        draw_every_chart(tab, 300)
        overlapping = tab.evaluate(OVERLAPPING_X_LABELS)
        labelled = tab.evaluate("() => document.querySelectorAll('.js-plotly-plot .xaxislayer-above text').length")
    assert labelled >= 8 and overlapping == [], overlapping


# Panels side by side, as drawn: [chart title, what is wrong] for a panel's own row labels that reach into the panel
# left of it, x axis titles of one chart that run into each other, x tick labels turned 90°, and (stacked twins) a
# plot further below its title than its twin's is below its own (a twin's taller title kept as padding).
NARROW_PANELS = r"""() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')].flatMap((gd) => {
    const name = gd.__lab.spec.title, bad = [];
    const panels = gd._fullLayout._subplots.cartesian.map((id) => {
        const drag = gd.querySelector(`.draglayer .${id} .nsewdrag`);
        return drag && {id, y: id.slice(id.indexOf('y')), box: drag.getBoundingClientRect()}; }).filter(Boolean);
    for (const p of panels) {
        const labels = [...gd.querySelectorAll(`.yaxislayer-above .${p.y}tick text`)]
            .map((t) => t.getBoundingClientRect()).filter((b) => b.width > 0);
        const before = panels.filter((q) => Math.abs(q.box.top - p.box.top) < 2 && q.box.right <= p.box.left + 1);
        for (const q of before) {
            const left = Math.min(...labels.map((b) => b.left));
            if (labels.length && left < q.box.right - 0.5) bad.push([name, `${p.y} labels at ${left}`]);
        }
    }
    const titles = [...gd.querySelectorAll('[class^="g-x"][class$="title"] text')].map((t) => t.getBoundingClientRect())
        .filter((b) => b.width > 0);
    titles.forEach((a, i) => titles.slice(i + 1).forEach((b) => {
        if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) bad.push([name, 'x titles']);
    }));
    const turned = (t) => /rotate\(9/.test(t.getAttribute('transform') || '') && /^\d+$/.test(t.textContent);
    if ([...gd.querySelectorAll('.xaxislayer-above text')].some(turned)) bad.push([name, 'dimensions turned 90°']);
    return bad; })"""

TITLE_TO_PLOT = """() => Object.fromEntries([...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
    .filter((gd) => gd.__lab.spec.row && gd.querySelector('.g-gtitle')).map((gd) => [gd.__lab.spec.title,
        [gd.__lab.spec.row, gd.querySelector('.draglayer .xy .nsewdrag').getBoundingClientRect().top
                            - gd.querySelector('.g-gtitle').getBoundingClientRect().bottom]]))"""


@pytest.mark.skipif(not trained_available(), reason="views 6 and 7 use the trained models")
def test_on_a_phone_panels_side_by_side_keep_their_labels_and_titles_apart(browser, streamlit_url):
    """A phone walk (390 px: charts drawn at 480 px, laid out for 700). View 6's B in A's order ran its own row
    labels into A's heatmap (":你", its "3" under A's last column: the conclusion's figure); view 7's four heads read
    "source tokeource tokeource token"; the dimensions of three panels stood turned 90° edge to edge ("0102030");
    and a stacked twin kept its twin's taller title as a blank line above its notes."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=3, is_mobile=True,
                                  has_touch=True)
    found, gaps = [], {}
    try:
        tab = context.new_page()
        tab.set_default_timeout(60_000)
        for view in ("positional", "order", "translate"):
            tab.goto(f"{streamlit_url}/?views={view}&sentence_a=你喜欢她&sentence_b=她喜欢你"
                     + ("&model=zh-en" if view == "translate" else ""))
            wait_idle(tab)
            draw_every_chart(tab, 200)
            found += tab.evaluate(NARROW_PANELS)
            gaps.update(tab.evaluate(TITLE_TO_PLOT))
            if view == "order":
                tab.screenshot(path=str(SCREENSHOTS / "browser-phone-order.png"), full_page=True)
    finally:
        context.close()
    assert found == [], found
    rows: dict[str, list[float]] = {}
    for row, gap in gaps.values():
        rows.setdefault(row, []).append(gap)
    assert {"order-diff", "order-pooled"} <= set(rows), gaps
    for row, pair in rows.items():  # stacked: each plot as far below its own title and notes as its twin's
        assert len(pair) == 2 and abs(pair[0] - pair[1]) <= 3, (row, gaps)


# Each subplot title of a chart shown shrunk (a phone), over its own panel (its x axis centred under it, its y axis's
# top where the title sits): [chart, title, what is wrong, its scale]. Wrong: wider than its panel, down on its panel,
# on another panel's plot or on any tick label.
PANEL_TITLES = r"""() => [...document.querySelectorAll('[data-testid="stMain"] .lab-chart')]
    .filter((gd) => gd._fullLayout && gd.__lab.scale < 1).flatMap((gd) => {
  const fl = gd._fullLayout, k = gd.__lab.scale, g = gd.getBoundingClientRect();
  const xs = Object.keys(fl).filter((n) => /^xaxis\d*$/.test(n)).map((n) => fl[n]);
  const yOf = (x) => fl['yaxis' + (x.anchor || 'y').slice(1)];
  const rect = (x) => ({left: g.left + x._offset * k, right: g.left + (x._offset + x._length) * k,
                        top: g.top + yOf(x)._offset * k, bottom: g.top + (yOf(x)._offset + yOf(x)._length) * k});
  const cross = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  const ticks = [...gd.querySelectorAll('.xtick text, .ytick text')].map((t) => t.getBoundingClientRect())
    .filter((r) => r.width > 0);
  return (gd.layout.annotations || []).flatMap((a, i) => {
    if (a.name === 'notes' || a.xref !== 'paper' || a.yref !== 'paper' || a.xanchor !== 'center'
        || a.yanchor !== 'bottom') return [];
    const x = xs.find((x) => Math.abs((x.domain[0] + x.domain[1]) / 2 - a.x) < 1e-3
                             && Math.abs(yOf(x).domain[1] - a.y) < 1e-3);
    const text = gd.querySelector(`.annotation[data-index="${i}"] .annotation-text`);
    if (!x || !text) return [];
    const t = text.getBoundingClientRect(), own = rect(x), wrong = [];
    if (t.left < own.left - 1 || t.right > own.right + 1) wrong.push('wider than its panel');
    if (t.bottom > own.top + 1) wrong.push('on its panel');
    if (xs.filter((o) => o !== x).map(rect).some((o) => cross(t, o))) wrong.push('on another panel');
    if (ticks.some((r) => cross(t, r))) wrong.push('on a tick label');
    return [[gd.closest('[class*="st-key-chart-"]').className.match(/st-key-chart-(\S+)/)[1], text.textContent,
             wrong.join(', '), k]];
  }); })"""


def test_on_a_phone_every_panel_title_wraps_within_its_panel_clear_of_the_panel_above(browser, streamlit_url):
    """A phone walk at 320 px (iPhone SE 1st gen): view 5's lower panel's title ("weight = softmax(scaled)ⱼ; outlined:
    without ÷√dₖ"), raised to a phone's type and not wrapped again (only the top row's were), ran past the chart's
    right edge and onto the "−10" tick above it, and the middle one touched the panel above. Every panel title of a
    shrunk chart wraps within its panel, the gap above it grown by its lines: at 320, 360 and 390 px."""
    found = {}
    for view in ("query", "order"):
        with opened_tab(browser, f"{streamlit_url}/?views={view}&sentence_a=你喜欢她&sentence_b=她喜欢你", 320, 640,
                        is_mobile=True, has_touch=True) as tab:
            for width in (320, 360, 390):
                if width != 320:
                    tab.set_viewport_size({"width": width, "height": 740})
                    tab.wait_for_function("(w) => [...document.querySelectorAll('.lab-chart')].every((gd) => "
                                          "gd.__lab.size === String(gd.parentElement.parentElement.clientWidth))",
                                          arg=width)
                draw_every_chart(tab, 100)
                found[view, width] = tab.evaluate(PANEL_TITLES)
    lower = [title for (view, width), titles in found.items() for _, title, _, _ in titles
             if view == "query" and width == 320 and title.startswith(("scaled", "weight"))]
    assert len(lower) == 2, found  # view 5's two lower titles were found and measured
    assert all(len(titles) >= 3 for titles in found.values()), found
    wrong = {key: [t for t in titles if t[2]] for key, titles in found.items()}
    assert not any(wrong.values()), wrong


# the page's table cells that are shown and hold a number ("2.54", "2.38e−07"): their text and box on the screen
NUMBER_CELLS = r"""() => [...document.querySelectorAll('[data-testid="stMain"] :is(td, th)')]
    .filter((c) => c.checkVisibility() && /^−?\d+(\.\d+)?(e[−+]\d+)?$/.test(c.innerText.trim()))
    .map((c) => { const r = c.getBoundingClientRect(); return [c.innerText.trim(), r.left, r.right, r.top, r.bottom]; })"""


def test_on_a_phone_view_6s_numbers_are_all_on_the_screen(browser, streamlit_url):
    """A phone walk (390 px): view 6's table (3 models x 7 columns, st.dataframe) showed the model names and the two
    True/False columns; its numbers were scrolled off to the right with no hint. Narrower than the table, the page
    shows it turned (ui/panels.py TURNED_*): a row per quantity, a column per model, every number on the screen.
    A 1500 px window keeps st.dataframe as it was."""
    with opened_tab(browser, f"{streamlit_url}/?views=order&sentence_a=你喜欢她&sentence_b=她喜欢你", 390, 844,
                    device_scale_factor=3, is_mobile=True, has_touch=True) as tab:
        tab.get_by_role("heading", name="The numbers").scroll_into_view_if_needed()
        cells = tab.evaluate(NUMBER_CELLS)
        tab.screenshot(path=str(SCREENSHOTS / "browser-phone-order-numbers.png"))
        width = tab.evaluate("() => document.documentElement.clientWidth")
        models = tab.evaluate("""() => [...document.querySelectorAll('[data-testid="stMain"] thead th')]
            .filter((th) => th.checkVisibility()).map((th) => th.innerText.trim()).filter(Boolean)""")
    # three numbers per model (max |f(B) − P f(A)|, of the means, of the weights), each whole within the screen
    assert models[:1] == ["with sinusoidal PE"] and len(models) in (2, 3), models
    assert len(cells) == 3 * len(models), cells
    assert all(0 <= left and right <= width for _, left, right, _, _ in cells), (width, cells)
    with opened_tab(browser, f"{streamlit_url}/?views=order&sentence_a=你喜欢她&sentence_b=她喜欢你", 1500, 1000) as tab:
        wide = tab.locator('[data-testid="stMain"] [data-testid="stDataFrame"]').first
        assert wide.is_visible() and wide.bounding_box()["width"] > 900
        assert tab.evaluate(NUMBER_CELLS) == []  # the turned table is not shown beside it


# The main area's tables on the screen (st.dataframe, st.table): [kind, its column names where HTML, px its content is
# wider than what shows it (a scroll inside it), its right edge]; and the captions shown
TABLES_SHOWN = """() => ({tables: [...document.querySelectorAll('[data-testid="stMain"] :is([data-testid="stDataFrame"], '
    + '[data-testid="stTable"])')].filter((t) => t.checkVisibility()).map((t) => [t.dataset.testid,
        [...t.querySelectorAll('thead th')].map((th) => th.innerText.trim()).filter(Boolean),
        Math.max(...[t, ...t.querySelectorAll('*')].map((e) => e.scrollWidth - e.clientWidth)),
        t.getBoundingClientRect().right]),
    captions: [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stCaptionContainer"]')]
        .filter((c) => c.checkVisibility()).map((c) => c.innerText)})"""


def test_on_a_phone_view_1s_token_tables_show_their_first_columns_whole_and_name_the_others(browser, streamlit_url):
    """A phone walk (390 px): view 1's token tables (st.dataframe, a sentence's ~450 px wide) showed their last columns
    only by a scroll inside the table that nothing hinted at. Narrower than the table, the page shows its first columns
    as HTML, which wraps (ui/panels.py PHONE_COLUMNS), every one on the screen at 320 px too, and a line naming the
    others, which the CSV has. A 1500 px window keeps st.dataframe as it was."""
    url = f"{streamlit_url}/?views=tokens&sentence_a=你喜欢她&sentence_b=她喜欢你"
    seen = {}
    with opened_tab(browser, url, 320, 640, is_mobile=True, has_touch=True) as tab:
        for width in (320, 390):
            if width != 320:
                tab.set_viewport_size({"width": width, "height": 844})
                tab.wait_for_timeout(500)
            seen[width] = tab.evaluate(TABLES_SHOWN), tab.evaluate("() => document.documentElement.clientWidth")
    for width, (shown, screen) in seen.items():
        tables = shown["tables"]
        assert len(tables) == 3 and all(kind == "stTable" for kind, *_ in tables), (width, tables)
        assert all(scroll <= 1 and right <= screen for *_, scroll, right in tables), (width, tables)
        assert [columns for _, columns, *_ in tables] == [["position", "A piece", "B piece", "differs"]] + [
            ["position", "piece", "id", "bytes"]] * 2, (width, tables)
        assert shown["captions"].count("Columns start, end, text, n_bytes: in the CSV below, or on a wider screen.") == 2, shown
        assert "Columns A id, B id: in the CSV below, or on a wider screen." in shown["captions"], shown
    with opened_tab(browser, url, 1500, 1000) as tab:
        wide = tab.evaluate(TABLES_SHOWN)
    assert [kind for kind, *_ in wide["tables"]] == ["stDataFrame"] * 3, wide  # as before
    assert not any("wider screen" in c for c in wide["captions"]), wide


@pytest.mark.skipif(not trained_available(), reason="the translations are the trained models'")
def test_on_a_phone_a_long_sentences_translations_table_shows_every_translation_whole(browser, streamlit_url):
    """A phone walk (390 px): view 6's translations of a long sentence (24 characters) in st.dataframe showed the
    sentence and the start of one translation; the translations, the table's point, were a scroll inside the table
    that nothing hinted at (view 7's after training likewise: the Chinese and the reference). A table of text alone is
    HTML, which wraps: every column's heading on the screen, nothing scrolled, at 390 and 320 px, and in a wide
    window too (where a long sentence cut st.dataframe's too)."""
    long = "我们的朋友昨天没有保护猫我的老师昨天没有保护他们"
    url = f"{streamlit_url}/?views=order&model=zh-en&sentence_a={long}&sentence_b=她喜欢你"
    seen = {}
    with opened_tab(browser, url, 390, 844, is_mobile=True, has_touch=True) as tab:
        for width in (390, 320):
            if width != 390:
                tab.set_viewport_size({"width": width, "height": 640})
                tab.wait_for_timeout(500)
            tables = tab.evaluate(TABLES_SHOWN)["tables"]
            seen[width] = ([t for t in tables if "with PE (zh-en)" in " ".join(t[1]) or t[0] == "stDataFrame"],
                           tab.evaluate("() => document.documentElement.clientWidth"))
            if width == 390:
                tab.get_by_role("heading", name="Translations").scroll_into_view_if_needed()
                tab.screenshot(path=str(SCREENSHOTS / "browser-phone-order-translations.png"))
    for width, (tables, screen) in seen.items():
        translations = [t for t in tables if t[0] == "stTable"]
        assert len(translations) == 1 and not [t for t in tables if t[0] == "stDataFrame" and t[3] > screen - 1 and
                                                t[2] > 1], (width, tables)  # no st.dataframe of them cut
        kind, columns, scroll, right = translations[0]
        assert columns == ["sentence", "with PE (zh-en)", "without PE (zh-en-nope)"], (width, columns)
        assert scroll <= 1 and right <= screen, (width, translations)


def test_slide_twins_stack_where_side_by_side_would_show_them_at_under_half_their_size(browser, streamlit_url):
    """Slide charts are laid out for 1280 px: in half of a 1500 px window's main area (~520 px) they would
    be shown at ~0.4 of that, so there the twins stack, each the full width (0.8); so they do in a 1920 px
    window (half: ~700 px, 0.56: the slide's type smaller than the default theme's); in a 2400 px window
    (half: ~960 px) they sit side by side and level."""
    with opened_tab(browser, f"{streamlit_url}/?theme=slide&views=order", 1500, 1000) as page:
        drawn_charts(page)
        rows = twin_rows(page, 1500)
        assert {"order-diff", "order-pooled"} <= set(rows), rows
        assert_stacked_full_width(rows)
        scales = page.eval_on_selector_all('[data-testid="stMain"] .js-plotly-plot', "els => els.map(gd => gd.__lab.scale)")
        assert min(scales) > 0.75, scales
        assert_stacked_full_width(twin_rows(page, 1920))
        assert_side_by_side_and_level(twin_rows(page, 2400))
        assert page.locator(ERRORS).count() == 0


VERDICTS = """() => [...document.querySelectorAll('.st-key-twins-order-verdict [data-testid="stAlert"]')].map(a => {
    const box = a.getBoundingClientRect(), text = a.querySelector('[data-testid="stMarkdownContainer"]');
    return {top: Math.round(box.top), bottom: Math.round(box.bottom), height: Math.round(box.height),
            text: Math.round(text.getBoundingClientRect().height), width: Math.round(box.width)};
})"""


@pytest.mark.skipif(not trained_available(), reason="the order view switches to the trained models")
def test_the_two_verdicts_sit_side_by_side_at_one_height_and_stack_where_narrow(page):
    """View 6's verdicts with and without PE (text panels, ui/style.py): one height side by side though
    one says more than the other; stacked, each its own height, where half the width is too narrow."""
    open_view(page, "6 · Order & positional encoding")
    page.wait_for_selector('.st-key-twins-order-verdict [data-testid="stAlert"]')
    page.wait_for_timeout(500)
    left, right = page.evaluate(VERDICTS)
    assert right["text"] > left["text"] + 10, (left, right)  # the texts differ: the boxes would too
    assert abs(left["top"] - right["top"]) <= 1 and abs(left["height"] - right["height"]) <= 1, (left, right)
    page.set_viewport_size({"width": 1100, "height": 1000})
    page.wait_for_timeout(500)
    first, second = page.evaluate(VERDICTS)
    assert second["top"] > first["bottom"], (first, second)  # one under the other
    assert first["height"] < second["height"], (first, second)  # no padding to a twin that is not beside it


def test_the_camera_button_saves_an_svg_whose_heatmaps_no_viewer_blurs(page):
    """The chart's camera button saves plotly.js's SVG with each heatmap image (one pixel per cell)
    enlarged by nearest neighbour, as the server's export does (viz/crisp.py): the same pixels, each
    cell a block, so macOS Preview, Illustrator or Inkscape cannot smooth the matrix into a gradient."""
    import re

    import numpy as np

    from viz import crisp

    open_view(page, "3 · Attention step by step")
    drawn_charts(page)
    page.hover(WEIGHTS_CHART)
    buttons = page.eval_on_selector_all(f"{WEIGHTS_CHART} .modebar-btn", "els => els.map(e => e.dataset.title)")
    assert buttons.count("Download plot") == 1  # ours, in place of plotly.js's own
    with page.expect_download() as download:
        page.locator(f"{WEIGHTS_CHART} .modebar-btn[data-title='Download plot']").click()
    saved = open(download.value.path(), encoding="utf-8").read()
    assert download.value.suggested_filename.endswith(".svg") and saved.lstrip().startswith("<svg")
    plain = page.eval_on_selector(WEIGHTS_CHART, "gd => Plotly.toImage(gd, Object.assign({}, "
                                  "gd._context.toImageButtonOptions, {format: 'svg', imageDataOnly: true}))")
    got, want = ([p for p, _ in svg_pngs(svg)] for svg in (saved, plain))
    assert want and len(got) == len(want)
    for big, cells in zip(got, want, strict=True):
        k = crisp.factor(cells.shape[1], cells.shape[0])
        assert k > 1 and max(big.shape[:2]) >= crisp.TARGET_PX
        assert np.array_equal(big, crisp.enlarge(cells, k))  # plotly.js's own pixels, each a k x k block

    def rest(svg: str) -> str:  # without the images, and plotly.js's random plot and trace uids blanked
        return re.sub(r"[0-9a-f]{6,}", "", re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", svg))

    assert rest(saved) == rest(plain)  # and nothing else changed


SIDEBAR_RIGHT = "() => document.querySelector('[data-testid=\"stSidebar\"]').getBoundingClientRect().right"


def open_sidebar(page) -> None:
    """Open a folded sidebar as a person would (the » button top left), and wait for the charts to settle."""
    page.locator('[data-testid="stExpandSidebarButton"]').click()
    page.wait_for_function(f"() => ({SIDEBAR_RIGHT})() > 200")
    wait_idle(page)


def test_a_slide_link_opens_folded_for_a_projector_with_the_first_chart_on_a_720p_screen(browser, streamlit_url):
    """The lesson's step links carry the teacher's slide theme, each into a new tab (a new session). Such a link
    opens with the sidebar folded (the slide figures get the page's width) and the page starting near its top
    (no intro line, a smaller title with less space above it, the model line under the figures, each chart's
    heading left to its figure's own title): on a 1280 x 720 projector the first chart of step 3 is on the
    screen without scrolling (before, it began below the screen's edge), with no "Deploy" button on it. The
    sidebar opened by hand stays open through reruns; a link without the slide theme opens with it, and choosing
    slide there does not fold it."""
    with opened_tab(browser, f"{streamlit_url}/?views=attention&sentence_a=你喜欢她&sentence_b=她喜欢你"
                             "&block=decoder+self&theme=slide") as page:
        assert page.evaluate(SIDEBAR_RIGHT) <= 0  # folded away
        # no "Deploy" button on the projector (.streamlit/config.toml: client.toolbarMode = "viewer"); the menu stays
        assert page.locator('[data-testid="stAppDeployButton"]').count() == 0
        assert page.locator('[data-testid="stMainMenu"]').count() == 1
        page.screenshot(path=str(SCREENSHOTS / "browser-slide-link-720p.png"))
        first = page.locator('[data-testid="stMain"] [class*="st-key-chart-"] .lab-chart').first
        top = first.bounding_box()["y"]
        # most of the chart is on the screen (it began at 464 px, under a large title, the model line and a
        # heading saying what the figure's own title says): the title small, the model line under the
        # figures, the chart's heading for screen readers only (ui/style.py SLIDE_CSS)
        assert top < 360, top
        heading = page.locator(".lab-chart-title").first
        assert heading.bounding_box()["height"] <= 1 and heading.text_content().startswith("Q, K, V")
        charts = page.locator('[data-testid="stMain"] [class*="st-key-chart-"]')
        assert page.locator(".st-key-model-line").bounding_box()["y"] > charts.last.bounding_box()["y"]
        size = "el => parseFloat(getComputedStyle(el).fontSize)"
        # the page's notes in projector type (18 px, ui/style.py), but the two lines above the figures stay small
        assert page.locator(".lab-chart-caption").first.evaluate(size) >= 18
        assert page.locator(".st-key-model-line p").evaluate(size) <= 14.5
        assert page.locator(".st-key-view-intro p").evaluate(size) <= 14.5
        open_sidebar(page)
        page.keyboard.press("ArrowRight")  # the next head: a fragment rerun
        wait_for_setting(page, "head", "1")
        assert page.evaluate(SIDEBAR_RIGHT) > 200  # opened by hand: it stays open

    with opened_tab(browser, f"{streamlit_url}/?views=attention") as page:
        assert page.evaluate(SIDEBAR_RIGHT) > 200
        page.locator(".st-key-theme [role='combobox']").click()
        if not page.get_by_role("option", name="slide", exact=True).count():
            page.keyboard.press("ArrowDown")  # in the sidebar the click may only focus the box
        page.get_by_role("option", name="slide", exact=True).click()
        wait_for_setting(page, "theme", "slide")
        assert page.evaluate(SIDEBAR_RIGHT) > 200  # chosen in the sidebar: it stays under the pointer


ENTROPY_CHART = ".st-key-chart-heads-entropy .js-plotly-plot"
# the values written in a chart's cells: their text and their type as shown on the screen (the chart's scale taken)
CELL_VALUES = """gd => [...gd.querySelectorAll('.heatmaplayer text')].filter((t) => t.textContent.trim())
    .map((t) => [t.textContent, parseFloat(getComputedStyle(t).fontSize) * gd.__lab.scale])"""


def test_on_a_projector_with_the_sidebar_open_cell_values_keep_the_slide_type_or_are_left_to_the_hover(
        browser, streamlit_url):
    """A projector walk (1280 x 720, slide theme): with the sidebar open a slide chart is shown at 0.64 of its 1280
    px, and view 4's entropy per layer and head wrote its values at 12 px (the slide's cell type, 19 px, shrunk),
    under the 18 px of the page's own notes. Shown shrunk, a chart writes its cell values at the theme's cell type
    on the screen (viz.theme.cell_type_px) where they fit their cells so, and leaves them to the hover where they
    do not (16 heads side by side), as the server leaves out values that do not fit as laid out."""
    from viz.theme import cell_type_px

    slide = cell_type_px("slide")
    for heads, written in ((4, 8), (16, 0)):
        with opened_tab(browser, f"{streamlit_url}/?views=heads&theme=slide&n_heads={heads}") as tab:
            open_sidebar(tab)
            tab.locator(ENTROPY_CHART).scroll_into_view_if_needed()
            tab.wait_for_function(f"() => document.querySelector('{ENTROPY_CHART}').__lab.scale < 0.7")
            values = tab.eval_on_selector(ENTROPY_CHART, CELL_VALUES)
            tab.locator(".st-key-chart-heads-entropy").screenshot(
                path=str(SCREENSHOTS / f"browser-slide-sidebar-entropy-{heads}.png"))
            assert len(values) == written, values  # 2 layers x 4 heads; none in 16 narrow columns
            assert all(size >= slide - 0.01 for _, size in values), values
            if not written:  # left to the hover, which names each cell's value
                tab.mouse.move(*cell_centre(tab, ENTROPY_CHART, 1, 15))
                tab.wait_for_function("() => [...document.querySelectorAll('.hoverlayer .hovertext')]"
                                      ".some((e) => e.textContent.includes('entropy (bits)'))", timeout=10_000)


# each chart's smallest notes line and cell value as shown (its font size times the chart's scale, ui/chart.py)
SHOWN_SIZES = """() => [...document.querySelectorAll('[data-testid="stMain"] .lab-chart')].map(gd => {
  const k = (gd.__lab && gd.__lab.scale) || 1, px = el => parseFloat(getComputedStyle(el).fontSize) * k;
  const notes = (gd._fullLayout.annotations || []).map((a, i) => a.name === "notes"
    ? gd.querySelector(`.annotation[data-index="${i}"] .annotation-text`) : null).filter(Boolean);
  return {title: gd._fullLayout.title.text, notes: Math.min(...notes.map(px)),
          values: Math.min(...[...gd.querySelectorAll("g.heatmaplayer text, g.textpoint text")].map(px))};
})"""


def test_a_slide_link_on_a_projector_shows_notes_and_cell_values_in_the_pages_projector_type(browser, streamlit_url):
    """A teacher's walk: on a 1280 x 720 projector (a lesson link in the slide theme, charts shown at ~0.87 of
    their 1280 px) the notes over a plot and the values in its cells were the smallest text on the screen, 15.8 and
    16.6 px, under the 18 px of the page's own captions, and they carry what the lesson asks the room to read:
    step 2's "max |difference| 4.4e−15", step 3's weights (add up a row), step 4's "largest weight 0.463"."""
    lesson = "sentence_a=你喜欢她&sentence_b=她喜欢你&theme=slide"
    shown = {}
    for query in ("views=positional", "views=attention&block=decoder+self", "views=query&query=1"):
        with opened_tab(browser, f"{streamlit_url}/?{query}&{lesson}") as tab:
            draw_every_chart(tab, 200)
            shown.update({c["title"]: c for c in tab.evaluate(SHOWN_SIZES)})
    with_notes = [t for t, c in shown.items() if c["notes"] is not None and c["notes"] < 1e9]
    with_values = [t for t, c in shown.items() if c["values"] is not None and c["values"] < 1e9]
    assert any(t.startswith("Each (sin, cos) pair") for t in with_notes)  # the rotation's error
    assert any(t.startswith("Query 1:") for t in with_notes)  # the largest weight with and without ÷√d_k
    assert any(t.startswith("5. Weights") for t in with_values) and any(t.startswith("PE(m)") for t in with_values)
    for title in with_notes:
        assert shown[title]["notes"] >= 18, (title, shown[title])
    for title in with_values:
        assert shown[title]["values"] >= 18, (title, shown[title])


# every text a chart draws (title, notes, subplot titles, tick labels, axis titles, colour bar, legend, values and marks
# in cells) as shown: [the chart's title, the text, its type on the screen (font size times the chart's scale)]
SHOWN_TEXTS = """() => [...document.querySelectorAll('[data-testid="stMain"] .lab-chart')].flatMap(gd => {
  const k = gd.__lab.scale || 1;
  return [...gd.querySelectorAll('svg.main-svg text')].filter(t => t.textContent.trim() && t.getBoundingClientRect().width)
    .map(t => [gd.__lab.spec.title, t.textContent, parseFloat(getComputedStyle(t).fontSize) * k]); })"""
# lesson steps 2, 3 and 4 (docs/lesson.md): views 2, 3 and 5
LESSON_STEPS = ("views=positional", "views=attention&block=decoder+self", "views=query&query=1")
LESSON_SENTENCES = "sentence_a=你喜欢她&sentence_b=她喜欢你"


def test_on_a_phone_every_text_of_a_chart_is_shown_at_a_phones_smallest_comfortable_type(browser, streamlit_url):
    """A teacher's walk on a 390 px phone: the default theme's charts, drawn 480 px wide and shown at ~0.75, showed the
    notes under their titles at ~8 px (step 4's "largest weight 0.463; without ÷√d_k it would be 0.928", step 2's
    "max |difference| 4.4e−15") and every tick label, axis title and colour bar at ~10.4 or less. Shown shrunk, a chart
    draws its type at SMALLEST_SHOWN_PX (11) on the screen or more (ui/chart.js readableType)."""
    from viz.theme import SMALLEST_SHOWN_PX

    texts, scales = [], []
    for n, query in enumerate(LESSON_STEPS, start=2):
        with opened_tab(browser, f"{streamlit_url}/?{query}&{LESSON_SENTENCES}", 390, 844, is_mobile=True,
                        has_touch=True) as tab:
            draw_every_chart(tab, 200)
            texts += tab.evaluate(SHOWN_TEXTS)
            scales += tab.evaluate("() => [...document.querySelectorAll('.lab-chart')].map(gd => gd.__lab.scale)")
            if n == 4:
                tab.locator(".lab-chart").first.scroll_into_view_if_needed()
                tab.screenshot(path=str(SCREENSHOTS / "browser-phone-lesson-step-4.png"))
    assert len(scales) >= 12 and all(k < 0.8 for k in scales), scales  # every chart shown shrunk
    said = " ".join(text for _, text, _ in texts)
    assert "largest weight 0.463" in said and "max |difference|" in said, said  # what the lesson has the class read
    small = [(title[:40], text[:40], round(px, 2)) for title, text, px in texts if px < SMALLEST_SHOWN_PX - 0.01]
    assert small == [], small


# each heatmap chart as shown: its title, its box's width, the plot's width (all panels), its key labels turned 90°, its
# colour bar's box and those of the texts under the plot (x tick labels and titles), the right end of its texts
HEATMAPS_SHOWN = r"""() => [...document.querySelectorAll('[data-testid="stMain"] .lab-chart')].filter(gd =>
    gd.querySelector('.heatmaplayer image, .heatmaplayer .hm')).map(gd => {
  const box = gd.parentElement.getBoundingClientRect(), rect = (e) => e.getBoundingClientRect().toJSON();
  const plots = [...gd.querySelectorAll('.draglayer .nsewdrag')].map(rect);
  const under = [...gd.querySelectorAll('.xaxislayer-above text, [class^="g-x"][class$="title"] text')].map(rect);
  const bar = gd.querySelector('.colorbar');
  return {title: gd.__lab.spec.title, width: box.width, right: box.right,
          plot: Math.max(...plots.map(r => r.right)) - Math.min(...plots.map(r => r.left)),
          turned: [...gd.querySelectorAll('.xaxislayer-above text')].filter(t =>
              /rotate\(9/.test(t.getAttribute('transform') || '') && !/^\d+$/.test(t.textContent)).length,
          bar: bar && rect(bar), under, textRight: Math.max(...[...gd.querySelectorAll('svg text')].map(t => rect(t).right))};
})"""


def test_on_a_phone_heatmaps_take_the_width_with_their_colour_bar_under_the_plot(browser, streamlit_url):
    """A teacher's walk on a 390 px phone: view 3's weights heatmap took ~150 px of the width (0.41 of the chart's),
    its colour bar and the row sums ("Σ = 1.000") the rest, and its short key labels ("0:[BOS]", "1:你") were turned on
    their side. Drawn at a phone's width (viz.theme.NARROW_WIDTH), a heatmap's colour bar goes under the plot, as long
    as the plot (ui/chart.js colorbarBelow), the right margin holds only what is beside the plot (the row sums, in line
    for view 3's five matrices), and the key labels lie flat."""
    charts = []
    for n, query in enumerate(LESSON_STEPS[:2], start=2):
        with opened_tab(browser, f"{streamlit_url}/?{query}&{LESSON_SENTENCES}", 390, 844, is_mobile=True,
                        has_touch=True) as tab:
            draw_every_chart(tab, 200)
            charts += tab.evaluate(HEATMAPS_SHOWN)
            if n == 3:
                tab.locator(".st-key-chart-attention-attention-weights").scroll_into_view_if_needed()
                tab.screenshot(path=str(SCREENSHOTS / "browser-phone-weights.png"))
    steps = [c for c in charts if c["title"][:2] in ("1.", "2.", "3.", "4.", "5.")]  # view 3's five matrices
    assert len(charts) >= 8 and len(steps) == 5, [c["title"] for c in charts]
    for c in charts:
        assert c["plot"] >= 0.55 * c["width"], c  # the weights' was 0.41
        assert c["textRight"] <= c["right"] + 1, c  # the row sums and the bar's numbers on the screen
        if c["bar"]:  # under the plot, clear of its key labels and axis title, as wide as the plot or less
            assert c["bar"]["width"] <= c["plot"] + 12, c
            assert all(c["bar"]["top"] >= r["bottom"] - 1 for r in c["under"]), c
    assert all(c["turned"] == 0 for c in steps), [(c["title"], c["turned"]) for c in steps]
    assert len({round(c["plot"]) for c in steps}) == 1, [(c["title"], c["plot"]) for c in steps]  # columns in line


# In each chart matched: its box, the bottom of the texts under its plot, and each colour bar's fill, title, numbers
# and whole group, as drawn on the screen
COLOUR_BARS = r"""(sel) => [...document.querySelectorAll(sel)].map(gd => {
  const rect = (e) => e.getBoundingClientRect().toJSON();
  const plots = [...gd.querySelectorAll('.draglayer .nsewdrag')].map(rect);
  return {box: gd.parentElement.getBoundingClientRect().toJSON(),
          plot: [Math.min(...plots.map(r => r.left)), Math.max(...plots.map(r => r.right))],
          under: Math.max(...[...gd.querySelectorAll('.xaxislayer-above text, [class^="g-x"][class$="title"] text')]
                            .map(t => rect(t).bottom)),
          bars: [...gd.querySelectorAll('.colorbar')].map(cb => ({whole: rect(cb),
            fill: rect(cb.querySelector('.cbfill')),
            title: [...cb.querySelectorAll('.cbtitle text')].map(t => [t.textContent, rect(t)]),
            numbers: [...cb.querySelectorAll('.cbaxis text, .xtick text')].map(rect)}))};
})"""


def overlap(a: dict, b: dict) -> bool:
    """Whether two boxes ({left, right, top, bottom}) share more than a pixel each way."""
    return min(a["right"], b["right"]) - max(a["left"], b["left"]) > 1 and \
        min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > 1


@pytest.mark.parametrize("width", [390, 320])
def test_on_a_phone_view_6s_two_colour_bars_lie_side_by_side_under_the_plot(browser, streamlit_url, width):
    """View 6's token outputs draw A and B on one diverging scale and |A − B| on the magnitude scale: two colour bars.
    On a phone ui/chart.js colorbarBelow put every bar under the plot as long as the plot, in one place: the two bars,
    their numbers and their titles ("output", "|A − B|") were drawn on top of each other. They share the plot's length
    side by side now, each its title and bar in its own slot, under the x axis, inside the chart."""
    with opened_tab(browser, f"{streamlit_url}/?views=order&sentence_a=你喜欢她&sentence_b=她喜欢你", width, 844,
                    is_mobile=True, has_touch=True) as tab:
        draw_every_chart(tab, 200)
        charts = tab.evaluate(COLOUR_BARS, ".st-key-chart-order-aligned-pe .lab-chart, "
                                           ".st-key-chart-order-aligned-nope .lab-chart")
        tab.locator(".st-key-chart-order-aligned-pe").scroll_into_view_if_needed()
        tab.screenshot(path=str(SCREENSHOTS / f"browser-phone-{width}-order-colour-bars.png"))
    assert len(charts) == 2, charts  # with PE and without
    for c in charts:
        bars, box = c["bars"], c["box"]
        assert [[t for t, _ in b["title"]] for b in bars] == [["output"], ["|A − B|"]], bars
        left, right = bars
        assert left["fill"]["right"] < right["fill"]["left"], bars  # side by side, in the panels' order
        parts = [[b["fill"], *(r for _, r in b["title"]), *b["numbers"]] for b in bars]
        assert not any(overlap(p, q) for p in parts[0] for q in parts[1]), bars  # nothing of one on the other
        # the two share the plot's length: each a bar to read (the numbers, "−2 0 2", apart), not a stub
        assert right["fill"]["right"] - left["title"][0][1]["left"] >= 0.8 * (c["plot"][1] - c["plot"][0]), c
        for b, own in zip(bars, parts, strict=True):
            assert b["fill"]["width"] >= 45, b
            _, title = b["title"][0]
            assert title["right"] <= b["fill"]["left"] + 1, b  # its title beside it, not on it
            for r in own:  # inside the chart, under the x axis's labels and title
                assert box["left"] - 1 <= r["left"] and r["right"] <= box["right"] + 1, (r, box)
                assert c["under"] - 1 <= r["top"] and r["bottom"] <= box["bottom"] + 1, (r, c["under"], box)


def test_slide_tables_are_html_in_projector_type_with_words_for_booleans_and_markup_as_text(browser, streamlit_url):
    """In the slide theme a table that is the panel (the tokens; view 6's numbers and translations) is drawn as
    st.table: HTML, in the page's projector-sized type (ui/style.py; st.dataframe's canvas keeps 14 px whatever
    the page's CSS) and with True/False in words (the canvas's ticked boxes were hard to tell from empty ones
    across a room). Text in it stays text: an <img> in a sentence is shown, never loaded."""
    from urllib.parse import quote

    context = browser.new_context(viewport={"width": 1280, "height": 720})
    dialogs: list[str] = []
    try:
        page = context.new_page()
        page.set_default_timeout(60_000)
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(f"{streamlit_url}/?views=tokens&sentence_a=你喜欢她&sentence_b=她喜欢你&theme=slide")
        wait_idle(page)
        main = page.locator('[data-testid="stMain"]')
        assert main.locator('[data-testid="stTable"]').count() == 3  # side by side, A, B
        assert main.locator('[data-testid="stDataFrame"]').count() == 0
        sizes = main.locator('[data-testid="stTable"] td').evaluate_all(
            "tds => tds.map(td => parseFloat(getComputedStyle(td).fontSize))")
        assert min(sizes) >= 18, sizes
        side = main.locator('[data-testid="stTable"]').first.inner_text()
        assert "True" in side and "False" in side  # positions 0 and 3 differ, 1 and 2 do not
        # the table lesson step 1 shows comes first, whole on the 720 px projector without scrolling (a teacher's
        # walk: it was the third, its rows 1,150-1,300 px down the page)
        box = main.locator('[data-testid="stTable"]').first.bounding_box()
        assert box["y"] >= 0 and box["y"] + box["height"] <= 720, box
        # the tokens' positions, which lesson step 1 names ("only positions 0 and 3 differ"), are a column (a
        # teacher's walk: the slide tables had taken the position column for row names and hidden it)
        rows = main.locator('[data-testid="stTable"]').first.locator("tr").evaluate_all(
            "trs => trs.map(tr => [...tr.children].map(c => c.innerText.trim()))")
        assert rows[0][:2] == ["position", "A piece"] and [r[0] for r in rows[1:]] == ["0", "1", "2", "3"], rows
        page.screenshot(path=str(SCREENSHOTS / "browser-slide-table.png"))
        if trained_available():
            page.goto(f"{streamlit_url}/?views=order&model=zh-en&theme=slide&sentence_a={quote(HTML_A + '你喜欢她')}"
                      f"&sentence_b={quote('她喜欢你' + HTML_A)}")
            wait_idle(page)
            tables = main.locator('[data-testid="stTable"]')
            assert tables.count() == 2  # the numbers, the translations
            assert f"{HTML_A}你喜欢她" in tables.last.inner_text()
            assert main.locator('[data-testid="stTable"] *').evaluate_all(
                "els => els.filter(e => e.tagName === 'IMG').length") == 0
        page.goto(f"{streamlit_url}/?views=tokens&sentence_a=你喜欢她&sentence_b=她喜欢你")  # not slide: as before
        wait_idle(page)
        assert main.locator('[data-testid="stDataFrame"]:visible').count() == 3
        # on the page for a phone's width only (ui/panels.py PHONE_COLUMNS): hidden at 1280 px
        assert main.locator('[data-testid="stTable"]:visible').count() == 0
    finally:
        context.close()
    assert dialogs == []


@pytest.mark.parametrize("view, chart", [("query", "query-bars"), ("attention", "attention-weights")])
def test_in_full_screen_a_slide_title_keeps_clear_of_the_toolbar(browser, streamlit_url, view, chart):
    """On a 1280 x 720 projector a slide chart in full screen is as wide as its design: its title, laid out
    for 1280 px, ran under plotly.js's toolbar (top right, shown while the pointer is on the chart). In full
    screen the title is wrapped to end left of the toolbar."""
    with opened_tab(browser, f"{streamlit_url}/?theme=slide&views={view}&sentence_a=你喜欢她&sentence_b=她喜欢你") as page:
        gd = f".st-key-chart-{view}-{chart} .lab-chart"
        page.locator(gd).scroll_into_view_if_needed()
        page.hover(gd)
        page.locator(f".st-key-chart-{view}-{chart} .modebar-btn[data-title^='Full screen']").click()
        page.wait_for_function("() => document.fullscreenElement && document.fullscreenElement.className === 'lab-chart-box'")
        page.wait_for_timeout(300)
        page.hover(gd)  # the toolbar shows
        title, bar = page.eval_on_selector(gd, "gd => [gd.querySelector('.gtitle').getBoundingClientRect().toJSON(), "
                                               "gd.querySelector('.modebar').getBoundingClientRect().toJSON()]")
        page.screenshot(path=str(SCREENSHOTS / f"browser-full-screen-title-{view}.png"))
    assert bar["width"] > 100 and title["width"] > 300
    assert title["right"] <= bar["left"] or title["top"] >= bar["bottom"], (title, bar)
    assert title["left"] >= 0 and title["top"] >= -2  # on the screen (its glyph box starts at its line top)


def _contrast(fg: tuple[float, ...], bg: tuple[float, ...]) -> float:
    def lum(rgb):
        lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (v / 255 for v in rgb)]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    hi, lo = sorted((lum(fg), lum(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_a_screen_reader_hears_named_charts_and_buttons_and_captions_read_at_aa_contrast(page):
    """From an accessibility walk: the ◂ ▸ buttons were read as "chevron_left icon", each chart as images named
    by its tick labels ("−10 −5 0 5 10 … 0:你"), and the captions were 3.9:1 on white (WCAG AA asks 4.5:1)."""
    open_view(page, "2 · Positional encoding")
    drawn_charts(page)
    charts = page.evaluate("""() => [...document.querySelectorAll('[data-testid="stMain"] .lab-chart-box')].map(box => {
        const gd = box.querySelector('.js-plotly-plot'); const t = (gd._fullLayout.title || {}).text || '';
        const caption = box.getAttribute('aria-describedby');
        return {role: box.getAttribute('role'), label: box.getAttribute('aria-label') || '',
                title: new DOMParser().parseFromString(t.replace(/<br>/g, ' '), 'text/html').body.textContent,
                caption: caption ? document.getElementById(caption).textContent : null,
                shown: box.nextElementSibling.hidden ? null : box.nextElementSibling.textContent,
                svgs: gd.querySelectorAll('svg.main-svg').length,
                hidden: gd.querySelectorAll('svg.main-svg[aria-hidden="true"]').length,
                select: gd.querySelectorAll('.modebar-btn[data-attr="dragmode"][data-val$="select"]').length,
                buttons: gd.querySelectorAll('.modebar-btn').length}; })""")
    assert len(charts) >= 5, charts
    for c in charts:
        assert c["role"] == "figure" and c["label"], c
        assert c["label"].startswith(" ".join(c["title"].split())), c  # the figure's title, then its notes
        assert c["caption"] == c["shown"], c  # described by the caption under it, where it has one
        assert c["svgs"] >= 2 and c["hidden"] == c["svgs"], c  # plotly.js's drawing is not read out
        assert c["select"] == 0, c  # no box or lasso select: nothing reads a selection
    assert any(c["caption"] for c in charts)
    # nothing unnamed at the page's top level: plotly.js's off-screen SVG for measuring text was read as an image at
    # the page's end, with no name
    assert [line for line in page.locator("body").aria_snapshot().splitlines() if line.startswith("- img")] == []
    heading = page.get_by_role("heading", level=2, name="2 · Positional encoding")  # h1 > h2 (the view) > h3
    assert heading.count() == 1
    box = page.locator(".st-key-view-heading").bounding_box()  # its box: 1 px, clipped
    assert box is None or (box["width"] <= 1 and box["height"] <= 1)  # hidden from the eye
    apart = page.evaluate("""() => { const w = document.querySelector('.st-key-view-heading').parentElement;
        return w.nextElementSibling.getBoundingClientRect().top - w.previousElementSibling.getBoundingClientRect().bottom; }""")
    assert apart <= 17, apart  # one gap between its neighbours, as with no heading: it takes no room
    open_view(page, "3 · Attention step by step")
    drawn_charts(page)
    labels = page.evaluate("""() => [...document.querySelectorAll('[data-testid="stMain"] .lab-chart-box')]
        .map(box => box.getAttribute('aria-label'))""")
    assert any(label.startswith("Q = XW sub Q, K = XW sub K, V = XW sub V") for label in labels), labels
    assert any("QKᵀ / √d sub k (d sub k = " in label for label in labels), labels  # a subscript read as one
    for key, word in (("head-prev", "Previous head"), ("head-next", "Next head"), ("layer-prev", "Previous layer")):
        button = page.locator(f".st-key-{key} button")
        button = button.first  # (Streamlit keeps a second, zero-width copy of a button with a shortcut)
        assert button.get_attribute("aria-label") is None
        assert page.get_by_role("button", name=word).count() == 1  # its accessible name
        box = button.locator('[data-testid="stMarkdownContainer"]').bounding_box()
        assert box is None or (box["width"] <= 1 and box["height"] <= 1)  # hidden from the eye
    ratios = page.evaluate("""() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stCaptionContainer"], .lab-chart-caption:not([hidden])')]
        .map(el => { const s = getComputedStyle(el); const c = s.color.match(/[\\d.]+/g).map(Number);
                     return [c.slice(0, 3), Number(s.opacity)]; })""")
    assert ratios
    for (r, g, b), opacity in ratios:  # the text's colour at its opacity over the white page
        shown = tuple(opacity * v + (1 - opacity) * 255 for v in (r, g, b))
        assert _contrast(shown, (255, 255, 255)) >= 4.5, (r, g, b, opacity)


SAID = '[data-testid="stMain"] .st-key-said'


def test_a_screen_reader_hears_the_layer_and_head_that_the_keys_choose(page):
    """A screen reader's walk: ← → and Shift+← → (or the ◂ ▸ buttons) chose another head or layer and redrew every
    chart, and a screen reader said nothing: the focus stays where it was (the page, a button), and a chart's new name
    is not read until someone goes to it. The page has a status line (a polite live region, hidden from the eye) that
    says what the figures now show, so the change is said as it comes."""
    open_view(page, "3 · Attention step by step")
    drawn_charts(page)
    status = page.locator(SAID)
    assert status.get_attribute("role") == "status"
    assert status.inner_text().strip() == "Shown: 3 · Attention step by step, encoder self, layer 0, head 0, sentence A."
    box = status.bounding_box()
    assert box is None or (box["width"] <= 1 and box["height"] <= 1)  # hidden from the eye
    page.locator('[data-testid="stMain"] h1').click()
    page.keyboard.press("ArrowRight")
    wait_for_setting(page, "head", "1")
    page.keyboard.press("Shift+ArrowRight")
    wait_for_setting(page, "layer", "1")
    assert "layer 1, head 1, sentence A" in status.inner_text()
    assert "status:" in page.locator('[data-testid="stMain"]').aria_snapshot()  # in the accessibility tree
    open_view(page, "1 · Tokens")  # a view without those controls: its name alone
    assert page.locator(SAID).inner_text().strip() == "Shown: 1 · Tokens."


def test_a_screen_reader_hears_a_training_run_begin_and_end(browser, streamlit_url):
    """A screen reader's walk of view 7's "Train it yourself": Enter on Train ran the training, its progress bar and
    loss chart grew, the translations came, and a screen reader, its focus left on Train, heard none of it. A status
    line hidden from the eye says the run began and how it ended."""
    with opened_tab(browser, f"{streamlit_url}/?views=translate", 1280, 800) as page:
        status = page.locator('[data-testid="stMain"] .st-key-said-train')
        assert status.get_attribute("role") == "status"
        assert status.inner_text().strip() == "No run yet."
        box = status.bounding_box()
        assert box is None or (box["width"] <= 1 and box["height"] <= 1)  # hidden from the eye
        page.locator(".st-key-train_steps input").focus()
        page.keyboard.press("Home")  # 10 steps
        page.wait_for_timeout(1000)
        wait_idle(page)
        page.locator(".st-key-train_go button").focus()
        page.keyboard.press("Enter")
        page.wait_for_function("() => /^Trained /.test(document.querySelector("
                               "'[data-testid=\"stMain\"] .st-key-said-train').innerText.trim())", timeout=120_000)
        said = status.inner_text().strip()
        assert said.startswith("Trained 10 steps with positional encoding: yes (sinusoidal): loss "), said
        assert "token accuracy" in said and said.endswith("The translations are below."), said
        assert status.get_attribute("role") == "status"  # the same live region, not a new one
        wait_idle(page)
        assert status.inner_text().strip() == said  # kept as it is on the next rerun: not said again


# the focused element as a Tab walk sees it: its tag, its name (what a screen reader says, roughly), whether it is
# in the main area, its ring (a radio's is on its label) and, for a radio, whether it is the one chosen
TAB_STOP = """() => { const e = document.activeElement; const ringed = e.type === 'radio' ? e.closest('label') : e;
    const s = getComputedStyle(ringed);
    return {tag: e.tagName.toLowerCase(), inMain: !!e.closest('[data-testid="stMain"]'),
            name: (e.getAttribute('aria-label') || e.getAttribute('data-title') || e.textContent
                   || [...(e.labels || [])].map(l => l.textContent).join(' ')).trim().slice(0, 60),
            ring: [s.outlineStyle, s.outlineWidth],
            checked: e.type === 'radio' ? e.checked : e.getAttribute('role') === 'radio' ? e.ariaChecked === 'true' : null};
}"""


def test_every_tab_stop_of_the_main_area_is_named_and_shows_the_pages_ring(page, streamlit_url):
    """A keyboard walk from "Skip to main content" through view 5 opened by a link (every kind of control: text boxes, buttons,
    select boxes, a radio, chart toolbars, expanders). The first stop was the title's "Link to heading" (a link
    to the top of the page it is on), ringed by Streamlit's half-transparent shadow, ~2.1:1 on white, where
    every other link and button shows the page's 2 px ring (ui/style.py). And Tab into the view bar (one Tab stop)
    landed on "1 · Tokens" whatever the view (Shift+Tab on "7 · Translate"): a screen reader said "1 · Tokens, not
    checked" above view 5's charts, and Space opened view 1. A radio group is entered at its chosen option."""
    page.goto(f"{streamlit_url}/?views=query")  # a link's view: no option of the view bar clicked yet
    wait_idle(page)
    page.get_by_role("link", name="Skip to main content").focus()
    page.keyboard.press("Enter")  # the focus on the main area itself
    stops = []
    for _ in range(80):
        page.keyboard.press("Tab")
        stop = page.evaluate(TAB_STOP)
        if not stop["inMain"]:
            break
        stops.append(stop)
    else:
        pytest.fail(f"Tab never left the main area: {stops[-5:]}")
    assert len(stops) > 20, stops
    for stop in stops:
        assert stop["name"], stop  # no control without a name
        if stop["tag"] != "input" or stop["name"] in ("A", "B"):  # Streamlit marks a text or select box by its border
            assert stop["ring"] == ["solid", "2px"], stop
    assert "Link to heading" not in [s["name"] for s in stops]
    radios = [s for s in stops if s["checked"] is not None]
    assert [s["name"] for s in radios] == ["5 · One query", "A"], radios  # each group: one stop, its chosen option
    assert all(s["checked"] for s in radios), radios
    page.locator(".st-key-block button").first.focus()  # the next control's "?": back into the view bar
    page.keyboard.press("Shift+Tab")
    assert page.evaluate(TAB_STOP)["name"] == "5 · One query"


TOOL = """() => { const e = document.activeElement, bar = e.closest('[role="toolbar"]');
    return {tool: e.classList.contains('modebar-btn') ? e.dataset.title : null,
            chart: (e.closest('[class*="st-key-chart-"]') || {className: ''}).className.match(/st-key-chart-\\S+/)?.[0],
            bar: bar ? bar.getAttribute('aria-label') : null}; }"""


def test_each_charts_toolbar_is_one_tab_stop_with_the_arrow_keys_inside_it(browser, streamlit_url):
    """A keyboard walk at 1280 px: every chart put its six toolbar buttons (zoom in, zoom out, autoscale, reset,
    download, full screen) in the Tab order, 36 stops on view 3 and 48 on view 6 between a person and the next
    control. A chart's toolbar is one Tab stop (WAI-ARIA's toolbar: ← → Home End move inside it, Tab leaves, and
    Tab back in lands on the button used last); ← → there do not flip heads. A button clicked with the mouse still
    lets → flip the head, and in full screen Tab still goes round every button while ← → flip heads."""
    with opened_tab(browser, f"{streamlit_url}/?views=attention", 1280, 800) as page:
        drawn_charts(page)
        charts = page.locator('[data-testid="stMain"] .lab-chart-box').count()
        page.get_by_role("link", name="Skip to main content").focus()
        page.keyboard.press("Enter")
        stops = []
        for _ in range(120):
            page.keyboard.press("Tab")
            if not page.evaluate(TAB_STOP)["inMain"]:
                break
            stops.append(page.evaluate(TOOL))
        tools = [s for s in stops if s["tool"]]
        assert len(tools) == charts >= 6, tools  # one stop per chart
        assert len({s["chart"] for s in tools}) == charts, tools
        assert all(s["bar"] and s["bar"].startswith("Chart tools") for s in tools), tools
        first = tools[0]["chart"]
        # a screen reader's list of the toolbar's buttons is what the arrows go through: box zoom and pan, which need a
        # mouse (no Tab stop, the arrows pass them), were read out as two more buttons of each toolbar
        listed = re.findall(r'button "([^"]+)"', page.locator(f".{first} [role=toolbar]").aria_snapshot())
        assert listed == ["Zoom in", "Zoom out", "Autoscale", "Reset axes", "Download plot",
                          "Full screen (Esc leaves)"], listed
        page.locator(f".{first} .modebar-btn[tabindex='0']").focus()
        seen = [page.evaluate(TOOL)["tool"]]
        for key in ["ArrowRight", "ArrowRight", "End", "ArrowRight", "Home", "ArrowLeft", "ArrowLeft", "ArrowLeft"]:
            page.keyboard.press(key)
            seen.append(page.evaluate(TOOL)["tool"])
        assert seen == ["Zoom in", "Zoom out", "Autoscale", "Full screen (Esc leaves)", "Zoom in", "Zoom in",
                        "Full screen (Esc leaves)", "Download plot", "Reset axes"], seen
        page.wait_for_timeout(500)
        assert new_url_head(page) is None  # the arrows moved inside the toolbar: no head flipped
        page.keyboard.press("Shift+Tab")
        page.keyboard.press("Tab")  # back in: on the button used last
        assert page.evaluate(TOOL) == {"tool": "Reset axes", "chart": first, "bar": tools[0]["bar"]}
        page.keyboard.press("Enter")  # it still works from the keyboard
        chart = f".{first} .js-plotly-plot"
        page.hover(chart)
        page.locator(f"{chart} .modebar-btn[data-title='Zoom in']").click()  # the mouse: → flips the head as before
        page.keyboard.press("ArrowRight")
        wait_for_setting(page, "head", "1")
        page.locator(f"{WEIGHTS_CHART} .modebar-btn[data-title^='Full screen']").focus()
        page.keyboard.press("Enter")  # full screen: Tab goes round its buttons, ← → flip heads
        page.wait_for_function(f"() => document.querySelector('{WEIGHTS_CHART}')._fullLayout.height === innerHeight")
        round_ = []
        for _ in range(6):
            page.keyboard.press("Tab")
            round_.append(page.evaluate(TOOL)["tool"])
        assert len(set(round_)) == 6, round_
        page.keyboard.press("ArrowRight")
        wait_for_setting(page, "head", "2")
        assert page.evaluate("() => document.fullscreenElement && document.fullscreenElement.className") == "lab-chart-box"
        page.evaluate("() => document.exitFullscreen()")


def new_url_head(page) -> str | None:
    """The head the page's URL (the share link) names, None for the default."""
    return page.evaluate("() => new URLSearchParams(location.search).get('head')")


def test_the_keyboard_focus_stays_on_the_page_after_a_click_that_redraws_it(page):
    """View 4's "head 1" opens view 3 and an Examples item closes its menu: the focused control was gone, the
    focus fell to the page's <body>, and the next Tab landed part way down the new page. Now the focus goes to
    the view shown (ui/focus.py), or back to the Examples button; a control so reached shows a solid ring."""
    from ui.state import PRESETS

    open_view(page, "4 · Heads")
    drawn_charts(page)
    page.locator(".st-key-open-head-1 button").first.focus()
    page.keyboard.press("Enter")
    wait_for_setting(page, "views", "attention")
    page.wait_for_function("() => document.activeElement && document.activeElement !== document.body")
    assert page.evaluate("() => !!document.activeElement.closest('.st-key-view')")
    assert page.evaluate("() => document.activeElement.textContent.trim()") == "3 · Attention step by step"
    assert page.locator(".st-key-refocus").count() <= 1
    page.keyboard.press("Tab")  # on to the next control: a ring in the text's colour, 2 px
    ring = page.evaluate("() => { const s = getComputedStyle(document.activeElement);"
                         " return [s.outlineStyle, s.outlineWidth, s.outlineColor, s.color]; }")
    assert ring[0] == "solid" and ring[1] == "2px" and ring[2] == ring[3], ring
    drag = page.evaluate("""() => [...document.querySelectorAll('.modebar-btn[data-attr="dragmode"]')]
        .map(b => b.getAttribute('tabindex'))""")
    assert drag and set(drag) == {"-1"}  # box zoom and pan need a mouse: no Tab stops
    page.locator(".st-key-preset button").first.focus()
    page.keyboard.press("Enter")  # the menu opens; the item is focused and Enter pressed (Streamlit's menu takes
    # the arrow keys only some of the time, its focus still on the button: its own behaviour, not tested here)
    page.get_by_role("menuitem", name=next(k for k in PRESETS if k.startswith("我有一只猫"))).focus()
    page.keyboard.press("Enter")
    page.wait_for_function("() => new URLSearchParams(location.search).get('sentence_a') === '我有一只猫'")
    wait_idle(page)
    page.wait_for_function("() => document.activeElement && document.activeElement !== document.body")
    where = "() => [!!document.activeElement.closest('.st-key-preset'), document.activeElement.outerHTML.slice(0, 120)]"
    assert page.evaluate(where)[0], page.evaluate(where)


@pytest.mark.skipif(not trained_available(), reason="the translate view needs the trained models")
def test_the_decoding_step_slider_is_in_projector_type_in_the_slide_theme(browser, streamlit_url):
    """A teacher's walk (lesson step 7): the "Decoding step" label and the step's number, which the teacher drags
    and the class reads, were 14 px beside the page's 18 px notes in the slide theme (ui/style.py SLIDE_CSS)."""
    with opened_tab(browser, f"{streamlit_url}/?views=translate&model=zh-en&theme=slide&step=2") as page:
        texts = page.locator(".st-key-translate_step p").evaluate_all(
            "ps => ps.map(p => [p.innerText.trim(), parseFloat(getComputedStyle(p).fontSize)])")
    assert [t for t, _ in texts][:2] == ["Decoding step", "2"], texts  # the label, then the step's number
    assert min(size for _, size in texts) >= 18, texts


SHOWN_CONTRAST = """([selector, onPage]) => {
    // WCAG contrast of the first element matching selector: its text colour at its (and its ancestors') opacity
    // over the backgrounds under it (each ancestor's, half-transparent ones laid over the next), as shown; onPage:
    // over the page's (a slider's value sits above its thumb, not on it)
    const parse = (c) => { const v = c.match(/[\\d.]+/g).map(Number); return v.length > 3 ? v : v.concat([1]); };
    const lum = (rgb) => { const l = rgb.map(v => { v /= 255;
        return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
        return 0.2126 * l[0] + 0.7152 * l[1] + 0.0722 * l[2]; };
    const el = document.querySelector(selector);
    const app = document.querySelector('[data-testid="stApp"]');
    const layers = [];
    for (let e = onPage ? app : el; e; e = e.parentElement) {
        const b = parse(getComputedStyle(e).backgroundColor);
        if (b[3] > 0) layers.unshift(b);
        if (b[3] >= 1) break;
    }
    const bg = layers.reduce((under, b) => under.map((v, i) => b[3] * b[i] + (1 - b[3]) * v), [255, 255, 255]);
    const c = parse(getComputedStyle(el).color);
    let a = c[3];
    for (let e = el; e; e = e.parentElement) a *= Number(getComputedStyle(e).opacity);
    const shown = c.slice(0, 3).map((v, i) => a * v + (1 - a) * bg[i]);
    const [hi, lo] = [lum(shown), lum(bg)].sort((x, y) => y - x);
    return (hi + 0.05) / (lo + 0.05);
}"""


@pytest.mark.skipif(not trained_available(), reason="the translate view needs the trained models")
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_chosen_view_a_sliders_value_and_the_key_hints_read_at_aa_contrast(browser, streamlit_url, scheme):
    """An accessibility walk, light and dark: the chosen view's name was in Streamlit's primary colour on its tint
    (3.9:1 light, 3.2:1 dark), a slider's value over its thumb 3.9:1 on the dark page, and the ◂ ▸ buttons' key
    hints 3.9:1 on white (WCAG AA asks 4.5:1 of text this size). The chosen view is also underlined: not told by
    colour alone."""
    with opened_tab(browser, f"{streamlit_url}/?views=translate&model=zh-en", 1500, 1000, color_scheme=scheme) as page:
        chosen = '.st-key-view [role="radio"][aria-checked="true"] p'
        assert page.locator(chosen).inner_text() == "7 · Translate"
        thumb = '[data-testid="stSliderThumbValue"] p'  # a slider's value, over the page
        for selector, on_page in ((chosen, False), (f".st-key-translate_step {thumb}", True),
                                  (f".st-key-train_steps {thumb}", True),
                                  (".st-key-head-prev kbd", False), (".st-key-layer-next kbd", False)):
            assert page.evaluate(SHOWN_CONTRAST, [selector, on_page]) >= 4.5, (scheme, selector)
        marks = page.evaluate("""() => [...document.querySelectorAll('.st-key-view [role="radio"]')]
            .map(b => [b.getAttribute('aria-checked'), getComputedStyle(b).textDecorationLine])""")
        assert marks == [["true" if n == 6 else "false", "underline" if n == 6 else "none"] for n in range(7)], marks


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_chart_toolbar_button_reached_with_tab_shows_a_ring_and_its_name(browser, streamlit_url, scheme):
    """An accessibility walk in dark mode: Tab reaches each chart's toolbar (zoom, reset, download, full screen), but
    plotly.js rings the focused icon 1 px in black, ~1.1:1 on the dark page: no one could see where the focus was.
    The ring is now the page's 2 px one, in the figure's text colour, and the button's name shows as on hover.
    A radio's option reached with Tab (Sentence A / B) was marked by a faint grey box: ringed too."""
    with opened_tab(browser, f"{streamlit_url}/?views=attention", 1500, 1000, color_scheme=scheme) as page:
        drawn_charts(page)
        page.locator('[data-testid="stMain"] h1').click()
        for _ in range(40):
            page.keyboard.press("Tab")
            if page.evaluate("() => document.activeElement.classList.contains('modebar-btn')"):
                break
        ring = page.evaluate("""() => { const b = document.activeElement; const s = getComputedStyle(b);
            const gd = b.closest('.js-plotly-plot'); const tip = getComputedStyle(b, '::after');
            return {style: s.outlineStyle, width: s.outlineWidth, color: s.outlineColor,
                    font: gd._fullLayout.font.color, paper: gd._fullLayout.paper_bgcolor,
                    bar: getComputedStyle(b.closest('.modebar')).opacity,
                    tip: [tip.display, tip.opacity, tip.content], name: b.getAttribute('data-title')}; }""")
        assert ring["name"], ring  # a toolbar button has the focus
        assert ring["style"] == "solid" and ring["width"] == "2px", ring
        assert _contrast(rgb(ring["color"]), rgb(ring["paper"])) >= 3, ring  # WCAG 1.4.11, against the figure
        assert ring["bar"] == "1", ring  # the toolbar shows while one of its buttons has the focus
        assert ring["tip"][0] == "block" and ring["tip"][1] == "1" and ring["name"] in ring["tip"][2], ring
        page.locator('[data-testid="stMain"] h1').click()
        page.locator('.st-key-sentence button[aria-label="Help for Sentence"]').focus()
        page.keyboard.press("Tab")  # on to the Sentence radio
        mark = page.evaluate("""() => { const e = document.activeElement;
            const s = getComputedStyle(e.closest('label'));
            return [e.type, s.outlineStyle, s.outlineWidth]; }""")
        assert mark == ["radio", "solid", "2px"], mark  # its option ringed too, not Streamlit's faint grey box


@pytest.mark.skipif(not trained_available(), reason="the translate view needs the trained models")
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_slider_reached_with_tab_shows_the_pages_ring_on_its_thumb(browser, streamlit_url, scheme):
    """A keyboard walk of view 7: Tab onto the decoding-step or training-steps slider marked its thumb only by a
    halo of the thumb's own red at half opacity, 3.2 px (2.2:1 on white, 1.8:1 on the dark page: WCAG 1.4.11 asks
    3:1), where every other control shows the page's 2 px ring. The thumb is ringed as they are, in the text's
    colour."""
    with opened_tab(browser, f"{streamlit_url}/?views=translate&model=zh-en", 1280, 800, color_scheme=scheme) as page:
        for key in ("translate_step", "train_steps"):
            page.locator(f".st-key-{key} input").focus()
            page.keyboard.press("Shift+Tab")  # reached from the control before it, with Tab
            page.keyboard.press("Tab")
            ring = page.evaluate("""() => { const input = document.activeElement;
                const thumb = input.closest('[data-testid="stSlider"] [style*="translate"]');
                const s = getComputedStyle(thumb), app = document.querySelector('[data-testid="stApp"]');
                return {type: input.type, style: s.outlineStyle, width: s.outlineWidth, color: s.outlineColor,
                        page: getComputedStyle(app).backgroundColor}; }""")
            assert ring["type"] == "range", (key, ring)
            assert ring["style"] == "solid" and ring["width"] == "2px", (key, ring)
            assert _contrast(rgb(ring["color"]), rgb(ring["page"])) >= 4.5, (key, ring)
            page.keyboard.press("ArrowRight")  # the ring stays while the value moves
            page.wait_for_timeout(300)
            assert page.evaluate("() => getComputedStyle(document.activeElement.closest("
                                 "'[data-testid=\"stSlider\"] [style*=\"translate\"]')).outlineStyle") == "solid"


def rgb(color: str) -> tuple[float, ...]:
    """(r, g, b) of "rgb(r, g, b)", "rgba(...)" or "#rrggbb"."""
    if color.startswith("#"):
        return tuple(int(color[i:i + 2], 16) for i in (1, 3, 5))
    return tuple(float(v) for v in color[color.index("(") + 1:-1].split(",")[:3])


def test_a_chart_drawn_wide_then_narrow_turns_its_colour_bar_under_the_plot_without_a_script_error(page):
    """A window narrowed from 1500 to 900 px draws view 3's charts 480 px wide: their colour bars, upright beside the
    plot, go under it (ui/chart.js colorbarBelow). plotly.js's react, handed the turned bar with the new size, threw
    "Something went wrong with axis scaling" for each of them; they are drawn afresh now, each bar flat."""
    open_view(page, "3 · Attention step by step")
    page.set_viewport_size({"width": 900, "height": 1000})
    page.wait_for_function(f"() => document.querySelector('{WEIGHTS_CHART}')._fullLayout.width <= 480")
    page.wait_for_timeout(1500)
    assert page.script_errors == []
    bars = page.evaluate(f"() => document.querySelector('{WEIGHTS_CHART}')._fullData"
                         ".filter(t => t.type === 'heatmap' && t.showscale).map(t => t.colorbar.orientation)")
    assert bars == ["h"], bars


# Records, while the page is printed, each chart's drawn box against the page's width as laid out for the paper: a
# matchMedia("print") listener added after the app's (ui/chart.js), so it runs once the charts are drawn again.
PRINT_RECORDER = """() => { window.__printed = [];
  matchMedia('print').addEventListener('change', (e) => { if (!e.matches) return;
    const page = document.documentElement.clientWidth;
    window.__printed.push([...document.querySelectorAll('[data-testid="stMain"] .lab-chart-box')].map((box) => {
      const svg = box.querySelector('.main-svg'), r = (svg || box).getBoundingClientRect();
      const title = box.querySelector('.gtitle');
      return {left: r.left, right: r.right, height: r.height, page, paper: svg ? getComputedStyle(svg).backgroundColor : '',
              ink: title ? getComputedStyle(title).fill : ''}; })); }); }"""


def printed(page, path) -> list[str]:
    """The view printed to PDF (A4, the page's own margins, no background graphics: the print dialog's defaults), as
    each page's text."""
    import pypdfium2

    page.evaluate(PRINT_RECORDER)
    page.pdf(path=str(path), format="A4")
    pdf = pypdfium2.PdfDocument(str(path))
    return [pdf[i].get_textpage().get_text_range() for i in range(len(pdf))]


def test_a_view_printed_is_its_heading_sentences_and_every_chart_whole_on_the_paper_without_the_screens_controls(
        browser, streamlit_url, tmp_path):
    """A teacher prints view 3 as a handout (Ctrl+P, Save as PDF): the sidebar took a sixth of every page, the view
    bar, the controls and eleven closed expanders a third of a page, no page said which view it was, and every chart
    kept the screen's width, cut at the paper's right edge (ui/style.py PRINT_CSS, ui/chart.js's print redraw)."""
    with opened_tab(browser, f"{streamlit_url}/?views=attention&sentence_a=你喜欢她&sentence_b=她喜欢你",
                    width=1500, height=900) as tab:  # a laptop: its charts wider than the paper
        titles = tab.eval_on_selector_all('[data-testid="stMain"] .js-plotly-plot .gtitle',
                                          "els => els.map(e => e.textContent)")
        widths = "() => [...document.querySelectorAll('.lab-chart .main-svg')].map(s => s.getBoundingClientRect().width)"
        screen = tab.evaluate(widths)
        pages = printed(tab, tmp_path / "view3.pdf")
        boxes = tab.evaluate("() => window.__printed")
        tab.wait_for_function(f"(screen) => JSON.stringify(({widths})()) === JSON.stringify(screen)", arg=screen,
                              timeout=5_000)  # and drawn again for the screen afterwards
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        full_screenshot(tab, str(SCREENSHOTS / "browser-after-print.png"))
    text = " ".join(pages).replace("\r", " ").replace("\n", " ")
    assert "3 · Attention step by step" in text  # the view's heading, shown on paper
    assert "你喜欢她" in text and "她喜欢你" in text  # the sentences
    assert "Model: random" in text  # the model line
    assert len(titles) == 6
    words = re.sub(r"\W", "", text)  # subscripts and superscripts are text of their own in the PDF
    for title in titles:  # each chart's own title, drawn by plotly.js, and its tick labels
        assert re.sub(r"\W", "", title) in words, title
    assert text.count("0:你") >= 6 and "key (attended to)" in text
    assert all(p.strip() for p in pages)  # no blank page
    assert len(pages) <= 4, len(pages)  # two charts a page (at the paper's own scale, one: seven pages)
    for screen_only in ("Export size", "A 20-minute lesson", "Device", "4 · Heads", "Swap A", "Examples",
                        "The numbers behind this figure", "Share this view", "Attention block"):
        assert screen_only not in text, screen_only  # the sidebar, the view bar, the controls, closed expanders
    assert len(boxes) == 1 and len(boxes[0]) == 6
    for box in boxes[0]:  # drawn again for the paper: within its width, not blank
        assert box["left"] >= -1 and box["right"] <= box["page"] + 1 and box["height"] > 100, box


def test_a_dark_page_prints_on_light_paper_with_its_charts_in_the_light_themes_colours(browser, streamlit_url, tmp_path):
    """Printed, a dark page was a sheet of black ink with light text (Streamlit prints the page's colours), and its
    charts' light type would have been unreadable on white: it prints as a light page, its charts in the default
    theme's colours (ui/style.py PRINT_DARK_CSS, ui/chart.py PRINT_COLOURS), the screen staying dark."""
    import pypdfium2

    with opened_tab(browser, f"{streamlit_url}/?views=attention", width=1500, height=900, color_scheme="dark") as tab:
        assert tab.evaluate("() => getComputedStyle(document.querySelector('.main-svg')).backgroundColor") != (
            "rgb(255, 255, 255)")  # a dark chart on the screen
        pages = printed(tab, tmp_path / "dark.pdf")
        boxes = tab.evaluate("() => window.__printed")
    assert "3 · Attention step by step" in " ".join(pages)
    for box in boxes[0]:
        assert box["paper"] == "rgb(255, 255, 255)", box  # the default theme's paper and text colours
        assert box["ink"] == "rgb(38, 39, 48)", box
    pdf = pypdfium2.PdfDocument(str(tmp_path / "dark.pdf"))
    for i in range(len(pdf)):
        grey = np.asarray(pdf[i].render(scale=0.5).to_pil().convert("L"))
        assert np.median(grey) > 240, f"page {i + 1} is not light paper"
        assert (grey < 100).mean() > 0.002, f"page {i + 1} has no dark text on it"


# Each number written beside view 2's clocks (the chart of round panels), as shown on the screen: [panel, number, px
# right of its panel's y axis line, px above its x axis line, px under its panel's title, px left of what is right of
# it (the next panel's y tick labels and title, or the chart's right edge), the chart's scale, px from the title's
# centre to the panel's]
PHONE_CLOCK_NUMBERS = r"""() => [...document.querySelectorAll('[data-testid="stMain"] .lab-chart')]
    .filter((gd) => gd._fullLayout && (gd.layout.meta || {}).round).flatMap((gd) => {
  const L = gd._fullLayout, k = gd.__lab.scale, g = gd.querySelector('.main-svg').getBoundingClientRect();
  const titles = [...gd.querySelectorAll('.annotation')].filter((a) => a.textContent.startsWith('ω'))
    .map((a) => a.getBoundingClientRect());
  const labels = [...gd.querySelectorAll('.ytick text, .g-ytitle text, [class*="g-y"][class*="title"] text')]
    .map((t) => t.getBoundingClientRect()).filter((r) => r.width > 0);
  const lefts = Object.keys(L).filter((n) => /^xaxis\d*$/.test(n)).map((n) => g.left + L[n]._offset * k);
  return [...gd.querySelectorAll('.subplot')].flatMap((sp) => {
    const [, x, y] = sp.getAttribute('class').match(/subplot x(\d*)y(\d*)/);
    const xa = L['xaxis' + x], ya = L['yaxis' + y];
    const left = g.left + xa._offset * k, right = g.left + (xa._offset + xa._length) * k;
    const bottom = g.top + (ya._offset + ya._length) * k;
    const title = titles.find((b) => b.left < right && b.right > left);
    return [...sp.querySelectorAll('.textpoint text')].filter((t) => t.textContent).map((t) => {
      const b = t.getBoundingClientRect();
      const next = Math.min(Infinity, ...lefts.filter((l) => l > right));  // the next panel's plot starts
      const beside = labels.filter((r) => r.right > right && r.right <= next + 1 && r.bottom > b.top && r.top < b.bottom);
      const edge = Math.min(g.right, ...beside.map((r) => r.left));
      return [x || '1', t.textContent, b.left - left, bottom - b.bottom, b.top - title.bottom, edge - b.right, k,
              Math.abs((title.left + title.right - left - right) / 2)];
    });
  }); })"""


def test_on_a_phone_the_clocks_numbers_keep_inside_their_panel_clear_of_its_axes_title_and_the_next_panel(
        browser, streamlit_url):
    """A phone walk (390 and 320 px, touch): view 2's clocks, laid out for 700 px and drawn at 480 shrunk to fit, their
    type raised to a phone's (11 px as shown: 14.7 px drawn at 390, 18.3 at 320), wrote "3" and "10" across the x axis
    line, "0" into the title "ω = 57.3°", and "2", "4" and "6" on the next panel's "cos (dim 9)": the axes' ranges
    were measured for the theme's own size and type (viz.positional._clock_ranges), not the phone's. In full screen
    on a 320 px phone too."""
    found = {}
    with opened_tab(browser, f"{streamlit_url}/?views=positional", 320, 640, is_mobile=True, has_touch=True) as tab:
        for width in (320, 390):
            if width != 320:
                tab.set_viewport_size({"width": width, "height": 844})
                tab.wait_for_function("(w) => [...document.querySelectorAll('.lab-chart')].every((gd) => "
                                      "gd.__lab.size === String(gd.parentElement.parentElement.clientWidth))",
                                      arg=width)
            draw_every_chart(tab, 100)
            found[width] = tab.evaluate(PHONE_CLOCK_NUMBERS)
        tab.set_viewport_size({"width": 320, "height": 640})  # and in full screen (drawn 457 px wide at 0.7)
        tab.evaluate("() => [...document.querySelectorAll('.lab-chart')].find((gd) => (gd.layout.meta || {}).round)"
                     ".closest('.lab-chart-box').classList.add('clock-box')")
        tab.locator(".clock-box .modebar-btn[data-title^='Full screen']").click()
        tab.wait_for_function("() => { const gd = document.querySelector('.clock-box .lab-chart');"
                              " return document.fullscreenElement && gd._fullLayout.height * gd.__lab.scale"
                              " >= window.innerHeight - 1; }")
        found["320, full screen"] = tab.evaluate(PHONE_CLOCK_NUMBERS)
    for width, numbers in found.items():
        assert {panel for panel, *_ in numbers} == {"1", "2", "3"} and len(numbers) >= 10, (width, numbers)
        assert all(n[6] < 1 for n in numbers), (width, numbers)  # shown shrunk, as on a phone
        assert all(n[7] <= 2 for n in numbers), (width, numbers)  # each title over its own panel
        wrong = [n for n in numbers if min(n[2:6]) < 0]
        assert wrong == [], (width, wrong)
