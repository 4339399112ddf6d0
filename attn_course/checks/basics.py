"""Self-checks for Chapter 1, toy dot-product attention.

Shapes
------
Letters: see attn_course.shapes.
inputs : (T, D)
weights : (T, T)
"""

from __future__ import annotations

import torch

from .._validate import kind_of, require_positive
from ..data import hello_shiny_sun, your_journey
from ..walkthrough import as_embeddings, query_attention
from ._common import (
    expect_close,
    expect_finite,
    expect_shape,
    expect_tensor,
    expect_weights,
    fmt_shape,
    fmt_values,
    scaled_reference,
    verify_attention,
)
from ._kit import Case, Slip, exercise_check, first_slip, matches, passed, run_cases
from .table import Exercise
from .table import Slip as CodeSlip

__all__ = [
    "check_attention_fn",
    "check_close",
    "check_context_vector",
    "check_scaled_embeddings",
    "check_softmax",
    "check_weights",
]


@exercise_check("answer")
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


@exercise_check("weights")
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

    They come in the order that names each slip by the input that shows it: the
    large vector catches a naive softmax, the vector spread over [0, 100] one that
    subtracts the row's minimum, the matrix whose rows differ in magnitude one that
    subtracts the maximum of the whole tensor (and, being non-square, a max without
    keepdim), and the square matrix a max or sum without keepdim that broadcasts.
    """
    generator = torch.Generator().manual_seed(0)
    inputs = [
        ("a small vector", torch.tensor([1.0, 2.0, 3.0])),
        ("a vector of large scores", torch.tensor([1000.0, 1001.0, 1002.0])),
        (
            "a vector of scores spread over [0, 100]",
            torch.tensor([100.0, 3.0, 47.0, 0.5, 88.0, 21.0]),
        ),
        (
            "a (2, 5) matrix whose rows differ in magnitude",
            torch.tensor(
                [[2.0, -1.0, 0.5, 3.0, 1.0], [400.0, 398.0, 401.0, 399.5, 400.5]]
            ),
        ),
        (
            "a (4, 6) matrix of random scores (one softmax per row)",
            torch.randn(4, 6, generator=generator) * 3.0,
        ),
        (
            "a (3, 3) matrix with negative and tied scores",
            torch.tensor([[-1.0, -1.0, 2.0], [0.0, -3.0, -3.0], [5.0, 0.5, -2.0]]),
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

_ROW_MIN = (
    "It matches subtracting each row's minimum instead of its maximum. Then every "
    "exponent is >= 0, and a row whose values span more than about 88 (as this one "
    "does) still overflows: exp(99.5) is inf in float32, and inf / inf is nan. "
    "Subtract each row's maximum, x - x.max(dim=-1, keepdim=True).values: then "
    "every exponent is <= 0 and the largest is exp(0) = 1."
)

_GLOBAL_MAX = (
    "It matches subtracting the maximum of the whole tensor, x - x.max(), instead "
    "of each row's own maximum. A row far below the largest value of the tensor "
    "gets exponents such as exp(-398), which are 0 in float32, and 0 / 0 is nan "
    "(or, when they are merely tiny, its values lose their precision). Subtract "
    "each row's maximum: x - x.max(dim=-1, keepdim=True).values."
)

_NO_KEEPDIM = (
    "It matches a max or sum over the last dimension without keepdim=True: on a "
    "(T, T) matrix, x.max(dim=-1).values has shape (T,), which broadcasts along the "
    "rows, so entry [i, j] gets row j's maximum (or sum) instead of row i's, and "
    "no error warns you (on a non-square matrix the shapes do not line up and "
    "PyTorch raises one). Keep the dimension: x.max(dim=-1, keepdim=True).values "
    "and exps.sum(dim=-1, keepdim=True), shape (T, 1)."
)

_WHOLE_SUM = (
    "It matches dividing by the sum over the whole tensor, exps.sum(): each row "
    "must be divided by its own sum, exps.sum(dim=-1, keepdim=True)."
)


def _softmax_body(shift, total="exps.sum(dim=-1, keepdim=True)"):
    """A softmax that subtracts ``shift`` and divides by ``total``."""
    return f"    exps = torch.exp(x - {shift})\n    return exps / {total}\n"


def _softmax_wrong(got, expected, subject):
    """What is wrong with a softmax that no slip gives."""
    got = expect_tensor(got, subject)
    expect_shape(got, expected, subject)
    if not bool(torch.isfinite(got.detach()).all()):
        return f"found NaN or infinite values: {fmt_values(got)}.{_OVERFLOW}"
    sums = got.detach().double().sum(dim=-1)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
        return f"its rows sum to {fmt_values(sums)}, not 1"
    return f"its values are off: {fmt_values(got)}"


_ROW_MAX = "x.max(dim=-1, keepdim=True).values"

SOFTMAX = Exercise(
    label="ch01-ex-softmax",
    check="check_softmax",
    function="stable_softmax(x)",
    parameter="fn",
    output="softmax's output",
    right=_softmax_body(_ROW_MAX),
    cases=_softmax_cases,
    rule="subtract each row's maximum, exponentiate, and divide each row by its own "
    "sum, as torch.softmax(x, dim=-1) does",
    tolerance=1e-5,
    otherwise=_softmax_wrong,
    fix="work on new tensors, e.g. x = x - x.max(dim=-1, keepdim=True).values "
    "instead of x -= ..., and torch.exp(x) instead of x.exp_().",
    slips=(
        CodeSlip(
            "naive",
            (_softmax_body("0.0"), _softmax_body("0.0", "exps.sum()")),
            "it overflows on large scores: its result holds NaN." + _OVERFLOW,
        ),
        CodeSlip(
            "row-min",
            _softmax_body("x.min(dim=-1, keepdim=True).values"),
            _ROW_MIN,
        ),
        CodeSlip(
            "global-max",
            (_softmax_body("x.max()"), _softmax_body("x.max()", "exps.sum()")),
            _GLOBAL_MAX,
        ),
        CodeSlip(
            "no-keepdim",
            (
                _softmax_body("x.max(dim=-1).values"),
                _softmax_body("x.max(dim=-1).values", "exps.sum(dim=-1)"),
            ),
            _NO_KEEPDIM,
        ),
        CodeSlip("whole-sum", _softmax_body(_ROW_MAX, "exps.sum()"), _WHOLE_SUM),
    ),
)
check_softmax = SOFTMAX.make_check()


def _context_slips(inputs, index, temperature):
    """The known wrong context vectors for query ``index`` of ``inputs``."""
    x = inputs.detach()
    T, D = x.shape
    scores = x @ x[index] / temperature  # (T, D) @ (D,) -> (T,)
    slips = [
        Slip(
            query_attention(None, x, index).context if temperature != 1 else None,
            f"Your vector matches temperature 1: divide the scores by "
            f"{temperature:g} before the softmax.",
        ),
        Slip(
            scores @ x,
            "Your vector mixes the inputs with the raw scores: turn the scores into "
            "weights with torch.softmax(scores, dim=-1) first.",
        ),
        Slip(
            (scores / scores.sum()) @ x,
            "Your vector mixes the inputs with the scores divided by their sum; "
            "attention weights come from a softmax, torch.softmax(scores, dim=-1), "
            "which also keeps them positive.",
        ),
        Slip(
            torch.softmax(scores, dim=-1) if T == D else None,
            "Your vector is the attention weights, not the context vector: mix the "
            "inputs with them, weights @ inputs.",
        ),
        Slip(
            torch.softmax(scores / D**0.5, dim=-1) @ x,
            f"Your vector matches *scaled* attention (scores / sqrt({D})); this "
            "chapter uses plain, unscaled dot products.",
        ),
    ]
    for other in range(T):
        if other != index:
            slips.append(
                Slip(
                    query_attention(None, x, other, temperature).context,
                    f"Your vector is the context vector of query {other} (token "
                    f"{other + 1}); this one is query_index={index} (token "
                    f"{index + 1}): Python counts from 0.",
                )
            )
    return slips


@exercise_check("answer")
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
        values, or its values are off. Common slips are named: no softmax, scores
        divided by their sum, the weights instead of the context, scaled scores,
        another query's vector and, at another temperature, temperature 1.
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
    expect_close(
        answer,
        seen.context,
        name,
        atol=1e-4,
        rtol=1e-4,
        hint=f"\nThe expected vector is {formula} with scores = inputs @ "
        f"inputs[{index}].",
        slips=_context_slips(as_embeddings(inputs), index, temperature),
    )
    passed(
        "check_context_vector",
        f"{name} is correct; it equals {formula} with scores = inputs @ "
        f"inputs[{index}].",
    )


def _as_number(value, name):
    """The learner's ``value`` as a float, or a teaching AssertionError."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AssertionError(
            f"{name}: expected a number, got {kind_of(value)}; store a plain number "
            "such as 0.5 (or a tensor holding one value)."
        )
    return float(value)


