"""The real app (`streamlit run app.py`) in headless Chromium: type, switch views, see the charts.

Full-page screenshots of every view land in artifacts/screenshots/ (git-ignored): look at them.
"""

from __future__ import annotations

import pytest
from conftest import CHROMIUM, SCREENSHOTS, trained_available

from scripts.screenshots import VIEW_LABELS, full_screenshot, open_view, type_sentence, wait_idle

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
    tab.goto(streamlit_url)
    wait_idle(tab)
    yield tab
    context.close()


def drawn_charts(page) -> int:
    """Plotly charts that really drew: a .js-plotly-plot holding its SVG (waits for the first one)."""
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
    return page.locator(".js-plotly-plot .main-svg").count()


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
    assert error.count() == 1 and "n_heads" in error.inner_text()
    full_screenshot(page, str(SCREENSHOTS / "browser-impossible.png"))
