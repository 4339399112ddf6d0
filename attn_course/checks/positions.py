"""Self-checks for Chapter 7, positional information.

Shapes
------
Letters: see attn_course.shapes.
pair : (2,)
slopes : (H,)
"""

from __future__ import annotations

import math

import torch

from .._validate import kind_of, require_int
from ..masks import causal_mask
from ..positions import apply_rope
from ._common import (
    expect_close,
    expect_dict,
    expect_finite,
    expect_shape,
    expect_tensor,
)
from ._kit import Case, Slip, exercise_check, passed, run_cases, seeded

__all__ = ["check_alibi_slopes", "check_changed_rows", "check_rotate_pair_fn"]


# --- rotating one pair --------------------------------------------------------------


def _rotated(pair, angle):
    """``pair`` turned counter-clockwise by ``angle`` radians, written out."""
    x, y = float(pair[0]), float(pair[1])
    c, s = math.cos(angle), math.sin(angle)
    return torch.tensor([x * c - y * s, x * s + y * c], dtype=torch.float64)


def _rotate_pair_cases():
    """``(pair, angle)`` for check_rotate_pair_fn: the first tells every slip apart."""
    generator = torch.Generator().manual_seed(0)
    inputs = [
        ("pair [2.0, 1.0] and angle 0.5", torch.tensor([2.0, 1.0]), 0.5),
        ("pair [1.0, 0.0] and angle pi/2", torch.tensor([1.0, 0.0]), math.pi / 2),
        ("pair [3.0, -4.0] and angle 2.5", torch.tensor([3.0, -4.0]), 2.5),
        ("a random pair and angle -1.2", torch.randn(2, generator=generator), -1.2),
        ("pair [0.5, 0.5] and angle 0.0", torch.tensor([0.5, 0.5]), 0.0),
    ]
    return [Case(text, (pair, angle)) for text, pair, angle in inputs]


def _rotation_slips(pair, angle):
    x, y = float(pair[0]), float(pair[1])
    c, s = math.cos(angle), math.sin(angle)
    return [
        Slip(
            _rotated(pair, -angle),
            "Your pair turned the other way (clockwise): the sines have the wrong "
            "signs. A counter-clockwise turn by the angle is x' = x cos - y sin, "
            "y' = x sin + y cos.",
        ),
        Slip(
            _rotated(pair, math.radians(angle)) if angle else None,
            "Your pair turned by the angle read as DEGREES. The angles of RoPE are "
            "in radians, which torch.cos and torch.sin (and math.cos, math.sin) "
            "take as they are: do not convert them.",
        ),
        Slip(
            torch.tensor([x * s - y * c, x * c + y * s]),
            "You swapped cos and sin: at angle 0 your function does not give the "
            "pair back. x' = x cos - y sin, y' = x sin + y cos.",
        ),
        Slip(
            torch.tensor([x * c, y * c]),
            "You scaled each coordinate by the cosine: a rotation MIXES the two "
            "coordinates, each new one uses both x and y (with the sine).",
        ),
        Slip(
            torch.tensor([x * c, y * s]),
            "Each of your new coordinates uses only one old coordinate: a rotation "
            "mixes them, x' = x cos - y sin and y' = x sin + y cos.",
        ),
        Slip(
            lambda answer: (
                answer.shape == (2,)
                and abs(float(answer.norm()) - math.hypot(x, y)) > 1e-3
                and math.hypot(x, y) > 0
            ),
            f"A rotation keeps the length of the pair, {math.hypot(x, y):.4f}, "
            "but yours has another length: check that the cos and sin terms are "
            "combined as in a 2 x 2 rotation matrix.",
        ),
    ]


