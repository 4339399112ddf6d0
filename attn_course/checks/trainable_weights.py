"""Self-checks for Chapter 2, self-attention with trainable weights.

Shapes
------
Letters: see attn_course.shapes.
inputs : (T, d_in)
W_query, W_key, W_value : (d_in, d_out)
"""

from __future__ import annotations

import torch

from .._validate import require_index, require_int, require_positive, require_tensor
from ._common import (
    QKV,
    expect_close,
    expect_finite,
    expect_shape,
    expect_tensor,
    first_difference,
    fmt_index,
    fmt_number,
    fmt_shape,
    journey_projections,
    scaled_reference,
    verify_attention,
)
from ._kit import (
    Case,
    Slip,
    call,
    exercise_check,
    explainer,
    first_slip,
    matches,
    passed,
    require_callable,
    seeded,
)

__all__ = [
    "check_projected_context",
    "check_scaled_attention_fn",
    "check_score_variance",
    "check_v1_from_v2",
]


def _matrices(inputs, W_query, W_key, W_value):
    """The arguments of check_projected_context, detached, or TypeError/ValueError."""
    given = {"inputs": inputs, "W_query": W_query, "W_key": W_key, "W_value": W_value}
    for name, tensor in given.items():
        require_tensor(tensor, name)
        if tensor.dim() != 2:
            raise ValueError(
                f"{name} must be a matrix (2-D), got shape {tuple(tensor.shape)}"
            )
    d_in = inputs.shape[1]
    for name in ("W_query", "W_key", "W_value"):
        if given[name].shape[0] != d_in:
            raise ValueError(
                f"{name} has shape {tuple(given[name].shape)} but the inputs have "
                f"d_in = {d_in} features; it must have shape (d_in, d_out), as in "
                "SelfAttentionV1"
            )
    if W_query.shape[1] != W_key.shape[1]:
        raise ValueError(
            f"W_query {tuple(W_query.shape)} and W_key {tuple(W_key.shape)} must "
            "give queries and keys of the same width d_k"
        )
    return [tensor.detach() for tensor in given.values()]


# The projection matrices that exercises give, (d_in, d_out) each, by label.
GIVEN_MATRICES = {
    "ch02-ex-journey": {
        "W_q": ((1.0, 0.0), (0.0, 1.0), (1.0, 1.0)),
        "W_k": ((0.0, 1.0), (1.0, 0.0), (0.0, 0.0)),
        "W_v": ((1.0, 0.0), (0.0, 0.0), (0.0, 1.0)),
    },
}


def _given_matrices(exercise, matrices):
    """The matrices exercise ``exercise`` gives, after checking that the learner's
    ``matrices`` (W_q, W_k, W_v) are the same; a copy that differs is named."""
    if exercise not in GIVEN_MATRICES:
        raise ValueError(
            f"exercise must be one of {sorted(GIVEN_MATRICES)}, got {exercise!r}"
        )
    given = GIVEN_MATRICES[exercise]
    pinned = []
    for (role, values), matrix in zip(given.items(), matrices, strict=True):
        target = torch.tensor(values, dtype=torch.float64)  # (d_in, d_out)
        name = f"check_projected_context: your {role}"
        matrix = expect_tensor(matrix, name)
        if tuple(matrix.shape) == tuple(target.shape)[::-1]:
            raise AssertionError(
                f"{name} has shape {fmt_shape(matrix)}; the exercise's {role} has "
                f"shape {fmt_shape(target)}: one row per input feature (d_in = "
                f"{target.shape[0]}), one column per output (d_out = "
                f"{target.shape[1]}). Write it row by row as the exercise shows it."
            )
        expect_shape(matrix, target, name)
        mine = matrix.detach().to("cpu", torch.float64)
        if not torch.equal(mine, target):
            index = first_difference(mine, target)
            raise AssertionError(
                f"{name} differs from the {role} the exercise gives at entry "
                f"{fmt_index(index)} (row {index[0] + 1}, column {index[1] + 1}): "
                f"yours is {fmt_number(mine[index])}, the exercise's is "
                f"{fmt_number(target[index])}. Copy the matrix from the exercise, "
                "then compute your context vector again."
            )
        pinned.append(target.float())
    return pinned


