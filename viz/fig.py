"""Figures as plain dicts: the part of the go.Figure API our builders use, ~100x cheaper.

plotly.graph_objects validates and re-wraps every property on every `update_layout`,
`update_xaxes` and `add_trace` (a heatmap figure took ~50 ms, nearly all of it there). The
builders in viz/ describe figures with the same calls on a `Fig` instead, which only merges
plain dicts (`Node`), and hand back a real `go.Figure` at the end (`Fig.to_go`), built with
`_validate=False` from the finished dict. What plotly's validation would have added is done here
once and cached: template names become the template's dict and colour-scale names become their
colour lists, exactly as plotly writes them (tests/test_viz_fig.py checks every view's figures
against a fully validated go.Figure of the same dict).

Semantics follow plotly's: keyword "magic underscores" (`title_text=` = `title=dict(text=)`),
nested dicts merge and everything else (lists, arrays, strings) replaces, `None` unsets,
`update_xaxes(row=, col=)` picks one subplot's axis, and no row/col means every x axis.
"""

from __future__ import annotations

import copy
from functools import cache, lru_cache

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from _plotly_utils.utils import to_typed_array_spec
from plotly.graph_objects import Figure as GoFigure  # noqa: I001 - bound once (go.X is a lazy lookup)

# Leaves whose dict values are data, not properties: their keys are never split at "_".
_OPAQUE = frozenset({"meta", "customdata"})
# Every plotly property name with an underscore in it (all other underscores are path separators).
_UNDERSCORED = frozenset({"paper_bgcolor", "plot_bgcolor", "error_x", "error_y", "error_z", "copy_ystyle",
                          "copy_zstyle"})
_TRACE_TYPES_KEPT = ("heatmap", "scatter", "bar")  # template trace defaults our figures can use


class Node(dict):
    """A plotly property dict with attribute access: `n.title.text`; unset leaves read as None."""

    __slots__ = ()

    def __getattr__(self, name: str):
        if name[:2] == "__":
            raise AttributeError(name)
        return self.get(name)

    def __setattr__(self, name: str, value) -> None:
        if value is None:
            self.pop(name, None)
        else:
            self[name] = _node(value)

    def child(self, name: str) -> Node:
        """The sub-dict `name`, created empty when unset (like plotly's compound properties)."""
        got = self.get(name)
        if not isinstance(got, Node):
            got = self[name] = Node()
        return got

    def update(self, other: dict | None = None, **kwargs) -> Node:  # type: ignore[override]
        """Deep merge, plotly style (magic underscores, dicts merge, None unsets); returns self.

        A Node `other` is already split into paths: it is merged without re-parsing, and copied
        (Patch), so it is never shared with this tree.
        """
        if isinstance(other, Node):
            Patch(other).apply(self)
            other = None
        for src in (other or {}), kwargs:
            for key, value in src.items():
                _merge(self, key, value)
        return self


def node(value: dict) -> Node:
    """A dict as a Node tree (keys split at magic underscores): parse a patch once, apply it often."""
    return _node(value)


class Patch:
    """A Node patch prepared for applying to many targets: `patch.apply(node)` does what
    `node.update(patch_node)` does (nested dicts merge, the patch's leaves win) without walking
    and copying the patch tree each time (a theme styles every axis of every figure): the plain
    leaves of each level go in with one dict.update."""

    __slots__ = ("flat", "lists", "children")

    def __init__(self, tree: Node):
        self.flat: dict = {}  # key -> str/number leaf, set as is
        self.lists: dict = {}  # key -> list leaf (of numbers, strings or Nodes), copied on each apply
        self.children: dict[str, Patch] = {}  # key -> the patch of a sub-dict
        for key, value in tree.items():
            if isinstance(value, Node):
                self.children[key] = Patch(value)
            elif isinstance(value, list):
                self.lists[key] = value
            else:
                self.flat[key] = value

    def apply(self, target: Node) -> Node:
        dict.update(target, self.flat)
        for key, value in self.lists.items():
            target[key] = [_copy(v) for v in value]
        for key, sub in self.children.items():
            child = target.get(key)
            if type(child) is not Node:
                child = target[key] = _titled(key, child)
            sub.apply(child)
        return target


