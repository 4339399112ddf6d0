"""Every error of ``attn_course.modules`` names the values received and the fix."""

import re

import pytest
import torch

from attn_course import (
    CausalAttention,
    CrossAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SelfAttentionV1,
    SelfAttentionV2,
    padding_mask,
)


@pytest.fixture(autouse=True)
def _keep_global_rng():
    """Building modules draws from the global RNG; restore it afterwards."""
    with torch.random.fork_rng():
        yield


def mha():
    torch.manual_seed(0)
    return MultiHeadAttention(3, 4, 6, 0.0, 2)


# --------------------------------------------------------------------------------------
# Constructor arguments
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [MultiHeadAttention, CrossAttention])
def test_d_out_not_divisible_by_num_heads(cls):
    expected = (
        "d_out=8 is not divisible by num_heads=3; choose num_heads in {1, 2, 4, 8}"
    )
    with pytest.raises(ValueError, match=re.escape(expected)):
        if cls is MultiHeadAttention:
            cls(d_in=3, d_out=8, context_length=6, dropout=0.0, num_heads=3)
        else:
            cls(d_in=3, d_out=8, num_heads=3)


def test_swapped_num_heads_names_both_values():
    # num_heads=12 was meant for another argument: the message says so, with both.
    with pytest.raises(ValueError) as info:
        MultiHeadAttention(3, 8, 6, 0.1, 12)
    message = str(info.value)
    assert "d_out=8 is not divisible by num_heads=12" in message
    assert "MultiHeadAttention(d_in=3, d_out=8, context_length=6, dropout=0.1, " in (
        message
    )
    assert "swapped" in message


def test_num_heads_swapped_with_dropout_names_both_values():
    with pytest.raises(ValueError) as info:
        MultiHeadAttention(3, 8, 6, 2, 0.1)
    message = str(info.value)
    assert "num_heads must be a positive int, got num_heads=0.1" in message
    assert "dropout=2, num_heads=0.1" in message


CONSTRUCTORS = {
    "SelfAttentionV1": (SelfAttentionV1, {"d_in": 3, "d_out": 2}),
    "SelfAttentionV2": (SelfAttentionV2, {"d_in": 3, "d_out": 2}),
    "CausalAttention": (
        CausalAttention,
        {"d_in": 3, "d_out": 2, "context_length": 6, "dropout": 0.0},
    ),
    "MultiHeadAttentionWrapper": (
        MultiHeadAttentionWrapper,
        {"d_in": 3, "d_out": 2, "context_length": 6, "dropout": 0.0, "num_heads": 2},
    ),
    "MultiHeadAttention": (
        MultiHeadAttention,
        {"d_in": 3, "d_out": 2, "context_length": 6, "dropout": 0.0, "num_heads": 2},
    ),
    "CrossAttention": (
        CrossAttention,
        {"d_in": 3, "d_out": 2, "num_heads": 2, "d_context": 4},
    ),
}
SIZE_CASES = [
    (name, arg, bad)
    for name, (_, kwargs) in CONSTRUCTORS.items()
    for arg in kwargs
    if arg != "dropout"
    for bad in (0, -1, 2.0)
]


@pytest.mark.parametrize("name, arg, bad", SIZE_CASES)
def test_sizes_must_be_positive_ints(name, arg, bad):
    cls, kwargs = CONSTRUCTORS[name]
    expected = f"{arg} must be a positive int, got {arg}={bad!r}"
    with pytest.raises(ValueError, match=re.escape(expected)):
        cls(**{**kwargs, arg: bad})


DROPOUT_CASES = [
    (name, bad)
    for name in CONSTRUCTORS
    if name.startswith(("Causal", "Multi", "Cross"))
    for bad in (-0.1, 1.0, 1.5, True, "0.1")
]


@pytest.mark.parametrize("name, bad", DROPOUT_CASES)
def test_dropout_must_be_in_0_1(name, bad):
    cls, kwargs = CONSTRUCTORS[name]
    expected = f"dropout must be a number in [0, 1), got dropout={bad!r}"
    with pytest.raises(ValueError, match=re.escape(expected)):
        cls(**{**kwargs, "dropout": bad})


# --------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------


def built(name):
    torch.manual_seed(0)
    cls, kwargs = CONSTRUCTORS[name]
    return cls(**kwargs)


def call(module, x):
    if isinstance(module, CrossAttention):
        return module(x, torch.zeros(2, 5, 4))
    return module(x)


