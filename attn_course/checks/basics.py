"""Self-checks for Chapter 1, toy dot-product attention."""

from __future__ import annotations

import torch

from ..data import hello_shiny_sun, your_journey
from ..explorer import explore
from ..functional import scaled_dot_product_attention
from ._common import (
    _call,
    _fmt_values,
    _require_callable,
    _require_close,
    _require_finite,
    _require_pair,
    _require_shape,
    _require_tensor,
    _require_weights,
    _shape,
)

__all__ = [
    "check_attention_fn",
    "check_close",
    "check_context_vector",
    "check_softmax",
    "check_weights",
]


def check_close(answer, expected, *, name="your answer", atol=1e-4, rtol=1e-4):
    """Check that a tensor answer matches the expected values.

    Parameters
    ----------
    answer : torch.Tensor
        The value to check.
    expected : torch.Tensor or array-like
        The right value.
    name : str, default "your answer"
        How the answer is called in messages.
    atol, rtol : float, default 1e-4
        Values match when ``|answer - expected| <= atol + rtol * |expected|``.

    Returns
    -------
    None
        Prints one line starting with ✅ when the answer matches.

    Raises
    ------
    AssertionError
        If ``answer`` is not a tensor, has another shape, contains NaN or infinite
        values, or differs by more than the tolerance.

    Shapes
    ------
    answer and expected : the same shape, any number of dimensions.

    Examples
    --------
    >>> import torch
    >>> check_close(torch.tensor([0.5, 1.0]), [0.5, 1.0])
    ✅ check_close: your answer is correct; all 2 values match (shape (2,)).
    >>> check_close(torch.tensor([0.5, 1.5]), [0.5, 1.0], name="x")
    Traceback (most recent call last):
    ...
    AssertionError: x: values are off; the largest difference is 0.5 at index [1], ...
    """
    if isinstance(expected, torch.Tensor):
        target = expected
    else:
        try:
            target = torch.as_tensor(expected, dtype=torch.float64)
        except (TypeError, ValueError, RuntimeError):
            raise TypeError(
                f"expected must be a tensor or a number/list of numbers, got "
                f"{type(expected).__name__}"
            ) from None
    answer = _require_tensor(answer, name)
    _require_shape(answer, target, name)
    _require_finite(answer, name)
    _require_close(answer, target, name, atol=atol, rtol=rtol)
    print(
        f"✅ check_close: {name} is correct; all {answer.numel()} values match "
        f"(shape {_shape(answer)})."
    )


def check_weights(weights, *, name="your weights"):
    """Check that attention weights are non-negative and sum to 1 over the keys.

    Parameters
    ----------
    weights : torch.Tensor
        One query's weights, or a matrix with one row per query.
    name : str, default "your weights"
        How the weights are called in messages.

    Returns
    -------
    None
        Prints one line starting with ✅ when the weights are valid.

    Raises
    ------
    AssertionError
        If ``weights`` is not a tensor, contains NaN or infinite or negative values,
        or a row does not sum to 1 (the sums are shown).

    Shapes
    ------
    weights : (T_k,) or (..., T_q, T_k); the last dimension runs over the keys.

    Examples
    --------
    >>> import torch
    >>> weights = torch.softmax(torch.tensor([[1.0, 2.0], [0.0, 0.0]]), dim=-1)
    >>> check_weights(weights)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_weights: your weights are valid; all values are non-negative and each of
    the 2 rows sums to 1.
    >>> check_weights(torch.tensor([0.5, 0.7]))
    Traceback (most recent call last):
    ...
    AssertionError: your weights: the values sum to 1.2000 instead of 1. ...
    """
    weights = _require_tensor(weights, name)
    _require_weights(weights, name)
    if weights.dim() == 1:
        what = f"all {weights.numel()} values are non-negative and they sum to 1"
    else:
        rows = weights.numel() // weights.shape[-1]
        what = f"all values are non-negative and each of the {rows} rows sums to 1"
    print(f"✅ check_weights: {name} are valid; {what}.")


def _softmax_inputs():
    """Inputs for check_softmax: (description, tensor) pairs, built afresh.

    The large-valued vector comes second, right after the small one, so a naive
    softmax is caught by the overflow it causes rather than by another mistake. The
    random matrix uses its own seeded generator and leaves the global seed alone.
    """
    generator = torch.Generator().manual_seed(0)
    return [
        ("a small vector", torch.tensor([1.0, 2.0, 3.0])),
        ("a vector of large scores", torch.tensor([1000.0, 1001.0, 1002.0])),
        (
            "a (4, 6) matrix of random scores (one softmax per row)",
            torch.randn(4, 6, generator=generator) * 3.0,
        ),
        (
            "a (2, 3) matrix with negative and tied scores",
            torch.tensor([[-1.0, -1.0, 2.0], [0.0, -3.0, -3.0]]),
        ),
    ]


