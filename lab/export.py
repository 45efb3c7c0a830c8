"""A figure spec's figures on disk, for papers:

    python -m lab.export SPEC.json --out DIR [--trace]

renders every panel of every view a FigureSpec names, in spec.format at spec.export_size (width x
height; 0 = the theme's own, or a figure's own height where it sets one (taller or shorter); PNG x spec.scale),
plus each panel's numbers as CSV and the spec itself, so a figure in a paper can be regenerated
exactly. Nothing is written unless everything validated and rendered.

The views are lab's (build_view, the app's own); the rendering is viz.export's. torch-heavy imports
happen only when a spec's models are built.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lab.provenance import provenance
from lab.spec import FigureSpec, SpecError
from viz import export as vx
from viz.fig import layout_value
from viz.labels import count_of
from viz.theme import too_narrow

if TYPE_CHECKING:
    from lab.views import ViewResult


# -- a spec's figures -------------------------------------------------------------------------
@dataclass
class Planned:
    """One file to write: its name and its bytes."""

    name: str
    data: bytes


def _numbered(count: int, what: str) -> str:
    """How many of `what` there are and their numbers, from 0: "2 layers (0..1)", "1 layer (layer 0)" (the share box
    said "which has 1 layers (0..0)" of a one-layer model)."""
    return f"{count_of(count, what)} " + (f"({what} 0)" if count == 1 else f"(0..{count - 1})")


def _spec_error(exc: ValueError, where: str = "") -> SpecError:
    """viz.export's "field: message" (check_size, check_room) as a SpecError naming that field; `where`, the figure
    it is about, goes before the message."""
    field, _, message = str(exc).partition(": ")
    return SpecError(field, where + message)


def validate_for_export(spec, models) -> None:
    """Settings the spec accepts but this spec's model cannot draw: raise SpecError naming the field.

    The app clamps such values; an export must be exact, so it refuses them instead.
    """
    from lab.views import order_draws_attention

    try:
        vx.check_size(spec.format, *spec.size, spec.scale)
    except ValueError as exc:
        raise _spec_error(exc) from None
    if "translate" in spec.views and spec.model != "zh-en":
        raise SpecError("views", "'translate' needs model 'zh-en' (the random model does not translate)")
    if not spec.sentence_a.strip() and not spec.sentence_b.strip():
        raise SpecError("sentence_a", "both sentences are empty: nothing to draw")
    # view 6's attention panels, where it draws them (B reorders A): the encoder's layer and head (a bad-input walk:
    # clamped); where it draws none, its layer and head choose nothing, as the app draws no controls for them
    if "order" in spec.views and order_draws_attention(spec, models):
        config = models.model(spec).model.config
        for name, value, count in (("layer", spec.layer, config.n_layers), ("head", spec.head, config.n_heads)):
            if value >= count:
                raise SpecError(name, f"{name} {value} does not exist: view 'order' compares the encoder's "
                                      f"self-attention, which has {_numbered(count, name)}")
    attention_views = {"attention", "heads", "query", "translate"} & set(spec.views)
    if not attention_views:
        return
    config = models.model(spec).model.config
    n_layers = config.n_layers if spec.block == "encoder self" else config.decoder_layers
    if spec.layer >= n_layers:
        raise SpecError("layer", f"layer {spec.layer} does not exist: the {spec.block} stack has "
                                 f"{_numbered(n_layers, 'layer')}")
    # a head where a view draws one, the heads where view 4 draws them (as the app's controls check them: view 4 keeps
    # the head chosen in view 3 as it is, and its SPEC.json was refused for a head 3 of 2 that it does not draw)
    checked = (("head", [spec.head] if attention_views - {"heads"} else []),
               ("heads", list(spec.heads) if "heads" in attention_views else []))
    for name, values in checked:
        bad = [h for h in values if h >= config.n_heads]
        if bad:
            raise SpecError(name, f"head {bad[0]} does not exist: the model has {_numbered(config.n_heads, 'head')}")
    text = spec.sentence_a if spec.sentence == "a" else spec.sentence_b
    if not text.strip():
        raise SpecError("sentence", f"sentence {spec.sentence!r} is empty")
    if "query" in spec.views:
        run = models.run(spec)
        row = run.row(spec.sentence)
        n_queries = len(run.tgt_pieces(row) if spec.block != "encoder self" else run.src_pieces(row))
        if spec.query >= n_queries:
            raise SpecError("query", f"query {spec.query} does not exist: the {spec.block} block "
                                     f"has {_numbered(n_queries, 'query token')}")


def build_spec(spec, models) -> list[tuple[str, ViewResult]]:
    """Every view of `spec` built (figures and tables in memory), each checked drawable: raise
    SpecError naming the field otherwise. Needs no browser, so a bad spec is reported as such on a
    machine without one. Returns [(view, its ViewResult)] in spec.views order."""
    from lab.views import build_view

    validate_for_export(spec, models)
    built = []
    for view in spec.views:
        result = build_view(view, spec, models)
        if result.hint and not result.panels:
            raise SpecError("views", f"{view!r} has nothing to draw: {result.hint}")
        for panel in result.panels:  # each at the size it is exported at (a tall grid keeps its own height)
            if panel.figure is not None:
                try:
                    size = spec.export_size(layout_value(panel.figure, "height"))
                    vx.check_size(spec.format, *size, spec.scale)
                    vx.check_room(panel.figure, *size)
                except ValueError as exc:
                    raise _spec_error(exc, f"{view}-{panel.key}: ") from None
        built.append((view, result))
    return built


def plan_spec(spec, models, *, trace_format: str | None = None, warn=None,
              built: list[tuple[str, ViewResult]] | None = None) -> list[Planned]:
    """Everything `python -m lab.export` writes for `spec`, rendered in memory (nothing on disk).

    `built` is build_spec(spec, models) where the caller has it already."""
    built = build_spec(spec, models) if built is None else built
    ext = spec.format
    files: list[Planned] = [Planned("spec.json", (spec.to_json() + "\n").encode("utf-8"))]
    laid_out_for = too_narrow(spec.theme, spec.width)
    if warn and laid_out_for:
        warn(f"the figures are laid out for {laid_out_for} px wide and drawn at {spec.width}: titles and labels "
             "may be cut (export at the theme's size and scale the vector file instead)")
    manifest, said = [], set()
    for view, result in built:
        for note in result.notices:
            if warn and note not in said:  # a sentence's notice comes with every view: said once
                said.add(note)
                warn(f"{view}: {note}")
        for panel in result.panels:
            stem = f"{view}-{panel.key}"
            entry = {"view": view, "panel": panel.key, "title": panel.title, "files": []}
            if panel.caption:
                entry["caption"] = panel.caption
            if result.notices:  # what the app says above the view (an English sentence read by the zh-en models, a
                entry["notices"] = list(result.notices)  # sentence cut short): kept with the figures it is about
            if panel.figure is not None:
                wanted = layout_value(panel.figure, "height")
                width, height = spec.export_size(wanted)  # height 0: the theme's, or the figure's own if taller
                if warn and wanted and wanted > height:
                    warn(f"{stem}: drawn at height {height} px; this figure is laid out for "
                         f"{wanted} px (raise `height` if it looks crowded)")
                try:
                    files.append(Planned(f"{stem}.{ext}", vx.render(panel.figure, ext, width=width, height=height,
                                                                  scale=spec.scale)))
                except vx.ExportError as exc:  # say which figure: the message alone names only a size
                    raise vx.ExportError(f"{stem}: {exc}") from None
                entry["files"].append(f"{stem}.{ext}")
            if panel.table is not None:
                files.append(Planned(f"{stem}.csv", vx.table_csv(panel.table)))
                entry["files"].append(f"{stem}.csv")
            manifest.append(entry)
    if trace_format:
        from lab.tracefile import trace_files
        from lab.views import traced_spec

        traced = traced_spec(spec)  # the run the figures show (view 7 alone: the paper's masks)
        run = models.run(traced)
        config = models.model(traced).model.config
        for name, data in trace_files(run, traced, fmt=trace_format, config=config).items():
            files.append(Planned(name, data))
            manifest.append({"view": "trace", "panel": "trace", "title": "The whole trace of the run",
                             "files": [name]})
    files.append(Planned("manifest.json", (json.dumps(manifest, ensure_ascii=False, indent=2) + "\n").encode()))
    files.append(Planned("provenance.json", (json.dumps(provenance(), indent=2) + "\n").encode()))
    return files


def cli_models():
    """Models for the CLI: each model built once, each spec's run traced once, and view 6's passes made once (its
    check, order_draws_attention, and its figures both read them)."""
    import functools

    from lab.compute import load_model, model_fields, run
    from lab.views import Models, order_data

    load = functools.lru_cache(maxsize=8)(load_model)

    @functools.lru_cache(maxsize=8)
    def trace(spec):
        return run(load(model_fields(spec)), spec.sentence_a, spec.sentence_b, spec.mask)

    plain = Models(load, trace)
    return Models(load, trace, functools.lru_cache(maxsize=8)(lambda spec: order_data(spec, plain)))


def export_spec(spec, out_dir: str | os.PathLike, *, trace_format: str | None = None,
                models=None, warn=None, built: list[tuple[str, ViewResult]] | None = None) -> list[Path]:
    """Render everything first, then write each file atomically into out_dir; returns the paths."""
    models = models or cli_models()
    planned = plan_spec(spec, models, trace_format=trace_format, warn=warn, built=built)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return [vx.write_atomic(out / p.name, p.data) for p in planned]


# -- command line -----------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m lab.export",
        description=(
            "Render the figures of an Attention Lab figure spec: for each view in spec.views, every "
            "panel as <view>-<panel>.<format> (spec.format at spec.size, or a figure's own height where "
            "it sets one; PNG x spec.scale, themed with spec.theme), its numbers as <view>-<panel>.csv, the spec "
            "itself as spec.json (to regenerate the figures), manifest.json (titles, captions, the view's notices) and "
            "provenance.json (the Attention Lab commit, package versions, the model and tokenizer files' SHA-256)."
        ),
        epilog=("Example: python -m lab.export spec.json --out figures --trace. The app's "
                "'Share this view' box shows the spec of the current view. Exit status: 0 done, 2 bad "
                "spec or arguments, 3 no browser, 1 rendering failed."),
    )
    p.add_argument("spec", help="the figure spec, a JSON file ('-' reads standard input)")
    p.add_argument("--out", required=True, help="folder to write into (created if missing)")
    p.add_argument("--trace", action="store_true",
                   help="also write the whole trace of the run (trace.npz + trace.json)")
    p.add_argument("--trace-format", choices=("npz", "safetensors"), default="npz",
                   help="file format of --trace (default: npz)")
    p.add_argument("--quiet", action="store_true", help="print nothing but errors")
    return p


def out_problem(out: Path) -> str | None:
    """Why --out cannot become the folder the files go into, said before any view is built or figure rendered
    (under a file, the export found it only once every figure was rendered: a NotADirectoryError, exit 1); None
    where it can. Nothing is made here: the folder is made when the files are written."""
    try:
        if out.exists():
            return None if out.is_dir() else f"--out {out} exists and is not a folder"
        above = next(p for p in out.absolute().parents if p.exists())  # the folder it would be made in, or a file
    except OSError as exc:  # a folder on the way that this user may not look into
        return f"--out {out}: {vx.one_line(exc)}"
    return None if above.is_dir() else f"--out {out}: {above} is not a folder"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)

    def fail(message: str, code: int) -> int:
        print(f"lab.export: {message}", file=sys.stderr)
        return code

    try:
        text = sys.stdin.read() if args.spec == "-" else Path(args.spec).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return fail(f"cannot read {args.spec}: {vx.one_line(exc)}", 2)
    out = Path(args.out)
    problem = out_problem(out)
    if problem:
        return fail(problem, 2)

    models = cli_models()
    try:  # the whole spec is checked (and its views built) before a browser is asked for
        spec = FigureSpec.from_json(text)
        built = build_spec(spec, models)
    except SpecError as exc:
        return fail(f"bad spec: {exc}", 2)
    except Exception as exc:  # noqa: BLE001 - one line, never a traceback
        return fail(f"{type(exc).__name__}: {vx.one_line(exc)}", 1)
    if not vx.browser_available():
        return fail(vx.install_help(), 3)
    warn = None if args.quiet else (lambda m: print(f"note: {m}", file=sys.stderr))
    try:
        paths = export_spec(spec, out, trace_format=args.trace_format if args.trace else None,
                            models=models, warn=warn, built=built)
    except SpecError as exc:
        return fail(f"bad spec: {exc}", 2)
    except vx.NoBrowserError as exc:
        return fail(str(exc), 3)
    except Exception as exc:  # noqa: BLE001 - one line, never a traceback
        return fail(f"{type(exc).__name__}: {vx.one_line(exc)}", 1)
    if not args.quiet:
        for path in paths:
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
