"""What made a set of exported figures, beside them as provenance.json (`python -m lab.export`).

spec.json says what was drawn; this says with what: the Attention Lab commit (and whether files differed
from it), the Python packages whose versions change numbers or drawing, and the shipped trained models by
their files' SHA-256. A random model is built from the spec's seed with torch's generator, so its weights
are the same for the same torch version (the record names it); a trained model is its files.
"""

from __future__ import annotations

import hashlib
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from model.checkpoint import MODELS_DIR

ROOT = Path(__file__).resolve().parents[1]
TOKENIZERS_DIR = ROOT / "assets" / "tokenizers"
PACKAGES = ("torch", "numpy", "tokenizers", "plotly", "kaleido", "pandas")


def commit() -> dict[str, object]:
    """{"commit": the checkout's HEAD, "changed": whether tracked files differ from it}; "unknown" outside
    a git checkout (an unpacked copy) or without git."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10)
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                                capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return {"commit": "unknown"}
    if head.returncode != 0:
        return {"commit": "unknown"}
    return {"commit": head.stdout.strip(), "changed": bool(status.stdout.strip())}


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def file_hashes(folder: Path) -> dict[str, str]:
    """Each file of `folder` (not its subfolders) and its SHA-256; {} where the folder is missing."""
    if not folder.is_dir():
        return {}
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(folder.iterdir()) if f.is_file()}


def trained_models() -> dict[str, dict[str, str]]:
    """Each shipped trained model's files and their SHA-256 (assets/models/<name>/)."""
    folders = sorted(p for p in MODELS_DIR.iterdir() if p.is_dir()) if MODELS_DIR.is_dir() else []
    return {folder.name: file_hashes(folder) for folder in folders}


def provenance() -> dict[str, object]:
    return {
        "attention_lab": commit(),
        "python": platform.python_version(),
        "packages": {name: _version(name) for name in PACKAGES},
        "random_model": "built from the spec's seed and sizes with torch.manual_seed: the same weights with the "
                        "same torch version",
        "tokenizers": file_hashes(TOKENIZERS_DIR),  # the random model's (its ids pick the embedding rows)
        "trained_models": trained_models(),
    }
