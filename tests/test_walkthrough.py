"""``attn_course.walkthrough``: what one query sees (Chapter 1) and what a causal
mask lets through (Chapter 3)."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attn_course import causal_mask
from attn_course.data import hello_shiny_sun, your_journey
from attn_course.walkthrough import (
    masked_attention,
    query_attention,
)

# --- query_attention ------------------------------------------------------------------


def test_query_attention_matches_a_hand_computation():
    tokens, x = hello_shiny_sun()
    state = query_attention(tokens, x, query_index=1)
    # "shiny" . "Hello" = 0.53*0.34 + 0.34*0.22 + 0.98*0.54 = 0.7842
    assert math.isclose(float(state.scores[0]), 0.7842, abs_tol=1e-4)
    scores = x @ x[1]  # (T,)
    weights = torch.softmax(scores, dim=0)  # (T,)
    torch.testing.assert_close(state.scores, scores)
    torch.testing.assert_close(state.weights, weights)
    torch.testing.assert_close(state.context, weights @ x)
    assert state.scores.shape == (3,) and state.context.shape == (3,)


@pytest.mark.parametrize("temperature", [0.1, 0.5, 2.0, 7.0])
def test_query_attention_divides_the_scores_by_the_temperature(temperature):
    tokens, x = your_journey()
    state = query_attention(tokens, x, 4, temperature)
    torch.testing.assert_close(state.scores, x @ x[4])  # scores ignore temperature
    weights = torch.softmax(x @ x[4] / temperature, dim=0)
    torch.testing.assert_close(state.weights, weights)
    torch.testing.assert_close(state.context, weights @ x)


def test_query_attention_is_pure_and_accepts_numpy_and_negative_indices():
    tokens, x = your_journey()
    before = x.clone()
    last = query_attention(tokens, x, -1, 0.7)
    assert torch.equal(x, before)
    torch.testing.assert_close(last.weights, query_attention(tokens, x, 5, 0.7).weights)
    from_numpy = query_attention(list(tokens), x.numpy().astype(np.float64), 5, 0.7)
    torch.testing.assert_close(from_numpy.weights.float(), last.weights)
    whole_numbers = query_attention(None, torch.tensor([[1, 0], [0, 1]]), 0)
    torch.testing.assert_close(whole_numbers.weights, torch.softmax(torch.eye(2)[0], 0))


def test_query_attention_teaching_errors():
    tokens, x = hello_shiny_sun()
    with pytest.raises(ValueError, match=r"query_index=3 is out of range.*0 to 2"):
        query_attention(tokens, x, 3)
    with pytest.raises(TypeError, match=r"tokens.index\('shiny'\)"):
        query_attention(tokens, x, "shiny")
    with pytest.raises(TypeError, match="int position"):
        query_attention(tokens, x, True)
    with pytest.raises(TypeError, match="int position"):
        query_attention(tokens, x, 1.0)
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="positive finite"):
            query_attention(tokens, x, 1, bad)
    with pytest.raises(ValueError, match="too small"):
        query_attention(tokens, x, 1, 1e-320)
    with pytest.raises(ValueError, match="2 tokens.*3 rows"):
        query_attention(tokens[:2], x, 1)
    with pytest.raises(ValueError, match=r"shape \(T, D\).*\(1, 3, 3\)"):
        query_attention(tokens, x[None], 1)
    with pytest.raises(TypeError, match="torch.tensor"):
        query_attention(tokens, x.tolist(), 1)


# --- masked_attention -----------------------------------------------------------------


@pytest.mark.parametrize("convention", ["bool", "additive", "is_causal"])
def test_the_three_correct_conventions_give_pytorchs_causal_weights(
    projected, convention
):
    tokens, q, k, ca = projected
    state = masked_attention(q, k, causal=True, convention=convention)
    reference = torch.softmax(
        (q @ k.T / 2**0.5).masked_fill(~causal_mask(6), -torch.inf), dim=-1
    )
    torch.testing.assert_close(state.weights, reference)
    # and the same as the module and as PyTorch's own function
    _, module_weights = ca(your_journey().embeddings, return_weights=True)
    torch.testing.assert_close(state.weights, module_weights.detach())
    v = torch.eye(6)  # values = one-hot rows, so the output IS the weight matrix
    torch.testing.assert_close(
        state.weights, F.scaled_dot_product_attention(q, k, v, is_causal=True)
    )
    assert state.future_weight == 0.0 and state.empty_rows == ()
    assert torch.equal(state.allowed, causal_mask(6))


def test_no_mask_lets_the_future_in(projected):
    _, q, k, _ = projected
    state = masked_attention(q, k, causal=False, convention="inverted")  # ignored
    torch.testing.assert_close(state.weights, torch.softmax(q @ k.T / 2**0.5, -1))
    future = state.weights.triu(diagonal=1).sum()
    assert state.future_weight == pytest.approx(float(future)) and future > 1.0
    assert bool(state.allowed.all())


def test_the_inverted_mask_sees_only_the_future_and_empties_the_last_row(projected):
    _, q, k, _ = projected
    state = masked_attention(q, k, causal=True, convention="inverted")
    assert torch.equal(state.allowed, ~causal_mask(6))
    assert state.empty_rows == (5,)
    assert torch.equal(state.weights[5], torch.zeros(6))  # a row of zeros, no NaN
    assert bool((state.weights.tril() == 0).all())  # nothing from past or itself
    assert state.future_weight == pytest.approx(5.0)  # rows 0..4 sum to 1 each


def test_masked_attention_teaching_errors(projected):
    _, q, k, _ = projected
    with pytest.raises(ValueError, match="convention='sdpa' is not one of"):
        masked_attention(q, k, convention="sdpa")
    with pytest.raises(ValueError, match="same width d"):
        masked_attention(q, torch.ones(6, 3))
    with pytest.raises(ValueError, match=r"shape \(T, d\)"):
        masked_attention(q[None], k)
    with pytest.raises(TypeError, match="torch.Tensor"):
        masked_attention(q.tolist(), k)