def _copy(tree):
    """A copy of a Node tree (and of lists of Nodes in it); other leaves are shared."""
    if isinstance(tree, Node):
        return Node({k: _copy(v) for k, v in tree.items()})
    if isinstance(tree, list) and tree and isinstance(tree[0], Node):
        return [_copy(v) for v in tree]
    return tree


def _node(value, opaque: bool = False):
    """Dicts (and dicts inside lists) as Nodes, keys split at "_" into nested dicts."""
    if isinstance(value, dict) and not isinstance(value, Node):
        if opaque:
            return dict(value)
        out = Node()
        for k, v in value.items():
            _merge(out, k, v)
        return out
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], dict):
        return [_node(v, opaque) for v in value]
    return value


def _split(key: str) -> tuple[str, str]:
    """("title", "font_size") from "title_font_size"; plotly's own underscored names stay whole."""
    if key in _OPAQUE or key in _UNDERSCORED:
        return key, ""
    if "_" not in key:
        return key, ""
    for name in _UNDERSCORED:
        if key.startswith(name + "_"):
            return name, key[len(name) + 1:]
    head, _, rest = key.partition("_")
    return head, rest


@lru_cache(maxsize=8192)
def _path(key: str) -> tuple[str, ...]:
    """("title", "font", "size") from "title_font_size" (cached: the same few keys recur)."""
    parts = []
    while True:
        head, key = _split(key)
        parts.append(head)
        if not key:
            return tuple(parts)


_SCALARS = frozenset({str, int, float, bool})


def _titled(key: str, old) -> Node:
    """The Node a nested write goes into: `old` where it is one; a title given as a bare string (plotly's
    shorthand, `xaxis_title="dimension"`) as {"text": ...}, so that a later `title_font` keeps its text."""
    if type(old) is Node:
        return old
    return Node(text=old) if key == "title" and isinstance(old, str) else Node()


def _merge(target: Node, key: str, value) -> None:
    """target[key] = value with plotly's update rules; "a_b_c" writes target.a.b.c."""
    if "_" in key:
        *heads, key = _path(key)
        for head in heads:
            sub = target.get(head)
            if type(sub) is not Node:
                sub = target[head] = _titled(head, sub)
            target = sub
    if type(value) in _SCALARS:  # most properties: set as they are
        target[key] = value
    elif value is None:
        target.pop(key, None)
    elif isinstance(value, dict):
        if key in _OPAQUE:
            target[key] = dict(value)
            return
        old = target.get(key)
        if isinstance(old, Node) or isinstance(old, str) and key == "title":
            old = target[key] = _titled(key, old)
            for k, v in value.items():
                _merge(old, k, v)
        else:
            target[key] = _node(value)
    elif isinstance(value, (list, tuple)) and value and isinstance(value[0], dict):
        target[key] = [_node(v, key in _OPAQUE) for v in value]
    else:
        target[key] = value


def trace(type_: str, **props) -> Node:
    """A trace dict: trace("heatmap", z=..., colorbar_title_text=...)."""
    out = Node(type=type_)
    for key, value in props.items():
        _merge(out, key, value)
    return out


def heatmap(**props) -> Node:
    return trace("heatmap", **props)


def scatter(**props) -> Node:
    return trace("scatter", **props)


def bar(**props) -> Node:
    return trace("bar", **props)


def _axis_suffix(index: int) -> str:
    return "" if index == 1 else str(index)


