"""User text that stays text in Streamlit's markdown (titles, captions, alerts, st.table's cells)."""

from __future__ import annotations

import re
import string

_PUNCT = re.compile("([" + re.escape(string.punctuation) + "])")


def md(text: object) -> str:
    r"""Escape every ASCII punctuation mark so markdown shows `text` literally.

    Streamlit renders titles, captions and alerts as markdown: "<img ...>" would be dropped (HTML is
    never allowed here), "**x**" would turn bold, "$x$" into LaTeX and ":red[x]" into colour. CommonMark
    lets any ASCII punctuation be backslash-escaped, which shows it as the character itself. Newlines
    become spaces (one line of text). Spaces and tabs it starts with become no-break spaces: four of them made
    markdown's code block (a bad-input walk: view 6's sentence "    <b>x</b>" on the projector, in grey type with
    its escapes shown, "\<b\>x").
    """
    flat = _PUNCT.sub(r"\\\1", " ".join(str(text).splitlines()))
    indent = len(flat) - len(flat.lstrip(" \t"))
    return "\u00a0" * indent + flat[indent:]