@exercise_check("rotate_pair")
def check_rotate_pair_fn(rotate_pair):
    """Check a function that rotates one pair of features by an angle.

    Introduced in Chapter 7. ``rotate_pair(pair, angle)`` must return the pair
    ``(x, y)`` turned counter-clockwise by ``angle`` radians, ``(x cos - y sin,
    x sin + y cos)``, as a new tensor of shape ``(2,)``: the operation RoPE applies
    to every pair of features of a query or key. Checked on 5 pairs and angles.

    Parameters
    ----------
    rotate_pair : callable
        Your function: takes a tensor of shape ``(2,)`` and a float, returns a
        tensor of shape ``(2,)``.

    Returns
    -------
    None
        Prints one line starting with ✅ when the function is right on every case.

    Raises
    ------
    AssertionError
        If the function raises, changes its input, or returns something that is
        not the rotated pair; the usual slips are named: turning the wrong way,
        reading the angle as degrees, swapping cos and sin, not mixing the
        coordinates.
    TypeError
        If ``rotate_pair`` is not a function.

    Shapes
    ------
    Letters: see attn_course.shapes.
    pair : (2,)
    output : (2,)

    Examples
    --------
    >>> def rotate_pair(pair, angle):
    ...     x, y = pair
    ...     c, s = math.cos(angle), math.sin(angle)
    ...     return torch.stack([x * c - y * s, x * s + y * c])
    >>> check_rotate_pair_fn(rotate_pair)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_rotate_pair_fn: rotate_pair turns every pair counter-clockwise by its
    angle (5 cases), and keeps its length.
    """
    check = "check_rotate_pair_fn"

    def verify(case, result):
        pair, angle = case.args
        name = f"{check}: rotate_pair's output"
        result = expect_tensor(result, name, case.where)
        expected = _rotated(pair, angle)
        expect_shape(result, expected, name, case.where)
        expect_finite(result, name, case.where)
        expect_close(
            result,
            expected,
            name,
            case.where,
            atol=1e-5,
            rtol=1e-5,
            slips=_rotation_slips(pair, angle),
        )

    run_cases(
        check,
        rotate_pair,
        _rotate_pair_cases(),
        verify,
        example="rotate_pair",
        who="rotate_pair",
        fix="return a new tensor instead of writing into the pair.",
        names=("pair", ""),
        success="rotate_pair turns every pair counter-clockwise by its angle "
        "(5 cases), and keeps its length.",
    )


# --- ALiBi slopes -------------------------------------------------------------------


def _as_slopes(answer, name):
    """The learner's slopes as a float64 tensor (a list of numbers is accepted)."""
    if isinstance(answer, (list, tuple)):
        try:
            answer = torch.tensor([float(value) for value in answer])
        except (TypeError, ValueError):
            raise AssertionError(
                f"{name}: your list holds something that is not a number; write one "
                "number per head, e.g. [0.5, 0.25, ...] or a torch.Tensor."
            ) from None
    answer = expect_tensor(answer, name)
    return answer.detach().to("cpu", torch.float64)


