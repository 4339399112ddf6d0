"""Answers to the exercises of Chapter 11 (see tests/exercises/__init__.py)."""

from attn_course.checks.modern import BLOCKS, RMS_NORM, SINK
from tests.exercises import from_table

NOTEBOOK = "11_modern.ipynb"

ANSWERS = {
    "ch11-ex-rms-norm": from_table(
        RMS_NORM,
        "# Your answer: RMSNorm of x (..., D) with the learned weight (D,): each\n"
        "# vector divided by the root of its mean square plus eps, times weight.\n",
    ),
    "ch11-ex-sink": from_table(
        SINK,
        "# Your answer: the attention weights (H, T_q, T_k) of the scores\n"
        "# (H, T_q, T_k) with one sink logit per head, sink (H,), in each row's\n"
        "# softmax.\n",
    ),
    "ch11-ex-blocks": from_table(
        BLOCKS,
        "# Your answer: how many blocks of block_size tokens a paged KV cache takes\n"
        "# for sequences of the given lengths (a list of ints), none shared.\n",
    ),
}
