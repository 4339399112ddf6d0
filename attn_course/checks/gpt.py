"""Self-checks for Chapter 8, the transformer block and a tiny GPT.

Shapes
------
Letters: see attn_course.shapes.
ids : (N,)
inputs, targets : (T,)
logits : (B, V)
"""

from __future__ import annotations

import functools
import itertools

import torch

from ..gpt import GPT, GPTConfig
from ..training import count_parameters
from ._common import (
    as_count,
    expect_pair,
    expect_shape,
    expect_tensor,
)
from ._kit import (
    Case,
    Slip,
    exercise_check,
    explainer,
    first_slip,
    run_cases,
)
from .table import Exercise
from .table import Slip as CodeSlip

__all__ = ["check_gpt_parameters_fn", "check_make_example_fn", "check_top_k_fn"]


# --- the parameters of a GPT --------------------------------------------------------

# (V, T, D, L, num_heads): the chapter's model first, then a GPT-2-sized one, one
# block only, odd widths, and a wide vocabulary on a narrow model.
_CONFIGS = (
    (103, 64, 96, 4, 4),
    (50257, 1024, 768, 12, 12),
    (65, 32, 64, 1, 4),
    (13, 9, 10, 5, 1),
    (1000, 256, 48, 6, 4),
)


@functools.cache
def _model_parameters(V, T, D, L, num_heads):
    """``count_parameters`` of a real GPT with these sizes and every other setting
    at its default, built on the meta device (no memory, no random numbers)."""
    config = GPTConfig(
        vocab_size=V, context_length=T, d_model=D, num_layers=L, num_heads=num_heads
    )
    with torch.device("meta"):
        return count_parameters(GPT(config))


def _gpt_parameter_cases():
    """Cases ``(V, T, D, L)``, each with the parameter count of the real model."""
    return [
        Case(
            f"V={V}, T={T}, D={D}, L={L}",
            (V, T, D, L),
            _model_parameters(V, T, D, L, H),
        )
        for V, T, D, L, H in _CONFIGS
    ]


def _count(
    V,
    T,
    D,
    L,
    *,
    tied=True,
    positions=True,
    block_norms=True,
    final_norm=True,
    norm_vectors=2,
    d_ff=4,
    ff_bias=True,
    out_bias=True,
    qkv_bias=False,
    head_bias=False,
    blocks=None,
):
    """The parameters of a GPT counted part by part; the keywords describe a
    mistaken count (the defaults give the right one). ``d_ff`` is the multiple of
    ``D``; ``blocks`` the number of blocks counted, ``L`` if None."""
    norm = norm_vectors * D  # a LayerNorm: a weight and a bias of D numbers each
    attention = 4 * D * D + 3 * D * qkv_bias + D * out_bias  # q, k, v, out_proj
    hidden = d_ff * D
    feed_forward = 2 * D * hidden + (hidden + D) * ff_bias
    block = attention + feed_forward + 2 * norm * block_norms
    return (
        V * D * (1 if tied else 2)  # the output layer reuses the token embedding
        + T * D * positions
        + (L if blocks is None else blocks) * block
        + norm * final_norm
        + V * head_bias
    )


