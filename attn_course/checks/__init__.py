"""Self-checks for the exercises: a green tick when right, an explanation when not.

Introduced in Chapter 1. A check prints one line starting with ✅ when your answer
is right, and raises ``AssertionError`` with what is wrong and how to fix it when
it is not, naming the usual slip your answer matches (or the slips it cannot tell
apart); a check called the wrong way raises ``TypeError`` or ``ValueError``. Its
messages never depend on your random seed, and it leaves your random numbers alone.
Each chapter's checks are a module of tables (:mod:`.table`): ``basics`` (Chapter
1), ``trainable_weights``, ``causal_mask``, ``dropout``, ``multi_head``,
``encoder_decoder``, ``positions``, ``gpt``, ``efficient``, ``history``, ``modern``,
``recurrence`` (Chapter 12); all of them are available from here.
"""

from .basics import (
    check_attention_fn,
    check_close,
    check_context_vector,
    check_scaled_embeddings,
    check_softmax,
    check_weights,
)
from .causal_mask import (
    check_additive_mask,
    check_causal_attention_fn,
    check_causal_mask,
    check_mha_mask_fn,
)
from .dropout import (
    check_dropout_fn,
    check_eval_forward,
    check_row_drop_probability,
)
from .efficient import (
    check_dilated_mask_fn,
    check_largest_batch_fn,
    check_online_step_fn,
)
from .encoder_decoder import (
    check_cross_attention_mask,
    check_cross_attention_shapes,
    check_future_detector,
)
from .gpt import (
    check_gpt_parameters_fn,
    check_make_example_fn,
    check_top_k_fn,
)
from .history import (
    check_additive_scores_fn,
    check_path_length_fn,
    check_scoring_parameters_fn,
)
from .modern import (
    check_blocks_needed_fn,
    check_rms_norm_fn,
    check_sink_weights_fn,
)
from .multi_head import (
    check_head_counts_fn,
    check_head_split,
    check_param_count_fn,
    check_shape_predictions,
)
from .positions import (
    check_alibi_slopes,
    check_changed_rows,
    check_rotate_pair_fn,
)
from .recurrence import (
    check_delta_step_fn,
    check_linear_step_fn,
    check_numbers_kept_fn,
)
from .trainable_weights import (
    check_projected_context,
    check_scaled_attention_fn,
    check_score_variance,
    check_v1_from_v2,
)

__all__ = [
    "check_numbers_kept_fn",
    "check_linear_step_fn",
    "check_delta_step_fn",
    "check_additive_mask",
    "check_additive_scores_fn",
    "check_alibi_slopes",
    "check_attention_fn",
    "check_blocks_needed_fn",
    "check_causal_attention_fn",
    "check_causal_mask",
    "check_changed_rows",
    "check_close",
    "check_context_vector",
    "check_cross_attention_mask",
    "check_cross_attention_shapes",
    "check_dilated_mask_fn",
    "check_dropout_fn",
    "check_eval_forward",
    "check_future_detector",
    "check_gpt_parameters_fn",
    "check_head_counts_fn",
    "check_head_split",
    "check_largest_batch_fn",
    "check_make_example_fn",
    "check_mha_mask_fn",
    "check_online_step_fn",
    "check_param_count_fn",
    "check_path_length_fn",
    "check_projected_context",
    "check_rotate_pair_fn",
    "check_rms_norm_fn",
    "check_row_drop_probability",
    "check_scaled_attention_fn",
    "check_scaled_embeddings",
    "check_score_variance",
    "check_scoring_parameters_fn",
    "check_shape_predictions",
    "check_sink_weights_fn",
    "check_softmax",
    "check_top_k_fn",
    "check_v1_from_v2",
    "check_weights",
]
