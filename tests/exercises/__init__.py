"""Right and wrong answers to every exercise, as a learner would type them.

One module per chapter (``ch01`` for Chapter 1, ...) holds ``NOTEBOOK``, the
chapter's file name, and ``ANSWERS``, a dict from each exercise's label to its
:class:`Answers`: the source of a right answer cell, and one typical wrong one with
the fragments that the check's explanation must contain (every slip of an exercise
is unit-tested through its table, ``tests/test_tables.py``; the notebook run shows
the wiring). ``tests/test_exercises.py`` puts them into the answer cells and runs
the notebook top to bottom; the workshop check pastes the right ones into the
student copies.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import NamedTuple


class Wrong(NamedTuple):
    """A typical wrong answer: a short name for the slip (the test's id), the
    answer cell's source, and fragments the check's message must contain."""

    slip: str
    source: str
    says: tuple[str, ...]


class Answers(NamedTuple):
    """The right answer cell of an exercise, and typical wrong ones."""

    right: str
    wrong: tuple[Wrong, ...]


def wrong(slip: str, source: str, *says: str) -> Wrong:
    """A :class:`Wrong` answer; ``says`` are fragments of the expected message."""
    return Wrong(slip, source, says)


def from_table(exercise, comment="", slip=0):
    """The :class:`Answers` of a function exercise written as a table: answer cells
    (``comment``, then the function) with its right body and with the first body of
    its slip number ``slip``, which must draw the message the check gives that code
    here, in full."""
    cell = f"{comment}def {exercise.function}:\n{{}}".format
    name, body = exercise.slips[slip].name, exercise.slips[slip].bodies[0]
    try:
        exercise.make_check()(exercise.define(body))
    except AssertionError as error:
        return Answers(cell(exercise.right), (wrong(name, cell(body), str(error)),))
    raise AssertionError(f"{exercise.label}: the slip {name!r} passes its check")


def chapters():
    """``{notebook name: ANSWERS}`` for every chapter module of this package."""
    tables = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        tables[module.NOTEBOOK] = module.ANSWERS
    return tables
