"""Answers to the exercises of Chapter 12 (see tests/exercises/__init__.py)."""

from attn_course.checks.recurrence import DELTA_STEP, LINEAR_STEP, NUMBERS_KEPT
from tests.exercises import from_table

NOTEBOOK = "12_beyond_softmax.ipynb"

ANSWERS = {
    "ch12-ex-linear-step": from_table(
        LINEAR_STEP,
        "# Your answer: the state (d_v, d_k) after linear attention writes the\n"
        "# key k (d_k,) and the value v (d_v,).\n",
    ),
    "ch12-ex-delta-step": from_table(
        DELTA_STEP,
        "# Your answer: the state (d_v, d_k) after one delta-rule step with the\n"
        "# key k (d_k,), the value v (d_v,) and the strength beta.\n",
    ),
    "ch12-ex-numbers-kept": from_table(
        NUMBERS_KEPT,
        "# Your answer: the numbers a model keeps for a context of tokens tokens:\n"
        "# a KV cache in each attention layer, a fixed state in each linear layer.\n",
    ),
}
