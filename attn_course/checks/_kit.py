"""How every self-check runs, whatever its table (:mod:`.table`) holds: seeded
(:func:`seeded`, the learner's generator handed back as it was), on fresh copies of
the inputs with errors explained and in-place changes caught (:func:`call`), and
saying "not answered yet" for a placeholder (:func:`exercise_check`)."""

from __future__ import annotations

import dis
import functools
import inspect
import types
from contextlib import contextmanager
from typing import NamedTuple

import torch

from .._validate import kind_of


@contextmanager
def seeded(seed):
    """Run the body with torch's global CPU generator seeded with ``seed``, then
    put it (and every CUDA generator in use) back as it was, even on an error."""
    cpu_state = torch.random.get_rng_state()
    cuda_states = (
        torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    )
    try:
        torch.default_generator.manual_seed(seed)  # the CPU generator only
        yield
    finally:
        torch.random.set_rng_state(cpu_state)
        if cuda_states is not None:
            torch.cuda.set_rng_state_all(cuda_states)


# --- the cases of an exercise -----------------------------------------------------


class Case(NamedTuple):
    """One input of an exercise: what it is, and the arguments of the learner's
    function (tensors and generators passed as fresh copies, modules as they are)."""

    description: str
    args: tuple

    @property
    def where(self):
        """``" on <description>"``, to end the subject of a message."""
        return f" on {self.description}"


def require_callable(fn, check, example):
    """Raise ``TypeError`` unless ``fn`` is a function (a module is refused too),
    not what calling one gave."""
    if isinstance(fn, torch.nn.Module):
        got = f"a {type(fn).__name__} module"
    elif callable(fn):
        return fn
    else:
        got = kind_of(fn)
    raise TypeError(
        f"{check} expects your function itself, got {got}; pass it without calling "
        f"it: {check}({example}), not {check}({example}(...))"
    )


def fresh(value):
    """A copy of a tensor or generator for one call; anything else as it is."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, torch.Generator):
        copy = torch.Generator(device=value.device)
        copy.set_state(value.get_state())
        return copy
    return value


def _weights_of(value):
    """A copy of a module's parameters and buffers, to notice changes; else None."""
    if isinstance(value, torch.nn.Module):
        return {key: t.detach().clone() for key, t in value.state_dict().items()}
    return None


def _what_changed(original, given, saved, name):
    """What a call changed in one argument (``"its input x"``), or ''.

    ``given`` is what the learner's function got: a copy of a tensor ``original``,
    or the module ``original`` itself, whose weights were ``saved`` before.
    """
    if isinstance(original, torch.Tensor) and not torch.equal(given, original):
        return f"its input{' ' + name if name else ''}"
    if saved is not None:
        now = given.state_dict()
        for key, before in saved.items():
            if not torch.equal(now[key], before):
                return f"the {key} of the {type(original).__name__}"
    return ""


# Messages of PyTorch errors that a typical slip causes, and the slip's name.
_LIKELY_SLIPS = (
    (
        "must match the size of tensor",
        " Two shapes do not line up. The usual slips: a max or sum over the last "
        "dimension without keepdim=True, which gives (..., T) where (..., T, 1) "
        "would broadcast against the rows; or .T on a tensor with a batch "
        "dimension, which reverses every dimension: use .transpose(-2, -1) to swap "
        "only the last two.",
    ),
    (
        "cannot be multiplied",
        " The inner sizes of a matrix product differ: a forgotten transpose? Scores "
        "are queries @ keys.transpose(-2, -1), (T_q, d) @ (d, T_k).",
    ),
    (
        "Expected size for first two dimensions of batch2",
        " The inner sizes of a batched matrix product differ: a forgotten "
        "transpose? Scores are queries @ keys.transpose(-2, -1).",
    ),
    (
        "view size is not compatible",
        " .view(...) needs memory laid out in order, which .transpose(...) breaks: "
        "call .contiguous() before .view(...), or use .reshape(...).",
    ),
    (
        "Boolean value of Tensor with more than one value is ambiguous",
        " Python's and, or, not and max() look at a whole tensor: use &, |, ~ and "
        "x.max(dim=...).values or x.amax(dim=...), entry by entry.",
    ),
    (
        "torch.return_types",
        " x.max(dim=...) gives (values, indices): take .values, or use x.amax(...).",
    ),
)


