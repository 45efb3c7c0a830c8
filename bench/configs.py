"""The model configurations the benchmark measures."""

from __future__ import annotations

from model.config import TransformerConfig

# The paper's base model (Table 3): d_model 512, 8 heads, 6 + 6 layers, d_ff 2048.
BASE_CONFIG = TransformerConfig()

# The app's default small model's sizes (lab.spec.FigureSpec's defaults). Its vocabularies are not the app's:
# the app's random model reads the char tokenizer on both sides (931 pieces, lab.compute.load_model); these are
# kept so that runs compare with earlier ones (only the generator differs, 2 * T * d_model * vocab FLOPs). The
# app figures (--app) build the app's own models (bench/app_figures.py APP_SPECS).
DEFAULT_APP_CONFIG = TransformerConfig(
    src_vocab_size=2000, tgt_vocab_size=1000, d_model=64, n_heads=4, n_layers=2, d_ff=256
)

CONFIGS: dict[str, TransformerConfig] = {"base": BASE_CONFIG, "app": DEFAULT_APP_CONFIG}
QUICK_CONFIGS = ("app",)  # --quick measures the small model only

SIZES = (8, 16, 32, 128, 512)  # tokens, source = target length
QUICK_SIZES = (8, 32)
