"""The benchmark's arithmetic and plumbing (no timing is asserted: timings belong to `python -m bench`)."""

import json
import math
import sys

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from bench.configs import DEFAULT_APP_CONFIG
from bench.core import (
    FIGURES,
    RECORD_KEYS,
    Context,
    Record,
    compare_table,
    figure,
    meets,
    synchronized,
)
from bench.figures import all_head_weights, minimum_trace_bytes, stacks_vs_torch
from bench.flops import forward_flops, matmul_flops
from bench.pe_loop import looped_sinusoidal, looped_sinusoidal_lists
from bench.runner import main, run
from model import Transformer, TransformerConfig
from model.positional import _sinusoidal_table
from model.reference import torch_transformer

TINY = TransformerConfig(
    src_vocab_size=11, tgt_vocab_size=7, d_model=12, n_heads=3, n_layers=2, d_ff=20
)


# -- positional encoding baseline ---------------------------------------------------------------


@pytest.mark.parametrize("loop", [looped_sinusoidal, looped_sinusoidal_lists])
def test_looped_pe_equals_the_vectorised_table(loop):
    torch.testing.assert_close(
        loop(40, 24), _sinusoidal_table.__wrapped__(40, 24), atol=1e-6, rtol=0
    )


def test_looped_pe_runs_i_over_pairs_not_dimensions():
    pe = looped_sinusoidal(8, 16)
    angle = 5 / 10000 ** (2 * 3 / 16)  # pos 5, pair i = 3 -> columns 6 (sin) and 7 (cos)
    assert pe[5, 6].item() == pytest.approx(math.sin(angle), abs=1e-7)
    assert pe[5, 7].item() == pytest.approx(math.cos(angle), abs=1e-7)
    # seed 004's bug would use 2*7/16 for column 7, a different frequency from column 6's
    assert pe[5, 7].item() != pytest.approx(math.cos(5 / 10000 ** (2 * 7 / 16)), abs=1e-3)


# -- FLOPs and memory formulas ------------------------------------------------------------------


def test_flop_formula_by_hand_for_a_one_layer_model():
    c = TransformerConfig(
        src_vocab_size=5, tgt_vocab_size=3, d_model=4, n_heads=2, n_layers=1, d_ff=8
    )
    S, T = 3, 2
    # encoder: 4 projections of (3,4)x(4,4) = 4*2*3*4*4 = 384; QK^T and AV: 2 * 2*3*3*4 = 144;
    # FFN: 2*3*4*8 + 2*3*8*4 = 384  -> 912
    encoder = 384 + 144 + 384
    # decoder self: 4*2*2*4*4 = 256, 2 * 2*2*2*4 = 64; cross: W^Q, W^O on T: 2*2*2*4*4 = 128,
    # W^K, W^V on S: 2*2*3*4*4 = 192, QK^T and AV: 2 * 2*2*3*4 = 96; FFN: 2 * 2*2*4*8 = 256 -> 992
    decoder = 256 + 64 + 128 + 192 + 96 + 256
    generator = 2 * 2 * 4 * 3  # (2, 4) x (4, 3)
    assert forward_flops(c, S, T) == encoder + decoder + generator == 1952
    assert forward_flops(c, S, T, batch=3) == 3 * 1952
    assert matmul_flops(512, 512, 2048) == 2 * 512 * 512 * 2048


@pytest.mark.parametrize("extra", [{}, {"norm": "pre", "n_decoder_layers": 3}])
def test_flop_formula_equals_torch_flop_counter_on_the_traced_forward(extra):
    # the traced path does Q K^T and weights @ V as plain bmm, so FlopCounterMode sees every product
    c = TransformerConfig(**{**TINY.to_dict(), **extra})
    torch.manual_seed(0)
    model = Transformer(c).eval()
    src, tgt = torch.randint(1, 11, (2, 5)), torch.randint(1, 7, (2, 4))  # S != T, batch 2
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(src, tgt, model.src_mask(src), model.tgt_mask(tgt), return_trace=True)
    assert counter.get_total_flops() == forward_flops(c, 5, 4, batch=2)


