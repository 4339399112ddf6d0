"""Tests of the Chapter 1 checks that tests/test_tables.py does not cover: the
general helpers, what the value checks accept, and wrong calls."""

import re

import pytest
import torch

from attn_course import checks
from attn_course.data import hello_shiny_sun, your_journey

from .answers import context_of, failure

HELLO, X = hello_shiny_sun().embeddings, your_journey().embeddings
CV, SE = checks.check_context_vector, checks.check_scaled_embeddings
BY_COLUMN = torch.softmax(X @ X.T, dim=0)  # normalised over the queries


def test_check_close_and_check_weights(capsys):
    checks.check_close(X @ X[1], [float(v) for v in X @ X[1]])
    checks.check_weights(torch.softmax(X @ X.T, dim=-1))
    checks.check_weights(torch.softmax(X @ X[1], dim=0), name="weights of journey")
    assert capsys.readouterr().out.splitlines() == [
        "✅ check_close: your answer is correct; all 6 values match (shape (6,)).",
        "✅ check_weights: your weights are valid; all values are non-negative and "
        "each of the 6 rows sums to 1.",
        "✅ check_weights: weights of journey are valid; all 6 values are "
        "non-negative and they sum to 1.",
    ]
    message = failure(checks.check_close, torch.tensor([0.1, 0.25]), [0.1, 0.2])
    assert "difference is 0.05 at index [1]" in message and "0.2000" not in message
    assert "columns sum to 1" in failure(checks.check_weights, BY_COLUMN)


def test_the_value_checks_accept_tensors_and_wait_for_both_answers(capsys):
    weights = torch.softmax((2 * X) @ (2 * X[1]), dim=-1)
    SE(weights.double(), torch.tensor(0.25), X, 1)
    SE(weights, ..., X, 1)
    CV(context_of(HELLO, -1, 0.5), HELLO, -1, temperature=0.5)
    assert [line[0] for line in capsys.readouterr().out.splitlines()] == list("✅⏳✅")
    assert "(str) is not that temperature" in failure(SE, weights, "0.25", X, 1)


WRONG_CALLS = {
    "query_index=3 is out of range": lambda: CV(HELLO[0], HELLO, 3),
    "temperature must be a positive": lambda: CV(HELLO[0], HELLO, 1, temperature=0),
    "must be a torch.Tensor, got str": lambda: CV(HELLO[0], "HELLO", 1),
    "factor must be a positive": lambda: SE(X[0], 0.25, X, 1, factor=-1),
    "a number/list of numbers, got dict": lambda: checks.check_close(X, {"a": 1}),
}


@pytest.mark.parametrize("fragment", WRONG_CALLS)
def test_a_wrong_call_is_a_type_or_value_error(fragment):
    with pytest.raises((TypeError, ValueError), match=re.escape(fragment)):
        WRONG_CALLS[fragment]()
