"""Three ways to tell attention where each token sits (Chapters 6 and 7).

Attention alone does not see order: shuffle keys and values together and every
query gets the same output. :func:`sinusoidal_positions` adds fixed vectors to the
embeddings (Chapter 6); :func:`apply_rope` rotates queries and keys by their
positions, so a score depends on the distance only; :func:`alibi_slopes` and
:func:`alibi_bias` subtract a penalty proportional to the distance from every
score. :func:`rope_frequencies` stretches RoPE for longer sequences (PI, YaRN) and
:func:`rope_permutation` converts between RoPE's two layouts.

Shapes
------
x : (..., T, d)
positions : (T,)
alibi_bias : (H, T_q, T_k)
"""

from __future__ import annotations

import math

import torch

from ._validate import (
    require_flag,
    require_int,
    require_positive,
    require_tensor,
)
from .masks import _OFFSET_HINT

__all__ = [
    "alibi_bias",
    "alibi_slopes",
    "apply_rope",
    "rope_frequencies",
    "rope_permutation",
    "sinusoidal_positions",
    "yarn_attention_factor",
]


def sinusoidal_positions(context_length, d_model):
    """The fixed sine and cosine position vectors of the 2017 transformer.

    Position ``t`` gets ``sin(t / 10000^(2i/D))`` in feature ``2i`` and ``cos`` of the
    same in feature ``2i + 1``: fast waves first, slow ones last.
    Introduced in Chapter 6.

    Shapes
    ------
    output : (context_length, d_model)

    Examples
    --------
    >>> sinusoidal_positions(4, 6)[0]  # position 0: sin(0) = 0 and cos(0) = 1
    tensor([0., 1., 0., 1., 0., 1.])
    """
    context_length = require_int(context_length, "context_length")
    d_model = require_int(d_model, "d_model")
    if d_model % 2:
        raise ValueError(
            f"d_model={d_model} must be even: features come in (sin, cos) pairs"
        )
    position = torch.arange(context_length, dtype=torch.float32)[:, None]  # (T, 1)
    i = torch.arange(0, d_model, 2, dtype=torch.float32)  # (D/2,): 0, 2, 4, ...
    angle = position / 10_000 ** (i / d_model)  # (T, 1) / (D/2,) -> (T, D/2)
    pe = torch.zeros(context_length, d_model)
    pe[:, 0::2] = torch.sin(angle)  # even features
    pe[:, 1::2] = torch.cos(angle)  # odd features
    return pe


# --- RoPE ---------------------------------------------------------------------------

ROPE_BASE_HINT = "use e.g. base=10000.0 (the RoPE paper) or base=500000.0"


def rope_permutation(d):
    """The feature order that turns RoPE's interleaved layout into its half layout.

    Pair ``i`` is features ``(2i, 2i + 1)`` interleaved, ``(i, i + d/2)`` in halves;
    with ``perm = rope_permutation(d)``,
    ``apply_rope(x[..., perm]) == apply_rope(x, interleaved=True)[..., perm]``, and
    ``torch.argsort(perm)`` undoes it. Permuting the output features of the query and
    key projections, head by head, moves trained weights from one layout to the other.
    Introduced in Chapter 7.

    Shapes
    ------
    output : (d,)

    Examples
    --------
    >>> rope_permutation(8)
    tensor([0, 2, 4, 6, 1, 3, 5, 7])
    """
    d = require_int(d, "d", minimum=2, hint="RoPE needs at least one pair")
    if d % 2:
        raise ValueError(
            f"d={d} must be even: RoPE rotates features in pairs; pass the width of "
            "one head, e.g. d=64"
        )
    return torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])


_SCALING_HINT = (
    "pass scaling=None, {'type': 'pi', 'factor': s} or {'type': 'yarn', "
    "'factor': s, 'original_length': L}"
)


