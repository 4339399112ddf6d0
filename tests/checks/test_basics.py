"""Tests of the Chapter 1 self-checks (attn_course.checks.basics): right answers
pass, wrong ones are explained."""

import numpy as np
import pytest
import torch

from attn_course import checks
from attn_course.data import hello_shiny_sun, your_journey

from .answers import (
    attention,
    context_of,
    failure,
    scaled_self_attention,
    stable_softmax,
    wrong_call_test,
)


def naive_softmax_rows(x):
    return torch.exp(x) / torch.exp(x).sum(dim=-1, keepdim=True)


# --- check_close -------------------------------------------------------------------


def test_check_close_right_answer_prints_one_line(capsys):
    _, x = your_journey()
    checks.check_close(x @ x[1], [float(v) for v in x @ x[1]])
    assert capsys.readouterr().out == (
        "✅ check_close: your answer is correct; all 6 values match (shape (6,)).\n"
    )


def test_check_close_wrong_values_show_largest_difference_and_where(capsys):
    expected = torch.tensor([[0.1, 0.2], [0.3, 0.4]])
    answer = expected.clone()
    answer[1, 0] = 0.35
    answer[0, 1] = 0.21
    message = failure(checks.check_close, answer, expected, name="scores")
    assert message.startswith("scores: values are off")
    assert "largest difference is 0.05 at index [1, 0]" in message
    assert "where yours is 0.3500, too high" in message
    assert "0.3000" not in message  # the expected value is never written out
    assert "2 of 4 values" in message
    assert capsys.readouterr().out == ""  # nothing printed on failure


def test_check_close_transposed_answer_mentions_both_shapes():
    tokens, x = your_journey()
    context = attention(x)[1]  # (6, 3)
    message = failure(checks.check_close, context.T, context)
    assert "wrong shape (3, 6)" in message
    assert "expected shape is (6, 3)" in message
    assert "transposed" in message


def test_check_close_wrong_types_nan_and_none():
    expected = torch.tensor([1.0, 2.0])
    message = failure(checks.check_close, np.array([1.0, 2.0]), expected)
    assert "got numpy.ndarray" in message and "torch.from_numpy" in message
    message = failure(checks.check_close, [1.0, 2.0], expected)
    assert "got list" in message and "torch.tensor" in message
    message = failure(checks.check_close, 1.5, torch.tensor(1.5))
    assert "got float" in message and ".item()" in message
    assert "return" in failure(checks.check_close, None, expected)
    message = failure(checks.check_close, torch.tensor([1.0, float("nan")]), expected)
    assert "NaN" in message and "index [1]" in message


def test_check_close_tolerance_and_grad_tensors(capsys):
    expected = torch.tensor([1.0, 2.0])
    answer = (expected + 5e-5).requires_grad_(True)
    checks.check_close(answer, expected)
    assert capsys.readouterr().out.startswith("✅ check_close")
    failure(checks.check_close, answer, expected, atol=1e-6, rtol=0.0)


# --- check_weights -----------------------------------------------------------------


def test_check_weights_right_answers(capsys):
    _, x = your_journey()
    checks.check_weights(torch.softmax(x @ x.T, dim=-1))
    checks.check_weights(torch.softmax(x @ x[1], dim=0), name="weights of journey")
    assert capsys.readouterr().out.splitlines() == [
        "✅ check_weights: your weights are valid; all values are non-negative and "
        "each of the 6 rows sums to 1.",
        "✅ check_weights: weights of journey are valid; all 6 values are "
        "non-negative and they sum to 1.",
    ]


def test_check_weights_unnormalised_rows_show_the_sums():
    _, x = hello_shiny_sun()
    scores = x @ x.T
    message = failure(checks.check_weights, scores)
    sums = ", ".join(f"{s:.4f}" for s in scores.sum(dim=-1).tolist())
    assert f"the rows sum to [{sums}] instead of 1 each" in message
    assert "dim=-1" in message


def test_check_weights_wrong_dimension_negative_and_nan():
    _, x = hello_shiny_sun()
    message = failure(checks.check_weights, torch.softmax(x @ x.T, dim=0))
    assert "columns sum to 1" in message and "dim=0" in message
    message = failure(checks.check_weights, torch.tensor([0.7, -0.2, 0.5]))
    assert "negative" in message and "-0.2000 at index [1]" in message
    message = failure(checks.check_weights, torch.tensor([0.5, 0.7]))
    assert "sum to 1.2000 instead of 1" in message
    assert "NaN" in failure(checks.check_weights, torch.tensor([float("nan"), 1.0]))
    assert "got tuple" in failure(checks.check_weights, (0.5, 0.5))


# --- check_softmax (its slips are tested with every table's, in
# tests/test_tables.py) ---------------------------------------------------------------


