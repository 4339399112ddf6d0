"""Answers to the exercises of Chapter 10 (see tests/exercises/__init__.py)."""

from attn_course.checks.history import ADDITIVE, COUNTS, PATH
from tests.exercises import from_table

NOTEBOOK = "10_history.ipynb"

ANSWERS = {
    "ch10-ex-path": from_table(
        PATH,
        '# Your answer: the fewest sequential steps (kind="rnn") or layers ("cnn",\n'
        '# "attention") between two tokens `distance` positions apart, as an int.\n'
        '# kernel_size: the width of the causal convolution, used by "cnn" only.\n',
    ),
    "ch10-ex-additive": from_table(
        ADDITIVE,
        "# Your answer: the additive scores, shape (B, T_s), before any softmax.\n"
        "# query: (B, d_q), keys: (B, T_s, d_k), W_query: (d_q, d_a), W_key: "
        "(d_k, d_a),\n# v: (d_a,).\n",
    ),
    "ch10-ex-params": from_table(
        COUNTS,
        "# Your answer: a dict with the learned parameters of three scores of a "
        'query of\n# d_q numbers against a key of d_k numbers: "additive" (a '
        'hidden layer of d_a\n# units), "general" (q^T W k) and "dot" (None when '
        "d_q != d_k). No biases.\n",
    ),
}