def explainer(*tables):
    """An ``explain(error)`` for :func:`call`: the hint of the first row of
    ``tables`` (rows of ``(fragment of the message, hint)``) whose fragment is in
    the error's message, else that of the common shape errors, else ''."""

    def explain(error):
        text = str(error)
        for table in (*tables, _LIKELY_SLIPS):
            for fragment, hint in table:
                if fragment in text:
                    return hint
        return ""

    return explain


explain_error = explainer()  # the likely slip behind a PyTorch shape error, or ''


def call(
    fn, check, case, *, who="your function", fix="", names=None, explain=explain_error
):
    """``fn(*case.args)`` on fresh copies. An error becomes an ``AssertionError``
    naming the case (``explain(error)`` may add a hint); an argument changed in place
    (``names`` name them) is one too, ending with ``fix``."""
    args = tuple(fresh(value) for value in case.args)
    saved = [_weights_of(value) for value in case.args]
    try:
        result = fn(*args)
    except Exception as error:  # any error in the learner's code becomes a message
        text = str(error)
        hint = explain(error) if explain is not None else ""
        if hint:
            text = f"{text.rstrip('.')}.{hint}"
        raise AssertionError(
            f"{check}: {who} raised {type(error).__name__} on {case.description}: "
            f"{text}"
        ) from error
    names = names or ("",) * len(args)
    for original, given, before, name in zip(
        case.args, args, saved, names, strict=True
    ):
        what = _what_changed(original, given, before, name)
        if what:
            raise AssertionError(
                f"{check}: {who} changed {what}{case.where} in place; {fix}"
            )
    return result


def passed(check, text):
    """Print the one line a check prints when the answer is right."""
    print(f"✅ {check}: {text}")


# --- an exercise not answered yet ----------------------------------------------------


def _does_nothing(code):
    """Whether compiled code only returns None (a body of ``...``, ``pass`` or a
    docstring), whatever the Python version's instructions for that are."""
    idle = {"RESUME", "NOP", "CACHE", "RETURN_VALUE", "RETURN_CONST", "LOAD_CONST"}
    instructions = list(dis.get_instructions(code))
    return all(
        ins.opname in idle
        and (ins.opname not in ("LOAD_CONST", "RETURN_CONST") or ins.argval is None)
        for ins in instructions
    )


def unanswered(value):
    """Whether ``value`` is still an answer cell's placeholder: ``...`` itself, or
    a function whose body does nothing (``def stable_softmax(x): ...``).

    >>> def softmax(x): ...
    >>> unanswered(...), unanswered(softmax), unanswered(torch.softmax)
    (True, True, False)
    """
    if value is Ellipsis:
        return True
    code = getattr(value, "__code__", None)
    return isinstance(code, types.CodeType) and _does_nothing(code)


NOT_ANSWERED = (
    "not answered yet: write your answer in the cell above (replace the ...), run "
    "that cell, then run this one again."
)


def exercise_check(*answers):
    """Decorate a check whose parameters ``answers`` hold the learner's answers:
    while one is still a placeholder (:func:`unanswered`), the check prints one ⏳
    line that says so and returns None, so that a notebook run does not stop there.
    """

    def decorate(check):
        signature = inspect.signature(check)
        missing = [name for name in answers if name not in signature.parameters]
        if missing:
            raise TypeError(f"{check.__name__} has no parameter {missing[0]!r}")

        @functools.wraps(check)
        def checked(*args, **kwargs):
            try:
                given = signature.bind(*args, **kwargs).arguments
            except TypeError:
                return check(*args, **kwargs)  # Python's own message for the call
            if any(unanswered(given.get(name)) for name in answers):
                print(f"⏳ {check.__name__}: {NOT_ANSWERED}")
                return None
            return check(*args, **kwargs)

        checked.answers = answers
        return checked

    return decorate
