"""Self-checks for Chapter 2, self-attention with trainable weights."""

from __future__ import annotations

import torch

from ..data import your_journey
from ..functional import scaled_dot_product_attention
from ._common import (
    _call,
    _matches,
    _require_callable,
    _require_close,
    _require_finite,
    _require_pair,
    _require_shape,
    _require_tensor,
    _require_weights,
    _scaled_reference,
    _shape,
)

__all__ = [
    "check_projected_context",
    "check_scaled_attention_fn",
    "check_score_variance",
    "check_v1_from_v2",
]


def check_projected_context(answer, inputs, W_query, W_key, W_value, query_index):
    """Check one query's context vector from attention with trainable weights.

    The reference follows Chapter 2: ``queries = inputs @ W_query``, ``keys = inputs
    @ W_key``, ``values = inputs @ W_value``; the query's scores against every key
    are divided by ``sqrt(d_k)`` (``d_k = W_key.shape[1]``), turned into weights by
    a softmax, and the weights mix the **values**.

    Parameters
    ----------
    answer : torch.Tensor
        Your context vector.
    inputs : torch.Tensor
        The embeddings, one row per token.
    W_query, W_key, W_value : torch.Tensor
        The projection matrices, as stored in ``SelfAttentionV1``.
    query_index : int
        Position of the query token.

    Returns
    -------
    None
        Prints one line starting with ✅ when the context vector is right.

    Raises
    ------
    AssertionError
        If ``answer`` is not a tensor, has another shape, contains NaN or infinite
        values, or its values are off; common slips (no scaling, scaling by ``d_k``
        instead of ``sqrt(d_k)``, mixing the inputs instead of the values) are named.

    Shapes
    ------
    inputs : (T, d_in); W_query, W_key, W_value : (d_in, d_out); answer : (d_out,).

    Examples
    --------
    >>> import torch
    >>> from attn_course.data import your_journey
    >>> x = your_journey().embeddings
    >>> W_q, W_k, W_v = torch.eye(3)[:, :2], torch.eye(3)[:, 1:], torch.eye(3)[:, :2]
    >>> q, keys, values = x[1] @ W_q, x @ W_k, x @ W_v
    >>> weights = torch.softmax(keys @ q / 2**0.5, dim=0)
    >>> check_projected_context(weights @ values, x, W_q, W_k, W_v, 1)
    ... # doctest: +NORMALIZE_WHITESPACE
    ✅ check_projected_context: your context vector for query 1 is correct; it
    equals softmax(q_1 . k_j / sqrt(2)) over the keys j, mixing the values.
    """
    x = inputs.detach()
    matrices = {"W_query": W_query, "W_key": W_key, "W_value": W_value}
    matrices = {k: v.detach() for k, v in matrices.items()}
    index = query_index % x.shape[0]
    queries = x @ matrices["W_query"]  # (T, d_in) @ (d_in, d_out) -> (T, d_out)
    keys = x @ matrices["W_key"]  # (T, d_out)
    values = x @ matrices["W_value"]  # (T, d_out)
    query = queries[index : index + 1]  # (1, d_out)
    d_k = keys.shape[-1]
    context, _ = _scaled_reference(query, keys, values)  # (1, d_out)
    expected = context[0]  # (d_out,)
    name = f"your context vector for query {index}"
    answer = _require_tensor(answer, name)
    if tuple(answer.shape) == (x.shape[1],) != tuple(expected.shape):
        raise AssertionError(
            f"{name}: wrong shape {_shape(answer)}, the width d_in of the inputs; the "
            f"expected shape is {_shape(expected)}, the width d_out of the values. "
            "Mix the values (inputs @ W_value), not the inputs."
        )
    _require_shape(answer, expected, name)
    _require_finite(answer, name)
    hint = ""
    slips = [
        (1.0, f"no scaling: divide the scores by sqrt(d_k) = sqrt({d_k})"),
        (1.0 / d_k, f"scores divided by d_k = {d_k} instead of by sqrt(d_k)"),
    ]
    for scale, slip in slips:
        if _matches(answer, _scaled_reference(query, keys, values, scale=scale)[0][0]):
            hint = f"\nYour vector matches {slip}."
    if x.shape[1] == d_k:
        mixed_inputs = _scaled_reference(query, keys, x)[0][0]  # (d_in,)
        if _matches(answer, mixed_inputs):
            hint = "\nYour vector mixes the inputs; mix the values, inputs @ W_value."
    _require_close(answer, expected, name, atol=1e-4, rtol=1e-4, hint=hint)
    print(
        f"✅ check_projected_context: {name} is correct; it equals "
        f"softmax(q_{index} . k_j / sqrt({d_k})) over the keys j, mixing the values."
    )


