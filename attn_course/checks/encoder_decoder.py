"""Self-checks for Chapter 6: cross-attention masks and shapes, a future detector."""

from __future__ import annotations

import re

import torch

from .._validate import kind_of, require_int
from ._common import INVERTED, expect_dict, expect_tensor, shape_mismatch
from ._kit import exercise_check, passed, seeded
from .table import Exercise, Slip

__all__ = ["check_cross_attention_mask", "check_cross_attention_shapes",
           "check_future_detector"]  # fmt: skip


def judge_entries(exercise, answer, args, setting):
    """Judge each entry of a dict of predictions as the table's output for (key,
    *args), the keys being the first arguments of its cases; list the wrong ones."""
    check, keys = exercise.check, tuple(dict.fromkeys(c[0] for c in exercise.cases))
    if missing := [k for k in keys if k not in expect_dict(answer, check, "{...}")]:
        raise AssertionError(f"{check}: your dict lacks the keys {missing}.")
    wrong = []
    for key in keys:
        try:
            exercise.verdict(answer[key], (key, *args), f"{key!r}, {answer[key]!r}")
        except AssertionError as error:
            wrong.append(str(error).removeprefix(f"{check}: your "))
    counted = f"{len(wrong)} of {len(keys)} predictions are wrong for {setting}"
    if wrong:
        raise AssertionError(f"{check}: {counted}:\n  " + "\n  ".join(wrong))
    passed(check, f"all {len(keys)} predictions are right for {setting}.")


def _mask_wrong(got, mask, subject=""):
    """Why a mask blocks other scores (B, H, T_t, T_s) than ``mask`` does, or ''."""
    if torch.is_tensor(got) and got.dim() == 4 and got.shape[1] != 1:  # any H
        return f"it is {tuple(got.shape)}: its dimension 1 is the heads', make it 1"
    try:
        a, b = torch.broadcast_tensors(expect_tensor(got, subject), mask)
        index = (a != b).nonzero().tolist() if a.dim() <= 4 else None
    except RuntimeError:
        index = None
    if index is None or got.dtype != mask.dtype:
        return f"it is {got.dtype}, {tuple(got.shape)}; the scores are (B, H, T_t, T_s)"
    return f"entry {index[0]} is {bool(a[tuple(index[0])])}" if index else ""


_MASK = "    return (src {})[:, None, None, :]{}\n"
_CAUSAL = " & (torch.ones(T_t, src.shape[1]).tril() > 0)"

CROSS_MASK = Exercise(
    label="ch06-ex-cross-mask", check="check_cross_attention_mask", parameter="fn",
    function="cross_attention_mask(src, T_t)", output="mask",
    right=_MASK.format("!= 0", ""),
    cases=((torch.tensor([[9, 6, 8, 3, 7], [5, 4, 3, 0, 0], [8, 0, 0, 0, 0]]), 4),
           (torch.tensor([[9, 6, 8, 3], [7, 5, 0, 0], [3, 4, 8, 0], [6, 0, 0, 0]]), 4),
           (torch.tensor([[9, 6, 8]]), 2)),  # B = T_t: a (B, T_s) mask broadcasts
    describe=lambda src, T_t: f"source lengths {(src != 0).sum(1).tolist()}, T_t={T_t}",
    rule="True (may attend) for the real source tokens, False for <pad>, for every "
    "head and target position",
    same=lambda got, mask: torch.is_tensor(got) and not _mask_wrong(got, mask),
    otherwise=_mask_wrong, fix="change a copy instead, e.g. src = src.clone().",
    slips=(
        Slip("two-d", "    return src != 0\n", "a (B, T_s) mask lines up with the "
             "(T_t, T_s) of the scores (B, H, T_t, T_s): it does not broadcast, or "
             "gives query i the padding of sentence i; use mask[:, None, None, :]"),
        Slip("inverted", _MASK.format("== 0", ""), INVERTED),
        Slip("float", _MASK.format("!= 0", ".float()"),
             "the entries are numbers, not bool: a float mask is added to the scores"),
        Slip("causal", _MASK.format("!= 0", _CAUSAL),
             "your mask is causal too; the whole source is known before decoding"),
    ),
)  # fmt: skip
check_cross_attention_mask = CROSS_MASK.make_check()

# The right answer; the comment on each entry is the rule a wrong one is told.
_SHAPES = """\
    B, H, head = batch_size, num_heads, d_out // num_heads
    shapes = {
        "W_query": (d_out, d_in),  # nn.Linear stores (out_features, in_features)
        "W_key": (d_out, d_memory),  # nn.Linear stores (out_features, in_features)
        "W_value": (d_out, d_memory),  # nn.Linear stores (out_features, in_features)
        "out_proj": (d_out, d_out),  # nn.Linear stores (out_features, in_features)
        "weights": (B, H, T_q, T_k),  # a weight per head, query and key
        "output": (B, T_q, d_out),  # a vector per query, d_out wide
        "num_parameters": d_out * (d_in + 2*d_memory + d_out + 1),  # 4 weights, 1 bias
    }
"""
_RULES = dict(re.findall(r'"(\w+)": .*  # (.*)', _SHAPES))
_LINEARS = 'for k in ("W_query", "W_key", "W_value", "out_proj")[:{}]: shapes[k] = {}'


def _shapes(*lines, **entries):
    """The learner's code: the right shapes, with ``lines`` run and ``entries`` set."""
    lines += tuple(f'shapes["{key}"] = {value}' for key, value in entries.items())
    return _SHAPES + "".join(f"    {c}\n" for c in lines) + "    return shapes[key]\n"


