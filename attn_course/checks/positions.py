"""Self-checks for Chapter 7: rotating a pair of features, the rows that a swap of
two tokens changes, and the ALiBi slopes."""

from __future__ import annotations

import math
import re

import torch

from .._validate import require_int
from ._kit import Case, exercise_check
from .encoder_decoder import judge_entries
from .table import Exercise, Slip

__all__ = ["check_alibi_slopes", "check_changed_rows", "check_rotate_pair_fn"]


_ROTATE = """\
    x, y = pair
    c, s = math.cos(angle), math.sin(angle)
    return torch.stack([{}])
"""
_RIGHT = _ROTATE.format("x * c - y * s, x * s + y * c")
_PAIRS = ((2.0, 1.0, 0.5), (1.0, 0.0, math.pi / 2), (3.0, -4.0, 2.5), (-0.7, 1.3, -1.2))

ROTATE = Exercise(
    label="ch07-ex-rotate", check="check_rotate_pair_fn",
    function="rotate_pair(pair, angle)", output="output", right=_RIGHT,
    cases=tuple(Case(f"pair ({x}, {y}) and angle {a:.4g}", (torch.tensor([x, y]), a))
                for x, y, a in (*_PAIRS, (0.5, 0.5, 0.0))),
    rule="turn the pair counter-clockwise by the angle in radians: (x cos - y sin, "
    "x sin + y cos)",
    tolerance=1e-5,
    fix="return a new tensor instead of writing into the pair.",
    slips=(
        Slip("clockwise", _ROTATE.format("x * c + y * s, -x * s + y * c"),
             "your pair turned the other way (clockwise): the sines have wrong signs"),
        Slip("degrees", _RIGHT.replace("(angle)", "(math.radians(angle))"),
             "it turned by the angle read as degrees; cos and sin take radians as is"),
        Slip("cos-sin-swapped", _ROTATE.format("x * s - y * c, x * c + y * s"),
             "you swapped cos and sin: at angle 0 it does not give the pair back"),
        Slip("no-mixing", (_ROTATE.format("x * c, y * c"),
                           _ROTATE.format("x * c, y * s")),
             "each new coordinate uses one old one; a rotation mixes x and y"),
    ),
)  # fmt: skip
check_rotate_pair_fn = ROTATE.make_check()

# The right rows; the comment on each line is the rule a wrong prediction is told.
_ROWS = """\
    a, b = sorted(swap)
    rows = {
        "no positions": {a, b},  # row t sees its token and the SET of all tokens
        "causal mask": set(range(a, b + 1)),  # its token and the SET of tokens 0 .. t
        "rope": set(range(num_tokens)),  # each score depends on the key's DISTANCE
    }
"""
_WHY = dict(re.findall(r'"([\w ]+)": .*  # (.*)', _ROWS))


def _rows(change=""):
    """The learner's code: the right rows, with the line ``change`` run."""
    return f"{_ROWS}    {change}\n    return rows[model]\n"


def _rows_wrong(got, expected, subject):
    if not isinstance(got, (set, frozenset)):
        return "it must be a set of row numbers such as {0, 2}, or set()"
    missed = "it misses rows that change" * bool(expected - got)
    extra = "it holds rows that do not change" * bool(got - expected)
    return " and ".join(filter(None, (missed, extra)))


ROWS = Exercise(
    label="ch07-ex-swap", check="check_changed_rows", value=True,
    function="changed(model, num_tokens, swap)", output="prediction", right=_rows(),
    cases=tuple((model, 5, (1, 3)) for model in _WHY),
    describe=lambda model, num_tokens, swap: repr(model),
    facts=lambda model, T, swap: {"a": min(swap), "b": max(swap), "why": _WHY[model]},
    rule="{why}", same=lambda got, out: got == out, otherwise=_rows_wrong,
    slips=(
        Slip("none-without-positions", _rows('rows["no positions"] = set()'),
             "rows {a} and {b} now hold each other's token: their outputs trade too"),
        Slip("all-without-positions",
             _rows('rows["no positions"] = set(range(num_tokens))'),
             "the other rows see the same tokens, in an order they cannot tell"),
        Slip("causal-only-the-two", _rows('rows["causal mask"] = {a, b}'),
             "the rows between {a} and {b} now see the token from {b}, not from {a}"),
        Slip("causal-to-the-end",
             _rows('rows["causal mask"] = set(range(a, num_tokens))'),
             "the rows after {b} see the same tokens, in an order they cannot tell"),
        Slip("rope-like-no-positions", (_rows('rows["rope"] = {a, b}'),
                                        _rows('rows["rope"] = set(range(a, b + 1))')),
             "every query sees the keys at {a} and {b} at new distances"),
    ),
)  # fmt: skip