@exercise_check("slopes")
def check_alibi_slopes(slopes, num_heads):
    """Check the ALiBi slopes of ``num_heads`` heads, computed by hand.

    Introduced in Chapter 7. ``slopes`` must hold one slope per head, in head
    order, as in the ALiBi paper: for a power of two ``H``, the geometric sequence
    that starts at ``2^(-8/H)`` with the same number as its ratio; for another
    ``H``, the slopes of ``n``, the largest power of two below it, followed by
    every other slope for ``2n`` heads, starting with the first, ``H - n`` of them.
    The reference is that rule, written out here.

    Parameters
    ----------
    slopes : torch.Tensor or list of float
        Your slopes, one per head.
    num_heads : int
        The number of heads ``H`` they are for.

    Returns
    -------
    None
        Prints one line starting with ✅ when the slopes are right.

    Raises
    ------
    AssertionError
        If ``slopes`` is not a tensor or list of numbers, has the wrong length, or
        the wrong values; the usual slips are named: starting at 1, the reverse
        order, negative slopes, one slope for every head, a forgotten factor 8,
        and for a head count that is not a power of two: the plain geometric
        formula, sorted slopes, and the wrong slopes appended.
    TypeError, ValueError
        If ``num_heads`` is not a positive int (a mistake in the call).

    Shapes
    ------
    Letters: see attn_course.shapes.
    slopes : (H,)

    Examples
    --------
    >>> check_alibi_slopes([0.25, 0.0625, 0.015625, 0.00390625], num_heads=4)
    ✅ check_alibi_slopes: the 4 slopes are right: each head's slope is the previous \
one times 2^(-8/4).
    """
    check = "check_alibi_slopes"
    H = require_int(num_heads, "num_heads")
    name = f"{check}: your slopes for {H} heads"
    answer = _as_slopes(slopes, name)
    power = 2 ** math.floor(math.log2(H))  # the largest power of two <= H

    def geometric(n):  # the paper's slopes for n heads, n a power of two
        return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]

    expected = torch.tensor(
        geometric(power) + geometric(2 * power)[0::2][: H - power], dtype=torch.float64
    )
    if answer.dim() != 1 or answer.numel() != H:
        raise AssertionError(
            f"{name}: got shape {tuple(answer.shape)}; ALiBi gives every head ONE "
            f"slope, so {H} heads need {H} numbers in a 1-D tensor or a list."
        )
    expect_finite(answer, name)
    start = 2.0 ** (-8.0 / H)
    slips = [
        Slip(
            -expected,
            "Your slopes are negative. The slopes themselves are positive; the "
            "minus sign belongs to the bias, -slope * (i - j).",
        ),
        Slip(
            torch.tensor([start**h for h in range(H)], dtype=torch.float64),
            "Your first slope is 1: the sequence starts one step further. Head 0's "
            "slope is already 2^(-8/H), and every next head multiplies by that "
            "same number.",
        ),
        Slip(
            expected.flip(0) if H > 1 else None,
            "Your slopes are in the reverse order: head 0 has the LARGEST slope "
            "(it looks at the nearest tokens) and they fall from head to head.",
        ),
        Slip(
            torch.full((H,), start, dtype=torch.float64) if H > 1 else None,
            "All your heads have the same slope: each head gets its own, a "
            "geometric sequence, so that some heads look near and others far.",
        ),
        Slip(
            torch.tensor(
                [2.0 ** (-1.0 * h / H) for h in range(1, H + 1)], dtype=torch.float64
            ),
            "Your slopes fall too slowly: the exponent is -8 h / H for head h = 1 "
            ".. H; did you forget the 8?",
        ),
    ]
    if H != power:  # the slips of the rule for other head counts
        extra = torch.tensor(geometric(2 * power), dtype=torch.float64)
        first = expected[:power]
        slips += [
            Slip(
                torch.tensor(geometric(H), dtype=torch.float64),
                f"You used the geometric formula with H = {H}. That formula is for a "
                "power of two; for other head counts the paper's code takes the "
                "slopes of the largest power of two below H and appends some of the "
                "slopes for twice as many heads.",
            ),
            Slip(
                expected.sort(descending=True).values,
                "You sorted the slopes. The paper's code APPENDS the extra slopes "
                "after the first ones, so the sequence is not monotonic; keep that "
                "order, or the heads get other slopes than a model trained with it.",
            ),
            Slip(
                torch.cat([first, extra[: H - power]]),
                "Your appended slopes are the first ones of the sequence for twice "
                "as many heads; take every other one of them, starting with the "
                "first ([0::2]).",
            ),
            Slip(
                torch.cat([first, extra[1::2][: H - power]]),
                "Your appended slopes are every other one of the sequence for twice "
                "as many heads, but starting with its second; start with its first "
                "([0::2]), whose values fall between the first slopes.",
            ),
        ]
    expect_close(answer, expected, name, atol=1e-6, rtol=1e-4, slips=slips)
    if H == power:
        how = f"each head's slope is the previous one times 2^(-8/{H})"
    else:
        how = (
            f"the {power} slopes of {power} heads, then {H - power} of the slopes "
            f"for {2 * power} heads"
        )
    passed(check, f"the {H} slopes are right: {how}.")


# --- which rows change when two tokens swap ------------------------------------------

_MODELS = ("no positions", "causal mask", "rope")
_WHY = {
    "no positions": (
        "Without positions and without a mask, the output of row t depends only on "
        "the token at t and on the SET of all tokens (keys and values are summed "
        "over). Which rows hold another token after the swap, and did the set "
        "change?"
    ),
    "causal mask": (
        "With a causal mask and no positions, row t depends on the token at t and "
        "on the SET of tokens at positions 0 .. t. Ask for each row: did its own "
        "token change, or the set of tokens it may see?"
    ),
    "rope": (
        "With RoPE and no mask, every score depends on the query, the key and "
        "their DISTANCE. Which rows have a query or a key whose position changed?"
    ),
}


def _attention_rows(x, *, causal, rope):
    """The output rows of one head on ``x`` (T, D), with fixed seeded weights."""
    T, D = x.shape
    with seeded(7):
        W_query, W_key, W_value = (
            torch.randn(D, D, dtype=torch.float64) for _ in "qkv"
        )
    queries, keys, values = x @ W_query, x @ W_key, x @ W_value  # (T, D) each
    if rope:
        queries, keys = apply_rope(queries), apply_rope(keys)
    scores = queries @ keys.T / D**0.5  # (T, T)
    if causal:
        scores = scores.masked_fill(~causal_mask(T), float("-inf"))
    return torch.softmax(scores, dim=-1) @ values  # (T, D)


