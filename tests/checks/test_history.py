"""What the tables of Chapter 10's checks (tests/test_tables.py) do not cover: the
references agree with the chapter's modules, other right answers pass, and the
messages for answers that are no slip."""

import numpy as np
import pytest
import torch

from attn_course import checks
from attn_course.checks.history import ADDITIVE, COUNTS
from attn_course.rnn import AdditiveAttention, GRUSeq2Seq

from .answers import additive_scores, path_length, scoring_parameters


def test_the_references_are_the_modules_of_the_chapter():
    for query, keys, W_query, W_key, v in (c.args for c in ADDITIVE.all_cases()):
        module = AdditiveAttention(W_query.shape[0], *W_key.shape)
        with torch.no_grad():
            for layer, weight in ((module.W_query, W_query.T), (module.W_key, W_key.T)):
                layer.weight.copy_(weight)
            module.v.weight.copy_(v[None])
        _, weights = module(query, keys, return_weights=True)
        scores = additive_scores(query, keys, W_query, W_key, v)
        assert torch.allclose(torch.softmax(scores, dim=-1), weights, atol=1e-6)
    for sizes in COUNTS.cases:
        module = AdditiveAttention(*sizes)
        additive = sum(p.numel() for p in module.parameters())
        assert scoring_parameters(*sizes)["additive"] == additive
    assert (GRUSeq2Seq(5, 5).config.d_model,) * 3 in COUNTS.cases


def test_other_right_answers_pass(capsys):
    checks.check_path_length_fn(lambda *a: np.int64(path_length(*a)))
    checks.check_path_length_fn(lambda *a: torch.tensor(path_length(*a)))
    checks.check_scoring_parameters_fn(
        lambda *a: dict(reversed(scoring_parameters(*a).items()))
    )
    assert capsys.readouterr().out.count("✅") == 3


def test_answers_that_are_no_slip_are_told_what_is_wrong():
    def forgets(query, keys, W_query, W_key, v):  # some slips raise: not those
        additive_scores(query, keys, W_query, W_key, v)

    def in_place(query, keys, W_query, W_key, v):
        return additive_scores(query, keys.mul_(2), W_query, W_key, v)

    def two_slips(d_q, d_k, d_a):  # 'additive' is named first
        return dict(additive=7, general=60, dot=0)

    for check, answer, says in [
        (checks.check_additive_scores_fn, forgets, "forget a `return`"),
        (checks.check_additive_scores_fn, in_place, "changed its input keys"),
        (checks.check_path_length_fn, lambda *a: [path_length(*a)], "[7], where 7"),
        (checks.check_scoring_parameters_fn, two_slips, "'additive' is 7, where 136"),
        (checks.check_scoring_parameters_fn, {}, "expects your function itself"),
    ]:
        with pytest.raises((AssertionError, TypeError)) as info:
            check(answer)
        assert says in str(info.value) and "slip" not in str(info.value)
