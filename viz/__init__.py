"""Attention Lab figures: numpy arrays and lists in, plotly.graph_objects.Figure out.

No Streamlit and no torch here. Every builder takes keyword arguments (labels, title, theme)
and applies one of the themes in viz.theme; token labels are made unique ("0:I") and escaped.
"""

from viz.attention import (
    attention_lines,
    attention_step_figures,
    context_key_bars,
    context_vector_figure,
    entropy_overview,
    heads_grid,
    layers_heads_grid,
    mask_heatmap,
    qkv_figure,
    query_bars,
    scores_heatmap,
    weights_heatmap,
)
from viz.heatmap import LARGE_ABOVE, MAX_CELLS, matrix_heatmap, symmetric_range
from viz.labels import escape_text, unique_labels, visible_whitespace
from viz.order import (
    aligned_attention_figure,
    aligned_outputs_figure,
    order_difference_heatmap,
    pooled_outputs_figure,
)
from viz.positional import (
    embedding_pe_figure,
    local_maxima,
    pe_curves,
    pe_dot_curve,
    pe_dot_matrix,
    pe_heatmap,
    pe_rotation,
)
from viz.tables import (
    highlight_differences,
    matrix_frame,
    shown_table,
    token_comparison,
    token_diff,
    token_table,
    turned_table,
)
from viz.theme import (
    FONT_SANS,
    FONT_SERIF,
    MAGNITUDE_COLORSCALE,
    SCORES_COLORSCALE,
    THEME_NAMES,
    THEMES,
    WEIGHTS_COLORSCALE,
    apply_theme,
    figure_config,
)
from viz.translation import (
    STEP_HOVER,
    cross_attention_heatmap,
    decoder_self_attention_heatmap,
    loss_curves,
)

__all__ = [
    "FONT_SANS",
    "FONT_SERIF",
    "LARGE_ABOVE",
    "MAGNITUDE_COLORSCALE",
    "MAX_CELLS",
    "SCORES_COLORSCALE",
    "STEP_HOVER",
    "THEMES",
    "THEME_NAMES",
    "WEIGHTS_COLORSCALE",
    "aligned_attention_figure",
    "aligned_outputs_figure",
    "apply_theme",
    "attention_step_figures",
    "attention_lines",
    "context_key_bars",
    "context_vector_figure",
    "cross_attention_heatmap",
    "decoder_self_attention_heatmap",
    "embedding_pe_figure",
    "entropy_overview",
    "escape_text",
    "figure_config",
    "heads_grid",
    "highlight_differences",
    "shown_table",
    "layers_heads_grid",
    "local_maxima",
    "loss_curves",
    "mask_heatmap",
    "matrix_frame",
    "matrix_heatmap",
    "order_difference_heatmap",
    "pe_curves",
    "pe_dot_curve",
    "pe_dot_matrix",
    "pe_heatmap",
    "pe_rotation",
    "pooled_outputs_figure",
    "qkv_figure",
    "query_bars",
    "scores_heatmap",
    "symmetric_range",
    "token_comparison",
    "token_diff",
    "token_table",
    "turned_table",
    "unique_labels",
    "visible_whitespace",
    "weights_heatmap",
]
