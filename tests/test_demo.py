"""The SHIPPED demo models: they translate, order matters only with PE, and their heads mean something."""

import itertools
import json
import random
import shutil

import numpy as np
import pytest
import torch
from safetensors import safe_open

from model import load_demo
from model.checkpoint import (
    CONFIG_FILE,
    MODELS_DIR,
    SRC_TOKENIZER_FILE,
    STORAGE_DTYPE,
    TGT_TOKENIZER_FILE,
    WEIGHTS_FILE,
    CheckpointError,
    CheckpointNotFoundError,
    load_checkpoint,
    save_checkpoint,
)
from model.config import TransformerConfig
from model.data import SEED_EXAMPLES, generate_corpus, split_corpus
from model.demo import DemoModel, SourceTooLongError
from model.tokenizer import BOS_ID, EOS_ID, UNK_ID
from model.train import gold_alignment, pad_rows, shift_right
from model.transformer import Transformer


@pytest.fixture(scope="module")
def pe():
    return load_demo("zh-en")


@pytest.fixture(scope="module")
def nope():
    return load_demo("zh-en-nope")


@pytest.fixture(scope="module")
def heldout():
    return split_corpus(generate_corpus())[1]


def teacher_forced(demo: DemoModel, sources: list[str], targets: list[str]):
    """Batched (src ids, decoder input ids) for gold targets: decoder input = [BOS] + target."""
    src = pad_rows([list(demo.src_tokenizer.encode(s).ids) for s in sources])
    tgt_in = pad_rows([shift_right(demo.tgt_tokenizer.encode(t).ids)[0] for t in targets])
    return src, tgt_in


