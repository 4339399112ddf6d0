"""Self-checks for Chapter 3, the causal attention mask."""

from __future__ import annotations

import torch

from ..data import your_journey
from ..functional import scaled_dot_product_attention
from ._common import (
    _INVERTED,
    _call,
    _first_difference,
    _fmt_number,
    _fmt_values,
    _matches,
    _require_callable,
    _require_close,
    _require_pair,
    _require_shape,
    _require_tensor,
    _require_weights,
    _scaled_reference,
    _unravel,
)

__all__ = [
    "check_additive_mask",
    "check_causal_attention_fn",
    "check_causal_mask",
    "check_mha_mask_fn",
]


def _mask_sizes():
    """Sequence lengths the mask checks try; T = 1 last, where several mistakes
    look alike (the inverted 1 x 1 mask also lacks its diagonal)."""
    return (2, 5, 6, 1)


def check_causal_mask(fn):
    """Check a function that builds a causal mask in the SDPA convention.

    ``fn(T)`` must return a bool ``(T, T)`` mask that is ``True`` where query ``i``
    may attend to key ``j``, that is for ``j <= i`` (the lower triangle with the
    diagonal), as ``torch.nn.functional.scaled_dot_product_attention`` and
    :func:`attn_course.causal_mask` use it. It is tried for ``T`` = 1, 2, 5 and 6.

    Parameters
    ----------
    fn : callable
        Your function: takes the number of tokens ``T``, returns the mask.

    Returns
    -------
    None
        Prints one line starting with ✅ when every length passes.

    Raises
    ------
    AssertionError
        If ``fn`` raises, returns something that is not a tensor, has the wrong shape
        or dtype (a float mask is recognised), or wrong entries: an inverted mask
        (True = blocked), a missing diagonal and the upper triangle are named.

    Shapes
    ------
    fn(T) : (T, T), bool.

    Examples
    --------
    >>> import torch
    >>> def my_causal_mask(T):
    ...     return torch.ones(T, T, dtype=torch.bool).tril()
    >>> check_causal_mask(my_causal_mask)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_causal_mask: your causal mask is correct for T = 1, 2, 5, 6; True (may
    attend) on and below the diagonal, False above it.
    >>> check_causal_mask(lambda T: ~my_causal_mask(T))
    Traceback (most recent call last):
    ...
    AssertionError: check_causal_mask: your mask for T = 2: your mask is inverted: ...
    """
    check = "check_causal_mask"
    _require_callable(fn, check, "my_causal_mask")
    for T in _mask_sizes():
        name = f"{check}: your mask for T = {T}"
        mask = _call(fn, check, (T,), f"T = {T}")
        expected = torch.ones(T, T, dtype=torch.bool).tril()  # (T, T)
        mask = _require_tensor(mask, name)
        _require_shape(mask, expected, name)
        if mask.dtype != torch.bool:
            values = mask.detach()
            if values.is_floating_point() and torch.equal(
                values, torch.zeros(T, T).masked_fill(~expected, float("-inf"))
            ):
                fix = (
                    "this is an additive float mask (0 / -inf), which is added to the "
                    "scores; this exercise asks for the bool mask: True = may attend"
                )
            else:
                fix = (
                    "create it with dtype=torch.bool (e.g. torch.ones(T, T, "
                    "dtype=torch.bool).tril()) or convert it with .bool(); an int or "
                    "float mask of 0 and 1 would be added to the scores instead"
                )
            raise AssertionError(f"{name}: dtype is {mask.dtype}, not bool; {fix}.")
        if torch.equal(mask, expected):
            continue
        if torch.equal(mask, ~expected):
            hint = _INVERTED
        elif torch.equal(mask, expected.tril(-1)):
            hint = (
                "the diagonal is False, but a token may attend to itself: keep the "
                "diagonal (tril(), not tril(-1) or tril(diagonal=-1))"
            )
        elif torch.equal(mask, expected.T):
            hint = (
                "this is the upper triangle. Row i is query i and column j is key j; "
                "query i may see keys j <= i, the lower triangle: use .tril()"
            )
        else:
            i, j = _first_difference(mask, expected)
            allowed = "may" if j <= i else "may not"
            hint = (
                f"entry [{i}, {j}] is {bool(mask[i, j])}, but query {i} {allowed} "
                f"attend to key {j}"
            )
        raise AssertionError(f"{name}: {hint}.\n{mask.int()}")
    sizes = ", ".join(str(T) for T in sorted(_mask_sizes()))
    print(
        f"✅ {check}: your causal mask is correct for T = {sizes}; True (may attend) "
        "on and below the diagonal, False above it."
    )


