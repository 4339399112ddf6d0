"""Self-checks for Chapter 8: a GPT's parameters, training examples, top-k."""

from __future__ import annotations

import torch

from .table import Exercise, count_is, count_wrong, pair_wrong, slips

__all__ = ["check_gpt_parameters_fn", "check_make_example_fn", "check_top_k_fn"]


_PARAMS = (
    "    block = 4 * D * D + D + 8 * D * D + 5 * D + 4 * D\n"
    "    return V * D + T * D + L * block + 2 * D\n"
)

_PARAMS_SLIPS = """
untied-output: V * D -> 2 * V * D -- the output layer is counted apart: it IS the
    token embedding (weight tying)
no-positions: + T * D -> -- the position table (T * D) is missing
no-block-norms: + 4 * D -> -- the two LayerNorms of each block (4 * D) are missing
no-final-norm: + 2 * D -> -- the final LayerNorm (2 * D) is missing
norms-one-vector: + 2 * D -> + D; + 4 * D -> + 2 * D -- each LayerNorm is counted
    with one vector: it has a weight and a bias of D numbers
d-ff: 8 * D * D + 5 * D -> 4 * D * D + 3 * D | 8 * D * D + 5 * D -> 2 * D * D + 2 * D
    -- the feed-forward layers do not map D -> d_ff = 4 * D -> D
no-feed-forward-biases: + 5 * D -> -- the feed-forward layers' biases are missing
no-out-proj-bias: D * D + D -> D * D -- the bias of out_proj (D) is missing
qkv-biases: D * D + D -> D * D + 4 * D -- query, key and value have no biases here
output-bias: + 2 * D -> + 2 * D + V -- the output layer is given a bias: it has none
one-block: L * block -> block -- one block is counted: there are L = {L}
"""

GPT_PARAMETERS = Exercise(
    label="ch08-ex-params",
    check="check_gpt_parameters_fn",
    function="gpt_parameters(V, T, D, L)",
    output="count",
    right=_PARAMS,
    # The chapter's model (it tells the slips apart), GPT-2's sizes, one block, odd.
    cases=((103, 64, 96, 4), (50257, 1024, 768, 12), (65, 32, 64, 1), (13, 9, 10, 5)),
    describe="V={}, T={}, D={}, L={}".format,
    facts=lambda V, T, D, L: {"all": V * D + T * D + L * (12 * D * D + 10 * D) + 2 * D},
    rule="the model has {all:,} parameters: token embedding (= output layer), position "
    "table, L blocks (4 attention projections, 2 feed-forward layers, 2 LayerNorms), "
    "final LayerNorm",
    same=count_is,
    otherwise=count_wrong,
    slips=slips(_PARAMS, _PARAMS_SLIPS),
)
check_gpt_parameters_fn = GPT_PARAMETERS.make_check()

_EXAMPLE = (
    "    inputs = ids[start:start + T]\n"
    "    targets = ids[start + 1:start + T + 1]\n"
    "    return inputs, targets\n"
)


_EXAMPLE_SLIPS = """
no-shift: start + 1:start + T + 1 -> start:start + T -- the targets are the inputs:
    the model predicts the NEXT id at each position
shifted-back: + 1:start + T + 1 -> - 1:start + T - 1 -- each target is the id BEFORE it
shifted-by-two: + 1:start + T + 1 -> + 2:start + T + 2 -- each target is 2 ahead, not 1
one-too-many: T + 1] -> T + 2]; T] -> T + 1] -- they hold T + 1 = {more} ids: a
    slice ids[a:b] holds b - a ids
one-too-few: T + 1] -> T]; T] -> T - 1] -- they hold T - 1 = {fewer} ids: a slice
    ids[a:b] holds b - a ids
next-id-only: + 1:start + T + 1 -> + T | 1:start + T + 1 -> T:start + T + 1 -- the
    target is only the id after the window: the targets are T = {T}, one per position
inputs-moved: [start: -> [start + 1:; T] -> T + 1] | [start: -> [start - 1:; T] -> T
    - 1] -- the inputs do not start at position start
swapped: inputs, targets -> targets, inputs -- inputs and targets are swapped
not-long: , targets -> , targets.int() | inputs, targets -> inputs.float(),
    targets.float() -- the ids are not torch.long, the dtype of ids (a slice keeps
    it), which nn.Embedding and F.cross_entropy want
"""

