"""Self-checks for Chapter 3, the causal attention mask.

Shapes
------
Letters: see attn_course.shapes.
mask : (T_q, T_k)
"""

from __future__ import annotations

import torch

from ..functional import scaled_dot_product_attention
from ._common import (
    INVERTED,
    QKV,
    expect_close,
    expect_shape,
    expect_tensor,
    fmt_number,
    fmt_values,
    journey_projections,
    run_attention_cases,
    scaled_reference,
    unravel,
)
from ._kit import Case, Slip, exercise_check, first_slip, matches, run_cases, seeded
from .table import Exercise, _same
from .table import Slip as CodeSlip

__all__ = [
    "check_additive_mask",
    "check_causal_attention_fn",
    "check_causal_mask",
    "check_mha_mask_fn",
]

# The lengths the mask checks try; T = 1 last, where several mistakes look alike
# (the inverted 1 x 1 mask also lacks its diagonal).
_SIZES = (2, 5, 6, 1)
_SIZES_TEXT = ", ".join(str(T) for T in sorted(_SIZES))


def _lower(T):
    """The causal mask, True = may attend: the lower triangle with the diagonal.

    Shapes
    ------
    Letters: see attn_course.shapes.
    mask : (T, T)
    """
    return torch.ones(T, T, dtype=torch.bool).tril()


def _length_cases(generator=None):
    """One case per length T; with a generator, random scores (T, T) as data."""
    return [
        Case(
            f"T = {T}",
            (T,),
            None
            if generator is None
            else torch.randn(T, T, generator=generator, dtype=torch.float64),
        )
        for T in _SIZES
    ]


_TRIL = "    return torch.ones(T, T, dtype=torch.bool).tril({})\n"

CAUSAL_MASK = Exercise(
    label="ch03-ex-causal-mask",
    check="check_causal_mask",
    function="my_causal_mask(T)",
    parameter="fn",
    output="mask",
    right=_TRIL.format(""),
    cases=tuple((T,) for T in _SIZES),
    describe=lambda T: f"T = {T}",
    rule="True (may attend) on and below the diagonal, False above it",
    slips=(
        CodeSlip(
            "inverted", _TRIL.format("").replace("torch.ones", "~torch.ones"), INVERTED
        ),
        CodeSlip(
            "no-diagonal",
            _TRIL.format("diagonal=-1"),
            "the diagonal is False, but a token may attend to itself: keep the "
            "diagonal (tril(), not tril(-1) or j < i)",
        ),
        CodeSlip(
            "upper",
            "    return torch.ones(T, T, dtype=torch.bool).triu()\n",
            "this is the upper triangle. Row i is query i and column j is key j; "
            "query i may see keys j <= i, the lower triangle: use .tril()",
        ),
        CodeSlip(
            "float",
            "    return torch.ones(T, T).tril()\n",
            "the entries are right but are numbers (1 and 0): create the mask with "
            "dtype=torch.bool or convert it with .bool(); a float mask would be "
            "added to the scores",
        ),
        CodeSlip(
            "additive",
            "    future = torch.ones(T, T, dtype=torch.bool).triu(1)\n"
            '    return torch.zeros(T, T).masked_fill(future, float("-inf"))\n',
            "this is an additive float mask (0 / -inf), which is added to the "
            "scores; this exercise asks for the bool mask: True = may attend",
        ),
    ),
)
check_causal_mask = CAUSAL_MASK.make_check()


def _identity_mha(E):
    """An ``nn.MultiheadAttention`` with one head whose projections do nothing.

    With identity projections and zero biases it computes plain scaled
    dot-product attention of its inputs, so its output can be compared with
    ``scaled_dot_product_attention`` on the same tensors.
    """
    with seeded(0):
        mha = torch.nn.MultiheadAttention(E, num_heads=1, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.eye(E).repeat(3, 1))  # (3 * E, E)
        mha.in_proj_bias.zero_()
        mha.out_proj.weight.copy_(torch.eye(E))
        mha.out_proj.bias.zero_()
    return mha.eval()


def _sdpa_mask_cases():
    """Masks in the SDPA convention (True = may attend), each with a query and a
    key batch of width 4 to run them on."""
    generator = torch.Generator().manual_seed(0)
    random = torch.rand(5, 5, generator=generator) < 0.5  # (5, 5)
    random[:, 0] = True  # every query may attend to at least one key
    masks = [
        ("the causal mask for T = 4", _lower(4)),
        ("a random (5, 5) mask", random),
        (
            "a (3, 5) mask for 3 queries and 5 keys",
            torch.ones(3, 5, dtype=torch.bool).tril(diagonal=2),
        ),
    ]
    generator = torch.Generator().manual_seed(1)
    cases = []
    for text, mask in masks:
        T_q, T_k = mask.shape
        query = torch.randn(1, T_q, 4, generator=generator)  # (B, T_q, d_k)
        key = torch.randn(1, T_k, 4, generator=generator)  # (B, T_k, d_k)
        cases.append(Case(text, (mask,), (query, key)))
    return cases


