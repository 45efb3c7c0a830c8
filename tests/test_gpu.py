"""The GPU path: on CUDA, the model computes what PyTorch's own modules compute on CUDA, and what it
computes on the CPU, and the app draws the CPU's numbers.

Skipped where torch sees no CUDA device (CI has none). On a GPU machine: `pytest tests/test_gpu.py`.
float32 matrix products run in full precision (no TF32), as on the CPU: torch's default, pinned here
so that a machine-wide setting cannot loosen the comparison.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re

import numpy as np
import pandas as pd
import plotly.io as pio
import pytest
import torch
import torch.nn.functional as F
from conftest import charts, decode_array, needs_trained, randomise_norms, trained_available
from torch import nn

from lab.compute import load_model, model_fields, run
from lab.spec import VIEWS, FigureSpec
from lab.views import Models, build_view
from model import (
    DecoderLayer,
    EncoderLayer,
    MultiHeadAttention,
    Transformer,
    TransformerConfig,
    available_devices,
    causal_mask,
    padding_mask,
    pick_device,
)
from model.reference import (
    copy_attention,
    torch_decoder_layer,
    torch_encoder_layer,
    torch_transformer,
)

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

CUDA = torch.device("cuda")
B, H, TQ, TK, D = 3, 4, 5, 7, 24  # distinct sizes: a wrong axis cannot hide behind equal numbers


@pytest.fixture(autouse=True)
def full_float32():
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    yield
    torch.set_float32_matmul_precision(before)


def cfg(**kw) -> TransformerConfig:
    base = dict(src_vocab_size=40, tgt_vocab_size=37, d_model=D, n_heads=H, n_layers=2, d_ff=48, dropout=0.0)
    return TransformerConfig(**(base | kw))


def on_cuda(*tensors: torch.Tensor) -> None:
    assert all(t.device.type == "cuda" for t in tensors), [t.device for t in tensors]


def test_auto_picks_cuda_first():
    assert available_devices()[0] == "cuda"
    assert pick_device("auto").type == "cuda"
    assert pick_device("cuda").type == "cuda"


# -- the model against PyTorch's own modules, both on the GPU -----------------------------------
def attention_pair(seed: int):
    torch.manual_seed(seed)
    ours = MultiHeadAttention(D, H).eval()
    theirs = copy_attention(ours, nn.MultiheadAttention(D, H, batch_first=True)).eval()
    return ours.to(CUDA), theirs.to(CUDA)


def test_cross_attention_with_padding_equals_nn_multihead_attention():
    ours, theirs = attention_pair(0)
    q, kv = torch.randn(B, TQ, D, device=CUDA), torch.randn(B, TK, D, device=CUDA)
    ids = torch.randint(1, 9, (B, TK), device=CUDA)
    ids[0, 5:] = 0
    ids[2, 3:] = 0
    mask = padding_mask(ids, pad_id=0)  # (B, 1, 1, TK) True = may attend
    out, rec = ours(q, kv, kv, mask=mask)
    ref, ref_w = theirs(q, kv, kv, key_padding_mask=~mask[:, 0, 0], average_attn_weights=False)
    on_cuda(out, rec.weights, rec.q)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=0)
    torch.testing.assert_close(rec.weights, ref_w, atol=1e-5, rtol=0)
    fused = ours(q, kv, kv, mask=mask, return_trace=False)
    torch.testing.assert_close(fused, ref, atol=1e-5, rtol=0)


def test_causal_self_attention_equals_nn_multihead_attention_and_sdpa():
    ours, theirs = attention_pair(1)
    x = torch.randn(B, TK, D, device=CUDA)
    mask = causal_mask(TK, CUDA)
    out, rec = ours(x, x, x, mask=mask)
    ref, ref_w = theirs(x, x, x, attn_mask=~mask[0, 0], average_attn_weights=False)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=0)
    torch.testing.assert_close(rec.weights, ref_w, atol=1e-5, rtol=0)
    sdpa = F.scaled_dot_product_attention(rec.q, rec.k, rec.v, attn_mask=mask)
    torch.testing.assert_close(rec.context, sdpa, atol=1e-5, rtol=0)
    torch.testing.assert_close(rec.scaled, rec.q @ rec.k.transpose(-2, -1) / math.sqrt(D // H))
    w = rec.weights
    torch.testing.assert_close(w.sum(-1), torch.ones(B, H, TK, device=CUDA), atol=1e-6, rtol=0)
    assert torch.all(w.masked_select(~mask.expand_as(w)) == 0)


def test_a_row_with_no_key_gets_zero_weights_and_no_nan():
    ours, _ = attention_pair(2)
    q, kv = torch.randn(B, TQ, D, device=CUDA), torch.randn(B, TK, D, device=CUDA)
    mask = torch.ones(B, 1, TQ, TK, dtype=torch.bool, device=CUDA)
    mask[1, 0, 2] = False  # query 2 of sentence 1 may attend to nothing
    traced, rec = ours(q, kv, kv, mask=mask)
    fused = ours(q, kv, kv, mask=mask, return_trace=False)
    assert not torch.isnan(traced).any() and not torch.isnan(fused).any()
    assert torch.all(rec.weights[1, :, 2] == 0)
    torch.testing.assert_close(traced, fused, atol=1e-5, rtol=0)
    torch.testing.assert_close(traced[1, 2], ours.w_o.bias, atol=1e-6, rtol=0)


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_layers_equal_nn_transformer_layers(norm):
    torch.manual_seed(3)
    enc = randomise_norms(EncoderLayer(cfg(norm=norm)).eval())  # each LayerNorm its own (see conftest)
    dec = randomise_norms(DecoderLayer(cfg(norm=norm)).eval())
    enc_ref, dec_ref = torch_encoder_layer(enc).to(CUDA), torch_decoder_layer(dec).to(CUDA)
    enc, dec = enc.to(CUDA), dec.to(CUDA)
    src = torch.randint(1, 9, (B, TK), device=CUDA)
    src[2, 5:] = 0
    src_mask = padding_mask(src, 0)
    x, y = torch.randn(B, TK, D, device=CUDA), torch.randn(B, TQ, D, device=CUDA)
    got = enc(x, src_mask)
    want = enc_ref(x, src_key_padding_mask=~src_mask[:, 0, 0])
    keep = src_mask[:, 0, 0]  # torch's fast path may zero padded query rows: compare real tokens
    torch.testing.assert_close(got[keep], want[keep], atol=1e-5, rtol=0)
    got = dec(y, x, src_mask=src_mask, tgt_mask=causal_mask(TQ, CUDA))
    want = dec_ref(y, x, tgt_mask=~causal_mask(TQ, CUDA)[0, 0], memory_key_padding_mask=~src_mask[:, 0, 0])
    on_cuda(got)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=0)


def test_whole_model_equals_nn_transformer():
    torch.manual_seed(4)
    model = randomise_norms(Transformer(cfg(n_decoder_layers=3)).eval())
    ref = torch_transformer(model).to(CUDA)
    model = model.to(CUDA)
    src = torch.randint(1, 40, (2, 9), device=CUDA)
    tgt = torch.randint(1, 37, (2, 6), device=CUDA)
    src[1, 7:] = 0
    src_mask, tgt_mask = model.src_mask(src), model.tgt_mask(tgt)
    got = model.decode(tgt, model.encode(src, src_mask), src_mask, tgt_mask)
    want = ref(model.src_embed(src), model.tgt_embed(tgt), src_key_padding_mask=~src_mask[:, 0, 0],
               memory_key_padding_mask=~src_mask[:, 0, 0], tgt_mask=~causal_mask(6, CUDA)[0, 0])
    torch.testing.assert_close(got, want, atol=1e-4, rtol=0)


# -- the benchmark on the GPU --------------------------------------------------------------------
def test_the_benchmark_times_gpu_work_to_its_end_and_runs_on_the_gpu(tmp_path):
    from bench.configs import DEFAULT_APP_CONFIG
    from bench.core import Context, synchronized
    from bench.runner import main

    a = torch.randn(4096, 4096, device=CUDA)
    torch.cuda.synchronize()
    timed = synchronized({"mm": lambda: a @ a @ a @ a}, "cuda")["mm"]
    timed()
    assert torch.cuda.current_stream().query()  # every launched kernel has finished when the call returns
    ctx = Context(configs={"app": DEFAULT_APP_CONFIG}, sizes=(8,), device="cuda")
    src, tgt, src_mask, tgt_mask = ctx.inputs("app", 8)
    on_cuda(src, tgt, src_mask, tgt_mask, next(ctx.model("app").parameters()),
            next(ctx.torch_model("app").parameters()))
    path = tmp_path / "bench.json"
    threads = torch.get_num_threads()
    try:
        assert main(["--quick", "--device", "cuda", "--sizes", "8", "--budget", "0.001", "--pe-size", "16",
                     "--square-size", "64", "--json", str(path)]) == 0
    finally:
        torch.set_num_threads(threads)
    got = {(d["name"], d["tokens"]): d for d in json.loads(path.read_text())}
    assert got[("run.on_cuda", None)]["value"] == 1
    stacks = got[("app.stacks_ratio", 8)]  # ours over torch.nn.Transformer, both timed on the GPU
    assert stacks["ok"] is not None and 0 < stacks["value"] < 100
    assert 0 < got[("app.forward_gflops", 8)]["value"] < 1e6


# -- the same weights on the CPU and on the GPU ---------------------------------------------------
def blocks(trace):
    out = []
    for layer in trace.encoder.layers:
        out.append(layer.self_attn)
    for layer in trace.decoder.layers:
        out += [layer.self_attn, layer.cross_attn]
    return out


@pytest.mark.parametrize("t_tgt", [D // H, D // H + 2])  # cross-attention queries replayed (T <= d_k), kept
@pytest.mark.parametrize(("dtype", "tol"), [(torch.float64, 1e-10), (torch.float32, 2e-5)])
def test_the_trace_on_the_gpu_is_the_trace_on_the_cpu(dtype, tol, t_tgt):
    torch.manual_seed(5)
    cpu_model = Transformer(cfg()).eval().to(dtype)
    gpu_model = Transformer(cfg()).eval().to(dtype)
    gpu_model.load_state_dict(cpu_model.state_dict())
    gpu_model = gpu_model.to(CUDA)
    src, tgt = torch.randint(1, 40, (2, 9)), torch.randint(1, 37, (2, t_tgt))
    src[1, 6:] = 0
    with torch.no_grad():
        want, want_trace = cpu_model(src, tgt, cpu_model.src_mask(src), cpu_model.tgt_mask(tgt), return_trace=True)
        s, t = src.to(CUDA), tgt.to(CUDA)
        got, got_trace = gpu_model(s, t, gpu_model.src_mask(s), gpu_model.tgt_mask(t), return_trace=True)
    on_cuda(got)
    torch.testing.assert_close(got.cpu(), want, atol=tol, rtol=0)
    for mine, theirs in zip(blocks(got_trace), blocks(want_trace), strict=True):
        for name in ("q", "k", "v", "scaled", "weights", "context"):
            a, b = getattr(mine, name), getattr(theirs, name)
            on_cuda(a)
            torch.testing.assert_close(a.cpu(), b, atol=tol, rtol=0, msg=name)
        assert torch.equal(mine.allowed.cpu(), theirs.allowed)
    # what the trace replays rather than keeps (README "The trace"): looked up or computed again on the GPU
    for stack in ("encoder", "decoder"):
        mine, theirs = getattr(got_trace, stack), getattr(want_trace, stack)
        for name in ("tokens", "positional", "summed"):
            a = getattr(mine.embeddings, name)
            on_cuda(a)
            torch.testing.assert_close(a.cpu(), getattr(theirs.embeddings, name), atol=tol, rtol=0, msg=name)
        for i, (a, b) in enumerate(zip(mine.layers, theirs.layers, strict=True)):
            torch.testing.assert_close(a.output.cpu(), b.output, atol=tol, rtol=0, msg=f"{stack} layer {i}")
    on_cuda(got_trace.logits)
    torch.testing.assert_close(got_trace.logits.cpu(), want_trace.logits, atol=tol, rtol=0)
    torch.testing.assert_close(got_trace.logits, got, atol=0, rtol=0)  # the generator replayed, bit for bit


# -- the app's numbers: lab.compute and lab.views with device="cuda" ------------------------------
def numbers_equal(got, want, where: str, atol: float = 1e-4) -> None:
    """Two figures' JSON (or parts of it): numeric arrays equal to atol, other values equal; strings that
    print numbers equal but for those numbers, each within its last printed digit (or atol)."""
    if isinstance(want, dict) and "bdata" in want or isinstance(want, list) and want and all(
            isinstance(v, (int, float)) or v is None for v in want):
        a, b = decode_array(got), decode_array(want)
        assert a.shape == b.shape, where
        np.testing.assert_allclose(a, b, atol=atol, rtol=1e-4, equal_nan=True, err_msg=where)
    elif isinstance(want, dict):
        assert set(got) == set(want), where
        for key in want:
            numbers_equal(got[key], want[key], f"{where}.{key}", atol)
    elif isinstance(want, list):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            numbers_equal(g, w, f"{where}[{i}]", atol)
    elif isinstance(want, float):
        assert got == pytest.approx(want, abs=atol, rel=1e-4), where
    elif isinstance(want, str) and NUMBER.search(want):
        texts_equal(got, want, where, atol)
    else:
        assert got == want, where


# viz writes "3.6e−07" (viz.labels.num); a colour's hex digits ("#3e4989") are no number
NUMBER = re.compile(r"(?<![\w#.])[-−]?\d+(?:\.(\d+))?(?:e([-+−]?\d+))?(?!\w)")


def texts_equal(got: str, want: str, where: str, atol: float) -> None:
    """A title or note that prints numbers ("max |difference| 4.4e-15", "weight 0.309"): the words equal,
    a whole number ("head 3") exactly, a decimal within one unit of its last printed digit or atol (float
    rounding differs between devices; "4.4e-15" against "1.1e-14" is noise on both)."""
    assert isinstance(got, str) and NUMBER.sub("#", got) == NUMBER.sub("#", want), (where, got, want)
    if got == want:
        return
    for g, w in zip(NUMBER.finditer(got), NUMBER.finditer(want), strict=True):
        gv, wv = (float(m[0].replace("−", "-")) for m in (g, w))
        if w[1] is None and w[2] is None:
            # a count, an index, a layer or a head; or a difference the CPU found exactly 0 ("max |A − B| = 0" beside
            # the GPU's 5.96e−08: float rounding on either)
            assert gv == wv or (wv == 0 and abs(gv) <= atol), (where, got, want)
            continue
        unit = 10.0 ** (-len(w[1] or "") + int((w[2] or "0").replace("−", "-")))
        assert abs(gv - wv) <= max(1.01 * unit, atol, 1e-3 * abs(wv)), (where, got, want)


def tables_equal(got: pd.DataFrame, want: pd.DataFrame, where: str) -> None:
    assert list(got.columns) == list(want.columns) and got.shape == want.shape, where
    for col in want.columns:
        if pd.api.types.is_float_dtype(want[col]):
            np.testing.assert_allclose(got[col].to_numpy(float), want[col].to_numpy(float), atol=1e-4,
                                       rtol=1e-4, equal_nan=True, err_msg=f"{where}.{col}")
        else:
            assert got[col].tolist() == want[col].tolist(), f"{where}.{col}"


def sent(figure) -> dict:
    """The figure's JSON as the browser receives it (ui/chart.py)."""
    return json.loads(pio.to_json(figure, validate=False))


