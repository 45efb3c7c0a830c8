"""The page's own CSS: a few rules where Streamlit has no option. One <style>, sent by app.py on every
full run (st.html sends a style-only body to the page's event container: it takes no space); fragment
reruns keep it.

- The layer buttons' shortcut hint reads "⇧←" rather than Streamlit's "Shift + ←" (about 40 px less
  each), so that every control of the widest view (5 · One query, ui/look.py) fits one row on a
  1500-px screen. Streamlit has no option for the hint's text; the <kbd> keeps the full name for
  screen readers (its aria-label), and the button's tooltip says it in words.
- The ◂ ▸ buttons' labels ("Previous head", ui/look.py) and the view's heading (an h2 between the page's
  title and the panels' h3, app.py) are there for screen readers only: hidden from the eye, where the
  arrows beside the select box and the view bar say it.
- A control reached with the keyboard (Tab) shows a 2 px ring in the text's colour: Streamlit's own, a
  half-transparent shadow in the primary colour, was ~2.2:1 against the page.
- The chart toolbars' buttons (plotly.js) reached with Tab show the same 2 px ring, in the figure's text colour
  (ui/chart.js sets it on the chart), and their name as on hover: plotly.js's ring was 1 px black, ~1.1:1 on
  the dark page, so the focus was lost among the icons (an accessibility walk, dark mode). So does a radio's
  option (Sentence A / B, the sidebar's), where Streamlit's mark was a faint grey box.
- Text in Streamlit's primary colour or faded, raised to 4.5:1 (WCAG AA) in light and dark (the same walk):
  the chosen view's name in the view bar (red on its pink tint, 3.9:1 light and 3.2:1 dark) is in the text's
  colour and underlined, so the choice is not told by colour alone; a slider's value over its thumb (3.9:1
  on the dark page) is in the text's colour; the ◂ ▸ buttons' key hints (at 0.6: 3.9:1 on white) at 0.8.
- Captions (Streamlit's, and the charts' own in ui/chart.py) at 0.75 of the text colour, not Streamlit's 0.6:
  on a white page that was #828180, 3.9:1, under the 4.5:1 of WCAG AA for text of that size; now ~6:1 (and
  ~7.5:1 on the dark page). They carry the views' explanations (why ÷√d_k, what the model is).
- A folded sidebar (a slide link opens so, a phone after a tap) is hidden, not only moved off the screen: its
  controls were the first Tab stops, focused where nobody could see them.
- A short, wide table that is a panel (view 6's numbers) comes twice, as st.dataframe and turned (ui/panels.py),
  in a container that is measured (container-type): narrower than the table (a phone, a laptop with the sidebar
  open) the turned one is shown, the numbers as rows; a phone showed three columns, the numbers scrolled off. So
  are view 1's token tables, narrower than NARROW_REM: their first columns as HTML, which wraps, and a line naming
  the others (a phone walk: their last columns were a scroll inside the table that nothing hinted at).
- Text panels side by side (ui/panels.py render_result: a container keyed "twins-<row>", e.g. the
  two verdicts of view 6) are one height, so the pair reads as a pair whatever each one says; and
  like the twin charts (ui/chart.py), the pair stacks where either would be narrower than 28rem.
- The slide theme (a projector, often 1280×720) starts the page closer to the top (Streamlit leaves
  6rem above the title; the toolbar needs 3.75rem), so that more of the first figure is on the screen,
  and sets the main area's own text (captions, notes, the charts' captions, st.table's cells: ui/panels.py
  draws a panel's table so in that theme) at 18 px, about the slide charts' type as shown (22 px × ~0.87),
  where Streamlit's captions are 14 px; the charts' captions darker too. Widgets keep their size, and so
  does the view's intro above the figures, which would otherwise push the first chart off a 720-px screen.
  For the same room, the page's title is smaller, the model line goes under the figures (app.py), and a
  chart's heading (ui/chart.py) is for screen readers only: the figure's own title, in the chart, says
  the same in the projector's type (the heading took ~60 px above each chart).
"""

from __future__ import annotations

import streamlit as st

# visually hidden, still read by screen readers (the usual clip pattern), for the rules below
HIDDEN = """position: absolute !important; width: 1px !important; height: 1px !important; min-width: 0 !important;
  min-height: 0 !important; overflow: hidden !important; clip-path: inset(50%); white-space: nowrap; margin: 0 !important;
  padding: 0 !important;"""

