"""Self-checks for Chapter 10, as tables (see .table): path lengths, additive
(Bahdanau) scores written out, and the parameters of three ways to score."""

import re

import torch

from ._kit import explainer
from .table import Exercise, Slip, same_result

_SLIP = re.compile(r"^(\S+): (.*(?:;\n.*)*)\n((?: .*\n)+)", re.M)


def _slips(template, text):
    """Slips from lines ``name: part=code; part=code`` (variants: ``template`` with
    that part's code; ";" at the end goes on), then what it says, indented."""
    slips = []
    for name, parts, says in _SLIP.findall(text):
        bodies = (template(**dict([p.split("=", 1)])) for p in re.split(r";\s", parts))
        slips.append(Slip(name, tuple(bodies), " ".join(says.split())))
    return tuple(slips)


def _plain(x):
    """A count as written (7 and 7.0 differ), tensors and numpy numbers as Python's."""
    if isinstance(x, dict):
        return {key: _plain(value) for key, value in x.items()}
    return repr(x.tolist() if hasattr(x, "tolist") else x)


def _count_otherwise(got, expected, subject):
    """What is wrong with a count, or with the first wrong count of a dict."""
    if isinstance(got, dict) and isinstance(expected, dict) and {*got} == {*expected}:
        key = next(k for k in expected if _plain(got[k]) != _plain(expected[k]))
        return f"{key!r} is {got[key]!r}, where {expected[key]!r} is right"
    forgot = ": did the function forget a `return`?" if got is None else ""
    return f"it is {got!r}, where {expected!r} is right{forgot}"


_ZERO = "    if distance == 0:\n        return 0\n"
_CNN = "math.ceil(distance / (kernel_size - 1))"


def _path(rnn="distance", cnn=_CNN, attention="1", zero=_ZERO):
    """A body of path_length: 0 at distance 0, then each kind's rule."""
    return (
        f'{zero}    if kind == "rnn":\n        return {rnn}\n'
        f'    if kind == "cnn":\n        return {cnn}\n    return {attention}\n'
    )


PATH = Exercise(
    label="ch10-ex-path",
    check="check_path_length_fn",
    function="path_length(kind, distance, kernel_size=None)",
    output="result",
    right=_path(),
    # The first of each kind tells its slips apart; then 0, 1, k - 1, k and more.
    cases=(
        *(("rnn", d, None) for d in (7, 0, 1, 511)),
        ("rnn", 6, 3),
        *(("cnn", d, 3) for d in (13, 0, 1, 2, 3, 63, 511)),
        *(("cnn", d, k) for d, k in ((1, 2), (9, 2), (4, 5), (5, 5), (1000, 5))),
        *(("attention", d, None) for d in (64, 0, 1, 511)),
    ),
    describe=lambda kind, d, k: f'path_length("{kind}", {d}{f", {k}" if k else ""})',
    rule="the path is distance recurrent steps, ceil(distance / (kernel_size - 1)) "
    "convolutions (causal, not dilated), 1 attention layer, 0 at distance 0",
    same=lambda got, output: got is not None and _plain(got) == _plain(output),
    otherwise=_count_otherwise,
    slips=_slips(
        _path,
        """\
by-kernel: cnn=math.ceil(distance / kernel_size); cnn=distance // kernel_size
 it divides by kernel_size: two stacked windows share a position, so use kernel_size - 1
off-by-one: rnn=distance + 1; rnn=distance - 1
 it is distance + 1 or - 1: one recurrent step per position, the last one included
kernel-for-rnn: rnn=math.ceil(distance / (kernel_size - 1)) if kernel_size else distance
 that is the path of a convolution: kernel_size is for kind "cnn" only
as-attention: rnn=1; cnn=1
 that is the path of attention, which reaches any distance in one layer
as-rnn: cnn=distance; attention=distance
 that is the path of a recurrent layer, which moves one position per step
not-rounded-up: cnn=distance // (kernel_size - 1); cnn=distance / (kernel_size - 1)
 it is not rounded up: the last positions still need a layer; use math.ceil(...)
dilated: cnn=math.ceil(math.log(distance, kernel_size))
 that is the O(log_k n) of DILATED convolutions; these are not dilated
a-float: cnn=torch.ceil(torch.tensor(distance / (kernel_size - 1)))
 it is the right number as a float: return an int, as math.ceil(...) and // give
attention-zero-or-one: attention=0; zero=
 attention gives 0 at distance 0, where a token needs no layer, and 1 beyond
""",
    ),
)
check_path_length_fn = PATH.make_check()


def _additive_cases():
    """The first case tells the slips apart; then one sentence, one key, and both."""
    g = torch.Generator().manual_seed(10)
    sizes = ((3, 5, 4, 6, 8), (1, 5, 4, 6, 8), (3, 1, 5, 2, 3), (1, 1, 3, 7, 4))
    return [
        tuple(
            torch.randn(shape, generator=g) / 2
            for shape in ((B, d_q), (B, T_s, d_k), (d_q, d_a), (d_k, d_a), (d_a,))
        )
        for B, T_s, d_q, d_k, d_a in (*sizes, (2, 4, 8, 3, 6))
    ]