def test_check_softmax_accepts_stable_softmax(capsys):
    checks.check_softmax(stable_softmax)
    checks.check_softmax(lambda x: torch.softmax(x, dim=-1))
    assert (
        capsys.readouterr().out.count("✅ check_softmax: stable_softmax is right") == 2
    )


def test_check_softmax_wrong_dimension_and_other_mistakes():
    message = failure(checks.check_softmax, lambda x: torch.softmax(x, dim=0))
    assert "rows sum to" in message and "dim=-1" in message
    message = failure(checks.check_softmax, lambda x: torch.softmax(x, -1).tolist())
    assert "expected a torch.Tensor, got list" in message
    message = failure(checks.check_softmax, lambda x: torch.softmax(x, -1).flip(-1))
    assert "values are off" in message and "small vector" in message
    message = failure(checks.check_softmax, lambda x: torch.sigmoid(x))
    assert "sum" in message


def test_check_softmax_catches_in_place_changes():
    def softmax_in_place(x):
        x -= x.max(dim=-1, keepdim=True).values
        return torch.softmax(x, dim=-1)

    message = failure(checks.check_softmax, softmax_in_place)
    assert "changed its input" in message and "in place" in message


def test_check_softmax_wraps_errors_raised_by_the_learner():
    def broken(x):
        raise RuntimeError("dimension out of range: boom")

    with pytest.raises(AssertionError) as info:
        checks.check_softmax(broken)
    assert "raised RuntimeError on a small vector" in str(info.value)
    assert "dimension out of range: boom" in str(info.value)
    assert isinstance(info.value.__cause__, RuntimeError)


def test_check_softmax_does_not_touch_global_random_state():
    torch.manual_seed(123)
    before = torch.get_rng_state()
    checks.check_softmax(stable_softmax)
    assert torch.equal(torch.get_rng_state(), before)


# --- check_context_vector ----------------------------------------------------------


def test_check_context_vector_right_answer(capsys):
    _, x = hello_shiny_sun()
    weights = torch.softmax(x @ x[1], dim=0)  # by hand
    checks.check_context_vector(weights @ x, x, query_index=1)
    hot = torch.softmax(x @ x[2] / 0.5, dim=0) @ x
    checks.check_context_vector(hot, x, query_index=2, temperature=0.5)
    assert capsys.readouterr().out.splitlines() == [
        "✅ check_context_vector: your context vector for query 1 is correct; it "
        "equals softmax(scores) @ inputs with scores = inputs @ inputs[1].",
        "✅ check_context_vector: your context vector for query 2 is correct; it "
        "equals softmax(scores / 0.5) @ inputs with scores = inputs @ inputs[2].",
    ]


def test_check_context_vector_wrong_answers():
    _, x = hello_shiny_sun()
    right = torch.softmax(x @ x[1], dim=0) @ x
    message = failure(checks.check_context_vector, right, x, 2)
    assert "values are off" in message and "inputs @ inputs[2]" in message
    message = failure(checks.check_context_vector, right[None], x, 1)
    assert "wrong shape (1, 3)" in message and "(3,)" in message
    assert "squeeze" in message
    message = failure(checks.check_context_vector, right, x, 1, temperature=2.0)
    assert "matches temperature 1" in message
    message = failure(checks.check_context_vector, x.mean(dim=0), x, 1)
    assert "values are off" in message


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (lambda x: (x @ x[2]) @ x, "raw scores"),
        (lambda x: (x @ x[2] / (x @ x[2]).sum()) @ x, "divided by their sum"),
        (lambda x: torch.softmax(x @ x[2], dim=0), "is the attention weights"),
        (lambda x: context_of(x, 1), "context vector of query 1 (token 2)"),
        (lambda x: context_of(x, 2, 3**0.5), "*scaled* attention"),
    ],
)
def test_check_context_vector_names_each_slip(answer, phrase):
    _, x = hello_shiny_sun()
    message = failure(checks.check_context_vector, answer(x), x, 2)
    assert "values are off" in message and phrase in message


# --- check_scaled_embeddings ---------------------------------------------------------


def doubled_weights(x, i=1):
    return torch.softmax((2 * x) @ (2 * x[i]), dim=-1)


def test_check_scaled_embeddings_right_answer(capsys):
    _, x = your_journey()
    checks.check_scaled_embeddings(doubled_weights(x), 0.25, x, query_index=1)
    tripled = torch.softmax((3 * x) @ (3 * x[0]), dim=-1)
    checks.check_scaled_embeddings(tripled, torch.tensor(1 / 9), x, 0, factor=3)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("✅ check_scaled_embeddings: your weights for query 1")
    assert "multiplies every score by 3**2 = 9" in out[1]


