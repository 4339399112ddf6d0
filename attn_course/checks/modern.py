"""Self-checks for Chapter 11: RMSNorm by hand, the attention weights of a row with a
sink logit, and the blocks a paged KV cache takes."""

from __future__ import annotations

import torch

from ._kit import Case
from .table import Exercise, count_is, count_wrong, slips

__all__ = ["check_blocks_needed_fn", "check_rms_norm_fn", "check_sink_weights_fn"]

_RMS = (
    "    rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)  # (..., 1)\n"
    "    return x / rms * weight\n"
)


def _rms_cases():
    """``(x, weight, eps)``: the first case tells the slips apart (a square last pair
    of dimensions, an eps large enough to matter); then a row of zeros, one vector."""
    g = torch.Generator().manual_seed(11)
    x = [1 + 2 * torch.randn(shape, generator=g) for shape in [(2, 4, 4), (3, 5), (6,)]]
    x[1][1] = 0.0
    weight = [0.5 + torch.rand(v.shape[-1], generator=g) for v in x]
    eps = (0.5, 1e-6, 1e-5)
    texts = ["x (2, 4, 4), eps = 0.5", "x (3, 5) whose row 1 is all zeros", "x (6,)"]
    return [
        Case(text, (v, w, e))
        for text, v, w, e in zip(texts, x, weight, eps, strict=True)
    ]


_RMS_SLIPS = """
no-eps: + eps) -> ) -- eps is left out: it keeps a row of zeros from dividing 0 by 0,
    and it shifts every row a little
eps-outside: + eps) -> ) + eps -- eps is added after the square root: it belongs
    inside, sqrt(mean(x^2) + eps)
layer-norm: x.pow(2).mean(dim=-1, keepdim=True) -> x.var(dim=-1, keepdim=True,
    unbiased=False); x / rms -> (x - x.mean(dim=-1, keepdim=True)) / rms -- this is
    LayerNorm without its bias: RMSNorm subtracts no mean, it divides by the root of
    the mean square
sum-not-mean: .mean(dim=-1 -> .sum(dim=-1 -- the squares are summed, not averaged:
    divide their sum by D, .mean(dim=-1, ...)
no-root: torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) ->
    (x.pow(2).mean(dim=-1, keepdim=True) + eps) -- x is divided by the mean square,
    not by its square root
no-weight: * weight -> -- the learned weight is left out: multiply by it last
weight-added: * weight -> + weight -- the weight is added: it multiplies each feature
wrong-dimension: dim=-1 -> dim=0 -- the mean runs over the first dimension: each
    vector (the last dimension, D) is normalised on its own
"""

RMS_NORM = Exercise(
    label="ch11-ex-rms-norm",
    check="check_rms_norm_fn",
    function="rms_norm(x, weight, eps)",
    output="output",
    right=_RMS,
    cases=_rms_cases,
    rule="each vector x (the last dimension, D) is divided by sqrt(mean(x^2) + eps), "
    "then multiplied by weight, feature by feature",
    # float32: a learner may use torch.rsqrt or divide in another order
    tolerance=1e-5,
    slips=slips(_RMS, _RMS_SLIPS),
)
check_rms_norm_fn = RMS_NORM.make_check()

_SINK = (
    "    column = sink[:, None, None].expand(*scores.shape[:-1], 1)  # (H, T_q, 1)\n"
    "    weights = torch.softmax(torch.cat([scores, column], dim=-1), dim=-1)\n"
    "    return weights[..., :-1]  # (H, T_q, T_k): the sink's column dropped\n"
)


def _sink_cases():
    """``(scores, sink)``: the first case tells the slips apart; then a sink far
    above the scores, a sink of -inf (no sink at all), and rows masked in full."""
    g = torch.Generator().manual_seed(12)
    scores = [torch.randn(shape, generator=g) for shape in [(2, 3, 4), (1, 2, 5)]]
    scores += [torch.randn(3, 2, 3, generator=g), torch.randn(2, 3, 3, generator=g)]
    causal = torch.ones(3, 3, dtype=torch.bool).tril()
    scores[3] = scores[3].masked_fill(~causal, float("-inf"))
    scores[3][1, 0] = float("-inf")
    sinks = [
        torch.tensor([0.5, -1.0]),
        torch.tensor([8.0]),
        torch.full((3,), float("-inf")),
        torch.tensor([0.0, 1.0]),
    ]
    texts = [
        "2 heads, 3 queries, 4 keys",
        "a sink of 8, far above the scores",
        "3 heads with sinks of -inf",
        "a causal mask, head 1's first row masked in full",
    ]
    return [Case(text, (s, k)) for text, s, k in zip(texts, scores, sinks, strict=True)]


