"""Tests of the Chapter 4 self-checks (attn_course.checks.dropout): right answers
pass, wrong ones are explained."""

import pytest
import torch

from attn_course import checks

from .answers import (
    dropout,
    eval_forward,
    failure,
    global_generator,
    no_grad_only,
    prob_all_dropped,
    prob_all_kept,
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


@pytest.mark.parametrize(
    "fn",
    [
        prob_all_dropped,
        lambda weights, p: torch.pow(p, torch.count_nonzero(weights, dim=-1)),
    ],
)
def test_check_row_drop_probability_accepts_p_to_the_k(fn, capsys):
    checks.check_row_drop_probability(fn)
    assert capsys.readouterr().out.startswith("✅ check_row_drop_probability:")


def nonzero(weights):
    return (weights > 0).sum(dim=-1)


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (prob_all_kept, "every weight is KEPT"),
        (lambda w, p: 1 - (1 - p) ** nonzero(w), "AT LEAST ONE weight is dropped"),
        (lambda w, p: 1 - p ** nonzero(w), "at least one weight is KEPT"),
        (
            lambda w, p: torch.full(w.shape[:-1], p ** w.shape[-1]),
            "masked keys were counted",
        ),
        (lambda w, p: p ** (w > 0).sum(dim=0), "counted down the columns"),
        (lambda w, p: p ** w.sum(dim=-1), "computed k as weights.sum"),
        (lambda w, p: p * nonzero(w), "rather than add"),
        (lambda w, p: (p ** nonzero(w))[..., :-1], "wrong shape"),
        (lambda w, p: (p ** nonzero(w)).tolist(), "expected a torch.Tensor"),
    ],
)
def test_check_row_drop_probability_explains_mistakes(fn, message):
    with pytest.raises(AssertionError, match=message):
        checks.check_row_drop_probability(fn)


def test_check_row_drop_probability_tries_p_other_than_a_half():
    """(1 - p) ** k equals p ** k at p = 0.5: other p must be tried, and the
    cases at 0.5 and beyond must run too (an answer right only below 0.5 fails)."""

    def right_up_to_a_half(weights, p):
        return p ** nonzero(weights) if p <= 0.5 else (1 - p) ** nonzero(weights)

    message = failure(checks.check_row_drop_probability, right_up_to_a_half)
    assert "with p = 0.8" in message and "KEPT" in message


def test_check_row_drop_probability_names_the_batch_case():
    def unbatched_only(weights, p):
        if weights.dim() > 2:
            raise RuntimeError("only (T, T) weights")
        return prob_all_dropped(weights, p)

    message = failure(checks.check_row_drop_probability, unbatched_only)
    assert "raised RuntimeError on a batch of (2, 3, 7) weights" in message


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
        lambda: checks.check_row_drop_probability(torch.tensor([0.1, 0.01])),
        TypeError,
        ["check_row_drop_probability(prob_all_dropped), not"],
        id="row-drop-result",
    ),
]

test_a_wrong_call_is_a_type_or_value_error = wrong_call_test(CALL_ERRORS)
