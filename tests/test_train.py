"""Training: the paper's schedule, teacher forcing, padding-free loss, determinism, gold alignment."""

import math

import pytest
import torch
import torch.nn.functional as F

from model.config import TransformerConfig
from model.data import Pair, generate_corpus
from model.tokenizer import BOS_ID, EOS_ID, PAD_ID
from model.train import (
    Trainer,
    TrainSettings,
    batch_loss,
    cross_attention_alignment,
    cross_attention_entropy_ratio,
    demo_trainer,
    encode_pairs,
    gold_alignment,
    make_tokenizers,
    noam_rate,
    sequence_loss,
    shift_right,
    train_steps,
    translate_batch,
)
from model.transformer import Transformer


@pytest.fixture(scope="module")
def small():
    """200 corpus pairs, their tokenizers and a tiny config (fast on a busy CPU)."""
    pairs = generate_corpus()[:200]
    src_tok, tgt_tok = make_tokenizers(pairs)
    config = TransformerConfig(
        src_vocab_size=src_tok.vocab_size, tgt_vocab_size=tgt_tok.vocab_size, d_model=16,
        n_heads=2, n_layers=1, d_ff=32, dropout=0.0, max_len=32,
    )  # fmt: skip
    return pairs, src_tok, tgt_tok, config


def cpu(**kw) -> TrainSettings:
    return TrainSettings(device="cpu", **kw)


# --- the learning-rate schedule (eq. 3) ---------------------------------------------------------
def test_schedule_peaks_at_warmup_with_the_papers_value():
    # Base model: d_model = 512, warmup = 4000 -> peak 512^-0.5 * 4000^-0.5 = 7.0e-4 (Annotated Transformer plot).
    rates = [noam_rate(s, 512, 4000) for s in range(1, 20001)]
    assert rates.index(max(rates)) + 1 == 4000
    assert max(rates) == pytest.approx(1 / math.sqrt(512 * 4000)) and 6.9e-4 < max(rates) < 7.0e-4


def test_schedule_rises_linearly_then_decays_as_inverse_sqrt():
    d, w = 64, 400
    for s in (1, 50, 399):  # linear warm-up: rate / step is constant
        assert noam_rate(s, d, w) / s == pytest.approx(noam_rate(1, d, w))
    assert noam_rate(4 * w, d, w) == pytest.approx(noam_rate(w, d, w) / 2)  # step^-0.5: 4x steps, half the rate
    assert noam_rate(9 * w, d, w) == pytest.approx(noam_rate(w, d, w) / 3)
    assert noam_rate(w, d, w, factor=2.0) == pytest.approx(2 * noam_rate(w, d, w))
    with pytest.raises(ValueError):
        noam_rate(0, d, w)


def test_trainer_sets_the_schedule_and_the_papers_adam(small):
    pairs, src_tok, tgt_tok, config = small
    torch.manual_seed(0)
    trainer = Trainer(Transformer(config), encode_pairs(pairs, src_tok, tgt_tok), cpu(warmup=10, batch_size=8))
    list(trainer.run(3))
    group = trainer.optimizer.param_groups[0]
    assert group["betas"] == (0.9, 0.98) and group["eps"] == 1e-9
    assert group["lr"] == pytest.approx(noam_rate(3, 16, 10)) == trainer.lr


# --- teacher forcing --------------------------------------------------------------------------
def test_decoder_input_is_the_target_shifted_right():
    assert shift_right([7, 8, 9]) == ([BOS_ID, 7, 8, 9], [7, 8, 9, EOS_ID])


def test_encoded_pairs_shift_every_row_and_pad_the_rest(small):
    pairs, src_tok, tgt_tok, _ = small
    data = encode_pairs(pairs, src_tok, tgt_tok)
    for i, p in enumerate(pairs[:50]):
        n = len(p.en.split(" "))  # one target token per English word
        assert data.tgt_in[i, 0] == BOS_ID
        assert torch.equal(data.tgt_in[i, 1 : n + 1], data.labels[i, :n])  # input t+1 = label t
        assert data.labels[i, n] == EOS_ID
        assert (data.labels[i, n + 1 :] == PAD_ID).all() and (data.tgt_in[i, n + 1 :] == PAD_ID).all()
        assert tgt_tok.decode(data.labels[i].tolist()) == p.en
        assert src_tok.decode(data.src[i].tolist()) == p.zh  # one id per character, no [BOS]/[EOS]


