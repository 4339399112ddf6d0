"""Learner answers for the self-checks, shared by the tests. ``EXAMPLES`` holds a
right and a wrong call of every check; function answers first draw from torch's
global generator (``draws``), as a learner's code may, except the right dropout,
which check_dropout_fn refuses for exactly that."""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import pytest
import torch
import torch.nn.functional as F

import attn_course.checks
from attn_course import checks
from attn_course.checks.table import Exercise
from attn_course.data import hello_shiny_sun, your_journey
from tests.checks import TABLES
from tests.conftest import teaches


def failure(check, *args, **kwargs):
    """Run a check that must fail; return its message."""
    with pytest.raises(AssertionError) as info:
        check(*args, **kwargs)
    return str(info.value)


def wrong_call_test(rows):
    """A test over ``rows`` of ``(call, error, fragments)``: checks called the wrong
    way (see ``teaches``)."""

    def test(call, error, fragments):
        teaches(call, error, fragments)

    return pytest.mark.parametrize(("call", "error", "fragments"), rows)(test)


def right(table):
    """A table's right answer, as the function a learner writes."""
    return Exercise.define(table, table.right)


T = attn_course.checks
stable_softmax, v1_from_v2, prob_all_dropped, eval_forward = map(
    right,
    (
        T.basics.SOFTMAX,
        T.trainable_weights.V1_FROM_V2,
        T.dropout.ROW_DROP,
        T.dropout.EVAL,
    ),
)
gpt_parameters, make_example, online_softmax_step = map(
    right, (T.gpt.GPT_PARAMETERS, T.gpt.MAKE_EXAMPLE, T.efficient.ONLINE_STEP)
)
path_length, additive_scores, scoring_parameters = map(
    right, (T.history.PATH, T.history.ADDITIVE, T.history.COUNTS)
)


def draws(fn):
    """``fn`` that first draws a number from the global generator."""

    def drawing(*args):
        torch.rand(1)
        return fn(*args)

    return drawing


# --- Chapter 1 ----------------------------------------------------------------------


def attention(inputs):
    weights = torch.softmax(inputs @ inputs.T, dim=-1)  # (T, T)
    return weights, weights @ inputs  # (T, D)


def context_of(x, i, temperature=1.0):
    return torch.softmax(x @ x[i] / temperature, dim=0) @ x


# --- Chapter 2 ----------------------------------------------------------------------


def projected(x, W_q, W_k, W_v, i, *, scale=None):
    q, keys, values = x[i] @ W_q, x @ W_k, x @ W_v
    scale = keys.shape[-1] ** -0.5 if scale is None else scale
    return torch.softmax(keys @ q * scale, dim=0) @ values


def journey_weights():
    gen = torch.Generator().manual_seed(1)
    return your_journey().embeddings, *(torch.rand(3, 2, generator=gen) for _ in "qkv")


# --- Chapter 3 ----------------------------------------------------------------------


def lower(T):
    return torch.ones(T, T, dtype=torch.bool).tril()


def additive(T):
    return torch.zeros(T, T).masked_fill(~lower(T), float("-inf"))


def attend(q, k, v, *, mask="causal", fill=-torch.inf):
    """Causal attention, blocking with ``fill``; ``mask=None`` forgets the mask,
    ``"after"`` masks the weights after the softmax and renormalises them."""
    T = q.shape[-2]
    scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5  # (..., T, T)
    if mask == "causal":
        scores = scores.masked_fill(~lower(T), fill)
    weights = torch.softmax(scores, dim=-1)
    if mask == "after":
        weights = weights * lower(T)
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, weights @ v


# --- Chapter 4 ----------------------------------------------------------------------


def dropout(weights, p, generator):
    keep = torch.rand(weights.shape, generator=generator) >= p
    return torch.where(keep, weights / (1 - p), 0.0)


def global_generator(weights, p, generator):
    return F.dropout(weights, p, training=True)


# --- Chapter 5 ----------------------------------------------------------------------


