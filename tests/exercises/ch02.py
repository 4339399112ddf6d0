"""Answers to the exercises of Chapter 2 (see tests/exercises/__init__.py)."""

from attn_course.checks.trainable_weights import SCALED, V1_FROM_V2
from tests.exercises import Answers, from_table, wrong

NOTEBOOK = "02_trainable_weights.ipynb"


def _journey(scores="keys_j @ q_j / math.sqrt(2)"):
    """A journey answer whose scores are ``scores``."""
    return (
        "W_q = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])\n"
        "W_k = torch.tensor([[0.0, 1.0], [1.0, 0.0], [0.0, 0.0]])\n"
        "W_v = torch.tensor([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]])\n"
        "q_j, keys_j = X[1] @ W_q, X @ W_k\n"
        f"context_journey = torch.softmax({scores}, dim=0) @ (X @ W_v)\n"
    )


ANSWERS = {
    "ch02-ex-journey": Answers(
        _journey(),
        (
            wrong(
                "no-scale", _journey("keys_j @ q_j"), "it matches no scaling", "sqrt(2)"
            ),
        ),
    ),
    "ch02-ex-v1-from-v2": from_table(V1_FROM_V2),
    "ch02-ex-variance": Answers(
        "predicted_variance = 64 * 0.5**2 * 0.5**2\nscale = 0.5",
        (
            wrong(
                "unit-entries",
                "predicted_variance = 64.0\nscale = 1 / math.sqrt(64)",
                "your predicted_variance, d_k = 64, is for entries of variance 1",
            ),
        ),
    ),
    "ch02-ex-scaled": from_table(SCALED, slip=3),
}