@exercise_check("weights", "tau")
def check_scaled_embeddings(weights, tau, inputs, query_index, *, factor=2.0):
    """Check the weights of one query after every embedding is scaled, and the
    temperature that gives the same weights on the original embeddings.

    Introduced in Chapter 1. ``weights`` must be ``softmax(scores)`` with
    ``scores = (factor * inputs) @ (factor * inputs[query_index])``, Chapter 1's
    plain dot products on the scaled embeddings, and ``tau`` the temperature at
    which the original embeddings give the same weights: each score is multiplied
    by ``factor**2``, so ``tau = 1 / factor**2``.

    Parameters
    ----------
    weights : torch.Tensor
        Your weights of the query over the scaled embeddings, one per token.
    tau : float
        Your temperature for the original embeddings.
    inputs : torch.Tensor
        The original embeddings, one row per token.
    query_index : int
        Position of the query token.
    factor : float, default 2.0
        Every embedding is multiplied by it.

    Returns
    -------
    None
        Prints one line starting with ✅ when the weights and ``tau`` are right.

    Raises
    ------
    AssertionError
        If ``weights`` is not a tensor, has another shape, is not a set of valid
        weights or its values are off (the weights of the original embeddings, of
        scores scaled once instead of twice and of another query are named), or
        ``tau`` is not a number or is off (``1 / factor``, ``factor**2`` and
        ``factor`` are named).
    TypeError, ValueError
        If ``inputs``, ``query_index`` or ``factor`` is invalid (a mistake in the
        call).

    Shapes
    ------
    Letters: see attn_course.shapes.
    inputs : (T, D)
    weights : (T,)

    Examples
    --------
    >>> import torch
    >>> from attn_course.data import your_journey
    >>> X = your_journey().embeddings
    >>> weights = torch.softmax((2 * X) @ (2 * X[1]), dim=-1)
    >>> check_scaled_embeddings(weights, 0.25, X, 1)
    ... # doctest: +NORMALIZE_WHITESPACE
    ✅ check_scaled_embeddings: your weights for query 1 are correct, and tau = 0.25
    gives the same weights on the original embeddings: scaling every embedding by
    2 multiplies every score by 2**2 = 4.
    """
    check = "check_scaled_embeddings"
    x = as_embeddings(inputs, "inputs").detach()
    factor = require_positive(factor, "factor", hint="use e.g. factor=2.0")
    T, D = x.shape
    seen = query_attention(None, factor * x, query_index)
    index = query_index % T
    name = f"{check}: your weights for query {index}"
    answer = expect_tensor(weights, name)
    if tuple(answer.shape) == (D,) != (T,):
        raise AssertionError(
            f"{name}: wrong shape {fmt_shape(answer)}, the width of one embedding; "
            f"the weights have one value per token, shape ({T},). Store the weights "
            "themselves, not the context vector they give."
        )
    expect_shape(answer, seen.weights, name)
    expect_weights(answer, name)
    f2 = factor**2
    slips = [
        Slip(
            query_attention(None, x, index).weights,
            f"They are the weights of the original embeddings: compute the scores "
            f"from the scaled ones, X_doubled = {factor:g} * X, for the query and "
            "the keys alike.",
        ),
        Slip(
            torch.softmax(factor * (x @ x[index]), dim=-1),
            f"They match scores multiplied by {factor:g}, not {f2:g}: you scaled only "
            "the query or only the keys. Scaling every embedding scales both "
            f"factors of each dot product, so the scores grow by {factor:g}**2.",
        ),
    ]
    slips += [
        Slip(
            query_attention(None, factor * x, other).weights,
            f"They are the weights of query {other} (token {other + 1}); this one "
            f"is query_index={index} (token {index + 1}).",
        )
        for other in range(T)
        if other != index
    ]
    expect_close(answer, seen.weights, name, atol=1e-4, rtol=1e-4, slips=slips)
    given = _as_number(tau, f"{check}: your tau_same")
    tolerance = {"atol": 0.0, "rtol": 1e-3}
    if not matches(given, 1 / f2, **tolerance):
        taus = [
            Slip(
                1 / factor,
                f"that undoes a factor {factor:g} in the scores, but each score gets "
                f"{factor:g} twice: ({factor:g} x_i) . ({factor:g} x_j) = {f2:g} "
                "(x_i . x_j)",
            ),
            Slip(
                f2,
                f"the scores are divided by the temperature, so tau = {f2:g} makes "
                f"them {f2:g} times smaller; the scaled embeddings make them {f2:g} "
                "times larger",
            ),
            Slip(
                factor,
                "the scores are divided by the temperature, and they grow by "
                f"{factor:g} twice, once for the query and once for the key",
            ),
            Slip(1.0, "temperature 1 leaves the scores of the original embeddings"),
        ]
        why = first_slip(given, taus, **tolerance) or (
            f"scaling every embedding by {factor:g} multiplies every score by "
            f"{factor:g} * {factor:g}; which temperature multiplies them by the same?"
        )
        raise AssertionError(
            f"{check}: your tau_same = {given:g} is off; {why}. At temperature tau "
            "the weights are softmax(scores / tau)."
        )
    passed(
        check,
        f"your weights for query {index} are correct, and tau = {given:g} gives the "
        f"same weights on the original embeddings: scaling every embedding by "
        f"{factor:g} multiplies every score by {factor:g}**2 = {f2:g}.",
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


def _columns_slip(case, weights):
    """Weights normalised over the queries, named before the check of the sums."""
    (x,) = case.args
    return [
        Slip(
            torch.softmax(x @ x.T, dim=0),
            "The columns sum to 1 instead of the rows: you normalised over the "
            "queries (dim=0); normalise over the keys, the last dimension, "
            "torch.softmax(scores, dim=-1).",
        )
    ]


@exercise_check("fn")
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
        pair of tensors, returns the pair in the wrong order, a wrong shape,
        invalid weights or wrong values (weights of *scaled* attention and weights
        normalised over the queries are named).
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
    check = "check_attention_fn"
    verify = verify_attention(
        check,
        reference={"scale": 1.0},
        slips=_scaled_slip,
        fatal=_columns_slip,
        context_hint="The context is weights @ inputs: (T, T) @ (T, D) -> (T, D).",
    )
    run_cases(
        check,
        fn,
        _attention_cases(),
        verify,
        example="attention",
        success="your attention function is correct; its weights and context "
        "vectors match on the 2 toy sentences and 2 random inputs.",
    )
