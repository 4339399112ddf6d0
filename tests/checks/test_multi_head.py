"""Tests of the Chapter 5 self-checks (attn_course.checks.multi_head): right answers
pass, wrong ones are explained."""

import pytest
import torch

from attn_course import checks

from .answers import RIGHT_SHAPES as RIGHT
from .answers import (
    SETTING,
    count,
    failure,
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


def split_strided(x, num_heads):
    B, T, D = x.shape
    return x.view(B, T, D // num_heads, num_heads).permute(0, 3, 1, 2)


def split_two_heads(x, num_heads):
    B, T, D = x.shape
    return x.view(B, T, 2, D // 2).transpose(1, 2)


@pytest.mark.parametrize(
    ("split", "merge", "message"),
    [
        (split_straight, merge_heads, "straight to .* without a transpose"),
        (split_strided, merge_heads, "every H-th feature"),
        (split_two_heads, merge_heads, "not a fixed number"),
        (split_without_transpose, merge_heads, r"add \.transpose\(1, 2\)"),
        (
            split_heads,
            merge_without_contiguous,
            r"merge_heads raised RuntimeError.*call \.contiguous\(\) before \.view",
        ),
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
    assert repr(key) in str(info.value)  # names the wrong entry


@pytest.mark.parametrize(
    ("key", "shape", "off"),
    [
        ("wrapper output", (2, 5, 12), "dimension 2 (H * d_out) is too low"),
        ("fused output", (2, 5, 36), "dimension 2 (D) is too high"),
        ("fused weights", (2, 5, 5), "3 dimensions where the result has 4"),
        (
            "queries.transpose",
            (2, 5, 3, 4),
            "dimension 1 (H) is too high, dimension 2 (T) is too low",
        ),
        ("queries.view", (2, 5, 4, 3), "dimension 2 (H) is too high"),
    ],
)
def test_check_shape_predictions_never_shows_the_right_shape(key, shape, off):
    message = failure(
        checks.check_shape_predictions, dict(RIGHT, **{key: shape}), **SETTING
    )
    assert off in message
    assert str(tuple(RIGHT[key])) not in message


def test_check_shape_predictions_lists_every_wrong_entry_without_the_answers():
    answer = dict(RIGHT, **{"wrapper output": (2, 5, 12), "fused output": (2, 5, 36)})
    message = failure(checks.check_shape_predictions, answer, **SETTING)
    assert "2 of 7 shapes are wrong" in message
    assert "'wrapper output'" in message and "'fused output'" in message
    assert "(2, 5, 36)" in message  # the learner's own prediction, not the right one
    assert "(2, 5, 12)" in message  # idem
    assert "the module gives" not in message


def test_check_shape_predictions_wants_the_required_keys_and_something():
    required = list(RIGHT)
    partial = {"fused output": (2, 5, 12)}
    message = failure(
        checks.check_shape_predictions, partial, **SETTING, required=required
    )
    assert "lacks the keys ['wrapper output', 'wrapper weights', 'fused weights'" in (
        message
    )
    assert "is empty" in failure(checks.check_shape_predictions, {}, **SETTING)
    message = failure(
        checks.check_shape_predictions,
        dict(RIGHT, **{"fused output": "2536"}),
        **SETTING,
    )
    assert "'2536' is not a shape" in message


def test_check_shape_predictions_rejects_unknown_keys_and_non_dicts():
    with pytest.raises(AssertionError, match="unknown key"):
        checks.check_shape_predictions({"output": (2, 5, 12)}, **SETTING)
    with pytest.raises(AssertionError, match="expected a dict"):
        checks.check_shape_predictions([(2, 5, 12)], **SETTING)


def test_check_shape_predictions_leaves_the_global_random_state_alone():
    state = torch.random.get_rng_state()
    checks.check_shape_predictions(RIGHT, **SETTING)
    assert torch.equal(state, torch.random.get_rng_state())


def forgets_to_return(d_in, d_out, num_heads, qkv_bias):
    total = count(d_in, d_out, num_heads, qkv_bias)  # noqa: F841 (the slip)


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
        (
            lambda a, b, h, bias: 3 * (b * b + (b if bias else 0)) + b * b + b,
            "counted as d_out \\* d_out each",
        ),
        (
            lambda a, b, h, bias: h * 3 * (a * b + (b if bias else 0)) + b * b + b,
            "counted once per head",
        ),
        (
            lambda a, b, h, bias: count(a, b, h, bias) - (0 if bias else b),
            "whatever qkv_bias says",
        ),
        (lambda *args: "many", "whole number"),
        (forgets_to_return, "forget to `return`"),
        (lambda *args: 1 / 0, "raised ZeroDivisionError"),
    ],
)
def test_check_param_count_fn_explains_mistakes(fn, message):
    with pytest.raises(AssertionError, match=message):
        checks.check_param_count_fn(fn)


def forgets_the_list(d_out):
    counts = valid_head_counts(d_out)  # noqa: F841 (the slip)


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
        (lambda d: [h for h in range(1, d) if d % h == 0], "misses \\[8\\]"),
        (lambda d: [2**i for i in range(d) if d % 2**i == 0], "misses \\[3, 6, 12\\]"),
        (forgets_the_list, "forget to `return`"),
    ],
)
def test_check_head_counts_fn_explains_mistakes(fn, message):
    with pytest.raises(AssertionError, match=message):
        checks.check_head_counts_fn(fn)


def test_check_head_counts_fn_never_shows_the_right_list():
    message = failure(checks.check_head_counts_fn, lambda d: list(range(1, d)))
    assert "[1, 2, 4, 8]" not in message
    assert "right answer" not in message


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
