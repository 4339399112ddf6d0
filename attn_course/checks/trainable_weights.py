"""Self-checks for Chapter 2, self-attention with trainable weights, as tables."""

import math

import torch

from .._validate import require_index, require_int, require_positive, require_tensor
from ..data import your_journey
from ..modules import SelfAttentionV2
from . import _common as common
from ._kit import Case, exercise_check, explainer, passed, seeded
from .table import Exercise, Slip

# fmt: off
__all__ = ["check_projected_context", "check_scaled_attention_fn",
           "check_score_variance", "check_v1_from_v2"]

def _but(body, *changes):
    """The code of a slip: the right ``body`` with each ``(old, new)`` change made."""
    for old, new in changes:
        body = body.replace(old, new)
    return body

def _parts(answer):
    """A module's weights or a pair's two tensors, by name ({} for anything else)."""
    if isinstance(answer, torch.nn.Module):
        return answer.state_dict()
    pair = isinstance(answer, (tuple, list)) and len(answer) == 2
    return dict(zip(("weights", "context"), answer, strict=True)) if pair else {}

def _same(got, right):
    """Equal tensors (within 1e-4, whatever the dtype), or pairs or modules of such."""
    if isinstance(got, torch.Tensor) and isinstance(right, torch.Tensor):
        return got.shape == right.shape and bool(torch.allclose(
            got.detach().double(), right.double(), rtol=1e-4, atol=1e-4))
    mine, theirs = _parts(got), _parts(right)
    return bool(theirs) and mine.keys() == theirs.keys() and all(
        map(_same, mine.values(), theirs.values()))

def _off(got, right, subject):
    """What is wrong with an answer that no slip gives, without the right values."""
    mine, theirs = _parts(got), _parts(right) or {"": right}
    if mine.keys() != theirs.keys() and len(theirs) > 1:
        size = f" of {len(got)}" if isinstance(got, (tuple, list)) else ""
        return f"it is a {type(got).__name__}{size}, not ({', '.join(theirs)})"
    key = next(k for k in theirs if not _same(mine.get(k, got), theirs[k]))
    part, name = mine.get(key, got), f"{subject}, its {key}" if key else subject
    common.expect_shape(common.expect_tensor(part, name), theirs[key], name)
    if key == "weights":
        common.expect_weights(part, name)
    return f"its {key or 'values'} {common.fmt_values(part)} are off"

_GIVEN = {"W_q": [[1, 0], [0, 1], [1, 1]], "W_k": [[0, 1], [1, 0], [0, 0]],
          "W_v": [[1, 0], [0, 0], [0, 1]]}  # ch02-ex-journey's matrices, (d_in, d_out)
_CONTEXT = """\
    query = inputs[query_index] @ W_query
    keys, values = inputs @ W_key, inputs @ W_value
    return torch.softmax(keys @ query / math.sqrt(keys.shape[-1]), dim=0) @ values"""
PROJECTED = Exercise(
    label="ch02-ex-journey", check="check_projected_context", value=True,
    function="projected_context(inputs, W_query, W_key, W_value, query_index)",
    output="context vector", right=_CONTEXT, same=_same, otherwise=_off,
    cases=lambda: [(your_journey().embeddings, *(torch.tensor(rows).float() for rows in
                                                  _GIVEN.values()), 1)],
    describe=lambda inputs, W_query, W_key, W_value, i: f"query {i}",
    facts=lambda inputs, W_query, W_key, W_value, i: {"d_k": W_key.shape[1]},
    rule="the context vector of query {query_index} mixes the values, inputs @ W_value,"
    " with the weights softmax(q_{query_index} . k_j / sqrt({d_k})) over the keys j",
    slips=(
        Slip("no-scale", _but(_CONTEXT, (" / math.sqrt(keys.shape[-1])", "")),
             "it matches no scaling: divide the scores by sqrt(d_k) = sqrt({d_k})"),
        Slip("by-d_k", _but(_CONTEXT, ("math.sqrt(keys.shape[-1])", "keys.shape[-1]")),
             "it matches scores divided by d_k = {d_k} instead of by sqrt(d_k)"),
        Slip("mixes-others", tuple(_but(_CONTEXT, ("@ values", f"@ {x}")) for x in (
            "inputs", "keys")), "it mixes the inputs or the keys, not the values"),
        Slip("another-query", tuple(_but(_CONTEXT, ("x]", f"x {d} 1]")) for d in "+-"),
             "it is another token's context; Python counts from 0, X[0] first"),
    ),
)

