"""Self-checks for the exercises: a green tick when right, an explanation when not.

Each check prints one line starting with ✅ when your answer is right. When it is
wrong, it raises ``AssertionError`` with a message that says what is wrong and how to
fix it: an answer that is not a tensor, a wrong shape (both shapes are shown), NaN or
infinite values, weights that are negative or whose rows do not sum to 1, or values
that are off (the largest difference, where it is, and the expected and received
numbers there).

Messages never depend on memory addresses or timing, so a notebook that runs a check
prints the same thing every time.

Shapes
------
T : number of tokens.
D : embedding width.
"""

from __future__ import annotations

import torch

from .data import hello_shiny_sun, your_journey
from .explorer import explore
from .functional import scaled_dot_product_attention

__all__ = [
    "check_additive_mask",
    "check_attention_fn",
    "check_causal_attention_fn",
    "check_causal_mask",
    "check_close",
    "check_context_vector",
    "check_cross_attention_mask",
    "check_cross_attention_shapes",
    "check_dropout_fn",
    "check_eval_forward",
    "check_future_detector",
    "check_head_counts_fn",
    "check_head_split",
    "check_mha_mask_fn",
    "check_param_count_fn",
    "check_projected_context",
    "check_row_drop_probability",
    "check_scaled_attention_fn",
    "check_score_variance",
    "check_shape_predictions",
    "check_softmax",
    "check_v1_from_v2",
    "check_weights",
]

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


def check_close(answer, expected, *, name="your answer", atol=1e-4, rtol=1e-4):
    """Check that a tensor answer matches the expected values.

    Parameters
    ----------
    answer : torch.Tensor
        The value to check.
    expected : torch.Tensor or array-like
        The right value.
    name : str, default "your answer"
        How the answer is called in messages.
    atol, rtol : float, default 1e-4
        Values match when ``|answer - expected| <= atol + rtol * |expected|``.

    Returns
    -------
    None
        Prints one line starting with ✅ when the answer matches.

    Raises
    ------
    AssertionError
        If ``answer`` is not a tensor, has another shape, contains NaN or infinite
        values, or differs by more than the tolerance.

    Shapes
    ------
    answer and expected : the same shape, any number of dimensions.

    Examples
    --------
    >>> import torch
    >>> check_close(torch.tensor([0.5, 1.0]), [0.5, 1.0])
    ✅ check_close: your answer is correct; all 2 values match (shape (2,)).
    >>> check_close(torch.tensor([0.5, 1.5]), [0.5, 1.0], name="x")
    Traceback (most recent call last):
    ...
    AssertionError: x: values are off; the largest difference is 0.5 at index [1], ...
    """
    if isinstance(expected, torch.Tensor):
        target = expected
    else:
        try:
            target = torch.as_tensor(expected, dtype=torch.float64)
        except (TypeError, ValueError, RuntimeError):
            raise TypeError(
                f"expected must be a tensor or a number/list of numbers, got "
                f"{type(expected).__name__}"
            ) from None
    answer = _require_tensor(answer, name)
    _require_shape(answer, target, name)
    _require_finite(answer, name)
    _require_close(answer, target, name, atol=atol, rtol=rtol)
    print(
        f"✅ check_close: {name} is correct; all {answer.numel()} values match "
        f"(shape {_shape(answer)})."
    )


def check_weights(weights, *, name="your weights"):
    """Check that attention weights are non-negative and sum to 1 over the keys.

    Parameters
    ----------
    weights : torch.Tensor
        One query's weights, or a matrix with one row per query.
    name : str, default "your weights"
        How the weights are called in messages.

    Returns
    -------
    None
        Prints one line starting with ✅ when the weights are valid.

    Raises
    ------
    AssertionError
        If ``weights`` is not a tensor, contains NaN or infinite or negative values,
        or a row does not sum to 1 (the sums are shown).

    Shapes
    ------
    weights : (T_k,) or (..., T_q, T_k); the last dimension runs over the keys.

    Examples
    --------
    >>> import torch
    >>> weights = torch.softmax(torch.tensor([[1.0, 2.0], [0.0, 0.0]]), dim=-1)
    >>> check_weights(weights)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_weights: your weights are valid; all values are non-negative and each of
    the 2 rows sums to 1.
    >>> check_weights(torch.tensor([0.5, 0.7]))
    Traceback (most recent call last):
    ...
    AssertionError: your weights: the values sum to 1.2000 instead of 1. ...
    """
    weights = _require_tensor(weights, name)
    _require_weights(weights, name)
    if weights.dim() == 1:
        what = f"all {weights.numel()} values are non-negative and they sum to 1"
    else:
        rows = weights.numel() // weights.shape[-1]
        what = f"all values are non-negative and each of the {rows} rows sums to 1"
    print(f"✅ check_weights: {name} are valid; {what}.")


def _softmax_inputs():
    """Inputs for check_softmax: (description, tensor) pairs, built afresh.

    The large-valued vector comes second, right after the small one, so a naive
    softmax is caught by the overflow it causes rather than by another mistake. The
    random matrix uses its own seeded generator and leaves the global seed alone.
    """
    generator = torch.Generator().manual_seed(0)
    return [
        ("a small vector", torch.tensor([1.0, 2.0, 3.0])),
        ("a vector of large scores", torch.tensor([1000.0, 1001.0, 1002.0])),
        (
            "a (4, 6) matrix of random scores (one softmax per row)",
            torch.randn(4, 6, generator=generator) * 3.0,
        ),
        (
            "a (2, 3) matrix with negative and tied scores",
            torch.tensor([[-1.0, -1.0, 2.0], [0.0, -3.0, -3.0]]),
        ),
    ]


_OVERFLOW = (
    " Why: exp(x) overflows for large x. In float32 the largest number is about "
    "3.4e38, so exp(x) is inf for any x above about 88.7; then inf / inf is nan. "
    "The fix: subtract each row's maximum first, "
    "x = x - x.max(dim=-1, keepdim=True).values, then exponentiate and normalise. "
    "The result is unchanged, because exp(x - m) / sum(exp(x - m)) = "
    "exp(x) / sum(exp(x)), and now the largest exponent is exp(0) = 1."
)


def check_softmax(fn):
    """Check a hand-written softmax against ``torch.softmax(x, dim=-1)``.

    ``fn(x)`` must return the softmax of ``x`` along its last dimension. It is tried
    on 4 inputs: a small vector, a vector of large scores (around 1000, where a naive
    ``exp(x) / exp(x).sum()`` overflows), a random matrix and a matrix with negative
    and tied scores. Your function must not change its input.

    Parameters
    ----------
    fn : callable
        Your softmax: takes a tensor, returns a tensor of the same shape.

    Returns
    -------
    None
        Prints one line starting with ✅ when all 4 inputs pass.

    Raises
    ------
    AssertionError
        On the first input where ``fn`` raises, returns something that is not a
        tensor, returns another shape, NaN or infinite values (with an explanation
        of overflow and the subtract-the-maximum fix), rows that do not sum to 1 or
        wrong values, or changes its input in place.

    Shapes
    ------
    x : (T,) or (..., T) -> fn(x) : the same shape.

    Examples
    --------
    >>> import torch
    >>> def softmax(x):
    ...     x = x - x.max(dim=-1, keepdim=True).values
    ...     return torch.exp(x) / torch.exp(x).sum(dim=-1, keepdim=True)
    >>> check_softmax(softmax)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_softmax: your softmax is correct; it matches torch.softmax on all 4 test
    inputs, including large values.

    The naive version overflows on large scores:

    >>> def naive_softmax(x):
    ...     return torch.exp(x) / torch.exp(x).sum()
    >>> check_softmax(naive_softmax)
    Traceback (most recent call last):
    ...
    AssertionError: check_softmax: ... large scores ... found NaN ... overflows ...
    """
    _require_callable(fn, "check_softmax", "softmax")
    cases = _softmax_inputs()
    for description, original in cases:
        x = original.clone()
        values = _fmt_values(original)
        where = f" on {description} {values}"
        output = _call(fn, "check_softmax", (x,), description + " " + values)
        name = "check_softmax: your softmax's output"
        output = _require_tensor(output, name, where)
        expected = torch.softmax(original, dim=-1)
        _require_shape(output, expected, name, where)
        large = original.abs().max() > 80
        _require_finite(output, name, where, hint=_OVERFLOW if large else "")
        _require_weights(output, name, where)
        _require_close(output, expected, name, where, atol=1e-5, rtol=1e-4)
        if not torch.equal(x, original):
            raise AssertionError(
                f"check_softmax: your softmax changed its input{where} in place: it "
                f"became {_fmt_values(x)}. Work on new tensors, e.g. "
                "x = x - x.max(dim=-1, keepdim=True).values instead of x -= ..., "
                "and torch.exp(x) instead of x.exp_()."
            )
    print(
        f"✅ check_softmax: your softmax is correct; it matches torch.softmax on all "
        f"{len(cases)} test inputs, including large values."
    )


def _temperature_text(temperature):
    """``softmax(scores)`` for temperature 1, ``softmax(scores / 2)`` otherwise."""
    return "scores" if temperature == 1 else f"scores / {temperature:g}"


def check_context_vector(answer, inputs, query_index, *, temperature=1.0):
    """Check one query's context vector from unscaled dot-product attention.

    The reference is Chapter 1's attention for the token at ``query_index``:
    ``scores = inputs @ inputs[query_index]``, ``weights = softmax(scores /
    temperature)``, ``context = weights @ inputs``, computed with
    :func:`attn_course.explorer.explore`.

    Parameters
    ----------
    answer : torch.Tensor
        Your context vector.
    inputs : torch.Tensor
        The embeddings, one row per token.
    query_index : int
        Position of the query token.
    temperature : float, default 1.0
        The scores are divided by it before the softmax.

    Returns
    -------
    None
        Prints one line starting with ✅ when the context vector is right.

    Raises
    ------
    AssertionError
        If ``answer`` is not a tensor, has another shape, contains NaN or infinite
        values, or its values are off.
    ValueError
        If ``query_index`` or ``temperature`` is invalid (a mistake in the call).

    Shapes
    ------
    inputs : (T, D); answer : (D,).

    Examples
    --------
    >>> import torch
    >>> from attn_course.data import hello_shiny_sun
    >>> tokens, inputs = hello_shiny_sun()
    >>> weights = torch.softmax(inputs @ inputs[1], dim=0)
    >>> context = weights @ inputs
    >>> check_context_vector(context, inputs, 1)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_context_vector: your context vector for query 1 is correct; it equals
    softmax(scores) @ inputs with scores = inputs @ inputs[1].
    """
    state = explore(None, inputs, query_index, temperature)
    index = query_index % state.weights.shape[0]
    name = f"your context vector for query {index}"
    answer = _require_tensor(answer, name)
    _require_shape(answer, state.context, name)
    _require_finite(answer, name)
    formula = f"softmax({_temperature_text(temperature)}) @ inputs"
    wrong_hint = ""
    plain = explore(None, inputs, query_index, 1.0).context  # temperature 1
    if temperature != 1 and torch.allclose(answer.detach().double(), plain.double()):
        wrong_hint = (
            f"\nYour vector matches temperature 1: divide the scores by "
            f"{temperature:g} before the softmax."
        )
    _require_close(
        answer,
        state.context,
        name,
        atol=1e-4,
        rtol=1e-4,
        hint=f"\nThe expected vector is {formula} with scores = inputs @ "
        f"inputs[{index}].{wrong_hint}",
    )
    print(
        f"✅ check_context_vector: {name} is correct; it equals {formula} with "
        f"scores = inputs @ inputs[{index}]."
    )


def _attention_inputs():
    """Inputs for check_attention_fn: (description, (T, D) tensor)."""
    generator = torch.Generator().manual_seed(0)
    return [
        ('the toy sentence "Hello shiny sun!"', hello_shiny_sun().embeddings),
        (
            'the toy sentence "Your journey starts with one step"',
            your_journey().embeddings,
        ),
        ("random inputs of shape (5, 4)", torch.randn(5, 4, generator=generator)),
        ("random inputs of shape (8, 2)", torch.rand(8, 2, generator=generator) * 2),
    ]


