"""The five figures of the benchmark, one registered function each (see bench/__init__.py)."""

from __future__ import annotations

import torch

from bench.core import Context, Record, figure, paired_ratio
from bench.flops import forward_flops, matmul_flops
from bench.pe_loop import looped_sinusoidal, looped_sinusoidal_lists
from model.masks import causal_mask, padding_mask
from model.positional import _sinusoidal_table
from model.transformer import Trace

MiB = 2**20

STACKS_TARGET = "<= 1.2"
TRACED_TARGET = "<= 1.5"
MEMORY_TARGET = "<= 1.25"
PE_TARGET = "> 100"
PE_AGREEMENT = 1e-6  # the loop and the vectorised table must agree to float32 rounding


# -- 1. ours vs torch.nn.Transformer ----------------------------------------------------------


@figure(
    "stacks",
    "1. Encoder + decoder stacks: ours vs torch.nn.Transformer (same weights)",
    "Both get the same embedded inputs (our embeddings, computed once, untimed) and the same "
    "masks (ours: src padding, tgt padding AND causal; torch: key-padding masks + causal "
    "tgt_mask, True = blocked). Outputs are checked equal first. ratio = median over rounds of "
    "ours / torch timed back to back.",
)
def stacks_vs_torch(ctx: Context) -> list[Record]:
    records = []
    for name in ctx.configs:
        model, theirs = ctx.model(name), ctx.torch_model(name)
        pad = model.config.pad_id
        for T in ctx.sizes:
            src, tgt, src_mask, tgt_mask = ctx.inputs(name, T)
            xs, xt = model.src_embed(src), model.tgt_embed(tgt)  # (B, T, d_model) each
            # torch's modules take the opposite convention (True = blocked): flipped here, at that boundary
            src_pad = ~model.src_mask(src)[:, 0, 0]  # (B, 1, 1, S) -> (B, S)
            tgt_pad = ~padding_mask(tgt, pad)[:, 0, 0]  # (B, T)
            causal = ~causal_mask(T, src.device)[0, 0]  # (T, T) True = future = blocked

            def ours(xs=xs, xt=xt, src_mask=src_mask, tgt_mask=tgt_mask, model=model):
                memory = model.encoder(xs, src_mask)
                return model.decoder(xt, memory, src_mask, tgt_mask)

            def theirs_stacks(
                xs=xs, xt=xt, src_pad=src_pad, tgt_pad=tgt_pad, causal=causal, theirs=theirs
            ):
                return theirs(
                    xs,
                    xt,
                    tgt_mask=causal,
                    src_key_padding_mask=src_pad,
                    tgt_key_padding_mask=tgt_pad,
                    memory_key_padding_mask=src_pad,
                )

            diff = (ours() - theirs_stacks()).abs().max().item()
            if not diff < 1e-3:
                raise AssertionError(f"{name} T={T}: our stacks and torch's disagree by {diff:.2e}")
            t = ctx.measure({"ours": ours, "torch": theirs_stacks})
            ctx.note(f"{name} T={T}: max |ours - torch| = {diff:.1e}, {t['ours'].repeats} repeats")
            ratio = paired_ratio(t["ours"], t["torch"])
            records += [
                Record(f"{name}.stacks_ours_ms", T, t["ours"].ms, "ms"),
                Record(f"{name}.stacks_torch_ms", T, t["torch"].ms, "ms"),
                Record(f"{name}.stacks_ratio", T, ratio, "x", STACKS_TARGET),
            ]
    return records


# -- 2. traced vs untraced forward ------------------------------------------------------------


def all_head_weights(trace: Trace) -> list[torch.Tensor]:
    """Every block's (B, H, Tq, Tk) softmax weights, derived from the block's kept inputs (q and k projected
    again, then eq. 1)."""
    weights = [layer.self_attn.weights for layer in trace.encoder.layers]
    for layer in trace.decoder.layers:
        weights += [layer.self_attn.weights, layer.cross_attn.weights]
    return weights


def forward_timing_key(name: str, T: int) -> tuple:
    return ("forward", name, T)


