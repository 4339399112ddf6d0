"""Self-checks for Chapter 1, toy dot-product attention.

Shapes
------
Letters: see attn_course.shapes.
inputs : (T, D)
weights : (T, T)
"""

from __future__ import annotations

import torch

from .._validate import kind_of
from ..data import hello_shiny_sun, your_journey
from ..walkthrough import query_attention
from ._common import (
    expect_close,
    expect_finite,
    expect_shape,
    expect_tensor,
    expect_weights,
    fmt_shape,
    fmt_values,
    run_attention_cases,
    scaled_reference,
)
from ._kit import Case, Slip, passed, run_cases

__all__ = [
    "check_attention_fn",
    "check_close",
    "check_context_vector",
    "check_softmax",
    "check_weights",
]


def check_close(answer, expected, *, name="your answer", atol=1e-4, rtol=1e-4):
    """Check that a tensor answer matches the expected values.

    Introduced in Chapter 1.

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
    TypeError
        If ``expected`` is neither a tensor nor numbers (a mistake in the call).

    Shapes
    ------
    Letters: see attn_course.shapes.
    answer, expected : (...)

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
                "expected must be a tensor or a number/list of numbers, got "
                f"{kind_of(expected)}"
            ) from None
    answer = expect_tensor(answer, name)
    expect_shape(answer, target, name)
    expect_finite(answer, name)
    expect_close(answer, target, name, atol=atol, rtol=rtol)
    passed(
        "check_close",
        f"{name} is correct; all {answer.numel()} values match (shape "
        f"{fmt_shape(answer)}).",
    )


def check_weights(weights, *, name="your weights"):
    """Check that attention weights are non-negative and sum to 1 over the keys.

    Introduced in Chapter 1.

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
    Letters: see attn_course.shapes.
    weights : (..., T_k)

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
    weights = expect_tensor(weights, name)
    expect_weights(weights, name)
    if weights.dim() == 1:
        what = f"all {weights.numel()} values are non-negative and they sum to 1"
    else:
        rows = weights.numel() // weights.shape[-1]
        what = f"all values are non-negative and each of the {rows} rows sums to 1"
    passed("check_weights", f"{name} are valid; {what}.")


