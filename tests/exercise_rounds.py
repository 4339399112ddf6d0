"""The exercise rounds, run inside the notebook checks (``-p tests.exercise_rounds``).

After each exercise's check cell has run as stored (the answer cell still holds
``...``), the same kernel runs the answer cell's wrong answer from
``tests/exercises`` and the check cell, which must fail with an ``AssertionError``
whose message holds the expected explanation, never with a bare error of PyTorch or
Python; then the right answer and the check cell, which must print its ✅. Every
slip of every exercise is unit-tested through its table (``tests/test_tables.py``);
these rounds show the wiring of answer cell and check cell in the real notebook, at
no cost of a run of their own. Afterwards the kernel's variables and random
generators are put back as they were, so the cells that follow, the solution
first, run and compare exactly as stored.
"""

from __future__ import annotations

import pytest

from tests.exercises import chapters
from tools.exercises import exercises

ANSWERS = chapters()
TIMEOUT_S = 600

SAVE = (
    "_exercise_round = (dict(globals()), __import__('torch').random.get_rng_state(),"
    " __import__('random').getstate())"
)
RESTORE = (
    "(lambda names, torch_state, python_state: (globals().clear(), "
    "globals().update(names), __import__('torch').random.set_rng_state(torch_state),"
    " __import__('random').setstate(python_state)))(*_exercise_round)"
)


def _run(kernel, source):
    """Run ``source`` in ``kernel``: (printed text, errors as ``(name, message)``)."""
    msg_id = kernel.execute_cell_input(source, allow_stdin=False)
    kernel.await_reply(msg_id, timeout=TIMEOUT_S)
    text, errors = [], []
    while True:
        msg = kernel.get_message("iopub", timeout=TIMEOUT_S)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            text.append(content["text"])
        elif kind == "error":
            errors.append((content["ename"], content["evalue"]))
        elif kind == "status" and content["execution_state"] == "idle":
            return "".join(text), errors


def _answer(kernel, label, source):
    """Run an answer cell's ``source``, which must not raise."""
    _, errors = _run(kernel, source)
    assert not errors, (
        f"{label}: the answer cell itself raised {errors}; the answers in "
        "tests/exercises must run, so that the check has something to judge"
    )


def _rounds(item):
    """Run both rounds of the exercise whose check cell ``item`` is; raise
    ``AssertionError`` where one goes wrong."""
    notebook, name = item.parent.nb, item.parent.path.name
    index = next(i for i, cell in enumerate(notebook.cells) if cell is item.cell)
    exercise = next(ex for ex in exercises(notebook) if ex.check == index)
    answers = ANSWERS[name][exercise.label]
    slip = answers.wrong[0]
    kernel, check = item.parent.kernel, item.cell.source
    _run(kernel, SAVE)
    try:
        _answer(kernel, exercise.label, slip.source)
        text, errors = _run(kernel, check)
        assert errors, (
            f"{exercise.label}: the wrong answer {slip.slip!r} passed: {text}"
        )
        (ename, message), *_ = errors
        assert ename == "AssertionError", (
            f"{exercise.label}: the wrong answer {slip.slip!r} ended in a bare "
            f"{ename}: {message}"
        )
        missing = [fragment for fragment in slip.says if fragment not in message]
        assert not missing, (
            f"{exercise.label}: for {slip.slip!r} the check said\n{message}\nwhich "
            f"lacks {missing}"
        )
        _answer(kernel, exercise.label, answers.right)
        text, errors = _run(kernel, check)
        assert not errors and "✅" in text, (
            f"{exercise.label}: the right answer did not pass: {errors or text}"
        )
    finally:
        _run(kernel, RESTORE)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """Each check cell of a chapter with exercises: the cell as stored, then the
    rounds."""
    try:
        return (yield)
    finally:
        cell = getattr(item, "cell", None)
        if (
            cell is not None
            and "check" in cell.metadata.get("tags", [])
            and item.parent.path.name in ANSWERS
        ):
            _rounds(item)