_SINK_SLIPS = """
no-sink: torch.cat([scores, column], dim=-1) -> scores; weights[..., :-1] -> weights
    | torch.cat([scores, column], dim=-1) -> scores + column; weights[..., :-1] ->
    weights | return weights[..., :-1] -> return weights[..., :-1] / weights[...,
    :-1].sum(dim=-1, keepdim=True) -- each row sums to 1: this is the softmax
    without the sink. The sink's column takes its share of the row, and that share
    leaves with it: do not scale the rest back up to 1
sink-kept: weights[..., :-1] -> weights -- the sink's column is still there: the
    weights have T_k + 1 columns; drop the last one, weights[..., :-1]
first-key-dropped: weights[..., :-1] -> weights[..., 1:] -- key 0 is dropped instead
    of the sink, the last column
sink-in-front: torch.cat([scores, column] -> torch.cat([column, scores] -- the sink's
    column comes first, but the last column (a key) is dropped
"""

SINK = Exercise(
    label="ch11-ex-sink",
    check="check_sink_weights_fn",
    function="sink_weights(scores, sink)",
    output="weights",
    right=_SINK,
    cases=_sink_cases,
    rule="each row's softmax runs over its T_k scores and its head's sink logit, and "
    "the sink's weight is dropped: a row sums to 1 minus the sink's share",
    tolerance=1e-6,  # float32 softmax: a learner may subtract the maximum by hand
    slips=slips(_SINK, _SINK_SLIPS),
)
check_sink_weights_fn = SINK.make_check()

_BLOCKS = "    return sum(math.ceil(n / block_size) for n in lengths)\n"

_BLOCKS_SLIPS = """
rounded-down: math.ceil(n / block_size) -> n // block_size -- the last, partly filled
    block of a sequence is not counted: round up, math.ceil(n / block_size)
one-more: math.ceil(n / block_size) -> n // block_size + 1 -- a sequence whose
    length is a multiple of block_size gets a block too many, and an empty one gets
    one: round up, math.ceil(n / block_size)
pooled: sum(math.ceil(n / block_size) for n in lengths) -> math.ceil(sum(lengths) /
    block_size) -- the sequences share blocks: a block holds the tokens of one
    sequence only, so round up each sequence on its own
preallocated: sum(math.ceil(n / block_size) for n in lengths) -> len(lengths) *
    math.ceil(max(lengths) / block_size) -- every sequence gets the blocks of the
    longest one: that is a preallocated cache, the waste a paged cache avoids
tokens: math.ceil(n / block_size) -> n -- this counts tokens, not blocks of
    block_size tokens
"""

BLOCKS = Exercise(
    label="ch11-ex-blocks",
    check="check_blocks_needed_fn",
    function="blocks_needed(lengths, block_size)",
    output="count",
    right=_BLOCKS,
    # The first case tells the slips apart; then lengths that fill their blocks
    # exactly, an empty sequence, and blocks of one token.
    cases=(
        ([37, 5, 16, 70], 16),
        ([32, 64, 16], 16),
        ([0, 9, 1], 8),
        ([3, 4], 1),
    ),
    describe=lambda lengths, b: f"lengths {lengths}, block_size = {b}",
    facts=lambda lengths, b: {"blocks": sum(-(-n // b) for n in lengths)},
    rule="each sequence takes its own ceil(length / block_size) blocks, {blocks} in "
    "all here",
    same=count_is,
    otherwise=count_wrong,
    slips=slips(_BLOCKS, _BLOCKS_SLIPS),
)
check_blocks_needed_fn = BLOCKS.make_check()
