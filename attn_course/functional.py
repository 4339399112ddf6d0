"""Scaled dot-product attention, written out one step at a time.

``torch.nn.functional.scaled_dot_product_attention`` does all of this in one fused
call; here every step is a line you can read, print and change, and the weights
can be handed back. ``...`` stands for any number of batch dimensions.
Introduced in Chapter 1; every later chapter and every attention module calls it.
"""

import itertools
import math

import torch
import torch.nn.functional as F

from ._validate import (
    require_bool_mask,
    require_flag,
    require_floating,
    require_positive,
    require_probability,
    require_tensor,
)
from .masks import causal_mask

__all__ = ["scaled_dot_product_attention", "six_steps"]


def scaled_dot_product_attention(
    query,
    key,
    value,
    attn_mask=None,
    dropout_p=0.0,
    is_causal=False,
    scale=None,
    *,
    enable_gqa=False,
    return_weights=False,
    training=True,
    generator=None,
):
    """Attend from every query to every key and mix the values with the weights.

    The signature and results of ``torch.nn.functional.scaled_dot_product_attention``,
    in six steps (:func:`six_steps`) after checking the inputs. A bool ``attn_mask``
    means ``True`` = *may attend* (``nn.MultiheadAttention`` uses the opposite); a
    float one is added to the scores. ``is_causal`` aligns the triangle at the top-left
    corner. ``enable_gqa`` repeats each key and value head (dimension -3) for its
    group of query heads. ``training=False`` turns dropout off; without a
    ``generator`` the dropout mask is drawn as ``nn.Dropout`` draws it. With
    ``return_weights``, also return the weights used (``output == weights @ value``); a
    query whose keys are all masked gets weights and output of zeros, as in PyTorch.
    Introduced in Chapter 1; ``enable_gqa`` in Chapter 9.

    Shapes
    ------
    query : (..., T_q, d_k)
    key : (..., T_k, d_k)
    value : (..., T_k, d_v)
    attn_mask : (..., T_q, T_k)
    output : (..., T_q, d_v)
    weights : (..., T_q, T_k)

    Examples
    --------
    >>> x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # (T=3, d_k=2)
    >>> out, weights = scaled_dot_product_attention(
    ...     x, x, x, is_causal=True, return_weights=True
    ... )
    >>> weights.round(decimals=2)
    tensor([[1.0000, 0.0000, 0.0000],
            [0.3300, 0.6700, 0.0000],
            [0.2500, 0.2500, 0.5000]])
    >>> torch.allclose(out, weights @ x)
    True

    The second query may use no key at all, so its weights and output are zeros:

    >>> mask = torch.tensor([[True, True, False], [False, False, False]])
    >>> out, weights = scaled_dot_product_attention(
    ...     x[:2], x, x, attn_mask=mask, return_weights=True
    ... )
    >>> weights.round(decimals=2)
    tensor([[0.6700, 0.3300, 0.0000],
            [0.0000, 0.0000, 0.0000]])

    Grouped-query attention: query heads 0 and 1 read key/value head 0:

    >>> q = torch.randn(1, 4, 3, 8)  # (B, H_q=4, T_q, d_k)
    >>> k, v = torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8)  # H_kv=2
    >>> out = scaled_dot_product_attention(q, k, v, enable_gqa=True)
    >>> head_1 = scaled_dot_product_attention(q[:, 1], k[:, 0], v[:, 0])
    >>> torch.allclose(out[:, 1], head_1)
    True
    """
    hint = "pass enable_gqa=True when key and value have fewer heads than query"
    if require_flag(enable_gqa, "enable_gqa", hint=hint):
        # Step 0 (grouped-query attention): one copy of each key/value head for
        # every query head it serves, so that the heads line up one to one.
        key, value = _repeat_key_value_heads(query, key, value)
    _, dropout_p, scale = _check_inputs(
        query, key, value, attn_mask, dropout_p, is_causal, scale
    )
    return six_steps(
        query,
        key,
        value,
        attn_mask,
        dropout_p,
        is_causal,
        scale,
        return_weights=return_weights,
        training=training,
        generator=generator,
    )


