"""Chapter 8's checks beyond their tables (tests/test_tables.py): the right count is
the real model's, and how counts, pairs, in-place edits and slips are handled."""

import pytest
import torch

from attn_course import GPT, GPTConfig, checks
from attn_course.checks.gpt import GPT_PARAMETERS
from attn_course.checks.table import slips
from attn_course.training import count_parameters

from .answers import failure, gpt_parameters, make_example


@pytest.mark.parametrize("sizes", GPT_PARAMETERS.cases, ids=str)
def test_the_right_count_is_that_of_a_real_model(sizes):
    V, T, D, L = sizes
    with torch.device("meta"):  # one head: the number of heads changes no count
        model = GPT(GPTConfig(V, T, d_model=D, num_heads=1, num_layers=L))
    right = GPT_PARAMETERS.define(GPT_PARAMETERS.right)
    assert right(*sizes) == count_parameters(model)


def test_a_count_may_be_a_float_or_a_tensor_and_is_told_how_far_off(capsys):
    check = checks.check_gpt_parameters_fn
    check(lambda *sizes: float(gpt_parameters(*sizes)))
    check(lambda *sizes: torch.tensor(gpt_parameters(*sizes)))
    assert capsys.readouterr().out.count("✅") == 2
    assert "it is '1' (str), not a number" in failure(check, lambda *sizes: "1")
    assert "it is 462,433, 1 too many" in failure(
        check, lambda *s: gpt_parameters(*s) + 1
    )
    with pytest.raises(TypeError, match=r"check_gpt_parameters_fn\(gpt_parameters\)"):
        check(462432)


def test_a_pair_is_a_tuple_of_two_and_each_part_is_judged():
    check = checks.check_make_example_fn
    triple = failure(check, lambda *args: (*make_example(*args), 0))
    assert "it is tuple, not a tuple of two: `return inputs, targets`" in triple
    off = failure(check, lambda ids, start, T: (ids[start : start + T], ids[:T]))
    assert "its targets: entry [0] is" in off


def test_writing_into_a_slice_of_ids_is_caught():
    def overwrites(ids, start, T):
        inputs, targets = make_example(ids, start, T)
        inputs[0] = -1
        return inputs, targets

    message = failure(checks.check_make_example_fn, overwrites)
    assert "changed its input ids" in message and "a slice of ids is a view" in message


def test_slips_edits_the_right_code_in_turn():
    (slip,) = slips(
        "    return a + b\n", "swap: a -> c; c + b -> b + c | + b -> -- {x}"
    )
    assert slip.bodies == ("    return b + c\n", "    return a \n")
    assert slip.says == "{x}"
    with pytest.raises(AssertionError, match="no 'z' to edit"):
        slips("    return a\n", "typo: z -> y -- never")