def test_minimum_trace_bytes_counts_every_block_and_head():
    c = TransformerConfig(d_model=8, n_heads=2, n_layers=3, n_decoder_layers=2, d_ff=16)
    S, T = 5, 4
    cells = 3 * S * S + 2 * T * T + 2 * T * S  # enc self + dec self + cross score cells per head
    assert minimum_trace_bytes(c, S, T) == 4 * 2 * cells
    # with S = T and N = M it is the "H T^2 per block, blocks = N + 2 N"
    assert minimum_trace_bytes(TINY, 6, 6) == 4 * TINY.n_heads * 36 * (2 + 2 * 2)


def test_all_head_weights_covers_every_block():
    torch.manual_seed(0)
    model = Transformer(TINY).eval()
    src, tgt = torch.randint(1, 11, (1, 5)), torch.randint(1, 7, (1, 4))
    with torch.no_grad():
        _, trace = model(src, tgt, model.src_mask(src), model.tgt_mask(tgt), return_trace=True)
    weights = all_head_weights(trace)
    shapes = [tuple(w.shape) for w in weights]
    assert shapes == [(1, 3, 5, 5)] * 2 + [(1, 3, 4, 4), (1, 3, 4, 5)] * 2
    for w in weights:
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))


# -- records, registry, runner ------------------------------------------------------------------


def test_meets_and_record_ok():
    assert meets(1.2, "<= 1.2") and not meets(1.21, "<= 1.2")
    assert meets(101, "> 100") and not meets(100, "> 100")
    assert not meets(float("nan"), "<= 1.2")
    assert meets(5.0, None) is None
    assert Record("x", 8, 1.5, "x", "<= 1.2").ok is False
    assert Record("x", 8, 1.0, "x", "<= 1.2").ok is True
    with pytest.raises(ValueError):
        meets(1.0, "about 1")


def test_median_ratio_pairs_each_part_with_the_whole_timed_beside_it():
    """bench.core.median_ratio: median_i(parts_i / wholes_i), each pair from one round. Rounds at three speeds of a
    shared machine, the part half its whole in two of them: the paired median is 1/2, where the ratio of the medians
    (1.5 / 2 = 0.75) and the mean of the ratios (0.58) let the one slow spell on the part's side in; lists of
    different lengths pair nothing and are refused, not cut to the shorter."""
    from bench.core import median_ratio

    parts, wholes = [1.0, 3.0, 1.5], [2.0, 6.0, 2.0]
    assert median_ratio(parts, wholes) == 0.5
    assert median_ratio(wholes, parts) == 2.0  # the whole over the part: the inverse
    with pytest.raises(ValueError):
        median_ratio(parts, wholes[:2])


def test_compare_table_shows_the_change():
    old = [Record("a.ms", 8, 2.0, "ms"), Record("gone", 8, 1.0, "ms")]
    new = [Record("a.ms", 8, 3.0, "ms"), Record("new", 8, 1.0, "ms")]
    text = compare_table(old, new)
    assert "1.50" in text and "gone" not in text and "new" not in text.split("\n", 1)[1]


def test_a_registered_figure_runs_and_prints():
    @figure("_test_fig", "test figure")
    def _fig(ctx):
        return [Record("t.value", t, float(t), "tokens") for t in ctx.sizes]

    try:
        with pytest.raises(ValueError):
            figure("_test_fig", "again")(_fig)
        lines = []
        ctx = Context(configs={"app": DEFAULT_APP_CONFIG}, sizes=(3, 5))
        records = run(ctx, ["_test_fig"], out=lines.append)
        assert [(r.tokens, r.value) for r in records] == [(3, 3.0), (5, 5.0)]
        assert "test figure" in lines[0] and "T=5" in lines[2]
    finally:
        FIGURES.pop("_test_fig")


def test_stacks_figure_refuses_to_time_models_that_disagree():
    ctx = Context(configs={"tiny": TINY}, sizes=(4,), budget_s=0.0)
    theirs = torch_transformer(ctx.model("tiny"))
    with torch.no_grad():
        # no longer our weights (a random change: a constant one would vanish on zero-mean LayerNorm output)
        theirs.encoder.layers[0].linear1.weight.add_(
            0.5 * torch.randn_like(theirs.encoder.layers[0].linear1.weight)
        )
    ctx._cache[("torch_model", "tiny")] = theirs
    with torch.no_grad(), pytest.raises(AssertionError, match="disagree"):
        stacks_vs_torch(ctx)


