"""Tests of the Chapter 5 self-checks (attn_course.checks.multi_head): right answers
pass, wrong ones are explained."""

import pytest
import torch

from attn_course import checks

from .answers import RIGHT_SHAPES as RIGHT
from .answers import (
    SETTING,
    count,
    merge_heads,
    merge_without_contiguous,
    split_heads,
    valid_head_counts,
    wrong_call_test,
)


def merge_with_reshape(x):
    B, H, T, d = x.shape
    return x.transpose(1, 2).reshape(B, T, H * d)


@pytest.mark.parametrize("merge", [merge_heads, merge_with_reshape])
def test_check_head_split_accepts_correct_functions(merge, capsys):
    checks.check_head_split(split_heads, merge)
    assert capsys.readouterr().out.startswith("✅ check_head_split:")


def split_straight(x, num_heads):
    B, T, D = x.shape
    return x.view(B, num_heads, T, D // num_heads)


def split_without_transpose(x, num_heads):
    B, T, D = x.shape
    return x.view(B, T, num_heads, D // num_heads)


def merge_straight(x):
    B, H, T, d = x.shape
    return x.reshape(B, T, H * d)


@pytest.mark.parametrize(
    ("split", "merge", "message"),
    [
        (split_straight, merge_heads, "cuts the SEQUENCE"),
        (split_without_transpose, merge_heads, r"add \.transpose\(1, 2\)"),
        (split_heads, merge_without_contiguous, r"call \.contiguous\(\)"),
        (split_heads, merge_straight, "Transpose back first"),
        (split_heads(torch.zeros(1, 2, 4), 2), merge_heads, "without calling it"),
    ],
)
def test_check_head_split_explains_mistakes(split, merge, message):
    error = TypeError if not callable(split) else AssertionError
    with pytest.raises(error, match=message):
        checks.check_head_split(split, merge)


def test_check_shape_predictions_accepts_right_shapes(capsys):
    checks.check_shape_predictions(RIGHT, **SETTING)
    assert "all 7 predicted shapes are correct" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("key", "shape", "message"),
    [
        ("wrapper output", (2, 5, 12), "width of EACH head"),
        ("fused output", (2, 5, 36), "TOTAL width"),
        ("fused weights", (2, 5, 5), r"\(B, H, T, T\)"),
        ("queries.transpose", (2, 5, 3, 4), "swaps T and H"),
        ("context.transpose", (2, 3, 5, 4), "swaps H and T back"),
        ("queries.view", "oops", "not a shape"),
    ],
)
def test_check_shape_predictions_explains_each_wrong_shape(key, shape, message):
    answer = dict(RIGHT, **{key: shape})
    with pytest.raises(AssertionError, match=message) as info:
        checks.check_shape_predictions(answer, **SETTING)
    assert "1 of 7 shapes are wrong" in str(info.value)


def test_check_shape_predictions_rejects_unknown_keys_and_non_dicts():
    with pytest.raises(AssertionError, match="unknown key"):
        checks.check_shape_predictions({"output": (2, 5, 12)}, **SETTING)
    with pytest.raises(AssertionError, match="expected a dict"):
        checks.check_shape_predictions([(2, 5, 12)], **SETTING)


def test_check_shape_predictions_leaves_the_global_random_state_alone():
    state = torch.random.get_rng_state()
    checks.check_shape_predictions(RIGHT, **SETTING)
    assert torch.equal(state, torch.random.get_rng_state())


def test_check_param_count_fn_accepts_the_formula(capsys):
    checks.check_param_count_fn(count)
    assert "2,362,368" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (lambda *args: count(*args) - args[1], "bias of out_proj"),
        (lambda a, b, h, bias: count(a, b, h, True), "qkv_bias=False"),
        (lambda a, b, h, bias: count(a, b, h, False), "qkv biases"),
        (lambda a, b, h, bias: 3 * (a * b + (b if bias else 0)), "out_proj"),
        (lambda *args: args[2] * count(*args), "SPLIT d_out"),
        (lambda a, b, h, bias: 4 * b * b + 4 * b, "only when d_in = d_out"),
        (lambda *args: "many", "whole number"),
        (lambda *args: 1 / 0, "raised ZeroDivisionError"),
    ],
)
def test_check_param_count_fn_explains_mistakes(fn, message):
    with pytest.raises(AssertionError, match=message):
        checks.check_param_count_fn(fn)


def test_check_head_counts_fn_accepts_the_divisors(capsys):
    checks.check_head_counts_fn(valid_head_counts)
    assert capsys.readouterr().out.startswith("✅ check_head_counts_fn:")


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (lambda d: [h for h in range(2, d) if d % h == 0], "1 and d_out itself"),
        (lambda d: list(range(1, 9)), "num_heads=3 does not divide d_out=8"),
        (lambda d: valid_head_counts(d)[::-1], "increasing order"),
        (lambda d: len(valid_head_counts(d)), "list of ints"),
    ],
)
def test_check_head_counts_fn_explains_mistakes(fn, message):
    with pytest.raises(AssertionError, match=message):
        checks.check_head_counts_fn(fn)


# --- a wrong call of a check ---------------------------------------------------------

CALL_ERRORS = [
    pytest.param(
        lambda: checks.check_head_split(
            split_heads, merge_heads(torch.ones(1, 2, 2, 2))
        ),
        TypeError,
        ["check_head_split(merge_heads), not"],
        id="merge-result",
    ),
    pytest.param(
        lambda: checks.check_shape_predictions(RIGHT, **dict(SETTING, num_heads=3.0)),
        TypeError,
        ["num_heads must be an int, got float"],
        id="num_heads-float",
    ),
    pytest.param(
        lambda: checks.check_shape_predictions(RIGHT, **dict(SETTING, batch_size=0)),
        ValueError,
        ["batch_size must be at least 1"],
        id="batch_size-zero",
    ),
    pytest.param(
        lambda: checks.check_shape_predictions(RIGHT, **dict(SETTING, num_heads=5)),
        ValueError,
        ["d_out=12 is not divisible by num_heads=5"],
        id="not-divisible",
    ),
    pytest.param(
        lambda: checks.check_param_count_fn(count(3, 2, 2, False)),
        TypeError,
        ["got int", "check_param_count_fn(count), not"],
        id="count-result",
    ),
    pytest.param(
        lambda: checks.check_head_counts_fn([1, 2, 4, 8]),
        TypeError,
        ["got list"],
        id="head-counts-result",
    ),
]

test_a_wrong_call_is_a_type_or_value_error = wrong_call_test(CALL_ERRORS)
