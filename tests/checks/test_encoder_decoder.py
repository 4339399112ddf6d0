"""Tests of the Chapter 6 self-checks (attn_course.checks.encoder_decoder): right
answers pass, wrong ones get a precise message."""

import pytest
import torch

from attn_course import checks, key_padding_to_attn_mask

from .answers import (
    SIZES,
    compare_all_positions,
    failure,
    right_mask,
    right_shapes,
    sees_the_future,
    wrong_call_test,
)

# --- check_cross_attention_mask ------------------------------------------------------


def test_cross_mask_accepts_right_answers(capsys):
    checks.check_cross_attention_mask(right_mask)
    checks.check_cross_attention_mask(
        lambda src, T_t: key_padding_to_attn_mask(src != 0).expand(-1, 1, T_t, -1)
    )  # (B, 1, T_t, T_s) works too
    out = capsys.readouterr().out
    assert out.count("✅ check_cross_attention_mask") == 2


def mask_without_return(src, T_t):
    mask = (src != 0)[:, None, None, :]  # noqa: F841 (the slip: no return)


@pytest.mark.parametrize(
    "fn, message",
    [
        (lambda src, T_t: src != 0, "does not broadcast.*mask\\[:, None, None, :\\]"),
        (lambda src, T_t: right_mask(src, T_t).float(), "not bool"),
        (lambda src, T_t: ~right_mask(src, T_t), "inverted"),
        (
            lambda src, T_t: (
                right_mask(src, T_t)
                & torch.ones(T_t, src.shape[1], dtype=torch.bool).tril()
            ),
            "never causal",
        ),
        (lambda src, T_t: (src != 0)[:, None, :, None], "does not broadcast"),
        (lambda src, T_t: (src % 2 == 0)[:, None, None, :], "is a real token"),
        (mask_without_return, "forget a `return`"),
        (lambda src, T_t: 1 / 0, "ZeroDivisionError"),
    ],
)
def test_cross_mask_explains_wrong_answers(fn, message):
    with pytest.raises(AssertionError, match=message):
        checks.check_cross_attention_mask(fn)


def test_cross_mask_names_the_silent_two_d_broadcast():
    def two_d_when_it_fits(src, T_t):
        mask = src != 0  # (B, T_s)
        return mask if mask.shape[0] == T_t else right_mask(src, T_t)

    with pytest.raises(AssertionError, match="broadcasts only because B = T_t = 4"):
        checks.check_cross_attention_mask(two_d_when_it_fits)


# --- check_cross_attention_shapes ----------------------------------------------------


def test_shapes_accepts_the_right_answer(capsys):
    checks.check_cross_attention_shapes(right_shapes(), **SIZES)
    answer = right_shapes()
    answer["weights"] = torch.Size([3, 4, 5, 7])  # a torch.Size is fine too
    checks.check_cross_attention_shapes(answer, **SIZES)
    assert capsys.readouterr().out.count("✅ check_cross_attention_shapes") == 2


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("W_key", (96, 64), "out_features, in_features"),
        ("W_value", (64, 64), "computed from the memory"),
        ("weights", (3, 4, 7, 5), "Rows are queries"),
        ("weights", (3, 5, 7), "keep the head dimension"),
        ("output", (3, 7, 64), "dimension 1 \\(T_q\\) is too high.*per query"),
        ("output", (3, 5, 16), "width of one head"),
        ("output", (3, 4, 5, 16), "no head dimension"),
        ("output", (3, 5, 96), "decoder's width d_out"),
        ("W_key", (64, 64), "dimension 1 \\(d_memory\\) is too low"),
        ("num_parameters", 20480, "too low. You counted the weight matrices only"),
        ("num_parameters", 20480 + 4 * 64, "too high. Only out_proj has a bias"),
        ("num_parameters", 4 * 64 * 64 + 64, "d_out \\* d_memory weights"),
        ("num_parameters", 30000, "too high. Add up out_features \\* in_features"),
        ("num_parameters", (64, 64), "must be a number"),
        ("W_query", "64 x 64", "must be a shape"),
    ],
)
def test_shapes_explains_wrong_answers(key, value, message):
    answer = right_shapes()
    answer[key] = value
    with pytest.raises(AssertionError, match=message) as info:
        checks.check_cross_attention_shapes(answer, **SIZES)
    assert "1 of 7 predictions are wrong" in str(info.value)
    right = right_shapes()[key]
    assert str(right) not in str(info.value).split(":\n", 1)[1]  # not given away


