"""Every error names the values it received and says how to fix them."""

import re

import pytest
import torch

from attn_course import (
    causal_mask,
    key_padding_to_attn_mask,
    padding_mask,
    scaled_dot_product_attention,
    to_additive_mask,
)


def qkv(q_shape=(2, 3, 4), k_shape=(2, 5, 4), v_shape=(2, 5, 6)):
    gen = torch.Generator().manual_seed(0)
    return [torch.randn(shape, generator=gen) for shape in (q_shape, k_shape, v_shape)]


def sdpa(*args, **kwargs):
    """Call scaled_dot_product_attention on the default inputs, replacing some."""
    query, key, value = qkv()
    inputs = {"query": query, "key": key, "value": value, **kwargs}
    return scaled_dot_product_attention(*args, **inputs)


# (call, exception type, what the message must contain: received values, then fix)
CASES = {
    "query not a tensor": (
        lambda: sdpa(query=[[1.0, 2.0]]),
        TypeError,
        ["query must be a torch.Tensor, got list", "torch.tensor(query)"],
    ),
    "integer key": (
        lambda: sdpa(key=torch.ones(2, 5, 4, dtype=torch.int64)),
        TypeError,
        ["key must be floating point, got dtype torch.int64", "key.float()"],
    ),
    "mixed dtypes": (
        lambda: sdpa(value=torch.ones(2, 5, 6, dtype=torch.float64)),
        TypeError,
        [
            "query torch.float32, key torch.float32, value torch.float64",
            "key = key.to(query.dtype)",
        ],
    ),
    "1-D query": (
        lambda: sdpa(query=torch.ones(4)),
        ValueError,
        ["at least 2 dimensions", "got shape (4,)", "query.unsqueeze(0)", "(1, 4)"],
    ),
    "query and key widths differ": (
        lambda: sdpa(key=torch.ones(2, 5, 3)),
        ValueError,
        [
            "query (2, 3, 4) with E=4 and key (2, 5, 3) with E=3",
            "project both to the same width",
        ],
    ),
    "key and value lengths differ": (
        lambda: sdpa(value=torch.ones(2, 6, 6)),
        ValueError,
        [
            "key (2, 5, 4) with T_k=5 and value (2, 6, 6) with T_k=6",
            "same tokens as keys and values",
        ],
    ),
    "batch dimensions do not broadcast": (
        lambda: sdpa(key=torch.ones(3, 5, 4), value=torch.ones(3, 5, 6)),
        ValueError,
        ["got query (2,), key (3,) and value (3,)", "equal, or 1 where"],
    ),
    "mask not a tensor": (
        lambda: sdpa(attn_mask=[[True] * 5] * 3),
        TypeError,
        ["attn_mask must be a torch.Tensor, got list", "dtype=torch.bool"],
    ),
    "integer mask": (
        lambda: sdpa(attn_mask=torch.ones(3, 5, dtype=torch.int64)),
        TypeError,
        ["got dtype torch.int64", "attn_mask.bool()"],
    ),
    "mask of the wrong size": (
        lambda: sdpa(attn_mask=torch.ones(3, 4, dtype=torch.bool)),
        ValueError,
        [
            "attn_mask of shape (3, 4) does not broadcast to the scores shape "
            "(2, 3, 5)",
            "give it the shape (T_q, T_k), (B, T_q, T_k) or (B, H, T_q, T_k)",
        ],
    ),
    "mask larger than the scores": (
        lambda: sdpa(attn_mask=torch.ones(4, 2, 3, 5, dtype=torch.bool)),
        ValueError,
        [
            "attn_mask of shape (4, 2, 3, 5) does not broadcast to the scores shape "
            "(2, 3, 5)",
            "give it the shape",
        ],
    ),
    "(B, T_k) padding mask against 4-D scores": (
        lambda: scaled_dot_product_attention(
            *qkv((2, 4, 3, 8), (2, 4, 5, 8), (2, 4, 5, 8)),
            attn_mask=torch.ones(2, 5, dtype=torch.bool),
        ),
        ValueError,
        [
            "attn_mask of shape (2, 5) does not broadcast to the scores shape "
            "(2, 4, 3, 5)",
            "attn_course.key_padding_to_attn_mask(attn_mask)",
        ],
    ),
    "(B, T_k) padding mask against 3-D scores": (
        lambda: sdpa(attn_mask=torch.ones(2, 5, dtype=torch.bool)),
        ValueError,
        ["attn_mask of shape (2, 5)", "(B, 1, T_k) with attn_mask[:, None, :]"],
    ),
    "mask and is_causal together": (
        lambda: sdpa(attn_mask=torch.ones(3, 5, dtype=torch.bool), is_causal=True),
        ValueError,
        ["both attn_mask and is_causal=True", "mask & causal_mask(T_q, T_k)"],
    ),
    "dropout_p = 1": (
        lambda: sdpa(dropout_p=1.0),
        ValueError,
        ["dropout_p must be in [0, 1), got dropout_p=1.0", "use e.g. 0.1"],
    ),
    "negative dropout_p": (
        lambda: sdpa(dropout_p=-0.1),
        ValueError,
        ["got dropout_p=-0.1", "0.0 for no dropout"],
    ),
    "dropout_p not a number": (
        lambda: sdpa(dropout_p="0.1"),
        TypeError,
        ["dropout_p must be a number, got str", "dropout_p=0.1"],
    ),
    "zero scale": (
        lambda: sdpa(scale=0.0),
        ValueError,
        ["positive finite number, got scale=0.0", "scale=None for 1/sqrt(E) = 0.5"],
    ),
    "negative scale": (
        lambda: sdpa(scale=-2),
        ValueError,
        ["got scale=-2", "scale=1.0 for plain dot products"],
    ),
    "infinite scale": (
        lambda: sdpa(scale=float("inf")),
        ValueError,
        ["got scale=inf", "scale=None"],
    ),
    "scale not a number": (
        lambda: sdpa(scale=torch.tensor(0.5)),
        TypeError,
        ["scale must be a number, got Tensor", "scale=None"],
    ),
    "causal_mask of size 0": (
        lambda: causal_mask(0),
        ValueError,
        ["T_q must be at least 1, got T_q=0", "sequence length"],
    ),
    "causal_mask with negative T_k": (
        lambda: causal_mask(3, -1),
        ValueError,
        ["T_k must be at least 1, got T_k=-1", "sequence length"],
    ),
    "causal_mask of float size": (
        lambda: causal_mask(2.5),
        TypeError,
        ["T_q must be an int, got float 2.5", "T_q=4"],
    ),
    "padding_mask with a negative length": (
        lambda: padding_mask([3, -1]),
        ValueError,
        ["lengths must be >= 0, got [3, -1]", "real tokens"],
    ),
    "padding_mask with a length above max_len": (
        lambda: padding_mask([3, 5], max_len=4),
        ValueError,
        ["max_len=4: lengths=[3, 5]", "max_len >= 5"],
    ),
    "padding_mask with max_len 0": (
        lambda: padding_mask([0], max_len=0),
        ValueError,
        ["max_len must be at least 1, got max_len=0", "sequence length"],
    ),
    "padding_mask with all lengths 0": (
        lambda: padding_mask([0, 0]),
        ValueError,
        ["every length is 0 (lengths=[0, 0])", "pass max_len >= 1"],
    ),
    "padding_mask with no lengths": (
        lambda: padding_mask([]),
        ValueError,
        ["got shape (0,)", "padding_mask([3, 1])"],
    ),
    "padding_mask with 2-D lengths": (
        lambda: padding_mask(torch.ones(2, 2, dtype=torch.int64)),
        ValueError,
        ["got shape (2, 2)", "padding_mask([3, 1])"],
    ),
    "padding_mask with float lengths": (
        lambda: padding_mask([2.0, 1.5]),
        TypeError,
        ["got dtype torch.float32", "lengths.long()"],
    ),
    "padding_mask with ragged lengths": (
        lambda: padding_mask([[3], [1, 2]]),
        TypeError,
        ["got [[3], [1, 2]]", "padding_mask([3, 1])"],
    ),
    "padding_mask with an int": (
        lambda: padding_mask(3),
        TypeError,
        ["got int", "padding_mask([3, 1])"],
    ),
    "key_padding_to_attn_mask with a 3-D mask": (
        lambda: key_padding_to_attn_mask(torch.ones(2, 3, 4, dtype=torch.bool)),
        ValueError,
        ["(B, T_k) padding mask, got shape (2, 3, 4)", "padding_mask(lengths)"],
    ),
    "key_padding_to_attn_mask with a float mask": (
        lambda: key_padding_to_attn_mask(torch.ones(2, 3)),
        TypeError,
        ["got dtype torch.float32", "mask.bool()"],
    ),
    "to_additive_mask with a list": (
        lambda: to_additive_mask([True, False]),
        TypeError,
        ["mask must be a torch.Tensor, got list", "causal_mask(T)"],
    ),
    "to_additive_mask with an integer dtype": (
        lambda: to_additive_mask(causal_mask(2), dtype=torch.int64),
        TypeError,
        ["got torch.int64", "torch.float32"],
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_error_names_the_values_and_the_fix(case):
    call, error, fragments = CASES[case]
    received, *fixes = fragments
    with pytest.raises(error, match=re.escape(received)) as info:
        call()
    for fix in fixes:
        assert fix in str(info.value)