def _check_scaling(scaling):
    """``scaling`` checked: ``(type, factor, original_length, alpha, beta)``."""
    if not isinstance(scaling, dict) or scaling.get("type") not in ("pi", "yarn"):
        raise ValueError(
            f"scaling must name type 'pi' or 'yarn', got {scaling!r}; " + _SCALING_HINT
        )
    known = {"type", "factor", "original_length", "alpha", "beta"}
    if set(scaling) - known:
        raise ValueError(
            f"scaling has unknown keys {sorted(set(scaling) - known)}; " + _SCALING_HINT
        )
    factor = require_positive(
        scaling.get("factor"), "scaling['factor']", hint="e.g. L_test / L_train = 4.0"
    )
    if scaling["type"] == "pi":
        return "pi", factor, None, None, None
    length = require_int(
        scaling.get("original_length"),
        "scaling['original_length']",
        hint="the training length L",
    )
    alpha = require_positive(scaling.get("alpha", 1.0), "alpha", hint="e.g. 1.0")
    beta = require_positive(scaling.get("beta", 32.0), "beta", hint="e.g. 32.0")
    if alpha >= beta:
        raise ValueError(
            f"YaRN needs alpha < beta, got alpha={alpha}, beta={beta}; "
            "the paper uses alpha=1, beta=32"
        )
    return "yarn", factor, length, alpha, beta