def test_quick_run_writes_one_record_per_expected_figure(tmp_path, capsys):
    path = tmp_path / "bench.json"
    threads = torch.get_num_threads()
    argv = [
        "--quick",
        "--sizes",
        "8",
        "--budget",
        "0.001",
        "--pe-size",
        "16",
        "--square-size",
        "64",
    ]
    try:  # one thread: two on a shared 2-core machine can stall for seconds
        code = main([*argv, "--threads", "1", "--json", str(path)])
    finally:
        torch.set_num_threads(threads)
    assert code == 0
    data = json.loads(path.read_text())
    assert all(set(d) == set(RECORD_KEYS) for d in data)
    got = [(d["name"], d["tokens"]) for d in data]
    assert len(got) == len(set(got))  # one record per figure
    per_size = [
        "stacks_ours_ms",
        "stacks_torch_ms",
        "stacks_ratio",
        "forward_ms",
        "traced_ms",
        "traced_ratio",
        "traced_all_weights_ms",
        "traced_all_weights_ratio",
        "trace_MiB",
        "trace_minimum_MiB",
        "trace_memory_ratio",
        "layer_outputs_ratio",
    ]
    pe = [
        "vectorised_ms",
        "loop_ms",
        "speedup_vs_loop",
        "lists_loop_ms",
        "speedup_vs_lists_loop",
        "max_abs_diff",
    ]
    gflops = [
        "forward_gflops",
        "matmul_ffn_shape_gflops",
        "fraction_of_square_matmul",
        "fraction_of_ffn_shape_matmul",
    ]
    expected = {(f"app.{n}", 8) for n in per_size + gflops} | {(f"pe.{n}", 16) for n in pe}
    expected |= {("matmul.square_64_gflops", None), ("run.torch_threads", None)}
    expected |= {("run.load_avg_start", None), ("run.load_avg_end", None), ("run.on_cuda", None),
                 ("run.orjson_payloads", None)}
    assert set(got) == expected
    for d in data:
        assert math.isfinite(d["value"])
        assert (d["ok"] is None) == (d["target"] is None)
        if d["target"] is not None:
            assert d["ok"] == meets(d["value"], d["target"])
    by_name = {d["name"]: d for d in data}
    assert by_name["pe.max_abs_diff"]["ok"] is True
    # the memory ratio is pure arithmetic: check it against the two MiB figures it comes from
    ratio = by_name["app.trace_MiB"]["value"] / by_name["app.trace_minimum_MiB"]["value"]
    assert by_name["app.trace_memory_ratio"]["value"] == pytest.approx(ratio)
    # the layers' outputs alone over the minimum, in closed form: d_model (L_enc + L_dec) / (H T (L_enc + 2 L_dec))
    c, T = DEFAULT_APP_CONFIG, 8
    floor = c.d_model * (c.n_layers + c.decoder_layers) / (c.n_heads * T * (c.n_layers + 2 * c.decoder_layers))
    assert by_name["app.layer_outputs_ratio"]["value"] == pytest.approx(floor)
    assert by_name["run.on_cuda"]["value"] == 0  # --device defaults to the CPU
    assert by_name["run.orjson_payloads"]["value"] == 1  # requirements.txt pins orjson: payloads use it
    out = capsys.readouterr().out
    assert "torch threads:" in out and "targets met:" in out and "device: cpu" in out
    assert "figure payloads (plotly.io.to_json): orjson" in out


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA (tests/test_gpu.py runs there)")
def test_device_cuda_without_a_gpu_says_so_and_runs_nothing(capsys):
    with pytest.raises(SystemExit, match=r"--device: device='cuda' is not available on this machine; available: \['cpu'\]"):
        main(["--quick", "--device", "cuda"])
    with pytest.raises(SystemExit, match="unknown"):
        main(["--quick", "--device", "tpu"])
    assert "benchmark" not in capsys.readouterr().out