def _scores(last="torch.tanh(q + k) @ v", q="(query @ W_query)[:, None, :]", k=None):
    """A body of additive_scores: the two projected terms, then the scores."""
    return f"    q = {q}\n    k = {k or 'keys @ W_key'}\n    return {last}\n"


_BROADCAST = " query @ W_query is (B, d_a): give it a key dimension, [:, None]."
_MATRICES = " Multiply each input by its own matrix, (in, out) already: no .T."
ADDITIVE = Exercise(
    label="ch10-ex-additive",
    check="check_additive_scores_fn",
    function="additive_scores(query, keys, W_query, W_key, v)",
    output="scores",
    right=_scores(),
    cases=_additive_cases,
    describe=lambda *a: "inputs of shapes " + ", ".join(str(tuple(t.shape)) for t in a),
    rule="scores = torch.tanh(query @ W_query as (B, 1, d_a) + keys @ W_key) @ v, "
    "of shape (B, T_s), before any softmax",
    same=lambda got, output: got is not None and same_result(got, output, 1e-5),
    explain=explainer((("must match", _BROADCAST), ("be multiplied", _MATRICES))),
    slips=_slips(
        _scores,
        """\
no-tanh: last=(q + k) @ v
 tanh is missing: apply torch.tanh to the sum before the product with v
v-before-tanh: last=torch.tanh((q + k) @ v)
 v is applied before tanh: first torch.tanh(...) of the sum, then @ v
multiplied: last=torch.tanh(q * k) @ v
 the projected query and key are multiplied, as in a dot product: ADD them
softmax: last=torch.softmax(torch.tanh(q + k) @ v, dim=-1)
 these are the attention weights, the softmax of the scores: return the scores
no-v: last=torch.tanh(q + k); last=torch.tanh(q + k).sum(dim=-1)
 v is missing: weigh the d_a tanh units of each key with v, ... @ v
two-tanh: last=(torch.tanh(q) + torch.tanh(k)) @ v
 tanh is applied to each term apart: add them first, then apply one tanh
column-v: last=torch.tanh(q + k) @ v[:, None];
last=(torch.tanh(q + k) @ v[:, None]).squeeze()
 v as a column leaves a last dimension of 1: use ... @ v or .squeeze(-1), not .squeeze()
shapes: q=query @ W_query; k=keys @ W_query; q=(query @ W_query.T)[:, None, :]
 the shapes do not line up (the query's term not broadcast, or the wrong matrix)
""",
    ),
)
check_additive_scores_fn = ADDITIVE.make_check()


def _counts(additive="d_a * (d_q + d_k + 1)", general="d_q * d_k", dot=None):
    """A body of scoring_parameters returning these three counts."""
    dot = dot or "0 if d_q == d_k else None"
    return f"    return dict(additive={additive}, general={general}, dot={dot})\n"


COUNTS = Exercise(
    label="ch10-ex-params",
    check="check_scoring_parameters_fn",
    function="scoring_parameters(d_q, d_k, d_a)",
    output="counts",
    right=_counts(),
    # Among them GRUSeq2Seq's attention and Bahdanau et al.'s (2015, appendix A.2).
    cases=((6, 10, 8), (32, 32, 8), (5, 3, 20), (64, 64, 64), (1000, 2000, 1000)),
    describe=lambda d_q, d_k, d_a: f"d_q = {d_q}, d_k = {d_k}, d_a = {d_a}",
    rule="'additive' counts W_query (d_q x d_a), W_key (d_k x d_a) and v (d_a); "
    "'general' the d_q x d_k W of q^T W k; 'dot' 0, or None when d_q != d_k",
    same=lambda got, output: got is not None and _plain(got) == _plain(output),
    otherwise=_count_otherwise,
    slips=_slips(
        _counts,
        """\
no-v: additive=d_a * (d_q + d_k); additive=d_a * (d_q + d_k) + 1
 'additive' needs v, one weight for each of the d_a = {d_a} hidden units
biases: additive=d_a * (d_q + d_k + 3) + 1; additive=d_a * (d_q + d_k + 2);
general=d_q * d_k + 1
 a bias is counted: none of these scores has one
twice: additive=2 * d_a * (d_q + d_k); additive=2 * d_a * (d_q + d_k + 1)
 'additive' counts something twice: W_query, W_key and v count once each
one-width: additive=d_a * (2 * d_q + 1); additive=d_a * (2 * d_k + 1)
 'additive' gives W_query and W_key one width: they are {d_q} x {d_a} and {d_k} x {d_a}
general-square: general=d_q * d_q; general=d_k * d_k
 'general' is square: W sits between d_q = {d_q} and d_k = {d_k} numbers
general-not-one-matrix: general=d_a * (d_q + d_k + 1); general=0
 'general' learns exactly one d_q x d_k matrix W, q^T W k, and no hidden layer
dot-learns: dot=d_q * d_k; dot=d_q * d_k if d_q == d_k else None;
dot=1 if d_q == d_k else None
 'dot' counts learned numbers: a dot product, scaled by 1 / sqrt(d_k) or not, has none
dot-zero-or-none: dot=0; dot=None
 'dot' is 0 when d_q == d_k and None when they differ (here {d_q} and {d_k})
""",
    ),
)
check_scoring_parameters_fn = COUNTS.make_check()
__all__ = [name for name in dir() if name.startswith("check_")]
