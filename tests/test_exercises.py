"""The answers of ``tests/exercises`` match the exercises of the notebooks: one
right and one wrong answer for every exercise, each wrong one with what its check
must say (the rounds themselves run with the notebooks, ``tests/exercise_rounds.py``).
"""

import nbformat

from tests.exercises import chapters
from tools.exercises import exercises
from tools.toc import CHAPTERS


def test_every_exercise_has_a_right_and_a_wrong_answer():
    tables = chapters()
    for path in sorted(CHAPTERS.glob("*.ipynb")):
        labels = sorted(ex.label for ex in exercises(nbformat.read(path, as_version=4)))
        assert sorted(tables.get(path.name, {})) == labels, (
            f"{path.name}: the answers in tests/exercises and the notebook's "
            "exercises differ"
        )
    for name, answers in tables.items():
        for label, answer in answers.items():
            assert len(answer.wrong) == 1, (
                f"{name} {label}: one wrong answer, not {len(answer.wrong)}"
            )
            assert answer.wrong[0].says, f"{label}: says nothing to look for"
