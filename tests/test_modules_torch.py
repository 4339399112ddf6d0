"""``MultiHeadAttention`` and ``CrossAttention`` against PyTorch's own attention.

``torch.nn.MultiheadAttention`` packs the three projections into ``in_proj_weight``
(rows: queries, keys, values) and uses the opposite bool-mask convention: ``True`` =
*blocked*, so our masks (``True`` = may attend) are passed inverted, ``~mask``.
"""

import random

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attn_course import CrossAttention, MultiHeadAttention, causal_mask, padding_mask

N_CONFIGS = 20
# float32, values of order 1, sums over at most 16 terms in a different order than
# PyTorch's kernels: differences are a few float32 ulps, far below 1e-5.
TOL = {"atol": 1e-5, "rtol": 1e-5}


@pytest.fixture(autouse=True)
def _keep_global_rng():
    """Tests seed the global RNG to build modules; restore it afterwards."""
    with torch.random.fork_rng():
        yield


def random_config(seed):
    """Sizes, head count, bias, batch size, causality and padding for one case."""
    rng = random.Random(seed)
    num_heads = rng.randint(1, 4)
    config = {
        "num_heads": num_heads,
        "d_out": num_heads * rng.randint(1, 4),
        "T": rng.randint(1, 7),
        "B": rng.randint(1, 3),
        "qkv_bias": rng.random() < 0.5,
        "causal": rng.random() < 0.5,
        "padded": rng.random() < 0.5,
    }
    # At least one real token per sequence, and key 0 is always real, so no query
    # is left with no key at all (PyTorch's module returns NaN for such a query).
    config["lengths"] = [rng.randint(1, config["T"]) for _ in range(config["B"])]
    return config


def torch_mha_like(ours, kdim=None):
    """An nn.MultiheadAttention holding the same weights as ``ours``."""
    embed_dim = ours.d_out
    torch_mha = nn.MultiheadAttention(
        embed_dim, ours.num_heads, bias=True, batch_first=True, kdim=kdim, vdim=kdim
    )
    projections = (ours.W_query, ours.W_key, ours.W_value)
    with torch.no_grad():
        if torch_mha._qkv_same_embed_dim:
            weight = torch.cat([lin.weight for lin in projections])  # (3 D, D)
            torch_mha.in_proj_weight.copy_(weight)
        else:  # keys and values of another width: three separate matrices
            torch_mha.q_proj_weight.copy_(ours.W_query.weight)
            torch_mha.k_proj_weight.copy_(ours.W_key.weight)
            torch_mha.v_proj_weight.copy_(ours.W_value.weight)
        if ours.W_query.bias is None:
            torch_mha.in_proj_bias.zero_()
        else:
            torch_mha.in_proj_bias.copy_(torch.cat([lin.bias for lin in projections]))
        torch_mha.out_proj.weight.copy_(ours.out_proj.weight)
        torch_mha.out_proj.bias.copy_(ours.out_proj.bias)
    return torch_mha


def test_random_configs_cover_the_interesting_cases():
    configs = [random_config(seed) for seed in range(N_CONFIGS)]
    assert {c["num_heads"] for c in configs} == {1, 2, 3, 4}
    assert {c["B"] for c in configs} == {1, 2, 3}
    for key in ("qkv_bias", "causal", "padded"):
        assert {c[key] for c in configs} == {False, True}, key
    assert any(c["padded"] and min(c["lengths"]) < c["T"] for c in configs)
    assert any(c["causal"] and c["padded"] for c in configs)


@pytest.mark.parametrize("seed", range(N_CONFIGS))
def test_mha_matches_torch_multihead_attention(seed):
    c = random_config(seed)
    torch.manual_seed(seed)
    D, H = c["d_out"], c["num_heads"]  # nn.MultiheadAttention needs d_in == d_out
    ours = MultiHeadAttention(D, D, 8, 0.0, H, c["qkv_bias"], causal=c["causal"])
    torch_mha = torch_mha_like(ours)
    x = torch.randn(c["B"], c["T"], c["d_out"])
    kpm = padding_mask(c["lengths"], max_len=c["T"]) if c["padded"] else None

    out, weights = ours(x, key_padding_mask=kpm, return_weights=True)
    # PyTorch's convention: True = blocked, so both masks are inverted.
    torch_kwargs = {
        "attn_mask": ~causal_mask(c["T"]) if c["causal"] else None,
        "key_padding_mask": None if kpm is None else ~kpm,
    }
    expected, expected_weights = torch_mha(
        x, x, x, need_weights=True, average_attn_weights=False, **torch_kwargs
    )
    torch.testing.assert_close(out, expected, **TOL)
    torch.testing.assert_close(weights, expected_weights, **TOL)  # (B, H, T, T)
    _, averaged = torch_mha(x, x, x, average_attn_weights=True, **torch_kwargs)
    torch.testing.assert_close(weights.mean(dim=1), averaged, **TOL)  # (B, T, T)


