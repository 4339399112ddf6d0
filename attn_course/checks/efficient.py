"""Self-checks for Chapter 9, efficient attention: one step of online softmax, the
largest batch whose KV caches fit a memory budget, and a dilated sliding-window
mask.

Shapes
------
Letters: see attn_course.shapes.
m, s : (T_q,)
block : (T_q, T_k)
mask : (T, T)
"""

from __future__ import annotations

import functools
import itertools
import math

import torch

from ..gpt import GPTConfig
from ..kv_cache import kv_cache_numbers
from ._common import (
    INVERTED,
    as_count,
    expect_close,
    expect_pair,
    expect_shape,
    expect_tensor,
    fmt_shape,
    fmt_values,
)
from ._kit import (
    Case,
    Slip,
    call,
    exercise_check,
    explainer,
    first_slip,
    matches,
    passed,
    require_callable,
    run_cases,
    seeded,
)
from .table import Exercise
from .table import Slip as CodeSlip

__all__ = ["check_dilated_mask_fn", "check_largest_batch_fn", "check_online_step_fn"]

_MINUS_INF = float("-inf")


# --- one step of online softmax ------------------------------------------------------


def _step(m, s, block):
    """The right ``(m_new, s_new)`` in float64: a running maximum and a running sum
    of ``exp(x - m)`` after one more block; where every score so far is -inf,
    ``m_new`` stays -inf and ``s_new`` is 0.

    Shapes
    ------
    Letters: see attn_course.shapes.
    m, s : (T_q,)
    block : (T_q, T_k)
    m_new, s_new : (T_q,)
    """
    m, s, block = (t.to(torch.float64) for t in (m, s, block))
    m_new = torch.maximum(m, block.amax(dim=-1))  # (T_q,)
    safe = m_new.masked_fill(torch.isneginf(m_new), 0.0)  # exp(-inf - 0) = 0
    terms = torch.exp(block - safe[:, None]).sum(dim=-1)  # (T_q,)
    return m_new, s * torch.exp(m - safe) + terms


def _online_cases():
    """``(m, s, block)`` for check_online_step_fn, float32 like a notebook's
    tensors, never as many rows as columns. The first case tells the slips apart:
    every row's maximum grows."""
    generator = torch.Generator().manual_seed(0)

    def scores(rows, columns):
        return 2 * torch.randn(rows, columns, generator=generator)

    def sums(rows):  # a running sum after at least one visible score is >= 1
        return 1 + 3 * torch.rand(rows, generator=generator)

    cases = []
    block = scores(3, 5)
    below = block.amax(dim=-1) - 1 - torch.rand(3, generator=generator)
    cases.append(
        Case(
            "a block whose maximum is larger than m in every row (3 rows, 5 scores)",
            (below, sums(3), block),
        )
    )
    block = scores(4, 3)
    above = block.amax(dim=-1) + 0.5 + torch.rand(4, generator=generator)
    cases.append(
        Case(
            "a block whose maximum is smaller than m in every row (4 rows, 3 scores)",
            (above, sums(4), block),
        )
    )
    cases.append(
        Case(
            "the first block, with m = -inf and s = 0 (2 rows, 4 scores)",
            (torch.full((2,), _MINUS_INF), torch.zeros(2), scores(2, 4)),
        )
    )
    block = scores(4, 6)
    block[0, ::2] = _MINUS_INF  # masked keys in a row whose maximum grows
    block[1, 1:4] = _MINUS_INF
    block[2] = _MINUS_INF  # every key of this block masked, some seen before
    m = block.amax(dim=-1) - 0.5  # (4,): the maximum grows in rows 0, 1 and 3
    m[2] = 0.7
    cases.append(
        Case(
            "a block with masked keys (-inf scores), one row of it all -inf "
            "(4 rows, 6 scores)",
            (m, sums(4), block),
        )
    )
    block = scores(3, 4)
    block[0] = _MINUS_INF  # nothing visible in this row so far
    block[2, :2] = _MINUS_INF
    m = torch.tensor([_MINUS_INF, _MINUS_INF, 0.3])
    s = torch.tensor([0.0, 0.0, 1.8])
    cases.append(
        Case(
            "row 0 with every key masked so far: m = -inf, s = 0 and a block of -inf "
            "(3 rows, 4 scores)",
            (m, s, block),
        )
    )
    return cases


def _fold_rows():
    """The rows that check_online_step_fn folds the learner's step over: 4 rows of
    32 scores, row 0 padded on the left (its first block of 8 is all -inf) and a
    few masked keys in row 2.

    Shapes
    ------
    Letters: see attn_course.shapes.
    output : (T_q, T_k)
    """
    generator = torch.Generator().manual_seed(1)
    x = 3 * torch.randn(4, 32, generator=generator)
    x[0, :8] = _MINUS_INF
    x[2, 5:11] = _MINUS_INF
    return x


_FOLD_BLOCK = 8
_FOLD_TOLERANCE = 1e-5
_FOLD_TOLERANCE_TEXT = "1e-5"


