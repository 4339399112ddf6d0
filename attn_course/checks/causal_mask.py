"""Chapter 3's self-checks, and Chapter 5's for nn.MultiheadAttention's mask."""

from __future__ import annotations

import torch

from .._validate import kind_of
from ..data import your_journey
from ._common import INVERTED
from .table import Case, Exercise, rows, same_result, what_differs

_TRIL = "    return torch.ones(T, T, dtype=torch.bool).tril()\n"
_FUTURE = "    future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)\n"
_FILL = _FUTURE + '    return torch.zeros(T, T).masked_fill(future, float("-inf"))\n'
_SIZES = tuple((T,) for T in (2, 5, 6, 1))  # T = 1 last: several slips look alike
_MASK = dict(parameter="fn", output="mask", cases=_SIZES, describe="T = {}".format)

CAUSAL_MASK = Exercise(
    label="ch03-ex-causal-mask",
    check="check_causal_mask",
    function="my_causal_mask(T)",
    right=_TRIL,
    rule="True (may attend) on and below the diagonal, False above it",
    **_MASK,
    slips=rows(
        "inverted",
        _TRIL.replace("torch.ones", "~torch.ones"),
        INVERTED,
        "no-diagonal",
        _TRIL.replace("()", "(diagonal=-1)"),
        "the diagonal is False, but a token may attend to itself: keep the diagonal",
        "upper",
        _TRIL.replace("tril", "triu"),
        "this is the upper triangle: query i (row i) may see keys j <= i, use .tril()",
        "float",
        _TRIL.replace(", dtype=torch.bool", ""),
        "the entries are right but are numbers: create it with dtype=torch.bool",
        "additive",
        _FILL,
        "this is an additive float mask (0 / -inf), not the bool mask asked for",
    ),
)
check_causal_mask = CAUSAL_MASK.make_check()


def _as_good_as(got, output):
    """Whether an additive mask acts as ``output``: a number <= -1e4 counts as -inf."""
    floats = [torch.is_tensor(t) and t.is_floating_point() for t in (got, output)]
    if all(floats) and got.shape == output.shape:
        blocked = (output == -torch.inf) & (got <= -1e4)
        got = got.to(output.dtype).masked_fill(blocked, -torch.inf)
    return same_result(got, output, 1e-6)


ADDITIVE_MASK = Exercise(
    label="ch03-ex-additive",
    check="check_additive_mask",
    function="additive_causal_mask(T)",
    right=_FILL,
    rule="0 on and below the diagonal, -inf above it",
    same=_as_good_as,
    **_MASK,
    slips=rows(
        "times-inf",
        '    return torch.triu(torch.ones(T, T), diagonal=1) * float("-inf")\n',
        "it contains NaN: 0 * float('-inf') is nan; use masked_fill or torch.where",
        "inverted",
        _FILL.replace("(future", "(~future"),
        "your mask is inverted: it blocks the past and the token, keeps the future",
        "transposed",
        _FILL.replace("(future", "(future.T"),
        "it is transposed: it blocks the past and keeps the future; block j > i",
        "zero-one",
        "    return torch.triu(torch.ones(T, T), diagonal=1)\n",
        "it holds only 0 and 1; adding 1 to a score blocks nothing: use -inf",
        "diagonal-blocked",
        _FILL.replace("diagonal=1", ""),
        "the diagonal is blocked, but a token may attend to itself: use triu(1)",
    ),
)
check_additive_mask = ADDITIVE_MASK.make_check()


def _pair_wrong(got, expected, subject):
    """What is wrong with a (weights, context) pair that no slip gives."""
    if not (isinstance(got, tuple) and len(got) == 2):
        return f"it returned {kind_of(got)}, not a tuple (weights, context)"
    i = int(same_result(got[0], expected[0], 1e-5))  # 0 where the weights are wrong
    what = what_differs(got[i], expected[i], subject)
    return f"its {'context' if i else 'weights'}: {what}"


_INF = 'float("-inf")'
_MASKING = f"    scores = scores.masked_fill(future, {_INF})\n"
_RENORM = "    weights = weights / weights.sum(-1)\n    return"
_SHIFT = "    scores = scores - scores.max(dim=-1, keepdim=True).values\n"
_SOFTMAX, _EXP = "torch.softmax(scores, dim=-1)", "scores.exp() / scores.exp().sum(-1)"
_RIGHT = (
    "    T = queries.shape[-2]\n"
    "    scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5\n"
    f"{_FUTURE}{_MASKING}    weights = {_SOFTMAX}\n"
    "    return weights, weights @ values\n"
)


