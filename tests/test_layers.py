"""LayerNorm and whole layers proven against nn.LayerNorm / nn.TransformerEncoderLayer / DecoderLayer."""

import dataclasses

import pytest
import torch
from conftest import randomise_norms
from torch import nn

from model import (
    DecoderLayer,
    EncoderLayer,
    LayerNorm,
    Transformer,
    TransformerConfig,
    causal_mask,
    padding_mask,
)
from model.positional import sinusoidal_encoding
from model.reference import copy_norm, torch_decoder_layer, torch_encoder_layer, torch_transformer

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA"))]


def cfg(**kw):
    base = dict(src_vocab_size=40, tgt_vocab_size=37, d_model=24, n_heads=4, n_layers=2, d_ff=48, dropout=0.0)
    base.update(kw)
    return TransformerConfig(**base)


def test_layer_norm_uses_biased_variance_like_torch():
    x = torch.tensor([[1.0, 0.0, 0.0, 0.0]])
    ours = LayerNorm(4, eps=0.0)
    assert ours(x)[0, 0].item() == pytest.approx(1.7320508, abs=1e-6)  # x.std() would give 1.5
    torch.manual_seed(0)
    ours = LayerNorm(24)
    with torch.no_grad():
        ours.weight.normal_()
        ours.bias.normal_()
    theirs = nn.LayerNorm(24)
    copy_norm(ours, theirs)
    x = torch.randn(3, 5, 24) * 4 + 2
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-5, rtol=0)
    assert set(ours.state_dict()) == set(theirs.state_dict())


def test_layer_norm_keeps_eps_inside_the_square_root():
    """(x - mean) / sqrt(var + eps), as nn.LayerNorm: not (x - mean) / (sqrt(var) + eps). At eps = 1e-5 the two
    differ by ~1e-6 on unit-variance rows, within the tolerances above; an eps near the variance tells them apart."""
    x = torch.tensor([[1.0, 0.0, 0.0, 0.0]])  # mean 1/4, biased var 3/16
    ours = LayerNorm(4, eps=0.25)
    assert ours(x)[0, 0].item() == pytest.approx(0.75 / (3 / 16 + 0.25) ** 0.5, abs=1e-6)  # 1.134; outside: 1.098
    torch.manual_seed(1)
    x = torch.randn(3, 5, 24) * 0.5  # variance ~0.25, the same order as eps
    ours, theirs = LayerNorm(24, eps=0.25), nn.LayerNorm(24, eps=0.25)
    copy_norm(ours, theirs)
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-5, rtol=0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_layer_norm_in_half_precision_matches_torch_where_the_squares_overflow(dtype, device):
    """float16 squares overflow past 65504: a row with |x − mean| ~ 300 came out as zeros (a mutation walk). The
    statistics are float32, as nn.LayerNorm's, so the result is torch's, to the last bit here."""
    torch.manual_seed(0)
    ours, theirs = LayerNorm(16), nn.LayerNorm(16)
    with torch.no_grad():
        ours.weight.normal_()
        ours.bias.normal_()
    copy_norm(ours, theirs)
    ours, theirs = ours.to(device, dtype), theirs.to(device, dtype)
    x = (torch.randn(4, 7, 16) * 200).to(device, dtype)  # (x − mean)² well past float16's largest, 65504
    assert torch.isinf((x.float() - x.float().mean(-1, keepdim=True)).pow(2).to(torch.float16)).any()
    with torch.no_grad():
        out, want = ours(x), theirs(x)
    assert out.dtype == dtype and out.device.type == device and torch.isfinite(out).all() and out.abs().amax(-1).min() > 0.1
    torch.testing.assert_close(out.float(), want.float(), atol=2e-2, rtol=1e-2)


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer_equals_torch(norm, activation):
    torch.manual_seed(0)
    ours = randomise_norms(EncoderLayer(cfg(norm=norm, activation=activation)).eval())
    theirs = torch_encoder_layer(ours)
    assert theirs.norm_first is (norm == "pre")  # the reference copies our layout: it must be the config's
    x = torch.randn(3, 7, 24)
    ids = torch.randint(1, 9, (3, 7))
    ids[1, 4:] = 0
    mask = padding_mask(ids, 0)
    got = ours(x, mask)
    want = theirs(x, src_key_padding_mask=~mask[:, 0, 0])
    keep = mask[:, 0, 0]  # torch's fast path may zero padded query rows; compare real tokens
    torch.testing.assert_close(got[keep], want[keep], atol=1e-5, rtol=0)
    traced, rec = ours(x, mask, return_trace=True)
    torch.testing.assert_close(traced, got, atol=1e-5, rtol=0)
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in theirs.parameters())


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_decoder_layer_equals_torch(norm):
    torch.manual_seed(1)
    ours = randomise_norms(DecoderLayer(cfg(norm=norm)).eval())
    theirs = torch_decoder_layer(ours)
    assert theirs.norm_first is (norm == "pre")  # the paper's post-norm is LayerNorm(x + Sublayer(x))
    x, memory = torch.randn(3, 5, 24), torch.randn(3, 8, 24)
    src = torch.randint(1, 9, (3, 8))
    src[2, 6:] = 0
    src_mask = padding_mask(src, 0)
    got = ours(x, memory, src_mask=src_mask, tgt_mask=causal_mask(5))
    want = theirs(
        x, memory, tgt_mask=~causal_mask(5)[0, 0], memory_key_padding_mask=~src_mask[:, 0, 0]
    )
    torch.testing.assert_close(got, want, atol=1e-5, rtol=0)
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in theirs.parameters())


