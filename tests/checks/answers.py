"""Learner answers for the self-checks, right and wrong, shared by the tests.

``EXAMPLES`` holds, for each check, one call with a right answer and
one with a wrong answer. Every function answer first draws a number from torch's
global generator, as a learner's code may (``draws``), so the tests see whether a
check protects the notebook's random numbers and whether its verdict depends on
them; the right dropout is the exception, since check_dropout_fn refuses exactly
that.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import pytest
import torch
import torch.nn.functional as F

from attn_course import SelfAttentionV1, checks
from attn_course.data import hello_shiny_sun, your_journey


def failure(check, *args, **kwargs):
    """Run a check that must fail; return its message."""
    with pytest.raises(AssertionError) as info:
        check(*args, **kwargs)
    return str(info.value)


def wrong_call_test(rows):
    """A test over ``rows`` of ``(call, error, fragments)``: each call is a check
    called the wrong way, and must raise ``error`` with every fragment in its
    message."""

    @pytest.mark.parametrize(("call", "error", "fragments"), rows)
    def test(call, error, fragments):
        with pytest.raises(error) as info:
            call()
        for fragment in fragments:
            assert fragment in str(info.value)

    return test


def draws(fn):
    """``fn`` that first draws a number from the global generator."""

    def drawing(*args):
        torch.rand(1)
        return fn(*args)

    return drawing


# --- Chapter 1 ----------------------------------------------------------------------


def stable_softmax(x):
    x = x - x.max(dim=-1, keepdim=True).values
    return torch.exp(x) / torch.exp(x).sum(dim=-1, keepdim=True)


def naive_softmax(x):
    return torch.exp(x) / torch.exp(x).sum()


def attention(inputs):
    weights = torch.softmax(inputs @ inputs.T, dim=-1)  # (T, T)
    return weights, weights @ inputs  # (T, D)


def scaled_self_attention(x):
    weights = torch.softmax(x @ x.T / x.shape[-1] ** 0.5, dim=-1)
    return weights, weights @ x


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


def v1_from_v2(sa_v2):
    sa_v1 = SelfAttentionV1(sa_v2.d_in, sa_v2.d_out)
    with torch.no_grad():
        for role in ("W_query", "W_key", "W_value"):
            getattr(sa_v1, role).copy_(getattr(sa_v2, role).weight.T)
    return sa_v1


def scaled_attention(queries, keys, values, scale=None):
    scale = keys.shape[-1] ** -0.5 if scale is None else scale
    weights = torch.softmax(queries @ keys.transpose(-2, -1) * scale, dim=-1)
    return weights, weights @ values


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


def prob_all_dropped(weights, p):
    return p ** (weights > 0).sum(dim=-1)


def prob_all_kept(weights, p):
    return (1 - p) ** (weights > 0).sum(dim=-1)


def eval_forward(module, x):
    was_training = module.training
    module.eval()
    try:
        return module(x)
    finally:
        module.train(was_training)


def no_grad_only(module, x):
    with torch.no_grad():
        return module(x)


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


def valid_head_counts(d_out):
    return [h for h in range(1, d_out + 1) if d_out % h == 0]


# --- Chapter 6 ----------------------------------------------------------------------


def right_mask(src, T_t):
    return (src != 0)[:, None, None, :]  # (B, T_s) -> (B, 1, 1, T_s)


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


def sees_the_future(model, src, tgt_in):
    changed = tgt_in.clone()
    changed[:, -1] = (changed[:, -1] - 2) % 10 + 3  # another real token
    before, after = model(src, tgt_in), model(src, changed)
    return not torch.equal(before[:, :-1], after[:, :-1])


def compare_all_positions(model, src, tgt_in):
    changed = tgt_in.clone()
    changed[:, -1] = (changed[:, -1] - 2) % 10 + 3
    return not torch.equal(model(src, tgt_in), model(src, changed))


# --- the table ----------------------------------------------------------------------


# --- Chapter 7 ----------------------------------------------------------------------


def rotate_pair(pair, angle):
    c, s = math.cos(angle), math.sin(angle)
    return torch.stack([pair[0] * c - pair[1] * s, pair[0] * s + pair[1] * c])


def rotate_clockwise(pair, angle):
    return rotate_pair(pair, -angle)


CHANGED_ROWS = {
    "no positions": {1, 3},
    "causal mask": {1, 2, 3},
    "rope": {0, 1, 2, 3, 4},
}


# --- Chapter 8 ----------------------------------------------------------------------


def gpt_parameters(V, T, D, L):
    block = 4 * D * D + D + 8 * D * D + 5 * D + 4 * D  # attention, MLP, two norms
    return V * D + T * D + L * block + 2 * D


def make_example(ids, start, T):
    return ids[start : start + T], ids[start + 1 : start + T + 1]


def top_k_logits(logits, k):
    kth = torch.topk(logits, k, dim=-1).values[:, -1:]  # (B, 1)
    return logits.masked_fill(logits < kth, float("-inf"))


def top_k_zeros(logits, k):
    kth = torch.topk(logits, k, dim=-1).values[:, -1:]
    return logits.masked_fill(logits < kth, 0.0)


# --- Chapter 9 ----------------------------------------------------------------------


def online_softmax_step(m, s, block):
    m_new = torch.maximum(m, block.amax(dim=-1))  # (R,)
    safe = torch.where(m_new == float("-inf"), 0.0, m_new)  # no -inf - (-inf)
    terms = torch.exp(block - safe[:, None]).sum(dim=-1)  # (R,)
    return m_new, s * torch.exp(m - safe) + terms


def unguarded_step(m, s, block):
    m_new = torch.maximum(m, block.amax(dim=-1))
    terms = torch.exp(block - m_new[:, None]).sum(dim=-1)
    return m_new, s * torch.exp(m - m_new) + terms


def largest_batch(config, tokens, budget_bytes, bytes_per_number=2, window=None):
    kept = tokens if window is None else min(tokens, window)  # tokens per layer
    head_dim = config.d_model // config.num_heads
    per_token = 2 * config.num_layers * config.num_kv_heads * head_dim  # numbers
    return budget_bytes // (per_token * kept * bytes_per_number)


def largest_batch_all_heads(
    config, tokens, budget_bytes, bytes_per_number=2, window=None
):
    kept = tokens if window is None else min(tokens, window)
    per_token = 2 * config.num_layers * config.d_model  # every query head cached
    return budget_bytes // (per_token * kept * bytes_per_number)


def dilated_window_mask(T, window, dilation):
    i = torch.arange(T)[:, None]  # (T, 1): queries
    j = torch.arange(T)[None, :]  # (1, T): keys
    back = i - j  # how far key j lies behind query i
    return (back >= 0) & (back % dilation == 0) & (back <= (window - 1) * dilation)


def dilated_band_mask(T, window, dilation):
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    apart = (i - j).abs()  # the future too
    return (apart % dilation == 0) & (apart < window * dilation)


# --- Chapter 10 ---------------------------------------------------------------------


def path_length(kind, distance, kernel_size=None):
    if distance == 0:
        return 0
    if kind == "rnn":
        return distance  # one recurrent step per position
    if kind == "cnn":
        return math.ceil(distance / (kernel_size - 1))  # kernel_size - 1 per layer
    return 1  # attention: every query reads every key


def path_length_by_kernel(kind, distance, kernel_size=None):
    if kind == "cnn":
        return math.ceil(distance / kernel_size)  # the overlap of one forgotten
    return path_length(kind, distance, kernel_size)


def additive_scores(query, keys, W_query, W_key, v):
    hidden = torch.tanh((query @ W_query)[:, None, :] + keys @ W_key)  # (B, T_s, d_a)
    return hidden @ v  # (B, T_s)


def additive_without_tanh(query, keys, W_query, W_key, v):
    return ((query @ W_query)[:, None, :] + keys @ W_key) @ v


def scoring_parameters(d_q, d_k, d_a):
    return {
        "additive": d_a * (d_q + d_k + 1),  # W_query, W_key and v
        "general": d_q * d_k,  # the W of q^T W k
        "dot": 0 if d_q == d_k else None,
    }


def scoring_parameters_without_v(d_q, d_k, d_a):
    return dict(scoring_parameters(d_q, d_k, d_a), additive=d_a * (d_q + d_k))


class Example(NamedTuple):
    """A check, run once with a right answer and once with a wrong one."""

    check: str
    right: object  # () -> None, prints the ✅ line
    wrong: object  # () -> None, raises AssertionError


def _journey():
    return your_journey().embeddings


def _hello():
    return hello_shiny_sun().embeddings


EXAMPLES = [
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
        "check_softmax",
        lambda: checks.check_softmax(draws(stable_softmax)),
        lambda: checks.check_softmax(draws(naive_softmax)),
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
        "check_attention_fn",
        lambda: checks.check_attention_fn(draws(attention)),
        lambda: checks.check_attention_fn(draws(scaled_self_attention)),
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
        "check_v1_from_v2",
        lambda: checks.check_v1_from_v2(draws(v1_from_v2)),
        lambda: checks.check_v1_from_v2(draws(lambda sa_v2: sa_v2)),
    ),
    Example(
        "check_score_variance",
        lambda: checks.check_score_variance(4.0, 0.5, d_k=64, std=0.5),
        lambda: checks.check_score_variance(64.0, 0.5, d_k=64, std=0.5),
    ),
    Example(
        "check_scaled_attention_fn",
        lambda: checks.check_scaled_attention_fn(draws(scaled_attention)),
        lambda: checks.check_scaled_attention_fn(
            draws(lambda q, k, v: scaled_attention(q, k, v, scale=1.0))
        ),
    ),
    Example(
        "check_causal_mask",
        lambda: checks.check_causal_mask(draws(lower)),
        lambda: checks.check_causal_mask(draws(lambda T: ~lower(T))),
    ),
    Example(
        "check_mha_mask_fn",
        lambda: checks.check_mha_mask_fn(draws(torch.logical_not)),
        lambda: checks.check_mha_mask_fn(draws(torch.clone)),
    ),
    Example(
        "check_additive_mask",
        lambda: checks.check_additive_mask(draws(additive)),
        lambda: checks.check_additive_mask(draws(lambda T: additive(T).T)),
    ),
    Example(
        "check_causal_attention_fn",
        lambda: checks.check_causal_attention_fn(draws(attend)),
        lambda: checks.check_causal_attention_fn(
            draws(lambda q, k, v: attend(q, k, v, mask=None))
        ),
    ),
    Example(
        "check_dropout_fn",
        lambda: checks.check_dropout_fn(dropout),  # drawing globally is the slip
        lambda: checks.check_dropout_fn(draws(global_generator)),
    ),
    Example(
        "check_row_drop_probability",
        lambda: checks.check_row_drop_probability(draws(prob_all_dropped)),
        lambda: checks.check_row_drop_probability(draws(prob_all_kept)),
    ),
    Example(
        "check_eval_forward",
        lambda: checks.check_eval_forward(draws(eval_forward)),
        lambda: checks.check_eval_forward(draws(no_grad_only)),
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
        "check_param_count_fn",
        lambda: checks.check_param_count_fn(draws(count)),
        lambda: checks.check_param_count_fn(
            draws(lambda *args: args[2] * count(*args))
        ),
    ),
    Example(
        "check_head_counts_fn",
        lambda: checks.check_head_counts_fn(draws(valid_head_counts)),
        lambda: checks.check_head_counts_fn(
            draws(lambda d: valid_head_counts(d)[::-1])
        ),
    ),
    Example(
        "check_cross_attention_mask",
        lambda: checks.check_cross_attention_mask(draws(right_mask)),
        lambda: checks.check_cross_attention_mask(draws(lambda src, T_t: src != 0)),
    ),
    Example(
        "check_cross_attention_shapes",
        lambda: checks.check_cross_attention_shapes(right_shapes(), **SIZES),
        lambda: checks.check_cross_attention_shapes(
            dict(right_shapes(), weights=(3, 4, 7, 5)), **SIZES
        ),
    ),
    Example(
        "check_future_detector",
        lambda: checks.check_future_detector(draws(sees_the_future)),
        lambda: checks.check_future_detector(draws(compare_all_positions)),
    ),
    Example(
        "check_rotate_pair_fn",
        lambda: checks.check_rotate_pair_fn(draws(rotate_pair)),
        lambda: checks.check_rotate_pair_fn(draws(rotate_clockwise)),
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
    Example(
        "check_gpt_parameters_fn",
        lambda: checks.check_gpt_parameters_fn(draws(gpt_parameters)),
        lambda: checks.check_gpt_parameters_fn(
            draws(lambda V, T, D, L: gpt_parameters(V, T, D, L) + V * D)
        ),
    ),
    Example(
        "check_make_example_fn",
        lambda: checks.check_make_example_fn(draws(make_example)),
        lambda: checks.check_make_example_fn(
            draws(lambda ids, start, T: (ids[start : start + T],) * 2)
        ),
    ),
    Example(
        "check_top_k_fn",
        lambda: checks.check_top_k_fn(draws(top_k_logits)),
        lambda: checks.check_top_k_fn(draws(top_k_zeros)),
    ),
    Example(
        "check_online_step_fn",
        lambda: checks.check_online_step_fn(draws(online_softmax_step)),
        lambda: checks.check_online_step_fn(draws(unguarded_step)),
    ),
    Example(
        "check_largest_batch_fn",
        lambda: checks.check_largest_batch_fn(draws(largest_batch)),
        lambda: checks.check_largest_batch_fn(draws(largest_batch_all_heads)),
    ),
    Example(
        "check_dilated_mask_fn",
        lambda: checks.check_dilated_mask_fn(draws(dilated_window_mask)),
        lambda: checks.check_dilated_mask_fn(draws(dilated_band_mask)),
    ),
    Example(
        "check_path_length_fn",
        lambda: checks.check_path_length_fn(draws(path_length)),
        lambda: checks.check_path_length_fn(draws(path_length_by_kernel)),
    ),
    Example(
        "check_additive_scores_fn",
        lambda: checks.check_additive_scores_fn(draws(additive_scores)),
        lambda: checks.check_additive_scores_fn(draws(additive_without_tanh)),
    ),
    Example(
        "check_scoring_parameters_fn",
        lambda: checks.check_scoring_parameters_fn(draws(scoring_parameters)),
        lambda: checks.check_scoring_parameters_fn(draws(scoring_parameters_without_v)),
    ),
]
