"""Tests of the Chapter 2 self-checks (attn_course.checks.trainable_weights): right
answers pass, wrong ones are explained."""

import pytest
import torch

from attn_course import SelfAttentionV1, SelfAttentionV2, checks
from attn_course.data import your_journey

from . import answers
from .answers import (
    failure,
    projected,
    scaled_attention,
    untransposed,
    v1_from_v2,
    wrong_call_test,
)

# --- check_projected_context ---------------------------------------------------------


@pytest.fixture
def journey_weights():
    return answers.journey_weights()


def test_check_projected_context_right_answer(journey_weights, capsys):
    x, W_q, W_k, W_v = journey_weights
    checks.check_projected_context(projected(x, W_q, W_k, W_v, 1), x, W_q, W_k, W_v, 1)
    out = capsys.readouterr().out
    assert out.startswith("✅ check_projected_context: your context vector for query 1")
    assert "sqrt(2)" in out


def test_check_projected_context_names_the_missing_scale(journey_weights):
    x, W_q, W_k, W_v = journey_weights
    W_q = W_q * 4  # larger scores, so the scale matters
    unscaled = projected(x, W_q, W_k, W_v, 1, scale=1.0)
    message = failure(checks.check_projected_context, unscaled, x, W_q, W_k, W_v, 1)
    assert "values are off" in message and "no scaling" in message
    by_d_k = projected(x, W_q, W_k, W_v, 1, scale=0.5)
    message = failure(checks.check_projected_context, by_d_k, x, W_q, W_k, W_v, 1)
    assert "divided by d_k = 2 instead of by sqrt(d_k)" in message


def test_check_projected_context_mixing_the_inputs(journey_weights):
    x, W_q, W_k, W_v = journey_weights
    mixed = projected(x, W_q, W_k, W_v, 1, mix=x)  # (3,) instead of (2,)
    message = failure(checks.check_projected_context, mixed, x, W_q, W_k, W_v, 1)
    assert "wrong shape (3,)" in message and "Mix the values" in message
    square = torch.eye(3)
    mixed = projected(x, square, square * 2, square * 3, 2, mix=x)
    message = failure(
        checks.check_projected_context, mixed, x, square, square * 2, square * 3, 2
    )
    assert "mixes the inputs" in message


def test_check_projected_context_not_a_tensor(journey_weights):
    x, W_q, W_k, W_v = journey_weights
    message = failure(checks.check_projected_context, [0.3, 0.8], x, W_q, W_k, W_v, 1)
    assert "expected a torch.Tensor, got list" in message


JOURNEY = {
    "W_q": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
    "W_k": [[0.0, 1.0], [1.0, 0.0], [0.0, 0.0]],
    "W_v": [[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]],
}


def journey_matrices(**changes):
    """The exercise's matrices as tensors, with ``changes[role] = (index, value)``."""
    matrices = {role: torch.tensor(rows) for role, rows in JOURNEY.items()}
    for role, (index, value) in changes.items():
        matrices[role][index] = value
    return list(matrices.values())


def test_check_projected_context_accepts_the_exercise_matrices(capsys):
    x = your_journey().embeddings
    W_q, W_k, W_v = journey_matrices()
    right = projected(x, W_q, W_k, W_v, 1)
    checks.check_projected_context(
        right, x, W_q, W_k, W_v, 1, exercise="ch02-ex-journey"
    )
    assert capsys.readouterr().out.startswith("✅ check_projected_context")


@pytest.mark.parametrize(
    ("role", "index", "value", "phrase"),
    [
        (
            "W_q",
            (2, 1),
            0.0,
            "your W_q differs from the W_q the exercise gives at "
            "entry [2, 1] (row 3, column 2): yours is 0.0000",
        ),
        (
            "W_k",
            (1, 0),
            0.0,
            "your W_k differs from the W_k the exercise gives at entry [1, 0]",
        ),
        (
            "W_v",
            (0, 1),
            1.0,
            "your W_v differs from the W_v the exercise gives at entry [0, 1]",
        ),
    ],
)
def test_check_projected_context_pins_the_exercise_matrices(role, index, value, phrase):
    # The answer is right for the learner's own matrices, which have a typo.
    x = your_journey().embeddings
    mine = journey_matrices(**{role: (index, value)})
    answer = projected(x, *mine, 1)
    checks.check_projected_context(answer, x, *mine, 1)  # passes without the pin
    message = failure(
        checks.check_projected_context, answer, x, *mine, 1, exercise="ch02-ex-journey"
    )
    assert phrase in message


