"""Rebuild assets/tokenizers/{char,bpe,word}.json from assets/corpus/ (deterministic).

Usage: python scripts/build_tokenizers.py [--check]
--check exits with status 1 if a shipped file differs from what the corpus produces.
"""

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model.tokenizer import TOKENIZERS_DIR, build_shipped_tokenizers  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    tokenizers = build_shipped_tokenizers()
    if not args.check:
        TOKENIZERS_DIR.mkdir(parents=True, exist_ok=True)
        for name, tokenizer in tokenizers.items():
            tokenizer.save(TOKENIZERS_DIR / f"{name}.json")
            print(f"wrote {TOKENIZERS_DIR / f'{name}.json'} (vocab_size={tokenizer.vocab_size})")
        return 0
    stale = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, tokenizer in tokenizers.items():
            fresh = Path(tmp) / f"{name}.json"
            tokenizer.save(fresh)
            shipped = TOKENIZERS_DIR / f"{name}.json"
            if not shipped.exists() or shipped.read_bytes() != fresh.read_bytes():
                stale.append(str(shipped))
    for path in stale:
        print(f"out of date: {path}")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
