"""Argument checks shared by every module of the package.

A ``TypeError`` when an argument is the wrong kind of thing (not a tensor, not an
int, a mask that is not bool, integers where floats are needed), a ``ValueError``
when it is the right kind with a wrong value (out of range, a wrong shape, sizes
that do not fit together). The same mistake gets the same wording wherever it is
made; each message names what was received and how to fix it. Private: a learner
only meets the messages.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping
from numbers import Real

import torch

__all__ = [
    "describe_call",
    "kind_of",
    "require_bool_mask",
    "require_choice",
    "require_floating",
    "require_index",
    "require_int",
    "require_positive",
    "require_probability",
    "require_tensor",
    "require_tokens",
]


def kind_of(value):
    """The kind of ``value`` for a message: ``int``, ``numpy.ndarray``, ..."""
    kind = type(value)
    if kind.__module__ in ("builtins", None):
        return kind.__name__
    return f"{kind.__module__.split('.')[0]}.{kind.__name__}"


def describe_call(name, args):
    """``Name(a=1, b=2)``: a call as it was received, to spot swapped arguments."""
    inner = ", ".join(f"{key}={value!r}" for key, value in args.items())
    return f"{name}({inner})"


def _called(called_as):
    return f" (called as {called_as}: check the values and their order)" * bool(
        called_as
    )


def require_tensor(value, name, *, fix=None):
    """Return ``value`` if it is a tensor; otherwise a ``TypeError`` with ``fix``."""
    if isinstance(value, torch.Tensor):
        return value
    if fix is None:
        if type(value).__module__.split(".")[0] == "numpy":
            fix = f"convert it first, e.g. {name} = torch.from_numpy({name})"
        else:
            fix = f"convert it first, e.g. {name} = torch.tensor({name})"
    raise TypeError(f"{name} must be a torch.Tensor, got {kind_of(value)}; {fix}")


def require_floating(tensor, name):
    """Return ``tensor`` if its dtype is floating point; otherwise ``TypeError``."""
    if tensor.is_floating_point():
        return tensor
    raise TypeError(
        f"{name} must be floating point, got dtype {tensor.dtype}; convert it "
        f"first, e.g. {name} = {name}.float()"
    )


def require_int(value, name, *, minimum=1, hint="", called_as=None):
    """Return ``value`` if it is an int of at least ``minimum``.

    A bool, a float or anything else is a ``TypeError``; an int below ``minimum`` a
    ``ValueError``. ``hint`` ends the ValueError's message; ``called_as`` (see
    :func:`describe_call`) shows the whole call, for arguments that are easy to
    swap.

    >>> require_int(2.0, "num_heads")
    Traceback (most recent call last):
    ...
    TypeError: num_heads must be an int, got float 2.0; e.g. num_heads=2
    >>> require_int(0, "T_q")
    Traceback (most recent call last):
    ...
    ValueError: T_q must be at least 1, got T_q=0
    """
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            # operator.index(True) would give 1: a bool is not a size.
            if isinstance(value, bool) or getattr(value, "dtype", None) == torch.bool:
                raise TypeError
            value = operator.index(value)  # numpy and tensor integers are fine
        except TypeError:
            example = max(minimum, 2)
            raise TypeError(
                f"{name} must be an int, got {kind_of(value)} {value!r}; e.g. "
                f"{name}={example}{_called(called_as)}"
            ) from None
    if value < minimum:
        raise ValueError(
            f"{name} must be at least {minimum}, got {name}={value}"
            + (f"; {hint}" if hint else "")
            + _called(called_as)
        )
    return int(value)


def _as_real(value, name, hint, called_as=None):
    """``value`` as a float, or ``TypeError`` (a one-element tensor is a number)."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, Real):
        shown = f" {value!r}" if isinstance(value, (str, bool, type(None))) else ""
        raise TypeError(
            f"{name} must be a number, got {kind_of(value)}{shown}; {hint}"
            + _called(called_as)
        )
    return float(value)


DROPOUT_HINT = (
    "it is the probability of dropping an attention weight: use e.g. 0.1, or 0.0 "
    "for no dropout"
)


def require_probability(value, name, *, hint=DROPOUT_HINT, called_as=None):
    """Return ``value`` as a float in ``[0, 1)``: a dropout probability.

    ``hint`` ends both messages; it defaults to :data:`DROPOUT_HINT`.

    >>> require_probability(1.0, "dropout", hint="use e.g. 0.1")
    Traceback (most recent call last):
    ...
    ValueError: dropout must be in [0, 1), got dropout=1.0; use e.g. 0.1
    >>> require_probability("0.1", "dropout_p")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: dropout_p must be a number, got str '0.1'; it is the probability ...
    """
    p = _as_real(value, name, hint, called_as)
    if not 0.0 <= p < 1.0:
        raise ValueError(
            f"{name} must be in [0, 1), got {name}={value!r}; {hint}"
            + _called(called_as)
        )
    return p