@exercise_check("fn")
def check_mha_mask_fn(fn):
    """Check a function converting an SDPA bool mask to ``nn.MultiheadAttention``'s.

    Introduced in Chapter 5. ``scaled_dot_product_attention`` reads ``True`` as
    *may attend*; ``nn.MultiheadAttention``'s bool ``attn_mask`` reads ``True`` as
    *blocked*. ``fn(mask)`` must return the mask that blocks the same keys in
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
        If ``fn`` raises, changes its input in place, returns something that is not
        a bool tensor of the same shape, returns the mask unchanged, or gives
        ``nn.MultiheadAttention`` different results.
    TypeError
        If ``fn`` is not a function, e.g. an inverted mask.

    Shapes
    ------
    Letters: see attn_course.shapes.
    mask : (T_q, T_k)
    output : (T_q, T_k)

    Examples
    --------
    >>> check_mha_mask_fn(lambda mask: ~mask)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_mha_mask_fn: your conversion is correct; nn.MultiheadAttention with your
    masks gives the same outputs as scaled_dot_product_attention with the originals,
    on 3 masks.
    """
    check = "check_mha_mask_fn"
    mha = _identity_mha(4)

    def verify(case, result):
        (original,), (query, key), where = case.args, case.data, case.where
        name = f"{check}: your mask"
        result = expect_tensor(result, name, where)
        expect_shape(result, original, name, where)
        if result.dtype != torch.bool:
            raise AssertionError(
                f"{name}{where} has dtype {result.dtype}; this exercise asks for a "
                "bool mask (True = blocked). nn.MultiheadAttention also accepts a "
                "float mask, but that one is added to the scores (0 / -inf)."
            )
        slips = [
            Slip(
                original,
                "it is the input unchanged. nn.MultiheadAttention reads True as "
                "blocked, the opposite of scaled_dot_product_attention: invert the "
                "mask with ~mask (or mask.logical_not())",
            )
        ]
        why = first_slip(result, slips, atol=0, rtol=0)
        if why:
            raise AssertionError(f"{name}{where}: {why}.")
        expected = scaled_dot_product_attention(query, key, key, attn_mask=original)
        with torch.no_grad():
            output, _ = mha(query, key, key, attn_mask=result, need_weights=False)
        expect_close(
            output,
            expected,
            f"{check}: nn.MultiheadAttention's output with your mask",
            where,
            atol=1e-5,
            rtol=1e-4,
            hint="\nTrue must block exactly the keys the original mask forbids.",
        )

    run_cases(
        check,
        fn,
        _sdpa_mask_cases(),
        verify,
        example="to_mha_mask",
        names=("mask",),
        fix="return a new mask, e.g. ~mask, instead of mask.logical_not_().",
        success="your conversion is correct; nn.MultiheadAttention with your masks "
        "gives the same outputs as scaled_dot_product_attention with the originals, "
        "on 3 masks.",
    )


def _blocks(values, allowed):
    """Whether an additive mask is 0 where ``allowed`` and at most -1e4 elsewhere.

    Shapes
    ------
    Letters: see attn_course.shapes.
    values, allowed : (T, T)
    """
    blocked = values <= -1e4  # -inf, or a very large negative number
    kept = values.abs() < 1e-6
    return bool(blocked[~allowed].all() and kept[allowed].all())


def _as_good_as(got, output):
    """Whether an additive mask does what ``output`` does: the same finite entries,
    and -inf or a number <= -1e4 (as good after a softmax) where it has -inf."""
    if not (isinstance(output, torch.Tensor) and output.is_floating_point()):
        return _same(got, output)
    if not (
        isinstance(got, torch.Tensor)
        and got.is_floating_point()
        and got.shape == output.shape
    ):
        return False
    blocked = output == float("-inf")
    return bool(
        (got[blocked] <= -1e4).all()
        and torch.allclose(got[~blocked], output[~blocked], 0, 1e-6, equal_nan=True)
    )


_FUTURE = "    future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)\n"
_FILL = "    return torch.zeros(T, T).masked_fill({}, float({!r}))\n"