def test_cpu_timings_are_not_wrapped():
    fns = {"a": lambda: 1}
    assert synchronized(fns, "cpu") is fns


# -- server reruns (bench/apptest_rerun.py) ----------------------------------------------------
def test_rerun_figure_runs_each_kind_as_the_server_does(calls, builds):
    """Per round: a new sentence as a full-script run (sidebar + forward pass), only the layer/head as a
    full-script run (sidebar, cached forward), as a fragment run (neither), back to the layer/head drawn
    before as a fragment run (no figure built either), and a new sentence as the fragment run the
    server does for it (a new forward pass, no sidebar)."""
    from bench.app_figures import APP_SPECS, sentence, source_tokens
    from bench.apptest_rerun import rerun_times
    from bench.browser import app_spec

    spec = app_spec(APP_SPECS["app"], sentence(source_tokens(8), salt=97))  # a first sentence no test ran
    times = rerun_times(spec, 8, rounds=2)  # a head round and a layer round
    kinds = ("sentence", "layer_head", "fragment", "fragment_revisit", "fragment_sentence")
    assert set(times) == {*kinds, *(f"{k}_cpu" for k in kinds)}
    assert all(len(v) == 2 and v[0] > 0 and v[1] > 0 for v in times.values())
    # the first run + per round the full and the fragment sentence run the model; the first run + per
    # round the two full runs the sidebar
    assert calls == {"forward": 5, "sidebar": 5}
    # every run builds a view no run built before (a layer/head change is to one not yet drawn, also
    # with two layers), but the revisits: back to what the round's fragment sentence drew
    built = builds["attention"]
    assert len(built) == 9 and len({*built}) == 9


def test_rerun_records_pair_each_change_with_the_sentence_change_of_its_own_kind(monkeypatch):
    """The rerun figure's ratios: a layer/head change over a new sentence, full-script run over full-script run and
    fragment rerun over fragment rerun (the target, issue #6: both fragment reruns, <= 0.2), a revisit over the
    fragment sentence; wall time and (_cpu) CPU time each over its own kind. Each kind here takes its own time, so
    a ratio of two other kinds could not come out the same."""
    import bench.apptest_rerun as ar
    from bench.app_figures import APP_SPECS

    wall = {"sentence": 1.0, "layer_head": 0.5, "fragment": 0.1, "fragment_revisit": 0.03, "fragment_sentence": 0.8}
    cpu = {f"{k}_cpu": v / 4 * (1 + i) for i, (k, v) in enumerate(wall.items())}  # not a multiple of the wall's
    monkeypatch.setattr(ar, "rerun_times", lambda spec, tokens, rounds, app=None: {
        k: [v] * rounds for k, v in (wall | cpu).items()})
    ctx = Context(configs={"app": DEFAULT_APP_CONFIG}, sizes=(4,), budget_s=0.0, min_repeats=1, max_repeats=1)
    by = {r.name: r for r in ar.rerun_records(ctx, {"app": APP_SPECS["app"]}, rounds=3)}
    for unit, t in (("", wall), ("_cpu", {k[:-4]: v for k, v in cpu.items()})):
        assert by[f"app.rerun{unit}_full_sentence_ms"].value == pytest.approx(t["sentence"] * 1e3)
        assert by[f"app.rerun{unit}_full_layer_head_ratio"].value == pytest.approx(t["layer_head"] / t["sentence"])
        assert by[f"app.rerun{unit}_fragment_layer_head_ratio"].value == pytest.approx(
            t["fragment"] / t["fragment_sentence"])
        assert by[f"app.rerun{unit}_fragment_revisit_ratio"].value == pytest.approx(
            t["fragment_revisit"] / t["fragment_sentence"])
    target = {name for name, r in by.items() if r.target is not None}
    assert target == {"app.rerun_fragment_layer_head_ratio"} and by[next(iter(target))].target == ar.RERUN_TARGET


def test_the_header_warns_when_payloads_are_made_without_orjson(monkeypatch):
    from bench import runner

    assert runner.json_engine().startswith("orjson")
    monkeypatch.setitem(sys.modules, "orjson", None)  # as on a machine without it: the import fails
    assert runner.json_engine() == "json"
    assert "orjson missing" in runner.json_engine_line()