def test_shapes_lists_every_wrong_entry():
    answer = dict(right_shapes(), W_key=(64, 64), W_value=(96, 64), weights=(3, 5, 7))
    message = failure(checks.check_cross_attention_shapes, answer, **SIZES)
    assert "3 of 7 predictions are wrong" in message
    for key in ("'W_key'", "'W_value'", "'weights'"):
        assert key in message
    assert "(64, 96)" not in message and "(3, 4, 5, 7)" not in message


def test_shapes_wants_every_key():
    answer = right_shapes()
    del answer["output"]
    with pytest.raises(AssertionError, match="lacks the keys \\['output'\\]"):
        checks.check_cross_attention_shapes(answer, **SIZES)
    with pytest.raises(AssertionError, match="expected a dict"):
        checks.check_cross_attention_shapes([(64, 64)], **SIZES)


# --- check_future_detector ------------------------------------------------------------


def test_detector_accepts_a_right_answer(capsys):
    checks.check_future_detector(sees_the_future)
    assert "✅ check_future_detector" in capsys.readouterr().out


def change_the_first_token(model, src, tgt_in):
    changed = tgt_in.clone()
    changed[:, 0] = (changed[:, 0] - 2) % 10 + 3
    return not torch.equal(model(src, tgt_in)[:, :0], model(src, changed)[:, :0])


def change_in_place(model, src, tgt_in):
    before = model(src, tgt_in)
    tgt_in[:, -1] = (tgt_in[:, -1] - 2) % 10 + 3
    return not torch.equal(before[:, :-1], model(src, tgt_in)[:, :-1])


@pytest.mark.parametrize(
    "fn, message",
    [
        (compare_all_positions, "flagged the causal decoder"),
        (change_the_first_token, "missed a decoder that sees the future"),
        (change_in_place, "in place"),
        (lambda model, src, tgt_in: "yes", "expected True or False"),
        (lambda model, src, tgt_in: model(tgt_in), "raised"),
    ],
)
def test_detector_explains_wrong_answers(fn, message):
    with pytest.raises(AssertionError, match=message):
        checks.check_future_detector(fn)


def answers_inverted(model, src, tgt_in):
    return not sees_the_future(model, src, tgt_in)


def answers_per_logit(model, src, tgt_in):
    changed = tgt_in.clone()
    changed[:, -1] = (changed[:, -1] - 2) % 10 + 3
    return model(src, tgt_in)[:, :-1] != model(src, changed)[:, :-1]


def detector_without_return(model, src, tgt_in):
    leaks = sees_the_future(model, src, tgt_in)  # noqa: F841 (the slip: no return)


@pytest.mark.parametrize(
    "fn, message",
    [
        (answers_inverted, "wrong way round.*a `not` in front of"),
        (answers_per_logit, "a tensor of shape \\(2, 4, 13\\); reduce it"),
        (detector_without_return, "forget to `return`"),
    ],
)
def test_detector_names_more_slips(fn, message):
    with pytest.raises(AssertionError, match=message):
        checks.check_future_detector(fn)


def test_detector_accepts_a_one_element_bool_tensor(capsys):
    def as_tensor(model, src, tgt_in):
        return torch.tensor(sees_the_future(model, src, tgt_in))

    checks.check_future_detector(as_tensor)
    assert "✅" in capsys.readouterr().out


# --- a wrong call of a check ---------------------------------------------------------

CALL_ERRORS = [
    pytest.param(
        lambda: checks.check_cross_attention_mask(torch.ones(2, 3, dtype=torch.bool)),
        TypeError,
        ["your function itself"],
        id="mask-result",
    ),
    pytest.param(
        lambda: checks.check_future_detector(True),
        TypeError,
        ["got bool", "check_future_detector(sees_the_future), not"],
        id="detector-result",
    ),
    pytest.param(
        lambda: checks.check_cross_attention_shapes(
            right_shapes(), **dict(SIZES, T_q=0)
        ),
        ValueError,
        ["T_q must be at least 1, got T_q=0"],
        id="T_q-zero",
    ),
    pytest.param(
        lambda: checks.check_cross_attention_shapes(
            right_shapes(), **dict(SIZES, d_memory="96")
        ),
        TypeError,
        ["d_memory must be an int, got str"],
        id="d_memory-string",
    ),
]

test_a_wrong_call_is_a_type_or_value_error = wrong_call_test(CALL_ERRORS)