@exercise_check("answer", "W_query", "W_key", "W_value")
def check_projected_context(
    answer, inputs, W_query, W_key, W_value, query_index, *, exercise=None
):
    """Check one query's context vector from attention with trainable weights.

    Introduced in Chapter 2. The reference follows Chapter 2: ``queries = inputs @
    W_query``, ``keys = inputs @ W_key``, ``values = inputs @ W_value``; the query's
    scores against every key are divided by ``sqrt(d_k)`` (``d_k =
    W_key.shape[1]``), turned into weights by a softmax, and the weights mix the
    **values**.

    Parameters
    ----------
    answer : torch.Tensor
        Your context vector: a mix of the values.
    inputs : torch.Tensor
        The embeddings, one row of ``d_in`` features per token.
    W_query, W_key, W_value : torch.Tensor
        The projection matrices, as stored in ``SelfAttentionV1``.
    query_index : int
        Position of the query token.
    exercise : str, optional
        The label of an exercise that gives the matrices (``"ch02-ex-journey"``).
        The three matrices are then your copies of the exercise's, and each must
        equal it: the matrix and the entry that differ are named, and the
        reference uses the exercise's matrices, not yours.

    Returns
    -------
    None
        Prints one line starting with ✅ when the vector mixes the values as it should.

    Raises
    ------
    AssertionError
        If ``answer`` is not a tensor, has another shape, contains NaN or infinite
        values, or its values are off; common slips (mixing the inputs or the keys
        instead of the values, scaling by ``d_k`` instead of ``sqrt(d_k)``, no
        scaling, another query) are named. With ``exercise``, also if one of your
        matrices is not a tensor or differs from the exercise's.
    TypeError, ValueError
        If the inputs, the matrices or ``query_index`` are invalid or do not fit
        together, or ``exercise`` is unknown (a mistake in the call).

    Shapes
    ------
    Letters: see attn_course.shapes.
    inputs : (T, d_in)
    W_query, W_key, W_value : (d_in, d_out)
    answer : (d_out,)

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
    if exercise is not None:
        W_query, W_key, W_value = _given_matrices(exercise, (W_query, W_key, W_value))
    x, W_q, W_k, W_v = _matrices(inputs, W_query, W_key, W_value)
    index = require_index(query_index, x.shape[0], "query_index")
    queries = x @ W_q  # (T, d_in) @ (d_in, d_out) -> (T, d_out)
    keys, values = x @ W_k, x @ W_v  # (T, d_in) @ (d_in, d_out) -> (T, d_out)
    d_k = keys.shape[-1]

    def context(scale=None, mix=values, at=index):
        query = queries[at : at + 1]  # (1, d_out)
        return scaled_reference(query, keys, mix, scale=scale)[0][0]  # (d_out,)

    expected = context()
    name = f"your context vector for query {index}"
    answer = expect_tensor(answer, name)
    if tuple(answer.shape) == (x.shape[1],) != tuple(expected.shape):
        raise AssertionError(
            f"{name}: wrong shape {fmt_shape(answer)}, the width d_in of the inputs; "
            f"the expected shape is {fmt_shape(expected)}, the width d_out of the "
            "values. Mix the values (inputs @ W_value), not the inputs."
        )
    expect_shape(answer, expected, name)
    expect_finite(answer, name)
    slips = [
        Slip(
            context(mix=x) if x.shape[1] == d_k else None,
            "Your vector mixes the inputs; mix the values, inputs @ W_value.",
        ),
        Slip(
            context(scale=1.0 / d_k),
            f"Your vector matches scores divided by d_k = {d_k} instead of by "
            "sqrt(d_k).",
        ),
        Slip(
            context(scale=1.0),
            f"Your vector matches no scaling: divide the scores by sqrt(d_k) = "
            f"sqrt({d_k}).",
        ),
        Slip(
            context(mix=keys) if values.shape == keys.shape else None,
            "Your vector mixes the keys; the weights mix the values, inputs @ W_value.",
        ),
    ]
    slips += [
        Slip(
            context(at=other),
            f"Your vector is the context vector of query {other} (token "
            f"{other + 1}); this one is query_index={index}: Python counts from 0.",
        )
        for other in range(x.shape[0])
        if other != index
    ]
    expect_close(answer, expected, name, atol=1e-4, rtol=1e-4, slips=slips)
    passed(
        "check_projected_context",
        f"{name} is correct; it equals softmax(q_{index} . k_j / sqrt({d_k})) over "
        "the keys j, mixing the values.",
    )


_ROLES = ("W_query", "W_key", "W_value")


def _run_cases(check, fn, cases, verify, *, explain, example, success, fix, names=None):
    """:func:`attn_course.checks._kit.run_cases` with ``explain`` naming the slip
    behind an error the learner's function raises."""
    require_callable(fn, check, example)
    with seeded(0):
        for case in cases:
            result = call(fn, check, case, fix=fix, names=names, explain=explain)
            verify(case, result)
    passed(check, success)


