"""Self-checks for Chapter 5, multi-head attention.

Shapes
------
Letters: see attn_course.shapes.
x : (B, T, D)
heads : (B, H, T, d)
"""

from __future__ import annotations

import torch

from .._validate import require_int
from ._common import (
    as_shape,
    expect_close,
    expect_dict,
    expect_shape,
    expect_tensor,
    shape_mismatch,
)
from ._kit import (
    Case,
    Slip,
    call,
    exercise_check,
    first_slip,
    passed,
    require_callable,
    run_cases,
    seeded,
)

__all__ = [
    "check_head_counts_fn",
    "check_head_split",
    "check_param_count_fn",
    "check_shape_predictions",
]


def _head_split_cases():
    """``(x, num_heads)`` for check_head_split."""
    generator = torch.Generator().manual_seed(0)
    inputs = [
        ("torch.arange(48.0).view(2, 3, 8)", torch.arange(48.0).view(2, 3, 8), 2),
        ("torch.arange(48.0).view(2, 3, 8)", torch.arange(48.0).view(2, 3, 8), 4),
        ("random x of shape (2, 5, 12)", torch.randn(2, 5, 12, generator=generator), 3),
    ]
    return [Case(f"{text} with num_heads = {H}", (x, H)) for text, x, H in inputs]