def _sum_slips(m, s, block, m_new):
    """Known ways to get ``s_new`` wrong, each as the value it gives (float64)."""
    m, s, block, m_new = (t.to(torch.float64) for t in (m, s, block, m_new))
    new = torch.exp(block - m_new[:, None]).sum(dim=-1)  # the block's right terms
    rescale = torch.exp(m - m_new)
    return [
        Slip(
            s + new,
            "The old sum is not rescaled. Its terms are exp(x - m), taken with the "
            "old maximum; when the maximum grows they must become exp(x - m_new): "
            "multiply s by exp(m - m_new) before adding the block's terms.",
        ),
        Slip(
            s * torch.exp(m_new - m) + new,
            "The old sum is rescaled the wrong way, by exp(m_new - m), which is "
            "larger than 1 when the maximum grows. Each old term exp(x - m) times "
            "exp(m - m_new) is exp(x - m_new): the factor is exp(m - m_new), at "
            "most 1.",
        ),
        Slip(
            s * rescale + torch.exp(block).sum(dim=-1),
            "The block's exponentials are taken without subtracting the maximum: "
            "exp(block) instead of exp(block - m_new[:, None]). Every term of the "
            "running sum is relative to the running maximum, so that it is at most 1.",
        ),
        Slip(
            s * rescale + torch.exp(block - m[:, None]).sum(dim=-1),
            "The block's exponentials subtract the OLD maximum m: they must "
            "subtract m_new, the maximum the whole sum is now relative to.",
        ),
        Slip(
            s + torch.exp(block - m[:, None]).sum(dim=-1),
            "The sum stays relative to the old maximum m (s is not rescaled and the "
            "block's terms subtract m), but the maximum returned is m_new: the pair "
            "no longer fits together. Make the whole sum relative to m_new: "
            "s * exp(m - m_new) + the sum of exp(block - m_new[:, None]).",
        ),
        Slip(
            (s + new) * rescale,
            "The factor exp(m - m_new) is applied to the block's terms too. Only the "
            "old sum needs it; the block's terms exp(block - m_new[:, None]) already "
            "use the new maximum.",
        ),
        Slip(
            new,
            "The old sum is dropped: s_new holds only this block's terms. Add them to "
            "the old sum, rescaled: s * exp(m - m_new) + ...",
        ),
    ]


def _masked_rows(expected_m):
    """The rows with every score so far -inf, as ``"row 0"`` or ``"rows 0, 2"``."""
    rows = [int(i) for i in torch.isneginf(expected_m).nonzero().reshape(-1)]
    return rows, ("row " if len(rows) == 1 else "rows ") + ", ".join(map(str, rows))


_GUARD = (
    "Where every score so far is -inf, m_new is -inf too, and exp(m - m_new) and "
    "exp(block - m_new[:, None]) take the exp of -inf - (-inf), which is NaN. "
    "In those rows, subtract a finite stand-in for m_new instead: any finite "
    "number gives the right terms there, since exp(-inf - c) = 0. That is the "
    "safe maximum of the package's online_softmax, described after the first "
    'bug of "Two ways to get it wrong"; such a row keeps m_new = -inf and gets '
    "s_new = 0."
)


def _expect_no_nan(answer, expected_m, name, where, m):
    """Raise when the learner's ``m_new`` or ``s_new`` holds NaN, naming the
    unguarded exponentials when the NaN are in rows where every score so far is
    -inf."""
    nan = torch.isnan(answer.detach().to(torch.float64))
    if not bool(nan.any()):
        return
    rows, text = _masked_rows(expected_m)
    bad = [int(i) for i in nan.nonzero().reshape(-1)]
    first = bad[0]
    if set(bad) <= set(rows):
        why = f"every score so far is -inf in {text}. {_GUARD}"
    elif bool(torch.isneginf(m[first])):
        why = (
            f"m is -inf in row {first} (no visible score before this block), and "
            "an expression such as m - m (-inf - (-inf)) or s * exp(m_new - m) "
            "(0 * inf) is NaN there. The old sum is rescaled by exp(m - m_new), "
            "which is 0 when m = -inf."
        )
    else:
        why = "check every subtraction and product of infinite values"
    raise AssertionError(
        f"{name}{where}: found NaN (not a number) at index [{first}] in "
        f"{fmt_values(answer)}: {why}"
    )


def _finite_stand_in(expected_m):
    """A predicate: the answer has a large finite negative number where the right
    ``m_new`` is -inf, and the right values elsewhere."""
    masked = torch.isneginf(expected_m)

    def gives(answer):
        answer = answer.detach().to(torch.float64)
        if answer.shape != expected_m.shape or not bool(masked.any()):
            return False
        stand_in = torch.isfinite(answer[masked]) & (answer[masked] < -1e3)
        rest = matches(answer[~masked], expected_m[~masked], atol=1e-5, rtol=1e-5)
        return bool(stand_in.all()) and rest

    return gives


def _stand_in(expected_m):
    """The slip of a large finite number where ``m_new`` must be -inf, or None when
    no row is fully masked so far."""
    rows, text = _masked_rows(expected_m)
    if not rows:
        return None
    return Slip(
        _finite_stand_in(expected_m),
        f"m_new is a large finite number in {text}, where every score so far is "
        "-inf: keep m_new = -inf there (the maximum of nothing visible), and make "
        'only the exponentials safe, as the safe maximum described in "Two ways '
        'to get it wrong" does. A large finite m_new such as -1e9 later gives a '
        "fully masked row equal weights instead of none.",
    )


def _maximum_slips(m, block, expected_m):
    """Known ways to get ``m_new`` wrong, each as the value it gives (float64)."""
    m, block = m.to(torch.float64), block.to(torch.float64)
    return [
        Slip(
            block.amax(dim=-1),
            "m_new is the block's own maximum, but the running maximum never goes "
            "down: it is the larger of m and the block's maximum, "
            "torch.maximum(m, block.amax(dim=-1)).",
        ),
        Slip(
            m if not torch.equal(m, expected_m) else None,
            "m_new is the old m, unchanged: take the larger of m and the block's "
            "maximum.",
        ),
    ]


