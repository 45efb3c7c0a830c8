"""Attention Lab's benchmark: `python -m bench` prints a table; `--json PATH` saves the records.

Run:   python -m bench --quick                 # seconds: small model, 8 and 32 tokens
       python -m bench --json runs/today.json  # full run (base + app model, 8..512 tokens):
                                               # ~1.5 min with 1 free core, ~7 min on a busy one
       python -m bench --threads 1             # default is one thread per core; on a shared,
                                               # busy machine 2 threads stall (see the load line)
       python -m bench --compare runs/today.json --only stacks,traced
       python -m bench --list                  # registered figures

Every figure is a Record {name, tokens, value, unit, target, ok}: target is a string such as
"<= 1.2" or "> 100" (None = informational) and ok says whether value meets it.

Adding a figure (e.g. figure building, a Streamlit rerun, browser timings): write a function
that takes the Context and returns a list of Records, and register it:

    # bench/viz_figures.py
    from bench.core import Context, Record, figure

    @figure("heatmap", "6. Heatmap figure build", "viz.heatmap for one head, T x T")
    def heatmap_build(ctx: Context) -> list[Record]:
        out = []
        for T in ctx.sizes:
            t = ctx.measure({"build": lambda: build_figure(T)})["build"]   # median, warmed up
            out.append(Record("viz.heatmap_build_ms", T, t.ms, "ms", "<= 200"))
        return out

then import the module in bench/runner.py next to `import bench.figures`. The context gives the
sizes, the configs, cached models (ctx.model(name), ctx.torch_model(name)), inputs
(ctx.inputs(name, T)), ctx.measure (interleaved medians within a time budget), ctx.memo (share
an expensive result between figures) and ctx.note (a line printed under the section).
"""

from bench.configs import CONFIGS, DEFAULT_APP_CONFIG
from bench.core import FIGURES, Context, Figure, Record, figure, measure, meets

__all__ = [
    "CONFIGS",
    "DEFAULT_APP_CONFIG",
    "FIGURES",
    "Context",
    "Figure",
    "Record",
    "figure",
    "measure",
    "meets",
]
