"""Every exercise, answered wrong and right, in its notebook run top to bottom.

For each chapter the notebook is executed twice: with every answer cell holding a
right answer, and with every one holding its wrong answer from ``tests/exercises``
(every slip is unit-tested through its table; these runs show the wiring of answer
cell, check cell and solution in the real notebook). Each check must then print
its ✅ for a right answer, and fail with an ``AssertionError`` whose message holds
the expected explanation for a wrong one, never with a bare error of PyTorch or
Python. In every run the solutions still pass their own checks: a solution cannot
depend on what the learner wrote.

The notebooks run two at a time in kernels of their own, in the numeric environment
the outputs were stored in (:mod:`tools.reproducible`). Each test waits for the run
it reads. ``make exercises`` runs this file.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import nbformat
import pytest
from nbclient import NotebookClient

from tests.exercises import chapters
from tools.exercises import exercises, with_answers
from tools.notebooks import CELL_TIMEOUT_S, STORING_ENV
from tools.toc import ROOT

pytestmark = pytest.mark.exercises

CHAPTERS = ROOT / "chapters"
TABLES = chapters()


# The kernels' environment, read once here in the main thread: the notebooks run in
# worker threads, and copying os.environ there can race with pytest, which sets and
# removes PYTEST_CURRENT_TEST in the main thread around every test.
KERNEL_ENV = {**os.environ, **STORING_ENV}


def _rounds(answers):
    """The answer sources of each run: ``{"right": {...}, "wrong": {...}}``."""
    return {
        "right": {label: a.right for label, a in answers.items()},
        "wrong": {label: a.wrong[0].source for label, a in answers.items()},
    }


def _execute(name, sources):
    notebook = with_answers(nbformat.read(CHAPTERS / name, as_version=4), sources)
    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(CHAPTERS)}},
        allow_errors=True,
    )
    client.execute(env=KERNEL_ENV)
    return notebook


@pytest.fixture(scope="session")
def runs(request):
    """``{(notebook, round): future of the executed notebook}``: every run that a
    selected test reads, all started at once on two workers."""
    wanted = {
        (item.callspec.params["name"], item.callspec.params["round_"])
        for item in request.session.items
        if item.originalname == "test_the_check_judges_the_answer"
    }
    pool = ThreadPoolExecutor(max_workers=2)
    futures = {}
    for name, answers in TABLES.items():
        for round_, sources in _rounds(answers).items():
            if (name, round_) in wanted:
                futures[name, round_] = pool.submit(_execute, name, sources)
    yield futures
    for future in futures.values():
        future.cancel()
    pool.shutdown(wait=True)


def _outputs(cell):
    """(printed text, errors as ``(name, message)``) of an executed cell."""
    text, errors = [], []
    for out in cell.outputs:
        if out.output_type == "stream":
            text.append(out.text)
        elif out.output_type == "error":
            errors.append((out.ename, out.evalue))
        elif "text/plain" in out.get("data", {}):
            text.append(out.data["text/plain"])
    return "".join(text), errors


def _cases():
    for name, answers in TABLES.items():
        for label, answer in answers.items():
            yield pytest.param(name, label, "right", None, id=f"{label}-right")
            slip = answer.wrong[0]
            yield pytest.param(name, label, "wrong", slip, id=f"{label}-{slip.slip}")


def test_every_exercise_has_a_right_and_a_wrong_answer():
    for name, answers in TABLES.items():
        notebook = nbformat.read(CHAPTERS / name, as_version=4)
        labels = [ex.label for ex in exercises(notebook)]
        assert sorted(answers) == sorted(labels), f"{name}: tables and notebook differ"
        for label, answer in answers.items():
            assert len(answer.wrong) == 1, (
                f"{label}: one wrong answer, not {len(answer.wrong)}"
            )
            for slip in answer.wrong:
                assert slip.says, f"{label} {slip.slip}: says nothing to look for"
    covered = {path.name for path in CHAPTERS.glob("*.ipynb")}
    with_exercises = {
        name
        for name in covered
        if exercises(nbformat.read(CHAPTERS / name, as_version=4))
    }
    assert with_exercises <= set(TABLES), "a chapter's exercises have no answers"


@pytest.mark.parametrize(("name", "label", "round_", "slip"), list(_cases()))
def test_the_check_judges_the_answer(runs, name, label, round_, slip):
    notebook = runs[(name, round_)].result()
    ex = next(ex for ex in exercises(notebook) if ex.label == label)
    answer_text, answer_errors = _outputs(notebook.cells[ex.answer])
    assert not answer_errors, (
        f"{label}: the answer cell itself raised {answer_errors}; the answer in the "
        "table must run, so that its check has something to judge"
    )
    text, errors = _outputs(notebook.cells[ex.check])
    if slip is None:
        assert not errors and "✅" in text, (
            f"{label}: the right answer did not pass: {errors or text}"
        )
    else:
        assert errors, f"{label}: the wrong answer {slip.slip!r} passed: {text}"
        (ename, message), *_ = errors
        assert ename == "AssertionError", (
            f"{label}: the wrong answer {slip.slip!r} ended in a bare {ename}: "
            f"{message}"
        )
        missing = [fragment for fragment in slip.says if fragment not in message]
        assert not missing, (
            f"{label}: for {slip.slip!r} the check said\n{message}\nwhich lacks "
            f"{missing}"
        )
    solution = [notebook.cells[j] for j in ex.solution[1:]]
    ticks = [
        _outputs(cell)
        for cell in solution
        if cell.cell_type == "code" and "checks.check_" in cell.source
    ]
    assert any("✅" in text and not errors for text, errors in ticks), (
        f"{label}: with this answer in the learner's cell, the solution no longer "
        f"passes its own check: {ticks}"
    )
