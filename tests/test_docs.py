"""README.md and docs/*.md name the code a reader is to find: every path, module attribute, command-line flag,
Streamlit option, view and widget label they name exists, so that a rename in the code fails here rather than
leaving a newcomer with a name nothing answers to (a README walk). What the lesson's steps say the students see
is tests/test_lesson.py's."""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import re
import shlex
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# named in the docs, but not files of a clone: the folder ui/chart.py copies plotly.js into at run time
# (git-ignored), and the URL Streamlit serves it at
NOT_IN_A_CLONE = {"./static/", "app/static/"}


def text(doc: Path) -> str:
    return doc.read_text(encoding="utf-8")


def spans(doc: Path) -> list[str]:
    """The doc's `code` spans (fenced blocks left out), their white space (a span broken over two lines) made single
    spaces."""
    prose = re.sub(r"^```.*?^```", "", text(doc), flags=re.M | re.S)
    return [" ".join(s.split()) for s in re.findall(r"`([^`]+)`", prose)]


def command_lines(doc: Path) -> list[str]:
    """Commands as a reader copies them: `code` spans, indented or fenced lines (continuations joined), without
    their comments; a flag a comment names ("# --compare old.json to compare runs") also after the command's first
    three words."""
    body = re.sub(r"\\\n\s*", " ", text(doc))
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```", body, flags=re.M | re.S)
    lines = [line for block in blocks for line in block.splitlines()]
    lines += [line[4:] for line in body.splitlines() if line.startswith("    ") and not line.startswith("     ")]
    out = []
    for line in lines + spans(doc):
        command, _, comment = line.partition(" #")
        out.append(command.strip())
        flags = re.findall(r"--[\w-]+(?: [\w./-]+)?", comment)  # "# everything; --compare old.json to compare runs"
        if flags:
            out.append(" ".join(command.split()[:3] + flags))
    return out


def doc_id(doc: Path) -> str:
    return str(doc.relative_to(ROOT))


@pytest.mark.parametrize("doc", DOCS, ids=doc_id)
def test_every_path_a_doc_names_is_in_the_repository(doc):
    named = {s for s in spans(doc) if re.fullmatch(r"\.{0,2}/?[\w.-]+(/[\w.*-]*)+", s) and not s.startswith("/")}
    named |= {f"tests/{name}" for name in re.findall(r"\b(test_[\w*]+\.py)\b", text(doc))}
    missing = [p for p in sorted(named - NOT_IN_A_CLONE) if not list(ROOT.glob(p.removeprefix("./")))]
    assert not missing, missing
    assert named, "no paths found: the pattern above no longer reads this doc"


@pytest.mark.parametrize("doc", DOCS, ids=doc_id)
def test_every_name_a_doc_gives_beside_its_file_is_in_that_file(doc):
    """`ui/chart.js` `readableCells`: the name is defined or used in that file (Python or JavaScript)."""
    pairs = re.findall(r"`((?:\w+/)*\w+\.(?:py|js))` `([A-Za-z_]\w*)`", text(doc))
    missing = [(f, n) for f, n in pairs if not re.search(rf"\b{n}\b", (ROOT / f).read_text(encoding="utf-8"))]
    assert not missing, missing


@pytest.mark.parametrize("doc", DOCS, ids=doc_id)
def test_every_dotted_name_a_doc_gives_resolves(doc):
    """`viz.theme.cell_type_px`, `lab.views.ViewResult.nbytes`: a module, then attributes; `model.tgt_mask` is the
    README's model, a Transformer."""
    from model import Transformer

    missing = []
    for dotted in {m for s in spans(doc) for m in re.findall(r"^((?:model|lab|viz|ui)(?:\.\w+)+)(?:\(\))?$", s)}:
        parts = dotted.split(".")
        for i in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
                break
            except ModuleNotFoundError:
                continue
        if parts[0] == "model" and i == 1 and not hasattr(obj, parts[1]):
            obj, i = Transformer, 1  # the README's `model = Transformer(config)`
        try:
            for attribute in parts[i:]:
                obj = getattr(obj, attribute)
        except AttributeError:
            missing.append(dotted)
    assert not missing, missing


def _classroom_load_parser():
    spec = importlib.util.spec_from_file_location("classroom_load_for_docs", ROOT / "scripts" / "classroom_load.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module.parse_args


def _parsers():
    """Each documented command's own argument parsing (nothing runs), and what its --only may name."""
    from bench.runner import FIGURES, parse_args
    from lab.export import _parser

    return {
        "python -m bench": (parse_args, set(FIGURES)),
        "python scripts/classroom_load.py": (_classroom_load_parser(), set()),
        "python -m lab.export": (_parser().parse_args, set()),
    }


@pytest.mark.parametrize("doc", DOCS, ids=doc_id)
def test_every_command_a_doc_gives_takes_its_flags(doc, capsys):
    """`python -m bench --app --only rerun --device cuda`, `python scripts/classroom_load.py --sessions 30 --together`,
    `python -m lab.export SPEC.json --out figures/ [--trace]`: each parses (its parser exits on a flag it does not
    know), and --only names registered figures."""
    found = 0
    for prefix, (parse, only_keys) in _parsers().items():
        for line in command_lines(doc):
            if not line.startswith(prefix + " "):  # the bare name is the command named, not run
                continue
            argv = shlex.split(line[len(prefix):].replace("[", " ").replace("]", " "))
            try:
                args = parse(argv)
            except SystemExit:
                pytest.fail(f"{doc_id(doc)}: {line!r}: {capsys.readouterr().err.strip()}")
            found += 1
            if isinstance(args, argparse.Namespace) and getattr(args, "only", None):
                assert set(args.only.split(",")) <= only_keys, line
    if doc.name in ("README.md", "classroom.md"):
        assert found >= 3, "no commands found: the reading above no longer reads this doc"


@pytest.mark.parametrize("doc", DOCS, ids=doc_id)
def test_every_streamlit_option_a_doc_gives_is_streamlits(doc):
    """`--server.fileWatcherType none`, `runner.postScriptGC = false`: options Streamlit knows."""
    from streamlit import config

    body = text(doc)
    named = set(re.findall(r"--((?:server|browser|client|runner|global|logger|theme)\.\w+)", body))
    named |= set(re.findall(r"`((?:server|browser|client|runner)\.\w+) = ", body))
    assert not named - set(config._config_options_template), named - set(config._config_options_template)