@pytest.mark.parametrize(
    ("weights", "phrase"),
    [
        (lambda x: torch.softmax(x @ x[1], dim=-1), "weights of the original"),
        (lambda x: torch.softmax(x @ (2 * x[1]), dim=-1), "scaled only the query"),
        (lambda x: doubled_weights(x, 2), "weights of query 2 (token 3)"),
        (lambda x: doubled_weights(x) @ x, "not the context vector"),
        (lambda x: (2 * x) @ (2 * x[1]), "torch.softmax(scores, dim=-1)"),
    ],
)
def test_check_scaled_embeddings_names_wrong_weights(weights, phrase):
    _, x = your_journey()
    message = failure(checks.check_scaled_embeddings, weights(x), 0.25, x, 1)
    assert phrase in message


@pytest.mark.parametrize(
    ("tau", "phrase"),
    [
        (0.5, "each score gets 2 twice"),
        (4.0, "makes them 4 times smaller"),
        (2.0, "once for the query and once for the key"),
        (1.0, "temperature 1 leaves the scores"),
        (0.3, "which temperature multiplies them by the same?"),
        ("0.25", "expected a number, got str"),
    ],
)
def test_check_scaled_embeddings_names_wrong_temperatures(tau, phrase):
    _, x = your_journey()
    message = failure(checks.check_scaled_embeddings, doubled_weights(x), tau, x, 1)
    assert phrase in message
    assert "0.25" not in message  # the right temperature is never shown


def test_check_scaled_embeddings_waits_for_both_answers(capsys):
    _, x = your_journey()
    checks.check_scaled_embeddings(doubled_weights(x), ..., x, 1)
    assert "not answered yet" in capsys.readouterr().out


# --- check_attention_fn ------------------------------------------------------------


def test_check_attention_fn_right_answer(capsys):
    checks.check_attention_fn(attention)
    assert capsys.readouterr().out == (
        "✅ check_attention_fn: your attention function is correct; its weights and "
        "context vectors match on the 2 toy sentences and 2 random inputs.\n"
    )


def test_check_attention_fn_wrong_answers():
    message = failure(checks.check_attention_fn, lambda x: attention(x)[1])
    assert "should return a pair (weights, context)" in message
    assert "tensor of shape (3, 3)" in message

    message = failure(checks.check_attention_fn, scaled_self_attention)
    assert "*scaled* attention" in message and "Hello shiny sun!" in message

    def transposed_context(x):
        weights, context = attention(x)
        return weights, context.T

    message = failure(checks.check_attention_fn, transposed_context)
    assert "your context vectors" in message and "transposed" in message

    def columns(x):
        weights = torch.softmax(x @ x.T, dim=0)
        return weights, weights @ x

    message = failure(checks.check_attention_fn, columns)
    assert "columns sum to 1" in message

    def modifies_input(x):
        weights, context = attention(x)
        x.zero_()
        return weights, context

    assert "changed its input" in failure(checks.check_attention_fn, modifies_input)


def test_check_attention_fn_names_a_pair_in_the_wrong_order():
    def swapped(x):
        weights, context = attention(x)
        return context, weights

    message = failure(checks.check_attention_fn, swapped)
    assert 'the pair in the wrong order on the toy sentence "Hello shiny sun!"' in (
        message
    )
    assert "`return weights, context`" in message
    assert "rows sum" not in message


def test_check_attention_fn_wraps_errors():
    def broken(x):
        return x @ x[:2]  # (3, 3) @ (2, 3): the shapes do not fit

    message = failure(checks.check_attention_fn, broken)
    assert 'raised RuntimeError on the toy sentence "Hello shiny sun!"' in message
    assert "cannot be multiplied" in message  # PyTorch's own message is kept


# --- a wrong call of a check ---------------------------------------------------------

HELLO = hello_shiny_sun().embeddings
CALL_ERRORS = [
    pytest.param(
        lambda: checks.check_softmax(torch.tensor([1.0])),
        TypeError,
        ["check_softmax(stable_softmax), not"],
        id="softmax-result",
    ),
    pytest.param(
        lambda: checks.check_attention_fn((torch.eye(2), torch.eye(2))),
        TypeError,
        ["got tuple; pass it without calling it"],
        id="attention-result",
    ),
    pytest.param(
        lambda: checks.check_context_vector(context_of(HELLO, 1), HELLO, 3),
        ValueError,
        ["query_index=3 is out of range"],
        id="query-index",
    ),
    pytest.param(
        lambda: checks.check_context_vector(
            context_of(HELLO, 1), HELLO, 1, temperature=0
        ),
        ValueError,
        ["temperature must be a positive finite number"],
        id="temperature",
    ),
    pytest.param(
        lambda: checks.check_context_vector(context_of(HELLO, 1), "HELLO", 1),
        TypeError,
        ["must be a torch.Tensor, got str"],
        id="inputs",
    ),
    pytest.param(
        lambda: checks.check_close(torch.ones(2), {"a": 1}),
        TypeError,
        ["expected must be a tensor or a number/list of numbers, got dict"],
        id="expected",
    ),
]

test_a_wrong_call_is_a_type_or_value_error = wrong_call_test(CALL_ERRORS)