@pytest.mark.parametrize("seed", range(10))
def test_causal_mha_matches_torch_fused_scaled_dot_product_attention(seed):
    c = random_config(seed)
    torch.manual_seed(seed)
    d_in, H = c["d_out"] + 1, c["num_heads"]
    ours = MultiHeadAttention(d_in, c["d_out"], 8, 0.0, H, c["qkv_bias"])
    x = torch.randn(c["B"], c["T"], d_in)
    B, T, D, d = c["B"], c["T"], c["d_out"], ours.head_dim

    def heads(t):
        return t.view(B, T, H, d).transpose(1, 2)  # (B, T, D) -> (B, H, T, d)

    q, k, v = (heads(lin(x)) for lin in (ours.W_query, ours.W_key, ours.W_value))
    context = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, T, d)
    context = context.transpose(1, 2).reshape(B, T, D)  # (B, H, T, d) -> (B, T, D)
    torch.testing.assert_close(ours(x), ours.out_proj(context), **TOL)


@pytest.mark.parametrize("seed", range(8))
def test_cross_attention_matches_torch_multihead_attention(seed):
    rng = random.Random(1000 + seed)
    H = rng.randint(1, 3)
    D = H * rng.randint(1, 3)
    # Half the cases: context of another width (kdim/vdim), else the same width.
    d_context = D if seed % 2 == 0 else D + rng.randint(1, 3)
    B, T_q = rng.randint(1, 3), rng.randint(1, 4)
    T_k = T_q + rng.randint(1, 3)  # T_q != T_k
    lengths = [rng.randint(1, T_k) for _ in range(B)]
    lengths[0] = T_k - 1  # at least one sequence with padding
    torch.manual_seed(seed)
    ours = CrossAttention(D, D, H, qkv_bias=seed % 4 < 2, d_context=d_context)
    torch_mha = torch_mha_like(ours, kdim=None if d_context == D else d_context)
    x = torch.randn(B, T_q, D)
    memory = torch.randn(B, T_k, d_context)
    kpm = padding_mask(lengths, max_len=T_k)  # True = real token

    out, weights = ours(x, memory, key_padding_mask=kpm, return_weights=True)
    expected, expected_weights = torch_mha(
        x, memory, memory, key_padding_mask=~kpm, average_attn_weights=False
    )
    assert out.shape == (B, T_q, D) and weights.shape == (B, H, T_q, T_k)
    torch.testing.assert_close(out, expected, **TOL)
    torch.testing.assert_close(weights, expected_weights, **TOL)
    # Without a mask, too.
    expected = torch_mha(x, memory, memory, need_weights=False)[0]
    torch.testing.assert_close(ours(x, memory), expected, **TOL)


def test_cross_attention_query_with_only_padding_keys_gets_zeros():
    torch.manual_seed(0)
    ours = CrossAttention(4, 4, 2)
    x, memory = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    kpm = padding_mask([5, 0], max_len=5)  # second context: padding only
    out, weights = ours(x, memory, key_padding_mask=kpm, return_weights=True)
    assert not out.isnan().any()
    assert (weights[1] == 0).all()
    # The context vectors are 0, so out_proj leaves only its bias.
    torch.testing.assert_close(out[1], ours.out_proj.bias.expand(3, 4))


@pytest.mark.parametrize("causal", [True, False])
def test_mha_padding_changes_nothing_for_the_real_tokens(causal):
    """Each padded sequence gives, at its real tokens, what it gives unpadded."""
    torch.manual_seed(0)
    ours = MultiHeadAttention(3, 4, 6, 0.0, 2, qkv_bias=True, causal=causal)
    lengths = [6, 2, 4]
    x = torch.randn(3, 6, 3) * 5  # the padding positions hold large garbage
    kpm = padding_mask(lengths)
    out, weights = ours(x, key_padding_mask=kpm, return_weights=True)
    for b, n in enumerate(lengths):
        alone, alone_weights = ours(x[b : b + 1, :n], return_weights=True)
        torch.testing.assert_close(out[b : b + 1, :n], alone, atol=1e-6, rtol=1e-6)
        torch.testing.assert_close(
            weights[b : b + 1, :, :n, :n], alone_weights, atol=1e-6, rtol=1e-6
        )
        assert (weights[b, :, :, n:] == 0).all()  # no weight on padding keys
