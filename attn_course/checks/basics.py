"""Self-checks for Chapter 1, toy dot-product attention, as tables (see .table)."""

from __future__ import annotations

import math
import re

import torch

from .._validate import kind_of, require_positive
from ..data import hello_shiny_sun, your_journey
from ..walkthrough import as_embeddings, query_attention
from . import _common as common
from ._kit import Case, exercise_check, passed
from .table import Exercise, Slip

_HELLO, _JOURNEY = hello_shiny_sun().embeddings, your_journey().embeddings
_G = torch.Generator().manual_seed(0)  # draws the random cases


@exercise_check("answer")
def check_close(answer, expected, *, name="your answer", atol=1e-4, rtol=1e-4):
    """Check a tensor ``answer`` against ``expected``. Introduced in Chapter 1."""
    try:
        target = torch.as_tensor(expected, dtype=getattr(expected, "dtype", float))
    except (TypeError, ValueError, RuntimeError):
        what = f"a tensor or a number/list of numbers, got {kind_of(expected)}"
        raise TypeError(f"expected must be {what}") from None
    _off(answer, target, name, atol=atol, rtol=rtol)
    what = f"all {answer.numel()} values match (shape {common.fmt_shape(answer)})"
    passed("check_close", f"{name} is correct; {what}.")


@exercise_check("weights")
def check_weights(weights, *, name="your weights"):
    """Check that weights are >= 0 and each row sums to 1. Introduced in Chapter 1."""
    common.expect_weights(common.expect_tensor(weights, name), name)
    rows = weights.numel() // weights.shape[-1]
    what = f"all values are non-negative and each of the {rows} rows sums to 1"
    if weights.dim() == 1:
        what = f"all {weights.numel()} values are non-negative and they sum to 1"
    passed("check_weights", f"{name} are valid; {what}.")


def _close(a, b):
    """Whether two answers match: tensors (1e-4), pairs of them, numbers (1e-3)."""
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(map(_close, a, b))
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        a, b = a.detach().double(), b.detach().double()
        return a.shape == b.shape and torch.allclose(a, b, 1e-4, 1e-4, equal_nan=True)
    numbers = all(isinstance(n, (int, float)) for n in (a, b))
    return numbers and math.isclose(a, b, rel_tol=1e-3)


def _off(got, expected, subject, weights=False, atol=1e-4, rtol=1e-4):
    """Raise what is wrong with an answer no slip gives (not the right values)."""
    if isinstance(expected, tuple):  # (weights, context)
        if not (isinstance(got, (tuple, list)) and len(got) == 2):
            return f"it is a {kind_of(got)}, not a pair: `return weights, context`"
        i = int(_close(got[0], expected[0]))  # the first that is wrong
        _off(got[i], expected[i], f"{subject}: its {('weights', 'context')[i]}", i == 0)
    got = common.expect_tensor(got, subject)
    common.expect_shape(got, expected, subject)
    (common.expect_weights if weights else common.expect_finite)(got, subject)
    common.expect_close(got, expected, subject, atol=atol, rtol=rtol)


def _table(text):
    """Right answer, rule and slips of a text table: shared code, indented; then
    ``name: says`` (right first) and its code, indented; ``    # or`` between two."""
    entry = re.compile(r"^([\w+-]+): (.+\n(?:(?! {4}).+\n)*)((?: {4}.+\n)+)", re.M)
    head = text[1 : entry.search(text).start()]
    (_, rule, right), *rows = entry.findall(text)
    slips = [
        Slip(n, tuple(head + b for b in code.split("    # or\n")), " ".join(s.split()))
        for n, s, code in rows
    ]
    return dict(right=head + right, rule=" ".join(rule.split()), slips=tuple(slips))


