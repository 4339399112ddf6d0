"""Self-checks for the exercises: a green tick when right, an explanation when not.

Introduced in Chapter 1. Each check prints one line starting with ✅ when your
answer is right. When it is wrong, it raises ``AssertionError`` with a message
that says what is wrong and how to fix it: an answer that is not a tensor, a wrong
shape (both shapes are shown), NaN or infinite values, weights that are negative or
whose rows do not sum to 1, or values that are off (the largest difference, where
it is, and the expected and received numbers there), and, where a common mistake
explains the difference, that mistake by name. A mistake in how a check is called
(a function's result where the function itself is wanted, a size that is not an
int) is a ``TypeError`` or ``ValueError`` instead.

Messages never depend on memory addresses, timing or your random seed, and a check
leaves your random numbers alone: a notebook that runs a check prints the same
thing every time and draws the same numbers afterwards. The checks of each chapter
live in their own module (``basics`` for Chapter 1, ``trainable_weights``,
``causal_mask``, ``dropout``, ``multi_head``, ``encoder_decoder`` for Chapters 2 to
6, ``positions`` for Chapter 7, ``gpt`` for Chapter 8, ``efficient`` for
Chapter 9, ``history`` for Chapter 10); all of them are available from here.

Shapes
------
Letters: see attn_course.shapes.
inputs : (T, D)
weights : (..., T_q, T_k)
context : (..., T_q, d_v)
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
from .trainable_weights import (
    check_projected_context,
    check_scaled_attention_fn,
    check_score_variance,
    check_v1_from_v2,
)

__all__ = [
    "check_additive_mask",
    "check_additive_scores_fn",
    "check_alibi_slopes",
    "check_attention_fn",
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
    "check_row_drop_probability",
    "check_scaled_attention_fn",
    "check_scaled_embeddings",
    "check_score_variance",
    "check_scoring_parameters_fn",
    "check_shape_predictions",
    "check_softmax",
    "check_top_k_fn",
    "check_v1_from_v2",
    "check_weights",
]