# --- the loss ignores padding -----------------------------------------------------------------
def test_loss_is_the_mean_over_non_pad_positions():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 5, 11, generator=g)
    labels = torch.tensor([[4, 5, 6, PAD_ID, PAD_ID], [7, 8, 9, 10, 2]])
    loss, correct, count = sequence_loss(logits, labels)
    logp = logits.log_softmax(-1)
    by_hand = -torch.stack([logp[b, t, labels[b, t]] for b in range(2) for t in range(5) if labels[b, t] != PAD_ID])
    assert count == 8 and loss == pytest.approx(by_hand.mean().item(), abs=1e-6)
    assert correct == ((logits.argmax(-1) == labels) & (labels != PAD_ID)).sum()
    assert sequence_loss(logits, labels, label_smoothing=0.1)[0] > loss  # smoothing is applied


def test_logits_at_pad_labels_do_not_change_the_loss():
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(2, 4, 9, generator=g)
    labels = torch.tensor([[3, 4, PAD_ID, PAD_ID], [5, 6, 7, PAD_ID]])
    changed = logits.clone()
    changed[labels == PAD_ID] = 100 * torch.randn(3, 9, generator=g)
    for ls in (0.0, 0.1):
        assert torch.equal(sequence_loss(logits, labels, label_smoothing=ls)[0], sequence_loss(changed, labels, label_smoothing=ls)[0])


def test_label_smoothing_is_the_papers_epsilon_ls_by_the_closed_form_and_torchs_loss():
    """§5.4: with eps_ls the target is (1 - eps) on the label plus eps spread evenly over the V classes, so a
    token's loss is (1 - eps) (-log p_label) + eps * mean_c (-log p_c), averaged over the non-pad tokens.
    Before, a test only checked that smoothing made the loss larger: any eps > 0 (half of it, say) passed."""
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(3, 5, 11, generator=g, dtype=torch.float64) * 3
    labels = torch.tensor([[4, 5, 6, PAD_ID, PAD_ID], [7, 8, 9, 10, 2], [1, 3, PAD_ID, PAD_ID, PAD_ID]])
    real = labels != PAD_ID
    nll = -logits.log_softmax(-1)  # (B, Tt, V): -log p_c
    for eps in (0.0, 0.1, 0.4):
        per_token = (1 - eps) * nll.gather(-1, labels[..., None])[..., 0] + eps * nll.mean(-1)  # (B, Tt)
        want = per_token[real].mean()
        got = sequence_loss(logits, labels, label_smoothing=eps)[0]
        torch.testing.assert_close(got, want, atol=1e-12, rtol=0)
        torch_loss = torch.nn.CrossEntropyLoss(ignore_index=PAD_ID, label_smoothing=eps)
        torch.testing.assert_close(got, torch_loss(logits.reshape(-1, 11), labels.reshape(-1)), atol=1e-12, rtol=0)


def test_the_trainer_minimises_the_loss_smoothed_by_its_settings(small):
    """The loss a step reports (and back-propagates) is sequence_loss with TrainSettings.label_smoothing: with the
    whole corpus as the batch and no dropout, the model before the step gives the same number."""
    import copy

    pairs, src_tok, tgt_tok, config = small
    data = encode_pairs(pairs[:24], src_tok, tgt_tok)
    for eps in (0.0, 0.3):
        torch.manual_seed(0)
        trainer = Trainer(Transformer(config), data, cpu(batch_size=len(data), label_smoothing=eps))
        before = copy.deepcopy(trainer.model).eval()
        want = batch_loss(before, data.src, data.tgt_in, data.labels, label_smoothing=eps)[0].item()
        assert trainer.step().loss == pytest.approx(want, abs=1e-5)


def test_model_loss_ignores_tokens_and_extra_columns_at_pad_positions(small):
    pairs, src_tok, tgt_tok, config = small
    torch.manual_seed(0)
    model = Transformer(config).eval()
    data = encode_pairs(pairs[:16], src_tok, tgt_tok)
    src, tgt_in, labels = data.src, data.tgt_in, data.labels
    assert (labels == PAD_ID).any()
    base = batch_loss(model, src, tgt_in, labels)[0]
    # Garbage where the decoder input is padding: the causal mask hides it from real positions.
    noisy = tgt_in.clone()
    pads = tgt_in == PAD_ID
    noisy[pads] = torch.randint(4, tgt_tok.vocab_size, (int(pads.sum()),), generator=torch.Generator().manual_seed(2))
    assert batch_loss(model, src, noisy, labels)[0].item() == pytest.approx(base.item(), abs=1e-6)
    # Three more all-pad columns on each side change nothing either.
    wide = [F.pad(t, (0, 3), value=PAD_ID) for t in (src, tgt_in, labels)]
    assert batch_loss(model, *wide)[0].item() == pytest.approx(base.item(), abs=1e-6)


