"""Tests of the Chapter 3 self-checks (attn_course.checks.causal_mask): right
answers pass, wrong ones are explained."""

import pytest
import torch

from attn_course import checks

from .answers import additive, attend, failure, lower, wrong_call_test

# --- check_causal_mask ---------------------------------------------------------------


# Its slips are tested with every table's, in tests/test_tables.py.


def test_check_causal_mask_right_answer(capsys):
    checks.check_causal_mask(lower)
    checks.check_causal_mask(
        fn=lambda T: torch.arange(T)[None] <= torch.arange(T)[:, None]
    )
    assert capsys.readouterr().out.count("✅ check_causal_mask:") == 2


@pytest.mark.parametrize(
    ("wrong", "phrase"),
    [
        (lambda T: lower(T)[:, :-1], "wrong shape"),
        (lambda T: lower(T).tolist(), "expected a torch.Tensor, got list"),
        (lambda T: lower(T).long(), "its dtype is torch.int64, not torch.bool"),
    ],
)
def test_check_causal_mask_explains_what_no_slip_gives(wrong, phrase):
    assert phrase in failure(checks.check_causal_mask, wrong)


def test_check_causal_mask_other_wrong_entry_is_located():
    def one_wrong(T):
        mask = lower(T)
        if T >= 5:
            mask[4, 1] = False
        return mask

    message = failure(checks.check_causal_mask, one_wrong)
    assert "for T = 5: entry [4, 1] is False, where True is right" in message


# --- check_mha_mask_fn ---------------------------------------------------------------


def test_check_mha_mask_fn_right_answers(capsys):
    checks.check_mha_mask_fn(lambda mask: ~mask)
    checks.check_mha_mask_fn(torch.logical_not)
    out = capsys.readouterr().out
    assert out.count("✅ check_mha_mask_fn: your conversion is correct") == 2


def test_check_mha_mask_fn_unchanged_mask_is_named():
    message = failure(checks.check_mha_mask_fn, lambda mask: mask.clone())
    assert "the input unchanged" in message and "True as blocked" in message


def test_check_mha_mask_fn_float_and_in_place_and_wrong_values():
    def additive(mask):
        return torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))

    assert "this exercise asks for a bool mask" in failure(
        checks.check_mha_mask_fn, additive
    )
    assert "in place" in failure(checks.check_mha_mask_fn, lambda m: m.logical_not_())

    def causal_always(mask):  # ignores the mask it was given
        T_q, T_k = mask.shape
        return torch.ones(T_q, T_k, dtype=torch.bool).triu(diagonal=1)

    message = failure(checks.check_mha_mask_fn, causal_always)
    assert "nn.MultiheadAttention's output with your mask on a random" in message


# --- check_additive_mask -------------------------------------------------------------


# Its slips are tested with every table's, in tests/test_tables.py.


def test_check_additive_mask_accepts_minus_inf_or_a_large_negative_number(capsys):
    checks.check_additive_mask(additive)
    checks.check_additive_mask(lambda T: additive(T).clamp(min=-1e9))
    assert capsys.readouterr().out.count("✅ check_additive_mask:") == 2


def test_check_additive_mask_names_a_slip_made_with_a_large_negative_number():
    def inverted(T):
        return torch.zeros(T, T).masked_fill(lower(T), -1e9)

    assert "your mask is inverted" in failure(checks.check_additive_mask, inverted)


def test_check_additive_mask_locates_what_no_slip_gives():
    message = failure(checks.check_additive_mask, lambda T: additive(T).clamp(min=-5.0))
    assert "entry [0, 1] is -5.0, where -inf is right" in message


# --- check_causal_attention_fn -------------------------------------------------------


def test_check_causal_attention_fn_right_answers(capsys):
    checks.check_causal_attention_fn(attend)
    checks.check_causal_attention_fn(lambda q, k, v: attend(q, k, v, mask="after"))
    out = capsys.readouterr().out
    assert out.count("✅ check_causal_attention_fn: your causal attention") == 2


@pytest.mark.parametrize(
    ("options", "phrase"),
    [
        ({"mask": "inverted"}, "your mask is inverted"),
        ({"mask": None}, "put weight on the future: query 0 gives"),
        ({"mask": "nan"}, "contain NaN"),
        ({"mask": "after", "renormalise": False}, "did not renormalise"),
        ({"scale": 1.0}, "no scaling"),
    ],
)
def test_check_causal_attention_fn_names_each_mistake(options, phrase):
    def wrong(q, k, v):
        return attend(q, k, v, **options)

    assert phrase in failure(checks.check_causal_attention_fn, wrong)


