"""How a wrong answer no slip explains is described, the same way in every chapter:
``expect_*`` raise ``AssertionError`` for a wrong type, shape, NaN, values (never
showing the expected ones) or weights; ``fmt_*`` write numbers, indices, shapes."""

from __future__ import annotations

import torch

from .._validate import kind_of
from ..data import your_journey
from ._kit import seeded

_SHOW = 8  # at most this many numbers are written out in a message


# --- formatting ---------------------------------------------------------------------


def fmt_number(value):
    """Format one number with 4 decimals (``nan``, ``inf`` and ``-inf`` as such)."""
    return f"{float(value):.4f}"


def fmt_values(tensor):
    """Format a tensor's values as ``[0.0900, 0.2447, ...]`` (at most 8 shown)."""
    flat = tensor.detach().reshape(-1).to("cpu", torch.float64)
    shown = ", ".join(fmt_number(v) for v in flat[:_SHOW])
    more = f", ... ({flat.numel()} values)" if flat.numel() > _SHOW else ""
    return f"[{shown}{more}]"


def fmt_index(index):
    """Format a multi-dimensional index as ``[1, 2]``."""
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


def fmt_shape(tensor):
    """Format a shape as a tuple: ``(3,)``, ``(2, 3)``."""
    return str(tuple(tensor.shape))


def unravel(flat_index, shape):
    """Turn a flat position into a multi-dimensional index for ``shape``."""
    index = []
    for size in reversed(shape):
        index.append(flat_index % size)
        flat_index //= size
    return tuple(reversed(index))


def first_difference(answer, expected):
    """Index of the first entry where two same-shape tensors differ."""
    flat = int((answer != expected).reshape(-1).nonzero()[0])
    return unravel(flat, tuple(expected.shape))


# --- the learner's answer -----------------------------------------------------------


def expect_tensor(answer, name, where=""):
    """Return ``answer`` if it is a tensor; otherwise say what it is and how to
    convert it."""
    if isinstance(answer, torch.Tensor):
        return answer
    if answer is None:
        raise AssertionError(
            f"{name}{where}: got None instead of a torch.Tensor; did the code that "
            "computes it forget a `return`?"
        )
    if type(answer).__module__.split(".")[0] == "numpy":
        fix = "convert it with torch.from_numpy(...) or torch.tensor(...)"
    elif isinstance(answer, (int, float)):
        fix = (
            f"wrap the number with torch.tensor(...), or keep it a tensor by not "
            f"calling .item() (for example, received {answer!r})"
        )
    elif isinstance(answer, (list, tuple)):
        fix = "convert it with torch.tensor(...), or torch.stack(...) for a list of "
        fix += "tensors"
    else:
        fix = "compute it with torch operations, or convert it with torch.tensor(...)"
    raise AssertionError(
        f"{name}{where}: expected a torch.Tensor, got {kind_of(answer)}; {fix}."
    )


def _shape_hint(answer, expected):
    """A sentence about a likely cause of a shape mismatch, or ''."""
    a, e = tuple(answer.shape), tuple(expected.shape)
    if len(a) == 2 and a == e[::-1]:
        return (
            " It looks transposed: rows and columns are swapped. Check the order of "
            "the matrix product (queries on the left), or use .T."
        )
    if answer.numel() == expected.numel():
        if tuple(n for n in a if n != 1) == tuple(n for n in e if n != 1):
            return (
                " The shapes differ only in dimensions of size 1: use .squeeze(...) "
                "to drop one or .unsqueeze(...) to add one."
            )
        return (
            " It has the right number of values but arranged differently: check "
            "any .view(...) or .reshape(...)."
        )
    return ""


def expect_shape(answer, expected, name, where=""):
    """Raise unless ``answer`` has the shape of ``expected``; show both shapes."""
    if tuple(answer.shape) != tuple(expected.shape):
        raise AssertionError(
            f"{name}{where}: wrong shape {fmt_shape(answer)}; the expected shape is "
            f"{fmt_shape(expected)}.{_shape_hint(answer, expected)}"
        )


def expect_finite(answer, name, where="", hint=""):
    """Raise if ``answer`` contains NaN or infinite values; show the first one."""
    values = answer.detach()
    if values.is_floating_point() or values.is_complex():
        bad = ~torch.isfinite(values)
        if bad.any():
            first = unravel(int(bad.reshape(-1).nonzero()[0]), tuple(values.shape))
            raise AssertionError(
                f"{name}{where}: found NaN or infinite values in "
                f"{fmt_values(values)} (the first at index {fmt_index(first)} is "
                f"{fmt_number(values[first])}).{hint}"
            )


_TRANSPOSED = (
    "It looks transposed: rows and columns are swapped. Check the order of the "
    "matrix product, or use .T."
)