def draw(spec: FigureSpec, view: str) -> dict:
    result = build_view(view, spec, Models(load_model))
    return {p.key: p for p in result.panels}


SPEC = FigureSpec(sentence_a="你喜欢她", sentence_b="她喜欢你", d_model=32, n_heads=4, n_layers=2, d_ff=64)


def test_the_app_model_loads_and_runs_on_the_gpu():
    spec = dataclasses.replace(SPEC, device="cuda")
    torch.set_float32_matmul_precision("high")  # TF32 allowed, as some setups have it
    loaded = load_model(model_fields(spec))
    assert torch.get_float32_matmul_precision() == "highest"  # the app's numbers are full float32
    assert loaded.model.device.type == "cuda"
    assert all(p.device.type == "cuda" for p in loaded.model.parameters())
    assert not any(p.requires_grad for p in loaded.model.parameters())
    out = run(loaded, spec.sentence_a, spec.sentence_b, spec.mask)
    on_cuda(out.trace.encoder.layers[0].self_attn.q)
    torch.set_float32_matmul_precision("high")
    auto = load_model(model_fields(dataclasses.replace(spec, device="auto")))  # a spec may say "auto"
    assert auto.model.device.type == "cuda" and torch.get_float32_matmul_precision() == "highest"


@pytest.mark.parametrize("fmt", ["npz", "safetensors"])
def test_a_gpu_runs_trace_file_holds_the_cpus_arrays(tmp_path, fmt):
    from lab.tracefile import load_trace, save_trace

    saved = {}
    for device in ("cpu", "cuda"):
        spec = dataclasses.replace(SPEC, device=device)
        out = run(load_model(model_fields(spec)), spec.sentence_a, spec.sentence_b, spec.mask)
        (tmp_path / device).mkdir()
        save_trace(out, spec, tmp_path / device / f"trace.{fmt}", fmt)
        saved[device] = load_trace(tmp_path / device / "trace")
    (got, got_meta), (want, want_meta) = saved["cuda"], saved["cpu"]
    assert list(got) == list(want) and len(want) > 20
    for name, array in want.items():
        assert got[name].dtype == array.dtype and got[name].shape == array.shape, name
        np.testing.assert_allclose(got[name], array, atol=1e-5, rtol=1e-5, err_msg=name)
    assert got_meta["spec"]["device"] == "cuda" and want_meta["spec"]["device"] == "cpu"


