"""``attn_course.recurrence``: causal linear attention and the delta rule, each form
against the others and against a plain loop over tokens written here."""

import pytest
import torch
import torch.nn.functional as F

from attn_course import (
    causal_linear_attention,
    delta_rule,
    hybrid_cache_bytes,
    state_numbers,
)
from attn_course.recurrence import HYBRID_CARDS

# float64 throughout: the forms sum the same products in different orders, so they
# differ by rounding only, about 1e-15 relative; 1e-10 leaves room for the chunked
# form's triangular solve and still fails on any wrong term.
TOL = {"atol": 1e-10, "rtol": 1e-10}
B, H, T, D_K, D_V = 2, 3, 11, 4, 5  # T = 11: not a power of two, nor a multiple of 2-4


def _inputs(seed, d_v=D_V):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, H, T, D_K, generator=gen, dtype=torch.float64)
    k = torch.randn(B, H, T, D_K, generator=gen, dtype=torch.float64)
    v = torch.randn(B, H, T, d_v, generator=gen, dtype=torch.float64)
    return q, k, v, gen


def _gates(gen):
    beta = torch.rand(B, H, T, generator=gen, dtype=torch.float64)
    decay = 0.5 + 0.5 * torch.rand(B, H, T, generator=gen, dtype=torch.float64)
    return beta, decay


# --- causal_linear_attention


def _linear_loop(q, k, v, phi, normalise):
    """o_t = (sum_{s<=t} v_s phi(k_s)^T) phi(q_t) / (phi(q_t) . sum_{s<=t} phi(k_s))."""
    out = torch.zeros(*q.shape[:3], v.size(-1), dtype=q.dtype)
    for b in range(q.size(0)):
        for h in range(q.size(1)):
            for t in range(q.size(2)):
                fq = phi(q[b, h, t])
                numerator = sum(
                    v[b, h, s] * (fq @ phi(k[b, h, s])) for s in range(t + 1)
                )
                denominator = sum(fq @ phi(k[b, h, s]) for s in range(t + 1))
                out[b, h, t] = numerator / denominator if normalise else numerator
    return out


@pytest.mark.parametrize("form", ["parallel", "recurrent"])
def test_causal_linear_attention_equals_a_loop_with_chapter_9s_map(form):
    q, k, v, _ = _inputs(0)
    expected = _linear_loop(q, k, v, lambda x: F.elu(x) + 1, normalise=True)
    torch.testing.assert_close(
        causal_linear_attention(q, k, v, form=form), expected, **TOL
    )


@pytest.mark.parametrize("form", ["parallel", "recurrent"])
def test_without_a_feature_map_it_is_the_plain_sum_without_denominator(form):
    q, k, v, _ = _inputs(1)
    expected = _linear_loop(q, k, v, lambda x: x, normalise=False)
    result = causal_linear_attention(q, k, v, feature_map=None, form=form)
    torch.testing.assert_close(result, expected, **TOL)


def test_the_two_forms_agree_and_the_future_does_not_leak():
    q, k, v, gen = _inputs(2)
    parallel = causal_linear_attention(q, k, v)
    torch.testing.assert_close(
        causal_linear_attention(q, k, v, form="recurrent"), parallel, **TOL
    )
    k2, v2 = k.clone(), v.clone()
    k2[:, :, -1] = torch.randn(B, H, D_K, generator=gen, dtype=q.dtype)
    v2[:, :, -1] = torch.randn(B, H, D_V, generator=gen, dtype=q.dtype)
    changed = causal_linear_attention(q, k2, v2)
    torch.testing.assert_close(changed[:, :, :-1], parallel[:, :, :-1], atol=0, rtol=0)


def test_causal_linear_attention_errors():
    q, k, v, _ = _inputs(3)
    with pytest.raises(ValueError, match="form='sum' is not one of"):
        causal_linear_attention(q, k, v, form="sum")
    with pytest.raises(
        ValueError, match=r"query must have 4 dimensions \(B, H, T, d\)"
    ):
        causal_linear_attention(q[0], k[0], v[0])
    with pytest.raises(ValueError, match="must share"):
        causal_linear_attention(q, k[:, :1], v[:, :1])
    with pytest.raises(TypeError, match="key must be a torch.Tensor"):
        causal_linear_attention(q, k.tolist(), v)


# --- delta_rule


def _delta_loop(q, k, v, beta, decay):
    """S = a S (I - b k k^T) + b v k^T and o = S q, one head and one step at a time."""
    out = torch.zeros(*q.shape[:3], v.size(-1), dtype=q.dtype)
    eye = torch.eye(k.size(-1), dtype=q.dtype)
    for b in range(q.size(0)):
        for h in range(q.size(1)):
            S = torch.zeros(v.size(-1), k.size(-1), dtype=q.dtype)
            for t in range(q.size(2)):
                k_t, v_t, b_t = k[b, h, t], v[b, h, t], beta[b, h, t]
                a_t = 1.0 if decay is None else decay[b, h, t]
                S = a_t * S @ (eye - b_t * torch.outer(k_t, k_t)) + b_t * torch.outer(
                    v_t, k_t
                )
                out[b, h, t] = S @ q[b, h, t]
    return out


