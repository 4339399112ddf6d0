"""Masks in ``attn_course.masks``: shapes, dtypes and the True = may attend rule."""

import re

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right

from attn_course import (
    causal_mask,
    key_padding_to_attn_mask,
    padding_mask,
    scaled_dot_product_attention,
    to_additive_mask,
)


@pytest.mark.parametrize("T_q, T_k", [(1, 1), (4, 4), (2, 5), (5, 2)])
@pytest.mark.parametrize("offset", [0, 1, 3])
def test_causal_mask_lets_query_i_see_keys_up_to_offset_plus_i(T_q, T_k, offset):
    mask = causal_mask(T_q, T_k, offset=offset)
    assert mask.shape == (T_q, T_k)
    assert mask.dtype == torch.bool
    for i in range(T_q):
        for j in range(T_k):
            assert mask[i, j] == (j <= offset + i)  # query i sits at key offset + i
    if offset == 0:  # the default: the top-left triangle
        assert torch.equal(causal_mask(T_q, T_k), mask)


@pytest.mark.parametrize("T_q, T_k", [(1, 6), (3, 7), (5, 5)])
def test_causal_mask_of_a_cache_is_the_last_rows_of_the_square_mask(T_q, T_k):
    """offset=T_k - T_q is PyTorch's bottom-right mask, causal_lower_right."""
    past = T_k - T_q
    mask = causal_mask(T_q, T_k, offset=past)
    assert torch.equal(mask, causal_mask(T_k)[past:])
    gen = torch.Generator().manual_seed(0)
    query = torch.randn(2, T_q, 4, generator=gen)
    key, value = torch.randn(2, 2, T_k, 4, generator=gen)
    ours = scaled_dot_product_attention(query, key, value, attn_mask=mask)
    lower_right = causal_lower_right(T_q, T_k)
    expected = F.scaled_dot_product_attention(query, key, value, lower_right)
    torch.testing.assert_close(ours, expected, atol=1e-6, rtol=1e-6)


def test_causal_mask_defaults_to_square_on_the_given_device():
    mask = causal_mask(3, device="cpu")
    assert torch.equal(mask, causal_mask(3, 3))
    assert mask.device == torch.device("cpu")


@pytest.mark.parametrize("lengths", [[3, 1, 0], (3, 1, 0), torch.tensor([3, 1, 0])])
def test_padding_mask_marks_the_real_tokens(lengths):
    mask = padding_mask(lengths)
    expected = torch.tensor(
        [[True, True, True], [True, False, False], [False, False, False]]
    )
    assert mask.dtype == torch.bool
    assert torch.equal(mask, expected)


def test_padding_mask_pads_to_max_len():
    mask = padding_mask([2, 4], max_len=6)
    assert mask.shape == (2, 6)
    assert mask.sum(dim=1).tolist() == [2, 4]
    assert torch.equal(mask[0], torch.tensor([True] * 2 + [False] * 4))


def test_key_padding_to_attn_mask_is_a_b11t_view():
    mask = padding_mask([2, 3])  # (B, T_k)
    attn_mask = key_padding_to_attn_mask(mask)  # (B, 1, 1, T_k)
    assert attn_mask.shape == (2, 1, 1, 3)
    assert attn_mask.dtype == torch.bool
    assert torch.equal(attn_mask[:, 0, 0], mask)


def test_to_additive_mask_values_and_dtype():
    mask = torch.tensor([[True, False], [False, True]])
    additive = to_additive_mask(mask)
    assert additive.dtype == torch.float32
    assert additive.shape == mask.shape
    assert torch.equal(additive, torch.tensor([[0.0, -torch.inf], [-torch.inf, 0.0]]))
    assert to_additive_mask(mask, dtype=torch.float64).dtype == torch.float64


def test_sizes_may_be_integer_tensors():
    """A size read off a tensor, e.g. lengths.max(), is an int like any other."""
    assert torch.equal(causal_mask(torch.tensor(3)), causal_mask(3))
    assert torch.equal(padding_mask([1], max_len=torch.tensor(2)), padding_mask([1], 2))


# --- Errors: each names what it received and how to fix it; "same mistake" rows use
# the words that test_functional.py and test_modules.py expect for it there.
ERRORS = {
    "causal_mask of size 0 (same mistake)": (
        lambda: causal_mask(0),
        ValueError,
        ["T_q must be at least 1, got T_q=0", "sequence length"],
    ),
    "causal_mask with negative T_k": (
        lambda: causal_mask(3, -1),
        ValueError,
        ["T_k must be at least 1, got T_k=-1", "sequence length"],
    ),
    "causal_mask of float size (same mistake)": (
        lambda: causal_mask(2.5),
        TypeError,
        ["T_q must be an int, got float 2.5", "e.g. T_q=2"],
    ),
    "causal_mask of bool size": (
        lambda: causal_mask(3, True),
        TypeError,
        ["T_k must be an int, got bool True"],
    ),
    "causal_mask with a negative offset": (
        lambda: causal_mask(2, 4, offset=-1),
        ValueError,
        ["offset must be at least 0, got offset=-1", "position of query 0"],
    ),
    "causal_mask with a float offset": (
        lambda: causal_mask(2, 4, offset=1.0),
        TypeError,
        ["offset must be an int, got float 1.0"],
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
    "padding_mask with a float max_len (same mistake)": (
        lambda: padding_mask([3, 1], max_len=4.0),
        TypeError,
        ["max_len must be an int, got float 4.0", "e.g. max_len=2"],
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
    "key_padding_to_attn_mask with a 3-D mask (same mistake)": (
        lambda: key_padding_to_attn_mask(torch.ones(2, 3, 4, dtype=torch.bool)),
        ValueError,
        [
            "mask must be a (B, T_k) padding mask, got shape (2, 3, 4)",
            "padding_mask(lengths)",
        ],
    ),
    "key_padding_to_attn_mask with a float mask (same mistake)": (
        lambda: key_padding_to_attn_mask(torch.ones(2, 3)),
        TypeError,
        [
            re.compile(r"^mask must be bool \(True = real token\), got dtype "),
            "got dtype torch.float32; if 1 marks the positions that may be attended "
            "to, use mask.bool()",
        ],
    ),
    "key_padding_to_attn_mask with a list (same mistake)": (
        lambda: key_padding_to_attn_mask([[True, False]]),
        TypeError,
        [
            "mask must be a torch.Tensor, got list; build it with "
            "attn_course.padding_mask(lengths)"
        ],
    ),
    "to_additive_mask with a list (same mistake)": (
        lambda: to_additive_mask([True, False]),
        TypeError,
        ["mask must be a torch.Tensor, got list", "causal_mask(T)"],
    ),
    "to_additive_mask with an integer mask (same mistake)": (
        lambda: to_additive_mask(torch.ones(2, 2, dtype=torch.int64)),
        TypeError,
        [
            "mask must be bool (True = may attend)",
            "got dtype torch.int64; if 1 marks the positions that may be attended "
            "to, use mask.bool()",
        ],
    ),
    "to_additive_mask with an integer dtype": (
        lambda: to_additive_mask(causal_mask(2), dtype=torch.int64),
        TypeError,
        ["got torch.int64", "torch.float32"],
    ),
}


@pytest.mark.parametrize("call, error, fragments", ERRORS.values(), ids=list(ERRORS))
def test_error_names_the_values_and_the_fix(call, error, fragments, raises_teaching):
    raises_teaching(call, error, fragments)