def six_steps(
    query,
    key,
    value,
    attn_mask,
    dropout_p,
    is_causal,
    scale,
    *,
    return_weights,
    training,
    generator=None,
):
    """The six steps of attention, on inputs already checked: scores, scale, mask,
    softmax, dropout, weighted sum of the values. Introduced in Chapter 1.

    ``scale`` is a number and the heads line up one to one. The attention modules
    call this directly: their own projections made the inputs, and the checks would
    cost as much as the arithmetic when one token is generated at a time.

    Examples
    --------
    >>> x = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    >>> six_steps(x, x, x, None, 0.0, False, 1.0, return_weights=False, training=False)
    tensor([[0.7311, 0.2689],
            [0.2689, 0.7311]])
    """
    # Step 1: how well each query matches each key, one dot product per pair.
    # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    scores = query @ key.transpose(-2, -1)

    # Step 2: scale, so the softmax does not saturate as d_k grows.
    scores = scores * scale

    # Step 3: mask. A blocked key gets a score of -inf, so its weight will be 0.
    scores = _masked(scores, attn_mask, is_causal)

    # Step 4: softmax over the keys, so each query's weights sum to 1.
    # A query whose keys are all masked has a row of -inf scores. A plain softmax
    # would give NaN there (-inf - -inf), so, like PyTorch, we return weights of 0
    # for such rows. Setting their scores to 0 first keeps the softmax, and its
    # gradient, free of NaN.
    # A causal mask alone never blocks a whole row (key 0 is always allowed), and
    # without a mask nothing is blocked, so the check is skipped there: it costs as
    # much as the softmax itself.
    if is_causal or attn_mask is None:
        weights = torch.softmax(scores, dim=-1)
    else:
        # (..., T_q, T_k) -> (..., T_q, 1)
        fully_masked = torch.isneginf(scores).all(dim=-1, keepdim=True)
        scores = scores.masked_fill(fully_masked, 0.0)
        weights = torch.softmax(scores, dim=-1)
        weights = weights.masked_fill(fully_masked, 0.0)

    # Step 5: dropout on the weights (not on the scores). Each weight is kept with
    # probability 1 - p and scaled by 1 / (1 - p), so its expected value is unchanged.
    if training and dropout_p > 0.0 and generator is None:
        # Without a generator, draw exactly as nn.Dropout does, so code that calls
        # nn.Dropout on the weights gets the same mask after the same manual_seed.
        weights = F.dropout(weights, p=dropout_p, training=True)
    elif training and dropout_p > 0.0:
        keep_prob = torch.full_like(weights, 1.0 - dropout_p)
        keep = torch.bernoulli(keep_prob, generator=generator).bool()
        weights = torch.where(keep, weights / (1.0 - dropout_p), 0.0)

    # Step 6: each output is the weighted sum of the values.
    # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)
    output = weights @ value

    if return_weights:
        return output, weights
    return output


def _masked(scores, attn_mask, is_causal):
    """``scores`` with every blocked key at -inf (a float ``attn_mask`` is added):
    step 3 of :func:`six_steps`."""
    if is_causal:
        T_q, T_k = scores.shape[-2:]
        allowed = causal_mask(T_q, T_k, device=scores.device)
        return scores.masked_fill(~allowed, float("-inf"))
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        return scores.masked_fill(~attn_mask, float("-inf"))
    if attn_mask is not None:
        return scores + attn_mask.to(scores.dtype)
    return scores


# Sizes that two inputs must share: (first, second, dimension, letter, why, fix).
_SHARED_SIZES = (
    (
        "query",
        "key",
        -1,
        "d_k",
        "each score is a dot product of a query and a key",
        "project both to the same width, e.g. with nn.Linear(d_in, d_out)",
    ),
    (
        "key",
        "value",
        -2,
        "T_k",
        "one value per key",
        "pass the same tokens as keys and values",
    ),
)


def _repeat_key_value_heads(query, key, value):
    """Key and value with each head (dimension -3) repeated for its group of query
    heads, so that key head ``h`` lines up with query heads
    ``h * group .. (h + 1) * group - 1``.
    """
    tensors = {"query": query, "key": key, "value": value}
    for name, tensor in tensors.items():
        require_tensor(tensor, name)
        if tensor.dim() < 3:
            raise ValueError(
                f"enable_gqa=True needs a head dimension: {name} must have at least 3 "
                f"dimensions (..., H, length, features), got shape "
                f"{tuple(tensor.shape)}; add one, e.g. {name}.unsqueeze(-3), or leave "
                "enable_gqa=False"
            )
    H_q = query.size(-3)
    repeated = []
    for name in ("key", "value"):
        tensor = tensors[name]
        H_kv = tensor.size(-3)
        if H_q % H_kv != 0:
            divisors = [n for n in range(1, H_q + 1) if H_q % n == 0]
            raise ValueError(
                "with enable_gqa=True the number of query heads must be a multiple of "
                f"the number of {name} heads (dimension -3), got query "
                f"{tuple(query.shape)} with H_q={H_q} heads and {name} "
                f"{tuple(tensor.shape)} with H_kv={H_kv} heads; give {name} a number "
                f"of heads that divides {H_q}: one of {divisors}"
            )
        group = H_q // H_kv  # how many query heads share one key/value head
        repeated.append(
            tensor.repeat_interleave(group, dim=-3) if group > 1 else tensor
        )
    return repeated


