"""Drawing a lab.views.ViewResult: each Panel as its title, figure and caption, and its numbers.

Page work per rerun is kept to what is visible: the numbers behind a figure and its downloads are
rendered only while their expander is open (Streamlit's lazy containers, on_change="rerun").
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Mapping

import pandas as pd
import streamlit as st
from pandas.io.formats.style import Styler

import viz
from lab.spec import FigureSpec
from lab.views import Panel, ViewResult
from ui import export as ui_export
from ui.chart import chart
from ui.state import page_is_dark
from ui.text import md
from viz.export import table_csv  # the same bytes as python -m lab.export writes
from viz.labels import num

SHOW_TABLE_CELLS = 200_000  # a table that IS the panel (tokens, numbers) is shown up to this size
SHOW_NUMBERS_CELLS = 20_000  # the numbers behind a figure are shown up to this size; larger: CSV only
# The slide theme (a projector) draws a table that is the panel, up to this many rows, as st.table: HTML, which
# the page's CSS sets in projector-sized type (ui/style.py), and True/False in words, where st.dataframe's canvas
# keeps 14 px and its faint ticked boxes. A longer table stays a scrolling st.dataframe.
SLIDE_TABLE_ROWS = 40
# A panel's own table of a few rows named by words in its first column and more columns than a phone shows (view 6's
# numbers: 3 models x 7 columns, ~890 px) is drawn twice, st.dataframe and turned (viz.turned_table, st.table: HTML,
# which wraps), and the page shows the one that fits (ui/style.py, by the width the pair has): on a 390 px phone
# st.dataframe showed the model names and two True/False columns, the numbers scrolled off to the right unsaid.
TURNED_ROWS = 6
TURNED_COLUMNS = 4  # more than this beside the row names: turned where narrow
# A token table (view 1's, with a position column) as st.dataframe is wider than a phone (a sentence's 8 columns ~450 px,
# A next to B ~340): on a 390 px phone its last columns needed a scroll inside the table that nothing hinted at. It is
# drawn twice, and where the page is narrower than it (ui/style.py NARROW_REM) the page shows these of its columns as
# HTML (st.table, which wraps: every one on a 320 px screen), with a line naming the others, which the CSV has.
PHONE_COLUMNS = ("position", "piece", "id", "bytes", "A piece", "B piece", "differs")


def _plain_index(table: pd.DataFrame) -> bool:
    """A 0..n-1 index says nothing (the token tables have a position column): hide it. Ask of the panel's own
    table: _visible_tokens' renaming turns a RangeIndex into a plain Index (view 6's table showed 0, 1, 2)."""
    return isinstance(table.index, pd.RangeIndex) and table.index.name is None


def _visible_tokens(table: pd.DataFrame) -> pd.DataFrame:
    """For display only (the CSV keeps the raw text): spaces and invisible characters in token
    columns become marks ("␣and", "⟨U+0007⟩"), so a teacher can point at every token."""
    cols = [c for c in table.columns if isinstance(c, str) and ("piece" in c or c == "text")]
    shown = table.copy()
    for c in cols:
        shown[c] = shown[c].map(lambda v: viz.visible_whitespace(v) if isinstance(v, str) else v)
    if "key" in shown.columns:  # view 5's keys, "1: like" in the CSV (as every table writes them), "1:␣like" here
        shown["key"] = shown["key"].map(_visible_label)
    # and the token labels of a figure's numbers ("3: " beside the chart's "3:␣"; a phone walk read "3:" blank)
    return shown.rename(index=_visible_label, columns=_visible_label)


# viz.labels.unique_labels: "i:piece"; view 5's context rows "v of i:piece", "w·v of i:piece"
_TOKEN_LABEL = re.compile(r"((?:[a-z·]+ of )?\d+):(.*)", re.DOTALL)


def _visible_label(label):
    """A token label "i:piece" (or a row of a token's, "v of i:piece", "w·v of i:piece", view 5's context table)
    with its piece's whitespace shown as the chart shows it; any other as it is."""
    match = _TOKEN_LABEL.fullmatch(label) if isinstance(label, str) else None
    return f"{match[1]}:{viz.visible_whitespace(match[2])}" if match else label


