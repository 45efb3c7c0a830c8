"""A traced forward keeps each attention block's inputs, not its Q, K and V (model/attention.py
ProjectedRecord), and derives the logits on demand: the numbers are still the forward pass's own,
bit for bit, the memory is what the formula says, and a change of weights or inputs after the
trace is refused rather than shown."""

import pytest
import torch

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
def test_a_lean_trace_keeps_the_residual_stream_and_no_projection(norm):
    """Bytes kept = the formula: per stack the token embeddings and their sum with PE, every layer's
    output, and (pre-norm) each block's normed input and the final norm's output; cross-attention adds
    the decoder stream after self-attention; plus the masks and the positional table's rows."""
    model, src, tgt = make(norm)
    src_mask, tgt_mask = model.src_mask(src), model.tgt_mask(tgt)
    with torch.no_grad():
        _, trace = model(src, tgt, src_mask, tgt_mask, return_trace=True)
    if norm == "post":
        enc_rows, dec_rows = 2 + LE, 2 + 2 * LD  # decoder: outputs + cross-attention queries
    else:
        enc_rows, dec_rows = 2 + 2 * LE + 1, 2 + 3 * LD + 1  # + normed inputs + the final norm
    activations = 4 * B * D * (TS * enc_rows + TT * dec_rows)  # float32
    masks = src_mask.untyped_storage().nbytes() + tgt_mask.untyped_storage().nbytes()
    positional = 4 * D * (TS + TT)
    assert trace.nbytes() == activations + masks + positional
    for name, rec in blocks(trace):
        assert all(t is None or t.dim() == 3 or t.dtype == torch.bool for t in rec.kept()), name


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