def _v2_modules():
    """V2 modules for check_v1_from_v2: (description, module), seeded, not global."""
    from ..modules import SelfAttentionV2

    cases = []
    state = torch.random.get_rng_state()
    try:
        for seed, (d_in, d_out) in enumerate([(3, 2), (4, 4), (5, 3)]):
            torch.manual_seed(seed)
            cases.append(
                (f"SelfAttentionV2({d_in}, {d_out})", SelfAttentionV2(d_in, d_out))
            )
    finally:
        torch.random.set_rng_state(state)  # leave the learner's random numbers alone
    return cases


def check_v1_from_v2(fn):
    """Check a function that copies a ``SelfAttentionV2``'s weights into a V1.

    ``fn(sa_v2)`` must return a :class:`attn_course.SelfAttentionV1` that computes
    the same map as ``sa_v2``. It is tried on three V2 modules of different sizes,
    one of them square (``d_in == d_out``), where a missing transpose raises no shape
    error. The V2 module must not be changed.

    Parameters
    ----------
    fn : callable
        Your function: takes a ``SelfAttentionV2``, returns a ``SelfAttentionV1``.

    Returns
    -------
    None
        Prints one line starting with ✅ when all modules pass.

    Raises
    ------
    AssertionError
        If ``fn`` raises, does not return a ``SelfAttentionV1``, its matrices have
        the wrong shape or values (a missing ``.T`` and swapped roles are named),
        its outputs differ from the V2 module's, or it changed the V2 module.

    Shapes
    ------
    nn.Linear weight : (d_out, d_in); SelfAttentionV1 matrices : (d_in, d_out).

    Examples
    --------
    >>> import torch
    >>> from attn_course import SelfAttentionV1
    >>> def v1_from_v2(sa_v2):
    ...     sa_v1 = SelfAttentionV1(sa_v2.d_in, sa_v2.d_out)
    ...     with torch.no_grad():
    ...         sa_v1.W_query.copy_(sa_v2.W_query.weight.T)
    ...         sa_v1.W_key.copy_(sa_v2.W_key.weight.T)
    ...         sa_v1.W_value.copy_(sa_v2.W_value.weight.T)
    ...     return sa_v1
    >>> check_v1_from_v2(v1_from_v2)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_v1_from_v2: your conversion is correct; each SelfAttentionV1 holds the
    transposed nn.Linear weights and computes the same outputs as its
    SelfAttentionV2 on 3 modules.
    """
    check = "check_v1_from_v2"
    if isinstance(fn, torch.nn.Module):
        raise TypeError(
            f"{check} expects your function itself, got a {type(fn).__name__} "
            f"module; pass it without calling it: {check}(v1_from_v2), not "
            f"{check}(v1_from_v2(sa_v2))"
        )
    _require_callable(fn, check, "v1_from_v2")
    state = torch.random.get_rng_state()
    try:
        _check_v1_modules(fn, check)
    finally:
        torch.random.set_rng_state(state)  # leave the learner's random numbers alone
    print(
        f"✅ {check}: your conversion is correct; each SelfAttentionV1 holds the "
        "transposed nn.Linear weights and computes the same outputs as its "
        "SelfAttentionV2 on 3 modules."
    )


