"""A traced forward keeps each attention block's inputs, not its Q, K and V (model/attention.py
ProjectedRecord), and derives the logits on demand: the numbers are still the forward pass's own,
bit for bit, the memory is what the formula says, and a change of weights or inputs after the
trace is refused rather than shown."""

import numpy as np
import pytest
import torch

from model.analysis import all_head_weights, record
from model.attention import AttentionRecord, ProjectedRecord
from model.config import TransformerConfig
from model.transformer import Transformer

D, H, LE, LD, B, TS, TT = 32, 4, 2, 3, 2, 7, 5  # distinct sizes, so that no wrong axis can hide


def make(norm: str) -> tuple[Transformer, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    config = TransformerConfig(src_vocab_size=40, tgt_vocab_size=30, d_model=D, n_heads=H, n_layers=LE,
                               n_decoder_layers=LD, d_ff=48, norm=norm)
    model = Transformer(config).eval()
    src = torch.tensor([[5, 6, 7, 8, 9, 10, 11], [5, 6, 7, 8, 0, 0, 0]])  # row 1 padded
    tgt = torch.tensor([[1, 4, 5, 6, 7], [1, 4, 5, 0, 0]])
    return model, src, tgt


def traced(model, src, tgt):
    return model(src, tgt, model.src_mask(src), model.tgt_mask(tgt), return_trace=True)


def blocks(trace):
    """(name, record) for every attention block, in forward order (the order of modules())."""
    for i, layer in enumerate(trace.encoder.layers):
        yield f"enc{i}", layer.self_attn
    for i, layer in enumerate(trace.decoder.layers):
        yield f"dec{i}.self", layer.self_attn
        yield f"dec{i}.cross", layer.cross_attn


def modules(model):
    for layer in model.encoder.layers:
        yield layer.self_attn
    for layer in model.decoder.layers:
        yield layer.self_attn
        yield layer.cross_attn


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_projected_q_k_v_and_logits_are_the_forward_pass_numbers_bit_for_bit(norm):
    model, src, tgt = make(norm)
    seen: list[torch.Tensor] = []  # every W^Q, W^K, W^V output of the forward pass, in call order
    hooks = [lin.register_forward_hook(lambda _m, _i, out: seen.append(out.clone()))
             for mha in modules(model) for lin in (mha.w_q, mha.w_k, mha.w_v)]
    with torch.no_grad():
        logits, trace = traced(model, src, tgt)
    for h in hooks:
        h.remove()
    records = list(blocks(trace))
    assert len(seen) == 3 * len(records) == 3 * (LE + 2 * LD)
    for name, rec in records:
        assert isinstance(rec, ProjectedRecord), name
        for i, got in enumerate((rec.q, rec.k, rec.v)):
            want = seen.pop(0).view(B, -1, H, D // H).transpose(1, 2)  # (B, H, T, d_k), as split_heads
            assert torch.equal(got, want), (name, "qkv"[i])
        assert rec.n_heads == H and rec.d_k == D // H
    assert torch.equal(trace.logits, logits)
    assert trace.kept_logits is None


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_every_derived_step_matches_a_trace_that_kept_q_k_v(norm):
    model, src, tgt = make(norm)
    with torch.no_grad():
        _, lean = traced(model, src, tgt)
    _, kept = traced(model, src, tgt)  # autograd on: the records keep what was computed
    for stack, full in ((lean.encoder, kept.encoder), (lean.decoder, kept.decoder)):
        assert stack.embeddings.kept_tokens is None and full.embeddings.kept_tokens is not None
        assert torch.equal(stack.embeddings.tokens, full.embeddings.tokens.detach())
    for (name, rec), (_, plain) in zip(blocks(lean), blocks(kept), strict=True):
        assert type(plain) is AttentionRecord and plain.q.requires_grad, name
        assert rec.score_shape() == plain.score_shape() == tuple(plain.weights.shape), name
        for step in ("q", "k", "v", "scores", "scaled", "allowed", "masked", "weights", "unscaled_weights",
                     "context"):
            assert torch.equal(getattr(rec, step), getattr(plain, step).detach()), (name, step)
        for step, t in rec.steps().items():
            assert torch.equal(t, plain.steps()[step].detach()), (name, step)
        for b in range(B):
            for h in (None, 0, H - 1):
                one, want = rec.select(b, h), plain.select(b, h)
                assert type(one) is AttentionRecord
                assert torch.equal(one.weights, want.weights.detach()) and torch.equal(one.v, want.v.detach())
    assert torch.equal(lean.logits, kept.logits.detach())


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_one_rows_weights_of_every_head_project_no_values(norm):
    """A grid of every head's weights (model.analysis.all_head_weights: the heads view) needs q and k of each
    block, not v: row_weights gives select(row).weights, bit for bit, without running the block's W^V (it
    projected all three, and the heads view then took longer than the traced forward that feeds it: issue #6).
    A replayed cross-attention query input runs its layer's self-attention block, W^V included: that one's own."""
    model, src, tgt = make(norm)
    with torch.no_grad():
        _, trace = traced(model, src, tgt)
    owner = {"encoder self": [layer.self_attn for layer in model.encoder.layers],
             "decoder self": [layer.self_attn for layer in model.decoder.layers],
             "cross": [layer.cross_attn for layer in model.decoder.layers]}
    for block, mhas in owner.items():
        ran = []  # which of this block's W^Q, W^K, W^V ran
        hooks = [getattr(mha, name).register_forward_hook(lambda *_, name=name, ran=ran: ran.append(name))
                 for mha in mhas for name in ("w_q", "w_k", "w_v")]
        got = [all_head_weights(trace, block, b, torch.float32) for b in range(B)]  # B x (layers, H, Tq, Tk)
        for h in hooks:
            h.remove()
        assert sorted(set(ran)) == ["w_k", "w_q"], (block, ran)
        for b, weights in enumerate(got):
            for layer, w in enumerate(weights):
                assert np.array_equal(w, record(trace, block, layer).select(b).weights[0].numpy()), (block, b, layer)
    for name, rec in blocks(trace):
        for b in range(B):
            assert torch.equal(rec.row_weights(b), rec.select(b).weights), (name, b)


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_a_lean_trace_keeps_the_residual_stream_and_no_projection(norm):
    """Bytes kept = the formula: per stack the token ids, their embeddings' sum with PE (the first layer's
    input), every layer's output and (pre-norm) the final norm's output; plus the masks. Not kept: the
    token embeddings (looked up again), the positional rows (a view of the model's table), pre-norm's
    normed block inputs and the cross-attention queries' input (both replayed from the layer's input)."""
    model, src, tgt = make(norm)
    src_mask, tgt_mask = model.src_mask(src), model.tgt_mask(tgt)
    with torch.no_grad():
        _, trace = model(src, tgt, src_mask, tgt_mask, return_trace=True)
    final_norm = norm == "pre"
    enc_rows, dec_rows = 1 + LE + final_norm, 1 + LD + final_norm
    activations = 4 * B * D * (TS * enc_rows + TT * dec_rows)  # float32
    ids = 8 * B * (TS + TT)  # int64
    masks = src_mask.untyped_storage().nbytes() + tgt_mask.untyped_storage().nbytes()
    assert trace.nbytes() == activations + ids + masks
    residual = {t.untyped_storage().data_ptr() for stack in (trace.encoder, trace.decoder)
                for t in (stack.embeddings.summed, stack.output, *(layer.output for layer in stack.layers))}
    for name, rec in blocks(trace):
        kept = [t for t in rec.kept() if t is not None and t.dtype != torch.bool]
        assert kept and all(t.untyped_storage().data_ptr() in residual for t in kept), name  # nothing of its own


def test_positional_rows_are_counted_only_where_the_trace_owns_them():
    """Sinusoidal and learned rows are views of the model's table (kept by the model); "none"'s zeros
    are made by the forward pass, so the trace keeps them."""
    sizes = {}
    for kind in ("sinusoidal", "learned", "none"):
        torch.manual_seed(0)
        config = TransformerConfig(src_vocab_size=40, tgt_vocab_size=30, d_model=D, n_heads=H, n_layers=1,
                                   n_decoder_layers=1, d_ff=48, positional=kind)
        model = Transformer(config).eval()
        _, src, tgt = make("post")
        with torch.no_grad():
            _, trace = traced(model, src, tgt)
        sizes[kind] = trace.nbytes()
        assert torch.equal(trace.encoder.embeddings.positional, model.src_embed.positional(TS)), kind
    assert sizes["sinusoidal"] == sizes["learned"] == sizes["none"] - 4 * D * (TS + TT)


def test_token_embeddings_are_looked_up_again_the_forward_pass_numbers():
    model, src, tgt = make("post")
    seen = []
    hooks = [e.token.register_forward_hook(lambda _m, _i, out: seen.append(out.clone()))
             for e in (model.src_embed, model.tgt_embed)]
    with torch.no_grad():
        _, trace = traced(model, src, tgt)
    for h in hooks:
        h.remove()
    for stack, rows in ((trace.encoder, seen[0]), (trace.decoder, seen[1])):
        e = stack.embeddings
        assert e.kept_tokens is None and torch.equal(e.ids, src if stack is trace.encoder else tgt)
        assert torch.equal(e.tokens, rows * D**0.5)  # x sqrt(d_model), the forward's own expression
        assert torch.equal(e.tokens + e.positional, e.summed)
    with torch.no_grad():
        model.tgt_embed.token.weight[4].add_(1.0)
    assert torch.equal(trace.encoder.embeddings.tokens, seen[0] * D**0.5)  # the source table did not change
    with pytest.raises(RuntimeError, match="token ids changed after this trace was taken"):
        _ = trace.decoder.embeddings.tokens
    _, graph = traced(model, src, tgt)  # autograd on: the tokens are kept, with their graph
    assert graph.encoder.embeddings.embed is None and graph.encoder.embeddings.tokens.requires_grad


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_a_replayed_block_input_is_refused_after_its_sources_change(norm):
    """The cross-attention queries are replayed through the layer's self-attention sub-layer: a change to
    that sub-layer's weights, or to the layer's input, or training mode, is refused rather than shown."""
    model, src, tgt = make(norm)
    with torch.no_grad():
        _, trace = traced(model, src, tgt)
    cross = trace.decoder.layers[1].cross_attn
    before = cross.q.clone()
    model.train()
    with pytest.raises(RuntimeError, match="training mode"):
        _ = cross.q
    model.eval()
    assert torch.equal(cross.q, before) and torch.equal(trace.decoder.layers[1].cross_attn.k, cross.k)
    with torch.no_grad():
        model.decoder.layers[1].self_attn.w_v.bias.add_(1.0)  # feeds the cross queries only through the replay
    with pytest.raises(RuntimeError, match="changed after this trace was taken"):
        _ = cross.q
    _ = trace.decoder.layers[0].cross_attn.q  # layer 0 does not depend on it
    with torch.no_grad():
        trace.decoder.layers[0].output.mul_(2.0)  # layer 1's input
    with pytest.raises(RuntimeError, match="changed after this trace was taken"):
        _ = trace.decoder.layers[1].self_attn.q


def test_changed_weights_or_inputs_are_refused_not_shown():
    model, src, tgt = make("post")
    with torch.no_grad():
        _, trace = traced(model, src, tgt)
        first, second = trace.encoder.layers[0].self_attn, trace.encoder.layers[1].self_attn
        before = second.weights.clone()
        model.encoder.layers[0].self_attn.w_q.weight.add_(1.0)  # in place: the same tensor, a new _version
    with pytest.raises(RuntimeError, match="changed after this trace was taken"):
        _ = first.weights
    assert torch.equal(second.weights, before)  # another block's weights did not change: still served
    with torch.no_grad():
        model.generator.bias.add_(1.0)
    with pytest.raises(RuntimeError, match="decoder output the logits come from"):
        _ = trace.logits
    with torch.no_grad():
        trace.encoder.layers[0].output.add_(1.0)  # the second layer's input
    with pytest.raises(RuntimeError, match="changed after this trace was taken"):
        _ = second.q
    model2, src, tgt = make("post")
    with torch.no_grad():
        _, trace2 = traced(model2, src, tgt)
    model2.to(torch.float64)  # replaced parameters: new data_ptr
    with pytest.raises(RuntimeError, match="changed after this trace was taken"):
        _ = trace2.decoder.layers[0].cross_attn.k


def test_inference_mode_and_autograd_keep_what_was_computed():
    model, src, tgt = make("post")
    with torch.inference_mode():  # inference tensors keep no version counter: nothing could be checked
        logits, trace = traced(model, src, tgt)
    with torch.no_grad():
        _, lean = traced(model, src, tgt)
    for (name, rec), (_, ref) in zip(blocks(trace), blocks(lean), strict=True):
        assert type(rec) is AttentionRecord, name
        assert torch.equal(rec.weights, ref.weights), name
    assert trace.kept_logits is logits
    # autograd on: the records keep the graph, so a loss on the weights reaches W^Q
    _, graph = traced(model, src, tgt)
    graph.decoder.layers[1].cross_attn.weights.pow(2).sum().backward()
    assert model.decoder.layers[1].cross_attn.w_q.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("tt", [D // H, D // H + 1])
def test_the_cross_queries_input_is_replayed_up_to_d_k_target_tokens_and_kept_beyond(norm, tt):
    """Replaying it costs a self-attention block, H * Tt^2 weights per row: done only where that is no more
    than the Tt * d_model floats it saves (Tt <= d_k); either way q is the forward pass's own, bit for bit."""
    model, src, _ = make(norm)
    tgt = torch.arange(1, tt + 1).repeat(B, 1)  # (B, tt)
    seen = []
    hooks = [layer.cross_attn.w_q.register_forward_hook(lambda _m, _i, out: seen.append(out.clone()))
             for layer in model.decoder.layers]
    with torch.no_grad():
        _, trace = traced(model, src, tgt)
    for h in hooks:
        h.remove()
    replayed = tt <= D // H
    for layer, want in zip(trace.decoder.layers, seen, strict=True):
        rec = layer.cross_attn
        kinds = [type(t).__name__ for t in rec.inputs]
        assert kinds == (["Replay", "Tensor", "Tensor"] if replayed else ["Tensor"] * 3)
        assert torch.equal(rec.q, want.view(B, tt, H, D // H).transpose(1, 2))
    own = 0 if replayed else 4 * B * D * tt * LD  # the cross stream, one (B, tt, d_model) per decoder layer
    final_norm = norm == "pre"
    activations = 4 * B * D * (TS * (1 + LE + final_norm) + tt * (1 + LD + final_norm)) + own
    masks = sum(m.untyped_storage().nbytes() for m in (model.src_mask(src), model.tgt_mask(tgt)))
    assert trace.nbytes() == activations + 8 * B * (TS + tt) + masks


def test_module_params_finds_what_module_parameters_finds():
    """The stamps' own parameter walk: every parameter of every submodule, each once, none missing."""
    from model.attention import module_params

    model, _, _ = make("pre")
    for module in (model, model.decoder.layers[0], model.encoder.layers[1].self_attn, model.generator,
                   model.src_embed.token, model.decoder.layers[0].sublayer2):
        found = module_params(module)
        assert len(found) == len({id(p) for p in found}) == len(list(module.parameters()))
        assert {id(p) for p in found} == {id(p) for p in module.parameters()}, type(module).__name__
