"""What one query sees, and what a mask lets through: the pure computations behind
the explorers of Chapters 1 and 3.

:func:`query_attention` is Chapter 1's attention for one query at a temperature::

    scores  = x @ x[q]                         # (T, D) @ (D,) -> (T,)
    weights = softmax(scores / temperature)    # (T,)
    context = weights @ x                      # (T,) @ (T, D) -> (D,)

:func:`masked_attention` is Chapter 3's: the weights with or without a causal mask,
passed one of the ways of :data:`MASK_CONVENTIONS`. Both return named tuples, which
the figures of :mod:`attn_course.plot`, the self-checks and the explorers share.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from ._validate import (
    require_choice,
    require_index,
    require_positive,
    require_tensor,
    require_tokens,
)
from .functional import scaled_dot_product_attention
from .masks import causal_mask, to_additive_mask

__all__ = [
    "MASK_CONVENTIONS",
    "MaskedAttention",
    "QueryAttention",
    "masked_attention",
    "query_attention",
]


class QueryAttention(NamedTuple):
    """What one query sees at one temperature: ``scores`` (before the temperature),
    ``weights`` and ``context``. Introduced in Chapter 1.

    Shapes
    ------
    scores : (T,)
    weights : (T,)
    context : (D,)
    """

    scores: torch.Tensor
    weights: torch.Tensor
    context: torch.Tensor


def as_embeddings(embeddings, name="embeddings"):
    """The embeddings as a floating-point ``(T, D)`` tensor (numpy converted, integers
    as float32), or a teaching error.
    """
    if isinstance(embeddings, np.ndarray):
        embeddings = torch.from_numpy(embeddings)
    embeddings = require_tensor(embeddings, name)
    if embeddings.dim() != 2:
        raise ValueError(
            f"{name} must have shape (T, D), one row per token, got shape "
            f"{tuple(embeddings.shape)}; for a batch pick one sequence, e.g. "
            f"{name}[0]"
        )
    if not embeddings.is_floating_point():
        embeddings = embeddings.float()
    return embeddings


TEMPERATURE_HINT = (
    "the scores are divided by it: small values such as 0.05 make the weights "
    "nearly one-hot, large ones such as 20 nearly uniform; use e.g. temperature=1.0"
)


def query_attention(tokens, embeddings, query_index, temperature=1.0):
    """One query's scores, weights and context vector at a temperature.
    Introduced in Chapter 1.

    :func:`attn_course.scaled_dot_product_attention` with the embeddings as queries,
    keys and values and ``scale = 1 / temperature``. ``tokens`` (or ``None``) are only
    checked against the rows.

    Shapes
    ------
    embeddings : (T, D)
    scores, weights : (T,)
    context : (D,)

    Examples
    --------
    >>> from attn_course.data import hello_shiny_sun
    >>> tokens, embeddings = hello_shiny_sun()
    >>> seen = query_attention(tokens, embeddings, query_index=1)  # "shiny"
    >>> seen.scores
    tensor([0.7842, 1.3569, 1.2487])
    >>> seen.weights
    tensor([0.2291, 0.4063, 0.3646])
    >>> seen.context
    tensor([0.3990, 0.3854, 0.8610])
    >>> query_attention(tokens, embeddings, 1, temperature=100.0).weights.round(
    ...     decimals=2
    ... )
    tensor([0.3300, 0.3300, 0.3300])
    """
    x = as_embeddings(embeddings)
    T = x.shape[0]
    if tokens is not None:
        tokens = require_tokens(tokens, T)
    index = require_index(query_index, T, "query_index", tokens=tokens)
    temperature = require_positive(temperature, "temperature", hint=TEMPERATURE_HINT)

    query = x[index].unsqueeze(0)  # (D,) -> (1, D): one query
    # Unscaled scores, as in Chapter 1; the temperature is applied inside as scale.
    scores = x @ x[index]  # (T, D) @ (D,) -> (T,)
    context, weights = scaled_dot_product_attention(
        query, x, x, scale=1.0 / temperature, return_weights=True
    )  # (1, D), (1, T)
    return QueryAttention(scores, weights[0], context[0])  # (T,), (T,), (D,)


MASK_CONVENTIONS = {
    "bool": "bool mask, True = may attend (SDPA)",
    "additive": "float mask added to the scores, 0 / -inf",
    "is_causal": "is_causal=True, no mask tensor",
    "inverted": "True = blocked given to SDPA: an inverted mask, a bug",
}
"""The ways :func:`masked_attention` can pass a causal mask: key -> description.
Introduced in Chapter 3.
"""


class MaskedAttention(NamedTuple):
    """The attention weights under one mask, and what the mask let through.

    ``allowed`` is where query ``i`` could attend to key ``j`` as the mask was applied;
    ``future_weight`` the weight all queries put on later keys (0 under a causal mask);
    ``empty_rows`` the queries that could attend to no key. Introduced in Chapter 3.

    Shapes
    ------
    allowed : (T_q, T_k)
    weights : (T_q, T_k)
    """

    allowed: torch.Tensor
    weights: torch.Tensor
    future_weight: float
    empty_rows: tuple


def as_vectors(tensor, name):
    """``tensor`` as a detached float ``(T, d_k)`` tensor, or a teaching error."""
    require_tensor(
        tensor,
        name,
        fix=f"compute it first, e.g. {name} = module.W_{name[:-1]}(x)",
    )
    if tensor.dim() != 2:
        raise ValueError(
            f"{name} must have shape (T, d), one row per token, got shape "
            f"{tuple(tensor.shape)}; for a batch pick one sequence, e.g. {name}[0]"
        )
    return tensor.detach().float()


def masked_attention(queries, keys, *, causal=True, convention="bool"):
    """Attention weights with or without a causal mask, passed one of four ways.

    Computed with :func:`attn_course.scaled_dot_product_attention`; the keys are the
    values too. The first three :data:`MASK_CONVENTIONS` give the same weights;
    ``"inverted"`` passes ``~causal_mask(T)`` (``nn.MultiheadAttention``'s True =
    blocked) to a function that reads True as *may attend*: no error, but every query
    sees only the future and the last sees nothing. Introduced in Chapter 3.

    Shapes
    ------
    queries : (T_q, d_k)
    keys : (T_k, d_k)
    allowed, weights : (T_q, T_k)

    Examples
    --------
    >>> x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> bug = masked_attention(x, x, causal=True, convention="inverted")
    >>> bug.weights.round(decimals=2)
    tensor([[0.0000, 0.3300, 0.6700],
            [0.0000, 0.0000, 1.0000],
            [0.0000, 0.0000, 0.0000]])
    >>> bug.empty_rows
    (2,)
    """
    require_choice(convention, "convention", MASK_CONVENTIONS)
    q = as_vectors(queries, "queries")
    k = as_vectors(keys, "keys")
    if q.shape[1] != k.shape[1]:
        raise ValueError(
            f"queries and keys must have the same width d, got queries "
            f"{tuple(q.shape)} and keys {tuple(k.shape)}"
        )
    T_q, T_k = q.shape[0], k.shape[0]
    causal_allowed = causal_mask(T_q, T_k)  # (T_q, T_k), True = may attend
    options = {}
    allowed = torch.ones(T_q, T_k, dtype=torch.bool)  # no mask: everything
    if causal and convention == "bool":
        options["attn_mask"] = allowed = causal_allowed
    elif causal and convention == "additive":
        options["attn_mask"] = to_additive_mask(causal_allowed)  # 0 / -inf
        allowed = causal_allowed
    elif causal and convention == "is_causal":
        options["is_causal"] = True
        allowed = causal_allowed
    elif causal:  # "inverted": True = blocked, read as True = may attend
        options["attn_mask"] = allowed = ~causal_allowed
    _, weights = scaled_dot_product_attention(
        q, k, k, return_weights=True, **options
    )  # (T_q, T_k)
    future = weights.masked_fill(causal_allowed, 0.0)  # weights on keys j > i
    empty = tuple(int(i) for i in (~allowed.any(dim=-1)).nonzero().reshape(-1))
    return MaskedAttention(allowed, weights, float(future.sum()), empty)
