"""Answers to the exercises of Chapter 7 (see tests/exercises/__init__.py)."""

from attn_course.checks.positions import ROTATE
from tests.exercises import Answers, from_table, wrong

NOTEBOOK = "07_positions.ipynb"

ROWS = {"no positions": {1, 3}, "causal mask": {1, 2, 3}, "rope": {0, 1, 2, 3, 4}}
EIGHT = "[2 ** (-8 * h / 8) for h in range(1, 9)]"
SIXTEEN = "[2 ** (-8 * h / 16) for h in range(1, 17)]"

ANSWERS = {
    "ch07-ex-rotate": from_table(ROTATE),
    "ch07-ex-swap": Answers(
        right=f"changed = {ROWS!r}\n",
        wrong=(
            wrong(
                "causal-to-the-end",
                f"changed = { ({**ROWS, 'causal mask': {1, 2, 3, 4}})!r}\n",
                "1 of 3 predictions are wrong",
                "'causal mask', {1, 2, 3, 4}: the rows after 3 see the same tokens",
            ),
        ),
    ),
    "ch07-ex-slopes": Answers(
        right=f"slopes_12 = {EIGHT} + {SIXTEEN}[0::2][:4]\n",
        wrong=(
            wrong(
                "sorted",
                f"slopes_12 = sorted({EIGHT} + {SIXTEEN}[0::2][:4], reverse=True)\n",
                "your slopes for 12 heads: you sorted them",
            ),
        ),
    ),
}
