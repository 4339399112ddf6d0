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


def from_table(exercise, comment="", slip=0, name=None):
    """The :class:`Answers` of a function exercise written as a table: answer cells
    (``comment``, then the function, called ``name`` if the notebook's check cell
    passes another name) with its right body and with the first body of its slip
    number ``slip``; the check must say here, in full, what it says there."""
    signature = exercise.function.replace(exercise.name, name or exercise.name, 1)
    cell = f"{comment}def {signature}:\n{{}}".format
    chosen = exercise.slips[slip]
    try:
        exercise.make_check()(exercise.define(chosen.bodies[0]))
    except AssertionError as error:
        says = str(error)
        return Answers(
            cell(exercise.right), (wrong(chosen.name, cell(chosen.bodies[0]), says),)
        )
    raise AssertionError(f"{exercise.label}: the slip {chosen.name!r} passes its check")


def chapters():
    """``{notebook name: ANSWERS}`` for every chapter module of this package."""
    tables = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        tables[module.NOTEBOOK] = module.ANSWERS
    return tables