class Fig:
    """A figure under construction: `.data` (list of Node), `.layout` (Node); go.Figure-like calls."""

    def __init__(self, data=None, layout: dict | None = None, *, grid: tuple[int, int] | None = None):
        if isinstance(data, dict):  # a trace
            data = [data]
        self.data: list[Node] = [_node(t) if not isinstance(t, Node) else t for t in (data or [])]
        self.layout: Node = _node(layout or {}) if not isinstance(layout, Node) else layout
        self._grid = grid  # (rows, cols) of a subplot grid, axes numbered row-major

    # -- subplots ---------------------------------------------------------------------------
    def _index(self, row: int | None, col: int | None) -> int:
        """The subplot number (1, 2, ..., row-major: the "2" of xaxis2) at row, col."""
        if row is None and col is None:
            return 1
        rows, cols = self._grid or (1, 1)
        r, c = row or 1, col or 1
        if not (1 <= r <= rows and 1 <= c <= cols):
            raise ValueError(f"row {r}, col {c} is outside the {rows}x{cols} subplot grid")
        return (r - 1) * cols + c

    def _axes(self, letter: str, row: int | None = None, col: int | None = None) -> list[Node]:
        """The `letter` ("x" or "y") axes that row and col pick, as update_xaxes picks them: one subplot's, a row's,
        a column's; neither given, every such axis of the layout (the first one, created empty, where there is none)."""
        if row is not None or col is not None:
            if self._grid is None:
                raise ValueError("row/col need a figure made by subplots()")
            if row is not None and col is not None:  # one subplot's (a panel's own axes: most calls)
                return [self.layout.child(f"{letter}axis{_axis_suffix(self._index(row, col))}")]
            rows, cols = self._grid
            wanted = [
                self._index(r, c)
                for r in ([row] if row is not None else range(1, rows + 1))
                for c in ([col] if col is not None else range(1, cols + 1))
            ]
            return [self.layout.child(f"{letter}axis{_axis_suffix(i)}") for i in wanted]
        keys = [k for k in self.layout if k.startswith(f"{letter}axis") and (k[5:] == "" or k[5:].isdigit())]
        if not keys:
            keys = [f"{letter}axis"]
        return [self.layout.child(k) for k in keys]

    # -- the go.Figure calls ----------------------------------------------------------------
    def add_trace(self, trace_: dict, row: int | None = None, col: int | None = None) -> Fig:
        t = trace_ if isinstance(trace_, Node) else _node(dict(trace_))
        if row is not None or col is not None:
            i = self._index(row, col)
            t["xaxis"], t["yaxis"] = f"x{_axis_suffix(i)}", f"y{_axis_suffix(i)}"
        self.data.append(t)
        return self

    def update_layout(self, patch: dict | None = None, **kwargs) -> Fig:
        self.layout.update(patch, **kwargs)
        return self

    def update_xaxes(self, patch: dict | None = None, row: int | None = None, col: int | None = None,
                     **kwargs) -> Fig:
        for ax in self._axes("x", row, col):
            ax.update(patch, **kwargs)
        return self

    def update_yaxes(self, patch: dict | None = None, row: int | None = None, col: int | None = None,
                     **kwargs) -> Fig:
        for ax in self._axes("y", row, col):
            ax.update(patch, **kwargs)
        return self

    def add_annotation(self, patch: dict | None = None, **kwargs) -> Fig:
        ann = Node().update(patch, **kwargs)
        self.layout.setdefault("annotations", []).append(ann)
        return self

    def add_shape(self, patch: dict | None = None, **kwargs) -> Fig:
        shape = Node().update(patch, **kwargs)
        self.layout.setdefault("shapes", []).append(shape)
        return self

    def add_vline(self, x: float, **kwargs) -> Fig:
        """A vertical line across the plot at x (as plotly's add_vline writes it; single plots only)."""
        if self._grid is not None:
            raise ValueError("add_vline draws on a single plot, not a subplot grid")
        return self.add_shape(dict(type="line", x0=x, x1=x, xref="x", y0=0, y1=1, yref="y domain"), **kwargs)

    def add_label_axis(self, axis: str, anchor_at, tickvals, ticktext, *, side: str, across: float = 0.0,
                       **style) -> Fig:
        """A second axis ("x2" on top, "y2" on the right) that only labels tickvals with ticktext,
        matching the first one: the sentence's tokens over PE curves, row sums beside a heatmap.

        Plotly draws an axis only if a trace uses it: an invisible trace at anchor_at (at `across`
        on the other axis) does."""
        letter = axis[0]
        other = [across] * len(anchor_at)
        at = dict(x=anchor_at, y=other) if letter == "x" else dict(x=other, y=anchor_at)
        self.add_trace(scatter(**at, **{f"{letter}axis": axis}, mode="markers", marker=dict(opacity=0),
                               hoverinfo="skip", showlegend=False, meta={"role": "anchor"}))
        self.layout[f"{letter}axis{axis[1:]}"] = _node(dict(
            overlaying=letter, side=side, matches=letter, tickmode="array", tickvals=tickvals,
            ticktext=ticktext, showgrid=False, zeroline=False, **style))
        return self

    # -- the result -------------------------------------------------------------------------
    def to_dict(self) -> dict:
        layout = dict(self.layout)
        template = layout.get("template")
        if isinstance(template, str):
            layout["template"] = _template(template)  # shared and never mutated: readers copy
        for key, value in layout.items():
            if key.startswith("coloraxis") and isinstance(value, dict) and isinstance(value.get("colorscale"), str):
                layout[key] = Node(value, colorscale=colorscale(value["colorscale"]))
        data = []
        for t in self.data:
            if isinstance(t.get("colorscale"), str):
                t = Node(t, colorscale=colorscale(t["colorscale"]))
            data.append(t)
        return {"data": data, "layout": layout}

    def to_go(self) -> go.Figure:
        """The finished figure: a go.Figure (not validated again: see the module docstring)."""
        return Figure(self.to_dict())