def require_positive(value, name, *, hint):
    """Return ``value`` as a positive, finite float whose inverse is finite too."""
    number = _as_real(value, name, hint)
    if not (math.isfinite(number) and number > 0):
        raise ValueError(
            f"{name} must be a positive finite number, got {name}={value!r}; {hint}"
        )
    if not math.isfinite(1.0 / number):
        raise ValueError(
            f"{name}={number:g} is too small: its inverse overflows; {hint}"
        )
    return number


def require_bool_mask(mask, name, *, meaning="True = may attend", fix=None):
    """Return ``mask`` if it is a bool tensor; otherwise ``TypeError``."""
    require_tensor(mask, name, fix=fix)
    if mask.dtype != torch.bool:
        raise TypeError(
            f"{name} must be bool ({meaning}), got dtype {mask.dtype}; if 1 marks "
            f"the positions that may be attended to, use {name}.bool()"
        )
    return mask


def require_tokens(tokens, count):
    """Return the tokens as a tuple of str, one per row of ``count`` rows.

    >>> require_tokens("Hello shiny", 2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: tokens must be a sequence of tokens such as ('Hello', 'shiny', ...
    """
    if isinstance(tokens, str):
        raise TypeError(
            "tokens must be a sequence of tokens such as ('Hello', 'shiny', 'sun!'), "
            f"not one string {tokens!r}; split it first, e.g. {tokens!r}.split()"
        )
    try:
        tokens = tuple(str(token) for token in tokens)
    except TypeError:
        raise TypeError(
            f"tokens must be a sequence of str, one per row, got {kind_of(tokens)}"
        ) from None
    if len(tokens) != count:
        raise ValueError(
            f"got {len(tokens)} tokens {tokens} but {count} rows; pass one token per "
            "row"
        )
    return tokens


def require_index(value, count, name, *, tokens=None):
    """Return ``value`` as a position in ``0 .. count - 1`` (negative counts from
    the end).

    >>> require_index(3, 3, "query_index")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: query_index=3 is out of range for 3 tokens; choose 0 to 2 (or ...
    """
    if isinstance(value, str):
        where = f"tokens.index({value!r})" if tokens else "its position"
        raise TypeError(
            f"{name} must be an int position, got the string {value!r}; use {where}"
        )
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int position, got bool {value!r}")
    try:
        index = operator.index(value)
    except TypeError:
        raise TypeError(
            f"{name} must be an int position, got {kind_of(value)} {value!r}"
        ) from None
    if not -count <= index < count:
        listing = f" {tuple(tokens)}" if tokens else ""
        raise ValueError(
            f"{name}={index} is out of range for {count} tokens{listing}; choose 0 "
            f"to {count - 1} (or -{count} to -1 to count from the end)"
        )
    return index % count


def require_flag(value, name, *, hint=""):
    """Return ``value`` if it is ``True`` or ``False``; ``hint`` says what each means.

    >>> require_flag(1, "use_cache")
    Traceback (most recent call last):
    ...
    TypeError: use_cache must be True or False, got int 1
    """
    if isinstance(value, bool):
        return value
    raise TypeError(
        f"{name} must be True or False, got {kind_of(value)} {value!r}"
        + (f"; {hint}" if hint else "")
    )


def require_heads(width, num_heads, *, width_name="d_out", hint=""):
    """Return ``width // num_heads`` (the head width) if ``width`` splits evenly
    into ``num_heads``; the error lists the head counts that would, and ``hint``
    is added in parentheses.

    >>> require_heads(12, 4)
    3
    >>> require_heads(6, 4, width_name="D")
    Traceback (most recent call last):
    ...
    ValueError: D=6 is not divisible by num_heads=4; choose num_heads in {1, 2, 3, 6}
    """
    if width % num_heads == 0:
        return width // num_heads
    divisors = ", ".join(str(n) for n in range(1, width + 1) if width % n == 0)
    message = (
        f"{width_name}={width} is not divisible by num_heads={num_heads}; choose "
        f"num_heads in {{{divisors}}}"
    )
    raise ValueError(message + (f" ({hint})" if hint else ""))


def require_choice(value, name, options):
    """Return ``value`` if it is one of ``options`` (a mapping: option -> meaning)."""
    if value in options:
        return value
    if isinstance(options, Mapping):
        listing = "; ".join(f"{key!r} = {text}" for key, text in options.items())
    else:
        listing = ", ".join(repr(key) for key in options)
    raise ValueError(f"{name}={value!r} is not one of {tuple(options)}: {listing}")