def _sdpa_masks():
    """(description, bool mask, True = may attend) for check_mha_mask_fn."""
    generator = torch.Generator().manual_seed(0)
    random = torch.rand(5, 5, generator=generator) < 0.5  # (5, 5)
    random[:, 0] = True  # every query may attend to at least one key
    wide = torch.ones(3, 5, dtype=torch.bool).tril(diagonal=2)  # (3, 5)
    return [
        ("the causal mask for T = 4", torch.ones(4, 4, dtype=torch.bool).tril()),
        ("a random (5, 5) mask", random),
        ("a (3, 5) mask for 3 queries and 5 keys", wide),
    ]


def _identity_mha(E):
    """An ``nn.MultiheadAttention`` with one head whose projections do nothing.

    With identity projections and zero biases it computes plain scaled
    dot-product attention of its inputs, so its output can be compared with
    ``scaled_dot_product_attention`` on the same tensors.
    """
    mha = torch.nn.MultiheadAttention(E, num_heads=1, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.eye(E).repeat(3, 1))  # (3E, E)
        mha.in_proj_bias.zero_()
        mha.out_proj.weight.copy_(torch.eye(E))
        mha.out_proj.bias.zero_()
    return mha.eval()


def check_mha_mask_fn(fn):
    """Check a function converting an SDPA bool mask to ``nn.MultiheadAttention``'s.

    ``scaled_dot_product_attention`` reads ``True`` as *may attend*;
    ``nn.MultiheadAttention``'s bool ``attn_mask`` reads ``True`` as *blocked*.
    ``fn(mask)`` must return the mask that blocks the same keys in
    ``nn.MultiheadAttention``. It is tried on a causal, a random and a non-square
    mask, and each result is run through a real ``nn.MultiheadAttention`` and
    compared with ``scaled_dot_product_attention`` on the original mask.

    Parameters
    ----------
    fn : callable
        Your function: takes a bool mask (True = may attend), returns a bool mask
        (True = blocked).

    Returns
    -------
    None
        Prints one line starting with ✅ when every mask passes.

    Raises
    ------
    AssertionError
        If ``fn`` raises, returns something that is not a bool tensor of the same
        shape, returns the mask unchanged, gives ``nn.MultiheadAttention`` different
        results, or changes its input in place.

    Shapes
    ------
    mask : (T_q, T_k) -> fn(mask) : (T_q, T_k), bool.

    Examples
    --------
    >>> check_mha_mask_fn(lambda mask: ~mask)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_mha_mask_fn: your conversion is correct; nn.MultiheadAttention with your
    masks gives the same outputs as scaled_dot_product_attention with the originals,
    on 3 masks.
    """
    check = "check_mha_mask_fn"
    _require_callable(fn, check, "to_mha_mask")
    generator = torch.Generator().manual_seed(1)
    E = 4
    mha = _identity_mha(E)
    for description, original in _sdpa_masks():
        where = f" on {description}"
        mask = original.clone()
        result = _call(fn, check, (mask,), description)
        name = f"{check}: your mask"
        result = _require_tensor(result, name, where)
        _require_shape(result, original, name, where)
        if not torch.equal(mask, original):
            raise AssertionError(
                f"{check}: your function changed its input mask{where} in place; "
                "return a new mask, e.g. ~mask, instead of mask.logical_not_()."
            )
        if result.dtype != torch.bool:
            raise AssertionError(
                f"{name}{where} has dtype {result.dtype}; this exercise asks for a "
                "bool mask (True = blocked). nn.MultiheadAttention also accepts a "
                "float mask, but that one is added to the scores (0 / -inf)."
            )
        if torch.equal(result, original):
            raise AssertionError(
                f"{name}{where} is the input unchanged. nn.MultiheadAttention reads "
                "True as blocked, the opposite of scaled_dot_product_attention: "
                "invert the mask with ~mask (or mask.logical_not())."
            )
        T_q, T_k = original.shape
        query = torch.randn(1, T_q, E, generator=generator)  # (B, T_q, E)
        key = torch.randn(1, T_k, E, generator=generator)  # (B, T_k, E)
        expected = scaled_dot_product_attention(query, key, key, attn_mask=original)
        with torch.no_grad():
            output, _ = mha(query, key, key, attn_mask=result, need_weights=False)
        _require_close(
            output,
            expected,
            f"{check}: nn.MultiheadAttention's output with your mask",
            where,
            atol=1e-5,
            rtol=1e-4,
            hint="\nTrue must block exactly the keys the original mask forbids.",
        )
    print(
        f"✅ {check}: your conversion is correct; nn.MultiheadAttention with your "
        "masks gives the same outputs as scaled_dot_product_attention with the "
        "originals, on 3 masks."
    )