def test_check_projected_context_exercise_matrices_transposed_or_not_tensors():
    x = your_journey().embeddings
    W_q, W_k, W_v = journey_matrices()
    right = projected(x, W_q, W_k, W_v, 1)
    message = failure(
        checks.check_projected_context,
        right,
        x,
        W_q.T,
        W_k,
        W_v,
        1,
        exercise="ch02-ex-journey",
    )
    assert "your W_q has shape (2, 3)" in message and "one row per input" in message
    message = failure(
        checks.check_projected_context,
        right,
        x,
        W_q,
        JOURNEY["W_k"],
        W_v,
        1,
        exercise="ch02-ex-journey",
    )
    assert "your W_k: expected a torch.Tensor, got list" in message
    with pytest.raises(ValueError, match="exercise must be one of"):
        checks.check_projected_context(right, x, W_q, W_k, W_v, 1, exercise="ch9")


def test_check_projected_context_names_keys_and_another_query():
    x = your_journey().embeddings
    W_q, W_k, W_v = journey_matrices()
    mixes_keys = projected(x, W_q, W_k, W_v, 1, mix=x @ W_k)
    message = failure(checks.check_projected_context, mixes_keys, x, W_q, W_k, W_v, 1)
    assert "mixes the keys" in message
    other = projected(x, W_q, W_k, W_v, 2)
    message = failure(checks.check_projected_context, other, x, W_q, W_k, W_v, 1)
    assert "context vector of query 2 (token 3)" in message


def test_check_projected_context_waits_for_the_matrices(capsys):
    x = your_journey().embeddings
    checks.check_projected_context(..., x, ..., ..., ..., 1, exercise="ch02-ex-journey")
    assert "not answered yet" in capsys.readouterr().out


# --- check_v1_from_v2 ----------------------------------------------------------------


def test_check_v1_from_v2_right_answer_and_global_seed_untouched(capsys):
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    checks.check_v1_from_v2(v1_from_v2)  # v1_from_v2 draws random numbers itself
    assert torch.equal(torch.rand(3), expected)  # the learner's seed is untouched
    assert capsys.readouterr().out.startswith("✅ check_v1_from_v2: your conversion")


def test_check_v1_from_v2_without_transpose_fails_with_shapes():
    message = failure(checks.check_v1_from_v2, untransposed)
    assert "has shape (2, 3)" in message and "copy weight.T" in message


def test_check_v1_from_v2_square_module_without_transpose_is_named():
    def transposes_only_rectangles(sa_v2):
        sa_v1 = v1_from_v2(sa_v2)
        if sa_v2.d_in == sa_v2.d_out:
            with torch.no_grad():
                sa_v1.W_key.copy_(sa_v2.W_key.weight)
        return sa_v1

    message = failure(checks.check_v1_from_v2, transposes_only_rectangles)
    assert "your W_key on SelfAttentionV2(4, 4)" in message
    assert "equals nn.Linear's weight itself" in message


def test_check_v1_from_v2_swapped_roles_and_wrong_type():
    def swapped(sa_v2):
        sa_v1 = v1_from_v2(sa_v2)
        with torch.no_grad():
            sa_v1.W_query.copy_(sa_v2.W_key.weight.T)
            sa_v1.W_key.copy_(sa_v2.W_query.weight.T)
        return sa_v1

    message = failure(checks.check_v1_from_v2, swapped)
    assert "holds V2's W_key instead" in message
    message = failure(checks.check_v1_from_v2, lambda sa_v2: sa_v2)
    assert "returned the SelfAttentionV2 it was given" in message


def test_check_v1_from_v2_must_not_change_the_v2_module():
    def zeroes_v2(sa_v2):
        sa_v1 = v1_from_v2(sa_v2)
        with torch.no_grad():
            sa_v2.W_value.weight.zero_()
        return sa_v1

    message = failure(checks.check_v1_from_v2, zeroes_v2)
    assert "changed the W_value" in message


