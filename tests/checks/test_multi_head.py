"""Tests of the Chapter 5 checks that tests/test_tables.py does not cover: the
wiring of check_head_split, the validation of shapes, and wrong calls."""

import re

import pytest
import torch

from attn_course import checks

from .answers import RIGHT_SHAPES as R
from .answers import SETTING, count, failure, merge_heads, split_heads

SPLIT, SHAPES = checks.check_head_split, checks.check_shape_predictions


def test_check_head_split_runs_both_functions(capsys):
    SPLIT(split_heads, lambda x: x.transpose(1, 2).flatten(2))
    assert capsys.readouterr().out.startswith("✅ check_head_split:")
    changes = failure(SPLIT, split_heads, lambda x: merge_heads(x.mul_(2)))
    assert "merge_heads changed its input on the heads of torch.arange" in changes
    assert "split_heads raised TypeError" in failure(SPLIT, len, merge_heads)


def test_check_shape_predictions_names_each_slip_or_what_is_off():
    wrong = {"fused output": (2, 5, 36), "queries.view": (2, 5, 4, 3)}
    message = failure(SHAPES, {**R, **wrong}, **SETTING)
    assert "2 of 7 shapes are wrong:\n  'fused output': you predicted (2" in message
    assert (
        "the TOTAL of its heads" in message and "dimension 2 (H) is too high" in message
    )
    assert "(2, 5, 12)" not in message and "(2, 5, 3, 4)" not in message
    assert "lacks the keys ['x']" in failure(SHAPES, {}, **SETTING, required=["x"])
    assert "is empty" in failure(SHAPES, {}, **SETTING)
    assert "unknown key(s) ['out']" in failure(SHAPES, {"out": (1,)}, **SETTING)
    assert "'x': '2 5' is not a shape" in failure(SHAPES, {"x": "2 5"}, **SETTING)


WRONG_CALLS = {
    "check_head_split(merge_heads), not": lambda: SPLIT(split_heads, torch.ones(2)),
    "must be an int, got float": lambda: SHAPES(R, **SETTING | {"num_heads": 3.0}),
    "not divisible by num_heads=5": lambda: SHAPES(R, **SETTING | {"num_heads": 5}),
    "got int": lambda: checks.check_param_count_fn(count(3, 2, 2, False)),
}


@pytest.mark.parametrize("fragment", WRONG_CALLS)
def test_a_wrong_call_is_a_type_or_value_error(fragment):
    with pytest.raises((TypeError, ValueError), match=re.escape(fragment)):
        WRONG_CALLS[fragment]()