_OVERFLOW = (
    " Why: exp(x) overflows for large x. In float32 the largest number is about "
    "3.4e38, so exp(x) is inf for any x above about 88.7; then inf / inf is nan. "
    "The fix: subtract each row's maximum first, "
    "x = x - x.max(dim=-1, keepdim=True).values, then exponentiate and normalise. "
    "The result is unchanged, because exp(x - m) / sum(exp(x - m)) = "
    "exp(x) / sum(exp(x)), and now the largest exponent is exp(0) = 1."
)


def check_softmax(fn):
    """Check a hand-written softmax against ``torch.softmax(x, dim=-1)``.

    ``fn(x)`` must return the softmax of ``x`` along its last dimension. It is tried
    on 4 inputs: a small vector, a vector of large scores (around 1000, where a naive
    ``exp(x) / exp(x).sum()`` overflows), a random matrix and a matrix with negative
    and tied scores. Your function must not change its input.

    Parameters
    ----------
    fn : callable
        Your softmax: takes a tensor, returns a tensor of the same shape.

    Returns
    -------
    None
        Prints one line starting with ✅ when all 4 inputs pass.

    Raises
    ------
    AssertionError
        On the first input where ``fn`` raises, returns something that is not a
        tensor, returns another shape, NaN or infinite values (with an explanation
        of overflow and the subtract-the-maximum fix), rows that do not sum to 1 or
        wrong values, or changes its input in place.

    Shapes
    ------
    x : (T,) or (..., T) -> fn(x) : the same shape.

    Examples
    --------
    >>> import torch
    >>> def softmax(x):
    ...     x = x - x.max(dim=-1, keepdim=True).values
    ...     return torch.exp(x) / torch.exp(x).sum(dim=-1, keepdim=True)
    >>> check_softmax(softmax)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_softmax: your softmax is correct; it matches torch.softmax on all 4 test
    inputs, including large values.

    The naive version overflows on large scores:

    >>> def naive_softmax(x):
    ...     return torch.exp(x) / torch.exp(x).sum()
    >>> check_softmax(naive_softmax)
    Traceback (most recent call last):
    ...
    AssertionError: check_softmax: ... large scores ... found NaN ... overflows ...
    """
    _require_callable(fn, "check_softmax", "softmax")
    cases = _softmax_inputs()
    for description, original in cases:
        x = original.clone()
        values = _fmt_values(original)
        where = f" on {description} {values}"
        output = _call(fn, "check_softmax", (x,), description + " " + values)
        name = "check_softmax: your softmax's output"
        output = _require_tensor(output, name, where)
        expected = torch.softmax(original, dim=-1)
        _require_shape(output, expected, name, where)
        large = original.abs().max() > 80
        _require_finite(output, name, where, hint=_OVERFLOW if large else "")
        _require_weights(output, name, where)
        _require_close(output, expected, name, where, atol=1e-5, rtol=1e-4)
        if not torch.equal(x, original):
            raise AssertionError(
                f"check_softmax: your softmax changed its input{where} in place: it "
                f"became {_fmt_values(x)}. Work on new tensors, e.g. "
                "x = x - x.max(dim=-1, keepdim=True).values instead of x -= ..., "
                "and torch.exp(x) instead of x.exp_()."
            )
    print(
        f"✅ check_softmax: your softmax is correct; it matches torch.softmax on all "
        f"{len(cases)} test inputs, including large values."
    )


def _temperature_text(temperature):
    """``softmax(scores)`` for temperature 1, ``softmax(scores / 2)`` otherwise."""
    return "scores" if temperature == 1 else f"scores / {temperature:g}"


def check_context_vector(answer, inputs, query_index, *, temperature=1.0):
    """Check one query's context vector from unscaled dot-product attention.

    The reference is Chapter 1's attention for the token at ``query_index``:
    ``scores = inputs @ inputs[query_index]``, ``weights = softmax(scores /
    temperature)``, ``context = weights @ inputs``, computed with
    :func:`attn_course.explorer.explore`.

    Parameters
    ----------
    answer : torch.Tensor
        Your context vector.
    inputs : torch.Tensor
        The embeddings, one row per token.
    query_index : int
        Position of the query token.
    temperature : float, default 1.0
        The scores are divided by it before the softmax.

    Returns
    -------
    None
        Prints one line starting with ✅ when the context vector is right.

    Raises
    ------
    AssertionError
        If ``answer`` is not a tensor, has another shape, contains NaN or infinite
        values, or its values are off.
    ValueError
        If ``query_index`` or ``temperature`` is invalid (a mistake in the call).

    Shapes
    ------
    inputs : (T, D); answer : (D,).

    Examples
    --------
    >>> import torch
    >>> from attn_course.data import hello_shiny_sun
    >>> tokens, inputs = hello_shiny_sun()
    >>> weights = torch.softmax(inputs @ inputs[1], dim=0)
    >>> context = weights @ inputs
    >>> check_context_vector(context, inputs, 1)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_context_vector: your context vector for query 1 is correct; it equals
    softmax(scores) @ inputs with scores = inputs @ inputs[1].
    """
    state = explore(None, inputs, query_index, temperature)
    index = query_index % state.weights.shape[0]
    name = f"your context vector for query {index}"
    answer = _require_tensor(answer, name)
    _require_shape(answer, state.context, name)
    _require_finite(answer, name)
    formula = f"softmax({_temperature_text(temperature)}) @ inputs"
    wrong_hint = ""
    plain = explore(None, inputs, query_index, 1.0).context  # temperature 1
    if temperature != 1 and torch.allclose(answer.detach().double(), plain.double()):
        wrong_hint = (
            f"\nYour vector matches temperature 1: divide the scores by "
            f"{temperature:g} before the softmax."
        )
    _require_close(
        answer,
        state.context,
        name,
        atol=1e-4,
        rtol=1e-4,
        hint=f"\nThe expected vector is {formula} with scores = inputs @ "
        f"inputs[{index}].{wrong_hint}",
    )
    print(
        f"✅ check_context_vector: {name} is correct; it equals {formula} with "
        f"scores = inputs @ inputs[{index}]."
    )


