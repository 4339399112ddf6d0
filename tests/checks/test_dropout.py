"""Tests of the Chapter 4 self-checks (attn_course.checks.dropout): right answers
pass, wrong ones are explained."""

import pytest
import torch

from attn_course import checks

from .answers import (
    CAUSAL,
    dropout,
    eval_forward,
    global_generator,
    no_grad_only,
    wrong_call_test,
)


def bernoulli_dropout(weights, p, generator):
    keep = torch.bernoulli(torch.full_like(weights, 1 - p), generator=generator)
    return weights * keep / (1 - p)


@pytest.mark.parametrize("fn", [dropout, bernoulli_dropout])
def test_check_dropout_fn_accepts_any_correct_mask(fn, capsys):
    checks.check_dropout_fn(fn)
    assert capsys.readouterr().out.startswith("✅ check_dropout_fn:")


def unscaled(weights, p, generator):
    keep = torch.rand(weights.shape, generator=generator) >= p
    return torch.where(keep, weights, 0.0)


def divided_by_p(weights, p, generator):
    keep = torch.rand(weights.shape, generator=generator) >= p
    return torch.where(keep, weights / p, 0.0)


def times_keep_prob(weights, p, generator):
    keep = torch.rand(weights.shape, generator=generator) >= p
    return torch.where(keep, weights * (1 - p), 0.0)


def drops_one_minus_p(weights, p, generator):
    keep = torch.bernoulli(torch.full_like(weights, p), generator=generator).bool()
    return torch.where(keep, weights / (1 - p), 0.0)


def in_place(weights, p, generator):
    keep = torch.rand(weights.shape, generator=generator) >= p
    weights[~keep] = 0.0
    return weights.div_(1 - p)


def fresh_generator_each_call(weights, p, generator):
    generator = torch.Generator().manual_seed(int(torch.randint(0, 9, ())))
    return dropout(weights, p, generator)


def drops_nothing(weights, p, generator):
    return weights / (1 - p)


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (unscaled, "not rescaled"),
        (divided_by_p, "divided by p"),
        (times_keep_prob, "multiplied by 1 - p"),
        (drops_one_minus_p, "probability 1 - p"),
        (global_generator, "global random generator"),
        (in_place, "in place"),
        (fresh_generator_each_call, "global random generator"),
        (drops_nothing, "should be within"),
    ],
)
def test_check_dropout_fn_explains_mistakes(fn, message):
    with pytest.raises(AssertionError, match=message):
        checks.check_dropout_fn(fn)


def test_check_dropout_fn_requires_p_zero_to_change_nothing():
    def halves_at_p_zero(weights, p, generator):
        return dropout(weights, p, generator) if p > 0 else weights / 2

    with pytest.raises(AssertionError, match="come back unchanged"):
        checks.check_dropout_fn(halves_at_p_zero)


def test_check_dropout_fn_leaves_the_global_random_state_alone():
    state = torch.random.get_rng_state()
    checks.check_dropout_fn(dropout)
    with pytest.raises(AssertionError):
        checks.check_dropout_fn(global_generator)
    assert torch.equal(state, torch.random.get_rng_state())


def test_check_row_drop_probability_accepts_p_to_the_k(capsys):
    checks.check_row_drop_probability(torch.tensor([0.1, 0.01, 0.001]), CAUSAL, 0.1)
    assert capsys.readouterr().out.startswith("✅ check_row_drop_probability:")


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (torch.tensor([0.9, 0.81, 0.729]), "KEPT"),
        (torch.tensor([0.1, 0.19, 0.271]), "AT LEAST ONE"),
        (torch.full((3,), 0.001), "masked keys were counted"),
        (torch.full((3,), 0.1), "multiply p by itself"),
        (torch.tensor([0.1, 0.01]), "wrong shape"),
        ([0.1, 0.01, 0.001], "expected a torch.Tensor"),
    ],
)
def test_check_row_drop_probability_explains_mistakes(answer, message):
    with pytest.raises(AssertionError, match=message):
        checks.check_row_drop_probability(answer, CAUSAL, 0.1)


def test_check_eval_forward_accepts_a_restoring_function(capsys):
    checks.check_eval_forward(eval_forward)
    assert capsys.readouterr().out.startswith("✅ check_eval_forward:")


def never_restores(module, x):
    module.eval()
    return module(x)


def always_back_to_training(module, x):
    module.eval()
    output = module(x)
    module.train()
    return output


def returns_weights_too(module, x):
    was_training = module.training
    module.eval()
    output = module(x, return_weights=True)
    module.train(was_training)
    return output


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (no_grad_only, "torch.no_grad"),
        (never_restores, "in training mode before your function"),
        (always_back_to_training, "in eval mode before your function"),
        (returns_weights_too, "expected a torch.Tensor"),
    ],
)
def test_check_eval_forward_explains_mistakes(fn, message):
    with pytest.raises(AssertionError, match=message):
        checks.check_eval_forward(fn)


def test_check_eval_forward_leaves_the_global_random_state_alone():
    state = torch.random.get_rng_state()
    with pytest.raises(AssertionError):
        checks.check_eval_forward(no_grad_only)
    assert torch.equal(state, torch.random.get_rng_state())


# --- a wrong call of a check ---------------------------------------------------------

RIGHT = torch.tensor([0.1, 0.01, 0.001])
CALL_ERRORS = [
    pytest.param(
        lambda: checks.check_dropout_fn(torch.nn.Dropout(0.1)),
        TypeError,
        ["got a Dropout module", "check_dropout_fn(dropout), not"],
        id="dropout-module",
    ),
    pytest.param(
        lambda: checks.check_eval_forward(None),
        TypeError,
        ["check_eval_forward(eval_forward), not"],
        id="eval-none",
    ),
    pytest.param(
        lambda: checks.check_row_drop_probability(RIGHT, CAUSAL, 1.0),
        ValueError,
        ["p must be in [0, 1), got p=1.0"],
        id="p-one",
    ),
    pytest.param(
        lambda: checks.check_row_drop_probability(RIGHT, CAUSAL, "0.1"),
        TypeError,
        ["p must be a number, got str"],
        id="p-string",
    ),
    pytest.param(
        lambda: checks.check_row_drop_probability(RIGHT, CAUSAL.tolist(), 0.1),
        TypeError,
        ["weights must be a torch.Tensor, got list"],
        id="weights-list",
    ),
    pytest.param(
        lambda: checks.check_row_drop_probability(RIGHT, torch.tensor(1.0), 0.1),
        ValueError,
        ["weights must have at least one dimension"],
        id="weights-scalar",
    ),
]

test_a_wrong_call_is_a_type_or_value_error = wrong_call_test(CALL_ERRORS)