def _shape_wrong(got, expected, subject):
    key = subject.split("'")[1]  # the subject names the key: "... for 'W_key', ..."
    number = key == "num_parameters"
    if not isinstance(got, (int, float) if number else tuple):
        return f"it must be {'a number' if number else 'a shape, a tuple of ints'}"
    if number:
        return f"it is too {'high' if got > expected else 'low'}"
    letters = re.findall(rf'"{key}": \((.*?)\)', _SHAPES)[0].split(", ")
    return shape_mismatch(got, expected, letters)


SHAPES = Exercise(
    label="ch06-ex-shapes", check="check_cross_attention_shapes", value=True,
    function="shapes(key, d_in, d_memory, d_out, num_heads, batch_size, T_q, T_k)",
    output="prediction", right=_shapes(), describe=lambda key, *sizes: repr(key),
    cases=tuple((key, 64, 96, 64, 4, 3, 5, 7) for key in _RULES),
    facts=lambda key, *sizes: {"head": sizes[2] // sizes[3], "rule": _RULES[key]},
    rule="{rule}", otherwise=_shape_wrong,
    same=lambda got, out: isinstance(got, (tuple, int, float)) and got == out,
    slips=(
        Slip("linear-transposed", _shapes(_LINEARS.format(4, "shapes[k][::-1]")),
             "that is the transpose: nn.Linear computes x @ weight.T"),
        Slip("one-head", _shapes(_LINEARS.format(3, "(head, shapes[k][1])")),
             "one nn.Linear makes the features of all heads, {num_heads} x {head}"),
        Slip("keys-from-queries", _shapes(
                'shapes["W_key"] = shapes["W_value"] = (d_out, d_in)',
                'shapes["num_parameters"] = d_out * (3 * d_in + d_out + 1)'),
             "keys and values are made from the memory, d_memory = {d_memory} wide"),
        Slip("weights-transposed", _shapes(weights="(B, H, T_k, T_q)"),
             "rows are queries and columns keys"),
        Slip("weights-no-heads", (_shapes(weights="(B, T_q, T_k)"),
                                  _shapes(weights="(T_q, T_k)")),
             "each head has its own weights: keep the head dimension H"),
        Slip("output-per-key", _shapes(output="(B, T_k, d_out)"),
             "there are T_q queries, the T_k keys are what each one reads"),
        Slip("output-by-head", (_shapes(output="(B, H, T_q, head)"),
                                _shapes(output="(B, T_q, head)")),
             "out_proj gets the heads glued back together"),
        Slip("biases", (_shapes(num_parameters="shapes['num_parameters'] - d_out"),
                        _shapes(num_parameters="shapes['num_parameters'] + 3 * d_out")),
             "only out_proj has a bias, of d_out numbers (qkv_bias=False)"),
    ),
)  # fmt: skip


@exercise_check("answer")
def check_cross_attention_shapes(
    answer, *, d_in, d_memory, d_out, num_heads, batch_size, T_q, T_k
):
    """Check the shapes and parameter count predicted for a CrossAttention of these
    sizes, as a dict. Introduced in Chapter 6."""
    sizes = (d_in, d_memory, d_out, num_heads, batch_size, T_q, T_k)
    names = SHAPES.parameters[1:]
    sizes = [require_int(n, name) for n, name in zip(sizes, names, strict=True)]
    setting = f"CrossAttention(d_in={d_in}, d_out={d_out}, num_heads={num_heads}, "
    setting += f"d_memory={d_memory}) on {T_q} queries and {T_k} keys"
    judge_entries(SHAPES, answer, sizes, setting)


def _detector_cases():
    """A causal decoder and one without the causal mask, each on two batches."""
    from ..seq2seq import Seq2SeqConfig, Seq2SeqTransformer

    with seeded(0):
        configs = [
            Seq2SeqConfig(11, 13, 16, 2, 1, 32, causal_decoder=c) for c in (True, False)
        ]
        models = [Seq2SeqTransformer(config).eval() for config in configs]
    g, sizes = torch.Generator().manual_seed(6), ((2, 6), (2, 5), (3, 4), (3, 7))
    ids = [torch.randint(3, 11, size, generator=g) for size in sizes]
    return [(model, ids[i], ids[i + 1]) for i in (0, 2) for model in models]


_CHANGE = """\
    changed = tgt_in.clone()
    changed[:, {0}] = (changed[:, {0}] - 2) % 10 + 3  # another real token
    before, after = model(src, tgt_in), model(src, changed)
    return {1}torch.equal(before{2}, after{2})
"""

FUTURE = Exercise(
    label="ch06-ex-leak", check="check_future_detector", parameter="fn",
    function="sees_the_future(model, src, tgt_in)", output="answer",
    right=_CHANGE.format(-1, "not ", "[:, :-1]"), cases=_detector_cases,
    describe=lambda model, src, tgt_in: ("a causal decoder" if model.config.
        causal_decoder else "a decoder without the causal mask") + f" and tgt_in of "
        f"shape {tuple(tgt_in.shape)}",
    rule="False for a causal decoder, True without the causal mask, as some logit then "
    "depends on a later target token",
    otherwise=lambda got, *_: f"it is {kind_of(got)}, not True or False",
    fix="change a copy instead: changed = tgt_in.clone().",
    slips=(
        Slip("all-positions", _CHANGE.format(-1, "not ", ""), "the positions from the "
             "changed one on may change in any decoder: compare the ones before it"),
        Slip("inverted", _CHANGE.format(-1, "", "[:, :-1]"),
             "it is the wrong way round: True must mean that the logits DO change"),
        Slip("first-token", _CHANGE.format(0, "not ", "[:, :0]"), "changing the first "
             "token leaves no position before it to compare: change the last one"),
    ),
)  # fmt: skip
check_future_detector = FUTURE.make_check()