def _check_v1_modules(fn, check):
    """The body of check_v1_from_v2: raise on the first module that fails."""
    from ..modules import SelfAttentionV1

    generator = torch.Generator().manual_seed(0)
    roles = ("W_query", "W_key", "W_value")
    for description, sa_v2 in _v2_modules():
        where = f" on {description}"
        x = torch.randn(2, 5, sa_v2.d_in, generator=generator)  # (B, T, d_in)
        with torch.no_grad():
            expected_out, expected_w = sa_v2(x, return_weights=True)
        linear = {role: getattr(sa_v2, role).weight.detach().clone() for role in roles}
        sa_v1 = _call(fn, check, (sa_v2,), description)
        if not isinstance(sa_v1, SelfAttentionV1):
            raise AssertionError(
                f"{check}: your function returned a {type(sa_v1).__name__}{where}; "
                "it should return a SelfAttentionV1 module, e.g. "
                "sa_v1 = SelfAttentionV1(sa_v2.d_in, sa_v2.d_out), then copy the "
                "weights into it."
            )
        for role in roles:
            matrix = getattr(sa_v1, role).detach()
            target = linear[role].T  # (d_in, d_out)
            name = f"{check}: your {role}"
            if tuple(matrix.shape) == tuple(linear[role].shape) != tuple(target.shape):
                raise AssertionError(
                    f"{name}{where} has shape {_shape(matrix)}, the shape of "
                    f"nn.Linear's weight (d_out, d_in); SelfAttentionV1 needs "
                    f"(d_in, d_out) = {_shape(target)}. nn.Linear computes "
                    "x @ weight.T, so copy weight.T."
                )
            _require_shape(matrix, target, name, where)
            hint = ""
            if matrix.shape[0] == matrix.shape[1] and _matches(matrix, linear[role]):
                hint = (
                    "\nIt equals nn.Linear's weight itself: nn.Linear computes "
                    "x @ weight.T, so V1 needs weight.T (no shape error warns you "
                    "when d_in == d_out)."
                )
            for other in roles:
                if other != role and _matches(matrix, linear[other].T):
                    hint = f"\nIt holds V2's {other} instead: copy each role to itself."
            _require_close(matrix, target, name, where, atol=1e-6, rtol=0, hint=hint)
        with torch.no_grad():
            out, weights = sa_v1(x, return_weights=True)
        _require_close(
            out,
            expected_out,
            f"{check}: your module's outputs",
            where,
            atol=1e-5,
            rtol=1e-4,
        )
        _require_close(
            weights,
            expected_w,
            f"{check}: your module's weights",
            where,
            atol=1e-5,
            rtol=1e-4,
        )
        for role in roles:
            if not torch.equal(getattr(sa_v2, role).weight.detach(), linear[role]):
                raise AssertionError(
                    f"{check}: your function changed the {role} of the "
                    f"SelfAttentionV2{where}; copy its weights, do not modify them."
                )


def _isclose(a, b, rel_tol=1e-6):
    """Whether two numbers agree to a relative tolerance (default: rounding only)."""
    return abs(a - b) <= rel_tol * max(abs(a), abs(b))