def test_every_sublayer_has_its_own_layer_norm():
    # seed 001's DecodeLayer shares one LayerNorm across sub-layers: a bug
    layer = DecoderLayer(cfg())
    norms = [m for m in layer.modules() if isinstance(m, LayerNorm)]
    assert len(norms) == 3
    assert len({id(n.weight) for n in norms}) == 3
    torch_layer = nn.TransformerDecoderLayer(24, 4, 48)
    n_ours = sum(1 for k in layer.state_dict() if "norm" in k)
    n_theirs = sum(1 for k in torch_layer.state_dict() if "norm" in k)
    assert n_ours == n_theirs == 6


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_whole_transformer_equals_nn_transformer(norm):
    torch.manual_seed(2)
    model = randomise_norms(Transformer(cfg(norm=norm, n_decoder_layers=3)).eval())
    ref = torch_transformer(model)
    src, tgt = torch.randint(1, 40, (2, 9)), torch.randint(1, 37, (2, 6))
    src[1, 7:] = 0
    tgt[1, 4:] = 0  # a padded target: its [PAD] queries see the real tokens before them, never a [PAD] key
    src_mask, tgt_mask = model.src_mask(src), model.tgt_mask(tgt)
    got = model.decode(tgt, model.encode(src, src_mask), src_mask, tgt_mask)
    want = ref(
        model.src_embed(src), model.tgt_embed(tgt),
        src_key_padding_mask=~src_mask[:, 0, 0], memory_key_padding_mask=~src_mask[:, 0, 0],
        tgt_mask=~causal_mask(6)[0, 0], tgt_key_padding_mask=tgt == 0,
    )
    torch.testing.assert_close(got, want, atol=1e-4, rtol=0)  # every row, the [PAD] queries' too
    logits, trace = model(src, tgt, src_mask, tgt_mask, return_trace=True)
    torch.testing.assert_close(logits, model.generator(got), atol=1e-5, rtol=0)
    assert len(trace.encoder.layers) == 2 and len(trace.decoder.layers) == 3


def test_config_errors_name_the_field_and_the_fix():
    with pytest.raises(ValueError, match=r"d_model=30 is not divisible by n_heads=4.*choose n_heads"):
        TransformerConfig(d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="positional='rope' is unknown"):
        TransformerConfig(positional="rope")
    with pytest.raises(ValueError, match="norm"):
        TransformerConfig(norm="middle")
    with pytest.raises(ValueError, match="unknown TransformerConfig field"):
        TransformerConfig.from_dict({"d_modle": 8})
    c = TransformerConfig()
    assert (c.d_model, c.n_heads, c.n_layers, c.d_ff, c.dropout, c.max_len) == (512, 8, 6, 2048, 0.1, 5000)
    assert TransformerConfig.from_dict(c.to_dict()) == c
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.d_model = 4  # frozen


def test_too_long_and_empty_inputs_are_refused_not_truncated():
    model = Transformer(cfg(max_len=10)).eval()
    with pytest.raises(ValueError, match="longer than max_len=10"):
        model.encode(torch.ones(1, 11, dtype=torch.long))
    with pytest.raises(ValueError, match="empty"):
        model.encode(torch.ones(1, 0, dtype=torch.long))
    with pytest.raises(ValueError, match="token ids"):
        model.encode(torch.full((1, 3), 999))
    with pytest.raises(ValueError, match=r"token ids must have shape \(batch, length\), got \(3,\)"):
        model.encode(torch.ones(3, dtype=torch.long))  # a sentence without its batch axis