def check_attention_fn(fn):
    """Check a function computing unscaled dot-product self-attention for all tokens.

    ``fn(inputs)`` must return ``(weights, context)``: ``weights = softmax(inputs @
    inputs.T)`` row by row and ``context = weights @ inputs``. The reference is
    :func:`attn_course.scaled_dot_product_attention` with ``scale=1.0``. It is tried
    on the two toy sentences and two random inputs; it must not change its input.

    Parameters
    ----------
    fn : callable
        Your function: takes the inputs, returns ``(weights, context)``.

    Returns
    -------
    None
        Prints one line starting with ✅ when all inputs pass.

    Raises
    ------
    AssertionError
        On the first input where ``fn`` raises, does not return a pair of tensors,
        returns a wrong shape, invalid weights or wrong values, or changes its input.

    Shapes
    ------
    inputs : (T, D) -> weights : (T, T), context : (T, D).

    Examples
    --------
    >>> import torch
    >>> def attention(inputs):
    ...     weights = torch.softmax(inputs @ inputs.T, dim=-1)  # (T, T)
    ...     return weights, weights @ inputs  # (T, T) @ (T, D) -> (T, D)
    >>> check_attention_fn(attention)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_attention_fn: your attention function is correct; its weights and
    context vectors match on the 2 toy sentences and 2 random inputs.
    """
    _require_callable(fn, "check_attention_fn", "attention")
    cases = _attention_inputs()
    for description, original in cases:
        x = original.clone()
        where = f" on {description}"
        result = _call(fn, "check_attention_fn", (x,), description)
        if isinstance(result, torch.Tensor) or not (
            isinstance(result, (tuple, list)) and len(result) == 2
        ):
            got = (
                f"a tensor of shape {_shape(result)}"
                if isinstance(result, torch.Tensor)
                else f"a {type(result).__name__}"
            )
            raise AssertionError(
                f"check_attention_fn: your function should return a pair "
                f"(weights, context){where}, but it returned {got}; end it with "
                "`return weights, context`."
            )
        weights, context = result
        reference_context, reference_weights = scaled_dot_product_attention(
            original, original, original, scale=1.0, return_weights=True
        )  # (T, D), (T, T)
        name = "check_attention_fn: your weights"
        weights = _require_tensor(weights, name, where)
        _require_shape(weights, reference_weights, name, where)
        _require_weights(weights, name, where)
        hint = ""
        _, scaled = scaled_dot_product_attention(
            original, original, original, return_weights=True
        )  # (T, T), with the default scale 1 / sqrt(D)
        if torch.allclose(weights.detach().to(scaled.dtype), scaled, atol=1e-4):
            hint = (
                "\nYour weights match *scaled* attention (scores / sqrt(D)); this "
                "exercise uses plain, unscaled dot products: "
                "softmax(inputs @ inputs.T)."
            )
        _require_close(
            weights, reference_weights, name, where, atol=1e-4, rtol=1e-4, hint=hint
        )
        name = "check_attention_fn: your context vectors"
        context = _require_tensor(context, name, where)
        _require_shape(context, reference_context, name, where)
        _require_finite(context, name, where)
        _require_close(
            context,
            reference_context,
            name,
            where,
            atol=1e-4,
            rtol=1e-4,
            hint="\nThe context is weights @ inputs: (T, T) @ (T, D) -> (T, D).",
        )
        if not torch.equal(x, original):
            raise AssertionError(
                f"check_attention_fn: your function changed its input{where} in "
                "place; compute new tensors instead of modifying the inputs."
            )
    print(
        "✅ check_attention_fn: your attention function is correct; its weights and "
        "context vectors match on the 2 toy sentences and 2 random inputs."
    )


# --- Chapter 2: Self-attention with trainable weights ---


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


def check_projected_context(answer, inputs, W_query, W_key, W_value, query_index):
    """Check one query's context vector from attention with trainable weights.

    The reference follows Chapter 2: ``queries = inputs @ W_query``, ``keys = inputs
    @ W_key``, ``values = inputs @ W_value``; the query's scores against every key
    are divided by ``sqrt(d_k)`` (``d_k = W_key.shape[1]``), turned into weights by
    a softmax, and the weights mix the **values**.

    Parameters
    ----------
    answer : torch.Tensor
        Your context vector.
    inputs : torch.Tensor
        The embeddings, one row per token.
    W_query, W_key, W_value : torch.Tensor
        The projection matrices, as stored in ``SelfAttentionV1``.
    query_index : int
        Position of the query token.

    Returns
    -------
    None
        Prints one line starting with ✅ when the context vector is right.

    Raises
    ------
    AssertionError
        If ``answer`` is not a tensor, has another shape, contains NaN or infinite
        values, or its values are off; common slips (no scaling, scaling by ``d_k``
        instead of ``sqrt(d_k)``, mixing the inputs instead of the values) are named.

    Shapes
    ------
    inputs : (T, d_in); W_query, W_key, W_value : (d_in, d_out); answer : (d_out,).

    Examples
    --------
    >>> import torch
    >>> from attn_course.data import your_journey
    >>> x = your_journey().embeddings
    >>> W_q, W_k, W_v = torch.eye(3)[:, :2], torch.eye(3)[:, 1:], torch.eye(3)[:, :2]
    >>> q, keys, values = x[1] @ W_q, x @ W_k, x @ W_v
    >>> weights = torch.softmax(keys @ q / 2**0.5, dim=0)
    >>> check_projected_context(weights @ values, x, W_q, W_k, W_v, 1)
    ... # doctest: +NORMALIZE_WHITESPACE
    ✅ check_projected_context: your context vector for query 1 is correct; it
    equals softmax(q_1 . k_j / sqrt(2)) over the keys j, mixing the values.
    """
    x = inputs.detach()
    matrices = {"W_query": W_query, "W_key": W_key, "W_value": W_value}
    matrices = {k: v.detach() for k, v in matrices.items()}
    index = query_index % x.shape[0]
    queries = x @ matrices["W_query"]  # (T, d_in) @ (d_in, d_out) -> (T, d_out)
    keys = x @ matrices["W_key"]  # (T, d_out)
    values = x @ matrices["W_value"]  # (T, d_out)
    query = queries[index : index + 1]  # (1, d_out)
    d_k = keys.shape[-1]
    context, _ = _scaled_reference(query, keys, values)  # (1, d_out)
    expected = context[0]  # (d_out,)
    name = f"your context vector for query {index}"
    answer = _require_tensor(answer, name)
    if tuple(answer.shape) == (x.shape[1],) != tuple(expected.shape):
        raise AssertionError(
            f"{name}: wrong shape {_shape(answer)}, the width d_in of the inputs; the "
            f"expected shape is {_shape(expected)}, the width d_out of the values. "
            "Mix the values (inputs @ W_value), not the inputs."
        )
    _require_shape(answer, expected, name)
    _require_finite(answer, name)
    hint = ""
    slips = [
        (1.0, f"no scaling: divide the scores by sqrt(d_k) = sqrt({d_k})"),
        (1.0 / d_k, f"scores divided by d_k = {d_k} instead of by sqrt(d_k)"),
    ]
    for scale, slip in slips:
        if _matches(answer, _scaled_reference(query, keys, values, scale=scale)[0][0]):
            hint = f"\nYour vector matches {slip}."
    if x.shape[1] == d_k:
        mixed_inputs = _scaled_reference(query, keys, x)[0][0]  # (d_in,)
        if _matches(answer, mixed_inputs):
            hint = "\nYour vector mixes the inputs; mix the values, inputs @ W_value."
    _require_close(answer, expected, name, atol=1e-4, rtol=1e-4, hint=hint)
    print(
        f"✅ check_projected_context: {name} is correct; it equals "
        f"softmax(q_{index} . k_j / sqrt({d_k})) over the keys j, mixing the values."
    )


def _v2_modules():
    """V2 modules for check_v1_from_v2: (description, module), seeded, not global."""
    from .modules import SelfAttentionV2

    cases = []
    state = torch.random.get_rng_state()
    try:
        for seed, (d_in, d_out) in enumerate([(3, 2), (4, 4), (5, 3)]):
            torch.manual_seed(seed)
            cases.append(
                (f"SelfAttentionV2({d_in}, {d_out})", SelfAttentionV2(d_in, d_out))
            )
    finally:
        torch.random.set_rng_state(state)  # leave the learner's random numbers alone
    return cases


def check_v1_from_v2(fn):
    """Check a function that copies a ``SelfAttentionV2``'s weights into a V1.

    ``fn(sa_v2)`` must return a :class:`attn_course.SelfAttentionV1` that computes
    the same map as ``sa_v2``. It is tried on three V2 modules of different sizes,
    one of them square (``d_in == d_out``), where a missing transpose raises no shape
    error. The V2 module must not be changed.

    Parameters
    ----------
    fn : callable
        Your function: takes a ``SelfAttentionV2``, returns a ``SelfAttentionV1``.

    Returns
    -------
    None
        Prints one line starting with ✅ when all modules pass.

    Raises
    ------
    AssertionError
        If ``fn`` raises, does not return a ``SelfAttentionV1``, its matrices have
        the wrong shape or values (a missing ``.T`` and swapped roles are named),
        its outputs differ from the V2 module's, or it changed the V2 module.

    Shapes
    ------
    nn.Linear weight : (d_out, d_in); SelfAttentionV1 matrices : (d_in, d_out).

    Examples
    --------
    >>> import torch
    >>> from attn_course import SelfAttentionV1
    >>> def v1_from_v2(sa_v2):
    ...     sa_v1 = SelfAttentionV1(sa_v2.d_in, sa_v2.d_out)
    ...     with torch.no_grad():
    ...         sa_v1.W_query.copy_(sa_v2.W_query.weight.T)
    ...         sa_v1.W_key.copy_(sa_v2.W_key.weight.T)
    ...         sa_v1.W_value.copy_(sa_v2.W_value.weight.T)
    ...     return sa_v1
    >>> check_v1_from_v2(v1_from_v2)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_v1_from_v2: your conversion is correct; each SelfAttentionV1 holds the
    transposed nn.Linear weights and computes the same outputs as its
    SelfAttentionV2 on 3 modules.
    """
    check = "check_v1_from_v2"
    if isinstance(fn, torch.nn.Module):
        raise TypeError(
            f"{check} expects your function itself, got a {type(fn).__name__} "
            f"module; pass it without calling it: {check}(v1_from_v2), not "
            f"{check}(v1_from_v2(sa_v2))"
        )
    _require_callable(fn, check, "v1_from_v2")
    state = torch.random.get_rng_state()
    try:
        _check_v1_modules(fn, check)
    finally:
        torch.random.set_rng_state(state)  # leave the learner's random numbers alone
    print(
        f"✅ {check}: your conversion is correct; each SelfAttentionV1 holds the "
        "transposed nn.Linear weights and computes the same outputs as its "
        "SelfAttentionV2 on 3 modules."
    )


def _check_v1_modules(fn, check):
    """The body of check_v1_from_v2: raise on the first module that fails."""
    from .modules import SelfAttentionV1

    generator = torch.Generator().manual_seed(0)
    roles = ("W_query", "W_key", "W_value")
    for description, sa_v2 in _v2_modules():
        where = f" on {description}"
        x = torch.randn(2, 5, sa_v2.d_in, generator=generator)  # (B, T, d_in)
        with torch.no_grad():
            expected_out, expected_w = sa_v2(x, return_weights=True)
        linear = {role: getattr(sa_v2, role).weight.detach().clone() for role in roles}
        sa_v1 = _call(fn, check, (sa_v2,), description)
        if not isinstance(sa_v1, SelfAttentionV1):
            raise AssertionError(
                f"{check}: your function returned a {type(sa_v1).__name__}{where}; "
                "it should return a SelfAttentionV1 module, e.g. "
                "sa_v1 = SelfAttentionV1(sa_v2.d_in, sa_v2.d_out), then copy the "
                "weights into it."
            )
        for role in roles:
            matrix = getattr(sa_v1, role).detach()
            target = linear[role].T  # (d_in, d_out)
            name = f"{check}: your {role}"
            if tuple(matrix.shape) == tuple(linear[role].shape) != tuple(target.shape):
                raise AssertionError(
                    f"{name}{where} has shape {_shape(matrix)}, the shape of "
                    f"nn.Linear's weight (d_out, d_in); SelfAttentionV1 needs "
                    f"(d_in, d_out) = {_shape(target)}. nn.Linear computes "
                    "x @ weight.T, so copy weight.T."
                )
            _require_shape(matrix, target, name, where)
            hint = ""
            if matrix.shape[0] == matrix.shape[1] and _matches(matrix, linear[role]):
                hint = (
                    "\nIt equals nn.Linear's weight itself: nn.Linear computes "
                    "x @ weight.T, so V1 needs weight.T (no shape error warns you "
                    "when d_in == d_out)."
                )
            for other in roles:
                if other != role and _matches(matrix, linear[other].T):
                    hint = f"\nIt holds V2's {other} instead: copy each role to itself."
            _require_close(matrix, target, name, where, atol=1e-6, rtol=0, hint=hint)
        with torch.no_grad():
            out, weights = sa_v1(x, return_weights=True)
        _require_close(
            out,
            expected_out,
            f"{check}: your module's outputs",
            where,
            atol=1e-5,
            rtol=1e-4,
        )
        _require_close(
            weights,
            expected_w,
            f"{check}: your module's weights",
            where,
            atol=1e-5,
            rtol=1e-4,
        )
        for role in roles:
            if not torch.equal(getattr(sa_v2, role).weight.detach(), linear[role]):
                raise AssertionError(
                    f"{check}: your function changed the {role} of the "
                    f"SelfAttentionV2{where}; copy its weights, do not modify them."
                )


