"""Self-checks for Chapter 10, why attention won: the path lengths of recurrent,
convolutional and attention layers, additive (Bahdanau) scores written out, and
the learned parameters of three ways to score a query against a key.

Shapes
------
Letters: see attn_course.shapes.
query : (B, d_in)
keys : (B, T_s, d_memory)
scores : (B, T_s)
"""

from __future__ import annotations

import functools
import inspect
import math
import re

import torch
from torch import nn

from .._validate import kind_of
from ._common import (
    as_count,
    expect_close,
    expect_finite,
    expect_shape,
    expect_tensor,
    fmt_shape,
)
from ._kit import (
    Case,
    Slip,
    call,
    exercise_check,
    explainer,
    first_slip,
    passed,
    require_callable,
    run_cases,
    seeded,
)

__all__ = [
    "check_additive_scores_fn",
    "check_path_length_fn",
    "check_scoring_parameters_fn",
]


def _shown(value):
    """A count as written in a message: ``1,024`` or ``6.5``."""
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


def _direction(got, expected):
    """``"too high"`` or ``"too low"``."""
    return "too high" if got > expected else "too low"


_FLOAT = (
    "A count of steps or layers is a whole number: return an int. math.ceil(...) "
    "and the integer division // give ints; numpy's and torch's ceil give floats, "
    "which int(...) turns into ints."
)


# --- path lengths ---------------------------------------------------------------------