def test_stacks_check_each_mask_once_and_zero_rows_with_no_key():
    torch.manual_seed(3)
    model = Transformer(cfg()).eval()
    src, tgt = torch.randint(1, 40, (2, 5)), torch.randint(1, 37, (2, 4))
    src[1] = 0  # an all-padding source: its queries, and every cross-attention query, see no key
    src_mask, tgt_mask = model.src_mask(src), model.tgt_mask(tgt)
    with torch.no_grad():
        got = model(src, tgt, src_mask, tgt_mask)
        want, _ = model(src, tgt, src_mask, tgt_mask, return_trace=True)
    assert not torch.isnan(got).any()
    torch.testing.assert_close(got, want, atol=1e-5, rtol=0)
    xs, xt = model.src_embed(src), model.tgt_embed(tgt)
    with pytest.raises(ValueError, match="boolean"):
        model.encoder(xs, src_mask.float())
    with pytest.raises(ValueError, match="does not broadcast"):
        model.decoder(xt, model.encoder(xs), src_mask[..., :3], tgt_mask)
    with pytest.raises(ValueError, match="would enlarge"):
        model.encoder(xs[:1], src_mask)  # a mask for 2 sentences, scores for 1
    with pytest.raises(ValueError, match="memory must have shape"):
        model.decoder(xt, xs[:, :, :5])


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_whole_transformer_in_float64_equals_nn_transformer_to_float64_rounding(norm):
    """The tolerances above (1e-5, 1e-4) are float32's: a step done in float32 inside a float64 model, or any
    change of the maths smaller than 1e-4, passes them. In float64, with both masks (source padding; target
    padding AND look-ahead), Ts != Tt, post- and pre-norm, every path must give torch's numbers to ~1e-12."""
    torch.manual_seed(5)
    model = randomise_norms(Transformer(cfg(norm=norm, n_decoder_layers=3)).eval())
    ref = torch_transformer(model).double()  # float32 weights, widened: the same numbers on both sides
    model = model.double()
    src, tgt = torch.randint(1, 40, (3, 9)), torch.randint(1, 37, (3, 6))
    src[1, 6:] = 0
    src[2, 8:] = 0
    tgt[1, 3:] = 0
    src_mask, tgt_mask = model.src_mask(src), model.tgt_mask(tgt)
    xs, xt = model.src_embed(src), model.tgt_embed(tgt)
    assert xs.dtype == xt.dtype == torch.float64
    with torch.no_grad():
        want = ref(
            xs, xt, src_key_padding_mask=~src_mask[:, 0, 0], memory_key_padding_mask=~src_mask[:, 0, 0],
            tgt_mask=~causal_mask(6)[0, 0], tgt_key_padding_mask=~padding_mask(tgt, 0)[:, 0, 0],
        )
        memory = model.encode(src, src_mask)
        fused = model.decode(tgt, memory, src_mask, tgt_mask)
        traced_memory, _ = model.encode(src, src_mask, return_trace=True)
        traced, _ = model.decode(tgt, traced_memory, src_mask, tgt_mask, return_trace=True)
        want_memory = ref.encoder(xs, src_key_padding_mask=~src_mask[:, 0, 0])
    assert fused.dtype == traced.dtype == torch.float64
    real = src_mask[:, 0, 0]  # torch's encoder may zero padded query rows: compare the real tokens' memory
    torch.testing.assert_close(memory[real], want_memory[real], atol=1e-12, rtol=0)
    torch.testing.assert_close(traced_memory, memory, atol=1e-12, rtol=0)
    torch.testing.assert_close(fused, want, atol=1e-12, rtol=0)
    torch.testing.assert_close(traced, want, atol=1e-12, rtol=0)


def test_token_embeddings_start_with_variance_1_over_d_model_so_the_scaled_ones_have_variance_1():
    """Transformer._init_weights: N(0, 1/d_model), standard deviation d_model^-1/2 (its docstring wrote
    N(0, d_model^-1/2), which in the usual N(mean, variance) reads as a variance of d_model^-1/2: the scaled
    embeddings would then have variance sqrt(d_model), 8 at d_model 64, not 1)."""
    torch.manual_seed(6)
    d = 64
    model = Transformer(cfg(src_vocab_size=3000, tgt_vocab_size=2000, d_model=d, n_heads=4))
    for embed in (model.src_embed, model.tgt_embed):
        rows = embed.token.weight[1:].detach()  # every row but [PAD] (id 0, all zero)
        assert rows.var().item() == pytest.approx(1 / d, rel=0.03)
        ids = torch.arange(1, rows.size(0) + 1)[None]  # (1, V - 1)
        assert embed.lookup(ids).var().item() == pytest.approx(1.0, rel=0.03)  # x sqrt(d_model) (§3.4)


@pytest.mark.parametrize("scale", [True, False])
def test_scale_embedding_switches_the_sqrt_d_model_factor_of_the_forward_pass(scale):
    """§3.4 multiplies the embedding by sqrt(d_model); TransformerConfig.scale_embedding=False leaves it out. The
    forward's sum (not only the trace's tokens) is the table row, times sqrt(d_model) or not, plus PE (§3.5)."""
    torch.manual_seed(7)
    model = Transformer(cfg(scale_embedding=scale)).eval()
    ids = torch.tensor([[3, 9, 1, 30]])
    with torch.no_grad():
        got = model.src_embed(ids)  # (1, T, d_model)
    factor = 24**0.5 if scale else 1.0
    want = model.src_embed.token.weight[ids].detach() * factor + sinusoidal_encoding(4, 24)
    torch.testing.assert_close(got, want, atol=1e-6, rtol=0)
