"""Train the demo zh→en translators with teacher forcing ("Attention Is All You Need" §5).

    python -m model.train                                    # both demo models, one after the other
    python -m model.train --name zh-en --positional sinusoidal
    python -m model.train --name zh-en-nope --positional none

What training does (and why):
- Teacher forcing: the decoder reads the target shifted right, [BOS] y1 .. yn, and learns to
  predict y1 .. yn [EOS] at the same positions (the causal mask stops it peeking ahead).
- Loss: cross-entropy over the target vocabulary, positions whose label is [PAD] ignored, with
  optional label smoothing (§5.4 uses 0.1).
- Optimiser: Adam with beta1 = 0.9, beta2 = 0.98, eps = 1e-9 and the warm-up schedule (eq. 3)
      lrate = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5).
- Determinism: the CLI seeds torch (weights and dropout), batches come from a seeded
  torch.Generator, and nothing date- or time-dependent is written, so a rerun on the same machine
  writes the same bytes.

The two demo models share every setting except the positional encoding; model/demo.py loads them.
The app's "train it yourself" panel drives a Trainer step by step (Trainer.run yields StepStats).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import torch
import torch.nn.functional as F

from model.checkpoint import MODELS_DIR, STORAGE_DTYPE, save_checkpoint
from model.config import TransformerConfig
from model.data import NOUNS, POSSESSED, PRONOUNS, VERBS, Pair, generate_corpus, split_corpus
from model.device import pick_device
from model.tokenizer import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    TextTokenizer,
    build_char_tokenizer,
    build_word_tokenizer,
)
from model.transformer import Transformer

DEMO_POSITIONAL = {"zh-en": "sinusoidal", "zh-en-nope": "none"}  # demo name -> positional encoding
VERB_TEMPLATES = ("svo", "neg", "habitual", "past", "past_neg")  # subject verb object sentences


# --- Settings ---------------------------------------------------------------------------------
def demo_config(positional: str, src_vocab_size: int, tgt_vocab_size: int) -> TransformerConfig:
    """The demo models' size: small enough to train in about a minute on two CPU cores."""
    return TransformerConfig(
        src_vocab_size=src_vocab_size,
        tgt_vocab_size=tgt_vocab_size,
        d_model=64,
        n_heads=4,
        n_layers=2,
        n_decoder_layers=2,
        d_ff=128,
        dropout=0.1,
        max_len=64,  # corpus sentences have <= 12 characters and <= 8 words (+ [BOS]/[EOS])
        positional=positional,
    )


@dataclass(frozen=True)
class TrainSettings:
    """Optimisation settings; the defaults trained the shipped demo models."""

    steps: int = 2000  # optimiser steps (one batch each)
    batch_size: int = 64  # sentence pairs per batch
    warmup: int = 400  # warm-up steps of the learning-rate schedule (eq. 3)
    lr_factor: float = 1.0  # scale on eq. 3 (1.0 = the paper's formula)
    label_smoothing: float = 0.1  # paper §5.4: epsilon_ls = 0.1
    seed: int = 0  # seeds torch (weights, dropout) and the batch order
    corpus_seed: int = 0  # generate_corpus / split_corpus seed
    device: str = "auto"  # "auto" = cuda, then mps, then cpu (model.device.pick_device)