_VALUE = {"value": True, "same": _close}
_SOFTMAX_CASES = {  # each slip shows first on the input that says why
    "small scores": [1.0, 2, 3],
    "large scores": [1000.0, 1001, 1002],
    "scores spread over [-20, 80]": [80.0, 3, 47, -20, 68, 21],
    "rows far apart": [[2.0, -1, 0.5, 3, 1], [400, 398, 401, 399.5, 400.5]],
    "random scores": torch.randn(4, 6, generator=_G) * 3,
    "tied scores in a square matrix": [[-1.0, -1, 2], [0, -3, -3], [5, 0.5, -2]],
    "one score far above the rest": [[0.0, 0, 0, 200], [-100, 0, 100, 50]],
}
SOFTMAX = Exercise(
    label="ch01-ex-softmax",
    check="check_softmax",
    function="stable_softmax(x)",
    parameter="fn",
    output="softmax's output",
    cases=tuple(
        Case(f"{text}, shape {tuple(x.shape)}: {common.fmt_values(x)}", (x,))
        for text, x in ((k, torch.as_tensor(v)) for k, v in _SOFTMAX_CASES.items())
    ),
    same=_close,
    otherwise=lambda *args: _off(*args, weights=True),
    **_table("""
right: subtract each row's maximum, exponentiate, divide by each row's sum
    exps = torch.exp(x - x.max(dim=-1, keepdim=True).values)
    return exps / exps.sum(dim=-1, keepdim=True)
naive: it overflows: exp(x) is inf for x > 88.7, and inf / inf is nan; subtract each
row's maximum first
    return torch.exp(x) / torch.exp(x).sum(dim=-1, keepdim=True)
    # or
    return torch.exp(x) / torch.exp(x).sum()
row-min: it subtracts each row's minimum, so exp(max - min) overflows: use the maximum
    exps = torch.exp(x - x.min(dim=-1, keepdim=True).values)
    return exps / exps.sum(dim=-1, keepdim=True)
global-max: it subtracts x.max(), so rows far below it underflow: use each row's max
    return torch.exp(x - x.max()) / torch.exp(x - x.max()).sum(dim=-1, keepdim=True)
    # or
    return torch.exp(x - x.max()) / torch.exp(x - x.max()).sum()
no-keepdim: a max or sum without keepdim=True broadcasts along rows: keep the dim
    exps = torch.exp(x - x.max(dim=-1).values)
    return exps / exps.sum(dim=-1, keepdim=True)
    # or
    exps = torch.exp(x - x.max(dim=-1).values)
    return exps / exps.sum(dim=-1)
whole-sum: it divides by the whole tensor's sum: use exps.sum(dim=-1, keepdim=True)
    exps = torch.exp(x - x.max(dim=-1, keepdim=True).values)
    return exps / exps.sum()
"""),
)
check_softmax = SOFTMAX.make_check()
CONTEXT = Exercise(
    label="ch01-ex-sun",
    check="check_context_vector",
    function="context_vector(inputs, i, t)",
    output="context vector",
    cases=((_HELLO, 2, 1.0), (_JOURNEY, 1, 0.5)),
    describe=lambda inputs, i, t: f"query {i}" + f" at temperature {t:g}" * (t != 1),
    otherwise=_off,
    **_VALUE,
    **_table("""
right: the context vector is softmax(inputs @ inputs[{i}] / {t:g}) @ inputs
    return torch.softmax(inputs @ inputs[i] / t, dim=-1) @ inputs
no-softmax: it mixes the inputs with the raw scores: make them weights with a softmax
    return (inputs @ inputs[i] / t) @ inputs
sum-normalised: it mixes the inputs with the scores over their sum: use a softmax
    return (inputs @ inputs[i] / t) / (inputs @ inputs[i] / t).sum() @ inputs
weights: these are the attention weights; the context vector is weights @ inputs
    return torch.softmax(inputs @ inputs[i] / t, dim=-1)
scaled: it matches *scaled* attention, scores / sqrt(D): use plain dot products here
    return torch.softmax(inputs @ inputs[i] / t / inputs.shape[1] ** 0.5, -1) @ inputs
query: it is the context vector of a query next to query_index={i}: Python counts from 0
    return torch.softmax(inputs @ inputs[i - 1] / t, dim=-1) @ inputs
    # or
    return torch.softmax(inputs @ inputs[i + 1 - len(inputs)] / t, dim=-1) @ inputs
"""),
)


@exercise_check("answer")
def check_context_vector(answer, inputs, query_index, *, temperature=1.0):
    """Check one query's context vector at a temperature. Introduced in Chapter 1."""
    T = len(query_attention(None, inputs, query_index, temperature).scores)
    x = as_embeddings(inputs).detach()
    CONTEXT.judge_value(answer, x, query_index % T, float(temperature))


