"""What the tables of Chapter 6 (tests/test_tables.py) leave out: the reference of
the shapes exercise, the listing of a dict's wrong entries, and wrong calls."""

import pytest
import torch

from attn_course import CrossAttention, checks
from attn_course.checks.encoder_decoder import SHAPES

from .answers import SIZES, failure, right_shapes


@pytest.mark.parametrize("sizes", [SIZES, dict(SIZES, d_in=12, d_memory=20, T_k=3)])
def test_the_shapes_of_the_table_are_those_of_the_module(sizes):
    d_in, d_memory, d_out, H, B, T_q, T_k = sizes.values()  # in SHAPES' order
    module = CrossAttention(d_in, d_out, H, d_memory=d_memory)
    x, memory = torch.zeros(B, T_q, d_in), torch.zeros(B, T_k, d_memory)
    output, weights = module(x, memory, return_weights=True)
    names = ("W_query", "W_key", "W_value", "out_proj")
    real = {name: tuple(getattr(module, name).weight.shape) for name in names}
    real.update(weights=tuple(weights.shape), output=tuple(output.shape))
    real["num_parameters"] = sum(p.numel() for p in module.parameters())
    right = SHAPES.define(SHAPES.right)
    assert {key: right(key, *sizes.values()) for key in real} == real


def test_every_wrong_entry_is_listed_without_the_right_shape():
    answer = dict(right_shapes(), W_key=(16, 96), W_value=(96, 64), weights=(3, 5, 7))
    message = failure(checks.check_cross_attention_shapes, answer, **SIZES)
    assert "3 of 7 predictions are wrong" in message
    assert "'W_key', (16, 96): one nn.Linear makes the features of all" in message
    assert "'W_value', (96, 64): that is the transpose" in message
    assert "(64, 96)" not in message and "(3, 4, 5, 7)" not in message
    del answer["output"]
    assert "lacks the keys ['output']" in failure(
        checks.check_cross_attention_shapes, answer, **SIZES
    )


def test_a_mask_of_shape_b_1_t_t_t_s_passes(capsys):
    checks.check_cross_attention_mask(
        lambda src, T_t: (src != 0)[:, None, None, :].expand(-1, 1, T_t, -1)
    )
    assert capsys.readouterr().out.startswith("✅")


def test_a_wrong_call_is_a_type_or_value_error():
    with pytest.raises(TypeError, match="got bool"):
        checks.check_future_detector(True)
    with pytest.raises(ValueError, match="T_q must be at least 1"):
        checks.check_cross_attention_shapes({}, **dict(SIZES, T_q=0))