def test_check_causal_attention_fn_wrong_context_and_return():
    def wrong_context(q, k, v):
        weights, _ = attend(q, k, v)
        return weights, weights @ q

    assert "The context is weights @ values" in failure(
        checks.check_causal_attention_fn, wrong_context
    )
    assert "should return a pair" in failure(
        checks.check_causal_attention_fn, lambda q, k, v: attend(q, k, v)[1]
    )


def causal_by_hand(
    q, k, v, *, allowed=lower, fill=-torch.inf, transpose=None, keepdim=True, how=""
):
    """Causal attention written out, with one of the slips a learner makes."""
    T = q.shape[-2]
    keys_t = k.transpose(-2, -1) if transpose is None else transpose(k)
    scores = q @ keys_t / k.shape[-1] ** 0.5
    if how == "renormalise":  # mask after the softmax, then renormalise
        weights = torch.softmax(scores, dim=-1) * lower(T)
        weights = weights / weights.sum(dim=-1, keepdim=keepdim)
        return weights, weights @ v
    scores = scores.masked_fill(~allowed(T), fill)
    if how == "max":  # subtract the row maximum, as a stable softmax does
        scores = scores - scores.max(dim=-1, keepdim=keepdim).values
    exps = scores.exp()
    weights = exps / exps.sum(dim=-1, keepdim=keepdim if how != "max" else True)
    return weights, weights @ v


def test_check_causal_attention_fn_accepts_the_written_out_softmax(capsys):
    checks.check_causal_attention_fn(causal_by_hand)
    checks.check_causal_attention_fn(lambda q, k, v: causal_by_hand(q, k, v, how="max"))
    checks.check_causal_attention_fn(
        lambda q, k, v: causal_by_hand(q, k, v, how="renormalise")
    )
    checks.check_causal_attention_fn(lambda q, k, v: causal_by_hand(q, k, v, fill=-1e9))
    assert capsys.readouterr().out.count("✅") == 4


def no_diagonal(T):
    return lower(T).tril(diagonal=-1)


@pytest.mark.parametrize(
    ("options", "phrases"),
    [
        (
            {"allowed": no_diagonal},
            ["blocks the diagonal too", "[nan, nan", "A token may attend to itself"],
        ),
        ({"allowed": no_diagonal, "fill": -1e9}, ["blocks the diagonal too"]),
        ({"keepdim": False}, ["without keepdim=True", "(your rows sum to [1.0000"]),
        ({"keepdim": False, "how": "max"}, ["without keepdim=True"]),
        ({"keepdim": False, "how": "renormalise"}, ["without keepdim=True"]),
        ({"transpose": lambda k: k}, ["cannot be multiplied", "forgotten transpose"]),
        (
            {"transpose": lambda k: k.T},
            ["raised RuntimeError on a batch", ".T on a tensor with a batch dimension"],
        ),
    ],
)
@pytest.mark.filterwarnings("ignore:The use of `x.T`:UserWarning")
def test_check_causal_attention_fn_names_the_slips_of_a_written_out_attention(
    options, phrases
):
    message = failure(
        checks.check_causal_attention_fn,
        lambda q, k, v: causal_by_hand(q, k, v, **options),
    )
    for phrase in phrases:
        assert phrase in message
    assert "ones * float('-inf')" not in message


# --- a wrong call of a check ---------------------------------------------------------

CALL_ERRORS = [
    pytest.param(
        lambda: checks.check_causal_mask(lower(3)),
        TypeError,
        ["got torch.Tensor", "check_causal_mask(my_causal_mask), not"],
        id="causal-mask-result",
    ),
    pytest.param(
        lambda: checks.check_mha_mask_fn("~mask"),
        TypeError,
        ["check_mha_mask_fn(to_mha_mask), not"],
        id="mha-string",
    ),
    pytest.param(
        lambda: checks.check_additive_mask(additive(3)),
        TypeError,
        ["check_additive_mask(additive_causal_mask), not"],
        id="additive-result",
    ),
    pytest.param(
        lambda: checks.check_causal_attention_fn(torch.nn.Linear(2, 2)),
        TypeError,
        ["got a Linear module"],
        id="causal-attention-module",
    ),
]

test_a_wrong_call_is_a_type_or_value_error = wrong_call_test(CALL_ERRORS)