def _expect_vector(answer, part, name, where, rows):
    """The learner's ``m_new`` or ``s_new`` as a float tensor of shape ``(rows,)``,
    or an AssertionError that says why not."""
    answer = expect_tensor(answer, name, where)
    if not answer.is_floating_point():
        raise AssertionError(
            f"{name}{where} has dtype {answer.dtype}: {part} holds real numbers; "
            "compute it from m, s and block without converting it."
        )
    if tuple(answer.shape) == (rows, rows) and part == "s_new":
        raise AssertionError(
            f"{name}{where}: wrong shape {fmt_shape(answer)}; the expected shape is "
            f"({rows},), one number per row. A ({rows},) tensor and a ({rows}, 1) "
            "tensor were combined, which broadcasts to a square: sum the block's "
            "terms with .sum(dim=-1), without keepdim=True, so that s_new has the "
            "shape of s."
        )
    expect_shape(answer, torch.empty(rows), name, where)
    return answer


_STEP_ERRORS = (
    (
        "torch.return_types.max",
        " block.max(dim=-1) gives a pair (values, indices): take its .values, or use "
        "block.amax(dim=-1), which gives the values only.",
    ),
    (
        "Boolean value of Tensor with more than one value is ambiguous",
        " Python's max(a, b) treats each tensor as one truth value; the larger of two "
        "tensors, entry by entry, is torch.maximum(a, b).",
    ),
    (
        "must match the size of tensor",
        " m_new has one number per row, shape (R,), and the block has shape (R, n): "
        "subtract m_new[:, None], of shape (R, 1), so that each row of the block "
        "gets its own maximum.",
    ),
)
_explain_step = explainer(_STEP_ERRORS)


def _verify_step(check, case, result):
    """Raise unless ``result`` is the right ``(m_new, s_new)`` for ``case``."""
    m, s, block = case.args
    where = case.where
    expected_m, expected_s = _step(m, s, block)
    rows = m.numel()
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        if isinstance(result, torch.Tensor) and result.shape == expected_s.shape:
            for value, part, other in (
                (expected_s, "s_new", "m_new"),
                (expected_m, "m_new", "s_new"),
            ):
                if matches(result, value, atol=1e-5, rtol=1e-5):
                    raise AssertionError(
                        f"{check}: your function returned only {part}{where}. The "
                        f"next step needs both numbers of each row: return the "
                        f"pair, `return m_new, s_new` ({other} is missing)."
                    )
        expect_pair(result, check, where, names="(m_new, s_new)")
    first, second = result
    if (
        isinstance(first, torch.Tensor)
        and isinstance(second, torch.Tensor)
        and not matches(first, expected_m, atol=1e-5, rtol=1e-5)
        and matches(first, expected_s, atol=1e-5, rtol=1e-5)
        and matches(second, expected_m, atol=1e-5, rtol=1e-5)
    ):
        raise AssertionError(
            f"{check}: your function returned the pair in the wrong order{where}: "
            "the first tensor holds the running sums and the second the running "
            "maxima. Return the maximum first: `return m_new, s_new`."
        )
    tolerance = {"atol": 1e-5, "rtol": 1e-5}
    name = f"{check}: your m_new"
    m_new = _expect_vector(first, "m_new", name, where, rows)
    _expect_no_nan(m_new, expected_m, name, where, m)
    stand_in = _stand_in(expected_m)
    if stand_in is not None and matches(m_new, stand_in.gives):
        raise AssertionError(
            f"{name}{where}: {stand_in.why}\n  yours: {fmt_values(m_new)}"
        )
    expect_close(
        m_new,
        expected_m,
        name,
        where,
        **tolerance,
        hint="\nm_new is the larger of m and the block's maximum, row by row.",
        slips=_maximum_slips(m, block, expected_m),
    )
    name = f"{check}: your s_new"
    s_new = _expect_vector(second, "s_new", name, where, rows)
    _expect_no_nan(s_new, expected_m, name, where, m)
    expect_close(
        s_new,
        expected_s,
        name,
        where,
        **tolerance,
        hint="\ns_new = s * exp(m - m_new) + the sum of exp(block - m_new[:, None]) "
        "over each row.",
        slips=_sum_slips(m, s, block, expected_m),
    )


_STEP_FIX = (
    "compute new tensors, m_new = torch.maximum(...) and s_new = s * ... + ..., "
    "instead of changing m or s with s *= ..., s.mul_(...) or m.copy_(...)."
)


def _fold(check, fn, rows):
    """Fold the learner's step over ``rows`` in blocks; return ``(m, s)``.

    Shapes
    ------
    Letters: see attn_course.shapes.
    rows : (T_q, T_k)
    m, s : (T_q,)
    """
    m = torch.full((rows.size(0),), _MINUS_INF)
    s = torch.zeros(rows.size(0))
    blocks = rows.split(_FOLD_BLOCK, dim=-1)
    for k, block in enumerate(blocks):
        case = Case(
            f"block {k + 1} of {len(blocks)} of the folded rows (row 0 padded on the "
            "left)",
            (m, s, block),
        )
        result = call(
            fn,
            check,
            case,
            who="online_softmax_step",
            names=("m", "s", "block"),
            fix=_STEP_FIX,
            explain=_explain_step,
        )
        _verify_step(check, case, result)
        m, s = (t.detach().to("cpu", torch.float32) for t in result)
    return m, s


