"""Save and load trained models: safetensors weights + config.json + the two tokenizer JSONs.

A checkpoint is a directory:

    config.json            {"format", "model_config": TransformerConfig.to_dict(), "weights",
                            "tokenizers", "dtype", "metadata": {training settings, scores}}
    model.safetensors      the state_dict (float16; the sinusoidal table is a non-persistent
                           buffer, so it is rebuilt, never stored)
    src_tokenizer.json     the source (Chinese, per character) tokenizer
    tgt_tokenizer.json     the target (English, per word) tokenizer

Nothing here unpickles (no torch.load): safetensors and JSON only. Every way a checkpoint can be
broken (missing, truncated, shapes that do not match config.json, missing keys, a tokenizer whose
vocabulary does not match the embedding) raises CheckpointError naming the file at fault.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from model.config import TransformerConfig
from model.tokenizer import TextTokenizer
from model.transformer import Transformer

FORMAT = "attention-lab-checkpoint/1"
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
SRC_TOKENIZER_FILE = "src_tokenizer.json"
TGT_TOKENIZER_FILE = "tgt_tokenizer.json"
MODELS_DIR = Path(__file__).resolve().parents[1] / "assets" / "models"  # shipped demo checkpoints
STORAGE_DTYPE = torch.float16  # halves the shipped files; loading computes in float32


class CheckpointError(ValueError):
    """A checkpoint exists but cannot be used (truncated, inconsistent, wrong shapes...)."""


class CheckpointNotFoundError(CheckpointError, FileNotFoundError):
    """A checkpoint directory or one of its files is missing."""


@dataclass(eq=False)
class Checkpoint:
    model: Transformer  # in eval mode
    src_tokenizer: TextTokenizer
    tgt_tokenizer: TextTokenizer
    config: TransformerConfig
    metadata: dict  # training settings and scores, as written by model.train


def save_checkpoint(
    directory: str | Path,
    model: Transformer,
    src_tokenizer: TextTokenizer,
    tgt_tokenizer: TextTokenizer,
    metadata: dict | None = None,
) -> Path:
    """Write the four files into directory (created if needed); same inputs give the same bytes."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = {
        key: (t.detach().to("cpu", STORAGE_DTYPE) if t.is_floating_point() else t.detach().cpu()).contiguous()
        for key, t in model.state_dict().items()
    }
    save_file(state, str(directory / WEIGHTS_FILE))
    src_tokenizer.save(directory / SRC_TOKENIZER_FILE)
    tgt_tokenizer.save(directory / TGT_TOKENIZER_FILE)
    doc = {
        "format": FORMAT,
        "model_config": model.config.to_dict(),
        "weights": WEIGHTS_FILE,
        "dtype": str(STORAGE_DTYPE).removeprefix("torch."),
        "tokenizers": {"src": SRC_TOKENIZER_FILE, "tgt": TGT_TOKENIZER_FILE},
        "metadata": metadata or {},
    }
    (directory / CONFIG_FILE).write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return directory


def _read_config(path: Path) -> tuple[TransformerConfig, dict]:
    if not path.is_file():
        raise CheckpointNotFoundError(f"checkpoint config not found: {path}")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CheckpointError(f"{path} is not valid JSON: {err}") from err
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise CheckpointError(f"{path}: expected format {FORMAT!r}, found {found!r}")
    try:
        config = TransformerConfig.from_dict(doc["model_config"])
    except (KeyError, TypeError, ValueError) as err:
        raise CheckpointError(f"{path}: bad model_config: {err}") from err
    return config, doc


def _read_tokenizer(path: Path, vocab_size: int, side: str) -> TextTokenizer:
    if not path.is_file():
        raise CheckpointNotFoundError(f"{side} tokenizer not found: {path}")
    try:
        tokenizer = TextTokenizer.from_file(path)
    except ValueError as err:
        raise CheckpointError(f"{path}: {err}") from err
    if tokenizer.vocab_size != vocab_size:
        raise CheckpointError(
            f"{path}: the {side} tokenizer has {tokenizer.vocab_size} tokens but the model's "
            f"{side}_vocab_size is {vocab_size}; the tokenizer does not belong to these weights"
        )
    return tokenizer


def _read_weights(path: Path, model: Transformer, config_path: Path) -> dict[str, torch.Tensor]:
    if not path.is_file():
        raise CheckpointNotFoundError(f"checkpoint weights not found: {path}")
    try:
        state = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as err:
        raise CheckpointError(f"{path} is truncated or not a safetensors file: {err}") from err
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        raise CheckpointError(
            f"{path} does not match {config_path}: missing {missing[:5]}{'...' if len(missing) > 5 else ''}, "
            f"unexpected {unexpected[:5]}{'...' if len(unexpected) > 5 else ''}"
        )
    for key, want in expected.items():
        got = state[key]
        if got.shape != want.shape:
            raise CheckpointError(
                f"{path}: {key} has shape {tuple(got.shape)} but {config_path} implies {tuple(want.shape)} "
                f"(d_model={model.config.d_model}, d_ff={model.config.d_ff}, vocabularies "
                f"{model.config.src_vocab_size}/{model.config.tgt_vocab_size}): config and weights do not belong together"
            )
        if got.is_floating_point() and not torch.isfinite(got).all():
            raise CheckpointError(f"{path}: {key} holds NaN or infinite values")
    return {k: v.to(expected[k].dtype) for k, v in state.items()}


def load_checkpoint(directory: str | Path, device: str | torch.device = "cpu") -> Checkpoint:
    """Read a checkpoint written by save_checkpoint; the model comes back in eval mode on `device`."""
    directory = Path(directory)
    if not directory.is_dir():
        raise CheckpointNotFoundError(f"checkpoint directory not found: {directory}")
    config_path = directory / CONFIG_FILE
    config, doc = _read_config(config_path)
    names = doc.get("tokenizers", {})
    src_tok = _read_tokenizer(directory / names.get("src", SRC_TOKENIZER_FILE), config.src_vocab_size, "src")
    tgt_tok = _read_tokenizer(directory / names.get("tgt", TGT_TOKENIZER_FILE), config.tgt_vocab_size, "tgt")
    with torch.random.fork_rng(devices=[]):  # building draws random init weights: leave the caller's RNG alone
        model = Transformer(config)
    state = _read_weights(directory / doc.get("weights", WEIGHTS_FILE), model, config_path)
    model.load_state_dict(state, strict=True)
    return Checkpoint(model.to(device).eval(), src_tok, tgt_tok, config, doc.get("metadata", {}))
