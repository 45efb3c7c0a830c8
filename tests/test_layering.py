"""Dependencies point one way: model/ (torch only) <- lab/ (no Streamlit) <- ui/ + app.py (../shared/STYLE.md).

viz/'s side is tests/test_viz.py's (`test_no_viz_module_imports_the_app_side_not_even_inside_a_function`); these
are model/'s and lab/'s, which no test held: an `import streamlit` or `from lab import ...` inside a model/ function
let every test through.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# what each package may not import, at the top or inside a function
FORBIDDEN = {
    "model": ("lab", "viz", "ui", "app", "bench", "streamlit", "plotly", "pandas", "kaleido"),
    "lab": ("ui", "app", "bench", "streamlit"),
}


def imported(path: Path) -> list[tuple[int, str]]:
    """(line, top-level module) of every absolute import in the file, wherever it stands."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name.split(".")[0]) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            out.append((node.lineno, (node.module or "").split(".")[0]))
    return out


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_a_lower_layer_imports_nothing_from_the_layers_above_it(package):
    files = sorted((ROOT / package).glob("*.py"))
    assert files, package
    back = [f"{path.name}:{line} {name}" for path in files for line, name in imported(path)
            if name in FORBIDDEN[package]]
    assert back == [], f"{package}/ imports what it may not: {back}"