def _as_number(value, name):
    """Return ``value`` as a float, or raise a teaching AssertionError."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AssertionError(
            f"{name}: expected a number, got {type(value).__name__}; store a plain "
            f"number such as 4.0 (or a tensor holding one value)."
        )
    return float(value)


def check_score_variance(predicted_variance, scale, *, d_k, std):
    """Check a prediction of the variance of a dot product, and the fixing scale.

    A query and a key each have ``d_k`` independent entries with mean 0 and
    standard deviation ``std``. Each product ``q_m * k_m`` then has variance
    ``std**2 * std**2``, and the ``d_k`` products add up, so ``q . k`` has variance
    ``d_k * std**4``. Multiplying the scores by ``scale = 1 / sqrt(variance)`` gives
    them variance 1. The check also measures the variance on 20,000 random pairs.

    Parameters
    ----------
    predicted_variance : float
        Your prediction of the variance of ``q . k``.
    scale : float
        Your factor that gives the scores variance 1.
    d_k : int
        Width of the query and the key.
    std : float
        Standard deviation of every entry.

    Returns
    -------
    None
        Prints one line starting with ✅ when both numbers are right.

    Raises
    ------
    AssertionError
        If a number is missing or off; common slips (the unit-variance answer
        ``d_k``, one factor ``std**2`` too few, a standard deviation instead of a
        variance, ``1 / sqrt(d_k)`` as the scale) are named.

    Shapes
    ------
    Both answers are single numbers.

    Examples
    --------
    >>> check_score_variance(32.0, 32.0**-0.5, d_k=32, std=1.0)
    ... # doctest: +NORMALIZE_WHITESPACE
    ✅ check_score_variance: your prediction is correct; q . k has variance
    d_k * std**4 = 32 (measured on 20000 random pairs: 32.2), and scale = 0.1768
    makes it 1 (measured: 1.005).
    """
    check = "check_score_variance"
    variance = d_k * std**4
    predicted = _as_number(predicted_variance, f"{check}: your predicted_variance")
    if not _isclose(predicted, variance, rel_tol=1e-3):
        slips = {
            d_k: f"d_k = {d_k} is the variance for entries of variance 1; here each "
            f"entry has variance std**2 = {std**2:g}",
            d_k * std**2: "that has one factor std**2; each product q_m * k_m has "
            f"variance std**2 * std**2 = {std**4:g}",
            variance**0.5: "that is the standard deviation of q . k; the variance "
            "is its square",
        }
        hint = next(
            (text for value, text in slips.items() if _isclose(predicted, value, 1e-3)),
            f"each of the d_k = {d_k} products q_m * k_m has variance std**2 * std**2",
        )
        raise AssertionError(
            f"{check}: your predicted_variance {predicted:g} is off; {hint}. "
            "The variances of independent terms add up."
        )
    factor = _as_number(scale, f"{check}: your scale")
    expected_scale = variance**-0.5
    if not _isclose(factor, expected_scale, rel_tol=1e-3):
        slips = {
            d_k**-0.5: f"1 / sqrt(d_k) = {d_k**-0.5:.4g} gives variance 1 only when "
            "the entries have variance 1",
            1 / variance: "that divides by the variance; a factor c multiplies the "
            "variance by c**2, so divide by its square root",
            variance**0.5: "that multiplies by the standard deviation; divide by it",
        }
        hint = next(
            (text for value, text in slips.items() if _isclose(factor, value, 1e-3)),
            "multiplying by c multiplies the variance by c**2",
        )
        raise AssertionError(
            f"{check}: your scale {factor:g} is off; {hint}. The scores are "
            f"multiplied by scale, so scale = 1 / sqrt({variance:g})."
        )
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(20_000, d_k, generator=generator, dtype=torch.float64) * std
    k = torch.randn(20_000, d_k, generator=generator, dtype=torch.float64) * std
    dots = (q * k).sum(dim=-1)  # (N, d_k) -> (N,)
    print(
        f"✅ {check}: your prediction is correct; q . k has variance d_k * std**4 = "
        f"{variance:g} (measured on 20000 random pairs: {dots.var():.3g}), and "
        f"scale = {factor:.4g} makes it 1 (measured: {(dots * factor).var():.3f})."
    )


def _scaled_attention_inputs():
    """(description, queries, keys, values) for check_scaled_attention_fn."""
    from ..modules import SelfAttentionV2

    generator = torch.Generator().manual_seed(0)
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(789)
        sa_v2 = SelfAttentionV2(3, 2)
    finally:
        torch.random.set_rng_state(state)
    x = your_journey().embeddings
    with torch.no_grad():
        journey = (sa_v2.W_query(x), sa_v2.W_key(x), sa_v2.W_value(x))
    return [
        ('"Your journey starts with one step" projected to d_k = 2', *journey),
        (
            "random queries (4, 8), keys (5, 8) and values (5, 3)",
            torch.randn(4, 8, generator=generator) * 2,
            torch.randn(5, 8, generator=generator) * 2,
            torch.randn(5, 3, generator=generator),
        ),
        (
            "a batch: queries, keys and values of shape (2, 3, 16)",
            *(torch.randn(2, 3, 16, generator=generator) for _ in range(3)),
        ),
    ]


def check_scaled_attention_fn(fn):
    """Check a function computing scaled dot-product attention.

    ``fn(queries, keys, values)`` must return ``(weights, context)`` with
    ``weights = softmax(queries @ keys^T / sqrt(d_k))`` over the keys and
    ``context = weights @ values``, for any number of leading batch dimensions.
    The reference is :func:`attn_course.scaled_dot_product_attention`. It is tried
    on the journey sentence and on random inputs where ``d_v != d_k`` and
    ``T_q != T_k``, so scaling by the wrong width shows.

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
        On the first input where ``fn`` raises, does not return a pair of tensors,
        returns a wrong shape, invalid weights or wrong values (no scaling, scaling
        by ``d_k`` or by the value width are named), or changes its inputs.

    Shapes
    ------
    queries (..., T_q, d_k), keys (..., T_k, d_k), values (..., T_k, d_v) ->
    weights (..., T_q, T_k), context (..., T_q, d_v).

    Examples
    --------
    >>> import torch
    >>> def scaled_attention(queries, keys, values):
    ...     scores = queries @ keys.transpose(-2, -1)  # (..., T_q, T_k)
    ...     weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
    ...     return weights, weights @ values  # (..., T_q, d_v)
    >>> check_scaled_attention_fn(scaled_attention)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_scaled_attention_fn: your scaled attention is correct; its weights and
    context vectors match on 3 inputs, including a batch and d_v != d_k.
    """
    check = "check_scaled_attention_fn"
    _require_callable(fn, check, "scaled_attention")
    for description, queries, keys, values in _scaled_attention_inputs():
        where = f" on {description}"
        inputs = [t.clone() for t in (queries, keys, values)]
        result = _call(fn, check, inputs, description)
        weights, context = _require_pair(result, check, where)
        expected_context, expected_weights = scaled_dot_product_attention(
            queries, keys, values, return_weights=True
        )
        name = f"{check}: your weights"
        weights = _require_tensor(weights, name, where)
        _require_shape(weights, expected_weights, name, where)
        _require_weights(weights, name, where)
        d_k, d_v = keys.shape[-1], values.shape[-1]
        slips = {
            "no scaling: divide the scores by sqrt(d_k) = "
            f"sqrt({d_k}) before the softmax": 1.0,
            f"scores divided by d_k = {d_k}; divide by sqrt(d_k)": 1.0 / d_k,
        }
        if d_v != d_k:
            slips[
                f"scores divided by sqrt(d_v) = sqrt({d_v}), the width of the values; "
                "use the width of the keys, keys.shape[-1]"
            ] = d_v**-0.5
        hint = ""
        for slip, scale in slips.items():
            if _matches(
                weights, _scaled_reference(queries, keys, values, scale=scale)[1]
            ):
                hint = f"\nYour weights match {slip}."
        _require_close(
            weights, expected_weights, name, where, atol=1e-4, rtol=1e-4, hint=hint
        )
        name = f"{check}: your context vectors"
        context = _require_tensor(context, name, where)
        _require_shape(context, expected_context, name, where)
        _require_finite(context, name, where)
        _require_close(
            context,
            expected_context,
            name,
            where,
            atol=1e-4,
            rtol=1e-4,
            hint="\nThe context is weights @ values: (T_q, T_k) @ (T_k, d_v).",
        )
        if not all(
            torch.equal(a, b)
            for a, b in zip(inputs, (queries, keys, values), strict=True)
        ):
            raise AssertionError(
                f"{check}: your function changed its inputs{where} in place; compute "
                "new tensors instead (e.g. scores = scores / ..., not scores /= ...)."
            )
    print(
        f"✅ {check}: your scaled attention is correct; its weights and context "
        "vectors match on 3 inputs, including a batch and d_v != d_k."
    )
