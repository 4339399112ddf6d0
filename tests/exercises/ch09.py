"""Answers to the exercises of Chapter 9 (see tests/exercises/__init__.py)."""

from attn_course.checks.efficient import DILATED, LARGEST_BATCH, ONLINE_STEP
from tests.exercises import from_table

NOTEBOOK = "09_efficient.ipynb"

ANSWERS = {
    "ch09-ex-online-step": from_table(
        ONLINE_STEP,
        "# Your answer: the pair (m_new, s_new) after one more block of scores.\n"
        "# m and s: (R,), the running maximum and the running sum of exp(x - m);\n"
        "# block: (R, n). A row whose scores so far are all -inf gives m_new = -inf\n"
        "# and s_new = 0, without NaN. Leave m and s unchanged.\n",
    ),
    "ch09-ex-largest-batch": from_table(
        LARGEST_BATCH,
        "# Your answer: how many sequences of `tokens` tokens can keep their KV "
        "caches\n# in `budget_bytes` bytes at once (0 if not even one fits), each "
        "number taking\n# `bytes_per_number` bytes; with a window, each layer keeps "
        "only the last\n# `window` tokens.\n",
    ),
    "ch09-ex-dilated": from_table(
        DILATED,
        "# Your answer: a bool (T, T) mask, True where query i may attend to key j:\n"
        "# the `window` keys i, i - dilation, ..., i - (window - 1) * dilation that\n"
        "# are >= 0, nothing after the query.\n",
    ),
}