# Errors of a conversion from V2 to V1, and the slip behind each.
_COPY_SLIPS = (
    (
        "must match the size of tensor",
        " nn.Linear stores its weight as (d_out, d_in), SelfAttentionV1 its "
        "matrices as (d_in, d_out), since it computes x @ W: copy weight.T.",
    ),
    (
        "leaf Variable that requires grad",
        " Copying into a parameter is an in-place change that autograd refuses "
        "outside `with torch.no_grad():`; do the copies inside that block.",
    ),
    (
        "cannot assign",
        " A module's parameter can only be replaced by an nn.Parameter: copy into "
        "the existing one instead, sa_v1.W_query.copy_(...) inside "
        "`with torch.no_grad():`.",
    ),
)


# The likely slip behind an error of a conversion from V2 to V1, or ''.
_explain_copy = explainer(_COPY_SLIPS)


def _v2_cases():
    """Three SelfAttentionV2 modules (one square) and an input batch for each."""
    from ..modules import SelfAttentionV2

    generator = torch.Generator().manual_seed(0)
    cases = []
    for seed, (d_in, d_out) in enumerate([(3, 2), (4, 4), (5, 3)]):
        with seeded(seed):
            sa_v2 = SelfAttentionV2(d_in, d_out)
        x = torch.randn(2, 5, d_in, generator=generator)  # (B, T, d_in)
        cases.append(Case(f"SelfAttentionV2({d_in}, {d_out})", (sa_v2,), data=x))
    return cases


