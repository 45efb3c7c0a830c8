"""Every reshape in model/ and lab/ says the shape it makes, in a comment on its line (or the line above).

The developers' rule (../shared/STYLE.md, nanoGPT's `# (B, nh, T, hs)`): a reader checks a reshape against
the paper without running it. A reshape-like call is one that moves or adds axes: view, reshape, transpose,
permute, flatten, (un)squeeze, expand, .T, torch/np stack, cat, einsum, and an index with None.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted([*(ROOT / "model").glob("*.py"), *(ROOT / "lab").glob("*.py")])

# str.split is everywhere (text, tokenizers): only torch's split and chunk count, by their module name
METHODS = {"view", "reshape", "transpose", "permute", "flatten", "unflatten", "unsqueeze", "squeeze", "expand",
           "expand_as", "movedim", "swapaxes", "view_as", "reshape_as", "unbind"}
FUNCTIONS = {"stack", "cat", "concat", "concatenate", "einsum", "vstack", "hstack", "column_stack", "split",
             "chunk", "broadcast_to", "expand_dims", "moveaxis", "swapaxes", "transpose", "reshape"}
ARRAY_MODULES = {"torch", "np", "numpy"}
ATTRIBUTES = {"T", "mT"}
# a shape: a parenthesised list with a comma, "(B, H, T, d_k)", "(T,)"; not any "(" ("# (see above)" was one)
SHAPE = re.compile(r"\((?:[^(),]+,)+[^(),]*\)")


def _adds_an_axis(index: ast.AST) -> bool:
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return any(isinstance(p, ast.Constant) and p.value is None for p in parts)


def reshapes(tree: ast.AST) -> list[tuple[int, int, str]]:
    """(first line, last line, what) of every reshape-like expression."""
    found = []
    for node in ast.walk(tree):
        what = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id in ARRAY_MODULES:
                what = f"{owner.id}.{node.func.attr}" if node.func.attr in FUNCTIONS else None
            elif node.func.attr in METHODS:
                what = f".{node.func.attr}()"
        elif isinstance(node, ast.Attribute) and node.attr in ATTRIBUTES and isinstance(node.ctx, ast.Load):
            what = f".{node.attr}"
        elif isinstance(node, ast.Subscript) and _adds_an_axis(node.slice):
            what = "[..., None]"
        if what:
            found.append((node.lineno, node.end_lineno or node.lineno, what))
    return found


def comments(source: str) -> dict[int, str]:
    """line number -> the comment on that line."""
    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = tok.string
    return out


def missing_shape_comments(source: str, name: str) -> list[str]:
    """"name:line what: code" for each reshape-like expression with no shape (SHAPE) in a comment on its lines or the
    line above."""
    notes, lines = comments(source), source.splitlines()
    bad = []
    for first, last, what in sorted(set(reshapes(ast.parse(source)))):
        near = [notes.get(n, "") for n in range(first - 1, last + 1)]
        if not any(SHAPE.search(c) for c in near):
            bad.append(f"{name}:{first} {what}: {lines[first - 1].strip()}")
    return bad


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_reshape_has_a_shape_comment(path):
    source = path.read_text(encoding="utf-8")
    assert missing_shape_comments(source, str(path.relative_to(ROOT))) == []


def test_the_check_sees_each_kind_of_reshape_without_its_comment():
    """The check itself: each kind of reshape without a comment is reported; a comment with a shape on the
    line, or on the line above, satisfies it; str.split and a plain index are no reshape."""
    bare = (
        "x = q.view(B, T, H, d)\n"
        "y = torch.cat([a, b])\n"
        "z = m[:, None]\n"
        "w = a @ b.T\n"
        "e = np.einsum('ij,jk->ik', a, b)\n"
        "u = k.transpose(-2, -1)  # no shape here\n"
        "v = k.view(B, T)  # (as above)\n"
        "words = text.split()\n"
        "first = x[0, :]\n"
    )
    assert [line.split(" ", 1)[1].split(": ", 1)[0] for line in missing_shape_comments(bare, "f")] == [
        ".view()", "torch.cat", "[..., None]", ".T", "np.einsum", ".transpose()", ".view()"]
    commented = (
        "x = q.view(B, T, H, d)  # (B, T, H, d_k)\n"
        "# (B, H, T, d_k) -> (B, T, d_model)\n"
        "y = x.transpose(1, 2).reshape(\n"
        "    B, T, D)\n"
        "z = torch.cat([\n"
        "    a, b])  # (2 T, d)\n"
        "n = x.flatten()  # (T,)\n"
    )
    assert missing_shape_comments(commented, "f") == []