def _fresh(obj):
    """A copy of a JSON-like tree: new dicts and lists, shared str/number leaves.

    A list whose first item is a leaf is copied in one step (list(obj)), as _sendable made it:
    plotly's data arrays are homogeneous, and element by element a heatmap's rows cost ~1,500
    calls a figure, a fifth of a fragment rerun's script time."""
    if isinstance(obj, dict):
        return {k: _fresh(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        if obj and isinstance(obj[0], (dict, list, tuple)):
            return [_fresh(v) for v in obj]
        return list(obj)
    return obj


_NOT_TYPED = frozenset({"geojson", "layer", "layers", "range"})  # plotly's convert_to_base64 skips these keys
# A figure with up to this many numbers in its arrays sends them as plain JSON lists, a larger
# one as typed arrays (base64). Streamlit's chart hands plotly.js's own copy of the figure back to
# Plotly.react after every draw; plotly.js decodes typed arrays anew on each react, sees new
# arrays and draws the whole chart a second time (a new sentence drew every chart twice). Plain
# lists keep their identity, so that second react costs ~1/8 of a draw. Above the limit (~20
# bytes a number as JSON text, ~5 as base64 float32) the smaller payload wins.
PLAIN_MAX = 16384


def _plain(a: np.ndarray):
    """A numeric array as nested lists; NaN and ±inf as None (JSON null: a gap, as NaN is)."""
    if a.dtype.kind == "f" and not np.isfinite(a).all():
        out = a.astype(object)
        out[~np.isfinite(a)] = None
        return out.tolist()
    return a.tolist()


def _arrays(obj):
    """The numpy arrays in a figure tree."""
    if isinstance(obj, np.ndarray):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _arrays(v)
    elif isinstance(obj, (list, tuple)) and obj and isinstance(obj[0], (dict, list, tuple, np.ndarray)):
        for v in obj:
            yield from _arrays(v)


def _numbers(obj) -> int:
    """How many numbers the numpy arrays in a figure tree hold."""
    return sum(a.size for a in _arrays(obj))


def _sendable(obj, key: str | None = None, plain: bool = False):
    """_fresh, with numpy arrays as plotly.js typed arrays ({"dtype", "bdata"}), or as plain lists
    (plain=True, see PLAIN_MAX): one pass doing what plotly's convert_to_base64 does to a deep copy
    (it also walks every number of every list)."""
    if isinstance(obj, dict):
        return {k: _sendable(v, k, plain) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        if key in _NOT_TYPED:
            return obj
        if plain and obj.dtype.kind in "fiub":
            return _plain(obj)
        return to_typed_array_spec(obj)
    if isinstance(obj, (list, tuple)):
        if obj and isinstance(obj[0], (dict, list, tuple, np.ndarray)):
            return [_sendable(v, None, plain) for v in obj]
        return list(obj)  # numbers and strings (plotly data arrays are homogeneous)
    return obj


class Figure(GoFigure):
    """A go.Figure whose plotly object tree is built only when something reads it.

    Building go.Figure's tree costs ~1 ms per figure even unvalidated, and the app never reads
    it: ui.chart (plotly.io.to_json) and viz.export call to_dict / to_plotly_json / to_json, served
    from the dict. Any other use (fig.layout, fig.data, update_*, ...) builds the tree first,
    so the object behaves as the go.Figure it is.
    """

    def __init__(self, fig_dict: dict):  # noqa: D107 - plotly's own __init__ runs on first use
        object.__setattr__(self, "_fast_dict", fig_dict)

    def _built(self) -> bool:
        _drop_payload(self)
        pending = self.__dict__.pop("_fast_dict", None)
        if pending is None:
            return False
        GoFigure.__init__(self, pending, _validate=False)
        return True

    def __getattr__(self, name: str):
        # Reached only when normal lookup fails, e.g. `layout` before the tree exists.
        if name != "_fast_dict" and self._built():
            return getattr(self, name)
        raise AttributeError(name)

    def to_dict(self) -> dict:
        pending = self.__dict__.get("_fast_dict")
        if pending is None:
            return super().to_dict()
        sent = self.__dict__.get("_fast_sent")
        if sent is None:  # numpy arrays as typed arrays, as go.Figure.to_dict sends them; once
            layout = {k: v for k, v in pending["layout"].items() if k != "template"}
            plain = _numbers(pending["data"]) + _numbers(layout) <= PLAIN_MAX
            sent = {"data": _sendable(pending["data"], None, plain), "layout": _sendable(layout, None, plain)}
            if "_fast_json" not in self.__dict__:  # once the payload is kept, nothing else needs this
                object.__setattr__(self, "_fast_sent", sent)
        out = _fresh(sent)  # a new dict each call, as plotly's (str/number leaves are shared)
        if "template" in pending["layout"]:
            out["layout"]["template"] = pending["layout"]["template"]  # shared, read-only (see _template)
        return out

    def to_plotly_json(self) -> dict:
        return self.to_dict()

    def __reduce__(self):
        return Figure, (self.to_dict(),)


def _pending(fig) -> dict | None:
    """A lean Figure's own {"data", "layout"} dict while its plotly tree is not built; None for any other figure."""
    return fig.__dict__.get("_fast_dict") if isinstance(fig, Figure) else None


def _drop_payload(fig: Figure) -> None:
    """Forget what a lean Figure kept from its dict (to_dict's typed arrays, payload_json's text): the dict is about
    to change, or the plotly tree to be built from it."""
    fig.__dict__.pop("_fast_sent", None)
    fig.__dict__.pop("_fast_json", None)


def layout_value(fig: go.Figure | dict, name: str):
    """fig.layout[name] without building a lean Figure's plotly tree: reading fig.layout would build it
    (~1 ms) and drop its kept payload, on a figure the view cache shares with every session."""
    pending = _pending(fig)
    if pending is not None:
        return pending["layout"].get(name)
    if isinstance(fig, dict):
        return (fig.get("layout") or {}).get(name)
    return fig.layout[name]


def set_margin(fig: go.Figure, **sides: float) -> None:
    """fig.layout.margin's given sides (l=, r=, ...) set, on a lean Figure without building its tree
    (and dropping any payload kept from before the change)."""
    pending = editable(fig)
    if pending is None:
        fig.update_layout(margin=sides)
        return
    margin = pending["layout"].get("margin")
    pending["layout"]["margin"] = {**(dict(margin) if margin else {}), **sides}


def editable(fig: go.Figure) -> dict | None:
    """A lean Figure's own {"data", "layout"} dict, to change in place without building its tree (any
    payload kept from before the change is dropped); None for any other figure."""
    pending = _pending(fig)
    if pending is not None:
        _drop_payload(fig)
    return pending


def payload_json(fig: go.Figure) -> str:
    """plotly.io.to_json(fig, validate=False): what the app's chart sends. A Figure from Fig.to_go
    makes it once and keeps it (no longer its typed-array copy, which only fed it), so a figure
    drawn again (the app's server-wide view cache: a class on one sentence) costs no
    serialisation. Reading the figure as a go.Figure (fig.layout, ...) drops what was kept."""
    if _pending(fig) is None:
        return pio.to_json(fig, validate=False)
    text = fig.__dict__.get("_fast_json")
    if text is None:
        text = pio.to_json(fig, validate=False)
        object.__setattr__(fig, "_fast_json", text)
        fig.__dict__.pop("_fast_sent", None)
    return text


def kept_bytes(fig: go.Figure) -> int:
    """About what a built figure keeps in memory: its numpy arrays, its payload, and the tree of
    dicts, lists and strings around them, counted as the payload's size once more."""
    pending = _pending(fig)
    text = payload_json(fig)
    arrays = sum(a.nbytes for a in _arrays(pending)) if pending is not None else 0
    return arrays + 2 * len(text)


_SUBPLOT_CACHE: dict[str, Node] = {}  # make_subplots' layouts, by their arguments (at most ~512)


def subplots(rows: int = 1, cols: int = 1, **kwargs) -> Fig:
    """make_subplots(rows, cols, **kwargs)'s layout (axis domains, anchors, subplot titles); plotly makes each
    one once, each figure gets a copy."""
    key = repr((rows, cols, sorted(kwargs.items())))  # kwargs hold lists (subplot_titles): no hashable key
    layout = _SUBPLOT_CACHE.get(key)
    if layout is None:
        from plotly.subplots import make_subplots

        made = make_subplots(rows=rows, cols=cols, **kwargs).layout.to_plotly_json()
        made.pop("template", None)
        if len(_SUBPLOT_CACHE) > 512:
            _SUBPLOT_CACHE.clear()
        layout = _SUBPLOT_CACHE[key] = _node(copy.deepcopy(made))
    return Fig(layout=_copy(layout), grid=(rows, cols))


@cache
def _template(name: str) -> dict:
    full = pio.templates[name].to_plotly_json()
    data = full.get("data", {})
    return {"data": {k: data[k] for k in _TRACE_TYPES_KEPT if k in data}, "layout": full.get("layout", {})}


@cache
def _colorscale(name: str) -> tuple:
    from _plotly_utils.basevalidators import ColorscaleValidator

    return tuple(tuple(stop) for stop in ColorscaleValidator("colorscale", "heatmap").validate_coerce(name))


def colorscale(name: str) -> list:
    """A named colour scale ("Viridis", "RdBu_r") as its [[fraction, colour], ...] list."""
    return [list(stop) for stop in _colorscale(name)]


def as_fig(fig) -> Fig:
    """A Fig from a Fig, a go.Figure or a figure dict (to restyle a finished figure)."""
    if isinstance(fig, Fig):
        return fig
    d = fig.to_plotly_json() if isinstance(fig, GoFigure) else fig
    return Fig(data=[_node(dict(t)) for t in d.get("data", [])], layout=d.get("layout", {}))
