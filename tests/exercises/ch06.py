"""Answers to the exercises of Chapter 6 (see tests/exercises/__init__.py)."""

from attn_course.checks.encoder_decoder import CROSS_MASK, FUTURE
from tests.exercises import Answers, from_table, wrong

NOTEBOOK = "06_encoder_decoder.ipynb"

SHAPES = {
    "W_query": (64, 64),
    "W_key": (64, 96),
    "W_value": (64, 96),
    "out_proj": (64, 64),
    "weights": (3, 4, 5, 7),
    "output": (3, 5, 64),
    "num_parameters": 64 * 64 + 2 * 64 * 96 + 64 * 64 + 64,
}

ANSWERS = {
    "ch06-ex-cross-mask": from_table(CROSS_MASK),
    "ch06-ex-shapes": Answers(
        right=f"cross_shapes = {SHAPES!r}\n",
        wrong=(
            wrong(
                "one-head",
                f"cross_shapes = { ({**SHAPES, 'W_key': (16, 96)})!r}\n",
                "1 of 7 predictions are wrong",
                "'W_key', (16, 96): one nn.Linear makes the features of all heads",
            ),
        ),
    ),
    "ch06-ex-leak": from_table(FUTURE),
}