MAKE_EXAMPLE = Exercise(
    label="ch08-ex-shift",
    check="check_make_example_fn",
    function="make_example(ids, start, T)",
    output="(inputs, targets)",
    right=_EXAMPLE,
    # Distinct ids; the first case tells the slips apart, then starts 0 and N - T - 1.
    cases=lambda: tuple(
        (torch.arange(N) * 37 % 101, start, T)
        for N, start, T in [(20, 5, 6), (16, 0, 8), (24, 18, 5), (12, 0, 11)]
    ),
    describe=lambda ids, start, T: f"{len(ids)} distinct ids, start={start}, T={T}",
    facts=lambda ids, start, T: {"more": T + 1, "fewer": T - 1},
    rule="the inputs are the T = {T} ids from position start = {start} on, the "
    "targets the id after each of them: the same window, one position to the right",
    otherwise=pair_wrong("inputs, targets"),
    fix="a slice of ids is a view of ids, and writing into it writes into ids: "
    "leave the slices as they are, or .clone() one before changing it.",
    slips=slips(_EXAMPLE, _EXAMPLE_SLIPS),
)
check_make_example_fn = MAKE_EXAMPLE.make_check()

_TOP_K = (
    "    kth = torch.topk(logits, k, dim=-1).values[:, -1:]  # (B, 1)\n"
    '    top = logits.masked_fill(logits < kth, float("-inf"))\n'
    "    return top\n"
)

_TOP_K_SLIPS = """
smallest: dim=-1) -> dim=-1, largest=False); < -> > -- you kept the k SMALLEST per row
fill-zero: float("-inf") -> 0.0 -- the others are 0, not -inf: softmax gives them p > 0
fill-large-negative: float("-inf") -> -1e9 -- the others are a large negative
    number, not -inf: its probability is small but not always 0
whole-batch: logits, k, dim=-1).values[:, -1:] -> logits.flatten(), k).values[-1]
    -- you kept the k largest of the whole BATCH: take torch.topk along dim=-1
one-threshold: [:, -1:] -> .min() -- all rows are cut at ONE threshold: compare each
    row with its own k-th largest, (B, 1)
one-too-many: k, dim -> k + 1, dim -- you kept k + 1 = {more} logits per row
one-too-few: < -> <= -- you kept k - 1 = {fewer} logits per row: keep the k-th (<)
probabilities: return top -> return torch.softmax(top, dim=-1) -- these are
    probabilities: sampling applies the softmax itself
mask: return top -> return logits >= kth -- this is a bool mask: fill with -inf
topk-output: return top -> return torch.topk(logits, k).values | return top ->
    return torch.topk(logits, k).indices | return top -> return torch.topk(logits, k)
    -- this is (part of) what torch.topk returns: return the logits, (B, V)
"""

TOP_K = Exercise(
    label="ch08-ex-topk",
    check="check_top_k_fn",
    function="top_k_logits(logits, k)",
    output="logits",
    right=_TOP_K,
    # Random logits without ties (B, V, k); the first case tells every slip apart.
    cases=lambda: tuple(
        (2 * torch.randn(B, V, generator=torch.Generator().manual_seed(B * V + k)), k)
        for B, V, k in [(3, 10, 2), (1, 5, 1), (3, 5, 5), (1, 10, 2), (3, 10, 1)]
    ),
    describe=lambda logits, k: f"random logits of shape {tuple(logits.shape)}, k={k}",
    facts=lambda logits, k: {"more": k + 1, "fewer": k - 1},
    rule="keep the k largest logits of each row as they are, and the others -inf",
    tolerance=1e-6,
    slips=slips(_TOP_K, _TOP_K_SLIPS),
)
check_top_k_fn = TOP_K.make_check()