@exercise_check("fn")
def check_v1_from_v2(fn):
    """Check a function that copies a ``SelfAttentionV2``'s weights into a V1.

    Introduced in Chapter 2. ``fn(sa_v2)`` must return a
    :class:`attn_course.SelfAttentionV1` that computes the same map as ``sa_v2``.
    It is tried on three V2 modules of different sizes, one of them square
    (``d_in == d_out``), where a missing transpose raises no shape error. The V2
    module must not be changed.

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
        If ``fn`` raises (a copy without ``.T``, outside ``torch.no_grad()`` or
        by assigning a tensor to a parameter is named), changes the V2 module,
        returns the V2 module itself or anything but a ``SelfAttentionV1``, its
        matrices have the wrong shape or values (swapped roles and a missing
        ``.T`` are named), or its outputs differ from the V2 module's.
    TypeError
        If ``fn`` is not a function (a module is named).

    Shapes
    ------
    Letters: see attn_course.shapes.
    linear weight : (d_out, d_in)
    W_query, W_key, W_value : (d_in, d_out)

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
    from ..modules import SelfAttentionV1

    check = "check_v1_from_v2"

    def verify(case, sa_v1):
        (sa_v2,), x, where = case.args, case.data, case.where
        if sa_v1 is sa_v2:
            raise AssertionError(
                f"{check}: your function returned the SelfAttentionV2 it was "
                f"given{where}; build a new module, "
                "sa_v1 = SelfAttentionV1(sa_v2.d_in, sa_v2.d_out), and copy the "
                "weights into it."
            )
        if not isinstance(sa_v1, SelfAttentionV1):
            raise AssertionError(
                f"{check}: your function returned a {type(sa_v1).__name__}{where}; "
                "it should return a SelfAttentionV1 module, e.g. "
                "sa_v1 = SelfAttentionV1(sa_v2.d_in, sa_v2.d_out), then copy the "
                "weights into it."
            )
        linear = {role: getattr(sa_v2, role).weight.detach() for role in _ROLES}
        for role in _ROLES:
            matrix = getattr(sa_v1, role).detach()
            target = linear[role].T  # (d_out, d_in) -> (d_in, d_out)
            name = f"{check}: your {role}"
            if tuple(matrix.shape) == tuple(linear[role].shape) != tuple(target.shape):
                raise AssertionError(
                    f"{name}{where} has shape {fmt_shape(matrix)}, the shape of "
                    f"nn.Linear's weight (d_out, d_in); SelfAttentionV1 needs "
                    f"(d_in, d_out) = {fmt_shape(target)}. nn.Linear computes "
                    "x @ weight.T, so copy weight.T."
                )
            expect_shape(matrix, target, name, where)
            slips = [
                Slip(
                    linear[other].T,
                    f"It holds V2's {other} instead: copy each role to itself.",
                )
                for other in _ROLES
                if other != role
            ]
            slips.append(
                Slip(
                    linear[role],
                    "It equals nn.Linear's weight itself: nn.Linear computes "
                    "x @ weight.T, so V1 needs weight.T (no shape error warns you "
                    "when d_in == d_out).",
                )
            )
            expect_close(matrix, target, name, where, atol=1e-6, rtol=0, slips=slips)
        with torch.no_grad():
            expected = sa_v2(x, return_weights=True)
            received = sa_v1(x, return_weights=True)
        for what, answer, right in zip(
            ("outputs", "weights"), received, expected, strict=True
        ):
            name = f"{check}: your module's {what}"
            expect_close(answer, right, name, where, atol=1e-5, rtol=1e-4)

    _run_cases(
        check,
        fn,
        _v2_cases(),
        verify,
        explain=_explain_copy,
        example="v1_from_v2",
        fix="copy its weights, do not modify them.",
        success="your conversion is correct; each SelfAttentionV1 holds the "
        "transposed nn.Linear weights and computes the same outputs as its "
        "SelfAttentionV2 on 3 modules.",
    )


def _as_number(value, name):
    """Return the learner's ``value`` as a float, or raise a teaching AssertionError."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AssertionError(
            f"{name}: expected a number, got {type(value).__name__}; store a plain "
            f"number such as 4.0 (or a tensor holding one value)."
        )
    return float(value)