def split_heads(x, num_heads):
    B, T, D = x.shape
    return x.view(B, T, num_heads, D // num_heads).transpose(1, 2)


def merge_heads(x):
    B, H, T, d = x.shape
    return x.transpose(1, 2).contiguous().view(B, T, H * d)


def merge_without_contiguous(x):
    B, H, T, d = x.shape
    return x.transpose(1, 2).view(B, T, H * d)


SETTING = {"d_in": 3, "d_out": 12, "num_heads": 3, "batch_size": 2, "num_tokens": 5}
RIGHT_SHAPES = {
    "wrapper output": (2, 5, 36),
    "wrapper weights": (2, 3, 5, 5),
    "fused output": torch.Size([2, 5, 12]),
    "fused weights": [2, 3, 5, 5],
    "queries.view": (2, 5, 3, 4),
    "queries.transpose": (2, 3, 5, 4),
    "context.transpose": (2, 5, 3, 4),
}


def count(d_in, d_out, num_heads, qkv_bias):
    return 3 * (d_in * d_out + (d_out if qkv_bias else 0)) + d_out * d_out + d_out


# --- Chapter 6 ----------------------------------------------------------------------


SIZES = dict(d_in=64, d_memory=96, d_out=64, num_heads=4, batch_size=3, T_q=5, T_k=7)


def right_shapes():
    return {
        "W_query": (64, 64),
        "W_key": (64, 96),
        "W_value": (64, 96),
        "out_proj": (64, 64),
        "weights": (3, 4, 5, 7),
        "output": (3, 5, 64),
        "num_parameters": 64 * 64 + 2 * 64 * 96 + 64 * 64 + 64,
    }


# --- Chapter 7 ----------------------------------------------------------------------


CHANGED_ROWS = {
    "no positions": {1, 3},
    "causal mask": {1, 2, 3},
    "rope": {0, 1, 2, 3, 4},
}


class Example(NamedTuple):
    """A check, run once with a right answer and once with a wrong one."""

    check: str
    right: object  # () -> None, prints the ✅ line
    wrong: object  # () -> None, raises AssertionError


def _journey():
    return your_journey().embeddings


def _hello():
    return hello_shiny_sun().embeddings


_EXPLICIT = [
    Example(
        "check_close",
        lambda: checks.check_close(
            _journey() @ _journey()[1], _journey() @ _journey()[1]
        ),
        lambda: checks.check_close(_journey()[1], _journey()[2]),
    ),
    Example(
        "check_weights",
        lambda: checks.check_weights(torch.softmax(_hello() @ _hello().T, dim=-1)),
        lambda: checks.check_weights(_hello() @ _hello().T),
    ),
    Example(
        "check_context_vector",
        lambda: checks.check_context_vector(context_of(_hello(), 1), _hello(), 1),
        lambda: checks.check_context_vector(
            context_of(_hello(), 1), _hello(), 1, temperature=2.0
        ),
    ),
    Example(
        "check_scaled_embeddings",
        lambda: checks.check_scaled_embeddings(
            torch.softmax((2 * _journey()) @ (2 * _journey()[1]), dim=-1),
            0.25,
            _journey(),
            1,
        ),
        lambda: checks.check_scaled_embeddings(
            torch.softmax((2 * _journey()) @ (2 * _journey()[1]), dim=-1),
            0.5,
            _journey(),
            1,
        ),
    ),
    Example(
        "check_projected_context",
        lambda: checks.check_projected_context(
            projected(*journey_weights(), 1), *journey_weights(), 1
        ),
        lambda: checks.check_projected_context(
            projected(*journey_weights(), 1, scale=1.0), *journey_weights(), 1
        ),
    ),
    Example(
        "check_score_variance",
        lambda: checks.check_score_variance(4.0, 0.5, d_k=64, std=0.5),
        lambda: checks.check_score_variance(64.0, 0.5, d_k=64, std=0.5),
    ),
    Example(
        "check_dropout_fn",
        lambda: checks.check_dropout_fn(dropout),  # drawing globally is the slip
        lambda: checks.check_dropout_fn(draws(global_generator)),
    ),
    Example(
        "check_head_split",
        lambda: checks.check_head_split(draws(split_heads), draws(merge_heads)),
        lambda: checks.check_head_split(
            draws(split_heads), draws(merge_without_contiguous)
        ),
    ),
    Example(
        "check_shape_predictions",
        lambda: checks.check_shape_predictions(RIGHT_SHAPES, **SETTING),
        lambda: checks.check_shape_predictions(
            dict(RIGHT_SHAPES, **{"fused output": (2, 5, 36)}), **SETTING
        ),
    ),
    Example(
        "check_cross_attention_shapes",
        lambda: checks.check_cross_attention_shapes(right_shapes(), **SIZES),
        lambda: checks.check_cross_attention_shapes(
            dict(right_shapes(), weights=(3, 4, 7, 5)), **SIZES
        ),
    ),
    Example(
        "check_changed_rows",
        lambda: checks.check_changed_rows(CHANGED_ROWS),
        lambda: checks.check_changed_rows({**CHANGED_ROWS, "no positions": set()}),
    ),
    Example(
        "check_alibi_slopes",
        lambda: checks.check_alibi_slopes([2.0 ** (-h) for h in range(1, 9)], 8),
        lambda: checks.check_alibi_slopes(sorted(2.0 ** (-h) for h in range(1, 9)), 8),
    ),
]


def _from_tables():
    """For every other check, which one table makes: its right answer and its first
    slip, each drawing from the global generator first."""
    explicit = {example.check for example in _EXPLICIT}
    for exercise in TABLES:
        if exercise.check not in explicit and not exercise.value:
            explicit.add(exercise.check)
            check = getattr(checks, exercise.check)
            code = partial(Exercise.define, exercise)  # the function, as a learner's
            right = draws(code(exercise.right))
            wrong = draws(code(exercise.slips[0].bodies[0]))
            yield Example(exercise.check, partial(check, right), partial(check, wrong))


EXAMPLES = [*_EXPLICIT, *_from_tables()]