def copies(how):
    """A v1_from_v2 that copies each weight with ``how(parameter, weight)``."""

    def v1(sa_v2):
        sa_v1 = SelfAttentionV1(sa_v2.d_in, sa_v2.d_out)
        for role in ("W_query", "W_key", "W_value"):
            how(sa_v1, role, getattr(sa_v2, role).weight)
        return sa_v1

    return v1


@pytest.mark.parametrize(
    ("how", "phrases"),
    [
        (
            lambda m, role, w: getattr(m, role).data.copy_(w),
            ["raised RuntimeError", "(d_out, d_in)", "copy weight.T"],
        ),
        (
            lambda m, role, w: getattr(m, role).copy_(w.T),
            ["raised RuntimeError", "with torch.no_grad():"],
        ),
        (
            lambda m, role, w: setattr(m, role, w.detach().T),
            ["raised TypeError", "can only be replaced by an nn.Parameter"],
        ),
    ],
)
def test_check_v1_from_v2_explains_errors_of_the_copy(how, phrases):
    message = failure(checks.check_v1_from_v2, copies(how))
    for phrase in phrases:
        assert phrase in message


# --- check_score_variance ------------------------------------------------------------


def test_check_score_variance_right_answer(capsys):
    checks.check_score_variance(4.0, 0.5, d_k=64, std=0.5)
    out = capsys.readouterr().out
    assert out.startswith("✅ check_score_variance: your prediction is correct")
    assert "= 4 (measured on 20000 random pairs:" in out
    checks.check_score_variance(torch.tensor(4.0), torch.tensor(0.5), d_k=64, std=0.5)


@pytest.mark.parametrize(
    ("variance", "scale", "phrase"),
    [
        (64.0, 0.5, "is the variance for entries of variance 1"),
        (16.0, 0.5, "that has one factor std**2"),
        (2.0, 0.5, "that is the standard deviation"),
        (10.0, 0.5, "each of the d_k = 64 products"),
        (4.0, 1 / 8, "1 / sqrt(d_k) = 0.125 gives variance 1 only"),
        (4.0, 0.25, "that divides by the variance"),
        (4.0, 2.0, "that multiplies by the standard deviation"),
        (4.0, 0.3, "multiplying by c multiplies the variance by c**2"),
    ],
)
def test_check_score_variance_names_each_slip(variance, scale, phrase):
    message = failure(checks.check_score_variance, variance, scale, d_k=64, std=0.5)
    assert phrase in message


def test_check_score_variance_needs_numbers():
    message = failure(checks.check_score_variance, "4", 0.5, d_k=64, std=0.5)
    assert "expected a number, got str" in message


# --- check_scaled_attention_fn -------------------------------------------------------


def test_check_scaled_attention_fn_right_answer(capsys):
    checks.check_scaled_attention_fn(scaled_attention)
    out = capsys.readouterr().out
    assert out.startswith("✅ check_scaled_attention_fn: your scaled attention")


@pytest.mark.parametrize(
    ("wrong", "phrase"),
    [
        (lambda q, k, v: scaled_attention(q, k, v, scale=1.0), "no scaling"),
        (
            lambda q, k, v: scaled_attention(q, k, v, scale=1 / k.shape[-1]),
            "scores divided by d_k",
        ),
        (
            lambda q, k, v: scaled_attention(q, k, v, scale=v.shape[-1] ** -0.5),
            "the width of the values",
        ),
    ],
)
def test_check_scaled_attention_fn_names_the_wrong_scale(wrong, phrase):
    assert phrase in failure(checks.check_scaled_attention_fn, wrong)


def test_check_scaled_attention_fn_other_mistakes():
    def one_tensor(q, k, v):
        return scaled_attention(q, k, v)[1]

    assert "should return a pair" in failure(
        checks.check_scaled_attention_fn, one_tensor
    )

    def over_queries(q, k, v):
        weights = torch.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-2)
        return weights, weights @ v

    message = failure(checks.check_scaled_attention_fn, over_queries)
    assert "rows sum to" in message or "values sum to" in message

    def wrong_context(q, k, v):
        weights, _ = scaled_attention(q, k, v)
        return weights, weights @ v + 1

    assert "weights @ values" in failure(
        checks.check_scaled_attention_fn, wrong_context
    )

    def in_place(q, k, v):
        weights, context = scaled_attention(q, k, v)
        q.zero_()
        return weights, context

    assert "in place" in failure(checks.check_scaled_attention_fn, in_place)