# Known mistakes in counting: the keywords of _count that make one, and what it
# does ({amount} is how many parameters it adds or removes). The order is the
# order of the explanation.
_COUNT_SLIPS = (
    (
        {"tied": False},
        "the output layer is counted on its own ({amount}: V * D); its weight IS "
        "the token embedding's matrix (weight tying), so those numbers count once",
    ),
    (
        {"positions": False},
        "the position table is missing ({amount}: T * D); the model learns one "
        "vector of D numbers per position",
    ),
    (
        {"block_norms": False},
        "the two LayerNorms of every block are missing ({amount}: 2 * 2 * D per "
        "block); each has a weight and a bias of D numbers",
    ),
    (
        {"final_norm": False},
        "the final LayerNorm, after the last block, is missing ({amount}: 2 * D, "
        "its weight and bias)",
    ),
    (
        {"norm_vectors": 1},
        "each LayerNorm is counted with one vector of D numbers ({amount}: D per "
        "LayerNorm); it has two, a weight (a scale) and a bias (a shift)",
    ),
    (
        {"d_ff": 2},
        "the hidden width of the feed-forward network is taken as 2 * D ({amount} "
        "over the blocks); by default d_ff = 4 * D",
    ),
    (
        {"d_ff": 1},
        "the hidden width of the feed-forward network is taken as D ({amount} over "
        "the blocks); by default d_ff = 4 * D",
    ),
    (
        {"ff_bias": False},
        "the biases of the two feed-forward layers are missing ({amount}: d_ff + D "
        "per block)",
    ),
    (
        {"out_bias": False},
        "the bias of attention's out_proj is missing ({amount}: D per block); "
        "out_proj has a bias even though qkv_bias=False",
    ),
    (
        {"qkv_bias": True},
        "query, key and value biases are counted ({amount}: 3 * D per block); by "
        "default qkv_bias=False, and those three projections have no bias",
    ),
    (
        {"head_bias": True},
        "the output layer is given a bias ({amount}: V); it has none",
    ),
    (
        {"blocks": 1},
        "only one block is counted ({amount}); there are L = num_layers blocks, "
        "each with weights of its own",
    ),
)


def _count_slips(V, T, D, L):
    """A :class:`Slip` for every mix of one, two or three known mistakes (fewer
    first), whose explanation says what each adds or removes, and how much."""
    slips = []
    for size in (1, 2, 3):
        for mix in itertools.combinations(_COUNT_SLIPS, size):
            keys = [key for changes, _ in mix for key in changes]
            if len(set(keys)) < len(keys):  # two hidden widths at once
                continue
            parts, changes, before = [], {}, _count(V, T, D, L)
            for change, text in mix:
                changes.update(change)
                after = _count(V, T, D, L, **changes)
                if after == before:  # e.g. one block counted when L = 1
                    break
                parts.append(text.format(amount=f"{after - before:+,}"))
                before = after
            else:
                if len(parts) == 1:
                    why = f"It looks like {parts[0]}."
                else:
                    why = "It looks like\n" + "\n".join(f"  - {p};" for p in parts)
                    why = why[:-1] + "."
                slips.append(Slip(before, why))
    return slips


@exercise_check("gpt_parameters")
def check_gpt_parameters_fn(gpt_parameters):
    """Check a formula for the number of parameters of a GPT.

    Introduced in Chapter 8. ``gpt_parameters(V, T, D, L)`` must return the number
    of trainable numbers in ``GPT(GPTConfig(vocab_size=V, context_length=T,
    d_model=D, num_layers=L))`` with every other setting at its default: a token
    embedding, a learned position table, ``L`` pre-norm blocks (attention without
    query, key and value biases, an ``out_proj`` with a bias, a feed-forward
    network of width ``d_ff = 4 * D`` with biases, two LayerNorms), a final
    LayerNorm, and an output layer without bias whose weight is the token
    embedding's. The reference is ``count_parameters`` of real models (built on
    the meta device), for 5 configurations. There are no tensors: the function
    returns a number.

    Parameters
    ----------
    gpt_parameters : callable
        Your formula: takes ``(V, T, D, L)``, returns an int.

    Returns
    -------
    None
        Prints one line starting with ✅ when all configurations match.

    Raises
    ------
    AssertionError
        On the first configuration where the function raises, does not return a
        whole number, or returns a wrong count. The usual slips are solved from
        the difference, up to three at once, and each is named with how many
        parameters it adds or removes: the output layer counted apart from the
        token embedding, the position table or LayerNorms forgotten, LayerNorms
        with one vector, the biases of the feed-forward layers or of ``out_proj``
        forgotten, query, key and value biases added, ``d_ff`` taken as ``2 * D``
        or ``D``, a bias on the output layer, one block counted.
    TypeError
        If ``gpt_parameters`` is not a function, e.g. a count it returned.

    Examples
    --------
    >>> def gpt_parameters(V, T, D, L):
    ...     block = 4 * D * D + D + 8 * D * D + 5 * D + 4 * D
    ...     return V * D + T * D + L * block + 2 * D
    >>> check_gpt_parameters_fn(gpt_parameters)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_gpt_parameters_fn: your formula matches count_parameters of GPT in all
    5 configurations, e.g. 462,432 for the chapter's model (V=103, T=64, D=96,
    L=4) and 124,412,160 for V=50257, T=1024, D=768, L=12 (GPT-2 small itself has
    124,439,808: its query, key and value projections have biases).
    """
    check = "check_gpt_parameters_fn"
    cases = _gpt_parameter_cases()

    def verify(case, got):
        expected = case.data
        got = as_count(got, check, case.description, "the number of parameters")
        if got == expected:
            return
        off = got - expected
        why = first_slip(got, _count_slips(*case.args), atol=0, rtol=0)
        if why is None:
            why = (
                "Count every part once: the token embedding, the position table; in "
                "each block the four attention projections, the two feed-forward "
                "layers and the two LayerNorms; the final LayerNorm; and the output "
                "layer, whose weight is the token embedding's."
            )
        raise AssertionError(
            f"{check}: for {case.description} your function returned {got:,}, but "
            f"the model has {expected:,} parameters: yours are {abs(off):,} too "
            f"{'many' if off > 0 else 'few'}. {why}"
        )

    chapter, gpt2 = cases[0], cases[1]
    _, _, D, L = gpt2.args
    with_biases = gpt2.data + 3 * D * L  # + a bias of D for q, k, v in every block
    run_cases(
        check,
        gpt_parameters,
        cases,
        verify,
        example="gpt_parameters",
        success=f"your formula matches count_parameters of GPT in all {len(cases)} "
        f"configurations, e.g. {chapter.data:,} for the chapter's model "
        f"({chapter.description}) and {gpt2.data:,} for {gpt2.description} "
        f"(GPT-2 small itself has {with_biases:,}: its query, key and "
        "value projections have biases).",
    )