def rope_frequencies(d, base=10000.0, *, scaling=None):
    """RoPE's angle per position ``theta_i = base^(-2i/d)`` for each pair of a head.

    ``scaling`` stretches a model trained on ``L`` tokens to ``s L``:
    ``{"type": "pi", "factor": s}`` divides every ``theta_i`` by ``s`` (position
    interpolation); ``{"type": "yarn", "factor": s, "original_length": L}`` (and
    optional ``"alpha"``=1, ``"beta"``=32) interpolates the slow pairs only, with a
    ramp between ``alpha`` and ``beta`` turns within ``L`` tokens (YaRN's
    "NTK-by-parts"). Float64 radians. Introduced in Chapter 7.

    Shapes
    ------
    output : (d/2,)

    Examples
    --------
    >>> rope_frequencies(4)
    tensor([1.0000, 0.0100], dtype=torch.float64)
    >>> rope_frequencies(4, scaling={"type": "pi", "factor": 4.0})
    tensor([0.2500, 0.0025], dtype=torch.float64)
    """
    d = require_int(d, "d", minimum=2, hint="RoPE needs at least one pair")
    if d % 2:
        raise ValueError(f"d={d} must be even: RoPE rotates features in pairs")
    base = require_positive(base, "base", hint=ROPE_BASE_HINT)
    i = torch.arange(d // 2, dtype=torch.float64)  # (d/2,)
    theta = base ** (-2.0 * i / d)  # (d/2,): 1, ..., about 1/base
    if scaling is None:
        return theta
    kind, factor, length, alpha, beta = _check_scaling(scaling)
    if kind == "pi":
        return theta / factor
    turns = length * theta / (2 * math.pi)  # r_i: turns within the training length
    gamma = ((turns - alpha) / (beta - alpha)).clamp(0.0, 1.0)  # (d/2,)
    return (1 - gamma) * theta / factor + gamma * theta


def yarn_attention_factor(factor):
    """YaRN's ``sqrt(1/t) = 0.1 ln(s) + 1``, ``s = factor``: queries and keys are both
    multiplied by it, so softmax sharpens on long sequences. Introduced in Chapter 7.

    >>> round(yarn_attention_factor(4.0), 4)
    1.1386
    """
    factor = require_positive(factor, "factor", hint="e.g. 4.0")
    return 0.1 * math.log(factor) + 1.0


def _rope_positions(positions, length, device):
    """``positions`` checked: 1-D integers, ``length`` of them; ``arange`` if None."""
    if positions is None:
        return torch.arange(length, device=device)
    require_tensor(
        positions,
        "positions",
        fix="pass one int per token, e.g. positions=torch.arange(T)",
    )
    is_bool = positions.dtype == torch.bool
    if positions.is_floating_point() or positions.is_complex() or is_bool:
        raise TypeError(
            f"positions must hold integers, got dtype {positions.dtype}; positions "
            "count tokens: use e.g. positions=torch.arange(T), or "
            "positions.long() if the values are whole numbers"
        )
    if positions.dim() != 1:
        raise ValueError(
            f"positions must be 1-D, one position per token, got shape "
            f"{tuple(positions.shape)}; every sequence of a batch shares them: pass "
            "e.g. positions[0]"
        )
    if positions.numel() != length:
        raise ValueError(
            f"positions has {positions.numel()} entries but x has T={length} "
            f"tokens (x.shape[-2]); pass one position per token, e.g. "
            f"positions=torch.arange(start, start + {length})"
        )
    return positions


def apply_rope(x, positions=None, *, base=10000.0, interleaved=False, scaling=None):
    """Rotate queries or keys by their positions: rotary position embedding (RoPE).

    Pair ``i`` of the token at position ``m`` is rotated by ``m * base^(-2i/d)``
    radians, so the score between positions ``m`` and ``n`` depends on ``n - m`` only.
    Apply it to queries and keys split into heads (``d`` is the head width), not to
    values. ``interleaved=True`` pairs neighbouring features (RoFormer, the original
    LLaMA); the default pairs the two halves (Hugging Face's ``rotate_half``); see
    :func:`rope_permutation`. ``positions`` defaults to ``torch.arange(T)``; pass
    ``torch.arange(p, p + T)`` after ``p`` cached tokens. With a ``"yarn"``
    ``scaling`` the output is also multiplied by :func:`yarn_attention_factor`. Angles
    are computed in float64, the rotation in float32, then cast back.
    Introduced in Chapter 7.

    Shapes
    ------
    x : (..., T, d) -> (..., T, d)
    positions : (T,)

    Examples
    --------
    >>> x = torch.tensor([[1.0, 0.0], [1.0, 0.0]])  # two tokens, d = 2: one pair
    >>> apply_rope(x)  # position 0 unchanged, position 1 turned by 1 radian
    tensor([[1.0000, 0.0000],
            [0.5403, 0.8415]])
    >>> _ = torch.manual_seed(0)
    >>> q, k = torch.randn(2, 4, 8), torch.randn(2, 4, 8)
    >>> near = apply_rope(q) @ apply_rope(k).transpose(-2, -1)
    >>> far = torch.arange(1000, 1004)  # the same distances, 1000 positions later
    >>> later = apply_rope(q, far) @ apply_rope(k, far).transpose(-2, -1)
    >>> torch.allclose(near, later, atol=1e-4)
    True
    """
    require_tensor(x, "x")
    if not x.is_floating_point():
        raise TypeError(
            f"x must be floating point, got dtype {x.dtype}; RoPE rotates queries "
            "and keys: convert it first, e.g. x = x.float()"
        )
    if x.dim() < 2:
        raise ValueError(
            f"x must have at least 2 dimensions (..., T, d), got shape "
            f"{tuple(x.shape)}; for a single token use x.unsqueeze(0)"
        )
    length, d = x.shape[-2], x.shape[-1]
    if d % 2:
        raise ValueError(
            f"x.shape[-1]={d} must be even: it is the head width d, and RoPE "
            f"rotates features in pairs (got x.shape={tuple(x.shape)}); split x "
            "into heads first, with an even head width"
        )
    positions = _rope_positions(positions, length, x.device)
    base = require_positive(base, "base", hint=ROPE_BASE_HINT)
    pairs = "True pairs features (2i, 2i + 1), False pairs (i, i + d/2)"
    require_flag(interleaved, "interleaved", hint=pairs)

    # Angles in float64 on the CPU: at position 100000 a float32 angle can be off
    # by up to 0.004 radians, far more than float32 rounding of the result.
    inv_freq = rope_frequencies(d, base, scaling=scaling)  # (d/2,)
    angle = positions.cpu().double()[:, None] * inv_freq  # (T, 1) * (d/2,) -> (T, d/2)
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos = torch.cos(angle).to(device=x.device, dtype=work)  # (T, d/2)
    sin = torch.sin(angle).to(device=x.device, dtype=work)
    wide = x.to(work)  # float16 and bfloat16 are rotated in float32
    if interleaved:
        first, second = wide[..., 0::2], wide[..., 1::2]  # (..., T, d/2) each
    else:
        first, second = wide[..., : d // 2], wide[..., d // 2 :]
    turned_first = first * cos - second * sin  # (..., T, d/2)
    turned_second = first * sin + second * cos
    if interleaved:
        out = torch.stack([turned_first, turned_second], dim=-1).flatten(-2)
    else:
        out = torch.cat([turned_first, turned_second], dim=-1)
    if scaling is not None and scaling["type"] == "yarn":
        out = out * yarn_attention_factor(scaling["factor"])
    return out.to(x.dtype)


# --- ALiBi --------------------------------------------------------------------------


def _power_of_two_slopes(n):
    """``2^(-8/n), 2^(-16/n), ..., 2^(-8)``: the slopes for ``n`` a power of two."""
    return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]


def alibi_slopes(num_heads):
    """The per-head slopes of ALiBi (attention with linear biases).

    For a power of two ``H`` the slopes are ``2^(-8/H)``, ``2^(-16/H)``, ...; otherwise,
    as in the ALiBi paper's code, those of the largest power of two ``n`` below ``H``
    followed by every other slope for ``2n``, so the sequence is not monotonic.
    Introduced in Chapter 7.

    Shapes
    ------
    output : (H,)

    Examples
    --------
    >>> alibi_slopes(4)
    tensor([0.2500, 0.0625, 0.0156, 0.0039])
    >>> alibi_slopes(6) * 256  # not monotonic
    tensor([ 64.,  16.,   4.,   1., 128.,  32.])
    """
    num_heads = require_int(num_heads, "num_heads")
    n = 2 ** math.floor(math.log2(num_heads))  # the largest power of two <= H
    slopes = _power_of_two_slopes(n)
    slopes += _power_of_two_slopes(2 * n)[0::2][: num_heads - n]
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_bias(num_heads, T_q, T_k=None, *, offset=0):
    """The ALiBi bias to add to attention scores, one ``(T_q, T_k)`` matrix per head.

    Entry ``[h, i, j]`` is ``-slope_h * |offset + i - j|``; ``offset`` places the
    queries among the keys as in :func:`attn_course.causal_mask` (``T_k - T_q`` after
    cached tokens). Future keys get the same penalty for their distance, which a causal
    mask makes irrelevant. The paper's code adds ``slope_h * j`` instead, which differs
    by a constant per row, so softmax gives the same weights. Introduced in Chapter 7.

    Shapes
    ------
    output : (H, T_q, T_k)

    Examples
    --------
    >>> alibi_bias(1, 3) * 256  # one head, slope 1/256
    tensor([[[ 0., -1., -2.],
             [-1.,  0., -1.],
             [-2., -1.,  0.]]])
    >>> alibi_bias(1, 1, 4, offset=3) * 256  # one new query after 3 cached tokens
    tensor([[[-3., -2., -1.,  0.]]])
    """
    num_heads = require_int(num_heads, "num_heads")
    T_q = require_int(T_q, "T_q")
    T_k = T_q if T_k is None else require_int(T_k, "T_k")
    offset = require_int(offset, "offset", minimum=0, hint=_OFFSET_HINT)
    if offset + T_q > T_k:
        raise ValueError(
            f"offset={offset} and T_q={T_q} put the last query at position "
            f"{offset + T_q - 1}, past the last of T_k={T_k} keys: every query must "
            f"have its own position among the keys; pass T_k >= offset + T_q "
            f"(e.g. T_k={offset + T_q}), or swap T_q and T_k if they are the wrong "
            "way round"
        )
    query_at = torch.arange(T_q, dtype=torch.float64) + offset  # (T_q,)
    key_at = torch.arange(T_k, dtype=torch.float64)  # (T_k,)
    distance = (query_at[:, None] - key_at[None, :]).abs()  # (T_q, T_k)
    slopes = alibi_slopes(num_heads).double()  # (H,)
    bias = 0.0 - slopes[:, None, None] * distance  # (H, 1, 1) * (T_q, T_k)
    return bias.float()  # 0.0 - 0.0 is +0.0, where -(0.0) would print as -0.