def _path(kind, distance, kernel_size=None):
    """The right path length: sequential steps (RNN) or layers (CNN, attention)."""
    if distance == 0:
        return 0
    if kind == "rnn":
        return distance
    if kind == "cnn":
        return -(-distance // (kernel_size - 1))  # ceil without floats
    return 1


# (kind, distance, kernel_size or None): the first case of each kind tells its
# slips apart; then distance 0, 1, k - 1, k and large ones, kernels 2, 3 and 5, and
# a kernel_size given to a recurrent layer, which has no kernel.
_PATH_CASES = (
    ("rnn", 7, None),
    ("cnn", 13, 3),
    ("attention", 64, None),
    ("rnn", 0, None),
    ("rnn", 1, None),
    ("rnn", 511, None),
    ("rnn", 6, 3),
    ("cnn", 0, 3),
    ("cnn", 1, 3),
    ("cnn", 2, 3),
    ("cnn", 3, 3),
    ("cnn", 1, 2),
    ("cnn", 2, 2),
    ("cnn", 9, 2),
    ("cnn", 4, 5),
    ("cnn", 5, 5),
    ("cnn", 63, 3),
    ("cnn", 511, 3),
    ("cnn", 1000, 5),
    ("attention", 0, None),
    ("attention", 1, None),
    ("attention", 511, None),
)

# The success message compares the three kinds from the first to the last token of
# sequences of these lengths, with this kernel.
_TABLE_LENGTHS = (8, 64, 512)
_TABLE_KERNEL = 3


def _path_description(kind, distance, kernel_size):
    """The case as the call it makes: ``path_length("cnn", 13, 3)``."""
    kernel = "" if kernel_size is None else f", {kernel_size}"
    return f'path_length("{kind}", {distance}{kernel})'


def _path_cases():
    cases = []
    for kind, distance, kernel_size in _PATH_CASES:
        args = (
            (kind, distance) if kernel_size is None else (kind, distance, kernel_size)
        )
        cases.append(
            Case(
                _path_description(kind, distance, kernel_size),
                args,
                _path(kind, distance, kernel_size),
            )
        )
    return cases


_AT_ZERO = (
    "At distance 0 the information is already where it is needed: every kind of "
    "layer gives 0 there."
)


def _path_slips(kind, distance, kernel_size):
    """Known wrong path lengths for one case, as the values they give."""
    d, k = distance, kernel_size
    positive = d > 0
    if kind == "rnn":
        return [
            Slip(
                d + 1 if positive else None,
                "This is distance + 1, one step too many: it counts the tokens "
                "from the first to the last, not the steps between them. Moving one "
                "position takes one recurrent step, so distance d takes d steps.",
            ),
            Slip(
                d - 1 if positive else None,
                "This is distance - 1, one step too few: each of the d positions "
                "between the two tokens is one recurrent step, the last one "
                "included.",
            ),
            Slip(
                1 if d > 1 else None,
                "That is the path of attention: a recurrent layer cannot jump, it "
                "passes the information on one step per position.",
            ),
            Slip(
                -(-d // (k - 1)) if k is not None and k > 2 and d > 1 else None,
                "This is the path of a convolution: kernel_size belongs to kind "
                '"cnn" only. A recurrent layer has no kernel and takes distance '
                "steps, whatever kernel_size is given.",
            ),
            Slip(None if positive else (lambda got: got != 0), _AT_ZERO),
        ]
    if kind == "attention":
        return [
            Slip(
                0 if positive else None,
                "Attention returned 0 for distance > 0: information from another "
                "position needs one layer, whose query reads every key directly.",
            ),
            Slip(
                1 if not positive else None,
                "Attention returned 1 at distance 0. A token reaches itself without "
                "any layer: 0 at distance 0, 1 for every distance > 0.",
            ),
            Slip(
                d if d > 1 else None,
                "That is the path of a recurrent layer: in one attention layer every "
                "query reads every key, so any distance > 0 takes 1 layer.",
            ),
            Slip(None if positive else (lambda got: got != 0), _AT_ZERO),
        ]
    reach = k - 1
    log_slips = []
    if d > 1:
        for value in (
            math.ceil(math.log(d + 1, k)),
            math.ceil(math.log(d, k)),
            math.floor(math.log(d, k)),
            math.log(d, k),
        ):
            log_slips.append(
                Slip(
                    value,
                    "This is the O(log_k n) of a stack of DILATED convolutions, "
                    "whose gaps grow k, k^2, ... layer after layer. This "
                    "convolution is not dilated: each layer reaches kernel_size - 1 "
                    f"= {reach} positions further, so distance d takes ceil(d / "
                    f"{reach}) layers.",
                )
            )
    overlap = (
        f"Two windows of {k} positions, one above the other, share a position: "
        f"each layer reaches kernel_size - 1 = {reach} positions further back, not "
        f"kernel_size = {k}. Divide by kernel_size - 1."
    )
    return [
        Slip(math.ceil(d / k), overlap),
        Slip(d / k, overlap + " " + _FLOAT),
        Slip(d // k, overlap),
        Slip(
            d // reach,
            "This rounds down: distance // (kernel_size - 1). The last positions "
            "that do not fill a whole layer's reach still need a layer of their "
            "own: round up, math.ceil(distance / (kernel_size - 1)).",
        ),
        Slip(
            d / reach,
            "This is distance / (kernel_size - 1) without rounding: a number of "
            "layers is whole, so round it up with math.ceil(...).",
        ),
        *log_slips,
        Slip(
            d if d > 1 and reach > 1 else None,
            "That is the path of a recurrent layer: one convolution layer moves the "
            f"information kernel_size - 1 = {reach} positions at once.",
        ),
        Slip(
            1 if d > reach else None,
            "That is the path of attention: a convolution only sees the "
            f"kernel_size = {k} positions of its window, so reaching further takes "
            "more layers.",
        ),
        Slip(None if positive else (lambda got: got != 0), _AT_ZERO),
    ]


@exercise_check("path_length")
def check_path_length_fn(path_length):
    """Check a function that gives the shortest path between two tokens.

    Introduced in Chapter 10. ``path_length(kind, distance, kernel_size=None)``
    must return the smallest number of sequential steps (``kind="rnn"``) or of
    layers (``"cnn"``, ``"attention"``) that information needs to travel from one
    token to another ``distance`` positions away, as in the comparison of layer
    types of the 2017 transformer paper: ``distance`` for a recurrent layer (one
    step per position), ``ceil(distance / (kernel_size - 1))`` for causal
    convolutions of width ``kernel_size`` that are not dilated, and 1 for
    attention; every kind gives 0 at distance 0. It is tried on 22 cases: the
    distances 0, 1, ``kernel_size - 1``, ``kernel_size`` and larger ones up to
    1000, and kernels of 2, 3 and 5.

    Parameters
    ----------
    path_length : callable
        Your function: takes a string ``kind``, an int ``distance >= 0`` and, for
        ``"cnn"``, an int ``kernel_size >= 2``; returns an int.

    Returns
    -------
    None
        Prints one line starting with ✅ when every case matches.

    Raises
    ------
    AssertionError
        On the first case where the function raises, does not return a number,
        or returns a wrong one. The usual slips are named: a recurrent path of
        ``distance + 1`` or ``distance - 1``, a convolution divided by
        ``kernel_size`` (the overlap of one position forgotten), rounded down
        instead of up, or counted as ``log_k`` of a dilated stack, attention that
        gives 0 for a distance > 0 or 1 at distance 0, and a float instead of an
        int.
    TypeError
        If ``path_length`` is not a function, e.g. a number it returned.

    Examples
    --------
    >>> import math
    >>> def path_length(kind, distance, kernel_size=None):
    ...     if distance == 0:
    ...         return 0
    ...     if kind == "rnn":
    ...         return distance
    ...     if kind == "cnn":
    ...         return math.ceil(distance / (kernel_size - 1))
    ...     return 1
    >>> check_path_length_fn(path_length)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_path_length_fn: path_length is right on 22 cases (distances from 0
    to 1000, kernels of 2, 3 and 5). From the first to the last of T tokens, in
    steps or layers: T = 8: rnn 7, cnn (kernel 3) 4, attention 1; T = 64: rnn 63,
    cnn 32, attention 1; T = 512: rnn 511, cnn 256, attention 1.
    """
    check = "check_path_length_fn"
    cases = _path_cases()

    def verify(case, got):
        expected = case.data
        got = as_count(
            got,
            check,
            case.description,
            "the number of steps or layers",
            keep_floats=True,
        )
        if got == expected:
            if isinstance(got, float):
                raise AssertionError(
                    f"{check}: {case.description} returned {got!r}, the right "
                    f"number as a float. {_FLOAT}"
                )
            return
        kind, distance, *rest = case.args
        kernel_size = rest[0] if rest else None
        why = first_slip(
            got, _path_slips(kind, distance, kernel_size), atol=1e-9, rtol=0
        )
        if why is None:
            why = {
                "rnn": "A recurrent layer takes one step per position: distance steps.",
                "cnn": "A causal convolution of width kernel_size reaches "
                "kernel_size - 1 positions further with each layer; round the "
                "number of layers up.",
            }.get(kind, "One attention layer connects every pair of positions.")
        raise AssertionError(
            f"{check}: {case.description} returned {_shown(got)}, "
            f"{_direction(got, expected)}. {why}"
        )

    distances = [d for _, d, _ in _PATH_CASES]
    kernels = sorted({k for kind, _, k in _PATH_CASES if kind == "cnn"})

    def success():
        rows = []
        for i, T in enumerate(_TABLE_LENGTHS):
            rnn = _path("rnn", T - 1)
            cnn = _path("cnn", T - 1, _TABLE_KERNEL)
            attention = _path("attention", T - 1)
            kernel = f" (kernel {_TABLE_KERNEL})" if i == 0 else ""
            rows.append(f"T = {T}: rnn {rnn}, cnn{kernel} {cnn}, attention {attention}")
        listed = ", ".join(map(str, kernels[:-1])) + f" and {kernels[-1]}"
        return (
            f"path_length is right on {len(cases)} cases (distances from "
            f"{min(distances)} to {max(distances)}, kernels of {listed}). From the "
            "first to the last of T tokens, in steps or layers: "
            + "; ".join(rows)
            + "."
        )

    run_cases(
        check,
        path_length,
        cases,
        verify,
        example="path_length",
        success=success,
        who="path_length",
    )


# --- additive scores ------------------------------------------------------------------

# (B, T_s, d_q, d_k, d_a): the first case tells the slips apart (B != T_s, so a query
# that is not broadcast over the keys is a shape error); then one sentence, a single
# key, and both at once, where a bare .squeeze() removes too much.
_ADDITIVE_CASES = (
    (3, 5, 4, 6, 8),
    (1, 5, 4, 6, 8),
    (3, 1, 5, 2, 3),
    (1, 1, 3, 7, 4),
    (2, 4, 8, 3, 6),
)
_ADDITIVE_TOLERANCE = {"atol": 1e-5, "rtol": 1e-5}


def _additive_description(B, T_s, d_q, d_k, d_a):
    return (
        f"B = {B}, T_s = {T_s} keys, d_q = {d_q}, d_k = {d_k}, d_a = {d_a} (query "
        f"({B}, {d_q}), keys ({B}, {T_s}, {d_k}))"
    )


def _module_scores(module, query, keys):
    """The scores of ``AdditiveAttention`` ``module``, from its own layers, before
    the softmax its forward applies.

    Shapes
    ------
    Letters: see attn_course.shapes.
    query : (B, d_in)
    keys : (B, T_s, d_memory)
    scores : (B, T_s)
    """
    with torch.no_grad():
        hidden = torch.tanh(module.W_query(query)[:, None, :] + module.W_key(keys))
        return module.v(hidden).squeeze(-1)  # (B, T_s, 1) -> (B, T_s)


def _additive_cases():
    """Cases ``(query, keys, W_query, W_key, v)`` in float32, each with the scores
    of an ``attn_course.rnn.AdditiveAttention`` that holds the same weights (in
    float64) as data."""
    from ..rnn import AdditiveAttention  # Chapter 10's module

    generator = torch.Generator().manual_seed(10)
    cases = []
    for B, T_s, d_q, d_k, d_a in _ADDITIVE_CASES:
        query = torch.randn(B, d_q, generator=generator)
        keys = torch.randn(B, T_s, d_k, generator=generator)
        W_query = torch.randn(d_q, d_a, generator=generator) / d_q**0.5
        W_key = torch.randn(d_k, d_a, generator=generator) / d_k**0.5
        v = torch.randn(d_a, generator=generator)
        with torch.device("meta"):  # no weights drawn: they are copied in below
            module = AdditiveAttention(d_q, d_k, d_a)
        module = module.to_empty(device="cpu").double()
        with torch.no_grad():  # nn.Linear stores (out, in): the transposes
            module.W_query.weight.copy_(W_query.T)
            module.W_key.weight.copy_(W_key.T)
            module.v.weight.copy_(v[None, :])
        expected = _module_scores(module, query.double(), keys.double())
        cases.append(
            Case(
                _additive_description(B, T_s, d_q, d_k, d_a),
                (query, keys, W_query, W_key, v),
                expected,
            )
        )
    return cases


def _additive_slips(query, keys, W_query, W_key, v, expected):
    """Known wrong scores for one case (float64), as the values they give."""
    q, k, Wq, Wk, v = (t.to(torch.float64) for t in (query, keys, W_query, W_key, v))
    B, T_s = k.shape[:2]
    projected_q = (q @ Wq)[:, None, :]  # (B, 1, d_a)
    projected_k = k @ Wk  # (B, T_s, d_a)
    inside = projected_q + projected_k  # (B, T_s, d_a)
    return [
        Slip(
            inside @ v,
            "tanh is missing: without it the scores are a linear function of the "
            "query and the key, v . (W_query q + W_key k). The score is "
            "v . tanh(W_query q + W_key k): apply torch.tanh before the product "
            "with v.",
        ),
        Slip(
            torch.tanh(inside @ v),
            "v is applied before tanh: tanh(v . (...)) squashes each score into "
            "(-1, 1). The hidden layer comes first: torch.tanh(...) of the sum, "
            "then @ v.",
        ),
        Slip(
            torch.tanh(projected_q * projected_k) @ v,
            "The projected query and key are multiplied, as in a dot product. "
            "Additive attention ADDS them: tanh(query @ W_query (as (B, 1, d_a)) + "
            "keys @ W_key) @ v.",
        ),
        Slip(
            torch.softmax(expected, dim=-1),
            "These are the attention weights, the softmax of the scores: return the "
            "scores themselves, before any softmax.",
        ),
        Slip(
            torch.tanh(inside).sum(dim=-1),
            "v is missing: the tanh units are summed with equal weights. Take the "
            "product with v, which weighs each of the d_a units: ... @ v.",
        ),
        Slip(
            (torch.tanh(projected_q) + torch.tanh(projected_k)) @ v,
            "tanh is applied to the query's part and the key's part separately. "
            "Add the two projections first, then apply one tanh to the sum.",
        ),
        Slip(
            torch.tanh(projected_q + k @ Wq) @ v if Wq.shape == Wk.shape else None,
            "W_query is used for the keys too: the keys have their own matrix, "
            "keys @ W_key.",
        ),
        Slip(
            torch.tanh((q @ Wq)[None, :, :] + projected_k) @ v if B == T_s else None,
            "The query is not broadcast over the keys: (B, d_a) + (B, T_s, d_a) "
            "pairs query i with key i of every sentence. Give the query a dimension "
            "for the keys: (query @ W_query)[:, None, :].",
        ),
    ]


_MATMUL = re.compile(r"\((\d+)x(\d+) and (\d+)x(\d+)\)")


def _additive_explainer(query, keys, W_query, W_key):
    """An ``explain(error)`` for :func:`call` on one case: the slip behind a shape
    error, named from the sizes of this case."""
    B, T_s, d_k = keys.shape
    d_q, d_a = W_query.shape

    def matmul(error):
        found = _MATMUL.search(str(error))
        if not found:
            return ""
        _, inner, rows, columns = (int(n) for n in found.groups())
        if (rows, columns) == (d_q, d_a) and inner == d_k:
            return (
                f" W_query ({d_q}, {d_a}) is used on the keys, whose vectors have "
                f"d_k = {d_k} numbers: the keys have their own matrix, keys @ W_key."
            )
        if (rows, columns) == (d_k, d_a) and inner == d_q:
            return (
                f" W_key ({d_k}, {d_a}) is used on the query, whose vector has "
                f"d_q = {d_q} numbers: the query goes with W_query."
            )
        if (rows, columns) in ((d_a, d_q), (d_a, d_k)):
            return (
                " A weight is transposed: W_query is (d_q, d_a) and W_key (d_k, "
                "d_a) already, so query @ W_query and keys @ W_key need no .T "
                "(nn.Linear stores the transpose; these are plain matrices)."
            )
        return (
            f" Match each input with its matrix: query ({B}, {d_q}) @ W_query "
            f"({d_q}, {d_a}) and keys ({B}, {T_s}, {d_k}) @ W_key ({d_k}, {d_a})."
        )

    def explain(error):
        text = str(error)
        if "must match the size of tensor" in text:
            return (
                f" query @ W_query has shape ({B}, {d_a}), (B, d_a), and keys @ "
                f"W_key ({B}, {T_s}, {d_a}), (B, T_s, d_a): the query is not "
                "broadcast over the keys. Give it a dimension for them, "
                "(query @ W_query)[:, None, :] or .unsqueeze(1), shape (B, 1, d_a)."
            )
        if "cannot be multiplied" in text:
            return matmul(error)
        return explainer()(error)

    return explain


def _expect_scores_shape(scores, expected, name, where):
    """Raise unless the scores have shape (B, T_s); name the usual slips."""
    B, T_s = expected.shape
    got = tuple(scores.shape)
    if got == (B, T_s):
        return
    if got == (B, T_s, 1):
        why = (
            "the last dimension of size 1 comes from the product with v as a "
            "column: drop it with .squeeze(-1), or use v as a vector, ... @ v"
        )
    elif B * T_s == scores.numel() and 1 in (B, T_s) and scores.dim() < 2:
        why = (
            ".squeeze() without a dimension also drops B or T_s when it is 1: "
            "use .squeeze(-1), which drops only the last dimension"
        )
    elif scores.dim() == 3 and got[:2] == (B, T_s):
        why = (
            "v is not applied: the hidden layer has d_a units for each key; "
            "their product with v gives one score per key, ... @ v"
        )
    else:
        expect_shape(scores, expected, name, where)
        return
    raise AssertionError(
        f"{name}{where}: wrong shape {fmt_shape(scores)}; the expected shape is "
        f"({B}, {T_s}), (B, T_s): {why}."
    )


_ADDITIVE_FIX = (
    "compute new tensors (query @ W_query, torch.tanh(...)) instead of changing the "
    "inputs with in-place operations such as .add_(...) or +=."
)


@exercise_check("additive_scores")
def check_additive_scores_fn(additive_scores):
    """Check additive (Bahdanau) attention scores written out with matrices.

    Introduced in Chapter 10. ``additive_scores(query, keys, W_query, W_key, v)``
    gets ``query`` ``(B, d_q)``, ``keys`` ``(B, T_s, d_k)``, ``W_query`` ``(d_q,
    d_a)``, ``W_key`` ``(d_k, d_a)`` and ``v`` ``(d_a,)`` and must return the
    scores ``(B, T_s)``, ``tanh(query @ W_query + keys @ W_key) @ v`` with the
    query's term broadcast over the keys as ``(B, 1, d_a)``, before any softmax.
    The reference is :class:`attn_course.rnn.AdditiveAttention` with the same
    weights copied in (``nn.Linear`` stores ``W_query.T``), whose layers give the
    scores its forward turns into weights. It is tried on 5 cases: ``B`` of 1 to
    3, ``T_s`` of 1 to 5, and ``d_q != d_k``.

    Parameters
    ----------
    additive_scores : callable
        Your function: takes the five float tensors, returns the scores.

    Returns
    -------
    None
        Prints one line starting with ✅ when every case matches within 1e-5.

    Raises
    ------
    AssertionError
        If the function raises, changes an input in place, or returns something
        other than the scores; the usual slips are named: tanh forgotten, ``v``
        applied before tanh, the query not broadcast over the keys (a shape
        error), the two projections multiplied instead of added, the weights
        (a softmax) instead of the scores, ``W_query`` used for the keys, a
        transposed weight, and a shape of ``(B, T_s, 1)`` not squeezed.
    TypeError
        If ``additive_scores`` is not a function, e.g. the scores it returned.

    Shapes
    ------
    Letters: see attn_course.shapes.
    query : (B, d_in)
    keys : (B, T_s, d_memory)
    W_query : (d_in, d_out)
    W_key : (d_memory, d_out)
    v : (d_out,)
    scores : (B, T_s)

    Examples
    --------
    >>> def additive_scores(query, keys, W_query, W_key, v):
    ...     hidden = torch.tanh((query @ W_query)[:, None, :] + keys @ W_key)
    ...     return hidden @ v
    >>> check_additive_scores_fn(additive_scores)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_additive_scores_fn: additive_scores matches AdditiveAttention's
    scores on 5 cases (B from 1 to 3, T_s from 1 to 5, d_q != d_k): one small
    network with a tanh layer of d_a units scores every query-key pair.
    """
    check = "check_additive_scores_fn"
    require_callable(additive_scores, check, "additive_scores")
    names = ("query", "keys", "W_query", "W_key", "v")
    with seeded(0):  # run_cases, with an explanation of each case's shape errors
        cases = _additive_cases()
        for case in cases:
            query, keys, W_query, W_key, v = case.args
            scores = call(
                additive_scores,
                check,
                case,
                who="additive_scores",
                names=names,
                fix=_ADDITIVE_FIX,
                explain=_additive_explainer(query, keys, W_query, W_key),
            )
            name = f"{check}: your scores"
            where = case.where
            expected = case.data
            scores = expect_tensor(scores, name, where)
            _expect_scores_shape(scores, expected, name, where)
            expect_finite(scores, name, where)
            expect_close(
                scores,
                expected,
                name,
                where,
                **_ADDITIVE_TOLERANCE,
                hint="\nscores = tanh(query @ W_query as (B, 1, d_a) + keys @ W_key) "
                "@ v, shape (B, T_s).",
                slips=_additive_slips(*case.args, expected),
            )
    sizes = [shape[:2] for shape in _ADDITIVE_CASES]
    passed(
        check,
        f"additive_scores matches AdditiveAttention's scores on {len(cases)} cases "
        f"(B from {min(b for b, _ in sizes)} to {max(b for b, _ in sizes)}, T_s "
        f"from {min(t for _, t in sizes)} to {max(t for _, t in sizes)}, d_q != "
        "d_k): one small network with a tanh layer of d_a units scores every "
        "query-key pair.",
    )


# --- the parameters of three scores ---------------------------------------------------


@functools.cache
def _gru_width():
    """``d_model`` of a :class:`attn_course.rnn.GRUSeq2Seq` built with its
    defaults: its attention scores a state of that width against keys of that
    width, with a hidden layer of that width."""
    from ..rnn import GRUSeq2Seq

    return inspect.signature(GRUSeq2Seq).parameters["d_model"].default


# Bahdanau et al. (2015), appendix A.2: the decoder state s_{i-1} (the query) has
# n = 1000 units, each annotation h_j (a key) concatenates the two directions of
# the encoder, 2n = 2000, and the alignment model has n' = 1000 hidden units.
_BAHDANAU_N = 1000
_BAHDANAU_ALIGN = 1000


def _parameter_sizes():
    """``(d_q, d_k, d_a, description)`` of each case of check_scoring_parameters_fn;
    the first tells the slips apart."""
    D = _gru_width()
    n, n_align = _BAHDANAU_N, _BAHDANAU_ALIGN
    return (
        (6, 10, 8, "d_q = 6, d_k = 10, d_a = 8"),
        (32, 32, 8, "d_q = d_k = 32, d_a = 8"),
        (5, 3, 20, "d_q = 5, d_k = 3, d_a = 20"),
        (D, D, D, f"the attention of GRUSeq2Seq's default, d_q = d_k = d_a = {D}"),
        (
            n,
            2 * n,
            n_align,
            f"Bahdanau et al.'s model, a decoder state of d_q = {n}, annotations "
            f"of d_k = {2 * n} (two directions of {n}), d_a = {n_align}",
        ),
    )


def _counts(d_q, d_k, d_a):
    """The right dict: ``additive`` counted on an ``AdditiveAttention``, ``general``
    on an ``nn.Bilinear`` without bias, ``dot`` 0 or None where ``d_q != d_k``."""
    from ..rnn import AdditiveAttention

    with torch.device("meta"):  # sizes only: nothing is allocated or drawn
        additive = AdditiveAttention(d_q, d_k, d_a)
        general = nn.Bilinear(d_q, d_k, 1, bias=False)
    return {
        "additive": sum(p.numel() for p in additive.parameters()),
        "general": sum(p.numel() for p in general.parameters()),
        "dot": 0 if d_q == d_k else None,
    }


_KEYS = ("additive", "general", "dot")


def _parameter_cases():
    return [
        Case(text, (d_q, d_k, d_a), _counts(d_q, d_k, d_a))
        for d_q, d_k, d_a, text in _parameter_sizes()
    ]


def _count_slips(key, d_q, d_k, d_a):
    """Known wrong counts for one key of the dict, as the values they give."""
    if key == "additive":
        matrices = d_a * (d_q + d_k)
        biases = (
            "Biases are counted: this additive score has none (the two projections "
            "and v are nn.Linear(..., bias=False)); count W_query, W_key and v only."
        )
        return [
            Slip(
                matrices,
                f"v is missing: besides W_query ({d_q} x {d_a}) and W_key ({d_k} x "
                f"{d_a}), the score learns v, one weight for each of the d_a = {d_a} "
                "hidden units.",
            ),
            Slip(matrices + 1, "v is counted as one number: it has d_a entries."),
            Slip(matrices + d_a + 2 * d_a + 1, biases),
            Slip(matrices + d_a + 2 * d_a, biases),
            Slip(matrices + d_a + d_a + 1, biases),
            Slip(matrices + d_a + d_a, biases),
            Slip(matrices + d_a + 1, biases),
            Slip(
                2 * matrices,
                "Each matrix is counted twice: W_query holds d_q * d_a numbers and "
                "W_key d_k * d_a, once each, plus the d_a of v.",
            ),
            Slip(
                2 * (matrices + d_a),
                "Everything is counted twice: W_query (d_q * d_a), W_key "
                "(d_k * d_a) and v (d_a), once each.",
            ),
            Slip(
                d_a * (2 * d_q + 1) if d_q != d_k else None,
                f"W_key is given the query's width: it maps keys of d_k = {d_k} "
                f"numbers, so it is {d_k} x {d_a}.",
            ),
            Slip(
                d_a * (2 * d_k + 1) if d_q != d_k else None,
                f"W_query is given the keys' width: it maps a query of d_q = {d_q} "
                f"numbers, so it is {d_q} x {d_a}.",
            ),
        ]
    if key == "general":
        return [
            Slip(
                d_q * d_k + 1,
                "A bias is counted: q^T W k learns the matrix W only "
                "(nn.Bilinear(d_q, d_k, 1, bias=False)).",
            ),
            Slip(
                d_q * d_q if d_q != d_k else None,
                f"W is square here, d_q x d_q: it sits between a query of d_q = "
                f"{d_q} and a key of d_k = {d_k} numbers, so it is d_q x d_k.",
            ),
            Slip(
                d_k * d_k if d_q != d_k else None,
                f"W is square here, d_k x d_k: it sits between a query of d_q = "
                f"{d_q} and a key of d_k = {d_k} numbers, so it is d_q x d_k.",
            ),
            Slip(
                d_a * (d_q + d_k + 1) if d_a * (d_q + d_k + 1) != d_q * d_k else None,
                "This is the additive count: the general score q^T W k has no "
                "hidden layer, only one d_q x d_k matrix.",
            ),
            Slip(
                0,
                "The general score learns a matrix W between query and key, "
                "q^T W k: d_q x d_k numbers. Only the plain dot product learns "
                "nothing.",
            ),
        ]
    if d_q != d_k:
        return [
            Slip(
                d_q * d_k,
                "This is the general score's matrix, d_q x d_k: a plain or scaled dot "
                "product learns nothing, and here it does not even exist: with "
                f"d_q = {d_q} and d_k = {d_k}, q . k needs two vectors of the same "
                "length. Give None for 'dot' when d_q != d_k.",
            ),
            Slip(
                lambda got: got is not None,
                f"With d_q = {d_q} and d_k = {d_k} there is no dot product: q . k "
                "needs two vectors of the same length. Give None for 'dot' when "
                "d_q != d_k.",
            ),
        ]
    return [
        Slip(
            lambda got: got is None,
            f"d_q = d_k = {d_q} here, so the dot product exists: it learns 0 "
            "parameters (None is only for d_q != d_k).",
        ),
        Slip(
            d_q * d_k if d_q * d_k else None,
            "This is the general score's matrix, d_q x d_k. A plain or scaled dot "
            "product q . k learns nothing: 0.",
        ),
        Slip(
            1,
            "The scale 1 / sqrt(d_k) of a scaled dot product is a fixed number, "
            "not a learned parameter: the count is 0.",
        ),
    ]


_WHAT_KEY = {
    "additive": "the additive score learns W_query (d_q x d_a), W_key (d_k x d_a) "
    "and v (d_a numbers), no biases",
    "general": "the general score q^T W k learns one d_q x d_k matrix, no bias",
    "dot": "a plain or scaled dot product learns nothing, and needs d_q == d_k",
}


def _verify_counts(check, case, got):
    """Raise unless ``got`` is the right dict of counts for ``case``."""
    expected = case.data
    where = case.description
    if not isinstance(got, dict):
        raise AssertionError(
            f"{check}: for {where}, your function returned {kind_of(got)}; return "
            "a "
            "dict with the keys 'additive', 'general' and 'dot', e.g. "
            "{'additive': ..., 'general': ..., 'dot': ...}."
        )
    missing = [key for key in _KEYS if key not in got]
    if missing:
        listed = ", ".join(repr(key) for key in missing)
        raise AssertionError(
            f"{check}: for {where}, your dict has no key {listed}; it needs exactly "
            f"'additive', 'general' and 'dot' (it has {sorted(map(str, got))})."
        )
    extra = [key for key in got if key not in _KEYS]
    if extra:
        raise AssertionError(
            f"{check}: for {where}, your dict has the unknown key {extra[0]!r}; it "
            "needs exactly 'additive', 'general' and 'dot'."
        )
    d_q, d_k, d_a = case.args
    for key in _KEYS:
        value, right = got[key], expected[key]
        label = f"{check}: for {where}, your {key!r}"
        if key == "dot" and (value is None or right is None):
            if (value is None) == (right is None):
                continue
            why = first_slip(value, _count_slips(key, d_q, d_k, d_a))
            raise AssertionError(f"{label} is {value!r}. {why}")
        value = as_count(
            value,
            check,
            f"{where} ({key!r})",
            "a number of parameters",
            keep_floats=True,
        )
        if value == right and isinstance(value, int):
            continue
        if value == right:
            raise AssertionError(
                f"{label} is {value!r}, the right number as a float: a number of "
                "parameters is an int."
            )
        why = first_slip(value, _count_slips(key, d_q, d_k, d_a), atol=0, rtol=1e-12)
        raise AssertionError(
            f"{label} is {_shown(value)}, {_direction(value, right)}. "
            f"{why or 'Count again: ' + _WHAT_KEY[key] + '.'}"
        )


@exercise_check("scoring_parameters")
def check_scoring_parameters_fn(scoring_parameters):
    """Check a function that counts the learned parameters of three scores.

    Introduced in Chapter 10. ``scoring_parameters(d_q, d_k, d_a)`` must return a
    dict with the parameters that three ways of scoring a query of ``d_q`` numbers
    against a key of ``d_k`` numbers learn: ``"additive"`` (Bahdanau's
    ``v . tanh(W_query q + W_key k)`` with a hidden layer of ``d_a`` units and no
    biases), ``"general"`` (Luong's bilinear ``q^T W k``) and ``"dot"`` (a plain
    or scaled dot product: 0, or ``None`` when ``d_q != d_k``, where it does not
    exist). The expected counts are those of an
    :class:`attn_course.rnn.AdditiveAttention` and an ``nn.Bilinear(d_q, d_k, 1,
    bias=False)``, built without weights. It is tried on 5 cases, among them the
    attention of a :class:`attn_course.rnn.GRUSeq2Seq` with its defaults and the
    sizes of Bahdanau et al. (2015): a decoder state of 1000 numbers, annotations
    of 2000 and an alignment model of 1000 hidden units.

    Parameters
    ----------
    scoring_parameters : callable
        Your function: takes ints ``d_q``, ``d_k`` and ``d_a``, returns a dict.

    Returns
    -------
    None
        Prints one line starting with ✅ when every case matches.

    Raises
    ------
    AssertionError
        On the first case where the function raises, does not return a dict with
        exactly those three keys, or gives a wrong count; the usual slips are
        named: ``v`` forgotten, biases counted, every matrix counted twice, the
        general count given to ``"dot"``, a number for ``"dot"`` when ``d_q !=
        d_k``, and a missing key.
    TypeError
        If ``scoring_parameters`` is not a function, e.g. a dict it returned.

    Examples
    --------
    >>> def scoring_parameters(d_q, d_k, d_a):
    ...     return {
    ...         "additive": d_a * (d_q + d_k + 1),
    ...         "general": d_q * d_k,
    ...         "dot": 0 if d_q == d_k else None,
    ...     }
    >>> check = check_scoring_parameters_fn
    >>> check(scoring_parameters)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_scoring_parameters_fn: scoring_parameters is right on 5 cases; with
    Bahdanau et al.'s sizes, additive scoring learns 3,001,000 parameters and
    runs a tanh layer of 1000 units for every query-key pair, the general score
    learns 2,000,000, and a dot product learns none and is one matrix product for
    all pairs at once, the operation accelerators run fastest.
    """
    check = "check_scoring_parameters_fn"
    require_callable(scoring_parameters, check, "scoring_parameters")
    cases = _parameter_cases()

    def verify(case, got):
        _verify_counts(check, case, got)

    bahdanau = cases[-1]
    run_cases(
        check,
        scoring_parameters,
        cases,
        verify,
        example="scoring_parameters",
        who="scoring_parameters",
        success=f"scoring_parameters is right on {len(cases)} cases; with Bahdanau "
        f"et al.'s sizes, additive scoring learns {bahdanau.data['additive']:,} "
        f"parameters and runs a tanh layer of {bahdanau.args[2]} units for every "
        f"query-key pair, the general score learns {bahdanau.data['general']:,}, "
        "and a dot product learns none and is one matrix product for all pairs at "
        "once, the operation accelerators run fastest.",
    )