def check_additive_mask(fn):
    """Check a function that builds an additive (float) causal mask.

    ``fn(T)`` must return a float ``(T, T)`` mask that is added to the scores: ``0``
    where query ``i`` may attend to key ``j`` (``j <= i``) and ``-inf`` above the
    diagonal. A very large negative number (``<= -1e4``) instead of ``-inf`` is
    accepted too: after the softmax it gives the same weights. It is tried for
    ``T`` = 1, 2, 5 and 6, and on random scores.

    Parameters
    ----------
    fn : callable
        Your function: takes the number of tokens ``T``, returns the float mask.

    Returns
    -------
    None
        Prints one line starting with ✅ when every length passes.

    Raises
    ------
    AssertionError
        If ``fn`` raises, returns a tensor of the wrong shape or dtype, or wrong
        entries: NaN (the ``0 * -inf`` trap), ``+inf``, 0/1 values that block
        nothing, an inverted mask and a missing diagonal are named.

    Shapes
    ------
    fn(T) : (T, T), floating point.

    Examples
    --------
    >>> import torch
    >>> def additive_causal_mask(T):
    ...     blocked = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
    ...     return torch.zeros(T, T).masked_fill(blocked, float("-inf"))
    >>> check_additive_mask(additive_causal_mask)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_additive_mask: your additive mask is correct for T = 1, 2, 5, 6; 0 on
    and below the diagonal, -inf above it, and softmax(scores + mask) gives the
    causal weights.

    The recipe ``triu(ones) * -inf`` multiplies 0 by -inf:

    >>> check_additive_mask(
    ...     lambda T: torch.triu(torch.ones(T, T), diagonal=1) * float("-inf")
    ... )
    Traceback (most recent call last):
    ...
    AssertionError: check_additive_mask: your mask for T = 2 contains NaN: [nan, ...
    """
    check = "check_additive_mask"
    _require_callable(fn, check, "additive_causal_mask")
    generator = torch.Generator().manual_seed(0)
    finite_blocks = False
    for T in _mask_sizes():
        name = f"{check}: your mask for T = {T}"
        allowed = torch.ones(T, T, dtype=torch.bool).tril()  # (T, T)
        mask = _require_tensor(_call(fn, check, (T,), f"T = {T}"), name)
        _require_shape(mask, allowed, name)
        values = mask.detach().to("cpu")
        if not values.is_floating_point():
            raise AssertionError(
                f"{name}: dtype is {values.dtype}; an additive mask is floating "
                "point, 0 where attending is allowed and -inf where it is blocked, "
                "e.g. torch.zeros(T, T).masked_fill(blocked, float('-inf'))."
            )
        values = values.double()
        if torch.isnan(values).any():
            raise AssertionError(
                f"{name} contains NaN: {_fmt_values(values)}. Multiplying a 0/1 mask "
                "by float('-inf') gives 0 * -inf = nan, not 0. Use "
                "torch.zeros(T, T).masked_fill(blocked, float('-inf')) or "
                "torch.where(blocked, float('-inf'), 0.0) instead."
            )
        if torch.isposinf(values).any():
            raise AssertionError(
                f"{name} contains +inf; blocked entries must be -inf, so that their "
                "exponential is 0."
            )
        blocked_ok = values <= -1e4  # -inf, or a very large negative number
        kept_ok = values.abs() < 1e-6
        if bool(blocked_ok[~allowed].all() and kept_ok[allowed].all()):
            finite_blocks |= bool(torch.isfinite(values[~allowed]).any())
            scores = torch.randn(T, T, generator=generator, dtype=torch.float64)
            expected = torch.softmax(scores.masked_fill(~allowed, -torch.inf), -1)
            _require_close(
                torch.softmax(scores + values, dim=-1),
                expected,
                f"{check}: softmax(scores + your mask) for T = {T}",
                atol=1e-6,
                rtol=0,
            )
            continue
        strict = allowed.tril(-1)  # (T, T): the past without the diagonal
        if bool(blocked_ok[allowed].all() and kept_ok[~allowed].all()):
            hint = (
                "your mask is inverted: it blocks the past and the token itself "
                "and keeps the future; put 0 on and below the diagonal and -inf above"
            )
        elif bool(blocked_ok[~allowed.T].all() and kept_ok[allowed.T].all()):
            hint = (
                "it is transposed: it blocks the past and keeps the future. Row i is "
                "query i and column j is key j; block j > i, above the diagonal"
            )
        elif bool(((values == 0) | (values == 1)).all()):
            hint = (
                "it holds only 0 and 1; adding 1 to a score blocks nothing. Blocked "
                "entries need -inf"
            )
        elif bool(blocked_ok[~strict].all() and kept_ok[strict].all()):
            hint = (
                "the diagonal is blocked, but a token may attend to itself: block "
                "only j > i (triu(diagonal=1))"
            )
        else:
            bad = ~torch.where(allowed, kept_ok, blocked_ok)
            i, j = _first_difference(bad, torch.zeros_like(bad))
            want = "0 (allowed)" if j <= i else "-inf (blocked)"
            hint = f"entry [{i}, {j}] is {_fmt_number(values[i, j])}, expected {want}"
        raise AssertionError(f"{name}: {hint}.\n{values.float()}")
    sizes = ", ".join(str(T) for T in sorted(_mask_sizes()))
    blocked = "a large negative number" if finite_blocks else "-inf"
    print(
        f"✅ {check}: your additive mask is correct for T = {sizes}; 0 on and below "
        f"the diagonal, {blocked} above it, and softmax(scores + mask) gives the "
        "causal weights."
    )