ADDITIVE_MASK = Exercise(
    label="ch03-ex-additive",
    check="check_additive_mask",
    function="additive_causal_mask(T)",
    parameter="fn",
    output="mask",
    right=_FUTURE + _FILL.format("future", "-inf"),
    cases=tuple((T,) for T in _SIZES),
    describe=lambda T: f"T = {T}",
    rule="0 on and below the diagonal, -inf above it",
    same=_as_good_as,
    slips=(
        CodeSlip(
            "times-inf",
            '    return torch.triu(torch.ones(T, T), diagonal=1) * float("-inf")\n',
            "it contains NaN. Multiplying a 0/1 mask by float('-inf') gives "
            "0 * -inf = nan, not 0. Use torch.zeros(T, T).masked_fill(blocked, "
            "float('-inf')) or torch.where(blocked, float('-inf'), 0.0) instead",
        ),
        CodeSlip(
            "plus-inf",
            _FUTURE + _FILL.format("future", "inf"),
            "it contains +inf; blocked entries must be -inf, so that their "
            "exponential is 0",
        ),
        CodeSlip(
            "inverted",
            _FUTURE + _FILL.format("~future", "-inf"),
            "your mask is inverted: it blocks the past and the token itself and "
            "keeps the future",
        ),
        CodeSlip(
            "transposed",
            _FUTURE + _FILL.format("future.T", "-inf"),
            "it is transposed: it blocks the past and keeps the future. Row i is "
            "query i and column j is key j; block j > i, above the diagonal",
        ),
        CodeSlip(
            "zero-one",
            "    return torch.triu(torch.ones(T, T), diagonal=1)\n",
            "it holds only 0 and 1; adding 1 to a score blocks nothing. Blocked "
            "entries need -inf",
        ),
        CodeSlip(
            "diagonal-blocked",
            "    blocked = torch.ones(T, T, dtype=torch.bool).triu()\n"
            + _FILL.format("blocked", "-inf"),
            "the diagonal is blocked, but a token may attend to itself: block only "
            "j > i (triu(diagonal=1))",
        ),
        CodeSlip(
            "bool",
            "    return torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)\n",
            "this is a bool mask; an additive mask is floating point, 0 where "
            "attending is allowed and -inf where it is blocked",
        ),
    ),
)
check_additive_mask = ADDITIVE_MASK.make_check()


def _causal_attention_cases():
    """The journey sentence projected to d_k = 2, and a random batch."""
    from ..modules import CausalAttention

    generator = torch.Generator().manual_seed(0)
    inputs = [
        (
            '"Your journey starts with one step" projected to d_k = 2',
            journey_projections(lambda: CausalAttention(3, 2, 6, 0.0), seed=123),
        ),
        (
            "a batch: queries and keys (2, 5, 4), values (2, 5, 3)",
            (
                torch.randn(2, 5, 4, generator=generator) * 2,
                torch.randn(2, 5, 4, generator=generator) * 2,
                torch.randn(2, 5, 3, generator=generator),
            ),
        ),
    ]
    return [Case(text, args) for text, args in inputs]


def _rows_off_by_columns(answer, expected):
    """Whether ``answer`` is ``expected`` with each weight multiplied by a factor of
    its row times a factor of its column, and is not ``expected`` itself.

    That is what a sum or max over the last dimension without ``keepdim=True``
    gives inside a softmax or a renormalisation: the ``(..., T)`` result
    broadcasts along the columns, so row ``j``'s sum or max reaches every weight
    of column ``j``. Only the entries where ``expected`` is positive are compared.

    Shapes
    ------
    Letters: see attn_course.shapes.
    answer, expected : (..., T, T)
    """
    if matches(answer, expected):
        return False
    allowed = expected > 0
    if not bool(torch.equal(answer > 0, allowed)) or not bool(
        torch.isfinite(answer).all()
    ):
        return False
    log_ratio = torch.where(allowed, answer.log() - expected.log(), 0.0)
    T = answer.shape[-1]
    i, j = torch.tril_indices(T, T)
    # A row-times-column factor means log_ratio[i, j] = a_i + b_j, so
    # log_ratio[i, j] - log_ratio[i, 0] = b_j - b_0 for every row i >= j.
    steps = log_ratio[..., i, j] - log_ratio[..., i, 0]  # (..., T (T + 1) / 2)
    column_steps = log_ratio[..., j, j] - log_ratio[..., j, 0]
    return bool(torch.allclose(steps, column_steps, atol=1e-4, rtol=1e-4))