def _isclose(a, b, rel_tol=1e-6):
    """Whether two numbers agree to a relative tolerance (default: rounding only)."""
    return abs(a - b) <= rel_tol * max(abs(a), abs(b))


def _as_number(value, name):
    """Return ``value`` as a float, or raise a teaching AssertionError."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AssertionError(
            f"{name}: expected a number, got {type(value).__name__}; store a plain "
            f"number such as 4.0 (or a tensor holding one value)."
        )
    return float(value)


def check_score_variance(predicted_variance, scale, *, d_k, std):
    """Check a prediction of the variance of a dot product, and the fixing scale.

    A query and a key each have ``d_k`` independent entries with mean 0 and
    standard deviation ``std``. Each product ``q_m * k_m`` then has variance
    ``std**2 * std**2``, and the ``d_k`` products add up, so ``q . k`` has variance
    ``d_k * std**4``. Multiplying the scores by ``scale = 1 / sqrt(variance)`` gives
    them variance 1. The check also measures the variance on 20,000 random pairs.

    Parameters
    ----------
    predicted_variance : float
        Your prediction of the variance of ``q . k``.
    scale : float
        Your factor that gives the scores variance 1.
    d_k : int
        Width of the query and the key.
    std : float
        Standard deviation of every entry.

    Returns
    -------
    None
        Prints one line starting with ✅ when both numbers are right.

    Raises
    ------
    AssertionError
        If a number is missing or off; common slips (the unit-variance answer
        ``d_k``, one factor ``std**2`` too few, a standard deviation instead of a
        variance, ``1 / sqrt(d_k)`` as the scale) are named.

    Shapes
    ------
    Both answers are single numbers.

    Examples
    --------
    >>> check_score_variance(32.0, 32.0**-0.5, d_k=32, std=1.0)
    ... # doctest: +NORMALIZE_WHITESPACE
    ✅ check_score_variance: your prediction is correct; q . k has variance
    d_k * std**4 = 32 (measured on 20000 random pairs: 32.2), and scale = 0.1768
    makes it 1 (measured: 1.005).
    """
    check = "check_score_variance"
    variance = d_k * std**4
    predicted = _as_number(predicted_variance, f"{check}: your predicted_variance")
    if not _isclose(predicted, variance, rel_tol=1e-3):
        slips = {
            d_k: f"d_k = {d_k} is the variance for entries of variance 1; here each "
            f"entry has variance std**2 = {std**2:g}",
            d_k * std**2: "that has one factor std**2; each product q_m * k_m has "
            f"variance std**2 * std**2 = {std**4:g}",
            variance**0.5: "that is the standard deviation of q . k; the variance "
            "is its square",
        }
        hint = next(
            (text for value, text in slips.items() if _isclose(predicted, value, 1e-3)),
            f"each of the d_k = {d_k} products q_m * k_m has variance std**2 * std**2",
        )
        raise AssertionError(
            f"{check}: your predicted_variance {predicted:g} is off; {hint}. "
            "The variances of independent terms add up."
        )
    factor = _as_number(scale, f"{check}: your scale")
    expected_scale = variance**-0.5
    if not _isclose(factor, expected_scale, rel_tol=1e-3):
        slips = {
            d_k**-0.5: f"1 / sqrt(d_k) = {d_k**-0.5:.4g} gives variance 1 only when "
            "the entries have variance 1",
            1 / variance: "that divides by the variance; a factor c multiplies the "
            "variance by c**2, so divide by its square root",
            variance**0.5: "that multiplies by the standard deviation; divide by it",
        }
        hint = next(
            (text for value, text in slips.items() if _isclose(factor, value, 1e-3)),
            "multiplying by c multiplies the variance by c**2",
        )
        raise AssertionError(
            f"{check}: your scale {factor:g} is off; {hint}. The scores are "
            f"multiplied by scale, so scale = 1 / sqrt({variance:g})."
        )
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(20_000, d_k, generator=generator, dtype=torch.float64) * std
    k = torch.randn(20_000, d_k, generator=generator, dtype=torch.float64) * std
    dots = (q * k).sum(dim=-1)  # (N, d_k) -> (N,)
    print(
        f"✅ {check}: your prediction is correct; q . k has variance d_k * std**4 = "
        f"{variance:g} (measured on 20000 random pairs: {dots.var():.3g}), and "
        f"scale = {factor:.4g} makes it 1 (measured: {(dots * factor).var():.3f})."
    )


def _scaled_attention_inputs():
    """(description, queries, keys, values) for check_scaled_attention_fn."""
    from .modules import SelfAttentionV2

    generator = torch.Generator().manual_seed(0)
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(789)
        sa_v2 = SelfAttentionV2(3, 2)
    finally:
        torch.random.set_rng_state(state)
    x = your_journey().embeddings
    with torch.no_grad():
        journey = (sa_v2.W_query(x), sa_v2.W_key(x), sa_v2.W_value(x))
    return [
        ('"Your journey starts with one step" projected to d_k = 2', *journey),
        (
            "random queries (4, 8), keys (5, 8) and values (5, 3)",
            torch.randn(4, 8, generator=generator) * 2,
            torch.randn(5, 8, generator=generator) * 2,
            torch.randn(5, 3, generator=generator),
        ),
        (
            "a batch: queries, keys and values of shape (2, 3, 16)",
            *(torch.randn(2, 3, 16, generator=generator) for _ in range(3)),
        ),
    ]


def check_scaled_attention_fn(fn):
    """Check a function computing scaled dot-product attention.

    ``fn(queries, keys, values)`` must return ``(weights, context)`` with
    ``weights = softmax(queries @ keys^T / sqrt(d_k))`` over the keys and
    ``context = weights @ values``, for any number of leading batch dimensions.
    The reference is :func:`attn_course.scaled_dot_product_attention`. It is tried
    on the journey sentence and on random inputs where ``d_v != d_k`` and
    ``T_q != T_k``, so scaling by the wrong width shows.

    Parameters
    ----------
    fn : callable
        Your function: takes queries, keys and values, returns (weights, context).

    Returns
    -------
    None
        Prints one line starting with ✅ when all inputs pass.

    Raises
    ------
    AssertionError
        On the first input where ``fn`` raises, does not return a pair of tensors,
        returns a wrong shape, invalid weights or wrong values (no scaling, scaling
        by ``d_k`` or by the value width are named), or changes its inputs.

    Shapes
    ------
    queries (..., T_q, d_k), keys (..., T_k, d_k), values (..., T_k, d_v) ->
    weights (..., T_q, T_k), context (..., T_q, d_v).

    Examples
    --------
    >>> import torch
    >>> def scaled_attention(queries, keys, values):
    ...     scores = queries @ keys.transpose(-2, -1)  # (..., T_q, T_k)
    ...     weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
    ...     return weights, weights @ values  # (..., T_q, d_v)
    >>> check_scaled_attention_fn(scaled_attention)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_scaled_attention_fn: your scaled attention is correct; its weights and
    context vectors match on 3 inputs, including a batch and d_v != d_k.
    """
    check = "check_scaled_attention_fn"
    _require_callable(fn, check, "scaled_attention")
    for description, queries, keys, values in _scaled_attention_inputs():
        where = f" on {description}"
        inputs = [t.clone() for t in (queries, keys, values)]
        result = _call(fn, check, inputs, description)
        weights, context = _require_pair(result, check, where)
        expected_context, expected_weights = scaled_dot_product_attention(
            queries, keys, values, return_weights=True
        )
        name = f"{check}: your weights"
        weights = _require_tensor(weights, name, where)
        _require_shape(weights, expected_weights, name, where)
        _require_weights(weights, name, where)
        d_k, d_v = keys.shape[-1], values.shape[-1]
        slips = {
            "no scaling: divide the scores by sqrt(d_k) = "
            f"sqrt({d_k}) before the softmax": 1.0,
            f"scores divided by d_k = {d_k}; divide by sqrt(d_k)": 1.0 / d_k,
        }
        if d_v != d_k:
            slips[
                f"scores divided by sqrt(d_v) = sqrt({d_v}), the width of the values; "
                "use the width of the keys, keys.shape[-1]"
            ] = d_v**-0.5
        hint = ""
        for slip, scale in slips.items():
            if _matches(
                weights, _scaled_reference(queries, keys, values, scale=scale)[1]
            ):
                hint = f"\nYour weights match {slip}."
        _require_close(
            weights, expected_weights, name, where, atol=1e-4, rtol=1e-4, hint=hint
        )
        name = f"{check}: your context vectors"
        context = _require_tensor(context, name, where)
        _require_shape(context, expected_context, name, where)
        _require_finite(context, name, where)
        _require_close(
            context,
            expected_context,
            name,
            where,
            atol=1e-4,
            rtol=1e-4,
            hint="\nThe context is weights @ values: (T_q, T_k) @ (T_k, d_v).",
        )
        if not all(
            torch.equal(a, b)
            for a, b in zip(inputs, (queries, keys, values), strict=True)
        ):
            raise AssertionError(
                f"{check}: your function changed its inputs{where} in place; compute "
                "new tensors instead (e.g. scores = scores / ..., not scores /= ...)."
            )
    print(
        f"✅ {check}: your scaled attention is correct; its weights and context "
        "vectors match on 3 inputs, including a batch and d_v != d_k."
    )


# --- Chapter 3: Causal attention mask ---


def _mask_sizes():
    """Sequence lengths the mask checks try; T = 1 last, where several mistakes
    look alike (the inverted 1 x 1 mask also lacks its diagonal)."""
    return (2, 5, 6, 1)


def _first_difference(answer, expected):
    """Index of the first entry where two same-shape tensors differ."""
    flat = int((answer != expected).reshape(-1).nonzero()[0])
    return _unravel(flat, tuple(expected.shape))


_INVERTED = (
    "your mask is inverted: True must mean may attend (the convention of "
    "scaled_dot_product_attention and attn_course); you built the convention of "
    "nn.MultiheadAttention, where True means blocked. Invert it with ~mask"
)


def check_causal_mask(fn):
    """Check a function that builds a causal mask in the SDPA convention.

    ``fn(T)`` must return a bool ``(T, T)`` mask that is ``True`` where query ``i``
    may attend to key ``j``, that is for ``j <= i`` (the lower triangle with the
    diagonal), as ``torch.nn.functional.scaled_dot_product_attention`` and
    :func:`attn_course.causal_mask` use it. It is tried for ``T`` = 1, 2, 5 and 6.

    Parameters
    ----------
    fn : callable
        Your function: takes the number of tokens ``T``, returns the mask.

    Returns
    -------
    None
        Prints one line starting with ✅ when every length passes.

    Raises
    ------
    AssertionError
        If ``fn`` raises, returns something that is not a tensor, has the wrong shape
        or dtype (a float mask is recognised), or wrong entries: an inverted mask
        (True = blocked), a missing diagonal and the upper triangle are named.

    Shapes
    ------
    fn(T) : (T, T), bool.

    Examples
    --------
    >>> import torch
    >>> def my_causal_mask(T):
    ...     return torch.ones(T, T, dtype=torch.bool).tril()
    >>> check_causal_mask(my_causal_mask)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_causal_mask: your causal mask is correct for T = 1, 2, 5, 6; True (may
    attend) on and below the diagonal, False above it.
    >>> check_causal_mask(lambda T: ~my_causal_mask(T))
    Traceback (most recent call last):
    ...
    AssertionError: check_causal_mask: your mask for T = 2: your mask is inverted: ...
    """
    check = "check_causal_mask"
    _require_callable(fn, check, "my_causal_mask")
    for T in _mask_sizes():
        name = f"{check}: your mask for T = {T}"
        mask = _call(fn, check, (T,), f"T = {T}")
        expected = torch.ones(T, T, dtype=torch.bool).tril()  # (T, T)
        mask = _require_tensor(mask, name)
        _require_shape(mask, expected, name)
        if mask.dtype != torch.bool:
            values = mask.detach()
            if values.is_floating_point() and torch.equal(
                values, torch.zeros(T, T).masked_fill(~expected, float("-inf"))
            ):
                fix = (
                    "this is an additive float mask (0 / -inf), which is added to the "
                    "scores; this exercise asks for the bool mask: True = may attend"
                )
            else:
                fix = (
                    "create it with dtype=torch.bool (e.g. torch.ones(T, T, "
                    "dtype=torch.bool).tril()) or convert it with .bool(); an int or "
                    "float mask of 0 and 1 would be added to the scores instead"
                )
            raise AssertionError(f"{name}: dtype is {mask.dtype}, not bool; {fix}.")
        if torch.equal(mask, expected):
            continue
        if torch.equal(mask, ~expected):
            hint = _INVERTED
        elif torch.equal(mask, expected.tril(-1)):
            hint = (
                "the diagonal is False, but a token may attend to itself: keep the "
                "diagonal (tril(), not tril(-1) or tril(diagonal=-1))"
            )
        elif torch.equal(mask, expected.T):
            hint = (
                "this is the upper triangle. Row i is query i and column j is key j; "
                "query i may see keys j <= i, the lower triangle: use .tril()"
            )
        else:
            i, j = _first_difference(mask, expected)
            allowed = "may" if j <= i else "may not"
            hint = (
                f"entry [{i}, {j}] is {bool(mask[i, j])}, but query {i} {allowed} "
                f"attend to key {j}"
            )
        raise AssertionError(f"{name}: {hint}.\n{mask.int()}")
    sizes = ", ".join(str(T) for T in sorted(_mask_sizes()))
    print(
        f"✅ {check}: your causal mask is correct for T = {sizes}; True (may attend) "
        "on and below the diagonal, False above it."
    )


def _sdpa_masks():
    """(description, bool mask, True = may attend) for check_mha_mask_fn."""
    generator = torch.Generator().manual_seed(0)
    random = torch.rand(5, 5, generator=generator) < 0.5  # (5, 5)
    random[:, 0] = True  # every query may attend to at least one key
    wide = torch.ones(3, 5, dtype=torch.bool).tril(diagonal=2)  # (3, 5)
    return [
        ("the causal mask for T = 4", torch.ones(4, 4, dtype=torch.bool).tril()),
        ("a random (5, 5) mask", random),
        ("a (3, 5) mask for 3 queries and 5 keys", wide),
    ]


def _identity_mha(E):
    """An ``nn.MultiheadAttention`` with one head whose projections do nothing.

    With identity projections and zero biases it computes plain scaled
    dot-product attention of its inputs, so its output can be compared with
    ``scaled_dot_product_attention`` on the same tensors.
    """
    mha = torch.nn.MultiheadAttention(E, num_heads=1, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.eye(E).repeat(3, 1))  # (3E, E)
        mha.in_proj_bias.zero_()
        mha.out_proj.weight.copy_(torch.eye(E))
        mha.out_proj.bias.zero_()
    return mha.eval()


def check_mha_mask_fn(fn):
    """Check a function converting an SDPA bool mask to ``nn.MultiheadAttention``'s.

    ``scaled_dot_product_attention`` reads ``True`` as *may attend*;
    ``nn.MultiheadAttention``'s bool ``attn_mask`` reads ``True`` as *blocked*.
    ``fn(mask)`` must return the mask that blocks the same keys in
    ``nn.MultiheadAttention``. It is tried on a causal, a random and a non-square
    mask, and each result is run through a real ``nn.MultiheadAttention`` and
    compared with ``scaled_dot_product_attention`` on the original mask.

    Parameters
    ----------
    fn : callable
        Your function: takes a bool mask (True = may attend), returns a bool mask
        (True = blocked).

    Returns
    -------
    None
        Prints one line starting with ✅ when every mask passes.

    Raises
    ------
    AssertionError
        If ``fn`` raises, returns something that is not a bool tensor of the same
        shape, returns the mask unchanged, gives ``nn.MultiheadAttention`` different
        results, or changes its input in place.

    Shapes
    ------
    mask : (T_q, T_k) -> fn(mask) : (T_q, T_k), bool.

    Examples
    --------
    >>> check_mha_mask_fn(lambda mask: ~mask)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_mha_mask_fn: your conversion is correct; nn.MultiheadAttention with your
    masks gives the same outputs as scaled_dot_product_attention with the originals,
    on 3 masks.
    """
    check = "check_mha_mask_fn"
    _require_callable(fn, check, "to_mha_mask")
    generator = torch.Generator().manual_seed(1)
    E = 4
    mha = _identity_mha(E)
    for description, original in _sdpa_masks():
        where = f" on {description}"
        mask = original.clone()
        result = _call(fn, check, (mask,), description)
        name = f"{check}: your mask"
        result = _require_tensor(result, name, where)
        _require_shape(result, original, name, where)
        if not torch.equal(mask, original):
            raise AssertionError(
                f"{check}: your function changed its input mask{where} in place; "
                "return a new mask, e.g. ~mask, instead of mask.logical_not_()."
            )
        if result.dtype != torch.bool:
            raise AssertionError(
                f"{name}{where} has dtype {result.dtype}; this exercise asks for a "
                "bool mask (True = blocked). nn.MultiheadAttention also accepts a "
                "float mask, but that one is added to the scores (0 / -inf)."
            )
        if torch.equal(result, original):
            raise AssertionError(
                f"{name}{where} is the input unchanged. nn.MultiheadAttention reads "
                "True as blocked, the opposite of scaled_dot_product_attention: "
                "invert the mask with ~mask (or mask.logical_not())."
            )
        T_q, T_k = original.shape
        query = torch.randn(1, T_q, E, generator=generator)  # (B, T_q, E)
        key = torch.randn(1, T_k, E, generator=generator)  # (B, T_k, E)
        expected = scaled_dot_product_attention(query, key, key, attn_mask=original)
        with torch.no_grad():
            output, _ = mha(query, key, key, attn_mask=result, need_weights=False)
        _require_close(
            output,
            expected,
            f"{check}: nn.MultiheadAttention's output with your mask",
            where,
            atol=1e-5,
            rtol=1e-4,
            hint="\nTrue must block exactly the keys the original mask forbids.",
        )
    print(
        f"✅ {check}: your conversion is correct; nn.MultiheadAttention with your "
        "masks gives the same outputs as scaled_dot_product_attention with the "
        "originals, on 3 masks."
    )


def check_additive_mask(fn):
    """Check a function that builds an additive (float) causal mask.

    ``fn(T)`` must return a float ``(T, T)`` mask that is added to the scores: ``0``
    where query ``i`` may attend to key ``j`` (``j <= i``) and ``-inf`` above the
    diagonal. A very large negative number (``<= -1e4``) instead of ``-inf`` is
    accepted too: after the softmax it gives the same weights. It is tried for
    ``T`` = 1, 2, 5 and 6, and on random scores.

    Parameters
    ----------
    fn : callable
        Your function: takes the number of tokens ``T``, returns the float mask.

    Returns
    -------
    None
        Prints one line starting with ✅ when every length passes.

    Raises
    ------
    AssertionError
        If ``fn`` raises, returns a tensor of the wrong shape or dtype, or wrong
        entries: NaN (the ``0 * -inf`` trap), ``+inf``, 0/1 values that block
        nothing, an inverted mask and a missing diagonal are named.

    Shapes
    ------
    fn(T) : (T, T), floating point.

    Examples
    --------
    >>> import torch
    >>> def additive_causal_mask(T):
    ...     blocked = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
    ...     return torch.zeros(T, T).masked_fill(blocked, float("-inf"))
    >>> check_additive_mask(additive_causal_mask)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_additive_mask: your additive mask is correct for T = 1, 2, 5, 6; 0 on
    and below the diagonal, -inf above it, and softmax(scores + mask) gives the
    causal weights.

    The recipe ``triu(ones) * -inf`` multiplies 0 by -inf:

    >>> check_additive_mask(
    ...     lambda T: torch.triu(torch.ones(T, T), diagonal=1) * float("-inf")
    ... )
    Traceback (most recent call last):
    ...
    AssertionError: check_additive_mask: your mask for T = 2 contains NaN: [nan, ...
    """
    check = "check_additive_mask"
    _require_callable(fn, check, "additive_causal_mask")
    generator = torch.Generator().manual_seed(0)
    finite_blocks = False
    for T in _mask_sizes():
        name = f"{check}: your mask for T = {T}"
        allowed = torch.ones(T, T, dtype=torch.bool).tril()  # (T, T)
        mask = _require_tensor(_call(fn, check, (T,), f"T = {T}"), name)
        _require_shape(mask, allowed, name)
        values = mask.detach().to("cpu")
        if not values.is_floating_point():
            raise AssertionError(
                f"{name}: dtype is {values.dtype}; an additive mask is floating "
                "point, 0 where attending is allowed and -inf where it is blocked, "
                "e.g. torch.zeros(T, T).masked_fill(blocked, float('-inf'))."
            )
        values = values.double()
        if torch.isnan(values).any():
            raise AssertionError(
                f"{name} contains NaN: {_fmt_values(values)}. Multiplying a 0/1 mask "
                "by float('-inf') gives 0 * -inf = nan, not 0. Use "
                "torch.zeros(T, T).masked_fill(blocked, float('-inf')) or "
                "torch.where(blocked, float('-inf'), 0.0) instead."
            )
        if torch.isposinf(values).any():
            raise AssertionError(
                f"{name} contains +inf; blocked entries must be -inf, so that their "
                "exponential is 0."
            )
        blocked_ok = values <= -1e4  # -inf, or a very large negative number
        kept_ok = values.abs() < 1e-6
        if bool(blocked_ok[~allowed].all() and kept_ok[allowed].all()):
            finite_blocks |= bool(torch.isfinite(values[~allowed]).any())
            scores = torch.randn(T, T, generator=generator, dtype=torch.float64)
            expected = torch.softmax(scores.masked_fill(~allowed, -torch.inf), -1)
            _require_close(
                torch.softmax(scores + values, dim=-1),
                expected,
                f"{check}: softmax(scores + your mask) for T = {T}",
                atol=1e-6,
                rtol=0,
            )
            continue
        strict = allowed.tril(-1)  # (T, T): the past without the diagonal
        if bool(blocked_ok[allowed].all() and kept_ok[~allowed].all()):
            hint = (
                "your mask is inverted: it blocks the past and the token itself "
                "and keeps the future; put 0 on and below the diagonal and -inf above"
            )
        elif bool(blocked_ok[~allowed.T].all() and kept_ok[allowed.T].all()):
            hint = (
                "it is transposed: it blocks the past and keeps the future. Row i is "
                "query i and column j is key j; block j > i, above the diagonal"
            )
        elif bool(((values == 0) | (values == 1)).all()):
            hint = (
                "it holds only 0 and 1; adding 1 to a score blocks nothing. Blocked "
                "entries need -inf"
            )
        elif bool(blocked_ok[~strict].all() and kept_ok[strict].all()):
            hint = (
                "the diagonal is blocked, but a token may attend to itself: block "
                "only j > i (triu(diagonal=1))"
            )
        else:
            bad = ~torch.where(allowed, kept_ok, blocked_ok)
            i, j = _first_difference(bad, torch.zeros_like(bad))
            want = "0 (allowed)" if j <= i else "-inf (blocked)"
            hint = f"entry [{i}, {j}] is {_fmt_number(values[i, j])}, expected {want}"
        raise AssertionError(f"{name}: {hint}.\n{values.float()}")
    sizes = ", ".join(str(T) for T in sorted(_mask_sizes()))
    blocked = "a large negative number" if finite_blocks else "-inf"
    print(
        f"✅ {check}: your additive mask is correct for T = {sizes}; 0 on and below "
        f"the diagonal, {blocked} above it, and softmax(scores + mask) gives the "
        "causal weights."
    )


def _causal_attention_inputs():
    """(description, queries, keys, values) for check_causal_attention_fn."""
    from .modules import CausalAttention

    generator = torch.Generator().manual_seed(0)
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(123)
        ca = CausalAttention(3, 2, 6, 0.0)
    finally:
        torch.random.set_rng_state(state)
    x = your_journey().embeddings
    with torch.no_grad():
        journey = (ca.W_query(x), ca.W_key(x), ca.W_value(x))
    return [
        ('"Your journey starts with one step" projected to d_k = 2', *journey),
        (
            "a batch: queries and keys (2, 5, 4), values (2, 5, 3)",
            torch.randn(2, 5, 4, generator=generator) * 2,
            torch.randn(2, 5, 4, generator=generator) * 2,
            torch.randn(2, 5, 3, generator=generator),
        ),
    ]


def check_causal_attention_fn(fn):
    """Check a function computing causal scaled dot-product attention.

    ``fn(queries, keys, values)`` must return ``(weights, context)``: query ``i``
    attends only to keys ``0..i``, the scores are divided by ``sqrt(d_k)``, and
    ``context = weights @ values``. The reference is
    :func:`attn_course.scaled_dot_product_attention` with ``is_causal=True``.

    Parameters
    ----------
    fn : callable
        Your function: takes queries, keys and values, returns (weights, context).

    Returns
    -------
    None
        Prints one line starting with ✅ when all inputs pass.

    Raises
    ------
    AssertionError
        On the first input where ``fn`` raises, does not return a pair of tensors or
        returns wrong values; an inverted mask, a missing mask (weight on future
        keys), NaN from ``0 * -inf``, masking after the softmax without
        renormalising and a missing scale are named.

    Shapes
    ------
    queries (..., T, d_k), keys (..., T, d_k), values (..., T, d_v) ->
    weights (..., T, T), context (..., T, d_v).

    Examples
    --------
    >>> import torch
    >>> def causal_attention(queries, keys, values):
    ...     T = queries.shape[-2]
    ...     scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
    ...     future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
    ...     weights = torch.softmax(scores.masked_fill(future, -torch.inf), dim=-1)
    ...     return weights, weights @ values
    >>> check_causal_attention_fn(causal_attention)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_causal_attention_fn: your causal attention is correct; no weight on
    future keys, and its weights and context vectors match on 2 inputs.
    """
    check = "check_causal_attention_fn"
    _require_callable(fn, check, "causal_attention")
    for description, queries, keys, values in _causal_attention_inputs():
        where = f" on {description}"
        inputs = [t.clone() for t in (queries, keys, values)]
        weights, context = _require_pair(
            _call(fn, check, inputs, description), check, where
        )
        expected_context, expected_weights = scaled_dot_product_attention(
            queries, keys, values, is_causal=True, return_weights=True
        )
        name = f"{check}: your weights"
        weights = _require_tensor(weights, name, where)
        _require_shape(weights, expected_weights, name, where)
        T = queries.shape[-2]
        allowed = torch.ones(T, T, dtype=torch.bool).tril()  # (T, T)
        answer = weights.detach().double()
        inverted = _scaled_reference(queries, keys, values, mask=~allowed)[1]
        if _matches(answer[..., :-1, :], inverted[..., :-1, :]):
            raise AssertionError(f"{name}{where}: {_INVERTED}.")
        if torch.isnan(answer).any():
            raise AssertionError(
                f"{name}{where} contain NaN. A common cause is building the mask "
                "as ones * float('-inf'): 0 * -inf = nan. Use "
                "scores.masked_fill(future, float('-inf')), where future is True "
                "above the diagonal."
            )
        future = answer.masked_fill(allowed, 0.0)  # (..., T, T): weights on j > i
        leak = future.abs().reshape(-1, T, T).amax(dim=0)  # (T, T), worst case
        if bool((leak > 1e-6).any()):
            i, j = _unravel(int(leak.reshape(-1).argmax()), (T, T))
            raise AssertionError(
                f"{name}{where} put weight on the future: query {i} gives "
                f"{_fmt_number(leak[i, j])} to key {j} > {i}. Set the scores above "
                "the diagonal to -inf before the softmax."
            )
        scaled = _scaled_reference(queries, keys, values)[1]  # no mask
        if _matches(answer, scaled.masked_fill(~allowed, 0.0)):
            raise AssertionError(
                f"{name}{where}: you zeroed the future weights after the softmax "
                "but did not renormalise, so the rows sum to "
                f"{_fmt_values(answer.sum(-1))}; divide each row by its sum, or "
                "mask with -inf before the softmax."
            )
        _require_weights(weights, name, where)
        unscaled = _scaled_reference(queries, keys, values, scale=1.0, mask=allowed)
        hint = ""
        if _matches(answer, unscaled[1]):
            d_k = keys.shape[-1]
            hint = f"\nYour weights match no scaling: divide the scores by sqrt({d_k})."
        _require_close(
            weights, expected_weights, name, where, atol=1e-4, rtol=1e-4, hint=hint
        )
        name = f"{check}: your context vectors"
        context = _require_tensor(context, name, where)
        _require_shape(context, expected_context, name, where)
        _require_close(
            context,
            expected_context,
            name,
            where,
            atol=1e-4,
            rtol=1e-4,
            hint="\nThe context is weights @ values.",
        )
    print(
        f"✅ {check}: your causal attention is correct; no weight on future keys, and "
        "its weights and context vectors match on 2 inputs."
    )


# --- Chapter 4: Dropout on attention weights ---


def _built_with_seed(seed, factory):
    """``factory()`` run after ``torch.manual_seed(seed)``; the global random state
    is put back afterwards, so a check never changes what the notebook draws next."""
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        return factory()
    finally:
        torch.random.set_rng_state(state)


def _dropout_inputs():
    """(description, weights, p) cases for check_dropout_fn; all weights positive,
    so a zero in the output can only mean a dropped weight."""
    generator = torch.Generator().manual_seed(0)
    return [
        (
            "a (100, 100) tensor of positive weights with p = 0.2",
            torch.rand(100, 100, generator=generator) + 0.5,
            0.2,
        ),
        (
            "a (2, 4, 6, 6) tensor of positive weights with p = 0.5",
            torch.rand(2, 4, 6, 6, generator=generator) + 0.5,
            0.5,
        ),
    ]


def check_dropout_fn(fn):
    """Check a hand-written (inverted) dropout for attention weights.

    ``fn(weights, p, generator)`` must drop each weight with probability ``p``
    (set it to 0), divide every kept weight by ``1 - p``, and draw its random numbers
    from ``generator`` only (``torch.rand(..., generator=generator)`` or
    ``torch.bernoulli(..., generator=generator)``), so that the same seeded generator
    gives the same result. Any way of drawing the mask is accepted: the check tests
    these properties, not one particular mask.

    Parameters
    ----------
    fn : callable
        Your dropout: takes ``(weights, p, generator)``, returns a tensor shaped like
        ``weights``.

    Returns
    -------
    None
        Prints one line starting with ✅ when all properties hold.

    Raises
    ------
    AssertionError
        If ``fn`` raises, returns a wrong shape, changes a weight when ``p = 0``,
        scales kept weights wrongly (no rescaling, ``1/p`` or ``1 - p`` are named),
        drops far more or fewer weights than ``p`` (5 standard deviations), uses the
        global random generator, is not reproducible with the same seeded generator,
        or changes its input in place.

    Shapes
    ------
    weights : any shape -> fn(weights, p, generator) : the same shape.

    Examples
    --------
    >>> import torch
    >>> def dropout(weights, p, generator):
    ...     keep = torch.rand(weights.shape, generator=generator) >= p
    ...     return torch.where(keep, weights / (1 - p), 0.0)
    >>> check_dropout_fn(dropout)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_dropout_fn: your dropout is correct; it drops each weight with
    probability p, divides the kept ones by 1 - p, leaves the weights alone for
    p = 0, and draws only from the generator it is given.

    Forgetting to rescale is caught:

    >>> def unscaled(weights, p, generator):
    ...     keep = torch.rand(weights.shape, generator=generator) >= p
    ...     return torch.where(keep, weights, 0.0)
    >>> check_dropout_fn(unscaled)
    Traceback (most recent call last):
    ...
    AssertionError: check_dropout_fn: ... kept weights are not rescaled: ...
    """
    check = "check_dropout_fn"
    _require_callable(fn, check, "dropout")
    name = f"{check}: your output"
    for description, original, p in _dropout_inputs():
        where = f" on {description}"
        x = original.clone()
        global_state = torch.random.get_rng_state()
        out = _call(fn, check, (x, p, torch.Generator().manual_seed(1)), description)
        used_global = not torch.equal(global_state, torch.random.get_rng_state())
        torch.random.set_rng_state(global_state)
        out = _require_tensor(out, name, where)
        _require_shape(out, original, name, where)
        _require_finite(out, name, where)
        if not torch.equal(x, original):
            raise AssertionError(
                f"{check}: your function changed its input{where} in place; "
                "return a new tensor, e.g. torch.where(keep, weights / (1 - p), 0.0)."
            )
        values = out.detach().to(torch.float64)
        source = original.to(torch.float64)
        kept = values != 0
        if not bool(kept.any()):
            raise AssertionError(
                f"{name}{where} is all zeros: every weight was dropped. Keep each "
                f"weight with probability 1 - p = {1 - p:g}."
            )
        ratio = values[kept] / source[kept]  # 1 / (1 - p) for correct dropout
        scalings = [
            (1 / (1 - p), None),
            (1.0, "the kept weights are not rescaled: divide them by 1 - p"),
            (1 / p, "the kept weights are divided by p: divide them by 1 - p"),
            (
                1 - p,
                "the kept weights are multiplied by 1 - p: divide by 1 - p instead "
                "(inverted dropout rescales in training, so eval needs nothing)",
            ),
        ]
        for scale, mistake in scalings:
            if bool(torch.allclose(ratio, torch.full_like(ratio, scale), rtol=1e-4)):
                if mistake is not None:
                    raise AssertionError(
                        f"{name}{where}: {mistake}. With p = {p:g}, every kept "
                        f"weight must become weight / {1 - p:g}, so that its "
                        "expected value stays what it was."
                    )
                break
        else:
            raise AssertionError(
                f"{name}{where}: every kept weight should be weight / (1 - p) = "
                f"weight * {1 / (1 - p):g}, but the ratios kept / original are "
                f"{_fmt_values(ratio)}. Multiply the whole tensor by one mask of 0s "
                "and 1s and divide by 1 - p."
            )
        dropped = 1.0 - float(kept.double().mean())
        n = values.numel()
        spread = 5 * (p * (1 - p) / n) ** 0.5  # 5 standard deviations of the rate
        if abs(dropped - p) > spread:
            swapped = abs(dropped - (1 - p)) <= spread
            hint = (
                f" That is close to 1 - p = {1 - p:g}: you dropped a weight with "
                "probability 1 - p. torch.bernoulli(probs) gives 1 with probability "
                "probs, so use probs = 1 - p for the KEEP mask (or keep where "
                "torch.rand(...) >= p)."
                if swapped
                else ""
            )
            raise AssertionError(
                f"{name}{where}: {dropped:.1%} of the {n} weights were dropped, but "
                f"with p = {p:g} the rate should be within {spread:.1%} of "
                f"{p:.0%}.{hint}"
            )
        if used_global:
            raise AssertionError(
                f"{check}: your function used the global random generator{where} "
                "(nn.Dropout, F.dropout and torch.rand without generator= all do). "
                "Draw from the generator you are given: "
                "torch.rand(weights.shape, generator=generator), or "
                "torch.bernoulli(probs, generator=generator)."
            )
        again = _call(
            fn,
            check,
            (original.clone(), p, torch.Generator().manual_seed(1)),
            description + " (second call)",
        )
        if not (isinstance(again, torch.Tensor) and torch.equal(again, out)):
            raise AssertionError(
                f"{check}: two calls with generators seeded alike gave different "
                f"results{where}; draw every random number from the generator "
                "argument, and nothing else."
            )
    weights = torch.softmax(torch.arange(12.0).reshape(3, 4) / 4, dim=-1)
    description = "a (3, 4) matrix of weights with p = 0"
    out = _call(fn, check, (weights.clone(), 0.0, torch.Generator()), description)
    out = _require_tensor(out, name, f" on {description}")
    _require_shape(out, weights, name, f" on {description}")
    _require_close(
        out,
        weights,
        name,
        f" on {description}",
        atol=1e-6,
        rtol=1e-6,
        hint="\nWith p = 0 nothing is dropped and 1 / (1 - p) = 1: the weights must "
        "come back unchanged.",
    )
    print(
        f"✅ {check}: your dropout is correct; it drops each weight with probability "
        "p, divides the kept ones by 1 - p, leaves the weights alone for p = 0, and "
        "draws only from the generator it is given."
    )


def check_row_drop_probability(answer, weights, p):
    """Check the probability that dropout removes ALL of a query's weights.

    Dropout drops each weight independently with probability ``p``. A query whose
    row has ``k`` nonzero weights loses all of them with probability ``p ** k``;
    weights that are already 0 (masked keys) cannot make a difference. Its context
    vector is then a vector of zeros for that training step.

    Parameters
    ----------
    answer : torch.Tensor
        Your probabilities, one per query (row of ``weights``).
    weights : torch.Tensor
        The attention weights before dropout, e.g. causal weights with zeros above
        the diagonal.
    p : float
        The dropout probability.

    Returns
    -------
    None
        Prints one line starting with ✅ when the probabilities are right.

    Raises
    ------
    AssertionError
        If ``answer`` is not a tensor, has another shape, or wrong values; the
        probability of keeping all weights, of dropping at least one, a count that
        includes masked keys, and ``p`` alone are named.

    Shapes
    ------
    weights : (..., T_q, T_k); answer : (..., T_q).

    Examples
    --------
    >>> import torch
    >>> causal = torch.tensor([[1.0, 0.0], [0.4, 0.6]])  # 1 and 2 nonzero weights
    >>> check_row_drop_probability(torch.tensor([0.1, 0.01]), causal, 0.1)
    ... # doctest: +NORMALIZE_WHITESPACE
    ✅ check_row_drop_probability: your probabilities are correct; a row with k
    nonzero weights loses all of them with probability p ** k.
    """
    check = "check_row_drop_probability"
    values = weights.detach().to("cpu", torch.float64)
    k = (values != 0).sum(dim=-1).to(torch.float64)  # (..., T_q)
    expected = p**k
    name = f"{check}: your probabilities"
    answer = _require_tensor(answer, name)
    _require_shape(answer, expected, name)
    _require_finite(answer, name)
    slips = [
        ((1 - p) ** k, "the probability that every weight is KEPT, (1 - p) ** k"),
        (
            1 - (1 - p) ** k,
            "the probability that AT LEAST ONE weight is dropped, 1 - (1 - p) ** k",
        ),
        (
            torch.full_like(k, p ** values.shape[-1]),
            f"p ** {values.shape[-1]} for every row: the masked keys were counted "
            "too. Their weights are 0 already, so only the k nonzero weights of a row "
            "matter",
        ),
        (
            torch.full_like(k, p),
            "p for every row: all k weights of a row must be dropped, independently, "
            "so multiply p by itself k times",
        ),
    ]
    hint = ""
    for candidate, slip in slips:
        if _matches(answer, candidate, atol=1e-6) and not _matches(
            candidate, expected, atol=1e-6
        ):
            hint = f"\nYour values match {slip}."
            break
    _require_close(answer, expected, name, atol=1e-6, rtol=1e-4, hint=hint)
    print(
        f"✅ {check}: your probabilities are correct; a row with k nonzero weights "
        "loses all of them with probability p ** k."
    )


def check_eval_forward(fn):
    """Check a function that runs a module deterministically and restores its mode.

    ``fn(module, x)`` must return ``module(x)`` computed with dropout switched off,
    and leave ``module.training`` as it found it: a module in training mode must
    still be in training mode afterwards, and one in eval mode in eval mode. It is
    tried on an ``attn_course.CausalAttention`` with ``dropout=0.5``.

    Parameters
    ----------
    fn : callable
        Your function: takes ``(module, x)``, returns the module's output.

    Returns
    -------
    None
        Prints one line starting with ✅ when it passes.

    Raises
    ------
    AssertionError
        If ``fn`` raises, returns something that is not the deterministic output (a
        function that relies on ``torch.no_grad()`` alone is named: it does not
        switch dropout off), or leaves the module in another mode than before.

    Shapes
    ------
    x : (B, T, d_in) -> fn(module, x) : (B, T, d_out).

    Examples
    --------
    >>> def eval_forward(module, x):
    ...     was_training = module.training
    ...     module.eval()
    ...     try:
    ...         return module(x)
    ...     finally:
    ...         module.train(was_training)
    >>> check_eval_forward(eval_forward)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_eval_forward: your function is correct; its output equals the module
    without dropout, twice in a row, and the module keeps its training or eval
    mode.
    """
    from .modules import CausalAttention

    check = "check_eval_forward"
    _require_callable(fn, check, "eval_forward")
    module = _built_with_seed(123, lambda: CausalAttention(3, 2, 6, 0.5))
    reference = _built_with_seed(123, lambda: CausalAttention(3, 2, 6, 0.0))
    reference.load_state_dict(module.state_dict())  # the same weights, no dropout
    x = your_journey().embeddings.unsqueeze(0)  # (1, T, d_in): a batch of one
    with torch.no_grad():
        expected = reference(x)  # (1, T, d_out)
    state = torch.random.get_rng_state()
    try:
        for mode in ("training", "eval"):
            module.train(mode == "training")
            where = f" on a CausalAttention(3, 2, 6, dropout=0.5) in {mode} mode"
            outputs = []
            for _ in range(2):
                out = _call(fn, check, (module, x.clone()), f"a module in {mode} mode")
                outputs.append(_require_tensor(out, f"{check}: your output", where))
                _require_shape(outputs[-1], expected, f"{check}: your output", where)
                if module.training != (mode == "training"):
                    now = "training" if module.training else "eval"
                    raise AssertionError(
                        f"{check}: the module was in {mode} mode before your function "
                        f"and is in {now} mode after it. Remember the mode first, "
                        "was_training = module.training, and restore it at the end "
                        "with module.train(was_training)."
                    )
            first, second = (o.detach() for o in outputs)
            if not torch.equal(first, second):
                raise AssertionError(
                    f"{check}: two calls gave different outputs{where}: dropout is "
                    "still on. torch.no_grad() only stops gradient tracking; it does "
                    "not switch dropout off. Call module.eval() before the forward "
                    "pass."
                )
            _require_close(
                first,
                expected,
                f"{check}: your output",
                where,
                atol=1e-6,
                rtol=1e-5,
                hint="\nIt should equal module(x) in eval mode.",
            )
    finally:
        torch.random.set_rng_state(state)
    print(
        f"✅ {check}: your function is correct; its output equals the module without "
        "dropout, twice in a row, and the module keeps its training or eval mode."
    )


# --- Chapter 5: Multi-head attention ---


def _head_split_inputs():
    """(description, x, num_heads) cases for check_head_split."""
    generator = torch.Generator().manual_seed(0)
    return [
        (
            "torch.arange(48.0).view(2, 3, 8) with num_heads = 2",
            torch.arange(48.0).view(2, 3, 8),
            2,
        ),
        (
            "torch.arange(48.0).view(2, 3, 8) with num_heads = 4",
            torch.arange(48.0).view(2, 3, 8),
            4,
        ),
        (
            "random x of shape (2, 5, 12) with num_heads = 3",
            torch.randn(2, 5, 12, generator=generator),
            3,
        ),
    ]


def check_head_split(split_heads, merge_heads):
    """Check functions that cut each token's vector into heads and glue it back.

    ``split_heads(x, num_heads)`` must turn ``(B, T, D)`` into ``(B, H, T, d)`` with
    ``d = D // H``: head ``h`` of token ``t`` holds features ``h*d`` to ``(h+1)*d - 1``
    of that token, as in :class:`attn_course.MultiHeadAttention`.
    ``merge_heads(x)`` must undo it: ``(B, H, T, d) -> (B, T, D)``.

    Parameters
    ----------
    split_heads : callable
        Your function ``split_heads(x, num_heads)``.
    merge_heads : callable
        Your function ``merge_heads(x)``.

    Returns
    -------
    None
        Prints one line starting with ✅ when both functions pass on 3 inputs.

    Raises
    ------
    AssertionError
        If a function raises, returns a wrong shape or wrong values; the common
        slips are named: viewing straight to ``(B, H, T, d)``, forgetting the
        transpose (or the transpose back), and ``view`` after ``transpose`` without
        ``contiguous()``.

    Shapes
    ------
    split_heads: (B, T, D) -> (B, H, T, d); merge_heads: (B, H, T, d) -> (B, T, D).

    Examples
    --------
    >>> def split_heads(x, num_heads):
    ...     B, T, D = x.shape
    ...     x = x.view(B, T, num_heads, D // num_heads)  # (B, T, H, d)
    ...     return x.transpose(1, 2)  # (B, H, T, d)
    >>> def merge_heads(x):
    ...     B, H, T, d = x.shape
    ...     return x.transpose(1, 2).contiguous().view(B, T, H * d)  # (B, T, D)
    >>> check_head_split(split_heads, merge_heads)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_head_split: split_heads and merge_heads are correct on 3 inputs, and
    merge_heads(split_heads(x)) gives x back.
    """
    check = "check_head_split"
    _require_callable(split_heads, check, "split_heads")
    _require_callable(merge_heads, check, "merge_heads")
    for description, x, H in _head_split_inputs():
        B, T, D = x.shape
        d = D // H
        expected = x.view(B, T, H, d).transpose(1, 2)  # (B, H, T, d)
        where = f" on {description}"
        name = f"{check}: split_heads's output"
        split = _call(split_heads, check, (x.clone(), H), "split_heads, " + description)
        split = _require_tensor(split, name, where)
        if tuple(split.shape) == (B, T, H, d) != tuple(expected.shape):
            raise AssertionError(
                f"{name}{where} has shape {_shape(split)} = (B, T, H, d); the heads "
                f"must come before the tokens, {_shape(expected)} = (B, H, T, d): "
                "add .transpose(1, 2) after the view."
            )
        _require_shape(split, expected, name, where)
        if _matches(split, x.reshape(B, H, T, d)) and not _matches(split, expected):
            raise AssertionError(
                f"{name}{where} has the right shape but mixes tokens: you reshaped "
                "straight to (B, H, T, d), which cuts the SEQUENCE into H pieces "
                "instead of each token's vector. View as (B, T, H, d) first, then "
                "transpose(1, 2)."
            )
        _require_close(split, expected, name, where, atol=1e-6, rtol=1e-6)

        name = f"{check}: merge_heads's output"
        heads = expected.contiguous()  # (B, H, T, d), as attention returns it
        try:
            merged = merge_heads(heads)
        except RuntimeError as error:
            hint = ""
            if "view" in str(error):
                hint = (
                    " After transpose the tensor is not contiguous in memory, so "
                    ".view cannot merge H and d: call .contiguous() before .view(...), "
                    "or use .reshape(...), which copies when it must."
                )
            raise AssertionError(
                f"{check}: merge_heads raised RuntimeError{where}: "
                f"{str(error).rstrip('.')}.{hint}"
            ) from error
        except Exception as error:
            raise AssertionError(
                f"{check}: merge_heads raised {type(error).__name__}{where}: {error}"
            ) from error
        merged = _require_tensor(merged, name, where)
        _require_shape(merged, x, name, where)
        no_transpose = expected.contiguous().view(B, T, D)
        if _matches(merged, no_transpose) and not _matches(merged, x):
            raise AssertionError(
                f"{name}{where} has the right shape but mixes tokens: you glued "
                "(B, H, T, d) straight into (B, T, D). Transpose back first, "
                "x.transpose(1, 2) -> (B, T, H, d), then .contiguous().view(B, T, D)."
            )
        _require_close(merged, x, name, where, atol=1e-6, rtol=1e-6)
    print(
        f"✅ {check}: split_heads and merge_heads are correct on 3 inputs, and "
        "merge_heads(split_heads(x)) gives x back."
    )


_SHAPE_HINTS = {
    "wrapper output": (
        "in MultiHeadAttentionWrapper d_out is the width of EACH head, so the "
        "output has num_heads * d_out features"
    ),
    "wrapper weights": "one (T, T) matrix per head: (B, H, T, T)",
    "fused output": (
        "in MultiHeadAttention d_out is the TOTAL width: the output has d_out features"
    ),
    "fused weights": "one (T, T) matrix per head: (B, H, T, T)",
    "queries": "the projection keeps B and T and gives d_out features: (B, T, D)",
    "view": "view cuts D into H heads of d = d_out // num_heads: (B, T, H, d)",
    "transpose": "transpose(1, 2) swaps T and H: (B, H, T, d)",
    "context": "weights (B, H, T, T) @ values (B, H, T, d) -> (B, H, T, d)",
    "context.transpose": "transpose(1, 2) swaps H and T back: (B, T, H, d)",
    "context.view": "glue the H heads of each token back together: (B, T, D)",
    "weights": "one (T, T) matrix per head: (B, H, T, T)",
}


def _hint_for(step):
    """The shape hint for a step name such as 'keys.view'."""
    if step in _SHAPE_HINTS:
        return _SHAPE_HINTS[step]
    for suffix in ("view", "transpose"):
        if step.endswith("." + suffix) and not step.startswith("context"):
            return _SHAPE_HINTS[suffix]
    if step in ("keys", "values", "out_proj", "x"):
        return "(B, T, d_in) for x; the projections give (B, T, D)"
    return ""


def check_shape_predictions(answer, *, d_in, d_out, num_heads, batch_size, num_tokens):
    """Check predicted shapes for the wrapper and the fused multi-head module.

    Builds ``MultiHeadAttentionWrapper(d_in, d_out, num_tokens, 0.0, num_heads)``
    and ``MultiHeadAttention(d_in, d_out, num_tokens, 0.0, num_heads)`` with the
    SAME arguments, runs both on a ``(batch_size, num_tokens, d_in)`` input (the
    fused one with a :class:`attn_course.ShapeTracer`), and compares every shape in
    ``answer``.

    Parameters
    ----------
    answer : dict
        Predicted shapes (tuples, lists or ``torch.Size``). Keys: ``"wrapper
        output"``, ``"wrapper weights"``, ``"fused output"``, ``"fused weights"``,
        and any step name of the tracer, such as ``"queries.view"``,
        ``"queries.transpose"``, ``"context"``, ``"context.transpose"``.
    d_in, d_out, num_heads, batch_size, num_tokens : int
        The arguments of both modules and the input size.

    Returns
    -------
    None
        Prints one line starting with ✅ when every prediction is right.

    Raises
    ------
    AssertionError
        If ``answer`` is not a dict, a key is unknown, or shapes are wrong (every
        wrong one is listed with the right shape and why).

    Shapes
    ------
    x : (batch_size, num_tokens, d_in).

    Examples
    --------
    >>> predicted = {
    ...     "wrapper output": (2, 5, 8),
    ...     "fused output": (2, 5, 4),
    ...     "queries.view": (2, 5, 2, 2),
    ... }
    >>> check_shape_predictions(
    ...     predicted, d_in=3, d_out=4, num_heads=2, batch_size=2, num_tokens=5
    ... )  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_shape_predictions: all 3 predicted shapes are correct for d_in=3,
    d_out=4, num_heads=2 and x of shape (2, 5, 3).
    """
    from .modules import MultiHeadAttention, MultiHeadAttentionWrapper, ShapeTracer

    check = "check_shape_predictions"
    if not isinstance(answer, dict):
        raise AssertionError(
            f"{check}: expected a dict such as {{'fused output': (2, 5, 4)}}, got "
            f"{type(answer).__name__}."
        )
    args = (d_in, d_out, num_tokens, 0.0, num_heads)
    wrapper = _built_with_seed(0, lambda: MultiHeadAttentionWrapper(*args))
    fused = _built_with_seed(0, lambda: MultiHeadAttention(*args))
    x = torch.zeros(batch_size, num_tokens, d_in)
    tracer = ShapeTracer()
    with torch.no_grad():
        wrapper_out, wrapper_weights = wrapper(x, return_weights=True)
        fused_out, fused_weights = fused(x, return_weights=True, trace=tracer)
    actual = {
        "wrapper output": tuple(wrapper_out.shape),
        "wrapper weights": tuple(wrapper_weights.shape),
        "fused output": tuple(fused_out.shape),
        "fused weights": tuple(fused_weights.shape),
    }
    actual.update(dict(tracer.steps))
    unknown = [key for key in answer if key not in actual]
    if unknown:
        raise AssertionError(
            f"{check}: unknown key(s) {unknown}; use any of {list(actual)}."
        )
    wrong = []
    for key, predicted in answer.items():
        try:
            predicted = tuple(int(n) for n in predicted)
        except (TypeError, ValueError):
            wrong.append(f"  {key}: {predicted!r} is not a shape; write it as a tuple")
            continue
        if predicted != actual[key]:
            wrong.append(
                f"  {key}: you predicted {predicted}, the module gives {actual[key]}; "
                f"{_hint_for(key)}"
            )
    setting = (
        f"d_in={d_in}, d_out={d_out}, num_heads={num_heads} and x of shape "
        f"{(batch_size, num_tokens, d_in)}"
    )
    if wrong:
        raise AssertionError(
            f"{check}: {len(wrong)} of {len(answer)} shapes are wrong for {setting} "
            f"(H = {num_heads}, d = d_out // H = {d_out // num_heads}):\n"
            + "\n".join(wrong)
        )
    count = len(answer)
    print(f"✅ {check}: all {count} predicted shapes are correct for {setting}.")


_PARAM_CONFIGS = [
    (3, 2, 2, False),
    (3, 8, 2, True),
    (3, 8, 4, True),
    (10, 12, 3, False),
    (512, 256, 8, False),
    (768, 768, 12, True),
    (768, 768, 1, True),
]


def check_param_count_fn(fn):
    """Check a formula for the number of parameters of ``MultiHeadAttention``.

    ``fn(d_in, d_out, num_heads, qkv_bias)`` must return the number of trainable
    numbers in ``attn_course.MultiHeadAttention(d_in, d_out, context_length, dropout,
    num_heads, qkv_bias)``: three ``d_in -> d_out`` projections (with a bias each when
    ``qkv_bias``) and ``out_proj``, ``d_out -> d_out`` with a bias. The reference is
    counted from real modules, for 7 settings.

    Parameters
    ----------
    fn : callable
        Your formula: takes ``(d_in, d_out, num_heads, qkv_bias)``, returns an int.

    Returns
    -------
    None
        Prints one line starting with ✅ when all settings match.

    Raises
    ------
    AssertionError
        On the first setting where ``fn`` raises, does not return a whole number,
        or returns a wrong count; a missing bias, a missing ``out_proj`` and a count
        that grows with ``num_heads`` are named.

    Shapes
    ------
    No tensors: ``fn`` returns a number.

    Examples
    --------
    >>> def count(d_in, d_out, num_heads, qkv_bias):
    ...     projections = 3 * (d_in * d_out + (d_out if qkv_bias else 0))
    ...     return projections + d_out * d_out + d_out  # + out_proj
    >>> check_param_count_fn(count)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_param_count_fn: your formula is correct; it matches the parameters of
    MultiHeadAttention in all 7 settings, e.g. 2,362,368 for d_in = d_out = 768 with
    12 heads and qkv_bias=True (GPT-2 small).
    """
    from .modules import MultiHeadAttention

    check = "check_param_count_fn"
    _require_callable(fn, check, "count")
    for d_in, d_out, H, bias in _PARAM_CONFIGS:
        setting = f"d_in={d_in}, d_out={d_out}, num_heads={H}, qkv_bias={bias}"

        def build(d_in=d_in, d_out=d_out, H=H, bias=bias):
            return MultiHeadAttention(d_in, d_out, 1, 0.0, H, qkv_bias=bias)

        module = _built_with_seed(0, build)
        expected = sum(p.numel() for p in module.parameters())
        got = _call(fn, check, (d_in, d_out, H, bias), setting)
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if isinstance(got, float) and got.is_integer():
            got = int(got)
        if isinstance(got, bool) or not isinstance(got, int):
            raise AssertionError(
                f"{check}: for {setting} your function returned {got!r}; return a "
                "whole number (an int)."
            )
        if got == expected:
            continue
        qkv = 3 * (d_in * d_out + (d_out if bias else 0))
        slips = [
            (expected - d_out, "the bias of out_proj (d_out numbers) is missing"),
            (
                expected - 3 * d_out if bias else None,
                "the three qkv biases (3 * d_out) are missing",
            ),
            (
                None if bias else expected + 3 * d_out,
                "three qkv biases are counted, but qkv_bias=False",
            ),
            (qkv, "out_proj (d_out * d_out + d_out) is missing"),
            (
                4 * d_out * d_out + 4 * d_out,
                "you used 4 * d_out**2 + 4 * d_out, which holds only when d_in = d_out "
                "and qkv_bias=True; each of the three projections has d_in * d_out "
                "weights",
            ),
            (
                expected * H,
                "the count is multiplied by num_heads: the heads SPLIT d_out, they "
                "do not add parameters",
            ),
        ]
        hint = ""
        for value, slip in slips:
            if got == value:
                hint = f" It looks like {slip}."
                break
        raise AssertionError(
            f"{check}: for {setting} your function returned {got:,}, but the module "
            f"has {expected:,} parameters.{hint}"
        )
    print(
        f"✅ {check}: your formula is correct; it matches the parameters of "
        "MultiHeadAttention in all 7 settings, e.g. 2,362,368 for d_in = d_out = 768 "
        "with 12 heads and qkv_bias=True (GPT-2 small)."
    )


def check_head_counts_fn(fn):
    """Check a function that lists the valid head counts for a width ``d_out``.

    ``fn(d_out)`` must return every ``num_heads`` that
    ``attn_course.MultiHeadAttention`` accepts for this ``d_out``, in increasing
    order: the divisors of ``d_out``, each giving heads of width
    ``d_out // num_heads``.

    Parameters
    ----------
    fn : callable
        Your function: takes ``d_out``, returns a list of ints.

    Returns
    -------
    None
        Prints one line starting with ✅ when it is right for 6 widths.

    Raises
    ------
    AssertionError
        On the first width where ``fn`` raises, returns something that is not a
        sequence of ints, misses a valid count (1 and ``d_out`` itself are named),
        includes an invalid one, or is not in increasing order.

    Shapes
    ------
    No tensors: ``fn`` returns a list.

    Examples
    --------
    >>> def valid_head_counts(d_out):
    ...     return [h for h in range(1, d_out + 1) if d_out % h == 0]
    >>> check_head_counts_fn(valid_head_counts)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_head_counts_fn: your function is correct for d_out = 8, 12, 7, 1, 768
    and 1024; e.g. d_out = 8 allows num_heads in [1, 2, 4, 8].
    """
    check = "check_head_counts_fn"
    _require_callable(fn, check, "valid_head_counts")
    widths = (8, 12, 7, 1, 768, 1024)
    for d_out in widths:
        expected = [h for h in range(1, d_out + 1) if d_out % h == 0]
        got = _call(fn, check, (d_out,), f"d_out={d_out}")
        try:
            got = [int(h) for h in got]
        except (TypeError, ValueError):
            raise AssertionError(
                f"{check}: for d_out={d_out} your function returned {got!r}; return "
                "a list of ints such as [1, 2, 4, 8]."
            ) from None
        if got == expected:
            continue
        invalid = [h for h in got if h < 1 or d_out % h != 0]
        missing = [h for h in expected if h not in got]
        if invalid:
            h = invalid[0]
            why = (
                f"num_heads={h} does not divide d_out={d_out} "
                f"({d_out} / {h} = {d_out / h:g} is not a whole head width)"
                if h >= 1
                else f"num_heads={h} is not a positive number of heads"
            )
            problem = f"it includes {invalid[:8]}: {why}"
        elif missing:
            problem = f"it misses {missing[:8]}"
            if 1 in missing or d_out in missing:
                problem += (
                    f"; 1 and d_out itself are valid too (one head of width {d_out}, "
                    f"or {d_out} heads of width 1)"
                )
        elif sorted(set(got)) == expected:
            problem = "it has the right counts, but list each once, in increasing order"
        else:
            problem = "it differs"
        raise AssertionError(
            f"{check}: for d_out={d_out} your function returned "
            f"{got[:12]}{' ...' if len(got) > 12 else ''}; {problem}. The right "
            f"answer starts {expected[:8]}."
        )
    print(
        f"✅ {check}: your function is correct for d_out = 8, 12, 7, 1, 768 and "
        "1024; e.g. d_out = 8 allows num_heads in [1, 2, 4, 8]."
    )


# --- Chapter 6: Encoder, decoder and cross-attention ---


def _cross_mask_cases():
    """(description, src ids (B, T_s) with <pad> = 0, T_t) for the mask check.

    The second case has B == T_t, where a (B, T_s) mask broadcasts without an
    error but pairs query i with the padding of sentence i.
    """
    generator = torch.Generator().manual_seed(6)
    cases = []
    for lengths, T_t in (([5, 3, 1], 4), ([4, 2, 3, 1], 4), ([3], 2)):
        T_s = max(lengths)
        src = torch.randint(3, 39, (len(lengths), T_s), generator=generator)
        for b, n in enumerate(lengths):
            src[b, n:] = 0  # <pad> after the real tokens
        cases.append((f"source lengths {lengths} and T_t = {T_t}", src, T_t))
    return cases


def check_cross_attention_mask(fn):
    """Check a function that builds the cross-attention mask of a padded batch.

    ``fn(src, T_t)`` gets source ids ``(B, T_s)`` padded with ``<pad>`` (id 0) and
    the target length ``T_t``, and must return a bool mask that broadcasts against
    the cross-attention scores ``(B, H, T_t, T_s)``: ``True`` (may attend) for
    every real source token, ``False`` for padding, the same for every head and
    every target position. ``(B, 1, 1, T_s)`` and ``(B, 1, T_t, T_s)`` both work.

    Parameters
    ----------
    fn : callable
        Your function ``fn(src, T_t) -> mask``.

    Returns
    -------
    None
        Prints one line starting with ✅ when all three batches pass.

    Raises
    ------
    AssertionError
        If ``fn`` raises or returns a wrong mask; a ``(B, T_s)`` mask that does not
        broadcast, or broadcasts wrongly because ``B == T_t``, an inverted mask, a
        causal mask and a float mask are named.

    Shapes
    ------
    src : (B, T_s); fn(src, T_t) : broadcastable to (B, H, T_t, T_s), bool.

    Examples
    --------
    >>> def my_cross_mask(src, T_t):
    ...     return (src != 0)[:, None, None, :]  # (B, T_s) -> (B, 1, 1, T_s)
    >>> check_cross_attention_mask(my_cross_mask)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_cross_attention_mask: your mask is correct for 3 padded batches; every
    target position of every head may attend to the real source tokens and to no
    padding.
    >>> check_cross_attention_mask(lambda src, T_t: src != 0)
    Traceback (most recent call last):
    ...
    AssertionError: check_cross_attention_mask: your mask for source lengths ...
    """
    check = "check_cross_attention_mask"
    _require_callable(fn, check, "my_cross_mask")
    H = 2
    for description, src, T_t in _cross_mask_cases():
        B, T_s = src.shape
        scores_shape = (B, H, T_t, T_s)
        real = src != 0  # (B, T_s)
        expected = real[:, None, None, :].expand(scores_shape)  # (B, H, T_t, T_s)
        name = f"{check}: your mask for {description}"
        mask = _call(fn, check, (src.clone(), T_t), description)
        mask = _require_tensor(mask, name)
        if mask.dtype != torch.bool:
            raise AssertionError(
                f"{name}: dtype is {mask.dtype}, not bool. Compare the ids with the "
                "<pad> id, src != 0, which gives bool directly (True = real token = "
                "may attend); a float mask of 0 and 1 would be added to the scores."
            )
        try:
            broadcast = torch.broadcast_shapes(tuple(mask.shape), scores_shape)
        except RuntimeError:
            broadcast = None
        two_d = tuple(mask.shape) == (B, T_s)
        if broadcast != scores_shape:
            fix = "give it the shape (B, 1, 1, T_s) or (B, 1, T_t, T_s)"
            if two_d:
                fix = (
                    "a (B, T_s) padding mask lines up with the last two dimensions "
                    "(T_t, T_s) of the scores, not with (B, ..., T_s); insert the "
                    "head and query dimensions: mask[:, None, None, :] or "
                    "attn_course.key_padding_to_attn_mask(mask) -> (B, 1, 1, T_s)"
                )
            raise AssertionError(
                f"{name}: shape {tuple(mask.shape)} does not broadcast to the scores "
                f"shape {scores_shape} (B, H, T_t, T_s); {fix}."
            )
        mask = mask.expand(scores_shape)
        if torch.equal(mask, expected):
            continue
        if two_d:
            hint = (
                f"your mask has shape (B, T_s) = {(B, T_s)}. It broadcasts only "
                f"because B = T_t = {B}, and then query row i gets the padding of "
                "sentence i instead of its own sentence's: a silent bug. Insert the "
                "head and query dimensions: mask[:, None, None, :] -> (B, 1, 1, T_s)"
            )
        elif torch.equal(mask, ~expected):
            hint = _INVERTED
        elif torch.equal(mask, expected & torch.ones(T_t, T_s, dtype=bool).tril()):
            hint = (
                "your mask is also causal. Cross-attention is never causal: the "
                "source sentence is complete before decoding starts, so every "
                "target position may see every real source token"
            )
        else:
            index = _first_difference(mask, expected)
            b, _, i, j = index
            should = "a real token" if bool(real[b, j]) else "padding"
            hint = (
                f"entry {_fmt_index(index)} is {bool(mask[index])}, but source "
                f"position {j} of sentence {b} is {should} (for every head and "
                f"target position, e.g. {i})"
            )
        raise AssertionError(f"{name}: {hint}.\nsource ids:\n{src}")
    print(
        f"✅ {check}: your mask is correct for 3 padded batches; every target "
        "position of every head may attend to the real source tokens and to no "
        "padding."
    )


_SHAPE_KEYS = ("W_query", "W_key", "W_value", "out_proj", "weights", "output")


def check_cross_attention_shapes(
    answer, *, d_in, d_context, d_out, num_heads, batch_size, T_q, T_k
):
    """Check predicted shapes and parameter count of a :class:`CrossAttention`.

    ``answer`` is a dict with the shapes of ``W_query.weight``, ``W_key.weight``,
    ``W_value.weight`` and ``out_proj.weight`` of
    ``CrossAttention(d_in, d_out, num_heads, d_context=d_context)``, the shapes of
    its attention ``weights`` and ``output`` for queries ``(batch_size, T_q, d_in)``
    and a context ``(batch_size, T_k, d_context)``, and its ``num_parameters``.
    The reference is the real module, built and run here.

    Parameters
    ----------
    answer : dict
        Keys ``"W_query"``, ``"W_key"``, ``"W_value"``, ``"out_proj"``,
        ``"weights"``, ``"output"`` (tuples of ints) and ``"num_parameters"`` (int).
    d_in, d_context, d_out, num_heads, batch_size, T_q, T_k : int
        The sizes of the exercise.

    Returns
    -------
    None
        Prints one line starting with ✅ when every prediction is right.

    Raises
    ------
    AssertionError
        For a missing key or a wrong prediction; transposed ``nn.Linear`` weights,
        swapped query and key lengths, a missing head dimension and a parameter count
        without the biases are named.

    Examples
    --------
    >>> answer = {
    ...     "W_query": (4, 4), "W_key": (4, 6), "W_value": (4, 6), "out_proj": (4, 4),
    ...     "weights": (1, 2, 3, 5), "output": (1, 3, 4), "num_parameters": 84,
    ... }
    >>> check_cross_attention_shapes(
    ...     answer, d_in=4, d_context=6, d_out=4, num_heads=2, batch_size=1, T_q=3,
    ...     T_k=5,
    ... )  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_cross_attention_shapes: all 7 predictions are right for
    CrossAttention(d_in=4, d_out=4, num_heads=2, d_context=6) on 3 queries and 5
    keys.
    """
    from .modules import CrossAttention  # imported here, where it is needed

    check = "check_cross_attention_shapes"
    if not isinstance(answer, dict):
        raise AssertionError(
            f"{check}: expected a dict such as {{'W_query': (d_out, d_in), ...}}, "
            f"got {type(answer).__name__}."
        )
    missing = [key for key in (*_SHAPE_KEYS, "num_parameters") if key not in answer]
    if missing:
        raise AssertionError(f"{check}: your dict lacks the keys {missing}.")
    torch.manual_seed(0)
    module = CrossAttention(d_in, d_out, num_heads, d_context=d_context)
    x = torch.zeros(batch_size, T_q, d_in)
    context = torch.zeros(batch_size, T_k, d_context)
    output, weights = module(x, context, return_weights=True)
    expected = {
        "W_query": tuple(module.W_query.weight.shape),
        "W_key": tuple(module.W_key.weight.shape),
        "W_value": tuple(module.W_value.weight.shape),
        "out_proj": tuple(module.out_proj.weight.shape),
        "weights": tuple(weights.shape),
        "output": tuple(output.shape),
    }
    for key in _SHAPE_KEYS:
        value = answer[key]
        try:
            received = tuple(int(n) for n in value)
        except (TypeError, ValueError):
            raise AssertionError(
                f"{check}: answer[{key!r}] must be a shape such as (2, 3), got "
                f"{value!r}."
            ) from None
        right = expected[key]
        if received == right:
            continue
        hint = ""
        if key.startswith(("W_", "out_")) and received == right[::-1]:
            hint = (
                " nn.Linear(in_features, out_features) stores its weight as "
                "(out_features, in_features), the transpose of the x @ W "
                "convention: it computes x @ weight.T."
            )
        elif key == "weights" and received == (*right[:2], right[3], right[2]):
            hint = (
                " Rows are queries and columns keys: the T_q target positions ask, "
                "the T_k source tokens answer, so (B, H, T_q, T_k)."
            )
        elif key == "weights" and received in (
            (right[0], right[2], right[3]),
            right[2:],
        ):
            hint = " Each head has its own weights: keep the head dimension H."
        elif key == "W_key" or key == "W_value":
            hint = (
                " Keys and values are computed from the context (the encoder "
                f"output, width d_context = {d_context}), not from the queries."
            )
        raise AssertionError(
            f"{check}: answer[{key!r}] is {received}, but the module gives {right}."
            f"{hint}"
        )
    count = sum(p.numel() for p in module.parameters())
    received = answer["num_parameters"]
    if received != count:
        weights_only = sum(p.numel() for p in module.parameters() if p.dim() == 2)
        hint = ""
        if received == weights_only:
            hint = (
                f" You counted the weight matrices only: out_proj also has a bias of "
                f"{d_out} numbers (the query, key and value projections have none, "
                "qkv_bias=False)."
            )
        elif received == weights_only + 4 * d_out:
            hint = (
                " Only out_proj has a bias here: qkv_bias=False gives the query, "
                "key and value projections none."
            )
        raise AssertionError(
            f"{check}: answer['num_parameters'] is {received!r}, but the module has "
            f"{count}.{hint}"
        )
    print(
        f"✅ {check}: all 7 predictions are right for CrossAttention(d_in={d_in}, "
        f"d_out={d_out}, num_heads={num_heads}, d_context={d_context}) on {T_q} "
        f"queries and {T_k} keys."
    )


def _detector_models():
    """(description, model, sees the future?) for check_future_detector."""
    from .seq2seq import Seq2SeqConfig, Seq2SeqTransformer

    models = []
    for causal in (True, False):
        torch.manual_seed(0)
        config = Seq2SeqConfig(
            11,
            13,
            d_model=16,
            num_heads=2,
            num_layers=1,
            d_ff=32,
            causal_decoder=causal,
        )
        name = "a causal decoder" if causal else "a decoder without the causal mask"
        models.append((name, Seq2SeqTransformer(config).eval(), not causal))
    return models


def check_future_detector(fn):
    """Check a function that tells whether a decoder can see future target tokens.

    ``fn(model, src, tgt_in)`` gets a :class:`attn_course.Seq2SeqTransformer`,
    source ids ``(B, T_s)`` and target ids ``(B, T_t)``, and must return ``True``
    if some logit depends on a *later* target token (the decoder sees the future)
    and ``False`` if not. It is tried on a causal decoder and on one built with
    ``causal_decoder=False``, for two batches.

    Parameters
    ----------
    fn : callable
        Your function ``fn(model, src, tgt_in) -> bool``.

    Returns
    -------
    None
        Prints one line starting with ✅ when every answer is right.

    Raises
    ------
    AssertionError
        If ``fn`` raises, returns something that is not a bool, changes its inputs
        in place, or gives a wrong answer (with the likely reason).

    Examples
    --------
    >>> def sees_the_future(model, src, tgt_in):
    ...     changed = tgt_in.clone()
    ...     changed[:, -1] = (changed[:, -1] + 1) % 10 + 3  # change the last token
    ...     before, after = model(src, tgt_in), model(src, changed)
    ...     return not torch.equal(before[:, :-1], after[:, :-1])
    >>> check_future_detector(sees_the_future)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_future_detector: your detector is right on 2 batches: it clears the
    causal decoder and catches the one without the causal mask.
    """
    check = "check_future_detector"
    _require_callable(fn, check, "sees_the_future")
    generator = torch.Generator().manual_seed(6)
    batches = [
        (
            torch.randint(3, 11, (2, 6), generator=generator),
            torch.randint(3, 13, (2, 5), generator=generator),
        ),
        (
            torch.randint(3, 11, (3, 4), generator=generator),
            torch.randint(3, 13, (3, 7), generator=generator),
        ),
    ]
    for description, model, leaks in _detector_models():
        for src, tgt_in in batches:
            where = f" for {description} and tgt_in of shape {tuple(tgt_in.shape)}"
            src_copy, tgt_copy = src.clone(), tgt_in.clone()
            with torch.no_grad():
                answer = _call(fn, check, (model, src_copy, tgt_copy), where[5:])
            if not (torch.equal(src_copy, src) and torch.equal(tgt_copy, tgt_in)):
                raise AssertionError(
                    f"{check}: your function changed src or tgt_in in place{where}; "
                    "change a copy instead: changed = tgt_in.clone()."
                )
            if isinstance(answer, torch.Tensor) and answer.numel() == 1:
                answer = bool(answer)
            if not isinstance(answer, bool):
                raise AssertionError(
                    f"{check}: expected True or False{where}, got "
                    f"{type(answer).__name__} {answer!r}."
                )
            if answer == leaks:
                continue
            if leaks:
                hint = (
                    "it missed a decoder that sees the future. Change a target token "
                    "that has positions before it (the last one is a good choice) "
                    "and compare the logits at the positions BEFORE it: with the "
                    "leak, they change"
                )
            else:
                hint = (
                    "it flagged the causal decoder. The logits at the changed "
                    "position and after it may change (they see the new token); "
                    "compare only the positions before it"
                )
            raise AssertionError(f"{check}: wrong answer {answer}{where}: {hint}.")
    print(
        f"✅ {check}: your detector is right on 2 batches: it clears the causal "
        "decoder and catches the one without the causal mask."
    )
