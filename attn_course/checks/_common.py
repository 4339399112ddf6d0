"""Private helpers shared by the self-checks of every chapter."""

from __future__ import annotations

import torch

_SHOW = 8  # at most this many numbers are written out in a message


def _fmt_number(value):
    """Format one number with 4 decimals (``nan``, ``inf`` and ``-inf`` as such)."""
    return f"{float(value):.4f}"


def _fmt_values(tensor):
    """Format a tensor's values as ``[0.0900, 0.2447, ...]`` (at most 8 shown)."""
    flat = tensor.detach().reshape(-1).to("cpu", torch.float64)
    shown = ", ".join(_fmt_number(v) for v in flat[:_SHOW])
    more = f", ... ({flat.numel()} values)" if flat.numel() > _SHOW else ""
    return f"[{shown}{more}]"


def _fmt_index(index):
    """Format a multi-dimensional index as ``[1, 2]``."""
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


def _shape(tensor):
    """Format a shape as a tuple: ``(3,)``, ``(2, 3)``."""
    return str(tuple(tensor.shape))


def _unravel(flat_index, shape):
    """Turn a flat position into a multi-dimensional index for ``shape``."""
    index = []
    for size in reversed(shape):
        index.append(flat_index % size)
        flat_index //= size
    return tuple(reversed(index))


def _require_tensor(answer, name, where=""):
    """Raise unless ``answer`` is a tensor; say what it is and how to convert it."""
    if isinstance(answer, torch.Tensor):
        return answer
    if answer is None:
        raise AssertionError(
            f"{name}{where}: got None instead of a torch.Tensor; did the code that "
            "computes it forget a `return`?"
        )
    kind = type(answer).__name__
    if type(answer).__module__ != "builtins":
        kind = f"{type(answer).__module__}.{kind}"
    if type(answer).__module__ == "numpy":
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
    raise AssertionError(f"{name}{where}: expected a torch.Tensor, got {kind}; {fix}.")


def _shape_hint(answer, expected):
    """A sentence about a likely cause of a shape mismatch, or ''."""
    a, e = tuple(answer.shape), tuple(expected.shape)
    if len(a) == 2 and a == e[::-1]:
        return (
            " It looks transposed: rows and columns are swapped. Check the order of "
            "the matrix product (queries on the left), or use .T."
        )
    if answer.numel() == expected.numel():
        squeezed_a = tuple(n for n in a if n != 1)
        squeezed_e = tuple(n for n in e if n != 1)
        if squeezed_a == squeezed_e:
            return (
                " The shapes differ only in dimensions of size 1: use .squeeze(...) "
                "to drop one or .unsqueeze(...) to add one."
            )
        return (
            " It has the right number of values but arranged differently: check "
            "any .view(...) or .reshape(...)."
        )
    return ""


def _require_shape(answer, expected, name, where=""):
    """Raise unless ``answer`` has the shape of ``expected``; show both shapes."""
    if tuple(answer.shape) != tuple(expected.shape):
        raise AssertionError(
            f"{name}{where}: wrong shape {_shape(answer)}; the expected shape is "
            f"{_shape(expected)}.{_shape_hint(answer, expected)}"
        )


def _require_finite(answer, name, where="", hint=""):
    """Raise if ``answer`` contains NaN or infinite values; show the first one."""
    values = answer.detach()
    if values.is_floating_point() or values.is_complex():
        bad = ~torch.isfinite(values)
        if bad.any():
            first = _unravel(int(bad.reshape(-1).nonzero()[0]), tuple(values.shape))
            raise AssertionError(
                f"{name}{where}: found NaN or infinite values in "
                f"{_fmt_values(values)} (the first at index {_fmt_index(first)} is "
                f"{_fmt_number(values[first])}).{hint}"
            )


def _require_close(answer, expected, name, where="", *, atol, rtol, hint=""):
    """Raise unless the values match; report the largest difference and where."""
    received = answer.detach().to("cpu", torch.float64)
    target = expected.detach().to("cpu", torch.float64)
    close = torch.isclose(received, target, atol=atol, rtol=rtol)
    if bool(close.all()):
        return
    square = received.dim() == 2 and received.shape[0] == received.shape[1] > 1
    if square and bool(torch.isclose(received, target.T, atol=atol, rtol=rtol).all()):
        hint = (
            "\nIt looks transposed: rows and columns are swapped. Check the order of "
            "the matrix product, or use .T." + hint
        )
    difference = (received - target).abs()
    difference = torch.where(close, 0.0, difference)  # only the failing entries
    difference = torch.nan_to_num(difference, nan=float("inf"))
    flat = int(difference.reshape(-1).argmax())
    index = _unravel(flat, tuple(received.shape))
    wrong = int((~close).sum())
    location = f" at index {_fmt_index(index)}" if received.dim() else ""
    raise AssertionError(
        f"{name}{where}: values are off; the largest difference is "
        f"{float(difference[index]):.4g}{location}, where the expected value is "
        f"{_fmt_number(target[index])} but yours is {_fmt_number(received[index])} "
        f"({wrong} of {received.numel()} values differ by more than "
        f"atol={atol:g} + rtol={rtol:g} * |expected|).\n"
        f"  expected: {_fmt_values(target)}\n"
        f"  received: {_fmt_values(received)}{hint}"
    )