def test_classroom_md_says_which_settings_the_repositorys_config_already_has():
    """docs/classroom.md's config.toml for a class server marks each setting the repository's .streamlit/config.toml
    already holds "already set there" (gatherUsageStats was set there unmarked, as if a teacher had to add it), and
    marks no other."""
    doc = text(ROOT / "docs" / "classroom.md")
    block = re.search(r"```toml\n(.*?)```", doc, flags=re.S)[1]
    repo = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    shown = tomllib.loads(block)
    section = None
    for line in block.splitlines():
        if re.fullmatch(r"\[\w+\]", line.strip()):
            section = line.strip()[1:-1]
        elif "=" in line:
            key = line.split("=")[0].strip()
            in_repo = repo.get(section, {}).get(key)
            assert ("already set there" in line) == (in_repo is not None), line
            if in_repo is not None:
                assert shown[section][key] == in_repo, line
    for section, values in repo.items():  # every setting of the repository's file is in the doc's
        for key in values:
            assert key in shown.get(section, {}), f"{section}.{key}"


def test_readmes_pdf_font_packages_are_those_scripts_test_sh_installs_for_pdf_exports():
    """README's apt-get line for a machine that exports PDFs names a Debian package for every TrueType family of
    viz.theme.PDF_FONTS (DejaVu, for − √ ᵀ, was left out), the packages scripts/test.sh installs for them."""
    from viz.theme import PDF_FONTS

    readme = " ".join(text(ROOT / "README.md").split())
    line = re.search(r"`apt-get install -y ([^`]+)`", readme)[1].split()
    script = (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    packages = dict(re.findall(r'grep -qi "([^"]+)" \|\| need_apt\+=\(([\w-]+)\)', script))
    families = {f for stack in PDF_FONTS.values() for f in re.findall(r'"([^"]+)"', stack)}
    wanted = {packages[name] for name in packages for f in families if f.startswith(name.split()[0])
              and "Noto" not in name}
    assert wanted >= {"fonts-liberation", "fonts-dejavu-core"}, wanted  # the reading above still reads them
    assert set(line) == wanted, (line, wanted)


def test_readmes_view_7_row_says_which_charts_export_and_every_chart_has_its_downloads(make_app):
    """README said "the step slider's two charts are the page's own; the other figures export", read as: those two
    have no downloads. They have, as every chart in the app; it is `python -m lab.export` (lab.views.build_view)
    that writes the view's other figures and not them."""
    import functools

    from lab.compute import load_model
    from lab.spec import FigureSpec
    from lab.views import Models, build_view

    row = next(r for r in text(ROOT / "README.md").splitlines() if r.startswith("| 7 · Translate |"))
    assert "`python -m lab.export` writes the view's other figures, not the step slider's two charts" in row
    assert "in the app they have their downloads too" in row
    exported = [p.key for p in build_view("translate", FigureSpec(model="zh-en"), Models(functools.cache(load_model)))
                .panels]
    assert exported and not [k for k in exported if k.startswith("step")], exported
    at = make_app(link={"views": "translate", "model": "zh-en"})
    assert not at.exception
    ids = [e.proto.id for e in at.expander]  # an expander's element id ends with its key
    for key in ["step1-self", "step1-cross", *(k for k in exported if k != "translation")]:  # translation: text
        assert any(i.endswith(f"-numbers-translate-{key}") for i in ids), (key, ids)


def _view_labels() -> dict[str, str]:
    """app.py's VIEW_LABELS, read without running the app."""
    tree = ast.parse((ROOT / "app.py").read_text(encoding="utf-8"))
    node = next(n for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "VIEW_LABELS")
    return ast.literal_eval(node.value)


def test_readmes_view_table_names_the_views_as_the_view_bar_does():
    from lab.spec import VIEWS

    labels = _view_labels()
    rows = re.findall(r"^\| (\d · [^|]+?) \|", text(ROOT / "README.md"), flags=re.M)
    assert rows == [labels[v] for v in VIEWS]


def _labels_drawn() -> set[str]:
    """The strings app.py and ui/ hand to a call as its first argument (st.button("Swap A ↔ B"), st.expander(...),
    st.subheader(...)): labels, headings, not docstrings or comments."""
    found = set()
    for path in [ROOT / "app.py", *sorted((ROOT / "ui").glob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                    and isinstance(node.args[0].value, str):
                found.add(node.args[0].value)
    return found


# Widget labels, headings and buttons the docs send a reader to, each as the doc writes it: the app's label, or
# the part of it before a " · "
LABELS = {
    "README.md": ["Examples", "Swap A ↔ B", "Share this view", "Model size (random model)", "LayerNorm placement",
                  "Export size", "PNG scale", "Device", "A 20-minute lesson", "Heads in the grid",
                  "Train with positional encoding"],
    "docs/lesson.md": ["A 20-minute lesson", "Train it yourself", "Train", "Train with positional encoding",
                       "Share this view", "Model"],
    "docs/classroom.md": ["A 20-minute lesson", "Device"],
}


@pytest.mark.parametrize("doc", sorted(LABELS))
def test_every_label_a_doc_names_is_on_the_page(doc):
    body = " ".join(text(ROOT / doc).split())
    literals = _labels_drawn()
    for label in LABELS[doc]:
        assert label in body, f"{doc} no longer names {label!r}: update LABELS"
        assert any(s == label or s.startswith(label + " · ") for s in literals), label  # "Share this view · …"


def test_readmes_share_link_keys_are_the_links():
    """`step=2` (README's view 7) and a spec's fields (docs/app.md's `n_heads in the link`) are what a link carries."""
    import dataclasses

    from lab.spec import FigureSpec
    from ui.state import STEP

    readme = text(ROOT / "README.md")
    assert "`step=2`" in readme and STEP == "step"
    keys = re.findall(r"\((\w+) in the link\)", text(ROOT / "docs" / "app.md"))
    assert keys, "docs/app.md no longer names a link's field"
    for key in keys:
        assert key in {f.name for f in dataclasses.fields(FigureSpec)}, key  # a field (not offer, an InitVar)


def _one_screen() -> dict:
    """README's "The model in one screen", run as written."""
    code = re.search(r"## The model in one screen\n\n```python\n(.*?)```", text(ROOT / "README.md"), flags=re.S)[1]
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    return scope


def test_readmes_model_in_one_screen_runs_and_its_weights_have_the_shape_it_says():
    scope = _one_screen()
    config, src, tgt = scope["config"], scope["src"], scope["tgt"]
    weights = scope["trace"].decoder.layers[0].cross_attn.weights  # "(B, H, T_tgt, T_src) softmax weights"
    assert tuple(weights.shape) == (1, config.n_heads, tgt.size(1), src.size(1))


def test_readmes_trace_table_names_each_field_with_its_shape():
    """Every row of README's table of the trace ("`StackTrace.layers[i].output` | (B, T, d_model)"), and every field
    of an AttentionRecord it names, is on a trace of its own snippet, of the shape it says."""
    scope = _one_screen()
    config, src, tgt, trace = scope["config"], scope["src"], scope["tgt"], scope["trace"]
    readme = text(ROOT / "README.md")
    rows = re.findall(r"^\| `([^|]+)` \| ([^|]+) \|", readme, flags=re.M)
    assert len(rows) >= 9, rows
    for names, shape in rows:
        for name in re.findall(r"(?:Trace|StackTrace)\.[\w.\[\]]+", names):
            for stack, T in ((trace.encoder, src.size(1)), (trace.decoder, tgt.size(1))):
                if name.startswith("Trace."):
                    value, T = eval(name.replace("Trace", "trace", 1)), tgt.size(1)
                elif "cross_attn" in name and stack is trace.encoder:
                    continue  # "decoder layers only"
                else:
                    value = eval(name.replace("StackTrace", "stack", 1).replace("[i]", "[0]"), {"stack": stack})
                if shape.startswith("("):
                    sizes = {"B": 1, "T": T, "Tt": tgt.size(1), "d_model": config.d_model, "V": config.tgt_vocab_size}
                    assert tuple(value.shape) == tuple(sizes[d.strip()] for d in shape.strip("() ").split(",")), name
                else:
                    assert type(value).__name__ == shape.strip("` "), (name, type(value).__name__)
    record = trace.encoder.layers[0].self_attn
    fields = re.search(r"An `AttentionRecord` holds (.*?)\(weights @ V\)", readme, flags=re.S)[1]
    named = re.findall(r"`(\w+)`", fields)
    assert {"q", "k", "v", "scores", "weights", "context"} <= set(named), named
    for name in named:
        assert getattr(record, name) is not None, name



def test_readmes_slide_grid_of_every_layer_and_head_fits_one_slide_with_its_labels_in_the_notes_type():
    """docs/app.md: in the slide theme view 4's every layer × head fits one slide where its panels label every token
    (720 px, not 864, lesson step 5's), and a grid's token labels are drawn as large as the notes (21 px)."""
    import numpy as np

    import viz
    from viz.theme import note_size, type_scale

    body = " ".join(text(ROOT / "docs" / "app.md").split())
    said = re.search(r"view 4's every layer × head where its panels there still label every token \((\d+) px, not (\d+)",
                     body)
    assert said, "docs/app.md no longer says how tall the slide's grid of every layer and head is"
    now, was = map(int, said.groups())
    slide = viz.THEMES["slide"]
    w = np.full((2, 4, 4, 4), 0.25)  # the lesson's random model: 2 layers of 4 heads; its 4 tokens
    fig = viz.layers_heads_grid(w, row_labels=list("你喜欢她"), theme="slide")
    assert fig.layout.height == now == slide["height"]
    assert was == round((110 + 220 * 2) * type_scale(slide))  # the default's 550 grown by the slide's type
    assert "a grid's token labels as shown (21 px" in body and note_size(slide) == 21
    assert fig.layout.xaxis.tickfont.size == fig.layout.yaxis.tickfont.size == 21


def test_readmes_cell_type_and_smallest_type_are_what_the_figures_write():
    """docs/app.md: the values written in a chart's cells are the theme's cell type (`viz.theme.cell_type_px`: slide 21 px,
    default 11), and no other text of a chart is shown under 11 px (`viz.theme.SMALLEST_SHOWN_PX`), a phone's smallest
    comfortable type and the default theme's cell type: each number read off docs/app.md, each checked against a
    small matrix's cell values as the figure writes them (a mutation walk: 3 px under the slide's text, 19, or 2 px
    under the default's, 12, passed every test)."""
    import numpy as np

    import viz
    from viz.theme import SMALLEST_SHOWN_PX

    body = " ".join(text(ROOT / "docs" / "app.md").split())
    said = re.search(r"`viz\.theme\.cell_type_px`: slide (\d+) px, (\d+) as shown on a 1280 × 720 projector; "
                     r"default (\d+)\)", body)
    assert said, "docs/app.md no longer says the cell type"
    slide, shown, default = map(int, said.groups())
    smallest = re.search(r"is shown under (\d+) px either \(`viz\.theme\.SMALLEST_SHOWN_PX`", body)
    assert smallest, "docs/app.md no longer says the smallest type shown"
    assert "and the default theme's cell type" in body
    w = np.array([[0.25, 0.75], [0.5, 0.5]])
    for theme, size in (("slide", slide), ("default", default)):
        fig = viz.weights_heatmap(w, row_labels=["a", "b"], show_values=True, theme=theme)
        written = [trace.textfont.size for trace in fig.data if trace.type == "heatmap" and trace.text is not None]
        assert written and set(written) == {size}, (theme, written)
    assert round(slide * 0.87) >= shown  # the page's own notes' 18 px, shown at ~0.87 of 1280 on the projector
    assert SMALLEST_SHOWN_PX == int(smallest.group(1)) == default


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
