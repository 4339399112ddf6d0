"""Answers to the exercises of Chapter 1 (see tests/exercises/__init__.py)."""

from attn_course.checks.basics import ATTENTION, SOFTMAX
from tests.exercises import Answers, from_table, wrong

NOTEBOOK = "01_toy_attention.ipynb"

_SUN = "E = attn_course.hello_shiny_sun().embeddings\ncontext_sun = "
_DOUBLED = "X_doubled = 2 * X\nweights_doubled = torch.softmax({}, dim=-1)\n"

ANSWERS = {
    "ch01-ex-sun": Answers(
        right=_SUN + "torch.softmax(E @ E[2], dim=-1) @ E\n",
        wrong=(
            wrong(
                "query-1",
                _SUN + "torch.softmax(E @ E[1], dim=-1) @ E\n",
                "context vector of a query next to query_index=2",
                "Python counts from 0",
            ),
        ),
    ),
    "ch01-ex-softmax": from_table(SOFTMAX, slip=1),
    "ch01-ex-attention": from_table(ATTENTION, slip=2),
    "ch01-ex-temperature": Answers(
        right=_DOUBLED.format("X_doubled @ X_doubled[1]") + "tau_same = 0.25\n",
        wrong=(
            wrong(
                "original",
                _DOUBLED.format("X @ X[1]") + "tau_same = 0.25\n",
                "weights of the original embeddings",
            ),
        ),
    ),
}
