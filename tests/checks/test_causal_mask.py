"""What the tables of Chapter 3 (attn_course.checks.causal_mask) leave untested:
other right answers, the messages no slip gives, and wrong calls."""

import pytest
import torch

from attn_course import checks

from .answers import additive, attend, failure, lower, wrong_call_test

MASK, ADDITIVE, CAUSAL, MHA = (
    checks.check_causal_mask,
    checks.check_additive_mask,
    checks.check_causal_attention_fn,
    checks.check_mha_mask_fn,
)


def test_other_right_answers_pass(capsys):
    MASK(lambda T: torch.arange(T)[None] <= torch.arange(T)[:, None])
    ADDITIVE(lambda T: additive(T).clamp(min=-1e9))
    ADDITIVE(lambda T: additive(T).double())
    CAUSAL(lambda q, k, v: attend(q, k, v, fill=-1e9))
    CAUSAL(lambda q, k, v: attend(q, k, v, mask="after"))
    MHA(torch.logical_not)
    assert capsys.readouterr().out.count("✅") == 6


@pytest.mark.parametrize(
    ("check", "answer", "phrase"),
    [
        (MASK, lambda T: lower(T).long(), "dtype is torch.int64"),
        (ADDITIVE, lambda T: additive(T).clamp(min=-5.0), "-5.0"),
        (CAUSAL, lambda q, k, v: [*attend(q, k, v), v], "returned list"),
        (CAUSAL, lambda q, k, v: attend(q, k, v)[0], "returned torch.Tensor"),
        (CAUSAL, lambda q, k, v: (attend(q, k, v)[0], v), "its context: entry"),
        (MHA, lambda mask: mask.logical_not_(), "in place"),
    ],
)
def test_what_no_slip_gives_is_explained(check, answer, phrase):
    assert phrase in failure(check, answer)


test_a_wrong_call_is_a_type_error = wrong_call_test(
    [
        (lambda: MASK(lower(3)), TypeError, ["(my_causal_mask)"]),
        (lambda: MHA("~mask"), TypeError, ["(to_mha_mask)"]),
        (lambda: CAUSAL(torch.nn.Linear(2, 2)), TypeError, ["got a Linear module"]),
    ]
)