CSS = """
.st-key-layer-prev kbd, .st-key-layer-next kbd { font-size: 0; }
.st-key-layer-prev kbd::after, .st-key-layer-next kbd::after { font-size: 0.75rem; }
.st-key-layer-prev kbd::after { content: "⇧←"; }
.st-key-layer-next kbd::after { content: "⇧→"; }
[data-testid="stCaptionContainer"] { opacity: 0.75; }
:is(button, a, summary, [role="radio"], [role="tab"]):focus-visible { outline: 2px solid currentColor; outline-offset: 2px; }
/* a radio option (Sentence A/B, the sidebar's) reached with Tab: Streamlit's own mark was a faint grey box */
[data-testid="stRadio"] label:has(input:focus-visible) { outline: 2px solid currentColor; outline-offset: 2px; }
.js-plotly-plot .plotly .modebar-btn { color: inherit; }  /* a button's own is the browser's black or white */
/* a group whose buttons the app removed (ui/chart.js toolbarConfig): plotly.js keeps it, 8 px of the toolbar's
   background with nothing in it, which a title on a touch screen kept clear of too */
.js-plotly-plot .plotly .modebar-group:empty { display: none; }
.js-plotly-plot .plotly .modebar-btn:focus-visible { outline: 2px solid currentColor; outline-offset: 1px; }
.js-plotly-plot .plotly .modebar-btn[data-title]:focus-visible::before,
.js-plotly-plot .plotly .modebar-btn[data-title]:focus-visible::after { display: block; opacity: 1; }
.st-key-view [role="radio"][aria-checked="true"] { color: inherit; text-decoration: underline 2px;
  text-underline-offset: 0.3em; }
[data-testid="stSliderThumbValue"] { color: inherit; }
/* a slider's thumb reached with Tab: Streamlit's mark was a halo of its own red at half opacity, 2.2:1 on white */
[data-testid="stSlider"] div:has(> div > input[type="range"]:focus-visible) { outline: 2px solid currentColor;
  outline-offset: 2px; }
[data-testid="stMain"] button kbd { opacity: 0.8; }
/* the Examples menu's item under the arrow keys: Streamlit marks it by a background 1.1:1 on white */
[role="menuitem"]:focus-visible { outline: 2px solid currentColor; outline-offset: -2px; }
/* on a phone the Examples menu was as wide as its longest line (393 px on a 390 px screen): it wraps instead */
[data-testid="stMenuButtonBody"] { max-width: calc(100vw - 1rem); }
[data-testid="stMenuButtonBody"] :is([role="menuitem"], [role="menuitem"] *) { white-space: normal !important;
  overflow: visible !important; height: auto !important; }
/* a touch screen (a phone walk): a table's toolbar, shown all the time there, sat on its heading ("Sentence A: 3
   tokens (" cut), the charts' toolbar buttons were 18 x 16 px to tap (WCAG 2.2 asks 24 x 24; then 23 at 360 px and 20
   at 320, shown at a narrower phone's smaller scale), and the ◂ ▸ buttons showed keys to press */
@media (hover: none) {
  [data-testid="stElementContainer"]:has([data-testid="stDataFrame"]) { padding-top: 2.75rem; }
  .js-plotly-plot .modebar-btn { padding: 6px !important; height: auto !important; }  /* 34 px, or more shrunk: */
  /* 25 px as shown, at the chart's scale (ui/chart.js draw: 0.75 on a 390 px phone, 0.68 at 360, 0.6 at 320); the
     toolbar's width, before one is drawn, reckoned by these numbers (ui/chart.js touchToolbar) */
  .js-plotly-plot .modebar-btn svg { width: max(22px, 25px / var(--lab-scale, 1) - 12px);
    height: max(22px, 25px / var(--lab-scale, 1) - 12px); }
  [data-testid="stMain"] button kbd { display: none; }  /* the ◂ ▸ buttons' key hints (⇧←): no keyboard here */
}
/* for screen readers only (the ◂ ▸ labels, the view's heading, the status line and their layout wrappers): one
   visually hidden rule */
:is(.st-key-layer-prev, .st-key-layer-next, .st-key-head-prev, .st-key-head-next) button [data-testid="stMarkdownContainer"],
[data-testid="stLayoutWrapper"]:has(> :is(.st-key-view-heading, .st-key-said, .st-key-said-train)),
:is(.st-key-view-heading, .st-key-said, .st-key-said-train) { __HIDDEN__ }
/* a folded sidebar is off the screen, not out of the way: its controls were the page's first Tab stops, focused
   out of sight (a teacher's walk: ↓ on the hidden Model box opened its list off the screen). Hidden, they are no
   Tab stops and no screen reader's; the » button that opens it is outside it */
[data-testid="stSidebar"][data-collapsed="true"], [data-testid="stSidebar"][data-collapsed="true"] * { visibility: hidden !important; }
[class*="st-key-twins-"] [data-testid="stColumn"] { min-width: min(100%, 28rem); }
/* a short, wide table and the same turned (ui/panels.py TURNED_*): the one that fits the width the pair has */
[class*="st-key-turned-"] { container-type: inline-size; }
@container (width >= __TURNED_REM__rem) {
  [class*="st-key-turned-"] [data-testid="stElementContainer"]:has([data-testid="stTable"]) { display: none; } }
@container not (width >= __TURNED_REM__rem) {  /* not "width less than": st.html drops the CSS after that sign */
  [class*="st-key-turned-"] [data-testid="stElementContainer"]:has([data-testid="stDataFrame"]) { display: none; } }
/* a token table and its first columns as HTML (ui/panels.py PHONE_COLUMNS): the HTML one where narrower than the table */
[class*="st-key-narrow-"] { container-type: inline-size; }
@container (width >= __NARROW_REM__rem) { [class*="st-key-narrow-"] [data-testid="stElementContainer"]:has(
  :is([data-testid="stTable"], [data-testid="stCaptionContainer"])) { display: none; } }
@container not (width >= __NARROW_REM__rem) {
  [class*="st-key-narrow-"] [data-testid="stElementContainer"]:has([data-testid="stDataFrame"]) { display: none; } }
[class*="st-key-twins-"] [data-testid="stElementContainer"]:has(> [data-testid="stAlert"]) { flex-grow: 1; }
[class*="st-key-twins-"] [data-testid="stAlert"],
[class*="st-key-twins-"] [data-testid="stAlertContainer"] { height: 100%; }
"""


