"""Self-checks for Chapter 5, multi-head attention."""

from __future__ import annotations

import torch

from ._common import (
    _built_with_seed,
    _call,
    _matches,
    _require_callable,
    _require_close,
    _require_shape,
    _require_tensor,
    _shape,
)

__all__ = [
    "check_head_counts_fn",
    "check_head_split",
    "check_param_count_fn",
    "check_shape_predictions",
]


def _head_split_inputs():
    """(description, x, num_heads) cases for check_head_split."""
    generator = torch.Generator().manual_seed(0)
    return [
        (
            "torch.arange(48.0).view(2, 3, 8) with num_heads = 2",
            torch.arange(48.0).view(2, 3, 8),
            2,
        ),
        (
            "torch.arange(48.0).view(2, 3, 8) with num_heads = 4",
            torch.arange(48.0).view(2, 3, 8),
            4,
        ),
        (
            "random x of shape (2, 5, 12) with num_heads = 3",
            torch.randn(2, 5, 12, generator=generator),
            3,
        ),
    ]


def check_head_split(split_heads, merge_heads):
    """Check functions that cut each token's vector into heads and glue it back.

    ``split_heads(x, num_heads)`` must turn ``(B, T, D)`` into ``(B, H, T, d)`` with
    ``d = D // H``: head ``h`` of token ``t`` holds features ``h*d`` to ``(h+1)*d - 1``
    of that token, as in :class:`attn_course.MultiHeadAttention`.
    ``merge_heads(x)`` must undo it: ``(B, H, T, d) -> (B, T, D)``.

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
        If a function raises, returns a wrong shape or wrong values; the common
        slips are named: viewing straight to ``(B, H, T, d)``, forgetting the
        transpose (or the transpose back), and ``view`` after ``transpose`` without
        ``contiguous()``.

    Shapes
    ------
    split_heads: (B, T, D) -> (B, H, T, d); merge_heads: (B, H, T, d) -> (B, T, D).

    Examples
    --------
    >>> def split_heads(x, num_heads):
    ...     B, T, D = x.shape
    ...     x = x.view(B, T, num_heads, D // num_heads)  # (B, T, H, d)
    ...     return x.transpose(1, 2)  # (B, H, T, d)
    >>> def merge_heads(x):
    ...     B, H, T, d = x.shape
    ...     return x.transpose(1, 2).contiguous().view(B, T, H * d)  # (B, T, D)
    >>> check_head_split(split_heads, merge_heads)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_head_split: split_heads and merge_heads are correct on 3 inputs, and
    merge_heads(split_heads(x)) gives x back.
    """
    check = "check_head_split"
    _require_callable(split_heads, check, "split_heads")
    _require_callable(merge_heads, check, "merge_heads")
    for description, x, H in _head_split_inputs():
        B, T, D = x.shape
        d = D // H
        expected = x.view(B, T, H, d).transpose(1, 2)  # (B, H, T, d)
        where = f" on {description}"
        name = f"{check}: split_heads's output"
        split = _call(split_heads, check, (x.clone(), H), "split_heads, " + description)
        split = _require_tensor(split, name, where)
        if tuple(split.shape) == (B, T, H, d) != tuple(expected.shape):
            raise AssertionError(
                f"{name}{where} has shape {_shape(split)} = (B, T, H, d); the heads "
                f"must come before the tokens, {_shape(expected)} = (B, H, T, d): "
                "add .transpose(1, 2) after the view."
            )
        _require_shape(split, expected, name, where)
        if _matches(split, x.reshape(B, H, T, d)) and not _matches(split, expected):
            raise AssertionError(
                f"{name}{where} has the right shape but mixes tokens: you reshaped "
                "straight to (B, H, T, d), which cuts the SEQUENCE into H pieces "
                "instead of each token's vector. View as (B, T, H, d) first, then "
                "transpose(1, 2)."
            )
        _require_close(split, expected, name, where, atol=1e-6, rtol=1e-6)

        name = f"{check}: merge_heads's output"
        heads = expected.contiguous()  # (B, H, T, d), as attention returns it
        try:
            merged = merge_heads(heads)
        except RuntimeError as error:
            hint = ""
            if "view" in str(error):
                hint = (
                    " After transpose the tensor is not contiguous in memory, so "
                    ".view cannot merge H and d: call .contiguous() before .view(...), "
                    "or use .reshape(...), which copies when it must."
                )
            raise AssertionError(
                f"{check}: merge_heads raised RuntimeError{where}: "
                f"{str(error).rstrip('.')}.{hint}"
            ) from error
        except Exception as error:
            raise AssertionError(
                f"{check}: merge_heads raised {type(error).__name__}{where}: {error}"
            ) from error
        merged = _require_tensor(merged, name, where)
        _require_shape(merged, x, name, where)
        no_transpose = expected.contiguous().view(B, T, D)
        if _matches(merged, no_transpose) and not _matches(merged, x):
            raise AssertionError(
                f"{name}{where} has the right shape but mixes tokens: you glued "
                "(B, H, T, d) straight into (B, T, D). Transpose back first, "
                "x.transpose(1, 2) -> (B, T, H, d), then .contiguous().view(B, T, D)."
            )
        _require_close(merged, x, name, where, atol=1e-6, rtol=1e-6)
    print(
        f"✅ {check}: split_heads and merge_heads are correct on 3 inputs, and "
        "merge_heads(split_heads(x)) gives x back."
    )