@exercise_check("online_softmax_step")
def check_online_step_fn(online_softmax_step):
    """Check one step of online softmax: a running maximum and a running sum,
    updated by one block of scores.

    Introduced in Chapter 9. ``online_softmax_step(m, s, block)`` gets, for each of
    ``R`` rows, the running maximum ``m`` of the scores seen so far, the running
    sum ``s`` of ``exp(x - m)`` over them, and the next block of scores, ``(R,
    n)``. It must return the pair ``(m_new, s_new)``, each ``(R,)``:
    ``m_new = max(m, block.max(-1))`` and ``s_new = s * exp(m - m_new) +
    exp(block - m_new[:, None]).sum(-1)``, as new tensors (``m`` and ``s`` stay
    as they were). Before the first block ``m = -inf`` and ``s = 0``. A row whose
    scores so far are all ``-inf`` (every key masked) must give ``m_new = -inf``
    and ``s_new = 0``, without NaN. The reference is those two lines in float64,
    with the exponentials made safe where ``m_new = -inf``. It is tried on 5 cases
    (a larger and a smaller maximum, the first block, masked keys, a fully masked
    row), then folded over 4 rows of 32 scores in blocks of 8: its ``m +
    log(s)`` must match ``torch.logsumexp`` within 1e-5.

    Parameters
    ----------
    online_softmax_step : callable
        Your function: takes ``m``, ``s`` (float tensors ``(R,)``) and ``block`` (a
        float tensor ``(R, n)``), returns ``(m_new, s_new)``.

    Returns
    -------
    None
        Prints one line starting with ✅ when every case passes.

    Raises
    ------
    AssertionError
        If the function raises, changes ``m``, ``s`` or ``block`` in place, or
        returns something other than the right pair; the usual slips are named:
        the old sum not rescaled, or rescaled by ``exp(m_new - m)``, the block's
        exponentials taken without subtracting ``m_new`` or with the old ``m``, the
        rescale applied to the block's terms too, the old sum dropped, ``m_new``
        not taking ``m`` into account, NaN or a finite stand-in for ``-inf`` where
        every score so far is masked, only ``s_new`` returned, and the pair in the
        wrong order.
    TypeError
        If ``online_softmax_step`` is not a function.

    Shapes
    ------
    Letters: see attn_course.shapes.
    m, s : (T_q,)
    block : (T_q, T_k)
    m_new, s_new : (T_q,)

    Examples
    --------
    >>> def online_softmax_step(m, s, block):
    ...     m_new = torch.maximum(m, block.amax(dim=-1))
    ...     safe = torch.where(m_new == float("-inf"), 0.0, m_new)
    ...     terms = torch.exp(block - safe[:, None]).sum(dim=-1)
    ...     return m_new, s * torch.exp(m - safe) + terms
    >>> check_online_step_fn(online_softmax_step)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_online_step_fn: online_softmax_step is right on 5 cases (a larger and
    a smaller maximum, the first block, masked keys, a row with every key masked so
    far) and leaves m and s alone; folded over 4 blocks of 8 scores it gives m +
    log(s) = torch.logsumexp within 1e-5 on every row, the row padded on the left
    included.
    """
    check = "check_online_step_fn"
    require_callable(online_softmax_step, check, "online_softmax_step")
    cases = _online_cases()
    with seeded(0):  # run_cases, with the explanation of the step's errors
        for case in cases:
            result = call(
                online_softmax_step,
                check,
                case,
                who="online_softmax_step",
                names=("m", "s", "block"),
                fix=_STEP_FIX,
                explain=_explain_step,
            )
            _verify_step(check, case, result)
        rows = _fold_rows()
        m, s = _fold(check, online_softmax_step, rows)
    folded = m.double() + torch.log(s.double())  # (T_q,)
    expected = torch.logsumexp(rows.double(), dim=-1)
    if not bool(torch.isclose(folded, expected, atol=_FOLD_TOLERANCE, rtol=0).all()):
        raise AssertionError(
            f"{check}: folded over {len(rows.split(_FOLD_BLOCK, dim=-1))} blocks, "
            f"your steps give m + log(s) = {fmt_values(folded)}, which differs from "
            f"torch.logsumexp by more than {_FOLD_TOLERANCE_TEXT}. Each step must "
            "keep s relative to m: s * exp(m - m_new) + the block's terms."
        )
    blocks = len(rows.split(_FOLD_BLOCK, dim=-1))
    passed(
        check,
        f"online_softmax_step is right on {len(cases)} cases (a larger and a "
        "smaller maximum, the first block, masked keys, a row with every key masked "
        f"so far) and leaves m and s alone; folded over {blocks} blocks of "
        f"{_FOLD_BLOCK} scores it gives m + log(s) = torch.logsumexp within "
        f"{_FOLD_TOLERANCE_TEXT} on every row, the row padded on the left included.",
    )


# --- the largest batch whose KV caches fit a budget ----------------------------------