@exercise_check("predicted_variance", "scale")
def check_score_variance(predicted_variance, scale, *, d_k, std):
    """Check a prediction of the variance of a dot product, and the fixing scale.

    Introduced in Chapter 2. A query and a key each have ``d_k`` independent entries
    with mean 0 and standard deviation ``std``. Each product ``q_m * k_m`` then has
    variance ``std**2 * std**2``, and the ``d_k`` products add up, so ``q . k`` has
    variance ``d_k * std**4``. Multiplying the scores by ``scale = 1 /
    sqrt(variance)`` gives them variance 1. The check also measures the variance on
    20,000 random pairs, drawn from its own generator.

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
        If a number is missing or off (by more than 0.1 %); common slips (the
        unit-variance answer ``d_k``, one factor ``std**2`` too few, a standard
        deviation instead of a variance, ``1 / sqrt(d_k)`` as the scale) are named.
    TypeError, ValueError
        If ``d_k`` is not a positive int or ``std`` not a positive number.

    Shapes
    ------
    Letters: see attn_course.shapes.
    query, key : (d_k,)

    Examples
    --------
    >>> check_score_variance(32.0, 32.0**-0.5, d_k=32, std=1.0)
    ... # doctest: +NORMALIZE_WHITESPACE
    ✅ check_score_variance: your prediction is correct; q . k has variance
    d_k * std**4 = 32 (measured on 20000 random pairs: 32.2), and scale = 0.1768
    makes it 1 (measured: 1.005).
    """
    check = "check_score_variance"
    d_k = require_int(d_k, "d_k")
    std = require_positive(std, "std", hint="use e.g. std=0.5")
    variance = d_k * std**4
    predicted = _as_number(predicted_variance, f"{check}: your predicted_variance")
    tolerance = {"atol": 0.0, "rtol": 1e-3}
    if not matches(predicted, variance, **tolerance):
        slips = [
            Slip(
                d_k,
                f"d_k = {d_k} is the variance for entries of variance 1; here each "
                f"entry has variance std**2 = {std**2:g}",
            ),
            Slip(
                d_k * std**2,
                "that has one factor std**2; each product q_m * k_m has variance "
                f"std**2 * std**2 = {std**4:g}",
            ),
            Slip(
                variance**0.5,
                "that is the standard deviation of q . k; the variance is its square",
            ),
        ]
        hint = first_slip(predicted, slips, **tolerance) or (
            f"each of the d_k = {d_k} products q_m * k_m has variance std**2 * std**2"
        )
        raise AssertionError(
            f"{check}: your predicted_variance {predicted:g} is off; {hint}. "
            "The variances of independent terms add up."
        )
    factor = _as_number(scale, f"{check}: your scale")
    if not matches(factor, variance**-0.5, **tolerance):
        slips = [
            Slip(
                d_k**-0.5,
                f"1 / sqrt(d_k) = {d_k**-0.5:.4g} gives variance 1 only when the "
                "entries have variance 1",
            ),
            Slip(
                1 / variance,
                "that divides by the variance; a factor c multiplies the variance "
                "by c**2, so divide by its square root",
            ),
            Slip(
                variance**0.5, "that multiplies by the standard deviation; divide by it"
            ),
        ]
        hint = first_slip(factor, slips, **tolerance) or (
            "multiplying by c multiplies the variance by c**2"
        )
        raise AssertionError(
            f"{check}: your scale {factor:g} is off; {hint}. The scores are "
            "multiplied by scale, and their variance by scale**2; which scale makes "
            f"your variance of {variance:g} equal to 1?"
        )
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(20_000, d_k, generator=generator, dtype=torch.float64) * std
    k = torch.randn(20_000, d_k, generator=generator, dtype=torch.float64) * std
    dots = (q * k).sum(dim=-1)  # (N, d_k) -> (N,)
    passed(
        check,
        f"your prediction is correct; q . k has variance d_k * std**4 = "
        f"{variance:g} (measured on 20000 random pairs: {dots.var():.3g}), and "
        f"scale = {factor:.4g} makes it 1 (measured: {(dots * factor).var():.3f}).",
    )


def _scaled_attention_cases():
    """The journey sentence projected to d_k = 2, then random inputs with
    T_q != T_k and d_v != d_k, and a batch."""
    from ..modules import SelfAttentionV2

    generator = torch.Generator().manual_seed(0)
    inputs = [
        (
            '"Your journey starts with one step" projected to d_k = 2',
            journey_projections(lambda: SelfAttentionV2(3, 2), seed=789),
        ),
        (
            "random queries (4, 8), keys (5, 8) and values (5, 3)",
            (
                torch.randn(4, 8, generator=generator) * 2,
                torch.randn(5, 8, generator=generator) * 2,
                torch.randn(5, 3, generator=generator),
            ),
        ),
        (
            "a batch: queries, keys and values of shape (2, 3, 16)",
            tuple(torch.randn(2, 3, 16, generator=generator) for _ in range(3)),
        ),
    ]
    return [Case(text, args) for text, args in inputs]


def _scale_slips(case):
    """The slips of check_scaled_attention_fn: scaling by the wrong number."""
    queries, keys, values = case.args
    d_k, d_v = keys.shape[-1], values.shape[-1]

    def weights(scale):
        return scaled_reference(queries, keys, values, scale=scale)[1]

    return [
        Slip(
            weights(d_v**-0.5) if d_v != d_k else None,
            f"Your weights match scores divided by sqrt(d_v) = sqrt({d_v}), the "
            "width of the values; use the width of the keys, keys.shape[-1].",
        ),
        Slip(
            weights(1.0 / d_k),
            f"Your weights match scores divided by d_k = {d_k}; divide by sqrt(d_k).",
        ),
        Slip(
            weights(1.0),
            f"Your weights match no scaling: divide the scores by sqrt(d_k) = "
            f"sqrt({d_k}) before the softmax.",
        ),
    ]