# --- training --------------------------------------------------------------------------------
def test_a_few_steps_reduce_the_loss(small):
    pairs, src_tok, tgt_tok, config = small
    data = encode_pairs(pairs, src_tok, tgt_tok)
    torch.manual_seed(0)
    model = Transformer(config)

    def held_loss():
        model.eval()
        with torch.no_grad():
            return batch_loss(model, data.src, data.tgt_in, data.labels)[0].item()

    before = held_loss()
    stats = list(train_steps(model, pairs, 40, src_tok, tgt_tok, cpu(warmup=10, batch_size=32, label_smoothing=0.0)))
    assert [s.step for s in stats] == list(range(1, 41))
    assert all(0.0 <= s.accuracy <= 1.0 and math.isfinite(s.loss) for s in stats)
    assert held_loss() < 0.8 * before


def test_training_is_deterministic_and_resumable(small):
    pairs, src_tok, tgt_tok, config = small
    data = encode_pairs(pairs, src_tok, tgt_tok)

    def run(chunks, seed=0):
        torch.manual_seed(0)
        trainer = Trainer(Transformer(config), data, cpu(warmup=10, batch_size=16, seed=seed))
        return [s for n in chunks for s in trainer.run(n)]

    once = run([6])
    assert once == run([6])  # same seeds, same losses, bit for bit
    assert once == run([2, 1, 3])  # stopping and resuming (as the app does) changes nothing
    assert [s.loss for s in once] != [s.loss for s in run([6], seed=1)]  # the seed picks the batch order


# --- gold word alignment (used to find aligning cross-attention heads) --------------------------
@pytest.mark.parametrize(
    "pair, links",
    [
        # her(0)=她 cat(1)=猫 likes(2)=喜欢 her(3)=她 (the second 她, not the first)
        (Pair("她的猫喜欢她", "her cat likes her", ("她的猫", "喜欢", "她"), "svo"), [(0, 0, 1), (1, 2, 3), (2, 3, 5), (3, 5, 6)]),
        # "the" and "does not" stay unaligned; teacher=老师, like=喜欢, you=你
        (Pair("老师不喜欢你", "the teacher does not like you", ("老师", "喜欢", "你"), "neg"), [(1, 0, 2), (4, 3, 5), (5, 5, 6)]),
        (Pair("你们昨天帮助了学生", "you helped the student yesterday", ("你们", "帮助", "学生"), "past"), [(0, 0, 2), (1, 4, 6), (3, 7, 9)]),
        (Pair("他们昨天没有教我", "they did not teach me yesterday", ("他们", "教", "我"), "past_neg"), [(0, 0, 2), (3, 6, 7), (4, 7, 8)]),
        (Pair("我每天看见狗", "i see the dog every day", ("我", "看见", "狗"), "habitual"), [(0, 0, 1), (1, 3, 5), (3, 5, 6)]),
        (Pair("我有一只猫", "i have a cat", ("我", "有", "猫"), "have"), []),
    ],
)
def test_gold_alignment_by_hand(pair, links):
    assert gold_alignment(pair) == links


def test_gold_alignment_covers_every_verb_sentence_of_the_corpus():
    for p in generate_corpus():
        links = gold_alignment(p)
        if p.template in ("have", "not_have"):
            assert links == []
            continue
        words = p.en.split(" ")
        assert len(links) >= 3  # subject, verb, object
        assert all(0 <= t < len(words) and 0 <= s < e <= len(p.zh) for t, s, e in links)
        assert links[0][1] == 0 and links[-1][2] == len(p.zh)  # subject starts, object ends the sentence


# --- the evaluation shipped with each demo model (train(): metadata["evaluation"]) -----------------
def fake_cross_attention(monkeypatch, weights_of) -> list:
    """traced_forward returns a trace whose decoder layers hold the cross-attention weights
    weights_of(src, tgt_in) gives, (layers, B, H, Tt, Ts); returns the batches it was given."""
    from types import SimpleNamespace

    import model.analysis

    seen = []

    def traced(model, src, tgt_in, mode="paper"):
        seen.append((src, tgt_in))
        layers = [SimpleNamespace(cross_attn=SimpleNamespace(weights=w)) for w in weights_of(src, tgt_in)]
        return SimpleNamespace(decoder=SimpleNamespace(layers=layers))

    monkeypatch.setattr(model.analysis, "traced_forward", traced)
    return seen