@pytest.mark.parametrize("view", [v for v in VIEWS if v != "translate"])
@pytest.mark.parametrize("mask", ["paper", "padding", "look-ahead"])
def test_every_view_on_the_gpu_draws_the_cpus_numbers(view, mask):
    cpu = dataclasses.replace(SPEC, views=(view,), mask=mask, head=1, layer=1)
    gpu = dataclasses.replace(cpu, device="cuda")
    want, got = draw(cpu, view), draw(gpu, view)
    assert list(got) == list(want)
    assert any(p.figure is not None or p.has_table for p in want.values())
    for key, panel in want.items():
        if panel.figure is not None:
            numbers_equal(sent(got[key].figure), sent(panel.figure), f"{view}.{key}")
        if panel.has_table:
            tables_equal(got[key].table, panel.table, f"{view}.{key}")


APP_CASES = [(view, "random") for view in VIEWS if view != "translate"] + [("order", "zh-en"), ("translate", "zh-en")]


@pytest.mark.parametrize(("view", "model"), APP_CASES)
def test_the_app_offers_the_gpu_and_draws_the_cpus_numbers_there(make_app, view, model):
    from ui import cache

    if model != "random" and not trained_available():
        pytest.skip("the trained demo models (assets/models) are missing")
    at = make_app(view=view, model=model, sentence_a="你喜欢她", sentence_b="她喜欢你", head=1, share=True)
    box = at.selectbox(key="device")
    assert list(box.options) == ["cpu", "cuda"] and box.value == "cpu"  # the CPU stays the default
    want = charts(at)
    at.selectbox(key="device").set_value("cuda").run()
    assert not at.exception and not at.error
    got = charts(at)
    assert [c["key"] for c in got] == [c["key"] for c in want]
    assert want or view == "tokens"  # the tokens view is tables only
    for g, w in zip(got, want, strict=True):
        numbers_equal(g["figure"], w["figure"], g["key"])
    spec = FigureSpec(model=model, device="cuda")
    assert cache.load(model_fields(spec)).model.device.type == "cuda"
    assert '"device": "cuda"' in at.code[-1].value  # the share link's spec names the device


