"""What the tables of Chapter 4 (attn_course.checks.dropout) leave untested: any
right mask passes, the messages no slip gives, the wrapped calls, wrong calls."""

import pytest
import torch

from attn_course import checks

from .answers import dropout, failure, prob_all_dropped, wrong_call_test

DROP, ROWS, EVAL = (
    checks.check_dropout_fn,
    checks.check_row_drop_probability,
    checks.check_eval_forward,
)


def bernoulli(w, p, generator):
    return w * torch.bernoulli(torch.full_like(w, 1 - p), generator=generator) / (1 - p)


def test_any_right_mask_passes(capsys):
    DROP(bernoulli)
    DROP(lambda w, p, g: (torch.rand(w.shape, generator=g) < 1 - p) * w / (1 - p))
    assert capsys.readouterr().out.count("✅ check_dropout_fn:") == 2


@pytest.mark.parametrize(
    ("check", "answer", "phrase"),
    [
        (DROP, lambda w, p, g: dropout(w, p, None), "global random generator"),
        (DROP, lambda w, p, g: w / (1 - p), "the same output whatever the generator"),
        (DROP, lambda w, p, g: dropout(w, p, g) / (1 + p), "keeps a weight as"),
        (DROP, lambda w, p, g: w.div_(1 - p), "changed its input weights"),
        (ROWS, lambda w, p: prob_all_dropped(w, p) if p < 0.8 else w, "p = 0.8"),
        (EVAL, lambda m, x: m.eval()(x, return_weights=True), "got tuple"),
        (EVAL, lambda m, x: 1 / 0, "eval_forward raised ZeroDivisionError"),
    ],
)
def test_what_no_slip_gives_is_explained(check, answer, phrase):
    assert phrase in failure(check, answer)


test_a_wrong_call_is_a_type_error = wrong_call_test(
    [
        (lambda: DROP(torch.nn.Dropout(0.1)), TypeError, ["a Dropout", "(my_dropout)"]),
        (lambda: EVAL(None), TypeError, ["check_eval_forward(eval_forward), not"]),
        (lambda: ROWS(torch.ones(2)), TypeError, ["(prob_all_dropped), not"]),
    ]
)