def test_cross_attention_alignment_counts_the_gold_links_a_heads_argmax_falls_in(small, monkeypatch):
    """Layer 0: head 0 puts each English word's row (the decoder position that predicts it) on a
    character of its gold source word, head 1 only the verb's (its other links just past their word);
    layer 1 the other way round. A pair without links (have) is left out, so the rows stay in line."""
    _, src_tok, tgt_tok, config = small
    corpus = generate_corpus()
    pick = [next(p for p in corpus if p.template == t) for t in ("have", "past_neg", "svo")]
    gold = [gold_alignment(p) for p in pick[1:]]
    verbs = [p.triple[1] for p in pick[1:]]

    def weights_of(src, tgt_in):
        assert src.size(0) == 2  # the have pair is not encoded
        w = torch.zeros(2, 2, 2, tgt_in.size(1), src.size(1))  # (layers, B, H, Tt, Ts)
        for b, (p, links) in enumerate(zip(pick[1:], gold, strict=True)):
            ts = int((src[b] != PAD_ID).sum())
            for t, start, end in links:
                inside, outside = end - 1, end if end < ts else start - 1  # its word's last character, or next to it
                partly = inside if p.zh[start:end] == verbs[b] else outside
                w[0, b, 0, t, inside] = w[1, b, 1, t, inside] = 1.0
                w[0, b, 1, t, partly] = w[1, b, 0, t, partly] = 1.0
        return w

    seen = fake_cross_attention(monkeypatch, weights_of)
    hits = cross_attention_alignment(Transformer(config), pick, src_tok, tgt_tok)
    assert len(seen) == 1 and hits.shape == (2, 2)
    assert torch.equal(seen[0][1][:, 0], torch.full((2,), BOS_ID))  # teacher forcing's decoder input
    part = 2 / sum(len(links) for links in gold)  # the verb link of each of the two pairs
    torch.testing.assert_close(hits, torch.tensor([[1.0, part], [part, 1.0]]))


def test_cross_attention_entropy_ratio_is_1_for_uniform_rows_and_0_for_one_hot_ones(small, monkeypatch):
    """Uniform over a sentence's own characters is log Ts nats (ratio 1), one-hot 0; padded query
    rows do not count (they hold one-hot rows here that would pull the mean under 1)."""
    pairs, src_tok, tgt_tok, config = small
    pick = [min(pairs, key=lambda p: len(p.zh)), max(pairs, key=lambda p: len(p.zh))]
    assert len(pick[0].zh) < len(pick[1].zh) and len(pick[0].en.split()) < len(pick[1].en.split())

    def weights_of(src, tgt_in):
        w = torch.zeros(1, 2, 2, tgt_in.size(1), src.size(1))  # (layers, B, H, Tt, Ts)
        w[..., 0] = 1.0  # one-hot everywhere, padded rows included
        for b in range(2):
            ts, tt = int((src[b] != PAD_ID).sum()), int((tgt_in[b] != PAD_ID).sum())
            w[0, b, 0, :tt, :] = 0.0
            w[0, b, 0, :tt, :ts] = 1.0 / ts  # head 0: uniform over the real keys of the real rows
        return w

    fake_cross_attention(monkeypatch, weights_of)
    ratio = cross_attention_entropy_ratio(Transformer(config), pick, src_tok, tgt_tok)
    torch.testing.assert_close(ratio, torch.tensor([[1.0, 0.0]]))


def test_demo_trainer_builds_the_demo_setup_for_the_app():
    trainer, (train_pairs, heldout) = demo_trainer("none", cpu(batch_size=8), d_model=16, d_ff=32, n_layers=1)
    c = trainer.model.config
    assert (c.positional, c.d_model, c.d_ff, c.n_layers, c.n_heads) == ("none", 16, 32, 1, 4)
    assert c.src_vocab_size == trainer.src_tokenizer.vocab_size and len(trainer.data) == len(train_pairs)
    assert not {p.triple for p in heldout} & {p.triple for p in train_pairs}
    assert [s.step for s in trainer.run(2)] == [1, 2]
    out = translate_batch(trainer.model, ["你喜欢她", "我有一只猫"], trainer.src_tokenizer, trainer.tgt_tokenizer)
    assert len(out) == 2 and all(isinstance(t, str) for t in out)


def test_the_train_panels_loss_axis_names_the_smoothing_the_trainer_uses():
    """The loss drawn is label-smoothed: it levels off above 0 (a text audit: the axis said plain cross-entropy)."""
    from model.train import TrainSettings
    from ui.train import LOSS_AXIS

    assert TrainSettings().label_smoothing > 0 and f"label-smoothed (ε = {TrainSettings().label_smoothing:g})" in LOSS_AXIS


def test_python_m_model_train_starts_without_a_warning():
    """README's `python -m model.train` printed "RuntimeWarning: 'model.train' found in sys.modules after import of
    package 'model', but prior to execution of 'model.train'; this may result in unpredictable behaviour" first (a
    README walk): `import model` imported model.train through model.demo, so runpy ran the module a second time.
    The command must start clean (--help: nothing is trained), and `import model` must not load the trainer."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONWARNINGS": "error::RuntimeWarning"}
    proc = subprocess.run([sys.executable, "-m", "model.train", "--help"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "RuntimeWarning" not in proc.stderr, proc.stderr
    assert proc.stdout.startswith("usage:")
    loaded = subprocess.run([sys.executable, "-c", "import sys, model; print('model.train' in sys.modules)"],
                            cwd=repo, capture_output=True, text=True, timeout=120, check=True).stdout.split()
    assert loaded == ["False"]