def _attention_inputs():
    """Inputs for check_attention_fn: (description, (T, D) tensor)."""
    generator = torch.Generator().manual_seed(0)
    return [
        ('the toy sentence "Hello shiny sun!"', hello_shiny_sun().embeddings),
        (
            'the toy sentence "Your journey starts with one step"',
            your_journey().embeddings,
        ),
        ("random inputs of shape (5, 4)", torch.randn(5, 4, generator=generator)),
        ("random inputs of shape (8, 2)", torch.rand(8, 2, generator=generator) * 2),
    ]


def check_attention_fn(fn):
    """Check a function computing unscaled dot-product self-attention for all tokens.

    ``fn(inputs)`` must return ``(weights, context)``: ``weights = softmax(inputs @
    inputs.T)`` row by row and ``context = weights @ inputs``. The reference is
    :func:`attn_course.scaled_dot_product_attention` with ``scale=1.0``. It is tried
    on the two toy sentences and two random inputs; it must not change its input.

    Parameters
    ----------
    fn : callable
        Your function: takes the inputs, returns ``(weights, context)``.

    Returns
    -------
    None
        Prints one line starting with ✅ when all inputs pass.

    Raises
    ------
    AssertionError
        On the first input where ``fn`` raises, does not return a pair of tensors,
        returns a wrong shape, invalid weights or wrong values, or changes its input.

    Shapes
    ------
    inputs : (T, D) -> weights : (T, T), context : (T, D).

    Examples
    --------
    >>> import torch
    >>> def attention(inputs):
    ...     weights = torch.softmax(inputs @ inputs.T, dim=-1)  # (T, T)
    ...     return weights, weights @ inputs  # (T, T) @ (T, D) -> (T, D)
    >>> check_attention_fn(attention)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_attention_fn: your attention function is correct; its weights and
    context vectors match on the 2 toy sentences and 2 random inputs.
    """
    _require_callable(fn, "check_attention_fn", "attention")
    cases = _attention_inputs()
    for description, original in cases:
        x = original.clone()
        where = f" on {description}"
        result = _call(fn, "check_attention_fn", (x,), description)
        weights, context = _require_pair(result, "check_attention_fn", where)
        reference_context, reference_weights = scaled_dot_product_attention(
            original, original, original, scale=1.0, return_weights=True
        )  # (T, D), (T, T)
        name = "check_attention_fn: your weights"
        weights = _require_tensor(weights, name, where)
        _require_shape(weights, reference_weights, name, where)
        _require_weights(weights, name, where)
        hint = ""
        _, scaled = scaled_dot_product_attention(
            original, original, original, return_weights=True
        )  # (T, T), with the default scale 1 / sqrt(D)
        if torch.allclose(weights.detach().to(scaled.dtype), scaled, atol=1e-4):
            hint = (
                "\nYour weights match *scaled* attention (scores / sqrt(D)); this "
                "exercise uses plain, unscaled dot products: "
                "softmax(inputs @ inputs.T)."
            )
        _require_close(
            weights, reference_weights, name, where, atol=1e-4, rtol=1e-4, hint=hint
        )
        name = "check_attention_fn: your context vectors"
        context = _require_tensor(context, name, where)
        _require_shape(context, reference_context, name, where)
        _require_finite(context, name, where)
        _require_close(
            context,
            reference_context,
            name,
            where,
            atol=1e-4,
            rtol=1e-4,
            hint="\nThe context is weights @ inputs: (T, T) @ (T, D) -> (T, D).",
        )
        if not torch.equal(x, original):
            raise AssertionError(
                f"check_attention_fn: your function changed its input{where} in "
                "place; compute new tensors instead of modifying the inputs."
            )
    print(
        "✅ check_attention_fn: your attention function is correct; its weights and "
        "context vectors match on the 2 toy sentences and 2 random inputs."
    )