@functools.cache
def _configs():
    """The configurations check_largest_batch_fn uses, by name (only the configs:
    no model is built).

    The chapter's tiny GPT and GPT-2 small are those of Chapter 8. Llama 2 70B:
    80 layers, d_model 8192, 64 query heads and 8 key-value heads of width 128 are
    those of the released model (its params.json); the context of 4096 tokens is
    in Table 1 of the Llama 2 paper (Touvron et al., 2023), which lists
    grouped-query attention for the 70B model. Mistral 7B: Table 1 of its paper
    (Jiang et al., 2023): 32 layers, dim 4096, 32 heads of width 128, 8 key-value
    heads, a context of 8192 tokens and a window of 4096. Both have a vocabulary
    of 32000.
    """
    return {
        "tiny": GPTConfig(
            vocab_size=103, context_length=64, d_model=96, num_heads=4, num_layers=4
        ),
        "tiny-mqa": GPTConfig(
            vocab_size=103,
            context_length=64,
            d_model=96,
            num_heads=4,
            num_layers=4,
            num_kv_heads=1,
        ),
        "gpt2": GPTConfig(
            vocab_size=50257,
            context_length=1024,
            d_model=768,
            num_heads=12,
            num_layers=12,
        ),
        "llama2-70b": GPTConfig(
            vocab_size=32000,
            context_length=4096,
            d_model=8192,
            num_heads=64,
            num_layers=80,
            num_kv_heads=8,
        ),
        "mistral-7b": GPTConfig(
            vocab_size=32000,
            context_length=8192,
            d_model=4096,
            num_heads=32,
            num_layers=32,
            num_kv_heads=8,
        ),
    }


_GIB = 2**30

# (config, tokens, budget in bytes, bytes_per_number or None for the defaults,
# window or None, description). The first case tells the single slips apart, each
# giving a batch of its own that is not 0, and no mix of two of them gives the batch
# of one; its budget holds a fraction of a cache more than a whole number, so that
# rounding down and rounding up differ. The second fills its budget exactly, the
# fifth fits no sequence at all, and the last two have a window: one shorter than
# the sequence, one longer.
_BATCH_CASES = (
    (
        "llama2-70b",
        3072,
        121 * _GIB,
        4,
        None,
        "Llama 2 70B, sequences of 3072 tokens in float32, a budget of 121 GiB",
    ),
    (
        "llama2-70b",
        4096,
        40 * _GIB,
        None,
        None,
        "Llama 2 70B, sequences of 4096 tokens, a budget of 40 GiB, with the "
        "defaults bytes_per_number=2 and window=None",
    ),
    (
        "tiny",
        64,
        1_000_000,
        4,
        None,
        "the chapter's tiny GPT, sequences of 64 tokens in float32, a budget of "
        "1,000,000 bytes",
    ),
    (
        "gpt2",
        1024,
        _GIB,
        2,
        None,
        "GPT-2 small, sequences of 1024 tokens in float16, a budget of 1 GiB",
    ),
    (
        "llama2-70b",
        4096,
        _GIB,
        2,
        None,
        "Llama 2 70B, sequences of 4096 tokens in float16, a budget of 1 GiB",
    ),
    (
        "tiny-mqa",
        64,
        100_000,
        2,
        None,
        "the tiny GPT with num_kv_heads=1, sequences of 64 tokens in float16, a "
        "budget of 100,000 bytes",
    ),
    (
        "mistral-7b",
        8192,
        16 * _GIB,
        2,
        4096,
        "Mistral 7B with its window of 4096, sequences of 8192 tokens in float16, "
        "a budget of 16 GiB",
    ),
    (
        "mistral-7b",
        2048,
        10 * _GIB,
        2,
        4096,
        "Mistral 7B with its window of 4096, sequences of 2048 tokens (shorter "
        "than the window) in float16, a budget of 10 GiB",
    ),
)


def _cache_bytes(config, tokens, bytes_per_number=2, window=None):
    """The bytes of the keys and values of every layer for one sequence of
    ``tokens`` tokens, from the package's count: with a window, each layer keeps
    the last ``window`` tokens at most."""
    kept = tokens if window is None else min(tokens, window)
    head_dim = config.d_model // config.num_heads
    numbers = kv_cache_numbers(config.num_layers, config.num_kv_heads, head_dim, kept)
    return numbers * bytes_per_number


