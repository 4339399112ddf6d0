"""``attn_course.modern``: RMSNorm against ``torch.nn.RMSNorm``, SwiGLU against its
formula, attention with sinks against the softmax with an extra column written out."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attn_course import (
    RMSNorm,
    SwiGLU,
    attention_with_sinks,
    causal_mask,
    scaled_dot_product_attention,
    swiglu_hidden,
)


@pytest.mark.parametrize(
    ("dtype", "tol"),
    [
        # Same formula, different order of operations: float64 rounding only.
        (torch.float64, 1e-12),
        # float32: a few ulps of outputs of order 1 (rsqrt against 1 / sqrt, and a
        # mean summed in another order), 1.2e-7 each.
        (torch.float32, 1e-6),
    ],
)
@pytest.mark.parametrize("eps", [1e-6, 1e-2])
def test_rmsnorm_equals_torchs(dtype, tol, eps):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(3, 5, 16, generator=gen, dtype=dtype)
    ours = RMSNorm(16, eps=eps).to(dtype)
    with torch.no_grad():
        ours.weight.copy_(torch.randn(16, generator=gen))
    theirs = nn.RMSNorm(16, eps=eps).to(dtype)
    theirs.load_state_dict(ours.state_dict())
    torch.testing.assert_close(ours(x), theirs(x), atol=tol, rtol=tol)


def test_rmsnorm_starts_with_a_weight_of_ones_and_checks_its_arguments():
    assert torch.equal(RMSNorm(4).weight, torch.ones(4))
    with pytest.raises(TypeError, match="d must be an int, got float"):
        RMSNorm(4.0)
    with pytest.raises(ValueError, match="eps must be a positive finite number"):
        RMSNorm(4, eps=0)


def test_swiglu_equals_its_formula_written_with_functional():
    torch.manual_seed(0)
    D, h = 8, 24
    ff = SwiGLU(D, h).double()
    x = torch.randn(2, 5, D, dtype=torch.float64)
    gate = F.linear(x, ff.gate_proj.weight)
    up = F.linear(x, ff.up_proj.weight)
    expected = F.linear(gate * torch.sigmoid(gate) * up, ff.down_proj.weight)
    # SiLU is x * sigmoid(x); float64 rounding only.
    torch.testing.assert_close(ff(x), expected, atol=1e-12, rtol=1e-12)
    assert [name for name, _ in ff.named_parameters()] == [
        "gate_proj.weight",
        "up_proj.weight",
        "down_proj.weight",
    ]


@pytest.mark.parametrize("D", [8, 64, 96, 768])
def test_swiglu_hidden_matches_a_gelu_networks_weights(D):
    h = swiglu_hidden(4 * D)
    gelu_weights, swiglu_weights = 2 * D * 4 * D, 3 * D * h
    assert h % 8 == 0
    # At least as many weights, and fewer than one more multiple of 8 adds.
    assert 0 <= swiglu_weights - gelu_weights < 3 * D * 8


def test_swiglu_hidden_rounds_up_to_the_multiple():
    assert swiglu_hidden(12, multiple_of=1) == 8
    assert swiglu_hidden(12, multiple_of=3) == 9
    with pytest.raises(TypeError, match="d_ff must be an int"):
        swiglu_hidden(4.5)


# --- attention with sinks


def reference_with_sinks(query, key, value, sink_logits, allowed):
    """The masked scores written out, a column of sinks, softmax, drop the column."""
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    scores = scores.masked_fill(~allowed, float("-inf"))
    B, H, T_q, _ = scores.shape
    column = sink_logits.view(1, H, 1, 1).expand(B, H, T_q, 1)
    weights = torch.softmax(torch.cat([scores, column], dim=-1), dim=-1)[..., :-1]
    return weights @ value, weights


def qkv(T_q=5, T_k=5, H=3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    shapes = [(2, H, T_q, 4), (2, H, T_k, 4), (2, H, T_k, 6)]
    return [torch.randn(s, generator=gen, dtype=torch.float64) for s in shapes]


@pytest.mark.parametrize("mask", ["none", "causal", "bool"])
def test_attention_with_sinks_equals_the_softmax_with_an_extra_column(mask):
    query, key, value = qkv(T_q=4, T_k=6)
    sinks = torch.tensor([-1.0, 0.5, 2.0], dtype=torch.float64)
    allowed = torch.ones(4, 6, dtype=torch.bool)
    given = {}
    if mask == "causal":
        allowed = causal_mask(4, 6)
        given = {"is_causal": True}
    elif mask == "bool":
        allowed = torch.rand(2, 1, 4, 6, generator=torch.Generator().manual_seed(1))
        allowed = allowed > 0.4
        given = {"attn_mask": allowed}
    out, weights = attention_with_sinks(
        query, key, value, sinks, return_weights=True, **given
    )
    expected_out, expected_weights = reference_with_sinks(
        query, key, value, sinks, allowed
    )
    # float64, the same operations in another grouping: rounding only.
    torch.testing.assert_close(weights, expected_weights, atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(out, expected_out, atol=1e-12, rtol=1e-12)
    assert (weights.sum(dim=-1) < 1).all()


def test_a_very_negative_sink_is_plain_attention():
    query, key, value = qkv()
    sinks = torch.full((3,), -1e4, dtype=torch.float64)  # exp(-1e4) underflows to 0
    torch.testing.assert_close(
        attention_with_sinks(query, key, value, sinks, is_causal=True),
        scaled_dot_product_attention(query, key, value, is_causal=True),
        atol=1e-12,
        rtol=1e-12,
    )


def test_a_query_with_every_key_masked_reads_zeros_not_nan():
    query, key, value = qkv()
    blocked = torch.zeros(5, 5, dtype=torch.bool)
    blocked[1:] = True
    out = attention_with_sinks(query, key, value, torch.zeros(3), attn_mask=blocked)
    assert torch.equal(out[:, :, 0], torch.zeros_like(out[:, :, 0]))
    assert not out.isnan().any()


def test_the_sink_logits_get_gradients():
    query, key, value = qkv()
    sinks = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    attention_with_sinks(query, key, value, sinks).square().sum().backward()
    assert sinks.grad is not None and (sinks.grad != 0).all()


def test_attention_with_sinks_errors():
    query, key, value = qkv()
    with pytest.raises(ValueError, match=r"shape \(H,\) = \(3,\).*got shape \(2,\)"):
        attention_with_sinks(query, key, value, torch.zeros(2))
    with pytest.raises(TypeError, match="sink_logits must be a torch.Tensor"):
        attention_with_sinks(query, key, value, [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="query needs a head dimension"):
        attention_with_sinks(query[0, 0], key[0, 0], value[0, 0], torch.zeros(1))
    with pytest.raises(ValueError, match="both attn_mask and is_causal"):
        attention_with_sinks(
            query, key, value, torch.zeros(3), is_causal=True, attn_mask=causal_mask(5)
        )