def _table(panel: Panel, key: str, *, numbers: bool, slide: bool = False) -> None:
    """The panel's table, its tokens' whitespace shown: a line saying it is too large to show (the CSV has it), HTML
    in the slide type (_slide_table), or st.dataframe (_dataframe). numbers: the numbers behind a figure (a smaller
    size limit). slide: a panel's own table on a projector (SLIDE_TABLE_ROWS)."""
    table = _visible_tokens(panel.table)
    cells = table.shape[0] * max(1, table.shape[1])
    limit = SHOW_NUMBERS_CELLS if numbers else SHOW_TABLE_CELLS
    if cells > limit:
        st.caption(f"{table.shape[0]:,} × {table.shape[1]:,} numbers: too many to show here; "
                   "download them as CSV.")
    elif (slide or (not numbers and _prose(table))) and table.shape[0] <= SLIDE_TABLE_ROWS:
        _slide_table(table, panel)
    else:
        _dataframe(table, panel, key, numbers=numbers)


def _dataframe(table: pd.DataFrame, panel: Panel, key: str, *, numbers: bool) -> None:
    """`table` (the panel's, as _table shows it) as a scrolling st.dataframe; a panel's own (not `numbers`) with its
    tiny values written as the notes write them, and turned as well where it is short and wide (_turns)."""
    shown = viz.shown_table(table, differs=panel.highlight, dark=page_is_dark())
    frame = getattr(shown, "data", shown)  # a Styler's frame
    # numbers shown as text where a gap ("—") is among them stay right-aligned, as their column's numbers
    # are where there is no gap (B's ids where B is the shorter sentence, next to A's)
    gaps = {c: st.column_config.TextColumn(alignment="right") for c in table.columns
            if isinstance(c, str) and pd.api.types.is_numeric_dtype(table[c])
            and not pd.api.types.is_bool_dtype(table[c]) and not pd.api.types.is_numeric_dtype(frame[c])}
    # a column with values under 1e-3 written as the notes beside it write them (viz.labels.num: "3.58e−07"; st.dataframe's
    # own format cut 5.96e-07 to 0.0000005, and a printf format wrote "3.58e-7" beside the verdict's 3.58e−07);
    # a Styler's display values, so that the cells keep their numbers (sorting, the CSV)
    tiny = [] if numbers else [c for c in table.columns if c not in gaps and _has_tiny(table[c])]
    if tiny:
        shown = (shown if isinstance(shown, Styler) else shown.style).format({c: num for c in tiny})
    turned = not numbers and _turns(panel.table)
    phone = [] if numbers or "position" not in table.columns else [c for c in table.columns if c in PHONE_COLUMNS]
    # up to SLIDE_TABLE_ROWS, as a slide's HTML tables: each is built on every rerun at any width, the CSS showing it on
    # a phone only, and at 511 tokens A's, B's and their comparison's cost ~67 ms a rerun of view 1 (a review); a
    # longer table scrolls in st.dataframe on a phone as it does anyway
    phone = phone if len(phone) < table.shape[1] and table.shape[0] <= SLIDE_TABLE_ROWS else []
    pair = f"turned-{key}" if turned else f"narrow-{key}" if phone else None
    with st.container(key=pair) if pair else contextlib.nullcontext():
        st.dataframe(shown, key=f"table-{key}", hide_index=_plain_index(panel.table), column_config=gaps or None)
        if turned:  # shown instead where the pair is narrower than the table (ui/style.py)
            st.table(as_text(viz.turned_table(table)))
        if phone:  # shown instead on a phone (ui/style.py)
            _slide_table(table[phone], panel)
            # said to be columns: "start, end, text, n_bytes: in the CSV" read as a list of something unsaid (a words walk)
            others = [str(c) for c in table.columns if c not in phone]
            st.caption(md(f"{'Columns' if len(others) > 1 else 'Column'} {', '.join(others)}: in the CSV below, or on "
                          "a wider screen."))