def _but(*changes):
    """The right causal attention with the changes ``old, new, old, new, ...``."""
    body = _RIGHT
    for old, new in zip(changes[::2], changes[1::2], strict=True):
        body = body.replace(old, new)
    return body


CAUSAL_ATTENTION = Exercise(
    label="ch03-ex-bug",
    check="check_causal_attention_fn",
    function="causal_attention(queries, keys, values)",
    parameter="fn",
    output="weights and context",
    right=_RIGHT,
    cases=lambda: (
        Case("the journey sentence, q = k = v", (your_journey().embeddings,) * 3),
        Case("a batch (2, 5, 4)", torch.arange(120.0).view(3, 2, 5, 4).sin().unbind()),
    ),
    rule="query i attends only to keys j <= i (scores above the diagonal set to -inf "
    "before the softmax), scores divided by sqrt(d_k), and context = weights @ values",
    tolerance=1e-5,
    otherwise=_pair_wrong,
    slips=rows(
        "inverted",
        (_but("(fut", "(~fut", _INF, "-1e9"), _but("(fut", "(~fut")),
        INVERTED,
        "no-diagonal",
        (_but("diagonal=1", ""), _but("diagonal=1", "", _INF, "-1e9")),
        "your mask blocks the diagonal too, so query 0 has no key: block only j > i",
        "times-inf",
        _but("scores.masked_fill(future, ", "scores + future * ", _INF + ")", _INF),
        "they contain NaN: ones * float('-inf') holds 0 * -inf = nan; use masked_fill",
        "no-mask",
        _but(_MASKING, ""),
        "they put weight on future keys: set the scores above the diagonal to -inf",
        "not-renormalised",
        _but(_MASKING, "", _SOFTMAX, f"{_SOFTMAX}.masked_fill(future, 0.0)"),
        "you zeroed future weights after the softmax: mask the scores before it",
        "no-keepdim",
        (
            _but(_SOFTMAX, _EXP),
            _but(_SOFTMAX, _EXP, _MASKING, _MASKING + _SHIFT),
            _but(_SOFTMAX, "torch.softmax(scores - scores.max(-1).values, dim=-1)"),
            _but(
                _MASKING, "", _SOFTMAX, f"{_SOFTMAX} * ~future", "    return", _RENORM
            ),
        ),
        "a sum or max without keepdim=True lines up with the columns, not the rows",
        "no-scale",
        _but(" / keys.shape[-1] ** 0.5", ""),
        "the scores are not scaled: divide them by sqrt(d_k)",
        "swapped",
        _but("weights, weights @ values", "weights @ values, weights"),
        "it returns (context, weights): return the weights first",
    ),
)
check_causal_attention_fn = CAUSAL_ATTENTION.make_check()

MHA_MASK = Exercise(
    label="ch05-ex-mha-mask",
    check="check_mha_mask_fn",
    function="to_mha_mask(mask)",
    parameter="fn",
    output="mask",
    right="    return ~mask\n",
    cases=lambda: (
        Case("the causal mask for T = 4", (torch.ones(4, 4, dtype=torch.bool).tril(),)),
        Case("an irregular (5, 5) mask", (torch.arange(25.0).view(5, 5).sin() > 0,)),
        Case("a (3, 5) mask", (torch.ones(3, 5, dtype=torch.bool).tril(diagonal=2),)),
    ),
    rule="True exactly where the original mask (True = may attend) is False, since "
    "nn.MultiheadAttention reads True as blocked",
    slips=rows(
        "unchanged",
        "    return mask\n",
        "it is the input unchanged, but nn.MultiheadAttention reads True as blocked",
        "additive",
        '    return torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))\n',
        "this is a float mask (0 / -inf); this exercise asks for a bool mask",
        "numbers",
        "    return (~mask).float()\n",
        "its entries are numbers, which nn.MultiheadAttention adds to the scores",
    ),
)
check_mha_mask_fn = MHA_MASK.make_check()

__all__ = [name for name in dir() if name.startswith("check_")]