@needs_trained
def test_the_trained_translator_on_the_gpu_translates_as_on_the_cpu():
    from model.demo import load_demo
    from ui.state import PRESETS

    cpu, gpu = load_demo("zh-en"), load_demo("zh-en", device="cuda")
    assert gpu.model.device.type == "cuda"
    texts = [t for pair in PRESETS.values() for t in pair if t] + ["我爱你", "她有一只猫"]
    assert gpu.translate_many(texts) == cpu.translate_many(texts)
    spec = FigureSpec(model="zh-en", sentence_a="你喜欢她", sentence_b="她喜欢你", views=("translate",))
    want, got = draw(spec, "translate"), draw(dataclasses.replace(spec, device="cuda"), "translate")
    for key, panel in want.items():
        if panel.figure is not None:
            numbers_equal(sent(got[key].figure), sent(panel.figure), f"translate.{key}")


def test_training_on_the_gpu_learns_and_saves_a_checkpoint_the_cpu_reads(tmp_path):
    from model.checkpoint import load_checkpoint, save_checkpoint
    from model.data import generate_corpus
    from model.train import Trainer, TrainSettings, batch_loss, encode_pairs, make_tokenizers

    pairs = generate_corpus()[:200]
    src_tok, tgt_tok = make_tokenizers(pairs)
    config = TransformerConfig(src_vocab_size=src_tok.vocab_size, tgt_vocab_size=tgt_tok.vocab_size, d_model=16,
                               n_heads=2, n_layers=1, d_ff=32, dropout=0.0, max_len=32)
    data = encode_pairs(pairs, src_tok, tgt_tok)
    torch.manual_seed(0)
    trainer = Trainer(Transformer(config), data,
                      TrainSettings(warmup=10, batch_size=32, label_smoothing=0.0, device="cuda"))
    assert trainer.device.type == "cuda" and trainer.model.device.type == "cuda"
    src, tgt_in, labels = (t.to(CUDA) for t in (data.src, data.tgt_in, data.labels))

    def held_loss():
        trainer.model.eval()
        with torch.no_grad():
            return batch_loss(trainer.model, src, tgt_in, labels)[0].item()

    before = held_loss()
    stats = list(trainer.run(40))
    assert all(math.isfinite(s.loss) and 0.0 <= s.accuracy <= 1.0 for s in stats)
    assert held_loss() < 0.8 * before
    save_checkpoint(tmp_path, trainer.model, src_tok, tgt_tok)
    back = load_checkpoint(tmp_path)
    assert back.model.device.type == "cpu"
    trainer.model.eval()
    with torch.no_grad():
        a, b = src[:4], tgt_in[:4]
        want = trainer.model(a, b, trainer.model.src_mask(a), trainer.model.tgt_mask(b)).cpu()
        a, b = a.cpu(), b.cpu()
        got = back.model(a, b, back.model.src_mask(a), back.model.tgt_mask(b))
    torch.testing.assert_close(got, want, atol=0.05, rtol=0.01)  # the checkpoint stores float16 weights
