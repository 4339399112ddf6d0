"""Right and wrong answers to every exercise, as a learner would type them.

One module per chapter (``ch01`` for Chapter 1, ...) holds ``NOTEBOOK``, the
chapter's file name, and ``ANSWERS``, a dict from each exercise's label to its
:class:`Answers`: the source of a right answer cell, and at least three typical
wrong ones, each with the fragments that the check's explanation must contain.
``tests/test_exercises.py`` puts them into the answer cells and runs the notebook
top to bottom; the workshop check pastes the right ones into the student copies.
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


def chapters():
    """``{notebook name: ANSWERS}`` for every chapter module of this package."""
    tables = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        tables[module.NOTEBOOK] = module.ANSWERS
    return tables