@figure(
    "traced",
    "2. Traced forward (return_trace=True) vs untraced model(src, tgt, src_mask, tgt_mask)",
    "Full forward incl. embeddings and generator. traced keeps each block's inputs (no projection, no "
    "T^2 tensor); '+weights' also derives every head's softmax weights of every block (Q and K "
    "projected again from those inputs, then eq. 1) "
    "(informational). ratios = median over rounds of traced / untraced timed back to back.",
)
def traced_vs_untraced(ctx: Context) -> list[Record]:
    records = []
    for name in ctx.configs:
        model = ctx.model(name)
        for T in ctx.sizes:
            src, tgt, src_mask, tgt_mask = ctx.inputs(name, T)

            def untraced(a=(src, tgt, src_mask, tgt_mask), model=model):
                return model(*a)

            def traced(a=(src, tgt, src_mask, tgt_mask), model=model):
                return model(*a, return_trace=True)

            def traced_weights(a=(src, tgt, src_mask, tgt_mask), model=model):
                _, trace = model(*a, return_trace=True)
                return all_head_weights(trace)

            t = ctx.measure({"untraced": untraced, "traced": traced, "weights": traced_weights})
            ctx.memo(forward_timing_key(name, T), lambda t=t: t["untraced"])  # for figure 5

            def ratio(timing, base=t["untraced"]):
                return paired_ratio(timing, base)

            records += [
                Record(f"{name}.forward_ms", T, t["untraced"].ms, "ms"),
                Record(f"{name}.traced_ms", T, t["traced"].ms, "ms"),
                Record(f"{name}.traced_ratio", T, ratio(t["traced"]), "x", TRACED_TARGET),
                Record(f"{name}.traced_all_weights_ms", T, t["weights"].ms, "ms"),
                Record(f"{name}.traced_all_weights_ratio", T, ratio(t["weights"]), "x"),
            ]
    return records


# -- 3. the trace's memory --------------------------------------------------------------------


def minimum_trace_bytes(config, S: int, T: int, batch: int = 1) -> int:
    """One float32 per head per score cell per block: enc self S x S, dec self T x T, cross T x S."""
    cells = config.n_layers * S * S + config.decoder_layers * (T * T + T * S)
    return 4 * batch * config.n_heads * cells


@figure(
    "memory",
    "3. Trace memory: Trace.nbytes() vs one float32 per head per score cell per block",
    "Stored: the token ids, the embeddings' sum with PE (the first layer's input), each layer's "
    "output (the residual stream), each cross-attention's query input where T > d_k, and the masks; "
    "the token embeddings are looked up again, q, k, v projected again from a block's inputs (the "
    "cross-attention's query input replayed from the layer's input where T <= d_k), the logits "
    "from the decoder's output, and scores and weights derived from q and k, all on demand "
    "(model/attention.py ProjectedRecord, README 'The trace'). So the "
    "trace grows as T * d_model and the 'minimum' as H * T^2: above it at short inputs, below "
    "it at long ones. blocks = enc layers + 2 x dec layers. layer_outputs_ratio = the layers' "
    "outputs alone (B, T, d_model each: the residual stream a trace of the forward pass is for, and "
    "what the app's trace download holds) over the same minimum: where it is above 1.25, no trace "
    "that keeps them can meet the target.",
)
def trace_memory(ctx: Context) -> list[Record]:
    records = []
    for name in ctx.configs:
        model, config = ctx.model(name), ctx.configs[name]
        for T in ctx.sizes:
            src, tgt, src_mask, tgt_mask = ctx.inputs(name, T)
            _, trace = model(src, tgt, src_mask, tgt_mask, return_trace=True)
            stored, minimum = trace.nbytes(), minimum_trace_bytes(config, T, T, ctx.batch)
            outputs = sum(layer.output.nbytes for stack in (trace.encoder, trace.decoder) for layer in stack.layers)
            records += [
                Record(f"{name}.trace_MiB", T, stored / MiB, "MiB"),
                Record(f"{name}.trace_minimum_MiB", T, minimum / MiB, "MiB"),
                Record(f"{name}.trace_memory_ratio", T, stored / minimum, "x", MEMORY_TARGET),
                Record(f"{name}.layer_outputs_ratio", T, outputs / minimum, "x"),
            ]
    return records


# -- 4. vectorised sinusoidal PE vs the double Python loop ------------------------------------


