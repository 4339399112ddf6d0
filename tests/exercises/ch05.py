"""Answers to the exercises of Chapter 5 (see tests/exercises/__init__.py)."""

from attn_course.checks.multi_head import HEAD_COUNTS, MERGE_HEADS, PARAMS, SPLIT_HEADS
from tests.exercises import Answers, from_table, wrong

NOTEBOOK = "05_multi_head.ipynb"

# Both functions in one answer cell: a slip of split_heads, and the right merge_heads.
_SPLIT, _MERGE = from_table(SPLIT_HEADS), from_table(MERGE_HEADS, comment="\n\n")
_STRAIGHT = _SPLIT.wrong[0]

# The table counts the parameters of a real module; a learner writes a formula.
_FORMULA = """def count_parameters(d_in, d_out, num_heads, qkv_bias):
    qkv = 3 * (d_in * d_out + (d_out if qkv_bias else 0))  # W_query, W_key, W_value
    return qkv + d_out * d_out + d_out  # out_proj, always with a bias
"""

PREDICTED = {
    "wrapper output": (2, 5, 36),
    "wrapper weights": (2, 3, 5, 5),
    "fused output": (2, 5, 12),
    "fused weights": (2, 3, 5, 5),
    "queries.view": (2, 5, 3, 4),
    "queries.transpose": (2, 3, 5, 4),
    "context.transpose": (2, 5, 3, 4),
}

ANSWERS = {
    "ch05-ex-split": Answers(
        _SPLIT.right + _MERGE.right,
        (_STRAIGHT._replace(source=_STRAIGHT.source + _MERGE.right),),
    ),
    "ch05-ex-shapes": Answers(
        right=f"predicted = {PREDICTED!r}\n",
        wrong=(
            wrong(
                "fused-per-head",
                f"predicted = {PREDICTED | {'fused output': (2, 5, 36)}!r}\n",
                "check_shape_predictions: your shapes for d_in=3, d_out=12",
                "MultiHeadAttention's output has d_out features, the TOTAL of its",
            ),
        ),
    ),
    "ch05-ex-params": from_table(PARAMS)._replace(right=_FORMULA),
    "ch05-ex-heads": from_table(HEAD_COUNTS),
    "ch05-ex-mha-mask": Answers(
        right="def to_mha_mask(mask):\n    return ~mask\n",
        wrong=(
            wrong(
                "unchanged",
                "def to_mha_mask(mask):\n    return mask\n",
                "check_mha_mask_fn",
                "True as blocked",
            ),
        ),
    ),
}