def expect_close(answer, expected, name, where="", *, atol, rtol, hint=""):
    """Raise unless the values match: the entry furthest off, by how much and in
    which direction, never the expected values; then ``hint``, and whether a square
    answer is the expected one transposed."""
    received = answer.detach().to("cpu", torch.float64)
    target = expected.detach().to("cpu", torch.float64)
    close = torch.isclose(received, target, atol=atol, rtol=rtol)
    if bool(close.all()):
        return
    square = received.dim() == 2 and received.shape[0] == received.shape[1] > 1
    transposed = square and bool(
        torch.isclose(received, target.T, rtol=rtol, atol=atol).all()
    )
    why = _TRANSPOSED if transposed else ""
    difference = (received - target).abs()
    difference = torch.where(close, 0.0, difference)  # only the failing entries
    difference = torch.nan_to_num(difference, nan=float("inf"))
    index = unravel(int(difference.reshape(-1).argmax()), tuple(received.shape))
    wrong = int((~close).sum())
    location = f" at index {fmt_index(index)}" if received.dim() else ""
    gap = float(received[index] - target[index])
    off = "not a number" if gap != gap else f"too {'high' if gap > 0 else 'low'}"
    raise AssertionError(
        f"{name}{where}: values are off; the largest difference is "
        f"{float(difference[index]):.4g}{location}, where yours is "
        f"{fmt_number(received[index])}, {off} ({wrong} of {received.numel()} "
        f"values differ by more than atol={atol:g} + rtol={rtol:g} * |expected|).\n"
        f"  yours: {fmt_values(received)}{hint}" + (f"\n{why}" if why else "")
    )


def expect_weights(weights, name, where=""):
    """Raise unless ``weights`` are non-negative and sum to 1 along the last dim."""
    expect_finite(weights, name, where)
    values = weights.detach().to("cpu", torch.float64)
    if values.dim() == 0:
        raise AssertionError(
            f"{name}{where}: got a single number (shape ()); attention weights have "
            "one value per key, shape (T_k,) or (T_q, T_k)."
        )
    if bool((values < 0).any()):
        index = unravel(int(values.reshape(-1).argmin()), tuple(values.shape))
        raise AssertionError(
            f"{name}{where}: found negative values (the smallest is "
            f"{fmt_number(values[index])} at index {fmt_index(index)}). Attention "
            "weights come out of a softmax, so they are never negative: did you "
            "forget to apply softmax to the scores?"
        )
    sums = values.sum(dim=-1)
    if bool(torch.isclose(sums, torch.ones_like(sums), atol=1e-4, rtol=0).all()):
        return
    if values.dim() == 1:
        raise AssertionError(
            f"{name}{where}: the values sum to {fmt_number(sums)} instead of 1. "
            "Divide each weight by their sum, or compute them with "
            "torch.softmax(scores, dim=-1)."
        )
    columns = values.sum(dim=-2)
    if bool(torch.isclose(columns, torch.ones_like(columns), atol=1e-4).all()):
        hint = (
            "The columns sum to 1 instead: you normalised over the queries (dim=0 "
            "of a (T_q, T_k) matrix); normalise over the keys, the last dimension, "
            "e.g. torch.softmax(scores, dim=-1)."
        )
    else:
        hint = (
            "Normalise along the last dimension (the keys), e.g. "
            "torch.softmax(scores, dim=-1) or "
            "weights / weights.sum(dim=-1, keepdim=True)."
        )
    raise AssertionError(
        f"{name}{where}: the rows sum to {fmt_values(sums)} instead of 1 each. {hint}"
    )


def expect_dict(answer, check, example):
    """Raise unless the learner's predictions come as a dict."""
    if not isinstance(answer, dict):
        raise AssertionError(
            f"{check}: expected a dict such as {example}, got {kind_of(answer)}."
        )
    return answer


def as_shape(value):
    """A predicted shape as a tuple of ints, or None when it is not a shape."""
    if isinstance(value, (str, bytes)):
        return None
    try:
        return tuple(int(n) for n in value)
    except (TypeError, ValueError):
        return None


def shape_mismatch(predicted, right, letters=()):
    """Which dimensions of a predicted shape are too high or too low (``letters``
    name them), or how many there should be, without giving the right shape."""
    if len(predicted) != len(right):
        named = f", ({', '.join(letters)})" if len(letters) == len(right) else ""
        return (
            f"it has {len(predicted)} dimension{'s' * (len(predicted) != 1)} where "
            f"the result has {len(right)}{named}"
        )
    parts = []
    for i, (p, r) in enumerate(zip(predicted, right, strict=True)):
        if p != r:
            letter = f" ({letters[i]})" if len(letters) == len(right) else ""
            parts.append(f"dimension {i}{letter} is too {'high' if p > r else 'low'}")
    return ", ".join(parts)


# --- references shared by the chapters ----------------------------------------------


INVERTED = (
    "your mask is inverted: True must mean may attend (the convention of "
    "scaled_dot_product_attention and attn_course); you built the convention of "
    "nn.MultiheadAttention, where True means blocked. Invert it with ~mask"
)


def journey_projections(build, seed):
    """Queries, keys and values, each (T, d_out), of "Your journey starts with one
    step" projected by the module ``build()`` makes under ``seeded(seed)``."""
    with seeded(seed):
        module = build()
    x = your_journey().embeddings  # (T, d_in)
    with torch.no_grad():
        return module.W_query(x), module.W_key(x), module.W_value(x)