SLIDE_CSS = """
[data-testid="stMainBlockContainer"] { padding-top: 3.75rem; }
[data-testid="stMain"] h1 { font-size: 1.75rem; padding: 0 0 0.25rem 0; }
[data-testid="stMain"] .lab-chart-title { __HIDDEN__ }
[data-testid="stMain"] :is([data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p, .stMarkdown p,
  [data-testid="stAlertContainer"] p):not([data-testid="stWidgetLabel"] *, .st-key-view-intro *, .st-key-model-line *),
[data-testid="stMain"] .lab-chart-caption { font-size: 1.125rem; }
[data-testid="stMain"] .lab-chart-caption { opacity: 0.8; }
[data-testid="stMain"] [data-testid="stTable"] th, [data-testid="stMain"] [data-testid="stTable"] td {
  font-size: 1.125rem; }
[data-testid="stMain"] .st-key-translate_step p { font-size: 1.125rem; }
"""


# st.dataframe's width for view 6's numbers (its columns as wide as their headings: ~890 px): narrower, the table is
# shown turned (ui/panels.py), its numbers scrolled out of sight otherwise
TURNED_REM = 58
# st.dataframe's width for a sentence's token table (8 columns, ~450 px at a short sentence's): narrower, its first
# columns are shown as HTML (ui/panels.py PHONE_COLUMNS)
NARROW_REM = 30