@pytest.mark.parametrize("name", list(CONSTRUCTORS))
def test_wrong_width(name):
    expected = "x has width 4 but the module was built with d_in=3"
    with pytest.raises(ValueError, match=re.escape(expected)):
        call(built(name), torch.zeros(2, 5, 4))


@pytest.mark.parametrize("name", list(CONSTRUCTORS))
def test_wrong_rank(name):
    expected = "got (1, 2, 5, 3); merge the extra dimensions into the batch, e.g. "
    with pytest.raises(ValueError, match=re.escape(expected)) as info:
        call(built(name), torch.zeros(1, 2, 5, 3))
    assert str(info.value).startswith("expected x of shape (B, T, d_in)")
    assert str(info.value).endswith("x.reshape(-1, 5, 3)")


@pytest.mark.parametrize("name", ["MultiHeadAttention", "CrossAttention"])
def test_two_dimensional_input_is_rejected_with_the_fix(name):
    expected = "got (5, 3); for one sequence use x.unsqueeze(0)"
    with pytest.raises(ValueError, match=re.escape(expected)):
        call(built(name), torch.zeros(5, 3))


@pytest.mark.parametrize("name", list(CONSTRUCTORS))
def test_input_must_be_floating_point(name):
    expected = "x must be floating point, got dtype torch.int64; convert it first"
    with pytest.raises(TypeError, match=re.escape(expected)):
        call(built(name), torch.zeros(2, 5, 3, dtype=torch.long))


@pytest.mark.parametrize("name", list(CONSTRUCTORS))
def test_input_must_be_a_tensor(name):
    with pytest.raises(TypeError, match="x must be a torch.Tensor, got list"):
        call(built(name), [[1.0, 2.0, 3.0]])


@pytest.mark.parametrize(
    "name", ["CausalAttention", "MultiHeadAttentionWrapper", "MultiHeadAttention"]
)
def test_input_longer_than_context_length(name):
    expected = (
        "input has T=9 tokens but context_length=6; build the module with "
        "context_length >= 9 or feed at most 6 tokens"
    )
    with pytest.raises(ValueError, match=re.escape(expected)):
        built(name)(torch.zeros(2, 9, 3))


def test_bidirectional_mha_also_bounds_the_length():
    torch.manual_seed(0)
    module = MultiHeadAttention(3, 4, 6, 0.0, 2, causal=False)
    with pytest.raises(ValueError, match=re.escape("input has T=7 tokens")):
        module(torch.zeros(1, 7, 3))


def test_key_padding_mask_of_the_wrong_shape():
    expected = "key_padding_mask must have shape (B, T) = (2, 5), got (2, 1, 1, 5)"
    mask = padding_mask([5, 3])[:, None, None, :]
    with pytest.raises(ValueError, match=re.escape(expected)):
        mha()(torch.zeros(2, 5, 3), key_padding_mask=mask)


def test_key_padding_mask_of_the_wrong_dtype():
    expected = (
        "key_padding_mask must be bool (True = real token), got dtype torch.int64"
    )
    mask = padding_mask([5, 3]).long()
    with pytest.raises(ValueError, match=re.escape(expected)):
        mha()(torch.zeros(2, 5, 3), key_padding_mask=mask)


def test_key_padding_mask_not_a_tensor():
    with pytest.raises(TypeError, match="key_padding_mask must be a torch.Tensor"):
        mha()(torch.zeros(2, 5, 3), key_padding_mask=[[True] * 5] * 2)


def test_cross_attention_key_padding_mask_follows_the_context():
    module = built("CrossAttention")
    expected = "key_padding_mask must have shape (B, T_k) = (2, 5), got (2, 3)"
    with pytest.raises(ValueError, match=re.escape(expected)):
        module(
            torch.zeros(2, 3, 3),
            torch.zeros(2, 5, 4),
            key_padding_mask=padding_mask([3, 3]),
        )


def test_cross_attention_context_width_mismatch():
    expected = "context has width 5 but the module was built with d_context=4"
    with pytest.raises(ValueError, match=re.escape(expected)):
        built("CrossAttention")(torch.zeros(2, 3, 3), torch.zeros(2, 5, 5))


def test_cross_attention_batch_size_mismatch():
    expected = "x and context must have the same batch size B, got x (2, 3, 3) and "
    with pytest.raises(ValueError, match=re.escape(expected)):
        built("CrossAttention")(torch.zeros(2, 3, 3), torch.zeros(1, 5, 4))