def _batch_cases():
    """Cases ``(config, tokens, budget_bytes[, bytes_per_number[, window]])``, each
    with the right batch, the bytes of one sequence's cache and its sizes as
    data."""
    cases = []
    for key, tokens, budget, size, window, text in _BATCH_CASES:
        config = _configs()[key]
        args = (config, tokens, budget)
        if size is not None:
            args += (size,) if window is None else (size, window)
        per_sequence = _cache_bytes(config, tokens, size or 2, window)
        sizes = {"bytes": size or 2, "tokens": tokens, "window": window}
        cases.append(Case(text, args, (budget // per_sequence, per_sequence, sizes)))
    return cases


def _cache_slip_table(config, sizes):
    """Known mistakes in the size of one sequence's cache: ``(key, factor, text)``,
    where ``factor`` is what the mistake multiplies the right size by (None when
    it cannot show in this case). Mistakes with the same key exclude each other."""
    L, H, H_kv = config.num_layers, config.num_heads, config.num_kv_heads
    D, d = config.d_model, config.d_model // config.num_heads
    b, T, w = sizes["bytes"], sizes["tokens"], sizes["window"]
    T_max = config.context_length
    kept = T if w is None else min(T, w)  # the tokens each layer keeps
    group = H // H_kv  # query heads per key-value head

    def when(condition, factor):
        return factor if condition else None

    table = [
        (
            "pair",
            1 / 2,
            "only the keys (or only the values) are counted: the cache keeps both, "
            "a key AND a value for every layer, key-value head and token, the "
            "factor 2",
        ),
        (
            "heads",
            when(H != H_kv, H / H_kv),
            f"num_heads ({H}) is used where num_kv_heads ({H_kv}) belongs, or "
            f"d_model ({D}) where num_kv_heads * head_dim ({H_kv * d}) belongs: the "
            "cache keeps the key-value heads only, each shared by num_heads // "
            f"num_kv_heads = {group} query heads",
        ),
        (
            "heads",
            when(group != H_kv, group / H_kv),
            f"num_heads // num_kv_heads ({group}), the query heads that share one "
            f"key-value head, is used where num_kv_heads ({H_kv}), the number of "
            "key-value heads, belongs",
        ),
        (
            "head_dim",
            when(H > 1, H),
            f"head_dim is taken as d_model ({D}); one head has d_model // num_heads "
            f"= {d} numbers",
        ),
        (
            "layers",
            when(L > 1, 1 / L),
            f"the layers are missing (a factor of {L}): every layer keeps keys and "
            "values of its own",
        ),
        (
            "tokens",
            when(kept > 1, 1 / kept),
            f"the tokens are missing (a factor of {kept}): every token a layer "
            "keeps adds its keys and values",
        ),
        (
            "tokens",
            when(w is not None and w < T, T / kept),
            f"the window is left out: with window={w}, each layer keeps the keys "
            f"and values of the last {w} tokens only, min(tokens, window), not all "
            f"{T}",
        ),
        (
            "tokens",
            w / kept if w is not None and w > T else None,
            f"the cache is counted for window={w} tokens, but a sequence of {T} "
            f"tokens has only {T} to keep: min(tokens, window)",
        ),
        (
            "tokens",
            # (with a window, context_length would be capped by it too: left out)
            when(w is None and T_max != T, T_max / T),
            f"config.context_length ({T_max}) is used instead of tokens ({T}): a "
            "sequence's cache holds its own tokens, not the longest context the "
            "model accepts",
        ),
        (
            "bytes",
            when(b > 1, 1 / b),
            "the cache is counted in numbers, not bytes: multiply by "
            f"bytes_per_number ({b} here) before comparing it with the budget",
        ),
    ]
    return [(key, factor, text) for key, factor, text in table if factor is not None]


def _cache_mistakes(config, sizes):
    """Every mix of one, two or three known mistakes in the size of one sequence's
    cache (fewer first, each kind at most once), as ``(parts, factor)``: their
    explanations and what they multiply the size by."""
    table = _cache_slip_table(config, sizes)
    for count in (1, 2, 3):
        for mix in itertools.combinations(table, count):
            keys = [key for key, _, _ in mix]
            if len(set(keys)) < len(keys):
                continue
            factor = math.prod(f for _, f, _ in mix)
            if not math.isclose(factor, 1.0):
                yield [text for _, _, text in mix], factor


def _explain_mistakes(found):
    """The explanation of a wrong batch from the mixes of mistakes that give it,
    all with as few mistakes as possible, or None when they cannot be told apart:
    one mix is named, and so are two single mistakes, as alternatives.

    >>> _explain_mistakes([["a slip"]])
    'It looks like a slip.'
    >>> print(_explain_mistakes([["a slip"], ["another"]]))
    It looks like one of two slips, which give the same batch here:
      - a slip;
      - another.
    >>> _explain_mistakes([["a", "b"], ["c", "d"]]) is None
    True
    """
    if len(found) == 1 and len(found[0]) == 1:
        return f"It looks like {found[0][0]}."
    if len(found) == 1:
        return "It looks like\n" + ";\n".join(f"  - {p}" for p in found[0]) + "."
    if len(found) == 2 and all(len(parts) == 1 for parts in found):
        return (
            "It looks like one of two slips, which give the same batch here:\n"
            + ";\n".join(f"  - {parts[0]}" for parts in found)
            + "."
        )
    return None


_FLOOR = (
    "A batch holds whole sequences: round down with floor division, budget_bytes "
    "// (the bytes of one sequence's cache)."
)


def _batch_slips(budget, per_sequence, config, sizes):
    """Known wrong batches for one case, as :class:`Slip` values in the order they
    are tried: the rounding slips (at least 1 first, where nothing fits, since
    rounding up gives 1 there too), then the mistakes in the size of the cache.

    A wrong size of the cache is named only when the batch it gives is not 0 and
    it can be told from the other mixes of as few mistakes that give the same
    batch (see :func:`_explain_mistakes`): rounding down makes different mistakes
    land on the same number."""
    right = budget // per_sequence
    exact = budget % per_sequence == 0
    slips = [
        Slip(
            1 if right == 0 else None,
            "Not even one sequence fits here: its cache alone is larger than the "
            "budget. Return 0 then (floor division gives it), not at least 1.",
        ),
        Slip(
            None if exact else budget / per_sequence,
            "This is budget_bytes / (bytes per sequence), not a whole number. "
            + _FLOOR,
        ),
        Slip(
            None if exact else right + 1,
            f"This is rounded up: a batch of {right + 1} needs "
            f"{(right + 1) * per_sequence:,} bytes, more than the budget. {_FLOOR}",
        ),
        Slip(
            right - 1 if exact and right > 0 else None,
            f"One sequence too few: {right} caches fill the budget exactly, and a "
            "batch that fills it exactly fits (use //, not a strict comparison).",
        ),
    ]
    fewest = {}  # batch -> the mixes with the fewest mistakes that give it
    for parts, factor in _cache_mistakes(config, sizes):
        batch = int(budget // (per_sequence * factor))
        if batch in (0, right):
            continue
        known = fewest.setdefault(batch, [parts])
        if known[0] is not parts and len(parts) == len(known[0]):
            known.append(parts)
    for batch, found in fewest.items():
        why = _explain_mistakes(found)
        if why is not None:
            slips.append(Slip(batch, why))
    return slips


@exercise_check("largest_batch")
def check_largest_batch_fn(largest_batch):
    """Check a function that gives the largest batch whose KV caches fit a budget.

    Introduced in Chapter 9. ``largest_batch(config, tokens, budget_bytes,
    bytes_per_number=2, window=None)`` must return how many sequences of
    ``tokens`` tokens a model with the :class:`attn_course.GPTConfig` ``config``
    can generate at once when their KV caches must fit in ``budget_bytes`` bytes:
    ``budget_bytes // (2 * num_layers * num_kv_heads * head_dim * kept *
    bytes_per_number)``, where ``head_dim = d_model // num_heads`` and ``kept``,
    the tokens each layer keeps, is ``tokens``, or ``min(tokens, window)`` with a
    sliding window; 0 when not even one sequence fits. The reference counts the
    cache with :func:`attn_course.kv_cache_numbers`, for 8 cases: the chapter's
    tiny GPT with 4 and with 1 key-value head, GPT-2 small, and the published
    grouped configurations of Llama 2 70B and Mistral 7B (configs only; no model
    is built), among them a budget filled exactly, one that fits no sequence, one
    with the defaults, and Mistral's window of 4096 with sequences longer and
    shorter than it.

    Parameters
    ----------
    largest_batch : callable
        Your function: takes a ``GPTConfig``, ints ``tokens``, ``budget_bytes``
        and ``bytes_per_number``, and an int or None ``window``; returns an int.

    Returns
    -------
    None
        Prints one line starting with ✅ when every case matches.

    Raises
    ------
    AssertionError
        On the first case where the function raises, does not return a number, or
        returns a wrong batch; the message names what it returned, the right
        batch and the bytes of one sequence's cache. The usual slips are named: a
        division that is not rounded down, or is rounded up, at least 1 where no
        sequence fits, one too few where the budget is filled exactly, and, up to
        three at once, the mistakes in the size of the cache: the factor 2 of keys
        and values forgotten, ``num_heads`` (or ``d_model``) used where
        ``num_kv_heads`` (or ``num_kv_heads * head_dim``) belongs, ``head_dim``
        taken as ``d_model``, the layers or the tokens forgotten,
        ``context_length`` used for ``tokens``, the window left out or counted for
        a sequence shorter than it, and numbers counted instead of bytes. Where
        two single mistakes give the same batch, both are named; where more do,
        none is (``num_heads // num_kv_heads`` in place of ``num_kv_heads`` is one
        such mistake in these cases), and the message says what to count.
    TypeError
        If ``largest_batch`` is not a function, e.g. a batch it returned.

    Examples
    --------
    >>> def largest_batch(config, tokens, budget_bytes, bytes_per_number=2,
    ...                   window=None):
    ...     kept = tokens if window is None else min(tokens, window)
    ...     head_dim = config.d_model // config.num_heads
    ...     per_token = 2 * config.num_layers * config.num_kv_heads * head_dim
    ...     return budget_bytes // (per_token * kept * bytes_per_number)
    >>> check_largest_batch_fn(largest_batch)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_largest_batch_fn: largest_batch is right on 8 cases, e.g. 32
    sequences of 4096 tokens of Llama 2 70B in 40 GiB (1.25 GiB each in
    float16), where 64 key-value heads, one per query head, would fit 4; 32
    sequences of 8192 tokens of Mistral 7B in 16 GiB, where without its window
    16 would fit; and 0 where not even one sequence fits.
    """
    check = "check_largest_batch_fn"
    cases = _batch_cases()

    def verify(case, got):
        expected, per_sequence, sizes = case.data
        config, tokens, budget = case.args[:3]
        got = as_count(got, check, case.description, "the batch", keep_floats=True)
        if isinstance(got, float) and got.is_integer():
            got = int(got)  # 32.0 sequences is a fine answer
        if got == expected:
            return
        slips = _batch_slips(budget, per_sequence, config, sizes)
        why = first_slip(got, slips, atol=0, rtol=1e-9)
        if why is None and isinstance(got, float):
            why = "Return a whole number of sequences (an int): round down with //."
        if why is None and got == 0:
            why = (
                f"Your function says no sequence fits, but {expected:,} caches fit "
                "in the budget: count the bytes of one sequence's cache again."
            )
        if why is None:
            why = (
                "Count the bytes of one sequence's cache: a key and a value of "
                "head_dim = d_model // num_heads numbers for every layer, key-value "
                "head and token the layer keeps (min(tokens, window) with a "
                "window), times bytes_per_number; then take how many whole caches "
                "fit in budget_bytes."
            )
        shown = f"{got:,}" if isinstance(got, int) else f"{got:g}"
        raise AssertionError(
            f"{check}: for {case.description}, your function returned {shown}, but "
            f"the right batch is {expected:,} (one sequence's cache takes "
            f"{per_sequence:,} bytes). {why}"
        )

    llama, mistral = cases[1], cases[6]
    batch, per_sequence, _ = llama.data
    llama_config, _, llama_budget = llama.args
    shared = llama_config.num_heads // llama_config.num_kv_heads
    mistral_config, mistral_tokens, mistral_budget, size, _ = mistral.args
    unwindowed = mistral_budget // _cache_bytes(mistral_config, mistral_tokens, size)
    run_cases(
        check,
        largest_batch,
        cases,
        verify,
        example="largest_batch",
        success=f"largest_batch is right on {len(cases)} cases, e.g. {batch} "
        f"sequences of 4096 tokens of Llama 2 70B in {llama_budget / _GIB:.0f} GiB "
        f"({per_sequence / _GIB:.2f} GiB each in float16), where "
        f"{llama_config.num_heads} key-value heads, one per query head, would fit "
        f"{llama_budget // (per_sequence * shared)}; {mistral.data[0]} sequences "
        f"of {mistral_tokens} tokens of Mistral 7B in {mistral_budget / _GIB:.0f} "
        f"GiB, where without its window {unwindowed} would fit; and 0 where not "
        "even one sequence fits.",
    )


# --- a dilated sliding window --------------------------------------------------------

# --- a dilated sliding window --------------------------------------------------------

_BACK = (
    "    i = torch.arange(T)[:, None]  # (T, 1): queries\n"
    "    j = torch.arange(T)[None, :]  # (1, T): keys\n"
    "    back = i - j\n"
)
_RIGHT = "(back >= 0) & (back % dilation == 0) & (back < window * dilation)"


def _dilated_case(T, window, dilation):
    note = ""
    if dilation == 1:
        note = " (dilation 1: the sliding window)"
    elif window == 1:
        note = " (each query sees itself only)"
    return f"T = {T}, window = {window}, dilation = {dilation}{note}"


DILATED = Exercise(
    label="ch09-ex-dilated",
    check="check_dilated_mask_fn",
    function="dilated_window_mask(T, window, dilation)",
    output="mask",
    right=f"{_BACK}    return {_RIGHT}\n",
    # The first case tells the slips apart; then dilations of 3 and of 1 (the
    # sliding window), a window that reaches past the start, a window of 1, a
    # single token, and a window longer than the sequence with dilation 1.
    cases=(
        (10, 3, 2),
        (9, 2, 3),
        (8, 3, 1),
        (6, 4, 2),
        (5, 1, 3),
        (1, 2, 2),
        (5, 7, 1),
    ),
    describe=_dilated_case,
    facts=lambda T, window, dilation: {
        "oldest": (window - 1) * dilation,
        "span": window * dilation,
        "fewer": window - 1,
        "more": window + 1,
    },
    rule="query i sees the {window} keys i, i - {dilation}, ..., i - {oldest} "
    "(i - (window - 1) * dilation) that are >= 0",
    slips=(
        CodeSlip("inverted", f"{_BACK}    return ~({_RIGHT})\n", INVERTED),
        CodeSlip(
            "into-the-future",
            f"{_BACK}    return (back % dilation == 0) & "
            "(back.abs() < window * dilation)\n",
            "the window reaches into the future: query i sees keys after it. Keep "
            "j <= i",
        ),
        CodeSlip(
            "no-lower-bound",
            f"{_BACK}    return (back % dilation == 0) & (back < window * dilation)\n",
            "the window reaches into the future: nothing keeps i - j >= 0, and a key "
            "after the query passes whenever i - j is a negative multiple of "
            "{dilation} (-{dilation} % {dilation} == 0 in PyTorch as in Python). Keep "
            "j <= i",
        ),
        CodeSlip(
            "positions-not-keys",
            f"{_BACK}    return (back >= 0) & (back % dilation == 0) & "
            "(back < window)\n",
            "the window ends {fewer} positions back, so it holds fewer than {window} "
            "keys: window counts keys, not positions, and the oldest key lies "
            "(window - 1) * dilation = {oldest} positions back",
        ),
        CodeSlip(
            "one-key-too-many",
            f"{_BACK}    return (back >= 0) & (back % dilation == 0) & "
            "(back <= window * dilation)\n",
            "each query sees window + 1 = {more} keys, one too many (back to "
            "i - window * dilation = i - {span})",
        ),
        CodeSlip(
            "multiples-of-dilation",
            f"{_BACK}    return (back >= 0) & (j % dilation == 0) & "
            "(back < window * dilation)\n",
            "your keys are the positions j that are multiples of the dilation "
            "(j % dilation == 0), the same for every query, as in the strided "
            "pattern; in a dilated window they are counted back from each query, "
            "(i - j) % dilation == 0",
        ),
        CodeSlip(
            "no-gaps",
            f"{_BACK}    return (back >= 0) & (back < window * dilation)\n",
            "there are no gaps: every key of the last {span} positions is seen. The "
            "keys must be {dilation} apart, (i - j) % dilation == 0",
        ),
        CodeSlip(
            "sliding-window",
            "    from attn_course import sliding_window_mask\n\n"
            "    return sliding_window_mask(T, window)\n",
            "this is the sliding window of {window} without the dilation: the keys "
            "must be {dilation} apart",
        ),
        CodeSlip(
            "transposed",
            f"{_BACK}    return ({_RIGHT}).T\n",
            "this is the mask transposed: row i is query i and column j is key j",
        ),
        CodeSlip(
            "additive",
            f"{_BACK}    allowed = {_RIGHT}\n"
            '    return torch.zeros(T, T).masked_fill(~allowed, float("-inf"))\n',
            "this is an additive float mask (0 / -inf), which is added to the "
            "scores; this exercise asks for the bool mask: True = may attend",
        ),
        CodeSlip(
            "numbers",
            f"{_BACK}    return ({_RIGHT}).float()\n",
            "the entries are right but are numbers (1 and 0): make it a bool mask "
            "with .bool(), or build it from comparisons such as j <= i, which give "
            "bools",
        ),
    ),
)
check_dilated_mask_fn = DILATED.make_check()