# --- inputs and targets -------------------------------------------------------------


def _make_example_cases():
    """``(ids, start, T)`` for check_make_example_fn: distinct ids, so that every
    shift of the window gives other ids; the first case tells every slip apart,
    then the first start and the last valid one."""
    generator = torch.Generator().manual_seed(0)
    inputs = [(20, 5, 6), (16, 0, 8), (24, 18, 5), (12, 0, 11)]
    cases = []
    for N, start, T in inputs:
        ids = torch.randperm(100, generator=generator)[:N]  # (N,) distinct ids
        last = " (the last valid start)" if start == N - T - 1 else ""
        text = f"{N} random ids with start={start}{last} and T={T}"
        cases.append(Case(text, (ids, start, T)))
    return cases


def _fmt_ids(ids):
    """Token ids as ``[12, 7, ...]`` (at most 12 shown)."""
    values = [int(i) for i in ids.reshape(-1)[:12]]
    more = f", ... ({ids.numel()} ids)" if ids.numel() > 12 else ""
    return "[" + ", ".join(map(str, values)) + more + "]"


def _window_slips(part, T, start):
    """Slips in the length of the learner's ``part`` (``"inputs"`` or
    ``"targets"``) of a window of ``T`` ids."""
    return [
        Slip(
            lambda answer: answer.dim() == 0,
            f"a single id (shape ()): the model predicts at EVERY position of the "
            f"window, so the {part} hold T = {T} ids, one per position"
            + (
                ", not only the id after the window"
                if part == "targets"
                else ", the whole window"
            ),
        ),
        Slip(
            lambda answer: part == "targets" and tuple(answer.shape) == (1,) != (T,),
            "one id, shape (1,): that is the target of the LAST position only; the "
            f"model predicts at every position, so the targets hold T = {T} ids",
        ),
        Slip(
            lambda answer: tuple(answer.shape) == (0,) and part == "targets",
            "no id at all, shape (0,)"
            + (
                f": with start={start}, ids[start - 1:...] starts at -1, the LAST "
                "id, and such a slice is empty. The targets are the ids AFTER each "
                "position, one to the right, not one to the left"
                if start == 0
                else ""
            ),
        ),
        Slip(
            lambda answer: tuple(answer.shape) == (T + 1,),
            f"T + 1 = {T + 1} ids, one too many: a slice ids[a:b] holds b - a ids, "
            "the end index is not included",
        ),
        Slip(
            lambda answer: tuple(answer.shape) == (T - 1,),
            f"T - 1 = {T - 1} ids, one too few: a slice ids[a:b] holds b - a ids; "
            f"the {part} need all T = {T}",
        ),
    ]