def changed_rows(num_tokens, swap, *, causal, rope, seed=0):
    """Positions whose output row changes when the tokens at ``swap`` trade places.

    One attention head with random weights, on random token vectors (no position
    added to them), with or without a causal mask and RoPE.
    Introduced in Chapter 7.

    Examples
    --------
    >>> sorted(changed_rows(4, (0, 3), causal=False, rope=False))
    [0, 3]
    """
    with seeded(seed):
        x = torch.randn(num_tokens, 8, dtype=torch.float64)  # (T, D)
    order = list(range(num_tokens))
    a, b = swap
    order[a], order[b] = order[b], order[a]
    before = _attention_rows(x, causal=causal, rope=rope)
    after = _attention_rows(x[order], causal=causal, rope=rope)
    same = torch.isclose(before, after, atol=1e-9, rtol=1e-9).all(dim=-1)  # (T,)
    return {int(t) for t in (~same).nonzero().flatten()}


def _as_rows(value, key, num_tokens, check):
    """A prediction as a set of ints, or an AssertionError that says why not."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise AssertionError(
            f"{check}: {key!r} must be a set of row numbers such as {{0, 2}} (or "
            f"set() for none), got {kind_of(value)} {value!r}."
        )
    rows = list(value)
    if not all(isinstance(r, int) and not isinstance(r, bool) for r in rows):
        raise AssertionError(
            f"{check}: {key!r} must hold row numbers, ints from 0 to "
            f"{num_tokens - 1}, got {sorted(rows, key=str)!r}."
        )
    outside = sorted(r for r in rows if not 0 <= r < num_tokens)
    if outside:
        raise AssertionError(
            f"{check}: {key!r} holds {outside}, but the rows are 0 to "
            f"{num_tokens - 1}, one per token."
        )
    return set(rows)


@exercise_check("answer")
def check_changed_rows(answer, *, num_tokens=5, swap=(1, 3)):
    """Check predictions of which output rows change when two tokens swap.

    Introduced in Chapter 7. ``answer`` maps each of ``"no positions"``,
    ``"causal mask"`` and ``"rope"`` to the set of rows (query positions) whose
    output changes when the tokens at the two positions of ``swap`` trade places
    in a sequence of ``num_tokens`` tokens. The check runs one attention head with
    random weights on random token vectors: without positions or mask, with a
    causal mask, and with RoPE and no mask; and compares the rows that change.
    A wrong prediction is answered with the question that leads to the right one.

    Parameters
    ----------
    answer : dict
        ``{"no positions": {...}, "causal mask": {...}, "rope": {...}}``, each a
        set (or list) of ints.
    num_tokens : int, default 5
        Tokens in the sequence.
    swap : tuple of two ints, default (1, 3)
        The positions whose tokens trade places.

    Returns
    -------
    None
        Prints one line starting with ✅ when every prediction is right.

    Raises
    ------
    AssertionError
        If ``answer`` is not a dict with exactly the three keys, a value is not a
        set of row numbers, or a prediction is wrong (every wrong one is named).

    Examples
    --------
    >>> check_changed_rows(
    ...     {"no positions": {0, 2}, "causal mask": {0, 1, 2}, "rope": {0, 1, 2}},
    ...     num_tokens=3, swap=(0, 2),
    ... )  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_changed_rows: all 3 predictions are right for 3 tokens with the
    tokens at 0 and 2 swapped.
    """
    check = "check_changed_rows"
    T = require_int(num_tokens, "num_tokens", minimum=2)
    a, b = (require_int(p, "swap", minimum=0) for p in swap)
    answer = expect_dict(answer, check, "{'no positions': {1, 3}, ...}")
    unknown = sorted(set(answer) - set(_MODELS), key=str)
    missing = [key for key in _MODELS if key not in answer]
    if unknown or missing:
        raise AssertionError(
            f"{check}: your dict must have exactly the keys {list(_MODELS)}; "
            + (f"unknown: {unknown}. " if unknown else "")
            + (f"missing: {missing}." if missing else "")
        )
    wrong = []
    for key in _MODELS:
        predicted = _as_rows(answer[key], key, T, check)
        right = changed_rows(T, (a, b), causal=key == "causal mask", rope=key == "rope")
        if predicted != right:
            wrong.append(f"  {key!r}: {sorted(predicted)} is not right. {_WHY[key]}")
    if wrong:
        raise AssertionError(
            f"{check}: {len(wrong)} of 3 predictions are wrong for {T} tokens with "
            f"the tokens at {a} and {b} swapped:\n" + "\n".join(wrong)
        )
    passed(
        check,
        f"all 3 predictions are right for {T} tokens with the tokens at {a} and {b} "
        "swapped.",
    )