def _prose(table: pd.DataFrame) -> bool:
    """A panel's own table of text alone (the translations: view 6's, view 7's after training), shown as HTML at every
    width, where it wraps (a phone walk: at 390 px st.dataframe showed a long sentence, or the Chinese and the
    reference, and the translations, the table's point, were a scroll inside it that nothing hinted at)."""
    return table.shape[1] > 1 and not any(pd.api.types.is_numeric_dtype(table[c]) or pd.api.types.is_bool_dtype(table[c])
                                          for c in table.columns)


def _turns(table: pd.DataFrame) -> bool:
    """A few rows named by words in the first column, and more columns than a phone's width shows (TURNED_ROWS,
    TURNED_COLUMNS): view 6's numbers, not the tokens (a position column) nor the translations (three)."""
    return (_plain_index(table) and 0 < table.shape[0] <= TURNED_ROWS and table.shape[1] - 1 > TURNED_COLUMNS
            and not pd.api.types.is_numeric_dtype(table[table.columns[0]]))


def as_text(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` for st.table, which renders every cell, row name and column name as markdown: its text escaped (md),
    so that it shows as typed (a bad-input walk: on the projector the piece "#" was an empty heading, "-" a bullet,
    and view 6's sentence "**bold** $x$" bold and LaTeX), its numbers left as they are."""

    def text(value):
        return md(value) if isinstance(value, str) else value

    shown = frame.copy()
    for c in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[c]):  # text (or text and gaps); numbers and bools keep their type
            shown[c] = frame[c].map(text)
    return shown.rename(index=text, columns=text)


def _slide_table(table: pd.DataFrame, panel: Panel) -> None:
    """A panel's own table on a projector, as HTML in the slide type (st.table; a token table's first columns on a
    phone too, _dataframe, in the page's type): where its index is bare row
    numbers, its first column of words as the row names (view 6's "without PE"), or with none where that column
    is numbers (the tokens' positions, which lesson step 1 names: a teacher's walk found them gone), and floats
    as the notes beside them write them, viz.labels.num (a regression walk: the pandas default wrote view 6's 5.96e-07 as
    0.0000, beside row numbers 0, 1, 2; a teacher's walk: the table's 2.384e-07 beside the verdict's 2.38e−07)."""
    plain = _plain_index(panel.table)
    table = as_text(table)
    names = plain and table.shape[1] > 1 and not pd.api.types.is_numeric_dtype(table[table.columns[0]])
    if names:
        table = table.set_index(table.columns[0])
    shown = viz.shown_table(table, differs=panel.highlight, dark=page_is_dark())
    styler = shown if isinstance(shown, Styler) else shown.style
    frame = styler.data
    floats = {c: num for c in frame.columns if pd.api.types.is_float_dtype(frame[c])}
    st.table(styler.format(floats) if floats else shown, hide_index=plain and not names)


def _has_tiny(column: pd.Series) -> bool:
    """A float column holding a value other than 0 under 1e-3 in size (view 6's max differences, ~1e-7)."""
    if not pd.api.types.is_float_dtype(column):
        return False
    size = column.abs()
    return bool(((size > 0) & (size < 1e-3)).any())


def render_panel(panel: Panel, view: str, spec: FigureSpec, row: str = "") -> None:
    """Title, figure, caption; a panel that is only a table shows it. The numbers behind a figure and
    its downloads are drawn only when asked for (a lazy expander): a rerun sends two elements per
    figure (the chart with its title and caption, and one closed expander), not a table and four
    download buttons. Each element costs the browser time on every rerun (bench: browser redraw).
    Panels side by side share a `row` name (ui/chart.js starts their charts level)."""
    key = f"{view}-{panel.key}"
    if panel.figure is not None:  # one element: the title, the chart and the caption (ui/chart.py says why)
        chart(panel.figure, key=f"chart-{key}", config=viz.figure_config(key), title=panel.title,
              caption=panel.caption, row=row, theme=spec.theme)
    else:
        st.subheader(md(panel.title), anchor=False)
        if panel.caption:
            if panel.has_table:
                st.caption(md(panel.caption))
            else:  # an explicit icon: with none, Streamlit takes a leading emoji of the text for one
                st.info(md(panel.caption), icon=":material/info:")
        if panel.has_table:
            _table(panel, key, numbers=False, slide=spec.theme == "slide")
            csv_button(panel, key)
        return
    # One lazy expander per figure (one element per rerun while closed): open, it draws the downloads and the
    # numbers (reading panel.table builds the table: lab.views.Panel makes tables on demand).
    label = ("The numbers behind this figure · CSV, SVG, PDF, PNG" if panel.has_table
             else "Download this figure · SVG, PDF, PNG")
    more = st.expander(label, key=f"numbers-{key}", on_change="rerun")
    with more:
        if more.open:
            with st.container(horizontal=True, gap="small", key=f"downloads-{key}"):
                if panel.has_table:
                    csv_button(panel, key)
                ui_export.export_buttons(panel.figure, f"export-{key}", spec)
            if panel.has_table:
                _table(panel, key, numbers=True)


def csv_button(panel: Panel, key: str) -> None:
    """The panel's numbers as CSV, built (table included) only when clicked."""
    st.download_button("CSV", data=lambda: table_csv(panel.table), file_name=f"{key}.csv", mime="text/csv",
                       key=f"csv-{key}", on_click="ignore", icon=":material/download:",
                       help="The numbers of this panel as CSV (UTF-8)")


def render_result(result: ViewResult, view: str, spec: FigureSpec,
                  after: Mapping[str, Callable[[], None]] | None = None, side_by_side: bool = False) -> None:
    """Notices first (a cut input must be seen), then the hint, then every panel; after[key]() runs
    right after the panel with that key (e.g. the heads view's "open this head" buttons). side_by_side puts
    each "<name>-pe" panel in a column next to its "<name>-nope" twin, or right under it where two would not
    fit side by side (SIDE_BY_SIDE)."""
    for notice in result.notices:
        st.warning(md(notice), icon=":material/content_cut:" if "only the first" in notice else ":material/warning:")
    # a hint beside panels (what they show) goes under them on a projector, as the model line does: the first chart
    # stays on a 720p screen (the random decoder's hint pushed lesson step 3's below it); with nothing drawn, first
    hint_last = spec.theme == "slide" and bool(result.panels)
    if result.hint and not hint_last:
        st.info(md(result.hint), icon=":material/lightbulb:")
    panels = {p.key: p for p in result.panels}
    done: set[str] = set()
    for panel in result.panels:
        if panel.key in done:
            continue
        twin = _twin(panel.key, panels) if side_by_side else None
        if twin is None:
            render_panel(panel, view, spec)
        elif panel.key.rpartition("-")[0] not in SIDE_BY_SIDE:  # too wide for half the page: right under it
            render_panel(panel, view, spec)
            render_panel(twin, view, spec)
            done.add(twin.key)
        else:  # "…-pe" next to "…-nope": the same figure with and without positional encoding
            row = f"{view}-{panel.key.rpartition('-')[0]}"  # e.g. "order-diff": both titles one height
            left, right = st.container(key=f"twins-{row}").columns(2, gap="medium")
            with left:
                render_panel(panel, view, spec, row)
            with right:
                render_panel(twin, view, spec, row)
            done.add(twin.key)
        if after and panel.key in after:
            after[panel.key]()
    if result.hint and hint_last:
        st.info(md(result.hint), icon=":material/lightbulb:")


SIDE_BY_SIDE = ("verdict", "diff", "pooled")  # narrow enough for half the page (not the 3-panel "aligned")


def _twin(key: str, panels: Mapping[str, Panel]) -> Panel | None:
    """The "<name>-nope" panel of a "<name>-pe" one: beside it (SIDE_BY_SIDE), or right under it (the others:
    without PE, "aligned" came after every pair, three charts away from its twin)."""
    name, _, kind = key.rpartition("-")
    return panels.get(f"{name}-nope") if kind == "pe" else None