def _expect_ids(answer, expected, name, where, *, slips, hint=""):
    """Raise unless the learner's ids are ``expected``; name the first of
    ``slips`` that they match, or end with ``hint``."""
    if torch.equal(answer, expected):
        return
    why = first_slip(answer, slips, atol=0, rtol=0) or hint
    wrong = answer != expected  # (T,)
    first = int(wrong.nonzero()[0])
    raise AssertionError(
        f"{name}{where}: {int(wrong.sum())} of {expected.numel()} ids are not the "
        f"right ones; the first is at index {first}, where yours is "
        f"{int(answer[first])}.\n  yours: {_fmt_ids(answer)}"
        + (f"\n{why}" if why else "")
    )


def _ids_tensor(answer, part, check, where, T, start):
    """The learner's ``part`` as a LongTensor of the window's shape, or an
    AssertionError that names the slip."""
    name = f"{check}: your {part}"
    answer = expect_tensor(answer, name, where)
    if answer.is_floating_point() or answer.dtype == torch.bool:
        raise AssertionError(
            f"{name}{where} have dtype {answer.dtype}; token ids are integers: keep "
            "the dtype of ids (torch.long) by slicing it, since an nn.Embedding "
            "looks up integer ids and cross_entropy wants integer targets."
        )
    if answer.dtype != torch.long:
        raise AssertionError(
            f"{name}{where} have dtype {answer.dtype}; token ids are torch.long "
            "(int64), the dtype of ids, and a slice keeps it: drop the conversion. "
            "The targets go to F.cross_entropy, which stops on int32 ones "
            '("expected target dtype to be Long or Byte, but got Int"), and they '
            "are the same ids as the inputs, one step on."
        )
    why = first_slip(answer, _window_slips(part, T, start))
    if why:
        raise AssertionError(f"{name}{where} hold {why}.")
    expect_shape(answer, torch.empty(T), name, where)
    return answer