def test_check_scaled_attention_fn_names_scaling_after_the_softmax():
    def after(q, k, v):
        weights = torch.softmax(q @ k.transpose(-2, -1), dim=-1) / k.shape[-1] ** 0.5
        return weights, weights @ v

    message = failure(checks.check_scaled_attention_fn, after)
    assert "You scaled after the softmax" in message
    assert "Normalise along the last dimension" not in message


def test_check_scaled_attention_fn_names_a_pair_in_the_wrong_order():
    def swapped(q, k, v):
        weights, context = scaled_attention(q, k, v)
        return context, weights

    message = failure(checks.check_scaled_attention_fn, swapped)
    assert "the pair in the wrong order" in message
    assert "context vectors (6, 2) and the second the weights (6, 6)" in message


@pytest.mark.parametrize(
    ("transpose", "phrases"),
    [
        (lambda k: k, ["raised RuntimeError", "a forgotten transpose?"]),
        (
            lambda k: k.permute(*reversed(range(k.dim()))),  # what keys.T does
            ["raised RuntimeError on a batch", "keys.T on a batch reverses every"],
        ),
    ],
)
def test_check_scaled_attention_fn_explains_transpose_errors(transpose, phrases):
    def attention(q, k, v):
        weights = torch.softmax(q @ transpose(k) / k.shape[-1] ** 0.5, dim=-1)
        return weights, weights @ v

    message = failure(checks.check_scaled_attention_fn, attention)
    for phrase in phrases:
        assert phrase in message


# --- a wrong call of a check ---------------------------------------------------------


def projected_context(*args):
    """check_projected_context with the right answer for the journey weights."""
    x, W_q, W_k, W_v = answers.journey_weights()
    right = projected(x, W_q, W_k, W_v, 1)
    arguments = {"inputs": x, "W_query": W_q, "W_key": W_k, "W_value": W_v}
    arguments["query_index"] = 1
    arguments.update(args)
    checks.check_projected_context(right, *arguments.values())


CALL_ERRORS = [
    pytest.param(
        lambda: checks.check_v1_from_v2(v1_from_v2(SelfAttentionV2(3, 2))),
        TypeError,
        ["got a SelfAttentionV1 module", "check_v1_from_v2(v1_from_v2), not"],
        id="v1-module",
    ),
    pytest.param(
        lambda: checks.check_scaled_attention_fn(None),
        TypeError,
        ["expects your function itself, got NoneType"],
        id="scaled-none",
    ),
    pytest.param(
        lambda: projected_context(("inputs", [[1.0, 0.0, 0.0]])),
        TypeError,
        ["inputs must be a torch.Tensor, got list"],
        id="inputs-list",
    ),
    pytest.param(
        lambda: projected_context(("W_query", torch.rand(2, 2))),
        ValueError,
        ["W_query has shape (2, 2)", "d_in = 3"],
        id="W_query-d_in",
    ),
    pytest.param(
        lambda: projected_context(("W_key", torch.rand(3, 4))),
        ValueError,
        ["the same width d_k"],
        id="d_k",
    ),
    pytest.param(
        lambda: projected_context(("query_index", 6)),
        ValueError,
        ["query_index=6 is out of range for 6 tokens"],
        id="query-index",
    ),
    pytest.param(
        lambda: checks.check_score_variance(4.0, 0.5, d_k=64.0, std=0.5),
        TypeError,
        ["d_k must be an int, got float"],
        id="d_k-float",
    ),
    pytest.param(
        lambda: checks.check_score_variance(4.0, 0.5, d_k=64, std=-0.5),
        ValueError,
        ["std must be a positive finite number"],
        id="std",
    ),
]

test_a_wrong_call_is_a_type_or_value_error = wrong_call_test(CALL_ERRORS)
