"""pandas tables: tokens of a sentence, A-vs-B token differences, any figure's numbers as CSV, and a table as
a page shows it (rows that differ highlighted, gaps and True/False in words, turned for a narrow screen)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from viz.labels import named_surrogates, num, unique_labels

DIFF_HIGHLIGHT = "background-color: #ffe08a; color: #000000; font-weight: bold"
# On a dark page: a dark amber under light text, so the table's own (light) check marks still show.
DIFF_HIGHLIGHT_DARK = "background-color: #6b5310; color: #fff6d6; font-weight: bold"


def token_table(
    pieces: Sequence[str],
    ids: Sequence[int],
    offsets: Sequence[tuple[int, int]],
    *,
    text: str | None = None,
) -> pd.DataFrame:
    """One row per token: position, piece, id, character span [start, end), UTF-8 bytes.

    With `text` (the sentence) the span's own characters are shown and their bytes counted;
    without it the bytes are those of the piece. A lone surrogate is shown as its code point, ⟨U+D800⟩, as a notice
    names it (viz.labels.named_surrogates), its bytes as Encoding.bytes counts them (surrogatepass).
    """
    pieces, ids, offsets = list(pieces), list(ids), list(offsets)
    if not len(pieces) == len(ids) == len(offsets):
        raise ValueError(
            f"pieces, ids and offsets differ in length: {len(pieces)}, {len(ids)}, {len(offsets)}"
        )
    rows = []
    for pos, (piece, tid, span) in enumerate(zip(pieces, ids, offsets, strict=True)):
        start, end = (int(span[0]), int(span[1])) if span is not None else (None, None)
        row = {"position": pos, "piece": str(piece), "id": int(tid), "start": start, "end": end}
        if text is None:
            covered = str(piece)
        else:
            covered = text[start:end] if start is not None else ""
            row["text"] = named_surrogates(covered)
        raw = covered.encode("utf-8", "surrogatepass")
        row["bytes"] = raw.hex(" ")
        row["n_bytes"] = len(raw)
        rows.append(row)
    columns = ["position", "piece", "id", "start", "end"]
    columns += ["text"] if text is not None else []
    columns += ["bytes", "n_bytes"]
    return pd.DataFrame(rows, columns=columns)


def token_diff(pieces_a: Sequence[str], pieces_b: Sequence[str]) -> list[bool]:
    """True at every position where A and B hold different pieces (or only one has a token)."""
    n = max(len(pieces_a), len(pieces_b))
    return [
        i >= len(pieces_a) or i >= len(pieces_b) or pieces_a[i] != pieces_b[i] for i in range(n)
    ]


def token_comparison(
    pieces_a: Sequence[str],
    ids_a: Sequence[int],
    pieces_b: Sequence[str],
    ids_b: Sequence[int],
) -> pd.DataFrame:
    """A and B side by side, one row per position, with a `differs` column (see token_diff)."""
    differs = token_diff(pieces_a, pieces_b)
    n = len(differs)

    def padded(seq) -> list:  # None past the shorter sentence's end
        return [seq[i] if i < len(seq) else None for i in range(n)]

    return pd.DataFrame(
        {
            "position": range(n),
            "A piece": padded(pieces_a),
            "A id": pd.array(padded(ids_a), dtype="Int64"),
            "B piece": padded(pieces_b),
            "B id": pd.array(padded(ids_b), dtype="Int64"),
            "differs": differs,
        }
    )


def highlight_differences(
    frame: pd.DataFrame, *, differs: Sequence[bool] | None = None, dark: bool = False
) -> pd.io.formats.style.Styler:
    """A Styler (st.dataframe accepts it) that marks rows where `differs` is True.

    `differs` defaults to the frame's own "differs" column. Rows are highlighted and bold, so
    the difference does not rest on colour alone; `dark`: in colours for a dark page.
    """
    style = DIFF_HIGHLIGHT_DARK if dark else DIFF_HIGHLIGHT
    flags = list(frame["differs"] if differs is None else differs)
    if len(flags) != len(frame):
        raise ValueError(f"{len(flags)} flags for {len(frame)} rows")

    def styles(data: pd.DataFrame) -> pd.DataFrame:  # every cell's at once: a row-wise apply built a Series per
        # row, most of view 1's comparison table at 511 tokens (~25 of its ~60 ms a rerun, every rerun)
        cells = np.where(np.asarray(flags, dtype=bool)[:, None], style, "")
        return pd.DataFrame(np.broadcast_to(cells, data.shape), index=data.index, columns=data.columns)

    return frame.style.apply(styles, axis=None)


GAP = "—"  # what a table shows for a value that does not exist (B has no token there; no reordering)


def shown_table(
    frame: pd.DataFrame, *, differs: Sequence[bool] | None = None, dark: bool = False
) -> pd.DataFrame | pd.io.formats.style.Styler:
    """`frame` as a page shows it: rows where `differs` is True highlighted (highlight_differences),
    a missing value (None, NaN) shown as "—" rather than the word "None", and True/False as words.
    st.dataframe draws a null cell as "None" whatever a Styler's display value says, so the shown copy
    holds "—" itself; it draws a bool column as ticked and empty boxes, the ticked ones light grey on
    white (1.9:1), told apart only up close (view 6's "equivariant"). `frame`, and so its CSV, keeps
    the empty cells and the bools. A frame with none of these is returned as it is."""
    gaps = [c for c in frame.columns if frame[c].isna().any()]
    bools = [c for c in frame.columns if pd.api.types.is_bool_dtype(frame[c])]
    if differs is None and not gaps and not bools:
        return frame
    shown = frame.copy()
    for c in bools:
        shown[c] = shown[c].map({True: "True", False: "False"})
    for c in gaps:  # a number column becomes text there (floats as 6 significant digits, not float noise): one
        number = pd.api.types.is_float_dtype(shown[c])  # type per column, as Arrow (st.dataframe) needs
        shown[c] = [GAP if pd.isna(v) else (f"{v:.6g}" if number else str(v)) for v in shown[c]]
    return shown if differs is None else highlight_differences(shown, differs=differs, dark=dark)


def turned_table(frame: pd.DataFrame) -> pd.DataFrame:
    """A short, wide table whose first column names its rows (view 6's numbers: one row per model), turned for
    a narrow screen: one row per column, named by it, and one column per row, named by its first column's
    words; every value as text as the page writes it (num's 3 significant digits, True/False in words, a gap
    as GAP), since each turned column now holds several kinds. `frame` itself is left as it is (the CSV)."""
    names = [str(v) for v in frame[frame.columns[0]]]

    def written(v) -> str:
        if v is None or (isinstance(v, float) and np.isnan(v)):
            return GAP
        if isinstance(v, bool | np.bool_):
            return "True" if v else "False"
        if isinstance(v, float | np.floating):
            return num(float(v))
        return str(v)

    rest = frame.columns[1:]
    return pd.DataFrame([[written(v) for v in frame[c]] for c in rest], index=pd.Index([str(c) for c in rest]),
                        columns=names)


def matrix_frame(
    matrix: np.ndarray,
    row_labels: Sequence[object] | None = None,
    col_labels: Sequence[object] | None = None,
) -> pd.DataFrame:
    """A figure's numbers as a DataFrame for CSV download; labels are made unique ("0:I").

    A 1-D vector becomes one column named "value". Text is not HTML-escaped (CSV is not HTML).
    """
    m = np.asarray(matrix)
    if m.ndim not in (1, 2):
        raise ValueError(f"matrix_frame takes 1-D or 2-D arrays, got shape {m.shape}")
    vector = m.ndim == 1
    if vector:
        m = m.reshape(-1, 1)  # (n,) -> (n, 1)
    if row_labels is not None and len(row_labels) != m.shape[0]:
        raise ValueError(f"{len(row_labels)} row labels for {m.shape[0]} rows")
    if vector:  # its one column named as given, not numbered
        columns = [str(c) for c in (["value"] if col_labels is None else col_labels)]
    elif col_labels is None:
        columns = list(range(m.shape[1]))
    elif len(col_labels) != m.shape[1]:
        raise ValueError(f"{len(col_labels)} column labels for {m.shape[1]} columns")
    else:
        columns = unique_labels(col_labels)
    rows = unique_labels(row_labels) if row_labels is not None else list(range(m.shape[0]))
    return pd.DataFrame(m, index=pd.Index(rows, name="row"), columns=columns)