def _after_softmax_slip(case, weights):
    """Weights scaled after the softmax, named before the check of the sums."""
    queries, keys, _ = case.args
    unscaled = torch.softmax(queries @ keys.transpose(-2, -1), dim=-1)
    scaled = torch.softmax(
        queries @ keys.transpose(-2, -1) * keys.shape[-1] ** -0.5, dim=-1
    )

    def scaled_after(answer):
        values = answer.detach().to("cpu", torch.float64)
        sums = values.sum(dim=-1, keepdim=True)  # (..., T_q, 1)
        if not bool(torch.isfinite(values).all()) or bool((sums <= 0).any()):
            return False
        if bool(torch.isclose(sums, torch.ones_like(sums), atol=1e-4).all()):
            return False
        rows = values / sums
        return matches(rows, unscaled) or matches(rows, scaled)

    return [
        Slip(
            scaled_after,
            "You scaled after the softmax: its rows sum to 1 / sqrt(d_k) (or another "
            "factor) instead of 1. Divide the scores by sqrt(d_k) before the "
            "softmax, torch.softmax(scores / math.sqrt(d_k), dim=-1): the scale "
            "sharpens or flattens the weights, and the softmax keeps them summing "
            "to 1.",
        )
    ]


# Errors of a scaled attention function, and the slip behind each.
_TRANSPOSE_SLIPS = (
    (
        "must match the size of tensor",
        " keys.T on a batch reverses every dimension, (B, T_k, d_k) -> (d_k, T_k, "
        "B), so the batch dimensions no longer line up: use "
        "keys.transpose(-2, -1), which swaps only the last two.",
    ),
    (
        "cannot be multiplied",
        " The inner sizes of the matrix product differ: a forgotten transpose? The "
        "scores are queries @ keys.transpose(-2, -1), (T_q, d_k) @ (d_k, T_k).",
    ),
    (
        "Expected size for first two dimensions of batch2",
        " The inner sizes of the batched matrix product differ: a forgotten "
        "transpose? The scores are queries @ keys.transpose(-2, -1), (..., T_q, "
        "d_k) @ (..., d_k, T_k).",
    ),
)


# The likely slip behind an error of a scaled attention function, or ''.
_explain_transpose = explainer(_TRANSPOSE_SLIPS)


@exercise_check("fn")
def check_scaled_attention_fn(fn):
    """Check a function computing scaled dot-product attention.

    Introduced in Chapter 2. ``fn(queries, keys, values)`` must return ``(weights,
    context)`` with ``weights = softmax(queries @ keys^T / sqrt(d_k))`` over the
    keys and ``context = weights @ values``, for any number of leading batch
    dimensions. The reference is :func:`attn_course.scaled_dot_product_attention`.
    It is tried on the journey sentence and on random inputs where ``d_v != d_k``
    and ``T_q != T_k``, so scaling by the wrong width shows.

    Parameters
    ----------
    fn : callable
        Your function: takes queries, keys and values, returns (weights, context).

    Returns
    -------
    None
        Prints one line starting with ✅ when all 3 inputs pass.

    Raises
    ------
    AssertionError
        On the first input where ``fn`` raises (a forgotten transpose and
        ``keys.T`` on a batch are named), changes its inputs, does not return a
        pair of tensors, returns the pair in the wrong order, a wrong shape,
        invalid weights or wrong values (scaling after the softmax, by the value
        width, by ``d_k``, and no scaling are named).
    TypeError
        If ``fn`` is not a function, e.g. weights and context it returned.

    Shapes
    ------
    Letters: see attn_course.shapes.
    queries, keys, values : (..., T_q, d_k), (..., T_k, d_k), (..., T_k, d_v)
    weights : (..., T_q, T_k)
    context : (..., T_q, d_v)

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
    verify = verify_attention(
        check,
        reference={},
        slips=_scale_slips,
        fatal=_after_softmax_slip,
        context_hint="The context is weights @ values: (T_q, T_k) @ (T_k, d_v).",
    )
    _run_cases(
        check,
        fn,
        _scaled_attention_cases(),
        verify,
        explain=_explain_transpose,
        example="scaled_attention",
        names=QKV,
        fix="compute new tensors instead (e.g. scores = scores / ..., not "
        "scores /= ...).",
        success="your scaled attention is correct; its weights and context vectors "
        "match on 3 inputs, including a batch and d_v != d_k.",
    )