def logits_of(demo: DemoModel, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
    m = demo.model
    with torch.no_grad():
        return m(src, tgt_in, m.src_mask(src), m.tgt_mask(tgt_in))  # (B, Tt, V)


# --- the two models ---------------------------------------------------------------------------
def test_the_two_models_differ_only_in_positional_encoding(pe, nope):
    a, b = pe.config.to_dict(), nope.config.to_dict()
    assert (a.pop("positional"), b.pop("positional")) == ("sinusoidal", "none")
    assert a == b
    train_a = {k: v for k, v in pe.metadata["training"].items() if k not in ("final_loss", "final_accuracy")}
    train_b = {k: v for k, v in nope.metadata["training"].items() if k not in ("final_loss", "final_accuracy")}
    assert train_a == train_b  # same seed, steps, schedule, batch size, data
    assert pe.src_tokenizer.encode("你喜欢她").ids == nope.src_tokenizer.encode("你喜欢她").ids


def test_shipped_files_are_small_and_hold_no_positional_table():
    for name in ("zh-en", "zh-en-nope"):
        directory = MODELS_DIR / name
        assert (directory / WEIGHTS_FILE).stat().st_size < 600_000
        with safe_open(str(directory / WEIGHTS_FILE), "pt") as f:
            keys = list(f.keys())
        assert keys and not any("positional" in k for k in keys)  # sinusoidal table is rebuilt, not stored
        json.loads((directory / CONFIG_FILE).read_text(encoding="utf-8"))


# --- with positional encoding: it translates -------------------------------------------------
def test_pe_model_translates_the_seed_examples(pe):
    assert pe.translate("你喜欢她") == "you like her"
    assert pe.translate("她喜欢你") == "she likes you"
    assert pe.translate("我有一只猫") == "i have a cat"
    for p in SEED_EXAMPLES:
        assert pe.translate(p.zh) == p.en


def test_pe_model_translates_held_out_sentences(pe, heldout):
    hyps = pe.translate_many([p.zh for p in heldout])
    accuracy = np.mean([h == p.en for h, p in zip(hyps, heldout, strict=True)])
    assert len(heldout) > 400 and accuracy >= 0.99, accuracy
    assert [pe.translate(p.zh) for p in heldout[:8]] == hyps[:8]  # batching and padding change nothing


# --- without positional encoding: order is invisible -----------------------------------------
# Equal up to float32 rounding: reordered keys are summed in another order (1.2e-5 was seen on a
# 16-core machine, under 1e-5 on two cores). With PE the logits differ by more than 0.1.
ROUNDING = 1e-4

def test_nope_model_gives_every_permutation_of_the_seed_the_same_translation(nope, pe):
    sources = ["".join(p) for p in itertools.permutations("你喜欢她")]  # 24 orders, with 你喜欢她 and 她喜欢你
    outputs = {nope.translate(s) for s in sources}
    assert len(outputs) == 1
    assert nope.translate("你喜欢她") == nope.translate("她喜欢你")
    # The logits, not just the argmax, are equal: the encoder output is a set, cross-attention sums over it.
    target = nope.translate("你喜欢她")
    src, tgt_in = teacher_forced(nope, sources, [target] * len(sources))
    logits = logits_of(nope, src, tgt_in)
    assert (logits - logits[:1]).abs().max() < ROUNDING
    # The same check fails for the PE model: there order changes the numbers (and the answer).
    pe_logits = logits_of(pe, src, tgt_in)
    assert (pe_logits - pe_logits[:1]).abs().max() > 1e-1


def test_nope_model_is_blind_to_order_on_held_out_sentences(nope, heldout):
    rng = random.Random(0)
    originals = [p.zh for p in rng.sample(heldout, 40)]
    shuffled = ["".join(rng.sample(s, len(s))) for s in originals]
    assert sum(a != b for a, b in zip(originals, shuffled, strict=True)) >= 35
    assert nope.translate_many(shuffled) == nope.translate_many(originals)
    targets = [p.en for p in rng.sample(heldout, 40)]  # any decoder input works
    src_a, tgt_in = teacher_forced(nope, originals, targets)
    src_b, _ = teacher_forced(nope, shuffled, targets)
    assert (logits_of(nope, src_a, tgt_in) - logits_of(nope, src_b, tgt_in)).abs().max() < ROUNDING


# --- the trained heads mean something ---------------------------------------------------------
@pytest.fixture(scope="module")
def cross_weights(pe, heldout):
    """Cross-attention weights (layers, B, H, Tt, Ts) on held-out sentences under teacher forcing."""
    src, tgt_in = teacher_forced(pe, [p.zh for p in heldout], [p.en for p in heldout])
    m = pe.model
    with torch.no_grad():
        _, trace = m(src, tgt_in, m.src_mask(src), m.tgt_mask(tgt_in), return_trace=True)
    weights = torch.stack([layer.cross_attn.weights for layer in trace.decoder.layers])
    return weights.double(), src, tgt_in


def test_cross_attention_is_far_from_uniform(cross_weights):
    weights, src, tgt_in = cross_weights
    ts = (src != 0).sum(1).double()  # (B,)
    entropy = -(weights * weights.clamp_min(1e-12).log()).sum(-1)  # (L, B, H, Tt)
    ratio = entropy / ts.log()[None, :, None, None]  # uniform attention over Ts keys has entropy log Ts
    real = (tgt_in != 0)[None, :, None, :].expand_as(ratio)
    per_head = torch.stack([ratio[:, :, h][real[:, :, h]].mean() for h in range(ratio.size(2))])
    assert ratio[real].mean() < 0.6 and (per_head < 0.6).all(), per_head


def alignment_hits(weights: torch.Tensor, pairs) -> torch.Tensor:
    """(L, H) share of gold links whose aligned source word holds the head's argmax.

    Row: the decoder position that PREDICTS English word t (its input is word t - 1).
    """
    hits, total = torch.zeros(weights.shape[0], weights.shape[2]), 0
    argmax = weights.argmax(-1)  # (L, B, H, Tt)
    for b, p in enumerate(pairs):
        for t, start, end in gold_alignment(p):
            pos = argmax[:, b, :, t]  # (L, H)
            hits += ((pos >= start) & (pos < end)).double()
            total += 1
    assert total > 500
    return hits / total


def test_a_cross_attention_head_aligns_words(cross_weights, heldout, pe):
    weights, src, tgt_in = cross_weights
    hits = alignment_hits(weights, heldout)
    assert hits.max() >= 0.8, hits
    # The same measure on an untrained twin stays low: alignment is learnt, not an artefact of the test.
    torch.manual_seed(0)
    fresh = Transformer(pe.config).eval()
    with torch.no_grad():
        _, trace = fresh(src, tgt_in, fresh.src_mask(src), fresh.tgt_mask(tgt_in), return_trace=True)
    untrained = torch.stack([layer.cross_attn.weights for layer in trace.decoder.layers])
    assert alignment_hits(untrained, heldout).max() < 0.6


# --- translate(): the documented input rules ------------------------------------------------
def test_translate_input_rules(pe):
    assert pe.translate("") == "" and pe.translate(" \n") == ""
    assert pe.translate("你 喜欢\t她") == pe.translate("你喜欢她")  # whitespace is removed
    t = pe.translate_ids("你喜欢她😀")
    assert t.src_ids[-1] == UNK_ID and t.src_pieces[-1] == "[UNK]"
    with pytest.raises(SourceTooLongError, match="at most 64") as err:
        pe.translate("你" * 65)
    assert isinstance(err.value, ValueError)
    with pytest.raises(TypeError):
        pe.translate(None)


def test_translate_ids_are_the_steps_the_decoder_took(pe):
    t = pe.translate_ids("她喜欢你")
    assert t.src_pieces == ("她", "喜", "欢", "你") and t.text == "she likes you"
    assert t.out_pieces == ("[BOS]", "she", "likes", "you", "[EOS]") and t.finished
    assert t.out_ids[0] == BOS_ID and t.out_ids[-1] == EOS_ID
    # Re-running the decoder on its own inputs predicts exactly the next ids.
    logits = logits_of(pe, torch.tensor([t.src_ids]), torch.tensor([t.decoder_input]))
    assert logits.argmax(-1)[0].tolist() == list(t.out_ids[1:])


def test_load_demo_is_cached_and_read_only(pe):
    assert load_demo("zh-en") is pe
    assert not pe.model.training
    assert not any(p.requires_grad for p in pe.model.parameters())
    with pytest.raises(ValueError, match="zh-en-nope"):
        load_demo("zh-fr")


# --- loading errors name the file -------------------------------------------------------------
@pytest.fixture
def copy(tmp_path):
    target = tmp_path / "zh-en"
    shutil.copytree(MODELS_DIR / "zh-en", target)
    return target


def test_copied_checkpoint_loads(copy, pe):
    demo = DemoModel.from_directory(copy)
    assert demo.translate("她喜欢你") == "she likes you"
    for (k, a), (_, b) in zip(demo.model.state_dict().items(), pe.model.state_dict().items(), strict=True):
        assert torch.equal(a, b), k


def test_missing_directory(tmp_path):
    with pytest.raises(CheckpointNotFoundError, match="nowhere") as err:
        load_checkpoint(tmp_path / "nowhere")
    assert isinstance(err.value, FileNotFoundError)


def test_truncated_weights(copy):
    weights = copy / WEIGHTS_FILE
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    with pytest.raises(CheckpointError, match=str(weights)):
        load_checkpoint(copy)


def test_config_that_does_not_match_the_weights(copy):
    config_path = copy / CONFIG_FILE
    doc = json.loads(config_path.read_text(encoding="utf-8"))
    doc["model_config"]["d_model"] = 32
    config_path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(CheckpointError, match=r"shape") as err:
        load_checkpoint(copy)
    assert str(copy / WEIGHTS_FILE) in str(err.value) and str(config_path) in str(err.value)


def test_missing_weights_key(copy):
    from safetensors.torch import load_file, save_file

    weights = copy / WEIGHTS_FILE
    state = load_file(str(weights))
    state.pop("generator.bias")
    save_file(state, str(weights))
    with pytest.raises(CheckpointError, match="generator.bias"):
        load_checkpoint(copy)


@pytest.mark.parametrize("filename", [SRC_TOKENIZER_FILE, TGT_TOKENIZER_FILE, CONFIG_FILE, WEIGHTS_FILE])
def test_missing_file(copy, filename):
    (copy / filename).unlink()
    with pytest.raises(CheckpointNotFoundError, match=str(copy / filename)):
        load_checkpoint(copy)


def test_tokenizer_from_another_model(copy):
    shutil.copy(copy / TGT_TOKENIZER_FILE, copy / SRC_TOKENIZER_FILE)  # 72 English words for 158 ids
    with pytest.raises(CheckpointError, match=str(copy / SRC_TOKENIZER_FILE)):
        load_checkpoint(copy)


def edit_config(copy, edit):
    path = copy / CONFIG_FILE
    doc = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(edit(doc)), encoding="utf-8")


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda c: (c / CONFIG_FILE).write_text("{not json", encoding="utf-8"), "is not valid JSON"),
        (lambda c: (c / CONFIG_FILE).write_bytes(b"\xff\xfe{}"), "is not valid JSON"),
        (lambda c: edit_config(c, lambda doc: [doc]), "expected format 'attention-lab-checkpoint/1', found 'list'"),
        (lambda c: edit_config(c, lambda doc: {**doc, "format": "other/2"}), "found 'other/2'"),
        (lambda c: edit_config(c, lambda doc: {k: v for k, v in doc.items() if k != "model_config"}),
         "bad model_config: 'model_config'"),
        (lambda c: edit_config(c, lambda doc: {**doc, "model_config": {**doc["model_config"], "heads": 4}}),
         r"bad model_config: unknown TransformerConfig field\(s\) \['heads'\]"),
        (lambda c: edit_config(c, lambda doc: {**doc, "model_config": {**doc["model_config"], "d_model": 66}}),
         "bad model_config: .*not divisible by n_heads"),
    ],
    ids=["not-json", "not-utf8", "a-list", "other-format", "no-model-config", "unknown-field", "d_model-by-heads"],
)
def test_a_damaged_config_names_the_file_and_what_is_wrong(copy, damage, said):
    damage(copy)
    with pytest.raises(CheckpointError, match=said) as err:
        load_checkpoint(copy)
    assert str(copy / CONFIG_FILE) in str(err.value) and not isinstance(err.value, CheckpointNotFoundError)


