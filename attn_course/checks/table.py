"""Exercises as data: the right answer, the usual slips and the cases, in one table.

An :class:`Exercise` holds the right answer and each usual wrong answer
(:class:`Slip`) as the code a learner types, once. From it come the check a
notebook calls (:meth:`Exercise.judge`: a wrong result is compared with what every
slip's code gives on that case, and the message names the slip it matches, or the
slips it cannot tell apart, or else what differs), the check's documentation, the
unit tests (``tests/test_tables.py``) and the answers of the notebook rounds
(``tests/exercises``).
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .._validate import kind_of
from ._common import expect_shape, expect_tensor, first_difference, fmt_index
from ._kit import Case, call, exercise_check, fresh, passed, require_callable, seeded

NAMESPACE = {"torch": torch, "F": F, "math": math}
"""What the code of an answer may use without importing it, as in a chapter."""


@dataclass(frozen=True)
class Slip:
    """A usual wrong answer: a short name, the body of the function a learner
    writes (or a tuple of bodies, variants of one slip), and what the check says to
    an answer that gives what one of them gives (a format string over the case's
    facts, see :attr:`Exercise.facts`)."""

    name: str
    body: str | tuple[str, ...]
    says: str

    @property
    def bodies(self):
        return (self.body,) if isinstance(self.body, str) else self.body


@dataclass(frozen=True)
class Exercise:
    """One exercise. ``function`` is the signature (``"f(T, window)"``); ``cases``
    argument tuples (or :class:`Case` s), named by ``describe(*args)``; ``facts(*args)``
    values that ``rule`` and each slip's ``says`` may name; ``same(got, output)``
    whether an answer is as good as an output (by default :func:`same_result`).
    With ``value=True`` the learner gives the output: a hand-written check calls
    :meth:`judge_value`, and the bodies compute the output from its inputs."""

    label: str
    check: str
    function: str
    output: str
    right: str
    cases: tuple[tuple, ...]
    slips: tuple[Slip, ...]
    rule: str
    describe: Callable[..., str] | None = None
    facts: Callable[..., dict] = lambda *args: {}
    tolerance: float = 0.0
    otherwise: Callable | None = None
    explain: Callable | None = None
    fix: str = "compute new tensors instead of modifying the inputs."
    parameter: str | None = None
    same: Callable | None = None
    value: bool = False

    @property
    def name(self):
        return self.function.split("(", 1)[0]

    @property
    def parameters(self):
        inside = self.function.split("(", 1)[1].rstrip(")")
        return [p.split("=")[0].strip() for p in inside.split(",")]

    def define(self, body):
        """The function whose body is ``body`` (the code of an answer)."""
        namespace = dict(NAMESPACE)
        exec(f"def {self.function}:\n{body}", namespace)  # noqa: S102 - the course's own code
        return namespace[self.name]

    def all_cases(self):
        """The cases, as :class:`Case` s: ``cases`` holds argument tuples (named by
        ``describe``) or cases, or is a function that builds them."""
        items = self.cases() if callable(self.cases) else self.cases
        return tuple(
            item
            if isinstance(item, Case)
            else Case(self.describe(*item) if self.describe else f"case {n}", item)
            for n, item in enumerate(items, 1)
        )

    def equal(self, a, b):
        """Whether two results count as the same for this exercise."""
        return (self.same or functools.partial(same_result, tolerance=self.tolerance))(
            a, b
        )

    def _facts(self, args):
        return {**dict(zip(self.parameters, args, strict=True)), **self.facts(*args)}

    def verdict(self, got, args, description, seen=()):
        """Raise ``AssertionError`` unless ``got`` is the right output for ``args``:
        naming the slip it matches, the slips it cannot tell apart, or else what
        differs. A slip that would have differed from the answer on another case
        ``seen`` (pairs of arguments and the answer's output there) is not it."""
        expected = _gives(self.define(self.right), args)
        if self.equal(got, expected):
            return
        facts = self._facts(args)
        rule = self.rule.format(**facts)
        subject = f"{self.check}: your {self.output} for {description}"
        hits = list(
            dict.fromkeys(
                slip.says.format(**facts)
                for slip in self.slips
                for code in map(self.define, slip.bodies)
                if self.equal(got, _gives(code, args))
                and all(self.equal(out, _gives(code, old)) for old, out in seen)
            )
        )
        if len(hits) == 1:
            raise AssertionError(f"{subject}: {hits[0]}; {rule}.")
        if hits:
            raise AssertionError(
                f"{subject} is what several slips give: "
                + "; or ".join(hits)
                + f"; {rule}."
            )
        otherwise = self.otherwise or what_differs
        raise AssertionError(f"{subject}: {otherwise(got, expected, subject)}; {rule}.")

    def judge(self, fn):
        """Raise ``AssertionError`` naming the slip unless ``fn`` is right on
        every case (a slip is named only if it agrees with ``fn`` on every other case
        where both run); print the ✅ line when it is."""
        require_callable(fn, self.check, self.name)
        cases, seen = self.all_cases(), []
        with seeded(0):
            for n, case in enumerate(cases):
                got = call(
                    fn,
                    self.check,
                    case,
                    who=self.name,
                    fix=self.fix,
                    names=self.parameters,
                    **({"explain": self.explain} if self.explain else {}),
                )
                if not self.equal(got, _gives(self.define(self.right), case.args)):
                    later = ((c.args, _gives(fn, c.args)) for c in cases[n + 1 :])
                    seen += [(args, out) for args, out in later if out is not RAISED]
                self.verdict(got, case.args, case.description, seen)
                seen.append((case.args, got))
        rule = self.rule.format(**self._facts(cases[0].args))
        passed(self.check, f"{self.name} is right on {len(cases)} cases: {rule}.")

    def judge_value(self, answer, *args, success=None):
        """The check of an exercise whose answer is a value (``value=True``): the
        output asked for, for the inputs ``args``; print the ✅ line (``success``,
        by default the rule) when right."""
        description = self.describe(*args) if self.describe else "these inputs"
        with seeded(0):
            self.verdict(answer, args, description)
        rule = self.rule.format(**self._facts(args))
        passed(self.check, success or f"right: {rule}.")

    def doc(self):
        """The check's docstring: what it tries, and the slips it names."""
        slips = "\n".join(f"- {slip.name}" for slip in self.slips)
        chapter = int(self.label[2:4])
        rule = self.rule.format(**self._facts(self.all_cases()[0].args))
        return (
            f"Check {self.name}: {rule}. Introduced in Chapter {chapter}.\n\n"
            f"Tried on {len(self.all_cases())} cases; the slips it names:\n\n{slips}\n"
        )

    def make_check(self):
        """The check a notebook calls, ``checks.<check>(<function>)``."""

        def check(fn):
            self.judge(fn)

        check.__name__ = check.__qualname__ = self.check
        check.__doc__ = self.doc()
        name = self.parameter or self.name
        parameter = inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        check.__signature__ = inspect.Signature([parameter])
        return exercise_check(name)(check)


def rows(*cells):
    """The slips of a table written as rows of three cells: name, body, says."""
    return tuple(Slip(*cells[i : i + 3]) for i in range(0, len(cells), 3))


def slips(right, text):
    """The slips of ``text``, a row each, ``name: edits -- what the check says``, on
    lines after the first indented or starting with ``|``: the edits ``old -> new``
    (joined by ``; ``, `` | `` between variants) make the slip's code from the right
    one, in turn, each on the first ``old``."""
    found = []
    for row in re.split(r"\n(?=[^\s|])", text.strip()):
        head, _, says = " ".join(row.split()).partition(" -- ")
        name, variants = head.split(": ", 1)
        bodies = []
        for variant in variants.split(" | "):
            body = right
            for old, new in (edit.split("->") for edit in variant.split("; ")):
                assert old.strip() in body, f"{name}: no {old.strip()!r} to edit"
                body = body.replace(old.strip(), new.strip(), 1)
            bodies.append(body)
        found.append(Slip(name, bodies[0] if len(bodies) == 1 else tuple(bodies), says))
    return tuple(found)


def count_is(got, expected):
    """``same`` for a count: an int, a float, or a tensor of one number."""
    got = got.item() if isinstance(got, torch.Tensor) and got.numel() == 1 else got
    return type(got) is not bool and isinstance(got, numbers.Real) and got == expected


def count_wrong(got, expected, subject):
    """``otherwise`` for a count: how far off it is."""
    got = got.item() if isinstance(got, torch.Tensor) and got.numel() == 1 else got
    if not count_is(got, got):  # not a number, or NaN
        return f"it is {got!r} ({kind_of(got)}), not a number"
    many = "many" if got > expected else "few"
    return f"it is {got:,}, {abs(got - expected):,} too {many}"


def pair_wrong(names, tolerance=0.0):
    """An ``otherwise`` for a pair of tensors named ``names`` (``"a, b"``)."""

    def otherwise(got, expected, subject):
        if type(got) is not tuple or len(got) != 2:
            shape = f" of shape {tuple(got.shape)}" if torch.is_tensor(got) else ""
            return f"it is {kind_of(got)}{shape}, not a tuple of two: `return {names}`"
        for name, mine, right in zip(names.split(", "), got, expected, strict=True):
            if not same_result(mine, right, tolerance):
                if isinstance(mine, torch.Tensor) and mine.shape == right.shape:
                    close = torch.isclose(mine, right, tolerance, tolerance, True)
                    mine = torch.where(close, right, mine)  # the entries off only
                return f"its {name}: {what_differs(mine, right, f'{subject}, {name}')}"

    return otherwise


RAISED = object()
"""What a slip's code gives where it raises: equal to no answer."""


def _gives(fn, args):
    """What a body gives on fresh copies of ``args`` (its warnings silenced), or
    RAISED."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*(fresh(value) for value in args))
    except Exception:  # a slip that cannot run on this case matches nothing
        return RAISED


def same_result(a, b, tolerance=0.0):
    """Whether two results are the same: tensors of one shape and values (within
    ``tolerance``, at least 1e-5 across two float dtypes, infinities of one sign
    equal; other dtypes must match), or tuples (or a list for a tuple) of such."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        floats = a.is_floating_point() and b.is_floating_point()
        if a.shape != b.shape or (a.dtype != b.dtype and not floats):
            return False
        if floats:
            tol = tolerance if a.dtype == b.dtype else max(tolerance, 1e-5)
            return bool(
                torch.allclose(a.double(), b.double(), tol, tol, equal_nan=True)
            )
        return torch.equal(a, b)
    if isinstance(a, (tuple, list)) and isinstance(b, tuple):
        return len(a) == len(b) and all(
            same_result(x, y, tolerance) for x, y in zip(a, b, strict=True)
        )
    return type(a) is type(b) and a == b


def what_differs(got, expected, subject):
    """What is wrong with a result that no slip explains."""
    got = expect_tensor(got, subject)
    expect_shape(got, expected, subject)
    if got.dtype != expected.dtype:
        return f"its dtype is {got.dtype}, not {expected.dtype}"
    index = first_difference(got, expected)
    return (
        f"entry {fmt_index(index)} is {got[index].item()}, where "
        f"{expected[index].item()} is right"
    )