@exercise_check("answer", "W_query", "W_key", "W_value")
def check_projected_context(answer, inputs, W_query, W_key, W_value, query_index, *,
                            exercise=None):
    """Check one query's context vector from matrices (d_in, d_out), scores / sqrt(d_k);
    ``exercise="ch02-ex-journey"`` pins that exercise's. Introduced in Chapter 2."""
    if exercise not in (None, PROJECTED.label):
        raise ValueError(f"exercise must be {PROJECTED.label!r} or None: {exercise!r}")
    args = [inputs, W_query, W_key, W_value]
    for i, (role, rows) in enumerate(_GIVEN.items() if exercise else (), start=1):
        mine, args[i] = args[i], torch.tensor(rows).float()  # the exercise's matrix
        if not _same(mine, args[i]):
            raise AssertionError(f"check_projected_context: your {role} is not the "
                                 f"exercise's, {rows}: copy it, then run both cells.")
    for name, tensor in zip(PROJECTED.parameters, args, strict=False):
        require_tensor(tensor, name)
    index = require_index(query_index, inputs.shape[0], "query_index")
    PROJECTED.judge_value(answer, *(t.detach() for t in args), index)

_V1 = """\
    from attn_course import SelfAttentionV1
    sa_v1 = SelfAttentionV1(sa_v2.d_in, sa_v2.d_out)
    with torch.no_grad():
        sa_v1.W_query.copy_(sa_v2.W_query.weight.T)
        sa_v1.W_key.copy_(sa_v2.W_key.weight.T)
        sa_v1.W_value.copy_(sa_v2.W_value.weight.T)
    return sa_v1"""

def _v2s():
    for seed, sizes in enumerate([(3, 2), (4, 4), (5, 3)]):  # one of them square
        with seeded(seed):
            yield Case(f"SelfAttentionV2{sizes}", (SelfAttentionV2(*sizes),))

V1_FROM_V2 = Exercise(
    label="ch02-ex-v1-from-v2", check="check_v1_from_v2", parameter="fn",
    function="v1_from_v2(sa_v2)", output="SelfAttentionV1", right=_V1,
    cases=lambda: tuple(_v2s()), same=_same, otherwise=_off,
    rule="copy each nn.Linear weight of sa_v2, transposed (weight.T), into the "
    "parameter of that name of a new SelfAttentionV1, inside `with torch.no_grad():`",
    explain=explainer((("must match the size", " nn.Linear's weight is (d_out, d_in): "
        "copy weight.T."), ("leaf Variable", " Copy inside `with torch.no_grad():`."))),
    slips=(
        Slip("no-transpose", _but(_V1, (".weight.T)", ".weight)")),
             "it holds nn.Linear's weights as they are, (d_out, d_in)"),
        Slip("other-source", _but(_V1, ("2.W_key", "2.W_query")), "a parameter holds"
             " another nn.Linear's weight: copy each into the parameter of its name"),
        Slip("no-no_grad", _but(_V1, ("    with torch.no_grad():\n", ""), ("        "
             "sa_v1", "    sa_v1")), "it copies into parameters outside no_grad()"),
        Slip("assigns-tensors", _but(_V1, (".copy_(", " = (")),
             "it assigns tensors to the parameters instead of copying into them"),
        Slip("returns-v2", "    return sa_v2\n", "this is the SelfAttentionV2 itself"),
    ),
)
check_v1_from_v2 = V1_FROM_V2.make_check()

def _variance_slip(name, variance, says):
    return Slip(name, tuple(f"    v = {variance}\n    return v, 1 / math.sqrt({v})\n"
                            for v in ("v", "d_k * std**4")), says)

def _near(got, right):
    if isinstance(right, tuple):  # two numbers, or pairs of numbers, within 0.1 %
        return isinstance(got, tuple) and all(map(_near, got, right))
    return isinstance(got, (int, float)) and math.isclose(got, right, rel_tol=1e-3)

SCORE_VARIANCE = Exercise(
    label="ch02-ex-variance", check="check_score_variance", value=True,
    function="score_variance(d_k, std)", output="(predicted_variance, scale)",
    right="    v = d_k * std**2 * std**2\n    return v, 1 / math.sqrt(v)\n", same=_near,
    otherwise=lambda got, right, subject: "your " + (
        "scale" if _near(got[0], right[0]) else "predicted_variance") + " is off",
    cases=((64, 0.5), (16, 2.0)), describe=lambda d_k, std: f"d_k={d_k}, std={std:g}",
    facts=lambda d_k, std: {"var": std**2, "inverse": d_k**-0.5},
    rule="q . k sums d_k = {d_k} independent products q_m * k_m, of variance std**2 * "
    "std**2 each, and their variances add up; a factor c multiplies a variance by c**2",
    slips=(
        _variance_slip("unit-entries", "d_k", "your predicted_variance, d_k = {d_k},"
                       " is for entries of variance 1, not {var:g}"),
        _variance_slip("one-factor", "d_k * std**2", "your predicted_variance has"
                       " one factor std**2; each q_m * k_m has two"),
        _variance_slip("standard-deviation", "math.sqrt(d_k) * std**2", "your "
                       "predicted_variance is the standard deviation of q . k"),
        Slip("over-sqrt-d_k", "    return d_k * std**4, 1 / math.sqrt(d_k)\n",
             "your scale 1 / sqrt(d_k) = {inverse:.4g} suits entries of variance 1"),
        Slip("over-variance", "    return d_k * std**4, 1 / (d_k * std**4)\n",
             "your scale divides by the variance; divide by its square root"),
        Slip("times-std", "    return d_k * std**4, math.sqrt(d_k * std**4)\n",
             "your scale multiplies by the standard deviation; divide by it"),
        Slip("one-std", "    return d_k * std**4, 1 / (std * math.sqrt(d_k))\n",
             "your scale 1 / (std * sqrt(d_k)) has one factor std; the deviation of "
             "q . k is std**2 * sqrt(d_k)"),
    ),
)

