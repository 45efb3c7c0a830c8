"""The model in bfloat16 and float16 (as researchers run it on a GPU): the float64 model's numbers to the
dtype's rounding, exact zeros where masked, never NaN. On the CPU everywhere; on CUDA where there is one."""

import pytest
import torch

from model import Transformer, TransformerConfig

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA"))]
# relative error allowed against float64: a few units of the dtype's rounding (eps: bf16 7.8e-3, fp16 9.8e-4)
DTYPES = [(torch.bfloat16, 3e-2), (torch.float16, 4e-3)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("dtype", "rel"), DTYPES)
def test_half_precision_model_gives_the_float64_numbers_to_its_rounding(device, dtype, rel):
    torch.manual_seed(0)
    config = TransformerConfig(src_vocab_size=40, tgt_vocab_size=37, d_model=32, n_heads=4, n_layers=2, d_ff=64,
                               dropout=0.0)
    exact = Transformer(config).eval().double()
    low = Transformer(config).eval()
    low.load_state_dict(exact.state_dict())
    low = low.to(device=device, dtype=dtype)
    src, tgt = torch.randint(1, 40, (2, 9)), torch.randint(1, 37, (2, 6))
    src[1, 5:] = 0  # padding: masked keys
    src[1, 0] = 0  # ...and cross-attention keys of sentence 1 start masked too
    with torch.no_grad():
        want, want_trace = exact(src, tgt, exact.src_mask(src), exact.tgt_mask(tgt), return_trace=True)
        s, t = src.to(device), tgt.to(device)
        got, trace = low(s, t, low.src_mask(s), low.tgt_mask(t), return_trace=True)
        fused = low(s, t, low.src_mask(s), low.tgt_mask(t))
    assert got.dtype == dtype and got.device.type == device
    assert not torch.isnan(got).any() and not torch.isnan(fused).any()
    got64 = got.double().cpu()
    assert ((got64 - want).norm() / want.norm()).item() < rel
    assert ((fused.double().cpu() - want).norm() / want.norm()).item() < rel
    for layer, ref in zip(trace.decoder.layers, want_trace.decoder.layers, strict=True):
        w, allowed = layer.cross_attn.weights, layer.cross_attn.allowed
        assert w.dtype == dtype
        assert torch.all(w.masked_select(~allowed) == 0)  # masked weights are exactly 0 in any dtype
        sums = w.double().sum(-1)
        torch.testing.assert_close(sums, torch.ones_like(sums), atol=rel, rtol=0)
        torch.testing.assert_close(w.double().cpu(), ref.cross_attn.weights, atol=rel, rtol=0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("dtype", "rel"), DTYPES)
def test_a_row_with_no_key_stays_zero_in_half_precision(device, dtype, rel):
    from model import MultiHeadAttention

    torch.manual_seed(1)
    attn = MultiHeadAttention(24, 4).eval().to(device=device, dtype=dtype)
    q, kv = torch.randn(2, 5, 24, device=device, dtype=dtype), torch.randn(2, 7, 24, device=device, dtype=dtype)
    mask = torch.ones(2, 1, 5, 7, dtype=torch.bool, device=device)
    mask[1, 0, 3] = False  # query 3 of sentence 1 may attend to nothing
    with torch.no_grad():
        traced, rec = attn(q, kv, kv, mask=mask)
        fused = attn(q, kv, kv, mask=mask, return_trace=False)
    assert not torch.isnan(traced).any() and not torch.isnan(fused).any()
    assert torch.all(rec.weights[1, :, 3] == 0) and torch.all(rec.context[1, :, 3] == 0)
    torch.testing.assert_close(fused.double(), traced.double(), atol=4 * rel, rtol=0)