@exercise_check("make_example")
def check_make_example_fn(make_example):
    """Check a function that cuts one training example out of a sequence of ids.

    Introduced in Chapter 8. ``make_example(ids, start, T)`` must return the pair
    ``(inputs, targets)``: the ``T`` ids of the 1-D tensor ``ids`` that start at
    position ``start``, and for each of them the id that follows it in ``ids``,
    the one the model must predict there: ``ids[start:start + T]`` and
    ``ids[start + 1:start + T + 1]``. Checked on 4 random sequences of distinct
    ids, with ``start = 0`` and the last valid start, ``len(ids) - T - 1``.

    Parameters
    ----------
    make_example : callable
        Your function: takes a LongTensor ``(N,)`` and two ints, returns a pair
        of LongTensors ``(T,)``.

    Returns
    -------
    None
        Prints one line starting with ✅ when the function is right on every case.

    Raises
    ------
    AssertionError
        If the function raises, changes ``ids``, or returns something other than
        the pair; the usual slips are named: targets equal to the inputs (no
        shift), targets shifted the wrong way or by two, a window one id too long
        or too short, only the id after the window as target, the inputs and
        targets swapped, float ids, integer ids of another dtype than torch.long
        (int32 targets make ``F.cross_entropy`` fail).
    TypeError
        If ``make_example`` is not a function.

    Shapes
    ------
    Letters: see attn_course.shapes.
    ids : (N,)
    inputs, targets : (T,)

    Examples
    --------
    >>> def make_example(ids, start, T):
    ...     return ids[start:start + T], ids[start + 1:start + T + 1]
    >>> check_make_example_fn(make_example)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_make_example_fn: make_example cuts the right window and shifts it by
    one for the targets on 4 sequences, from start = 0 to the last valid start,
    and leaves ids alone.
    """
    check = "check_make_example_fn"

    def verify(case, result):
        (ids, start, T), where = case.args, case.where
        right_inputs = ids[start : start + T]  # (T,)
        right_targets = ids[start + 1 : start + T + 1]  # (T,): the next ids
        inputs, targets = expect_pair(result, check, where, "(inputs, targets)")
        inputs = _ids_tensor(inputs, "inputs", check, where, T, start)
        targets = _ids_tensor(targets, "targets", check, where, T, start)
        if torch.equal(inputs, right_targets) and torch.equal(targets, right_inputs):
            raise AssertionError(
                f"{check}{where}: your inputs and targets are swapped: the inputs "
                "are the window itself, the targets the window moved one position "
                "to the right. Return them in that order: `return inputs, targets`."
            )
        _expect_ids(
            inputs,
            right_inputs,
            f"{check}: your inputs",
            where,
            slips=[
                Slip(
                    right_targets,
                    "Your inputs start one position late: the window begins at "
                    "ids[start], position start itself.",
                ),
                Slip(
                    ids[start - 1 : start + T - 1] if start else None,
                    "Your inputs start one position early: the window begins at "
                    "ids[start], position start itself.",
                ),
            ],
            hint="The inputs are the T ids of ids from position start on.",
        )
        _expect_ids(
            targets,
            right_targets,
            f"{check}: your targets",
            where,
            slips=[
                Slip(
                    right_inputs,
                    "Your targets are the inputs themselves, with no shift: the "
                    "model would learn to copy the token it reads. At each position "
                    "it must predict the NEXT id, so the targets are the window "
                    "moved one position to the right.",
                ),
                Slip(
                    ids[start - 1 : start + T - 1] if start else None,
                    "Your targets are shifted the wrong way: each is the id BEFORE "
                    "its position. The target of a position is the id after it, "
                    "the window moved one position to the right.",
                ),
                Slip(
                    ids[start + 2 : start + T + 2]
                    if start + T + 2 <= ids.numel()
                    else None,
                    "Your targets are shifted by two: each is the id two positions "
                    "ahead. The target of a position is the very next id.",
                ),
            ],
            hint="The target of each position of the window is the id that follows "
            "it in ids.",
        )

    run_cases(
        check,
        make_example,
        _make_example_cases(),
        verify,
        example="make_example",
        who="make_example",
        fix="a slice of ids is a view of ids: writing into the slice writes into "
        "ids. Leave the slices as they are, or .clone() one before changing it.",
        names=("ids", "", ""),
        success="make_example cuts the right window and shifts it by one for the "
        "targets on 4 sequences, from start = 0 to the last valid start, and leaves "
        "ids alone.",
    )


# --- top-k filtering ----------------------------------------------------------------


def _top_k_cases():
    """``(logits, k)``: random logits without ties; the first case tells every
    slip apart."""
    generator = torch.Generator().manual_seed(0)
    sizes = [(3, 10, 2), (1, 5, 1), (3, 5, 5), (1, 10, 2), (3, 10, 1)]
    return [(2 * torch.randn(B, V, generator=generator), k) for B, V, k in sizes]


def _filtered_wrong(answer, expected, subject):
    """Which entries of filtered logits are wrong, and how (no slip matched)."""
    answer = expect_tensor(answer, subject)
    expect_shape(answer, expected, subject)
    top = torch.isfinite(expected)  # (B, V): each row's k largest
    removed = answer == float("-inf")
    problems = [
        (answer.isnan(), "are NaN"),
        (~top & ~removed & ~answer.isnan(), "outside the k largest are not -inf"),
        (top & removed, "among the k largest are -inf"),
        (top & ~removed & (answer != expected), "among the k largest are changed"),
    ]
    found = [f"{int(m.sum())} entries {text}" for m, text in problems if m.any()]
    return "; ".join(found) or f"its dtype is {answer.dtype}, not {expected.dtype}"


_explain_top_k = explainer(
    (
        (
            "must match the size of tensor",
            " The k-th largest values of the rows, torch.topk(...).values[:, -1], "
            "have shape (B,), which does not line up with the rows of (B, V): keep a "
            "dimension, .values[:, -1:] of shape (B, 1), so that each row is "
            "compared with its own k-th largest.",
        ),
    )
)

_KTH = "    kth = torch.topk(logits, k, dim=-1).values[:, -1:]  # (B, 1)\n"
_INF = 'float("-inf")'