def _causal_attention_inputs():
    """(description, queries, keys, values) for check_causal_attention_fn."""
    from ..modules import CausalAttention

    generator = torch.Generator().manual_seed(0)
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(123)
        ca = CausalAttention(3, 2, 6, 0.0)
    finally:
        torch.random.set_rng_state(state)
    x = your_journey().embeddings
    with torch.no_grad():
        journey = (ca.W_query(x), ca.W_key(x), ca.W_value(x))
    return [
        ('"Your journey starts with one step" projected to d_k = 2', *journey),
        (
            "a batch: queries and keys (2, 5, 4), values (2, 5, 3)",
            torch.randn(2, 5, 4, generator=generator) * 2,
            torch.randn(2, 5, 4, generator=generator) * 2,
            torch.randn(2, 5, 3, generator=generator),
        ),
    ]


def check_causal_attention_fn(fn):
    """Check a function computing causal scaled dot-product attention.

    ``fn(queries, keys, values)`` must return ``(weights, context)``: query ``i``
    attends only to keys ``0..i``, the scores are divided by ``sqrt(d_k)``, and
    ``context = weights @ values``. The reference is
    :func:`attn_course.scaled_dot_product_attention` with ``is_causal=True``.

    Parameters
    ----------
    fn : callable
        Your function: takes queries, keys and values, returns (weights, context).

    Returns
    -------
    None
        Prints one line starting with ✅ when all inputs pass.

    Raises
    ------
    AssertionError
        On the first input where ``fn`` raises, does not return a pair of tensors or
        returns wrong values; an inverted mask, a missing mask (weight on future
        keys), NaN from ``0 * -inf``, masking after the softmax without
        renormalising and a missing scale are named.

    Shapes
    ------
    queries (..., T, d_k), keys (..., T, d_k), values (..., T, d_v) ->
    weights (..., T, T), context (..., T, d_v).

    Examples
    --------
    >>> import torch
    >>> def causal_attention(queries, keys, values):
    ...     T = queries.shape[-2]
    ...     scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
    ...     future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
    ...     weights = torch.softmax(scores.masked_fill(future, -torch.inf), dim=-1)
    ...     return weights, weights @ values
    >>> check_causal_attention_fn(causal_attention)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_causal_attention_fn: your causal attention is correct; no weight on
    future keys, and its weights and context vectors match on 2 inputs.
    """
    check = "check_causal_attention_fn"
    _require_callable(fn, check, "causal_attention")
    for description, queries, keys, values in _causal_attention_inputs():
        where = f" on {description}"
        inputs = [t.clone() for t in (queries, keys, values)]
        weights, context = _require_pair(
            _call(fn, check, inputs, description), check, where
        )
        expected_context, expected_weights = scaled_dot_product_attention(
            queries, keys, values, is_causal=True, return_weights=True
        )
        name = f"{check}: your weights"
        weights = _require_tensor(weights, name, where)
        _require_shape(weights, expected_weights, name, where)
        T = queries.shape[-2]
        allowed = torch.ones(T, T, dtype=torch.bool).tril()  # (T, T)
        answer = weights.detach().double()
        inverted = _scaled_reference(queries, keys, values, mask=~allowed)[1]
        if _matches(answer[..., :-1, :], inverted[..., :-1, :]):
            raise AssertionError(f"{name}{where}: {_INVERTED}.")
        if torch.isnan(answer).any():
            raise AssertionError(
                f"{name}{where} contain NaN. A common cause is building the mask "
                "as ones * float('-inf'): 0 * -inf = nan. Use "
                "scores.masked_fill(future, float('-inf')), where future is True "
                "above the diagonal."
            )
        future = answer.masked_fill(allowed, 0.0)  # (..., T, T): weights on j > i
        leak = future.abs().reshape(-1, T, T).amax(dim=0)  # (T, T), worst case
        if bool((leak > 1e-6).any()):
            i, j = _unravel(int(leak.reshape(-1).argmax()), (T, T))
            raise AssertionError(
                f"{name}{where} put weight on the future: query {i} gives "
                f"{_fmt_number(leak[i, j])} to key {j} > {i}. Set the scores above "
                "the diagonal to -inf before the softmax."
            )
        scaled = _scaled_reference(queries, keys, values)[1]  # no mask
        if _matches(answer, scaled.masked_fill(~allowed, 0.0)):
            raise AssertionError(
                f"{name}{where}: you zeroed the future weights after the softmax "
                "but did not renormalise, so the rows sum to "
                f"{_fmt_values(answer.sum(-1))}; divide each row by its sum, or "
                "mask with -inf before the softmax."
            )
        _require_weights(weights, name, where)
        unscaled = _scaled_reference(queries, keys, values, scale=1.0, mask=allowed)
        hint = ""
        if _matches(answer, unscaled[1]):
            d_k = keys.shape[-1]
            hint = f"\nYour weights match no scaling: divide the scores by sqrt({d_k})."
        _require_close(
            weights, expected_weights, name, where, atol=1e-4, rtol=1e-4, hint=hint
        )
        name = f"{check}: your context vectors"
        context = _require_tensor(context, name, where)
        _require_shape(context, expected_context, name, where)
        _require_close(
            context,
            expected_context,
            name,
            where,
            atol=1e-4,
            rtol=1e-4,
            hint="\nThe context is weights @ values.",
        )
    print(
        f"✅ {check}: your causal attention is correct; no weight on future keys, and "
        "its weights and context vectors match on 2 inputs."
    )