@figure(
    "pe",
    "4. Sinusoidal PE table: vectorised (uncached) vs seed 004's double Python loop",
    "vectorised = model.positional._sinusoidal_table.__wrapped__ (float64, rounded once); "
    "loop = the seed's element-by-element tensor writes, with i over pairs; lists = the same "
    "loop into Python lists (informational). T = max_len = d_model.",
)
def pe_speedup(ctx: Context) -> list[Record]:
    n = ctx.pe_size
    vectorised = _sinusoidal_table.__wrapped__
    fast = vectorised(n, n)
    diff = max(
        (looped_sinusoidal(n, n) - fast).abs().max().item(),
        (looped_sinusoidal_lists(n, n) - fast).abs().max().item(),
    )
    if not diff <= PE_AGREEMENT:
        raise AssertionError(f"looped and vectorised PE tables differ by {diff:.2e}")
    ctx.note(f"({n}, {n}) tables agree: max |loop - vectorised| = {diff:.1e}")
    t_vec = ctx.measure({"vectorised": lambda: vectorised(n, n)})["vectorised"]
    t_loop = ctx.measure({"loop": lambda: looped_sinusoidal(n, n)}, warmup=0)["loop"]
    t_list = ctx.measure({"lists": lambda: looped_sinusoidal_lists(n, n)}, warmup=0)["lists"]
    return [
        Record("pe.vectorised_ms", n, t_vec.ms, "ms"),
        Record("pe.loop_ms", n, t_loop.ms, "ms"),
        Record("pe.speedup_vs_loop", n, t_loop.median_s / t_vec.median_s, "x", PE_TARGET),
        Record("pe.lists_loop_ms", n, t_list.ms, "ms"),
        Record("pe.speedup_vs_lists_loop", n, t_list.median_s / t_vec.median_s, "x"),
        Record("pe.max_abs_diff", n, diff, "abs", f"<= {PE_AGREEMENT:g}"),
    ]


# -- 5. achieved GFLOP/s vs plain matmul ------------------------------------------------------


def matmul_gflops(ctx: Context, m: int, k: int, n: int) -> float:
    def build():
        gen = torch.Generator().manual_seed(ctx.seed)
        a = torch.randn(m, k, generator=gen).to(ctx.device)  # (m, k)
        b = torch.randn(k, n, generator=gen).to(ctx.device)  # (k, n)
        t = ctx.measure({"mm": lambda: torch.matmul(a, b)})["mm"]
        return matmul_flops(m, k, n) / t.median_s / 1e9

    return ctx.memo(("matmul", m, k, n), build)


@figure(
    "gflops",
    "5. Achieved GFLOP/s of the untraced forward vs plain torch.matmul in the same run",
    "FLOPs counted analytically (bench/flops.py: projections, QK^T, AV, FFN, generator; "
    "2 per multiply-add). Measured at the largest size of the run. fraction = forward rate / "
    "matmul rate; 'ffn-shape' matmul = (T, d_model) @ (d_model, d_ff).",
)
def achieved_gflops(ctx: Context) -> list[Record]:
    T = max(ctx.sizes)
    n = ctx.square_size
    square = matmul_gflops(ctx, n, n, n)
    records = [Record(f"matmul.square_{n}_gflops", None, square, "GFLOP/s")]
    for name in ctx.configs:
        model, config = ctx.model(name), ctx.configs[name]
        src, tgt, src_mask, tgt_mask = ctx.inputs(name, T)

        def untraced(model=model, a=(src, tgt, src_mask, tgt_mask)):
            return model(*a)

        # reuse figure 2's median when it ran in this run
        timing = ctx.memo(
            forward_timing_key(name, T), lambda f=untraced: ctx.measure({"f": f})["f"]
        )
        rate = forward_flops(config, T, T, ctx.batch) / timing.median_s / 1e9
        shape = matmul_gflops(ctx, T * ctx.batch, config.d_model, config.d_ff)
        ctx.note(
            f"{name}: forward = {forward_flops(config, T, T, ctx.batch) / 1e9:.3g} GFLOP at T={T}; "
            f"ffn-shape matmul = ({T * ctx.batch}x{config.d_model}) @ ({config.d_model}x{config.d_ff})"
        )
        records += [
            Record(f"{name}.forward_gflops", T, rate, "GFLOP/s"),
            Record(f"{name}.matmul_ffn_shape_gflops", T, shape, "GFLOP/s"),
            Record(f"{name}.fraction_of_square_matmul", T, rate / square, "fraction"),
            Record(f"{name}.fraction_of_ffn_shape_matmul", T, rate / shape, "fraction"),
        ]
    return records