@exercise_check("predicted_variance", "scale")
def check_score_variance(predicted_variance, scale, *, d_k, std):
    """Check the predicted variance of q . k (``d_k`` entries of mean 0 and deviation
    ``std``) and the scale that makes it 1; measure both. Introduced in Chapter 2."""
    args = require_int(d_k, "d_k"), require_positive(std, "std", hint="use e.g. 0.5")
    answer = tuple(x.item() if isinstance(x, torch.Tensor) and x.numel() == 1 else x
                   for x in (predicted_variance, scale))
    SCORE_VARIANCE.verdict(answer, args, SCORE_VARIANCE.describe(*args))
    (d_k, std), g, scale = args, torch.Generator().manual_seed(0), answer[1]
    q, k = (torch.randn(20_000, d_k, generator=g, dtype=torch.float64) for _ in "qk")
    dots = (q * std * k * std).sum(dim=-1)  # (N, d_k) -> (N,)
    passed("check_score_variance", f"your prediction is correct; q . k has variance "
           f"d_k * std**4 = {d_k * std**4:g} (measured on 20000 random pairs: "
           f"{dots.var():.3g}), and scale = {scale:.4g} makes it 1 (measured: "
           f"{(dots * scale).var():.3f}).")

_SCALED = """\
    scores = queries @ keys.transpose(-2, -1)
    weights = torch.softmax(scores / math.sqrt(keys.shape[-1]), dim=-1)
    return weights, weights @ values"""
_SCORES, _AFTER = "scores / math.sqrt(keys.shape[-1]), dim=-1)", "scores, dim=-1)"
SCALED = Exercise(
    label="ch02-ex-scaled", check="check_scaled_attention_fn", parameter="fn",
    function="scaled_attention(queries, keys, values)", output="(weights, context)",
    right=_SCALED, same=_same, otherwise=_off,
    cases=lambda: (
        Case('"Your journey starts with one step" projected to d_k = 2',
             common.journey_projections(lambda: SelfAttentionV2(3, 2), seed=789)),
        Case("a batch of 2: queries (4, 8), keys (5, 8) and values (5, 3) each", tuple(
            torch.randn(2, *shape, generator=torch.Generator().manual_seed(i)) * 2
            for i, shape in enumerate([(4, 8), (5, 8), (5, 3)]))),
        Case("2 x 3 heads: queries (2, 4), keys and values (3, 4) each", tuple(
            torch.randn(2, 3, *shape, generator=torch.Generator().manual_seed(5 + i))
            for i, shape in enumerate([(2, 4), (3, 4), (3, 4)]))),
    ),
    facts=lambda q, keys, values: {"d_k": keys.shape[-1], "d_v": values.shape[-1]},
    rule="weights = softmax(queries @ keys.transpose(-2, -1) / sqrt(d_k)) over the "
    "keys, d_k = keys.shape[-1], and context = weights @ values",
    slips=(
        Slip("no-scale", _but(_SCALED, (_SCORES, _AFTER)), "its weights match no "
             "scaling: divide the scores by sqrt(d_k) = sqrt({d_k})"),
        Slip("by-d_k", _but(_SCALED, ("math.sqrt(keys.shape[-1])", "keys.shape[-1]")),
             "its weights match scores divided by d_k = {d_k}; divide by sqrt(d_k)"),
        Slip("by-sqrt-d_v", _but(_SCALED, ("keys.shape[-1])", "values.shape[-1])")),
             "its weights match scores / sqrt(d_v) = sqrt({d_v}), the values' width"),
        Slip("after-softmax", _but(_SCALED, (_SCORES, _AFTER + " / math.sqrt(keys."
             "shape[-1])")), "it scales after the softmax: its rows do not sum to 1"),
        Slip("wrong-order", _but(_SCALED, ("weights, weights @ values", "weights @ "
             "values, weights")), "it returns (context, weights): weights come first"),
        Slip("no-transpose", _but(_SCALED, (".transpose(-2, -1)", "")),
             "it forgets to transpose the keys"),
    ),
)
check_scaled_attention_fn = SCALED.make_check()