_SHAPE_HINTS = {
    "wrapper output": (
        "in MultiHeadAttentionWrapper d_out is the width of EACH head, so the "
        "output has num_heads * d_out features"
    ),
    "wrapper weights": "one (T, T) matrix per head: (B, H, T, T)",
    "fused output": (
        "in MultiHeadAttention d_out is the TOTAL width: the output has d_out features"
    ),
    "fused weights": "one (T, T) matrix per head: (B, H, T, T)",
    "queries": "the projection keeps B and T and gives d_out features: (B, T, D)",
    "view": "view cuts D into H heads of d = d_out // num_heads: (B, T, H, d)",
    "transpose": "transpose(1, 2) swaps T and H: (B, H, T, d)",
    "context": "weights (B, H, T, T) @ values (B, H, T, d) -> (B, H, T, d)",
    "context.transpose": "transpose(1, 2) swaps H and T back: (B, T, H, d)",
    "context.view": "glue the H heads of each token back together: (B, T, D)",
    "weights": "one (T, T) matrix per head: (B, H, T, T)",
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


def check_shape_predictions(answer, *, d_in, d_out, num_heads, batch_size, num_tokens):
    """Check predicted shapes for the wrapper and the fused multi-head module.

    Builds ``MultiHeadAttentionWrapper(d_in, d_out, num_tokens, 0.0, num_heads)``
    and ``MultiHeadAttention(d_in, d_out, num_tokens, 0.0, num_heads)`` with the
    SAME arguments, runs both on a ``(batch_size, num_tokens, d_in)`` input (the
    fused one with a :class:`attn_course.ShapeTracer`), and compares every shape in
    ``answer``.

    Parameters
    ----------
    answer : dict
        Predicted shapes (tuples, lists or ``torch.Size``). Keys: ``"wrapper
        output"``, ``"wrapper weights"``, ``"fused output"``, ``"fused weights"``,
        and any step name of the tracer, such as ``"queries.view"``,
        ``"queries.transpose"``, ``"context"``, ``"context.transpose"``.
    d_in, d_out, num_heads, batch_size, num_tokens : int
        The arguments of both modules and the input size.

    Returns
    -------
    None
        Prints one line starting with ✅ when every prediction is right.

    Raises
    ------
    AssertionError
        If ``answer`` is not a dict, a key is unknown, or shapes are wrong (every
        wrong one is listed with the right shape and why).

    Shapes
    ------
    x : (batch_size, num_tokens, d_in).

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
    if not isinstance(answer, dict):
        raise AssertionError(
            f"{check}: expected a dict such as {{'fused output': (2, 5, 4)}}, got "
            f"{type(answer).__name__}."
        )
    args = (d_in, d_out, num_tokens, 0.0, num_heads)
    wrapper = _built_with_seed(0, lambda: MultiHeadAttentionWrapper(*args))
    fused = _built_with_seed(0, lambda: MultiHeadAttention(*args))
    x = torch.zeros(batch_size, num_tokens, d_in)
    tracer = ShapeTracer()
    with torch.no_grad():
        wrapper_out, wrapper_weights = wrapper(x, return_weights=True)
        fused_out, fused_weights = fused(x, return_weights=True, trace=tracer)
    actual = {
        "wrapper output": tuple(wrapper_out.shape),
        "wrapper weights": tuple(wrapper_weights.shape),
        "fused output": tuple(fused_out.shape),
        "fused weights": tuple(fused_weights.shape),
    }
    actual.update(dict(tracer.steps))
    unknown = [key for key in answer if key not in actual]
    if unknown:
        raise AssertionError(
            f"{check}: unknown key(s) {unknown}; use any of {list(actual)}."
        )
    wrong = []
    for key, predicted in answer.items():
        try:
            predicted = tuple(int(n) for n in predicted)
        except (TypeError, ValueError):
            wrong.append(f"  {key}: {predicted!r} is not a shape; write it as a tuple")
            continue
        if predicted != actual[key]:
            wrong.append(
                f"  {key}: you predicted {predicted}, the module gives {actual[key]}; "
                f"{_hint_for(key)}"
            )
    setting = (
        f"d_in={d_in}, d_out={d_out}, num_heads={num_heads} and x of shape "
        f"{(batch_size, num_tokens, d_in)}"
    )
    if wrong:
        raise AssertionError(
            f"{check}: {len(wrong)} of {len(answer)} shapes are wrong for {setting} "
            f"(H = {num_heads}, d = d_out // H = {d_out // num_heads}):\n"
            + "\n".join(wrong)
        )
    count = len(answer)
    print(f"✅ {check}: all {count} predicted shapes are correct for {setting}.")


_PARAM_CONFIGS = [
    (3, 2, 2, False),
    (3, 8, 2, True),
    (3, 8, 4, True),
    (10, 12, 3, False),
    (512, 256, 8, False),
    (768, 768, 12, True),
    (768, 768, 1, True),
]


def check_param_count_fn(fn):
    """Check a formula for the number of parameters of ``MultiHeadAttention``.

    ``fn(d_in, d_out, num_heads, qkv_bias)`` must return the number of trainable
    numbers in ``attn_course.MultiHeadAttention(d_in, d_out, context_length, dropout,
    num_heads, qkv_bias)``: three ``d_in -> d_out`` projections (with a bias each when
    ``qkv_bias``) and ``out_proj``, ``d_out -> d_out`` with a bias. The reference is
    counted from real modules, for 7 settings.

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

    Shapes
    ------
    No tensors: ``fn`` returns a number.

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
    from ..modules import MultiHeadAttention

    check = "check_param_count_fn"
    _require_callable(fn, check, "count")
    for d_in, d_out, H, bias in _PARAM_CONFIGS:
        setting = f"d_in={d_in}, d_out={d_out}, num_heads={H}, qkv_bias={bias}"

        def build(d_in=d_in, d_out=d_out, H=H, bias=bias):
            return MultiHeadAttention(d_in, d_out, 1, 0.0, H, qkv_bias=bias)

        module = _built_with_seed(0, build)
        expected = sum(p.numel() for p in module.parameters())
        got = _call(fn, check, (d_in, d_out, H, bias), setting)
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if isinstance(got, float) and got.is_integer():
            got = int(got)
        if isinstance(got, bool) or not isinstance(got, int):
            raise AssertionError(
                f"{check}: for {setting} your function returned {got!r}; return a "
                "whole number (an int)."
            )
        if got == expected:
            continue
        qkv = 3 * (d_in * d_out + (d_out if bias else 0))
        slips = [
            (expected - d_out, "the bias of out_proj (d_out numbers) is missing"),
            (
                expected - 3 * d_out if bias else None,
                "the three qkv biases (3 * d_out) are missing",
            ),
            (
                None if bias else expected + 3 * d_out,
                "three qkv biases are counted, but qkv_bias=False",
            ),
            (qkv, "out_proj (d_out * d_out + d_out) is missing"),
            (
                4 * d_out * d_out + 4 * d_out,
                "you used 4 * d_out**2 + 4 * d_out, which holds only when d_in = d_out "
                "and qkv_bias=True; each of the three projections has d_in * d_out "
                "weights",
            ),
            (
                expected * H,
                "the count is multiplied by num_heads: the heads SPLIT d_out, they "
                "do not add parameters",
            ),
        ]
        hint = ""
        for value, slip in slips:
            if got == value:
                hint = f" It looks like {slip}."
                break
        raise AssertionError(
            f"{check}: for {setting} your function returned {got:,}, but the module "
            f"has {expected:,} parameters.{hint}"
        )
    print(
        f"✅ {check}: your formula is correct; it matches the parameters of "
        "MultiHeadAttention in all 7 settings, e.g. 2,362,368 for d_in = d_out = 768 "
        "with 12 heads and qkv_bias=True (GPT-2 small)."
    )


def check_head_counts_fn(fn):
    """Check a function that lists the valid head counts for a width ``d_out``.

    ``fn(d_out)`` must return every ``num_heads`` that
    ``attn_course.MultiHeadAttention`` accepts for this ``d_out``, in increasing
    order: the divisors of ``d_out``, each giving heads of width
    ``d_out // num_heads``.

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
        sequence of ints, misses a valid count (1 and ``d_out`` itself are named),
        includes an invalid one, or is not in increasing order.

    Shapes
    ------
    No tensors: ``fn`` returns a list.

    Examples
    --------
    >>> def valid_head_counts(d_out):
    ...     return [h for h in range(1, d_out + 1) if d_out % h == 0]
    >>> check_head_counts_fn(valid_head_counts)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_head_counts_fn: your function is correct for d_out = 8, 12, 7, 1, 768
    and 1024; e.g. d_out = 8 allows num_heads in [1, 2, 4, 8].
    """
    check = "check_head_counts_fn"
    _require_callable(fn, check, "valid_head_counts")
    widths = (8, 12, 7, 1, 768, 1024)
    for d_out in widths:
        expected = [h for h in range(1, d_out + 1) if d_out % h == 0]
        got = _call(fn, check, (d_out,), f"d_out={d_out}")
        try:
            got = [int(h) for h in got]
        except (TypeError, ValueError):
            raise AssertionError(
                f"{check}: for d_out={d_out} your function returned {got!r}; return "
                "a list of ints such as [1, 2, 4, 8]."
            ) from None
        if got == expected:
            continue
        invalid = [h for h in got if h < 1 or d_out % h != 0]
        missing = [h for h in expected if h not in got]
        if invalid:
            h = invalid[0]
            why = (
                f"num_heads={h} does not divide d_out={d_out} "
                f"({d_out} / {h} = {d_out / h:g} is not a whole head width)"
                if h >= 1
                else f"num_heads={h} is not a positive number of heads"
            )
            problem = f"it includes {invalid[:8]}: {why}"
        elif missing:
            problem = f"it misses {missing[:8]}"
            if 1 in missing or d_out in missing:
                problem += (
                    f"; 1 and d_out itself are valid too (one head of width {d_out}, "
                    f"or {d_out} heads of width 1)"
                )
        elif sorted(set(got)) == expected:
            problem = "it has the right counts, but list each once, in increasing order"
        else:
            problem = "it differs"
        raise AssertionError(
            f"{check}: for d_out={d_out} your function returned "
            f"{got[:12]}{' ...' if len(got) > 12 else ''}; {problem}. The right "
            f"answer starts {expected[:8]}."
        )
    print(
        f"✅ {check}: your function is correct for d_out = 8, 12, 7, 1, 768 and "
        "1024; e.g. d_out = 8 allows num_heads in [1, 2, 4, 8]."
    )