def _masking_slips(case, weights):
    """The masking slips of check_causal_attention_fn, for the learner's weights:
    each is the whole explanation when it matches."""
    queries, keys, values = case.args
    T = queries.shape[-2]
    allowed = _lower(T)  # (T, T)
    inverted = scaled_reference(queries, keys, values, mask=~allowed)[1]
    unmasked = scaled_reference(queries, keys, values)[1]
    # j < i: the diagonal blocked too, so that query 0 has no key at all
    no_diagonal = scaled_reference(queries, keys, values, mask=allowed.tril(-1))[1]
    expected = scaled_reference(queries, keys, values, mask=allowed)[1]
    answer = weights.detach().to("cpu", torch.float64)
    future = answer.masked_fill(allowed, 0.0)  # (..., T, T): weights on j > i
    leak = future.abs().reshape(-1, T, T).amax(dim=0)  # (..., T, T) -> (T, T)
    i, j = unravel(int(leak.reshape(-1).argmax()), (T, T))
    return [
        Slip(
            lambda w: matches(w[..., :-1, :], inverted[..., :-1, :]),
            f"{INVERTED}.",
        ),
        Slip(
            lambda w: T > 1 and matches(w[..., 1:, :], no_diagonal[..., 1:, :]),
            "your mask blocks the diagonal too: query i attends only to keys j < i, "
            "so query 0 has no key at all (its row is "
            f"{fmt_values(answer[(0,) * (answer.dim() - 2)][0])}). A token may "
            "attend to itself: block only j > i, e.g. "
            "torch.ones(T, T, dtype=torch.bool).triu(diagonal=1), or keep "
            "tril() without diagonal=-1.",
        ),
        Slip(
            lambda w: bool(torch.isnan(w).any()),
            "they contain NaN. A common cause is building the mask as "
            "ones * float('-inf'): 0 * -inf = nan. Use "
            "scores.masked_fill(future, float('-inf')), where future is True above "
            "the diagonal.",
        ),
        Slip(
            lambda w: bool((leak > 1e-6).any()),
            f"they put weight on the future: query {i} gives "
            f"{fmt_number(leak[i, j])} to key {j} > {i}. Set the scores above the "
            "diagonal to -inf before the softmax.",
        ),
        Slip(
            unmasked.masked_fill(~allowed, 0.0),
            "you zeroed the future weights after the softmax but did not "
            f"renormalise, so the rows sum to {fmt_values(answer.sum(-1))}; divide "
            "each row by its sum, or mask with -inf before the softmax.",
        ),
        Slip(
            lambda w: _rows_off_by_columns(w, expected),
            "each column of your weights is off by its own factor: a sum or max "
            "over the last dimension without keepdim=True. It gives shape (..., T), "
            "which lines up with the columns: the sum (or max) of row j reaches "
            "every weight of column j. With keepdim=True it is (..., T, 1) and "
            "each row gets its own (your rows sum to "
            f"{fmt_values(answer.sum(-1))}).",
        ),
    ]


def _unscaled_slip(case):
    """The scaling slip of check_causal_attention_fn."""
    queries, keys, values = case.args
    allowed = _lower(queries.shape[-2])
    return [
        Slip(
            scaled_reference(queries, keys, values, scale=1.0, mask=allowed)[1],
            f"Your weights match no scaling: divide the scores by "
            f"sqrt({keys.shape[-1]}).",
        )
    ]


@exercise_check("fn")
def check_causal_attention_fn(fn):
    """Check a function computing causal scaled dot-product attention.

    Introduced in Chapter 3. ``fn(queries, keys, values)`` must return ``(weights,
    context)``: query ``i`` attends only to keys ``0..i``, the scores are divided by
    ``sqrt(d_k)``, and ``context = weights @ values``. The reference is
    :func:`attn_course.scaled_dot_product_attention` with ``is_causal=True``.

    Parameters
    ----------
    fn : callable
        Your causal attention: takes queries, keys and values, returns
        (weights, context).

    Returns
    -------
    None
        Prints one line starting with ✅ when both inputs pass.

    Raises
    ------
    AssertionError
        On the first input where ``fn`` raises, changes its inputs, does not return
        a pair of tensors or returns wrong values; an inverted mask, a mask that
        blocks the diagonal too, NaN from ``0 * -inf``, a missing mask (weight on
        future keys), masking after the softmax without renormalising, a sum or
        max without ``keepdim=True`` and a missing scale are named, and so are a
        forgotten transpose and ``.T`` on a batch, which raise shape errors.
    TypeError
        If ``fn`` is not a function, e.g. the weights it returned.

    Shapes
    ------
    Letters: see attn_course.shapes.
    queries, keys : (..., T, d_k)
    values : (..., T, d_v)
    weights, context : (..., T, T), (..., T, d_v)

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
    run_attention_cases(
        "check_causal_attention_fn",
        fn,
        _causal_attention_cases(),
        reference={"is_causal": True},
        slips=_unscaled_slip,
        fatal=_masking_slips,
        context_hint="The context is weights @ values.",
        example="causal_attention",
        names=QKV,
        fix="compute new tensors instead (e.g. scores = scores.masked_fill(...), "
        "not scores.masked_fill_(...)).",
        success="your causal attention is correct; no weight on future keys, and "
        "its weights and context vectors match on 2 inputs.",
    )