# Printed (Ctrl+P, the app menu's Print, Save as PDF: a teacher's handout), the page is the view's heading, the
# sentences, the intro, the model line and the panels, on the paper's whole width: the sidebar, the toolbar, the view
# bar, the layer and head controls, the buttons, the downloads, closed expanders and the charts' toolbars are screen
# things (a print walk: the sidebar took a sixth of every page's width, the view bar and eleven closed expanders a
# third of a page, and no page said which view it was: its heading is for screen readers only on the screen). A chart
# (its title, plot and caption), a table and a notice are not cut across a page break; a heading stays with what
# follows it. The charts are drawn again at the paper's width (ui/chart.js redrawForPrint), where they were cut at its right edge.
PRINT_CSS = """
@media print {
  @page { margin: 12mm; }
  [data-testid="stSidebar"], [data-testid="stHeader"], [data-testid="stToolbar"], [data-testid="stDecoration"],
  [data-testid="stStatusWidget"], [data-testid="stSidebarCollapsedControl"], .st-key-view, .st-key-look,
  .st-key-swap, .st-key-preset, .st-key-open-heads, [data-testid="stTooltipIcon"], .modebar-container,
  [data-testid="stMain"] [data-testid="stElementContainer"]:has(> :is([data-testid="stButton"],
    [data-testid="stDownloadButton"], [data-testid="stPopover"])),
  [data-testid="stMain"] [data-testid="stExpander"]:has(details:not([open])),
  [data-testid="stMain"] [data-testid="stExpander"] :is([data-testid="stButton"], [data-testid="stDownloadButton"],
    [data-testid="stPopover"]) { display: none !important; }
  [data-testid="stMain"] { position: static !important; overflow: visible !important; }
  /* at 0.85 (zoom): two of view 3's charts to a page, its text ~10pt; at the screen's size each took a page of its
     own. The charts are drawn for the width they have (ui/chart.js), in the zoomed box's own px */
  [data-testid="stMainBlockContainer"] { padding: 0 !important; max-width: none !important; zoom: 0.85; }
  [data-testid="stLayoutWrapper"]:has(> .st-key-view-heading), .st-key-view-heading { position: static !important;
    width: auto !important; height: auto !important; overflow: visible !important; clip-path: none !important;
    white-space: normal !important; }
  [class*="st-key-chart-"], [data-testid="stTable"], [data-testid="stDataFrame"], [data-testid="stAlert"],
  [data-testid="stCaptionContainer"] { break-inside: avoid; }
  [data-testid="stElementContainer"]:has(> [data-testid="stHeading"]) { break-after: avoid; }
  [class*="st-key-chart-"], .lab-chart-box { max-width: 100%; overflow: hidden; }
}
"""

# A dark page printed: light paper, as a printed page is expected to be. Streamlit prints the page's colours
# (print-color-adjust: exact), which put light text on a black sheet; the page turns white and its text dark, the
# tables' canvas (st.dataframe) turned back to dark on light, and the charts are drawn in the default theme's colours
# (ui/chart.py).
PRINT_DARK_CSS = """
@media print {
  html, body, .stApp, [data-testid="stApp"], [data-testid="stAppViewContainer"], [data-testid="stMain"],
  [data-testid="stMainBlockContainer"] { background: #ffffff !important; color: #31333f !important; }
  [data-testid="stMain"] :is(h1, h2, h3, h4, p, li, span, label, div, td, th, code, input, summary, a) {
    color: #31333f !important; -webkit-text-fill-color: #31333f !important; }
  [data-testid="stMain"] :is(input, [data-baseweb="input"], [data-baseweb="input"] *, [data-baseweb="base-input"],
    [data-testid$="RootElement"], [data-testid="stAlertContainer"], [data-testid="stTable"] *, code) {
    background: transparent !important;
    border-color: #d0d0d0 !important; }
  [data-testid="stMain"] [data-testid="stDataFrame"] canvas { filter: invert(1) hue-rotate(180deg); }
}
"""


def page_css(slide: bool = False, dark: bool = False) -> str:
    """The page's CSS: every page's rules, and the slide theme's after them, then the printed page's (a dark page's
    too where `dark`). No "<" anywhere in it, not even in a comment: st.html drops every rule after one, with
    nothing said (tests/test_app.py checks)."""
    css = CSS + (SLIDE_CSS if slide else "") + PRINT_CSS + (PRINT_DARK_CSS if dark else "")
    return (css.replace("__TURNED_REM__", str(TURNED_REM)).replace("__NARROW_REM__", str(NARROW_REM))
            .replace("__HIDDEN__", HIDDEN))


def page_style(slide: bool = False, dark: bool = False) -> None:
    st.html(f"<style>{page_css(slide, dark)}</style>")