def noam_rate(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """Eq. 3 (§5.3): factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5).

    Rises linearly until warmup, then decays as 1/sqrt(step)."""
    if step < 1:
        raise ValueError(f"step counts from 1, got {step}")
    if warmup < 1:
        raise ValueError(f"warmup must be >= 1, got {warmup}")
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


# --- Data -----------------------------------------------------------------------------------
def make_tokenizers(pairs: Sequence[Pair]) -> tuple[TextTokenizer, TextTokenizer]:
    """Source: one token per character of the Chinese; target: one token per English word."""
    src = build_char_tokenizer([p.zh for p in pairs])
    tgt = build_word_tokenizer([p.en for p in pairs])
    return src, tgt


def shift_right(target_ids: Sequence[int], bos_id: int = BOS_ID, eos_id: int = EOS_ID) -> tuple[list[int], list[int]]:
    """Teacher forcing: decoder input = [BOS] + y, labels = y + [EOS] (same length, one apart)."""
    y = list(target_ids)
    return [bos_id, *y], [*y, eos_id]


def pad_rows(rows: Sequence[Sequence[int]], pad_id: int = PAD_ID) -> torch.Tensor:
    """Right-pad lists of ids into a (N, max length) long tensor."""
    width = max(len(r) for r in rows)
    out = torch.full((len(rows), width), pad_id, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r, dtype=torch.long)
    return out


@dataclass(eq=False)
class EncodedPairs:
    """A corpus as padded id tensors: src (N, Ts), decoder input and labels (N, Tt)."""

    src: torch.Tensor
    tgt_in: torch.Tensor
    labels: torch.Tensor

    def __len__(self) -> int:
        return self.src.size(0)

    def batch(self, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Rows `index`, with columns that are padding in every row trimmed off."""
        src, tgt_in, labels = self.src[index], self.tgt_in[index], self.labels[index]
        ts = int((src != PAD_ID).sum(1).max())
        tt = int((labels != PAD_ID).sum(1).max())
        return src[:, :ts], tgt_in[:, :tt], labels[:, :tt]


def encode_source(tokenizer: TextTokenizer, text: str) -> list[int]:
    """Source ids of a Chinese sentence: one per character, no [BOS]/[EOS] (nothing to align them to)."""
    return list(tokenizer.encode(text).ids)


def encode_pairs(pairs: Sequence[Pair], src_tokenizer: TextTokenizer, tgt_tokenizer: TextTokenizer) -> EncodedPairs:
    if not pairs:
        raise ValueError("no sentence pairs to encode")
    srcs, ins, labels = [], [], []
    for p in pairs:
        y = list(tgt_tokenizer.encode(p.en).ids)
        if tgt_tokenizer.decode(y) != p.en:
            raise ValueError(f"the target tokenizer cannot round-trip {p.en!r} (got {tgt_tokenizer.decode(y)!r})")
        dec_in, lab = shift_right(y)
        srcs.append(encode_source(src_tokenizer, p.zh))
        ins.append(dec_in)
        labels.append(lab)
    return EncodedPairs(pad_rows(srcs), pad_rows(ins), pad_rows(labels))


# --- Loss -----------------------------------------------------------------------------------
def sequence_loss(
    logits: torch.Tensor, labels: torch.Tensor, pad_id: int = PAD_ID, label_smoothing: float = 0.0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Mean cross-entropy over non-pad labels; returns (loss, correct predictions, counted tokens).

    logits (B, Tt, V), labels (B, Tt). Positions labelled pad_id count for nothing.
    """
    loss = F.cross_entropy(
        logits.reshape(-1, logits.size(-1)),  # (B*Tt, V)
        labels.reshape(-1),  # (B*Tt,)
        ignore_index=pad_id,
        label_smoothing=label_smoothing,  # epsilon_ls (§5.4)
    )
    real = labels != pad_id
    correct = ((logits.argmax(-1) == labels) & real).sum()
    return loss, correct, real.sum()


def batch_loss(
    model: Transformer, src: torch.Tensor, tgt_in: torch.Tensor, labels: torch.Tensor, label_smoothing: float = 0.0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Teacher-forced forward pass with the standard masks, then sequence_loss."""
    logits = model(src, tgt_in, model.src_mask(src), model.tgt_mask(tgt_in))  # (B, Tt, V)
    return sequence_loss(logits, labels, model.config.pad_id, label_smoothing)


# --- Training -------------------------------------------------------------------------------
class StepStats(NamedTuple):
    step: int  # optimiser steps taken so far (1 after the first)
    loss: float  # this batch's training loss (with label smoothing, if any)
    accuracy: float  # fraction of this batch's non-pad target tokens predicted right


class Trainer:
    """Owns a model, its Adam optimiser, the warm-up schedule and a deterministic batch order.

    Trainer.run(n) trains n more steps and yields StepStats after each, so a UI can draw the
    loss curve as it goes and stop any time; optimiser state and batch position persist between
    calls. The model is trained in place (never pass a cached demo model).
    """

    def __init__(
        self,
        model: Transformer,
        data: EncodedPairs,
        settings: TrainSettings = TrainSettings(),
        src_tokenizer: TextTokenizer | None = None,
        tgt_tokenizer: TextTokenizer | None = None,
    ) -> None:
        self.settings = settings
        self.src_tokenizer, self.tgt_tokenizer = src_tokenizer, tgt_tokenizer  # kept for translating
        self.device = pick_device(settings.device)
        self.model = model.to(self.device)
        self.data = data
        # §5.3: Adam, beta1 = 0.9, beta2 = 0.98, eps = 1e-9; the rate is set every step (eq. 3)
        self.optimizer = torch.optim.Adam(model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9)
        self.generator = torch.Generator().manual_seed(settings.seed)  # batch order only
        self.step_count = 0
        self.lr = 0.0
        self._order = torch.empty(0, dtype=torch.long)
        self._cursor = 0

    def _next_index(self) -> torch.Tensor:
        """The next batch of row indices: a fresh seeded permutation each epoch."""
        size = min(self.settings.batch_size, len(self.data))
        if self._cursor + size > len(self._order):
            self._order = torch.randperm(len(self.data), generator=self.generator)
            self._cursor = 0
        index = self._order[self._cursor : self._cursor + size]
        self._cursor += size
        return index

    def step(self) -> StepStats:
        """One optimiser step on the next batch."""
        self.model.train()
        src, tgt_in, labels = (t.to(self.device) for t in self.data.batch(self._next_index()))
        self.step_count += 1
        # eq. 3 (§5.3): warm-up, then 1/sqrt(step)
        self.lr = noam_rate(self.step_count, self.model.config.d_model, self.settings.warmup, self.settings.lr_factor)
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr
        loss, correct, count = batch_loss(self.model, src, tgt_in, labels, self.settings.label_smoothing)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return StepStats(self.step_count, loss.item(), correct.item() / max(count.item(), 1))

    def run(self, steps: int) -> Iterator[StepStats]:
        for _ in range(steps):
            yield self.step()


def train_steps(
    model: Transformer,
    pairs: Sequence[Pair],
    steps: int,
    src_tokenizer: TextTokenizer,
    tgt_tokenizer: TextTokenizer,
    settings: TrainSettings = TrainSettings(),
) -> Iterator[StepStats]:
    """Train `model` in place for `steps` steps on `pairs`, yielding (step, loss, accuracy) after each."""
    trainer = Trainer(model, encode_pairs(pairs, src_tokenizer, tgt_tokenizer), settings, src_tokenizer, tgt_tokenizer)
    yield from trainer.run(steps)


def demo_trainer(
    positional: str = "sinusoidal", settings: TrainSettings = TrainSettings(), **config_overrides
) -> tuple[Trainer, tuple[list[Pair], list[Pair]]]:
    """A fresh Trainer over the demo corpus's train split, and the (train, held-out) split.

    The model is demo_config(positional) with config_overrides applied (e.g. d_model=32), built
    after torch.manual_seed(settings.seed). For the app: trainer.run(n) trains n more steps;
    translate_batch(trainer.model, texts, trainer.src_tokenizer, trainer.tgt_tokenizer) reads it.
    """
    train_pairs, heldout = split_corpus(generate_corpus(settings.corpus_seed), seed=settings.corpus_seed)
    src_tok, tgt_tok = make_tokenizers(train_pairs)
    config = dataclasses.replace(demo_config(positional, src_tok.vocab_size, tgt_tok.vocab_size), **config_overrides)
    torch.manual_seed(settings.seed)  # weight init and dropout
    model = Transformer(config)
    trainer = Trainer(model, encode_pairs(train_pairs, src_tok, tgt_tok), settings, src_tok, tgt_tok)
    return trainer, (train_pairs, heldout)


# --- Evaluation -----------------------------------------------------------------------------
@torch.no_grad()
def translate_batch(
    model: Transformer, texts: Sequence[str], src_tokenizer: TextTokenizer, tgt_tokenizer: TextTokenizer,
    batch_size: int = 512,
) -> list[str]:
    """Greedy translations of many sentences at once (padded batches; padding is masked)."""
    model.eval()
    out: list[str] = []
    for start in range(0, len(texts), batch_size):
        chunk = texts[start : start + batch_size]
        src = pad_rows([encode_source(src_tokenizer, t) for t in chunk]).to(model.device)
        ys = model.greedy_decode(src, BOS_ID, EOS_ID, max_new_tokens=model.config.max_len - 1)
        for row in ys.tolist():
            row = row[1:]  # drop [BOS]
            out.append(tgt_tokenizer.decode(row[: row.index(EOS_ID)] if EOS_ID in row else row))
    return out


def exact_match(model: Transformer, pairs: Sequence[Pair], src_tokenizer, tgt_tokenizer) -> float:
    """Fraction of pairs whose greedy translation equals the reference exactly."""
    hyps = translate_batch(model, [p.zh for p in pairs], src_tokenizer, tgt_tokenizer)
    return sum(h == p.en for h, p in zip(hyps, pairs, strict=True)) / len(pairs)


def _np_alignment(np_zh: str, start: int, en: list[str], e0: int) -> tuple[list[tuple[int, int, int]], int]:
    """Word links of one noun phrase at source char `start` and English word `e0`; returns (links, words used)."""
    end = start + len(np_zh)
    if np_zh in PRONOUNS:  # 她 -> she / her
        return [(e0, start, end)], 1
    if np_zh in NOUNS:  # 老师 -> the teacher: the noun links to its characters, "the" to nothing
        return [(e0 + 1, start, end)], 2
    owner, noun = np_zh.split("的")  # 我的猫 -> my cat
    if owner not in PRONOUNS or noun not in POSSESSED:
        raise ValueError(f"not a noun phrase of the grammar: {np_zh!r}")
    return [(e0, start, start + len(owner)), (e0 + 1, end - len(noun), end)], 2


def gold_alignment(pair: Pair) -> list[tuple[int, int, int]]:
    """Word alignment of a subject-verb-object pair: (English word index, source start, end).

    Derived from the grammar, not from a model: the English subject word(s) link to the
    subject's characters, the verb to the verb's, the object word(s) to the object's. Function
    words (the, do/does/did, not, every day, yesterday) and 的/不/了 are left unaligned.
    Pairs of the have / not_have templates return [] (their object is a phrase with a classifier).
    """
    if pair.template not in VERB_TEMPLATES:
        return []
    subject, verb, obj = pair.triple
    en = pair.en.split(" ")
    links, used = _np_alignment(subject, 0, en, 0)
    v_start = pair.zh.index(verb, len(subject))
    v_word = used + (2 if pair.template in ("neg", "past_neg") else 0)  # does not | did not + verb
    if en[v_word] not in VERBS[verb]:
        raise ValueError(f"cannot find the verb of {verb!r} in {pair.en!r}")
    links.append((v_word, v_start, v_start + len(verb)))
    o_links, _ = _np_alignment(obj, len(pair.zh) - len(obj), en, v_word + 1)
    return links + o_links


@torch.no_grad()
def cross_attention_alignment(
    model: Transformer, pairs: Sequence[Pair], src_tokenizer, tgt_tokenizer
) -> torch.Tensor:
    """(decoder layers, heads) fraction of gold links where the head's argmax source position
    lies inside the aligned source word.

    Row convention: for English word y_t we read the cross-attention row of the decoder position
    that PREDICTS y_t (its input is y_{t-1}, or [BOS] for t = 0) under teacher forcing.
    """
    from model.analysis import traced_forward

    model.eval()
    rows = [(p, gold_alignment(p)) for p in pairs]
    rows = [(p, links) for p, links in rows if links]
    if not rows:
        raise ValueError("no pair has a gold alignment (only subject-verb-object templates do)")
    data = encode_pairs([p for p, _ in rows], src_tokenizer, tgt_tokenizer)
    src, tgt_in = data.src.to(model.device), data.tgt_in.to(model.device)
    trace = traced_forward(model, src, tgt_in, "paper")
    layers = trace.decoder.layers
    hits = torch.zeros(len(layers), model.config.n_heads)
    b_idx, t_idx, lo, hi = (torch.tensor(x) for x in zip(
        *[(b, t, s, e) for b, (_, links) in enumerate(rows) for t, s, e in links], strict=True))
    for i, layer in enumerate(layers):
        argmax = layer.cross_attn.weights.argmax(-1).cpu()  # (B, H, Tt)
        picked = argmax[b_idx, :, t_idx]  # (links, H)
        hits[i] = ((picked >= lo[:, None]) & (picked < hi[:, None])).float().mean(0)  # lo, hi (links, 1) -> (H,)
    return hits


@torch.no_grad()
def cross_attention_entropy_ratio(model: Transformer, pairs: Sequence[Pair], src_tokenizer, tgt_tokenizer) -> torch.Tensor:
    """(decoder layers, heads) mean row entropy of cross-attention divided by the uniform entropy log(Ts)."""
    from model.analysis import traced_forward

    model.eval()
    data = encode_pairs(pairs, src_tokenizer, tgt_tokenizer)
    src, tgt_in = data.src.to(model.device), data.tgt_in.to(model.device)
    trace = traced_forward(model, src, tgt_in, "paper")
    ts = (src != PAD_ID).sum(1).double()  # (B,) source lengths
    real = (tgt_in != PAD_ID)  # (B, Tt) query rows that exist
    out = []
    for layer in trace.decoder.layers:
        w = layer.cross_attn.weights.double()  # (B, H, Tt, Ts)
        ent = -(w * torch.log(w.clamp_min(1e-12))).sum(-1)  # (B, H, Tt)
        ratio = ent / torch.log(ts)[:, None, None]  # (B,) -> (B, 1, 1): uniform over Ts keys has entropy log Ts
        mask = real[:, None, :].expand_as(ratio)  # (B, Tt) -> (B, H, Tt)
        out.append(torch.stack([ratio[:, h][mask[:, h]].mean() for h in range(ratio.size(1))]))  # (H,)
    return torch.stack(out).float()  # (layers, H)


# --- The full run ---------------------------------------------------------------------------
@dataclass
class TrainResult:
    name: str
    model: Transformer
    src_tokenizer: TextTokenizer
    tgt_tokenizer: TextTokenizer
    metadata: dict
    seconds: float
    directory: Path | None


def train(
    name: str,
    positional: str,
    settings: TrainSettings = TrainSettings(),
    out_dir: str | Path | None = MODELS_DIR,
    progress: bool = True,
) -> TrainResult:
    """Train one demo model on generate_corpus's train split, evaluate on the held-out split, save it.

    out_dir=None trains and evaluates without writing anything.
    """
    from tqdm.auto import tqdm


    trainer, (train_pairs, heldout) = demo_trainer(positional, settings)
    model, src_tok, tgt_tok = trainer.model, trainer.src_tokenizer, trainer.tgt_tokenizer

    start = time.perf_counter()
    recent: list[StepStats] = []
    bar = tqdm(total=settings.steps, desc=name, disable=not progress, mininterval=0.5)
    for stats in trainer.run(settings.steps):
        recent = (recent + [stats])[-50:]
        bar.update(1)
        if stats.step % 10 == 0:
            bar.set_postfix(loss=f"{stats.loss:.3f}", acc=f"{stats.accuracy:.3f}", lr=f"{trainer.lr:.2e}")
    bar.close()
    seconds = time.perf_counter() - start

    model = model.cpu().eval()
    # Evaluate the weights exactly as they will be shipped: saving stores them as float16.
    with torch.no_grad():
        for tensor in model.state_dict().values():
            if tensor.is_floating_point():
                tensor.copy_(tensor.to(STORAGE_DTYPE))
    align = cross_attention_alignment(model, heldout, src_tok, tgt_tok)
    entropy = cross_attention_entropy_ratio(model, heldout, src_tok, tgt_tok)
    metadata = {
        "name": name,
        "training": {
            **dataclasses.asdict(settings),
            "device": trainer.device.type,  # the device actually used (results may differ between devices)
            "optimizer": "Adam(beta1=0.9, beta2=0.98, eps=1e-9), lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)",
            "train_pairs": len(train_pairs),
            "final_loss": round(sum(s.loss for s in recent) / len(recent), 4),  # mean of the last 50 batches
            "final_accuracy": round(sum(s.accuracy for s in recent) / len(recent), 4),
        },
        "evaluation": {
            "heldout_pairs": len(heldout),
            "heldout_exact_match": round(exact_match(model, heldout, src_tok, tgt_tok), 4),
            "train_exact_match": round(exact_match(model, train_pairs, src_tok, tgt_tok), 4),
            "cross_attention_alignment": [[round(float(x), 3) for x in row] for row in align],
            "cross_attention_entropy_ratio": [[round(float(x), 3) for x in row] for row in entropy],
        },
    }
    directory = None
    if out_dir is not None:
        directory = Path(out_dir) / name
        save_checkpoint(directory, model, src_tok, tgt_tok, metadata=metadata)
    return TrainResult(name, model, src_tok, tgt_tok, metadata, seconds, directory)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--name", help="model name (directory under assets/models/); default: both demo models")
    parser.add_argument("--positional", choices=("sinusoidal", "learned", "none"),
                        help="positional encoding (default: by --name, sinusoidal for zh-en, none for zh-en-nope)")
    defaults = TrainSettings()
    parser.add_argument("--steps", type=int, default=defaults.steps)
    parser.add_argument("--batch-size", type=int, default=defaults.batch_size)
    parser.add_argument("--warmup", type=int, default=defaults.warmup)
    parser.add_argument("--lr-factor", type=float, default=defaults.lr_factor)
    parser.add_argument("--label-smoothing", type=float, default=defaults.label_smoothing)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--device", default=defaults.device)
    parser.add_argument("--threads", type=int, default=1,
                        help="CPU threads for torch (default 1: on a busy 2-core machine more threads spin and run ~10x slower)")
    parser.add_argument("--out-dir", default=str(MODELS_DIR))
    parser.add_argument("--no-save", action="store_true", help="train and evaluate, write nothing")
    args = parser.parse_args(argv)

    if args.name is None:
        if args.positional is not None:
            parser.error("--positional needs --name")
        jobs = list(DEMO_POSITIONAL.items())
    else:
        positional = args.positional or DEMO_POSITIONAL.get(args.name)
        if positional is None:
            parser.error(f"--name {args.name!r} is not a demo model: give --positional")
        jobs = [(args.name, positional)]
    settings = TrainSettings(
        steps=args.steps, batch_size=args.batch_size, warmup=args.warmup, lr_factor=args.lr_factor,
        label_smoothing=args.label_smoothing, seed=args.seed, device=args.device,
    )
    torch.set_num_threads(args.threads)
    for name, positional in jobs:
        result = train(name, positional, settings, None if args.no_save else args.out_dir)
        ev = result.metadata["evaluation"]
        print(
            f"{name} (positional={positional}): {result.seconds:.1f} s, final loss "
            f"{result.metadata['training']['final_loss']}, held-out exact match {ev['heldout_exact_match']:.4f}, "
            f"train {ev['train_exact_match']:.4f}"
        )
        print(f"  cross-attention alignment (layer x head): {ev['cross_attention_alignment']}")
        print(f"  cross-attention entropy / log Ts (layer x head): {ev['cross_attention_entropy_ratio']}")
        if result.directory is not None:
            print(f"  saved to {result.directory}")


if __name__ == "__main__":
    main()