def _require_weights(weights, name, where=""):
    """Raise unless ``weights`` are non-negative and sum to 1 along the last dim."""
    _require_finite(weights, name, where)
    values = weights.detach().to("cpu", torch.float64)
    if values.dim() == 0:
        raise AssertionError(
            f"{name}{where}: got a single number (shape ()); attention weights have "
            "one value per key, shape (T_k,) or (T_q, T_k)."
        )
    if bool((values < 0).any()):
        flat = int(values.reshape(-1).argmin())
        index = _unravel(flat, tuple(values.shape))
        raise AssertionError(
            f"{name}{where}: found negative values (the smallest is "
            f"{_fmt_number(values[index])} at index {_fmt_index(index)}). Attention "
            "weights come out of a softmax, so they are never negative: did you "
            "forget to apply softmax to the scores?"
        )
    sums = values.sum(dim=-1)
    if not bool(torch.isclose(sums, torch.ones_like(sums), atol=1e-4, rtol=0).all()):
        if values.dim() == 1:
            what = f"the values sum to {_fmt_number(sums)} instead of 1"
        else:
            what = f"the rows sum to {_fmt_values(sums)} instead of 1 each"
        hint = (
            " Divide each weight by their sum, or compute them with "
            "torch.softmax(scores, dim=-1)."
        )
        if values.dim() >= 2:
            columns = values.sum(dim=-2)
            if bool(torch.isclose(columns, torch.ones_like(columns), atol=1e-4).all()):
                hint = (
                    " The columns sum to 1 instead: you normalised over the queries "
                    "(dim=0 of a (T_q, T_k) matrix); normalise over the keys, the "
                    "last dimension, e.g. torch.softmax(scores, dim=-1)."
                )
            else:
                hint = (
                    " Normalise along the last dimension (the keys), e.g. "
                    "torch.softmax(scores, dim=-1) or "
                    "weights / weights.sum(dim=-1, keepdim=True)."
                )
        raise AssertionError(f"{name}{where}: {what}.{hint}")


def _require_callable(fn, check, example):
    """Raise unless the learner passed a function, not the result of calling one."""
    if not callable(fn):
        raise TypeError(
            f"{check} expects your function itself, got {type(fn).__name__}; pass "
            f"it without calling it: {check}({example}), not {check}({example}(x))"
        )


def _call(fn, check, args, description):
    """Call the learner's ``fn``; wrap any error it raises in an AssertionError."""
    try:
        return fn(*args)
    except Exception as error:  # any error in the learner's code becomes a message
        raise AssertionError(
            f"{check}: your function raised {type(error).__name__} on "
            f"{description}: {error}"
        ) from error


def _first_difference(answer, expected):
    """Index of the first entry where two same-shape tensors differ."""
    flat = int((answer != expected).reshape(-1).nonzero()[0])
    return _unravel(flat, tuple(expected.shape))


_INVERTED = (
    "your mask is inverted: True must mean may attend (the convention of "
    "scaled_dot_product_attention and attn_course); you built the convention of "
    "nn.MultiheadAttention, where True means blocked. Invert it with ~mask"
)


def _built_with_seed(seed, factory):
    """``factory()`` run after ``torch.manual_seed(seed)``; the global random state
    is put back afterwards, so a check never changes what the notebook draws next."""
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        return factory()
    finally:
        torch.random.set_rng_state(state)


def _require_pair(result, check, where, names="(weights, context)"):
    """Raise unless ``result`` is a pair; return it."""
    if isinstance(result, torch.Tensor) or not (
        isinstance(result, (tuple, list)) and len(result) == 2
    ):
        got = (
            f"a tensor of shape {_shape(result)}"
            if isinstance(result, torch.Tensor)
            else f"a {type(result).__name__}"
        )
        raise AssertionError(
            f"{check}: your function should return a pair {names}{where}, but it "
            f"returned {got}; end it with `return {names[1:-1]}`."
        )
    return result


def _scaled_reference(queries, keys, values, *, scale=None, mask=None):
    """(output, weights) of attention written out, with any scale and bool mask.

    ``mask`` is a bool ``(T_q, T_k)`` mask, True = may attend; a row with no allowed
    key gives NaN weights, as a plain softmax does (used to recognise mistakes).
    """
    if scale is None:
        scale = keys.shape[-1] ** -0.5
    scores = (queries @ keys.transpose(-2, -1)) * scale  # (..., T_q, T_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))  # (..., T_q, T_k)
    weights = torch.softmax(scores, dim=-1)  # (..., T_q, T_k)
    return weights @ values, weights  # (..., T_q, Ev), (..., T_q, T_k)


def _matches(answer, candidate, atol=1e-4):
    """Whether ``answer`` equals ``candidate`` (same shape, close values)."""
    a = answer.detach().to("cpu", torch.float64)
    c = candidate.detach().to("cpu", torch.float64)
    return a.shape == c.shape and bool(torch.allclose(a, c, atol=atol, rtol=1e-4))