@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("chunk_size", [None, 1, 3, 4, 11, 16])
def test_delta_rule_equals_the_loop(gated, chunk_size):
    q, k, v, gen = _inputs(4)
    k = F.normalize(k, dim=-1)
    beta, decay = _gates(gen)
    decay = decay if gated else None
    expected = _delta_loop(q, k, v, beta, decay)
    result = delta_rule(q, k, v, beta, decay=decay, chunk_size=chunk_size)
    torch.testing.assert_close(result, expected, **TOL)


def test_unnormalised_keys_and_small_decays_still_agree_between_forms():
    """Keys as given, and a decay whose products over a chunk reach ~1e-20."""
    q, k, v, gen = _inputs(5)
    beta = 0.3 * torch.rand(B, H, T, generator=gen, dtype=torch.float64)
    decay = torch.full((B, H, T), 1e-5, dtype=torch.float64)
    for chunk_size in (2, 5):
        torch.testing.assert_close(
            delta_rule(q, k, v, beta, decay=decay, chunk_size=chunk_size),
            _delta_loop(q, k, v, beta, decay),
            **TOL,
        )


def test_decay_one_is_no_decay_and_beta_zero_writes_nothing():
    q, k, v, gen = _inputs(6)
    beta, _ = _gates(gen)
    for chunk_size in (None, 4):
        torch.testing.assert_close(
            delta_rule(
                q, k, v, beta, decay=torch.ones_like(beta), chunk_size=chunk_size
            ),
            delta_rule(q, k, v, beta, chunk_size=chunk_size),
            **TOL,
        )
        zeros = delta_rule(q, k, v, torch.zeros_like(beta), chunk_size=chunk_size)
        assert torch.equal(zeros, torch.zeros_like(v))


def test_delta_rule_errors():
    q, k, v, gen = _inputs(7)
    beta, decay = _gates(gen)
    with pytest.raises(ValueError, match=r"beta must have shape \(B, H, T\)"):
        delta_rule(q, k, v, beta[..., :-1])
    with pytest.raises(TypeError, match="decay must be a torch.Tensor"):
        delta_rule(q, k, v, beta, decay=0.9)
    with pytest.raises(ValueError, match=r"decay must lie in \(0, 1\]"):
        delta_rule(q, k, v, beta, decay=decay * 0)
    with pytest.raises(ValueError, match="chunk_size must be at least 1"):
        delta_rule(q, k, v, beta, chunk_size=0)
    with pytest.raises(TypeError, match="chunk_size must be an int"):
        delta_rule(q, k, v, beta, chunk_size=2.0)
    with pytest.raises(ValueError, match="query and key must have the same last"):
        delta_rule(q, k[..., :-1], v, beta)


# --- sizes


def test_state_numbers_counts_a_matrix_per_head_and_the_normaliser():
    assert state_numbers(num_heads=3, d_k=4, d_v=5) == 3 * 4 * 5
    assert state_numbers(num_heads=3, d_k=4, d_v=5, normaliser=True) == 3 * (4 * 5 + 4)
    with pytest.raises(ValueError, match="d_k must be at least 1"):
        state_numbers(num_heads=3, d_k=0, d_v=5)


def test_the_state_is_what_the_recurrence_carries():
    """A sequence cut in two: the second half's outputs need only the state."""
    q, k, v, gen = _inputs(8)
    k = F.normalize(k, dim=-1)
    beta, decay = _gates(gen)
    S = torch.zeros(B, H, D_V, D_K, dtype=q.dtype)
    for t in range(T):
        S = decay[:, :, t, None, None] * S
        correction = v[:, :, t] - (S @ k[:, :, t, :, None])[..., 0]
        S = S + beta[:, :, t, None, None] * correction[..., None] * k[:, :, t, None, :]
    assert S[0].numel() == state_numbers(num_heads=H, d_k=D_K, d_v=D_V)
    out = delta_rule(q, k, v, beta, decay=decay)
    torch.testing.assert_close(out[:, :, -1], (S @ q[:, :, -1, :, None])[..., 0], **TOL)


def test_hybrid_cache_bytes_for_qwen3_next():
    """Qwen3-Next-80B-A3B (Qwen Team 2025, model card and config.json): 48 layers,
    every fourth full attention with 2 KV heads of 256; the other 36 Gated DeltaNet
    with 32 value heads of (128, 128) states."""
    card = HYBRID_CARDS[0]
    assert card["num_layers"] == 48 and card["layer_pattern"].count("linear") == 3
    tokens = 131072
    sizes = hybrid_cache_bytes(tokens)
    per_layer_kv = 2 * 2 * 256 * tokens * 2  # keys and values, 2 heads of 256, bf16
    assert sizes["kv_cache"] == 12 * per_layer_kv
    assert sizes["state"] == 36 * 32 * 128 * 128 * 2
    assert sizes["total"] == sizes["kv_cache"] + sizes["state"]
    assert sizes["all_attention"] == 48 * per_layer_kv
    assert (
        hybrid_cache_bytes(0)["total"] == sizes["state"]
    )  # a state costs the same at any length
    with pytest.raises(ValueError, match="tokens must be at least 0"):
        hybrid_cache_bytes(-1)