@exercise_check("answer")
def check_changed_rows(answer, *, num_tokens=5, swap=(1, 3)):
    """Check predictions of the output rows of one attention head that change when
    the tokens at the two positions ``swap`` trade places: without positions, with a
    causal mask, and with RoPE. Introduced in Chapter 7."""
    T = require_int(num_tokens, "num_tokens", minimum=2)
    rows = sorted(require_int(p, "swap", minimum=0) for p in swap)
    if len(rows) != 2 or rows[0] == rows[1] or rows[1] >= T:
        raise ValueError(f"swap must be two different positions below {T}: {swap!r}")
    setting = f"{T} tokens with the tokens at {rows[0]} and {rows[1]} swapped"
    judge_entries(ROWS, answer, (T, tuple(rows)), setting)


_ALIBI = """\
    n = 2 ** math.floor(math.log2(num_heads))  # the largest power of two <= H
    first = [2 ** (-8 * h / n) for h in range(1, n + 1)]
    twice = [2 ** (-8 * h / (2 * n)) for h in range(1, 2 * n + 1)]
    return torch.tensor({}, dtype=torch.float64)
"""
_SLOPES = "first + twice[0::2][: num_heads - n]"
_POWERS = "[2 ** ({} * h / num_heads) for h in range({})]"


def _alibi_rule(H):
    n = 2 ** math.floor(math.log2(H))  # the largest power of two <= H
    if n == H:
        return f"each head's slope is the previous one times 2^(-8/{H})"
    return f"the {n} slopes of {n} heads, then {H - n} of those for {2 * n} heads"


def _slopes_wrong(got, expected, subject):
    h = int((~torch.isclose(got, expected, 1e-6, 1e-6)).nonzero()[0])
    return f"head {h}'s slope is too {'high' if got[h] > expected[h] else 'low'}"


ALIBI = Exercise(
    label="ch07-ex-slopes", check="check_alibi_slopes", value=True,
    function="slopes(num_heads)", output="slopes", right=_ALIBI.format(_SLOPES),
    cases=((12,), (6,), (8,), (1,)), describe=lambda num_heads: f"{num_heads} heads",
    facts=lambda num_heads: {"how": _alibi_rule(num_heads)}, rule="{how}",
    tolerance=1e-6, otherwise=_slopes_wrong,
    slips=(
        Slip("negative", _ALIBI.format(f"[-s for s in {_SLOPES}]"),
             "your slopes are negative; the bias -slope * (i - j) has the minus"),
        Slip("starts-at-one", _ALIBI.format(_POWERS.format(-8, "num_heads")),
             "your first slope is 1; head 0's slope is already 2^(-8/H)"),
        Slip("reversed", _ALIBI.format(f"({_SLOPES})[::-1]"),
             "your slopes are reversed: head 0 has the largest, looking nearest"),
        Slip("no-eight", _ALIBI.format(_POWERS.format(-1, "1, num_heads + 1")),
             "your slopes fall too slowly: the exponent is -8 h / H"),
        Slip("geometric", _ALIBI.format(_POWERS.format(-8, "1, num_heads + 1")),
             "the geometric formula is for a power of two; for H = {num_heads}, the "
             "paper's code appends slopes for twice as many heads"),
        Slip("sorted", _ALIBI.format(f"sorted({_SLOPES}, reverse=True)"),
             "you sorted them; the paper's code appends the extra slopes after the "
             "first, and trained models use that order"),
        Slip("first-ones", _ALIBI.format("first + twice[: num_heads - n]"),
             "take every other slope for twice as many heads ([0::2])"),
        Slip("odd-ones", _ALIBI.format("first + twice[1::2][: num_heads - n]"),
             "take every other slope for twice as many heads, from the first ([0::2])"),
    ),
)  # fmt: skip


@exercise_check("slopes")
def check_alibi_slopes(slopes, num_heads):
    """Check the ALiBi slopes of ``num_heads`` heads computed by hand, a tensor or
    a list, head 0 first. Introduced in Chapter 7."""
    H = require_int(num_heads, "num_heads")
    name = f"check_alibi_slopes: your slopes for {H} heads"
    try:
        slopes = torch.as_tensor(slopes).detach().cpu().double()
    except (TypeError, ValueError, RuntimeError):
        raise AssertionError(f"{name}: give a list or tensor of numbers.") from None
    if tuple(slopes.shape) != (H,):
        raise AssertionError(
            f"{name}: got shape {tuple(slopes.shape)}; ALiBi gives every head ONE "
            f"slope, so {H} heads need {H} numbers in a 1-D tensor or a list."
        )
    ALIBI.judge_value(slopes, H)