TOP_K = Exercise(
    label="ch08-ex-topk",
    check="check_top_k_fn",
    function="top_k_logits(logits, k)",
    output="logits",
    right=f"{_KTH}    return logits.masked_fill(logits < kth, {_INF})\n",
    cases=_top_k_cases,
    describe=lambda logits, k: (
        f"random logits of shape {tuple(logits.shape)} with k={k}"
    ),
    facts=lambda logits, k: {"more": k + 1, "fewer": k - 1},
    rule="keep the k largest logits of each row as they are, and set every other "
    "entry to float('-inf')",
    tolerance=1e-6,
    otherwise=_filtered_wrong,
    explain=_explain_top_k,
    fix="return a new tensor: logits.masked_fill(...) (no underscore) leaves the "
    "logits as they are.",
    slips=(
        CodeSlip(
            "smallest",
            "    kth = torch.topk(logits, k, dim=-1, largest=False).values[:, -1:]\n"
            f"    return logits.masked_fill(logits > kth, {_INF})\n",
            "you kept the k SMALLEST logits of each row, the LEAST likely tokens: "
            "torch.topk returns the largest by default",
        ),
        CodeSlip(
            "fill-zero",
            f"{_KTH}    return logits.masked_fill(logits < kth, 0.0)\n",
            "the tokens outside the top k are set to 0 instead of -inf. 0 is a normal "
            "logit: softmax gives it a probability exp(0) / sum > 0. Only "
            "float('-inf') gives probability exactly 0",
        ),
        CodeSlip(
            "fill-large-negative",
            f"{_KTH}    return logits.masked_fill(logits < kth, -1e9)\n",
            "the tokens outside the top k are set to a large negative number instead "
            "of -inf; its probability is small but not always exactly 0",
        ),
        CodeSlip(
            "whole-batch",
            "    kth = torch.topk(logits.flatten(), k).values[-1]\n"
            f"    return logits.masked_fill(logits < kth, {_INF})\n",
            "you kept the k largest logits of the whole BATCH, not of each row: take "
            "torch.topk along the last dimension, dim=-1",
        ),
        CodeSlip(
            "one-threshold",
            "    kth = torch.topk(logits, k, dim=-1).values.min()\n"
            f"    return logits.masked_fill(logits < kth, {_INF})\n",
            "every row is cut at ONE threshold, the smallest k-th largest logit of all "
            "rows, so some rows keep more than k tokens: compare each row with its "
            "own k-th largest, of shape (B, 1)",
        ),
        CodeSlip(
            "one-too-many",
            "    kth = torch.topk(logits, k + 1, dim=-1).values[:, -1:]\n"
            f"    return logits.masked_fill(logits < kth, {_INF})\n",
            "you kept k + 1 = {more} logits per row, one too many: the k-th largest "
            "is the last of torch.topk(logits, k, dim=-1).values",
        ),
        CodeSlip(
            "one-too-few",
            f"{_KTH}    return logits.masked_fill(logits <= kth, {_INF})\n",
            "you kept k - 1 = {fewer} logits per row, one too few: the k-th largest "
            "itself must stay (logits < kth, not <=)",
        ),
        CodeSlip(
            "probabilities",
            f"{_KTH}    return torch.softmax(logits.masked_fill(logits < kth, {_INF}), "
            "dim=-1)\n",
            "you returned probabilities (a softmax), not logits: the sampling step "
            "applies the softmax itself",
        ),
        CodeSlip(
            "mask",
            f"{_KTH}    return logits >= kth\n",
            "this is a bool mask (which tokens to keep), not logits: use it, "
            "logits.masked_fill(~keep, float('-inf'))",
        ),
        CodeSlip(
            "indices",
            "    return torch.topk(logits, k, dim=-1).indices\n",
            "these are the indices of the k largest logits (torch.topk(...).indices); "
            "return the logits, shape (B, V), with the others set to -inf",
        ),
        CodeSlip(
            "values",
            "    return torch.topk(logits, k, dim=-1).values\n",
            "these are only the k largest values (torch.topk(...).values): sampling "
            "needs a score for every token of the vocabulary",
        ),
        CodeSlip(
            "pair",
            "    return torch.topk(logits, k, dim=-1)\n",
            "this is the pair (values, indices) that torch.topk returns: return ONE "
            "tensor, the logits with every entry below the k-th largest set to -inf",
        ),
    ),
)
check_top_k_fn = TOP_K.make_check()
