"""What one query sees, and what a mask lets through: the computations behind the
explorers of Chapters 1 and 3, as pure functions.

:func:`query_attention` is Chapter 1's attention for one query at a softmax
temperature: no trainable projections, the scores are plain dot products of the
embeddings, and the temperature divides them before the softmax::

    scores  = x @ x[q]                         # (T, D) @ (D,) -> (T,)
    weights = softmax(scores / temperature)    # (T,)
    context = weights @ x                      # (T,) @ (T, D) -> (D,)

:func:`masked_attention` is Chapter 3's: the attention weights with or without a
causal mask, passed in one of the ways of :data:`MASK_CONVENTIONS`, and how much of
the future leaked in.

Both change nothing and return named tuples, so the static figures
(:func:`attn_course.plot.temperature_panel`), the self-checks and the widget apps of
:mod:`attn_course.explorer` share one computation.

Shapes
------
embeddings : (T, D)
queries, keys : (T_q, d_k), (T_k, d_k)
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
    """What one query sees at one temperature: its scores, weights and context.

    Introduced in Chapter 1.

    Attributes
    ----------
    scores : torch.Tensor
        Plain dot products of the query's embedding with every embedding, before the
        temperature is applied.
    weights : torch.Tensor
        ``softmax(scores / temperature)``: non-negative and summing to 1.
    context : torch.Tensor
        The weighted sum of the embeddings, ``weights @ embeddings``.

    Shapes
    ------
    scores : (T,)
    weights : (T,)
    context : (D,)

    Examples
    --------
    >>> from attn_course.data import hello_shiny_sun
    >>> scores, weights, context = query_attention(*hello_shiny_sun(), query_index=1)
    >>> scores.shape, weights.shape, context.shape
    (torch.Size([3]), torch.Size([3]), torch.Size([3]))
    """

    scores: torch.Tensor
    weights: torch.Tensor
    context: torch.Tensor


def as_embeddings(embeddings, name="embeddings"):
    """The embeddings as a floating-point ``(T, D)`` tensor, or a teaching error.

    A numpy array is converted; whole numbers become float32.

    Shapes
    ------
    embeddings : (T, D)
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
    """Compute one query's scores, weights and context vector at a temperature.

    Introduced in Chapter 1. A pure function: it changes nothing and returns a
    :class:`QueryAttention`. The attention itself is
    :func:`attn_course.scaled_dot_product_attention` with ``scale = 1 /
    temperature``, so ``temperature=1.0`` is Chapter 1's unscaled dot-product
    attention.

    Parameters
    ----------
    tokens : sequence of str or None
        The tokens, one per embedding row; used to check the lengths agree and in
        error messages. ``None`` skips that check.
    embeddings : torch.Tensor or numpy.ndarray
        One embedding row per token; they serve as queries, keys and values.
    query_index : int
        Position of the query token; negative values count from the end.
    temperature : float, default 1.0
        Positive. Below 1 it sharpens the weights, above 1 it flattens them.

    Returns
    -------
    QueryAttention
        ``(scores, weights, context)``.

    Shapes
    ------
    embeddings : (T, D)
    scores, weights : (T,)
    context : (D,)

    Examples
    --------
    The query "shiny" of Chapter 1:

    >>> from attn_course.data import hello_shiny_sun
    >>> tokens, embeddings = hello_shiny_sun()
    >>> seen = query_attention(tokens, embeddings, query_index=1)
    >>> seen.scores
    tensor([0.7842, 1.3569, 1.2487])
    >>> seen.weights
    tensor([0.2291, 0.4063, 0.3646])
    >>> seen.context
    tensor([0.3990, 0.3854, 0.8610])

    A low temperature gives nearly all the weight to the best-matching key, a high
    one spreads it almost evenly:

    >>> query_attention(tokens, embeddings, 1, temperature=0.01).weights.round(
    ...     decimals=3
    ... )
    tensor([0., 1., 0.])
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

Introduced in Chapter 3."""


class MaskedAttention(NamedTuple):
    """The attention weights under one mask, and what the mask let through.

    Introduced in Chapter 3.

    Attributes
    ----------
    allowed : torch.Tensor
        Bool, ``True`` where query ``i`` could attend to key ``j`` under the mask
        as it was actually applied (all ``True`` without a mask).
    weights : torch.Tensor
        The attention weights; a query that may attend to no key gets zeros.
    future_weight : float
        The weight all queries together put on keys after them (``j > i``): 0 for a
        causal mask, more than 0 when the future leaks in.
    empty_rows : tuple of int
        The queries that may attend to no key at all.

    Shapes
    ------
    allowed : (T_q, T_k)
    weights : (T_q, T_k)

    Examples
    --------
    >>> x = torch.eye(3)
    >>> seen = masked_attention(x, x, causal=True)
    >>> seen.future_weight, seen.empty_rows
    (0.0, ())
    """

    allowed: torch.Tensor
    weights: torch.Tensor
    future_weight: float
    empty_rows: tuple


def as_vectors(tensor, name):
    """``tensor`` as a detached floating-point ``(T, d_k)`` tensor, or raise.

    Shapes
    ------
    tensor : (T, d_k)
    """
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

    Introduced in Chapter 3. A pure function, computed with
    :func:`attn_course.scaled_dot_product_attention` (scale ``1 / sqrt(d_k)``). The
    first three conventions of :data:`MASK_CONVENTIONS` give the same causal
    weights; ``"inverted"`` passes ``~causal_mask(T)``, a mask in
    ``nn.MultiheadAttention``'s convention (True = blocked), to a function that
    reads True as *may attend*: no error, but every query sees only the future, and
    the last query sees nothing.

    Parameters
    ----------
    queries : torch.Tensor
        One query vector per token.
    keys : torch.Tensor
        One key vector per token, the same width as the queries. They serve as the
        values too, so the weights are what matters.
    causal : bool, default True
        Apply a causal mask; ``False`` lets every query see every key.
    convention : str, default "bool"
        How the mask is passed: a key of :data:`MASK_CONVENTIONS`. Ignored when
        ``causal=False``.

    Returns
    -------
    MaskedAttention
        ``(allowed, weights, future_weight, empty_rows)``.

    Shapes
    ------
    queries : (T_q, d_k)
    keys : (T_k, d_k)
    allowed, weights : (T_q, T_k)

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> masked_attention(x, x, causal=True).weights.round(decimals=2)
    tensor([[1.0000, 0.0000, 0.0000],
            [0.3300, 0.6700, 0.0000],
            [0.2500, 0.2500, 0.5000]])
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
