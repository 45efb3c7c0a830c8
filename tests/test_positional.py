"""Sinusoidal positional encoding ("Attention Is All You Need" §3.5) against the closed form."""

import math

import pytest
import torch

from model import Transformer, TransformerConfig, relative_rotation, sinusoidal_encoding
from model.positional import SinusoidalEncoding, frequencies


def test_equals_closed_form_with_i_over_pairs_not_dimensions():
    max_len, d = 50, 16
    pe = sinusoidal_encoding(max_len, d)
    for pos in range(max_len):
        for i in range(d // 2):  # i runs over PAIRS: 2i/d, never over all d dimensions
            angle = pos / 10000 ** (2 * i / d)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_each_sin_cos_pair_lies_on_the_unit_circle():
    pe = sinusoidal_encoding(200, 64)
    torch.testing.assert_close(pe[:, 0::2] ** 2 + pe[:, 1::2] ** 2, torch.ones(200, 32), atol=1e-6, rtol=0)


def test_first_pair_has_period_two_pi_and_last_is_slowest():
    w = frequencies(64)
    assert w[0].item() == 1.0  # PE(pos, 0) = sin(pos): period 2*pi
    assert w[-1].item() == pytest.approx(10000 ** (-62 / 64))
    assert torch.all(w[1:] < w[:-1])
    pe = sinusoidal_encoding(10, 64)
    torch.testing.assert_close(pe[:, 0], torch.sin(torch.arange(10.0)), atol=1e-6, rtol=0)


@pytest.mark.parametrize("k", [1, 3, 17])
def test_shift_by_k_is_one_fixed_block_rotation_for_every_position(k):
    d = 32
    pe = sinusoidal_encoding(100, d).double()
    rot = relative_rotation(k, d)
    shifted = pe[:-k] @ rot.T  # row pos -> R_k PE(pos)
    torch.testing.assert_close(shifted, pe[k:], atol=1e-5, rtol=0)
    torch.testing.assert_close(rot @ rot.T, torch.eye(d, dtype=torch.float64), atol=1e-12, rtol=0)


def test_dot_products_depend_only_on_offset_and_decay_non_monotonically():
    d = 128
    pe = sinusoidal_encoding(64, d).double()
    gram = pe @ pe.T
    for k in range(-20, 21):  # Toeplitz: constant along every diagonal
        diag = torch.diagonal(gram, offset=k)
        assert (diag - diag[0]).abs().max() < 1e-4
    w = frequencies(d)
    offsets = torch.arange(0, 40, dtype=torch.float64)
    closed = torch.cos(offsets[:, None] * w[None, :]).sum(-1)
    torch.testing.assert_close(torch.diagonal(gram, 0)[0].expand(1), closed[:1], atol=1e-4, rtol=0)
    torch.testing.assert_close(torch.stack([gram[0, k] for k in range(40)]), closed, atol=1e-4, rtol=0)
    torch.testing.assert_close(gram, gram.T)  # symmetric in the offset
    assert closed[0] == pytest.approx(d / 2)
    assert closed[30] < closed[1] < closed[0]  # decays overall ...
    rises = [k for k in range(1, 39) if closed[k + 1] > closed[k]]
    assert rises, "the decay is not monotonic: at d=128 it rises again near k=11, 17, 23"
    assert any(10 <= k <= 12 for k in rises)


def test_table_is_a_buffer_computed_once_per_shape():
    enc = SinusoidalEncoding(30, 8)
    assert "pe" in dict(enc.named_buffers())
    assert not any(True for _ in enc.parameters())
    from model.positional import _sinusoidal_table

    _sinusoidal_table.cache_clear()
    sinusoidal_encoding(30, 8)
    sinusoidal_encoding(30, 8)
    info = _sinusoidal_table.cache_info()
    assert info.misses == 1 and info.hits == 1


def test_odd_d_model_is_refused_with_a_clear_message():
    with pytest.raises(ValueError, match="even"):
        sinusoidal_encoding(10, 7)
    with pytest.raises(ValueError, match="odd"):
        TransformerConfig(d_model=9, n_heads=3, positional="sinusoidal")
    TransformerConfig(d_model=9, n_heads=3, positional="learned")  # fine without sin/cos pairs


def test_a_table_of_no_positions_or_an_unknown_encoding_is_refused_by_name():
    from model.positional import build_positional

    for max_len in (0, 2.5):
        with pytest.raises(ValueError, match=f"max_len must be a positive integer, got {max_len!r}"):
            sinusoidal_encoding(max_len, 8)
    with pytest.raises(ValueError, match=r"positional='rope' is unknown: choose one of \['learned', 'none', 'sinusoidal'\]"):
        build_positional("rope", 10, 8)


def tiny(**kw):
    base = dict(src_vocab_size=30, tgt_vocab_size=31, d_model=16, n_heads=4, n_layers=2, d_ff=32)
    base.update(kw)
    return TransformerConfig(**base)


def test_eval_mode_is_deterministic_and_train_mode_uses_dropout():
    torch.manual_seed(0)
    model = Transformer(tiny(dropout=0.5))
    src, tgt = torch.randint(1, 30, (2, 6)), torch.randint(1, 31, (2, 5))
    model.eval()
    a, b = model(src, tgt), model(src, tgt)
    assert torch.equal(a, b)
    model.train()
    assert not torch.equal(model(src, tgt), model(src, tgt))


@pytest.mark.parametrize("kind", ["sinusoidal", "learned", "none"])
def test_trace_records_the_encoding_that_was_added(kind):
    torch.manual_seed(0)
    model = Transformer(tiny(positional=kind, dropout=0.0)).eval()
    src = torch.randint(1, 30, (1, 6))
    _, trace = model.encode(src, return_trace=True)
    e = trace.embeddings
    torch.testing.assert_close(e.summed, e.tokens + e.positional)
    torch.testing.assert_close(e.tokens, model.src_embed.token(src) * math.sqrt(16))
    if kind == "sinusoidal":
        torch.testing.assert_close(e.positional, sinusoidal_encoding(5000, 16)[:6])
    if kind == "none":
        assert torch.all(e.positional == 0)


# ---------------------------------------------------------------- a few dimensions at many positions


def test_sinusoidal_at_chosen_dims_equals_those_columns_of_the_whole_table():
    from model.positional import sinusoidal_at

    fine = torch.arange(0, 60, 0.1, dtype=torch.float64)
    for d, dims in ((64, [0, 1, 2, 3, 32, 62]), (10, [9, 0, 5]), (512, [511, 256, 1])):
        whole = sinusoidal_at(fine, d)
        some = sinusoidal_at(fine, d, dims)
        assert some.shape == (fine.numel(), len(dims))
        torch.testing.assert_close(some, whole[:, dims], rtol=0, atol=1e-12)
    # and the closed form itself at a fractional position: dim 5 of d=10 is cos(pos / 10000^(4/10))
    assert sinusoidal_at(torch.tensor([2.5]), 10, [5]).item() == pytest.approx(math.cos(2.5 / 10000 ** 0.4))
    with pytest.raises(ValueError, match="dims"):
        sinusoidal_at(fine, 8, [8])


def test_pe_curves_from_the_drawn_columns_only_is_the_same_figure():
    import viz
    from model.positional import sinusoidal_at

    fine = torch.arange(0, 20, 0.1, dtype=torch.float64)
    dims = [0, 1, 6, 14]
    kw = dict(dims=dims, marked_positions=[0, 1, 2], marked_labels=["你", "喜", "欢"])
    whole = viz.pe_curves(fine.numpy(), sinusoidal_at(fine, 16).numpy(), **kw)
    some = viz.pe_curves(fine.numpy(), sinusoidal_at(fine, 16, dims).numpy(), d_model=16, **kw)
    assert some.to_json() == whole.to_json()
    with pytest.raises(ValueError, match="dims columns"):
        viz.pe_curves(fine.numpy(), sinusoidal_at(fine, 16).numpy(), d_model=16, **kw)


def test_pe_curves_mark_each_token_with_one_dotted_guide_path_under_the_curves():
    import numpy as np

    import viz
    from model.positional import sinusoidal_at

    fine = torch.arange(0, 10, 0.1, dtype=torch.float64)
    fig = viz.pe_curves(fine.numpy(), sinusoidal_at(fine, 8).numpy(), dims=[0, 1], marked_positions=[0, 3, 7],
                        marked_labels=["a", "b", "c"])
    guides = [t for t in fig.data if (t.meta or {}).get("role") == "guides"]
    assert len(guides) == 1 and fig.data[0] is guides[0]  # drawn first: under the curves
    x, y = np.asarray(guides[0].x, dtype=float), np.asarray(guides[0].y, dtype=float)
    segments = [(x[i], x[i + 1], y[i], y[i + 1]) for i in range(0, len(x), 3)]
    assert segments == [(p, p, -1.1, 1.1) for p in (0.0, 3.0, 7.0)]  # vertical, across the y range
    assert np.isnan(x[2::3]).all()  # a gap between segments
    assert guides[0].showlegend is False
    assert not fig.layout.shapes  # one path instead of one shape per token