@pytest.mark.parametrize(("content", "said"), [(b"\xff\xfe", "cannot read tokenizer file"),
                                               (b"{}", "is not a valid tokenizer file")])
def test_a_damaged_tokenizer_names_the_file(copy, content, said):
    (copy / TGT_TOKENIZER_FILE).write_bytes(content)
    with pytest.raises(CheckpointError, match=said) as err:
        load_checkpoint(copy)
    assert str(copy / TGT_TOKENIZER_FILE) in str(err.value)


def test_weights_holding_nan_are_refused_by_name(copy):
    from safetensors.torch import load_file, save_file

    weights = copy / WEIGHTS_FILE
    state = load_file(str(weights))
    state["generator.bias"][3] = float("inf")
    save_file(state, str(weights))
    with pytest.raises(CheckpointError, match="generator.bias holds NaN or infinite values") as err:
        load_checkpoint(copy)
    assert str(weights) in str(err.value)


def test_save_then_load_round_trips_in_storage_precision(tmp_path, pe):
    config = TransformerConfig(
        src_vocab_size=pe.src_tokenizer.vocab_size, tgt_vocab_size=pe.tgt_tokenizer.vocab_size,
        d_model=16, n_heads=2, n_layers=1, d_ff=32, max_len=16,
    )  # fmt: skip
    torch.manual_seed(3)
    model = Transformer(config).eval()
    save_checkpoint(tmp_path / "tiny", model, pe.src_tokenizer, pe.tgt_tokenizer, {"note": "x"})
    loaded = load_checkpoint(tmp_path / "tiny")
    assert loaded.config == config and loaded.metadata == {"note": "x"}
    for key, value in model.state_dict().items():
        assert torch.equal(loaded.model.state_dict()[key], value.to(STORAGE_DTYPE).float()), key
