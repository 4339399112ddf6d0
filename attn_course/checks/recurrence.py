"""Self-checks for Chapter 12: one step of linear attention's state, one step of the
delta rule, and the numbers a hybrid model keeps for a context."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ._kit import Case
from .table import Exercise, count_is, count_wrong, slips

__all__ = ["check_delta_step_fn", "check_linear_step_fn", "check_numbers_kept_fn"]


def _step_cases(with_beta):
    """``(state, k, v[, beta])``: the first case tells the slips apart (d_v = 3 and
    d_k = 4, a state that already holds something, beta between 0 and 1); then an
    empty state, beta = 1, and one feature each."""
    g = torch.Generator().manual_seed(12)
    sizes = [(3, 4), (2, 2), (5, 3), (1, 1)]
    states = [torch.randn(d_v, d_k, generator=g) for d_v, d_k in sizes]
    states[1] = torch.zeros(2, 2)
    keys = [F.normalize(torch.randn(d_k, generator=g), dim=0) for _, d_k in sizes]
    values = [torch.randn(d_v, generator=g) for d_v, _ in sizes]
    betas = [0.5, 0.8, 1.0, 0.25]
    texts = [
        "a state (d_v, d_k) = (3, 4) holding earlier pairs",
        "an empty state (2, 2)",
        "a state (5, 3)",
        "a state (1, 1)",
    ]
    if with_beta:
        texts = [f"{t}, beta = {b}" for t, b in zip(texts, betas, strict=True)]
    return [
        Case(text, (s, k, v, b) if with_beta else (s, k, v))
        for text, s, k, v, b in zip(texts, states, keys, values, betas, strict=True)
    ]


_LINEAR = "    return state + torch.outer(v, k)  # (d_v, d_k): v k^T added\n"

_LINEAR_SLIPS = """
transposed: state + torch.outer(v, k) -> state.T + torch.outer(k, v) -- the state
    comes back transposed, (d_k, d_v): it is (d_v, d_k), and the new term is v kᵀ,
    torch.outer(v, k)
overwritten: state + torch.outer(v, k) -> torch.outer(v, k) -- the state forgets
    everything before: the new pair is added to it, not put in its place
not-outer: torch.outer(v, k) -> v[:, None] * k.sum() -- each row gets v times the
    sum of k's features: the outer product keeps one column per key feature,
    torch.outer(v, k)
"""

LINEAR_STEP = Exercise(
    label="ch12-ex-linear-step",
    check="check_linear_step_fn",
    function="linear_step(state, k, v)",
    output="state",
    right=_LINEAR,
    cases=lambda: _step_cases(with_beta=False),
    rule="the new state is the old one plus the outer product v kᵀ, shape (d_v, d_k)",
    tolerance=1e-6,  # float32: a learner may write v[:, None] * k[None, :]
    slips=slips(_LINEAR, _LINEAR_SLIPS),
)
check_linear_step_fn = LINEAR_STEP.make_check()

_DELTA = (
    "    error = v - state @ k  # (d_v,): what the state gets wrong about k\n"
    "    return state + beta * torch.outer(error, k)  # (d_v, d_k)\n"
)

_DELTA_SLIPS = """
sum-not-correction: v - state @ k -> v -- this adds beta v kᵀ, the linear rule: the
    delta rule writes the correction v - S k, what the state gets wrong about k
no-beta: beta * torch.outer -> torch.outer -- beta is left out: it says how much of
    the correction is written
sign: v - state @ k -> state @ k - v -- the correction has the wrong sign: it is
    v - S k, so that S k moves towards v
beta-twice: beta * torch.outer(error, k) -> beta * torch.outer(error, k) * beta --
    beta multiplies the correction once
"""

DELTA_STEP = Exercise(
    label="ch12-ex-delta-step",
    check="check_delta_step_fn",
    function="delta_step(state, k, v, beta)",
    output="state",
    right=_DELTA,
    cases=lambda: _step_cases(with_beta=True),
    rule="S + beta (v - S k) kᵀ: the state reads its value for k, and beta of the "
    "difference to v is written back",
    tolerance=1e-6,  # float32: S (I - beta k kᵀ) + beta v kᵀ is the same sum
    slips=slips(_DELTA, _DELTA_SLIPS),
)
check_delta_step_fn = DELTA_STEP.make_check()

_KEPT = (
    "    cache = n_attention * per_token * tokens  # grows with the text\n"
    "    return cache + n_linear * state_size  # the states do not\n"
)

_KEPT_SLIPS = """
state-grows: n_linear * state_size -> n_linear * state_size * tokens --
    the states grow with the tokens here: a linear layer keeps one state of
    state_size numbers, however long the text
cache-fixed: per_token * tokens -> per_token -- the cache is counted for
    one token: an attention layer keeps per_token numbers for every token
no-states: cache + n_linear * state_size -> cache -- the linear layers' states
    are left out
no-cache: return cache + -> return -- the attention layers' cache is left out
"""

NUMBERS_KEPT = Exercise(
    label="ch12-ex-numbers-kept",
    check="check_numbers_kept_fn",
    function="numbers_kept(tokens, n_attention, n_linear, per_token, state_size)",
    output="count",
    right=_KEPT,
    # The first case tells the slips apart; then no linear layers, no attention
    # layers, and one token.
    cases=(
        (1_000, 3, 9, 1_024, 32_768),
        (4_096, 12, 0, 512, 16_384),
        (131_072, 0, 8, 256, 65_536),
        (1, 2, 6, 100, 400),
    ),
    describe=lambda t, a, n, c, s: (
        f"{t:,} tokens, {a} attention and {n} linear layers, {c:,} cache numbers "
        f"a token, states of {s:,}"
    ),
    facts=lambda t, a, n, c, s: {"kept": a * c * t + n * s},
    rule="each attention layer keeps per_token numbers for every token and each "
    "linear layer one state, {kept:,} numbers here",
    same=count_is,
    otherwise=count_wrong,
    slips=slips(_KEPT, _KEPT_SLIPS),
)
check_numbers_kept_fn = NUMBERS_KEPT.make_check()