_SCALED = dict(_VALUE, label="ch01-ex-temperature", check="check_scaled_embeddings")
_SCALED.update(cases=((_JOURNEY, 1, 2.0), (_HELLO, 0, 3)), describe="query {1}".format)
SCALED = Exercise(
    function="weights(inputs, i, factor)",
    output="weights",
    otherwise=lambda *args: _off(*args, weights=True),
    **_SCALED,
    **_table("""
    X = factor * inputs
right: the weights are softmax(X @ X[{i}]) with X = {factor:g} * inputs
    return torch.softmax(X @ X[i], dim=-1)
original: they are the weights of the original embeddings: use X = {factor:g} * inputs
    return torch.softmax(inputs @ inputs[i], dim=-1)
scaled-once: they match scores times {factor:g}, not {factor:g}**2: scale keys too
    return torch.softmax(inputs @ X[i], dim=-1)
context: this is the context vector they give: store the weights, one per token
    return torch.softmax(X @ X[i], dim=-1) @ inputs
    # or
    return torch.softmax(X @ X[i], dim=-1) @ X
query: they are the weights of a query next to query_index={i}
    return torch.softmax(X @ X[i - 1], dim=-1)
    # or
    return torch.softmax(X @ X[i + 1 - len(X)], dim=-1)
"""),
)
TAU = Exercise(
    function="tau_same(inputs, i, factor)",
    output="tau_same",
    otherwise=lambda got, *_: f"{got!r} ({kind_of(got)}) is not that temperature",
    **_SCALED,
    **_table("""
right: scaling embeddings by {factor:g} scales scores by {factor:g}**2; tau divides them
    return 1 / factor**2
one-factor: it multiplies the scores by {factor:g}, but each gets {factor:g} twice:
({factor:g} x_i) . ({factor:g} x_j)
    return 1 / factor
inverse: it divides the scores by {factor:g}**2: they must be multiplied by it
    return factor**2
factor: it divides the scores by {factor:g}: they must be multiplied by {factor:g}**2
    return factor
"""),
)


@exercise_check("weights", "tau")
def check_scaled_embeddings(weights, tau, inputs, query_index, *, factor=2.0):
    """Check weights on scaled embeddings, and ``tau``. Introduced in Chapter 1."""
    x = as_embeddings(inputs, "inputs").detach()
    factor = require_positive(factor, "factor", hint="use e.g. factor=2.0")
    args = (x, query_index % len(query_attention(None, x, query_index).scores), factor)
    SCALED.verdict(weights, args, SCALED.describe(*args))
    one_number = isinstance(tau, torch.Tensor) and tau.numel() == 1
    TAU.judge_value(tau.item() if one_number else tau, *args)


ATTENTION = Exercise(
    label="ch01-ex-attention",
    check="check_attention_fn",
    function="attention(inputs)",
    parameter="fn",
    output="(weights, context)",
    cases=(
        Case('the toy sentence "Hello shiny sun!"', (_HELLO,)),
        Case('the toy sentence "Your journey starts with one step"', (_JOURNEY,)),
        Case("random inputs of shape (5, 4)", (torch.randn(5, 4, generator=_G),)),
    ),
    same=_close,
    otherwise=_off,
    **_table("""
right: weights = softmax(inputs @ inputs.T) by row; return weights, weights @ inputs
    weights = torch.softmax(inputs @ inputs.T, dim=-1)
    return weights, weights @ inputs
scaled: its weights match *scaled* attention, scores / sqrt(D): use plain dot products
    weights = torch.softmax(inputs @ inputs.T / math.sqrt(inputs.shape[-1]), -1)
    return weights, weights @ inputs
dim-0: its weights' columns sum to 1, not its rows: normalise over the keys, dim=-1
    weights = torch.softmax(inputs @ inputs.T, dim=0)
    return weights, weights @ inputs
swapped: it is the pair in the wrong order: return weights first, then the context
    weights = torch.softmax(inputs @ inputs.T, dim=-1)
    return weights @ inputs, weights
"""),
)
check_attention_fn = ATTENTION.make_check()