def _softmax_cases():
    """The inputs of check_softmax, each described with its values.

    The large-valued vector comes second, right after the small one, so a naive
    softmax is caught by the overflow it causes rather than by another mistake.
    """
    generator = torch.Generator().manual_seed(0)
    inputs = [
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
    return [Case(f"{text} {fmt_values(x)}", (x,)) for text, x in inputs]


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

    Introduced in Chapter 1. ``fn(x)`` must return the softmax of ``x`` along its
    last dimension. It is tried on 4 inputs: a small vector, a vector of large
    scores (around 1000, where a naive ``exp(x) / exp(x).sum()`` overflows), a
    random matrix and a matrix with negative and tied scores. Your function must
    not change its input.

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
        On the first input where ``fn`` raises, changes its input in place, returns
        something that is not a tensor, returns another shape, NaN or infinite
        values (with an explanation of overflow and the subtract-the-maximum fix),
        rows that do not sum to 1 or wrong values.
    TypeError
        If ``fn`` is not a function, e.g. a tensor it returned.

    Shapes
    ------
    Letters: see attn_course.shapes.
    x : (..., T)
    output : (..., T)

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
    name = "check_softmax: your softmax's output"

    def verify(case, output):
        (x,) = case.args
        expected = torch.softmax(x, dim=-1)
        output = expect_tensor(output, name, case.where)
        expect_shape(output, expected, name, case.where)
        large = bool(x.abs().max() > 80)
        expect_finite(output, name, case.where, hint=_OVERFLOW if large else "")
        expect_weights(output, name, case.where)
        expect_close(output, expected, name, case.where, atol=1e-5, rtol=1e-4)

    cases = _softmax_cases()
    run_cases(
        "check_softmax",
        fn,
        cases,
        verify,
        example="softmax",
        fix="work on new tensors, e.g. x = x - x.max(dim=-1, keepdim=True).values "
        "instead of x -= ..., and torch.exp(x) instead of x.exp_().",
        success="your softmax is correct; it matches torch.softmax on all "
        f"{len(cases)} test inputs, including large values.",
    )


def check_context_vector(answer, inputs, query_index, *, temperature=1.0):
    """Check one query's context vector from unscaled dot-product attention.

    Introduced in Chapter 1. The reference is Chapter 1's attention for the token
    at ``query_index``: ``scores = inputs @ inputs[query_index]``, ``weights =
    softmax(scores / temperature)``, ``context = weights @ inputs``, computed with
    :func:`attn_course.walkthrough.query_attention`.

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
        values, or its values are off (a vector computed at temperature 1 is
        named).
    TypeError, ValueError
        If ``inputs``, ``query_index`` or ``temperature`` is invalid (a mistake in
        the call).

    Shapes
    ------
    Letters: see attn_course.shapes.
    inputs : (T, D)
    answer : (D,)

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
    seen = query_attention(None, inputs, query_index, temperature)
    temperature = float(temperature)
    index = query_index % seen.weights.shape[0]
    name = f"your context vector for query {index}"
    answer = expect_tensor(answer, name)
    expect_shape(answer, seen.context, name)
    expect_finite(answer, name)
    scores = "scores" if temperature == 1 else f"scores / {temperature:g}"
    formula = f"softmax({scores}) @ inputs"
    plain = query_attention(None, inputs, index).context  # at temperature 1
    slips = [
        Slip(
            plain if temperature != 1 else None,
            f"Your vector matches temperature 1: divide the scores by "
            f"{temperature:g} before the softmax.",
        )
    ]
    expect_close(
        answer,
        seen.context,
        name,
        atol=1e-4,
        rtol=1e-4,
        hint=f"\nThe expected vector is {formula} with scores = inputs @ "
        f"inputs[{index}].",
        slips=slips,
    )
    passed(
        "check_context_vector",
        f"{name} is correct; it equals {formula} with scores = inputs @ "
        f"inputs[{index}].",
    )


def _attention_cases():
    """The inputs of check_attention_fn: the two toy sentences, two random ones."""
    generator = torch.Generator().manual_seed(0)
    inputs = [
        ('the toy sentence "Hello shiny sun!"', hello_shiny_sun().embeddings),
        (
            'the toy sentence "Your journey starts with one step"',
            your_journey().embeddings,
        ),
        ("random inputs of shape (5, 4)", torch.randn(5, 4, generator=generator)),
        ("random inputs of shape (8, 2)", torch.rand(8, 2, generator=generator) * 2),
    ]
    return [Case(text, (x,)) for text, x in inputs]


def _scaled_slip(case):
    """The slip of check_attention_fn: weights of *scaled* attention."""
    (x,) = case.args
    return [
        Slip(
            scaled_reference(x, x, x)[1],
            "Your weights match *scaled* attention (scores / sqrt(D)); this exercise "
            "uses plain, unscaled dot products: softmax(inputs @ inputs.T).",
        )
    ]


def check_attention_fn(fn):
    """Check a function computing unscaled dot-product self-attention for all tokens.

    Introduced in Chapter 1. ``fn(inputs)`` must return ``(weights, context)``:
    ``weights = softmax(inputs @ inputs.T)`` row by row and ``context = weights @
    inputs``. The reference is :func:`attn_course.scaled_dot_product_attention`
    with ``scale=1.0``. It is tried on the two toy sentences and two random inputs;
    it must not change its input.

    Parameters
    ----------
    fn : callable
        Your function: takes the inputs, returns ``(weights, context)``.

    Returns
    -------
    None
        Prints one line starting with ✅ when the toy sentences and the random
        inputs pass.

    Raises
    ------
    AssertionError
        On the first input where ``fn`` raises, changes its input, does not return a
        pair of tensors, returns a wrong shape, invalid weights or wrong values
        (weights of *scaled* attention are named).
    TypeError
        If ``fn`` is not a function, e.g. the pair it returned.

    Shapes
    ------
    Letters: see attn_course.shapes.
    inputs : (T, D)
    weights : (T, T)
    context : (T, D)

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
    run_attention_cases(
        "check_attention_fn",
        fn,
        _attention_cases(),
        reference={"scale": 1.0},
        slips=_scaled_slip,
        context_hint="The context is weights @ inputs: (T, T) @ (T, D) -> (T, D).",
        example="attention",
        success="your attention function is correct; its weights and context "
        "vectors match on the 2 toy sentences and 2 random inputs.",
    )