@exercise_check("split_heads", "merge_heads")
def check_head_split(split_heads, merge_heads):
    """Check functions that cut each token's vector into heads and glue it back.

    Introduced in Chapter 5. ``split_heads(x, num_heads)`` must turn ``(B, T, D)``
    into ``(B, H, T, d)`` with ``d = D // H``: head ``h`` of token ``t`` holds
    features ``h*d`` to ``(h+1)*d - 1`` of that token, as in
    :class:`attn_course.MultiHeadAttention`. ``merge_heads(x)`` must undo it:
    ``(B, H, T, d) -> (B, T, D)``.

    Parameters
    ----------
    split_heads : callable
        Your function ``split_heads(x, num_heads)``.
    merge_heads : callable
        Your function ``merge_heads(x)``.

    Returns
    -------
    None
        Prints one line starting with ✅ when both functions pass on 3 inputs.

    Raises
    ------
    AssertionError
        If a function raises, changes its input, returns a wrong shape or wrong
        values; the common slips are named: forgetting the transpose (or the
        transpose back), viewing straight to ``(B, H, T, d)``, and ``view`` after
        ``transpose`` without ``contiguous()``.
    TypeError
        If either is not a function.

    Shapes
    ------
    Letters: see attn_course.shapes.
    x : (B, T, D)
    split_heads output : (B, H, T, d)
    merge_heads output : (B, T, D)

    Examples
    --------
    >>> def split_heads(x, num_heads):
    ...     B, T, D = x.shape
    ...     x = x.view(B, T, num_heads, D // num_heads)  # (B, T, D) -> (B, T, H, d)
    ...     return x.transpose(1, 2)  # (B, T, H, d) -> (B, H, T, d)
    >>> def merge_heads(x):
    ...     B, H, T, d = x.shape
    ...     return x.transpose(1, 2).contiguous().view(B, T, H * d)  # (B, T, D)
    >>> check_head_split(split_heads, merge_heads)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_head_split: split_heads and merge_heads are correct on 3 inputs, and
    merge_heads(split_heads(x)) gives x back.
    """
    check = "check_head_split"
    require_callable(merge_heads, check, "merge_heads")

    def verify(case, split):
        (x, H), where = case.args, case.where
        B, T, D = x.shape
        d = D // H
        expected = x.view(B, T, H, d).transpose(1, 2)  # (B, T, H, d) -> (B, H, T, d)
        name = f"{check}: split_heads's output"
        split = expect_tensor(split, name, where)
        shape_slips = [
            Slip(
                lambda answer: tuple(answer.shape) == (B, T, H, d) != (B, H, T, d),
                f"shape {(B, T, H, d)} = (B, T, H, d); the heads must come before "
                f"the tokens, (B, H, T, d): add .transpose(1, 2) after the view.",
            ),
            Slip(
                lambda answer: (
                    answer.dim() == 4
                    and answer.shape[1] != H
                    and tuple(answer.shape)
                    == (B, answer.shape[1], T, D // answer.shape[1])
                ),
                f"the wrong number of heads in dimension 1: num_heads = {H} asks for "
                f"{H}; use the argument num_heads, not a fixed number, and d = D // "
                "num_heads.",
            ),
        ]
        why = first_slip(split, shape_slips)
        if why:
            raise AssertionError(f"{name}{where} has {why}")
        expect_shape(split, expected, name, where)
        slips = [
            Slip(
                x.reshape(B, H, T, d),
                "You reshaped straight to (B, H, T, d) without a transpose: that "
                "cuts the SEQUENCE into H pieces instead of each token's vector, "
                "and mixes tokens. View as (B, T, H, d) first, then "
                ".transpose(1, 2).",
            ),
            Slip(
                x.reshape(B, T, d, H).permute(0, 3, 1, 2),
                "Your head h takes every H-th feature (h, h + H, ...), as a view to "
                "(B, T, d, H) does; head h must take the consecutive features h*d "
                "to (h+1)*d - 1: view as (B, T, H, d), then .transpose(1, 2).",
            ),
        ]
        expect_close(split, expected, name, where, atol=1e-6, rtol=1e-6, slips=slips)

        heads = Case(case.description, (expected.contiguous(),))  # as attention gives
        merged = call(merge_heads, check, heads, who="merge_heads")
        name = f"{check}: merge_heads's output"
        merged = expect_tensor(merged, name, where)
        expect_shape(merged, x, name, where)
        glued = [
            Slip(
                expected.contiguous().view(B, T, D),
                "You glued (B, H, T, d) straight into (B, T, D), which mixes "
                "tokens. Transpose back first, x.transpose(1, 2) -> (B, T, H, d), "
                "then .contiguous().view(B, T, D).",
            ),
        ]
        expect_close(merged, x, name, where, atol=1e-6, rtol=1e-6, slips=glued)

    run_cases(
        check,
        split_heads,
        _head_split_cases(),
        verify,
        example="split_heads",
        who="split_heads",
        success="split_heads and merge_heads are correct on 3 inputs, and "
        "merge_heads(split_heads(x)) gives x back.",
    )


_SHAPE_HINTS = {
    "wrapper output": (
        "in MultiHeadAttentionWrapper d_out is the width of EACH head, so the "
        "output has num_heads * d_out features"
    ),
    "wrapper weights": "one (T, T) matrix per head, in every sequence",
    "fused output": (
        "in MultiHeadAttention d_out is the TOTAL width: the output has d_out features"
    ),
    "fused weights": "one (T, T) matrix per head, in every sequence",
    "queries": "the projection keeps B and T and gives d_out features: (B, T, D)",
    "view": "view cuts D into H heads of d = d_out // num_heads: (B, T, H, d)",
    "transpose": "transpose(1, 2) swaps T and H: (B, H, T, d)",
    "context": "weights (B, H, T, T) @ values (B, H, T, d) -> (B, H, T, d)",
    "context.transpose": "transpose(1, 2) swaps H and T back: (B, T, H, d)",
    "context.view": "glue the H heads of each token back together: (B, T, D)",
    "weights": "one (T, T) matrix per head, in every sequence",
}

# The letters of each dimension, for the steps that are not a view or transpose.
_LETTERS = {
    "wrapper output": ("B", "T", "H * d_out"),
    "wrapper weights": ("B", "H", "T", "T"),
    "fused output": ("B", "T", "D"),
    "fused weights": ("B", "H", "T", "T"),
    "x": ("B", "T", "d_in"),
    "weights": ("B", "H", "T", "T"),
    "context": ("B", "H", "T", "d"),
    "context.transpose": ("B", "T", "H", "d"),
}


def _hint_for(step):
    """The shape hint for a step name such as 'keys.view'."""
    if step in _SHAPE_HINTS:
        return _SHAPE_HINTS[step]
    for suffix in ("view", "transpose"):
        if step.endswith("." + suffix) and not step.startswith("context"):
            return _SHAPE_HINTS[suffix]
    if step in ("keys", "values", "out_proj", "x"):
        return "(B, T, d_in) for x; the projections give (B, T, D)"
    return ""


def _letters_for(step):
    """The letters of the dimensions of a step's shape, such as (B, T, H, d)."""
    if step in _LETTERS:
        return _LETTERS[step]
    if step.endswith(".view") and not step.startswith("context"):
        return ("B", "T", "H", "d")
    if step.endswith(".transpose"):
        return ("B", "H", "T", "d")
    return ("B", "T", "D")  # queries, keys, values, context.view, out_proj


@exercise_check("answer")
def check_shape_predictions(
    answer, *, d_in, d_out, num_heads, batch_size, num_tokens, required=()
):
    """Check predicted shapes for the wrapper and the fused multi-head module.

    Introduced in Chapter 5. Builds ``MultiHeadAttentionWrapper(d_in, d_out,
    num_tokens, 0.0, num_heads)`` and ``MultiHeadAttention(d_in, d_out, num_tokens,
    0.0, num_heads)`` with the SAME arguments, runs both on an input of
    ``batch_size`` sequences of ``num_tokens`` tokens (the fused one with a
    :class:`attn_course.ShapeTracer`), and compares every shape in ``answer``.
    A wrong prediction is explained (which dimension is too high or too low, and
    why) without giving away the right shape.

    Parameters
    ----------
    answer : dict
        Predicted shapes (tuples, lists or ``torch.Size``). Keys: ``"wrapper
        output"``, ``"wrapper weights"``, ``"fused output"``, ``"fused weights"``,
        and any step name of the tracer, such as ``"queries.view"``,
        ``"queries.transpose"``, ``"context"``, ``"context.transpose"``.
    d_in, d_out, num_heads, batch_size, num_tokens : int
        The arguments of both modules and the input size.
    required : sequence of str, optional
        Keys that ``answer`` must have (an exercise's list); any others are
        optional.

    Returns
    -------
    None
        Prints one line starting with ✅ when every prediction is right.

    Raises
    ------
    AssertionError
        If ``answer`` is not a dict, is empty, lacks a required key, has an
        unknown key, or shapes are wrong (every wrong one is listed with the
        dimensions that are off and why).
    TypeError, ValueError
        If a size is not a positive int, or ``num_heads`` does not divide
        ``d_out`` (a mistake in the call).

    Shapes
    ------
    Letters: see attn_course.shapes.
    x : (B, T, d_in)

    Examples
    --------
    >>> predicted = {
    ...     "wrapper output": (2, 5, 8),
    ...     "fused output": (2, 5, 4),
    ...     "queries.view": (2, 5, 2, 2),
    ... }
    >>> check_shape_predictions(
    ...     predicted, d_in=3, d_out=4, num_heads=2, batch_size=2, num_tokens=5
    ... )  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_shape_predictions: all 3 predicted shapes are correct for d_in=3,
    d_out=4, num_heads=2 and x of shape (2, 5, 3).
    """
    from ..modules import MultiHeadAttention, MultiHeadAttentionWrapper, ShapeTracer

    check = "check_shape_predictions"
    sizes = {
        "d_in": d_in,
        "d_out": d_out,
        "num_heads": num_heads,
        "batch_size": batch_size,
        "num_tokens": num_tokens,
    }
    d_in, d_out, H, B, T = (require_int(n, name) for name, n in sizes.items())
    args = (d_in, d_out, T, 0.0, H)
    with seeded(0):
        wrapper = MultiHeadAttentionWrapper(*args)
        fused = MultiHeadAttention(*args)
    answer = expect_dict(answer, check, "{'fused output': (2, 5, 4)}")
    x = torch.zeros(B, T, d_in)
    tracer = ShapeTracer()
    with torch.no_grad():
        wrapper_out, wrapper_weights = wrapper(x, return_weights=True)
        fused_out, fused_weights = fused(x, return_weights=True, trace=tracer)
    actual = {
        "wrapper output": tuple(wrapper_out.shape),
        "wrapper weights": tuple(wrapper_weights.shape),
        "fused output": tuple(fused_out.shape),
        "fused weights": tuple(fused_weights.shape),
        **dict(tracer.steps),
    }
    unknown = [key for key in answer if key not in actual]
    if unknown:
        raise AssertionError(
            f"{check}: unknown key(s) {unknown}; use any of {list(actual)}."
        )
    missing = [key for key in required if key not in answer]
    if missing:
        raise AssertionError(
            f"{check}: your dict lacks the keys {missing}; predict a shape for each "
            f"of {list(required)}."
        )
    if not answer:
        raise AssertionError(
            f"{check}: your dict is empty; predict at least one shape, such as "
            "{'fused output': (B, T, D)} with numbers for the letters."
        )
    wrong = []
    for key, value in answer.items():
        predicted = as_shape(value)
        if predicted is None:
            wrong.append(f"  {key!r}: {value!r} is not a shape; write it as a tuple")
        elif predicted != actual[key]:
            off = shape_mismatch(predicted, actual[key], _letters_for(key))
            wrong.append(
                f"  {key!r}: you predicted {predicted}, but {off}; {_hint_for(key)}"
            )
    setting = f"d_in={d_in}, d_out={d_out}, num_heads={H} and x of shape {(B, T, d_in)}"
    if wrong:
        raise AssertionError(
            f"{check}: {len(wrong)} of {len(answer)} shapes are wrong for {setting} "
            f"(H = num_heads, d = d_out // H):\n" + "\n".join(wrong)
        )
    passed(check, f"all {len(answer)} predicted shapes are correct for {setting}.")


def _param_count_cases():
    """Settings ``(d_in, d_out, num_heads, qkv_bias)``, each with the number of
    parameters of a real MultiHeadAttention (built on the meta device: no memory,
    no random numbers)."""
    from ..modules import MultiHeadAttention

    cases = []
    for args in [
        (5, 2, 2, False),  # no two known slips give the same count here
        (3, 8, 2, True),
        (3, 8, 4, True),
        (10, 12, 3, False),
        (512, 256, 8, False),
        (768, 768, 12, True),
        (768, 768, 1, True),
    ]:
        d_in, d_out, H, bias = args
        with torch.device("meta"):
            module = MultiHeadAttention(d_in, d_out, 1, 0.0, H, qkv_bias=bias)
        count = sum(p.numel() for p in module.parameters())
        text = f"d_in={d_in}, d_out={d_out}, num_heads={H}, qkv_bias={bias}"
        cases.append(Case(text, args, count))
    return cases


@exercise_check("fn")
def check_param_count_fn(fn):
    """Check a formula for the number of parameters of ``MultiHeadAttention``.

    Introduced in Chapter 5. ``fn(d_in, d_out, num_heads, qkv_bias)`` must return
    the number of trainable numbers in ``attn_course.MultiHeadAttention(d_in, d_out,
    context_length, dropout, num_heads, qkv_bias)``: three ``d_in -> d_out``
    projections (with a bias each when ``qkv_bias``) and ``out_proj``, ``d_out ->
    d_out`` with a bias. The reference is counted from real modules, for 7
    settings. There are no tensors: ``fn`` returns a number.

    Parameters
    ----------
    fn : callable
        Your formula: takes ``(d_in, d_out, num_heads, qkv_bias)``, returns an int.

    Returns
    -------
    None
        Prints one line starting with ✅ when all settings match.

    Raises
    ------
    AssertionError
        On the first setting where ``fn`` raises, does not return a whole number,
        or returns a wrong count; a missing bias, a missing ``out_proj`` and a count
        that grows with ``num_heads`` are named.
    TypeError
        If ``fn`` is not a function, e.g. a count it returned.

    Examples
    --------
    >>> def count(d_in, d_out, num_heads, qkv_bias):
    ...     projections = 3 * (d_in * d_out + (d_out if qkv_bias else 0))
    ...     return projections + d_out * d_out + d_out  # + out_proj
    >>> check_param_count_fn(count)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_param_count_fn: your formula is correct; it matches the parameters of
    MultiHeadAttention in all 7 settings, e.g. 2,362,368 for d_in = d_out = 768 with
    12 heads and qkv_bias=True (GPT-2 small).
    """
    check = "check_param_count_fn"

    def verify(case, got):
        (d_in, d_out, H, bias), expected = case.args, case.data
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if isinstance(got, float) and got.is_integer():
            got = int(got)
        if got is None:
            raise AssertionError(
                f"{check}: for {case.description} your function returned None; did "
                "it compute the count and forget to `return` it?"
            )
        if isinstance(got, bool) or not isinstance(got, int):
            raise AssertionError(
                f"{check}: for {case.description} your function returned {got!r}; "
                "return a whole number (an int)."
            )
        if got == expected:
            return
        qkv = 3 * (d_in * d_out + (d_out if bias else 0))
        out_proj = d_out * d_out + d_out
        slips = [
            Slip(
                expected - d_out,
                "the bias of out_proj (d_out numbers) is missing: out_proj always "
                "has one, whatever qkv_bias says",
            ),
            Slip(
                expected - 3 * d_out if bias else None,
                "the three qkv biases (3 * d_out) are missing",
            ),
            Slip(
                None if bias else expected + 3 * d_out,
                "three qkv biases are counted, but qkv_bias=False",
            ),
            Slip(
                3 * (d_in * d_out + (d_out if bias else 0)),
                "out_proj (d_out * d_out + d_out) is missing",
            ),
            Slip(
                4 * d_out * d_out + 4 * d_out,
                "you used 4 * d_out**2 + 4 * d_out, which holds only when d_in = "
                "d_out and qkv_bias=True; each of the three projections has d_in * "
                "d_out weights",
            ),
            Slip(
                expected - qkv + 3 * (d_out * d_out + (d_out if bias else 0)),
                "the three projections are counted as d_out * d_out each: they map "
                "d_in features to d_out, so each has d_in * d_out weights",
            ),
            Slip(
                expected * H if H > 1 else None,
                "the count is multiplied by num_heads: the heads SPLIT d_out, they "
                "do not add parameters",
            ),
            Slip(
                H * qkv + out_proj if H > 1 else None,
                "the query, key and value projections are counted once per head: "
                "the heads SPLIT the d_out outputs of one projection, they do not "
                "add parameters",
            ),
        ]
        why = first_slip(got, slips, atol=0, rtol=0)
        raise AssertionError(
            f"{check}: for {case.description} your function returned {got:,}, but "
            f"the module has {expected:,} parameters."
            + (f" It looks like {why}." if why else "")
        )

    run_cases(
        check,
        fn,
        _param_count_cases(),
        verify,
        example="count",
        success="your formula is correct; it matches the parameters of "
        "MultiHeadAttention in all 7 settings, e.g. 2,362,368 for d_in = d_out = 768 "
        "with 12 heads and qkv_bias=True (GPT-2 small).",
    )


@exercise_check("fn")
def check_head_counts_fn(fn):
    """Check a function that lists the valid head counts for a width ``d_out``.

    Introduced in Chapter 5. ``fn(d_out)`` must return every ``num_heads`` that
    ``attn_course.MultiHeadAttention`` accepts for this ``d_out``, in increasing
    order: the divisors of ``d_out``, each giving heads of width ``d_out //
    num_heads``. There are no tensors: ``fn`` returns a list.

    Parameters
    ----------
    fn : callable
        Your function: takes ``d_out``, returns a list of ints.

    Returns
    -------
    None
        Prints one line starting with ✅ when it is right for 6 widths.

    Raises
    ------
    AssertionError
        On the first width where ``fn`` raises, returns something that is not a
        sequence of ints, includes an invalid count, misses a valid one (1 and
        ``d_out`` itself are named), or is not in increasing order.
    TypeError
        If ``fn`` is not a function, e.g. a list it returned.

    Examples
    --------
    >>> def valid_head_counts(d_out):
    ...     return [h for h in range(1, d_out + 1) if d_out % h == 0]
    >>> check_head_counts_fn(valid_head_counts)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_head_counts_fn: your function is correct for d_out = 8, 12, 7, 1, 768
    and 1024; e.g. d_out = 8 allows num_heads in [1, 2, 4, 8].
    """
    check = "check_head_counts_fn"

    def verify(case, got):
        (d_out,) = case.args
        expected = [h for h in range(1, d_out + 1) if d_out % h == 0]
        if got is None:
            raise AssertionError(
                f"{check}: for d_out={d_out} your function returned None; did it "
                "build the list and forget to `return` it?"
            )
        try:
            got = [int(h) for h in got]
        except (TypeError, ValueError):
            raise AssertionError(
                f"{check}: for d_out={d_out} your function returned {got!r}; return "
                "a list of ints such as [1, 2, 4, 8]."
            ) from None
        if got == expected:
            return
        invalid = [h for h in got if h < 1 or d_out % h != 0]
        missing = [h for h in expected if h not in got]
        first = invalid[0] if invalid else 1
        why_invalid = (
            f"num_heads={first} does not divide d_out={d_out} ({d_out} / {first} = "
            f"{d_out / first:g} is not a whole head width)"
            if first >= 1
            else f"num_heads={first} is not a positive number of heads"
        )
        also = (
            f"; 1 and d_out itself are valid too (one head of width {d_out}, or "
            f"{d_out} heads of width 1)"
            if 1 in missing or d_out in missing
            else ""
        )
        slips = [
            Slip(lambda _: bool(invalid), f"it includes {invalid[:8]}: {why_invalid}"),
            Slip(lambda _: bool(missing), f"it misses {missing[:8]}{also}"),
            Slip(
                lambda answer: sorted(set(answer)) == expected,
                "it has the right counts, but list each once, in increasing order",
            ),
        ]
        why = first_slip(got, slips)
        raise AssertionError(
            f"{check}: for d_out={d_out} your function returned "
            f"{got[:12]}{' ...' if len(got) > 12 else ''}; {why}."
        )

    run_cases(
        check,
        fn,
        [Case(f"d_out={d_out}", (d_out,)) for d_out in (8, 12, 7, 1, 768, 1024)],
        verify,
        example="valid_head_counts",
        success="your function is correct for d_out = 8, 12, 7, 1, 768 and 1024; "
        "e.g. d_out = 8 allows num_heads in [1, 2, 4, 8].",
    )
