"""Attention as a recurrence: causal linear attention, the delta rule, and the
numbers a layer keeps per sequence (Chapter 12).

A recurrent layer squeezes the past into a fixed state ``S`` of shape
``(d_v, d_k)`` per head, updated once per token; attention keeps every key and
value. :func:`causal_linear_attention` is Chapter 9's linear attention made causal,
written both as that recurrence and as a masked product that computes all
positions at once. :func:`delta_rule` writes a correction into the state instead of
a sum (DeltaNet), optionally with a decay gate (Gated DeltaNet), token by token or
chunk by chunk. :func:`state_numbers` and :func:`hybrid_cache_bytes` count what a
state and a KV cache hold, the latter for the hybrid in :data:`HYBRID_CARDS`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ._validate import require_choice, require_floating, require_int, require_tensor
from .functional import _check_inputs
from .kv_cache import kv_cache_numbers

__all__ = [
    "HYBRID_CARDS",
    "causal_linear_attention",
    "delta_rule",
    "elu_plus_one",
    "hybrid_cache_bytes",
    "state_numbers",
]

_FORMS = {
    "parallel": "the masked product of all positions at once",
    "recurrent": "a running state updated token by token",
}


def elu_plus_one(x):
    """Chapter 9's feature map ``phi(x) = elu(x) + 1``, positive everywhere.
    Introduced in Chapter 9; a function of the package in Chapter 12.
    """
    return F.elu(x) + 1


def _check_sequences(query, key, value):
    """Check ``(B, H, T, d)`` query, key and value; return ``(B, H, T)``."""
    _check_inputs(query, key, value, None, 0.0, False, None)
    for name, tensor in {"query": query, "key": key, "value": value}.items():
        if tensor.dim() != 4:
            raise ValueError(
                f"{name} must have 4 dimensions (B, H, T, d), got shape "
                f"{tuple(tensor.shape)}; for one sequence and one head use "
                f"{name}[None, None]"
            )
    if not query.shape[:3] == key.shape[:3] == value.shape[:3]:
        raise ValueError(
            "query, key and value must share (B, H, T), got "
            f"{tuple(query.shape[:3])}, {tuple(key.shape[:3])} and "
            f"{tuple(value.shape[:3])}: a recurrence reads one key and value per "
            "query, so expand shared heads first, e.g. key.expand(B, H, T, d_k)"
        )
    return tuple(query.shape[:3])


def _check_gate(gate, name, shape, dtype):
    require_floating(require_tensor(gate, name), name)
    if tuple(gate.shape) != shape:
        raise ValueError(
            f"{name} must have shape (B, H, T) = {shape}, one number per token and "
            f"head, got {tuple(gate.shape)}"
        )
    return gate.to(dtype)


def causal_linear_attention(
    query, key, value, *, feature_map=elu_plus_one, form="parallel"
):
    """Chapter 9's linear attention, causal: token ``t`` reads only tokens ``s <= t``.

    With ``phi = feature_map``, the running state ``S_t = sum_{s<=t} v_s phi(k_s)^T``
    (``(d_v, d_k)``) and normaliser ``z_t = sum_{s<=t} phi(k_s)``::

        o_t = S_t phi(q_t) / (phi(q_t) . z_t)

    Chapter 9's formula with the sums stopped at ``t`` (no ``1/sqrt(d)``, as
    there; Katharopoulos et al. 2020). ``form="recurrent"`` updates ``S`` and ``z``
    token by token, a constant cost per token; ``form="parallel"`` computes every
    position at once as ``(phi(Q) phi(K)^T * causal) V``, each row divided by its
    sum. The default map is positive, so the denominator is too.
    ``feature_map=None`` is the identity *without* the denominator, ``o_t = S_t q_t``
    (a sum of ``q_t . k_s`` could be zero or negative): the state that
    :func:`delta_rule` corrects. Introduced in Chapter 12.

    Shapes
    ------
    query, key : (B, H, T, d_k)
    value : (B, H, T, d_v)
    output : (B, H, T, d_v)

    Examples
    --------
    >>> q, k, v = torch.randn(3, 2, 4, 5, 8, generator=torch.Generator().manual_seed(0))
    >>> recurrent = causal_linear_attention(q, k, v, form="recurrent")
    >>> torch.allclose(recurrent, causal_linear_attention(q, k, v), atol=1e-5)
    True
    """
    _check_sequences(query, key, value)
    require_choice(form, "form", _FORMS)
    if feature_map is not None:
        query, key = feature_map(query), feature_map(key)
    if form == "parallel":
        T = query.size(-2)
        causal = torch.ones(T, T, dtype=torch.bool, device=query.device).tril()
        scores = (query @ key.transpose(-2, -1)) * causal  # (B, H, T, T)
        output = scores @ value
        if feature_map is None:
            return output
        return output / scores.sum(dim=-1, keepdim=True)
    state = query.new_zeros(*query.shape[:2], value.size(-1), key.size(-1))
    normaliser = query.new_zeros(*key.shape[:2], key.size(-1))
    outputs = []
    for t in range(query.size(-2)):
        q_t, k_t, v_t = query[:, :, t], key[:, :, t], value[:, :, t]
        state = state + v_t[..., :, None] * k_t[..., None, :]  # + v_t k_t^T
        o_t = (state @ q_t[..., None])[..., 0]
        if feature_map is not None:
            normaliser = normaliser + k_t
            o_t = o_t / (normaliser * q_t).sum(dim=-1, keepdim=True)
        outputs.append(o_t)
    return torch.stack(outputs, dim=-2)


def delta_rule(query, key, value, beta, *, decay=None, chunk_size=None):
    """The (gated) delta rule: the state ``S`` (``(d_v, d_k)`` per head) is
    corrected towards each new pair instead of summing it::

        S_t = a_t S_{t-1} (I - b_t k_t k_t^T) + b_t v_t k_t^T,    o_t = S_t q_t

    ``b_t = beta``: how far ``S k_t`` moves from what the state held for
    ``k_t`` towards ``v_t`` (all the way when ``b_t = 1`` and ``|k_t| = 1``).
    ``a_t = decay``, in ``(0, 1]``, shrinks the whole state before the write; 1
    when ``decay`` is None. DeltaNet is the rule without decay (Schlag et al. 2021;
    Yang et al. 2024), Gated DeltaNet with it (Yang, Kautz & Hatamizadeh 2025).
    Keys are used as given: normalise them first (``F.normalize(key, dim=-1)``),
    or the correction can overshoot; queries too (no ``1/sqrt(d_k)`` is applied).
    The state starts at zero.

    ``chunk_size=None`` runs the recurrence token by token. An int runs the chunked
    form, equal to it: within a chunk every output comes from matrix products and
    one triangular solve, and only one state per chunk is carried in order
    (Yang et al. 2024). ``T`` need not be a multiple of ``chunk_size``.
    Introduced in Chapter 12.

    Shapes
    ------
    query, key : (B, H, T, d_k)
    value : (B, H, T, d_v)
    beta, decay : (B, H, T)
    output : (B, H, T, d_v)

    Examples
    --------
    >>> gen = torch.Generator().manual_seed(0)
    >>> q, k, v = torch.randn(3, 1, 2, 7, 4, generator=gen)
    >>> k = torch.nn.functional.normalize(k, dim=-1)
    >>> beta, decay = torch.rand(2, 1, 2, 7, generator=gen)
    >>> recurrent = delta_rule(q, k, v, beta, decay=decay)
    >>> chunked = delta_rule(q, k, v, beta, decay=decay, chunk_size=3)
    >>> torch.allclose(recurrent, chunked, atol=1e-5)
    True
    """
    shape = _check_sequences(query, key, value)
    beta = _check_gate(beta, "beta", shape, query.dtype)
    if decay is None:
        decay = torch.ones_like(beta)
    else:
        decay = _check_gate(decay, "decay", shape, query.dtype)
        if not ((decay > 0) & (decay <= 1)).all():
            raise ValueError(
                f"decay must lie in (0, 1], got values from {decay.min().item():.3g} "
                f"to {decay.max().item():.3g}; e.g. decay = torch.sigmoid(logits)"
            )
    if chunk_size is not None:
        chunk_size = require_int(
            chunk_size, "chunk_size", hint="the tokens per chunk, or None"
        )
        return _chunked_delta_rule(query, key, value, beta, decay, chunk_size)
    state = query.new_zeros(*shape[:2], value.size(-1), key.size(-1))
    outputs = []
    for t in range(shape[2]):
        q_t, k_t, v_t = query[:, :, t], key[:, :, t], value[:, :, t]
        a_t, b_t = decay[:, :, t, None, None], beta[:, :, t, None, None]
        state = a_t * state
        read = state @ k_t[..., None]  # (d_v, 1): what S holds for k_t
        state = state + b_t * (v_t[..., None] - read) * k_t[..., None, :]
        outputs.append((state @ q_t[..., None])[..., 0])
    return torch.stack(outputs, dim=-2)


def _chunked_delta_rule(query, key, value, beta, decay, C):
    """:func:`delta_rule` in chunks of ``C`` tokens.

    Write the step as ``S_t = a_t S_{t-1} + u_t k_t^T`` with the correction
    ``u_t = b_t (v_t - a_t S_{t-1} k_t)``. In a chunk that starts from ``S_0``, with
    ``g_t = a_1 ... a_t`` and ``G_ts = g_t / g_s``::

        S_t = g_t S_0 + sum_{s<=t} G_ts u_s k_s^T
        u_t + b_t sum_{s<t} G_ts (k_t . k_s) u_s = b_t v_t - b_t g_t S_0 k_t

    i.e. ``(I + A) U = diag(b) V - diag(b g) K S_0^T`` with ``A`` strictly lower
    triangular. One triangular solve gives ``U = U0 - W S_0^T`` (the WY form:
    ``U0`` and ``W`` do not depend on ``S_0``, so every chunk computes them at
    once), and then::

        O = diag(g) Q S_0^T + (Q K^T * G * causal) U
        S_C = g_C S_0 + U^T diag(g_C / g) K
    """
    B, H, T, d_k = key.shape
    pad = -T % C  # zero keys and beta, decay 1: padded steps leave S unchanged
    if pad:
        query, key, value = (F.pad(x, (0, 0, 0, pad)) for x in (query, key, value))
        beta, decay = F.pad(beta, (0, pad)), F.pad(decay, (0, pad), value=1.0)
    q, k, v, b, a = (
        x.reshape(B, H, -1, C, *x.shape[3:]) for x in (query, key, value, beta, decay)
    )
    log_g = a.log().cumsum(dim=-1)  # (B, H, N, C); logs keep g_t / g_s finite
    causal = torch.ones(C, C, dtype=torch.bool, device=key.device).tril()
    gap = log_g[..., :, None] - log_g[..., None, :]
    G = gap.masked_fill(~causal, float("-inf")).exp()  # G_ts for s <= t, else 0
    g = log_g.exp()
    A = (b[..., None] * G * (k @ k.transpose(-2, -1))).tril(-1)
    eye = torch.eye(C, dtype=key.dtype, device=key.device)
    U0 = torch.linalg.solve_triangular(eye + A, b[..., None] * v, upper=False)
    W = torch.linalg.solve_triangular(eye + A, (b * g)[..., None] * k, upper=False)
    attn = (q @ k.transpose(-2, -1)) * G  # G is zero above the diagonal
    to_end = (log_g[..., -1:] - log_g).exp()  # g_C / g_s
    state = key.new_zeros(B, H, value.size(-1), d_k)
    outputs = []
    for n in range(q.size(2)):  # the only sequential part: one state per chunk
        U = U0[:, :, n] - W[:, :, n] @ state.transpose(-2, -1)
        outputs.append(g[:, :, n, :, None] * q[:, :, n] @ state.transpose(-2, -1))
        outputs[-1] = outputs[-1] + attn[:, :, n] @ U
        kept = (U * to_end[:, :, n, :, None]).transpose(-2, -1) @ k[:, :, n]
        state = g[:, :, n, -1, None, None] * state + kept
    return torch.cat(outputs, dim=-2)[:, :, :T]


def state_numbers(num_heads, d_k, d_v, *, normaliser=False):
    """How many numbers one recurrent layer keeps for one sequence, whatever its
    length: a ``(d_v, d_k)`` state per head, ``num_heads * d_k * d_v``, plus the
    ``d_k`` numbers of each head's normaliser ``z`` when ``normaliser`` is True
    (:func:`causal_linear_attention` with a feature map). ``num_heads`` counts the
    heads with a state of their own (Qwen3-Next's value heads). Compare
    :func:`attn_course.kv_cache_numbers`, which grows with every token.
    Introduced in Chapter 12.

    >>> state_numbers(num_heads=1, d_k=32, d_v=32), kv_cache_numbers(1, 1, 32, 16)
    (1024, 1024)
    """
    sizes = {"num_heads": num_heads, "d_k": d_k, "d_v": d_v}
    n = {name: require_int(value, name) for name, value in sizes.items()}
    return n["num_heads"] * n["d_k"] * (n["d_v"] + bool(normaliser))


HYBRID_CARDS = (
    {
        "model": "Qwen3-Next-80B-A3B",
        "num_layers": 48,
        "layer_pattern": ("linear",) * 3 + ("full",),  # full_attention_interval 4
        "num_heads": 16,  # num_attention_heads, gated full attention
        "num_kv_heads": 2,  # num_key_value_heads
        "head_dim": 256,
        "linear_num_key_heads": 16,  # Gated DeltaNet query and key heads
        "linear_num_value_heads": 32,  # one (128, 128) state each
        "linear_key_head_dim": 128,
        "linear_value_head_dim": 128,
        "source": "Qwen Team 2025, huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct "
        "(model card: 48 layers, 12 * (3 * Gated DeltaNet -> 1 * Gated Attention); "
        "config.json)",
    },
)
"""A published hybrid: three Gated DeltaNet layers to one full-attention layer,
with its config.json's key names. Introduced in Chapter 12.
"""


def hybrid_cache_bytes(tokens, *, card=HYBRID_CARDS[0], bytes_per_number=2):
    """What one sequence of ``tokens`` tokens keeps in the layers of ``card`` (a
    :data:`HYBRID_CARDS` entry), in bytes (2 per number: bfloat16).

    Returns ``kv_cache`` (the full-attention layers' keys and values, growing
    with ``tokens``), ``state`` (the linear layers' ``(d_v, d_k)`` states, fixed;
    their short convolution also keeps its last few inputs, a few per cent more,
    not counted), ``total`` (the two) and ``all_attention``: the KV cache if every
    layer were one of the model's attention layers. Introduced in Chapter 12.

    >>> sizes = hybrid_cache_bytes(tokens=131072)
    >>> sizes["all_attention"] / sizes["kv_cache"]
    4.0
    """
    tokens = require_int(tokens, "tokens", minimum=0, hint="the length of one sequence")
    width = require_int(bytes_per_number, "bytes_per_number", hint="2 for bfloat16")
    pattern = card["layer_pattern"]
    full = sum(pattern[i % len(pattern)] == "full" for i in range(card["num_layers"]))
    attention = {k: card[k] for k in ("num_kv_heads", "head_dim")}
    state = state_numbers(
        card["linear_num_value_heads"],
        card["linear_key_head_dim"],
        card["linear_value_head_dim"],
    )
    sizes = {
        "kv_cache": kv_cache_numbers(full, tokens=tokens, **attention) * width,
        "state": (card["num_layers"] - full) * state * width,
    }
    sizes["total"] = sizes["kv_cache"] + sizes["state"]
    all_layers = kv_cache_numbers(card["num_layers"], tokens=tokens, **attention)
    return {**sizes, "all_attention": all_layers * width}