def _check_inputs(query, key, value, attn_mask, dropout_p, is_causal, scale):
    """Raise a teaching error for bad inputs; return the scores shape, ``dropout_p`` and
    the scale.
    """
    tensors = {"query": query, "key": key, "value": value}
    for name, tensor in tensors.items():
        require_floating(require_tensor(tensor, name), name)
    if not query.dtype == key.dtype == value.dtype:
        raise TypeError(
            "query, key and value must share one dtype, got "
            f"query {query.dtype}, key {key.dtype}, value {value.dtype}; "
            "convert them, e.g. key = key.to(query.dtype)"
        )
    for name, tensor in tensors.items():
        if tensor.dim() < 2:
            raise ValueError(
                f"{name} must have at least 2 dimensions (..., length, features), "
                f"got shape {tuple(tensor.shape)}; for a single token add a length "
                f"dimension: {name}.unsqueeze(0) has shape "
                f"{tuple(tensor.unsqueeze(0).shape)}"
            )
    for first, second, dim, letter, why, fix in _SHARED_SIZES:
        a, b = tensors[first], tensors[second]
        if a.size(dim) != b.size(dim):
            which = "last dimension" if dim == -1 else "length"
            raise ValueError(
                f"{first} and {second} must have the same {which} {letter} ({why}), "
                f"got {first} {tuple(a.shape)} with {letter}={a.size(dim)} and "
                f"{second} {tuple(b.shape)} with {letter}={b.size(dim)}; {fix}"
            )
    batch_shapes = [tuple(t.shape[:-2]) for t in (query, key, value)]
    try:
        batch = _broadcast_shapes(*batch_shapes)
    except RuntimeError:
        raise ValueError(
            "the batch dimensions (all but the last two) of query, key and value "
            f"must broadcast, got query {batch_shapes[0]}, key {batch_shapes[1]} and "
            f"value {batch_shapes[2]}; make each batch dimension equal, or 1 where a "
            f"tensor is shared{_gqa_hint(query, key, value)}"
        ) from None
    scores_shape = (*batch, query.size(-2), key.size(-2))

    dropout_p = require_probability(dropout_p, "dropout_p")
    default_scale = 1.0 / math.sqrt(query.size(-1))
    if scale is None:
        scale = default_scale
    else:
        scale = require_positive(
            scale,
            "scale",
            hint=f"leave scale=None for 1/sqrt(d_k) = {default_scale:.4g}, or use "
            "scale=1.0 for plain dot products",
        )
    if attn_mask is not None:
        if is_causal:
            raise ValueError(
                "got both attn_mask and is_causal=True (PyTorch rejects this too); "
                "pass one of them, or combine them yourself: "
                "attn_mask=mask & causal_mask(T_q, T_k) for a bool mask"
            )
        _check_mask(attn_mask, scores_shape)
    return scores_shape, dropout_p, scale


def _broadcast_shapes(*shapes):
    """The shape that ``shapes`` broadcast to: ``torch.broadcast_shapes`` in plain
    Python, which costs far less on every call of attention. Raises ``RuntimeError`` as
    it does.
    """
    result = []
    for sizes in itertools.zip_longest(*(reversed(s) for s in shapes), fillvalue=1):
        other = {n for n in sizes if n != 1}
        if len(other) > 1:
            raise RuntimeError(f"the shapes {shapes} do not broadcast")
        result.append(other.pop() if other else 1)
    return tuple(reversed(result))


def _gqa_hint(query, key, value):
    if min(t.dim() for t in (query, key, value)) < 3:
        return ""
    H_q = query.size(-3)
    # Head counts that cannot broadcast against H_q (a count of 1 always does).
    fewer = {t.size(-3) for t in (key, value)} - {1, H_q}
    if not fewer or any(H_q % H_kv for H_kv in fewer):
        return ""
    return (
        f"; if key and value have fewer heads than query (H_kv={min(fewer)} "
        f"against H_q={H_q}, grouped-query attention), pass enable_gqa=True"
    )


def _check_mask(attn_mask, scores_shape):
    fix = "build it with torch.tensor(..., dtype=torch.bool) (True = may attend)"
    require_tensor(attn_mask, "attn_mask", fix=fix)
    if not attn_mask.is_floating_point():
        # Besides bool, a float mask is fine here: it is added to the scores.
        require_bool_mask(
            attn_mask,
            "attn_mask",
            meaning="True = may attend; a float mask, added to the scores, works too",
        )
    mask_shape = tuple(attn_mask.shape)
    try:
        fits = _broadcast_shapes(mask_shape, scores_shape) == tuple(scores_shape)
    except RuntimeError:
        fits = False
    if fits:
        return
    # A (B, T_k) padding mask lines up with (T_q, T_k), not with (B, ..., T_k).
    is_padding_mask = mask_shape == (scores_shape[0], scores_shape[-1])
    if is_padding_mask and len(scores_shape) == 4:
        fix = (
            "this looks like a (B, T_k) padding mask: reshape it to (B, 1, 1, T_k) "
            "with attn_course.key_padding_to_attn_mask(attn_mask)"
        )
    elif is_padding_mask and len(scores_shape) == 3:
        fix = (
            "this looks like a (B, T_k) padding mask: reshape it to (B, 1, T_k) "
            "with attn_mask[:, None, :]"
        )
    else:
        fix = (
            "give it the shape (T_q, T_k), (B, T_q, T_k) or (B, H, T_q, T_k) of the "
            "scores, with 1 in any dimension shared by all entries"
        )
    raise ValueError(
        f"attn_mask of shape {mask_shape} does not broadcast to the scores shape "
        f"{scores_shape} (..., T_q, T_k); {fix}"
    )
