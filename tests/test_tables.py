"""Every exercise written as a table (:mod:`attn_course.checks.table`): its right
answer passes its check, and every slip fails it with its own explanation."""

import pytest

from tests.checks import TABLES


def _judge(exercise, body):
    """Judge the answer ``body`` as the check does: the function it defines, or,
    for an exercise whose answer is a value, the value it gives on each case."""
    if not exercise.value:
        return exercise.make_check()(exercise.define(body))
    for case in exercise.all_cases():
        exercise.judge_value(exercise.define(body)(*case.args), *case.args)


def test_every_chapter_has_tables():
    assert {int(e.label[2:4]) for e in TABLES} == set(range(1, 13))


@pytest.mark.parametrize("exercise", TABLES, ids=lambda e: e.label)
def test_the_right_answer_passes(exercise, capsys):
    _judge(exercise, exercise.right)
    assert capsys.readouterr().out.startswith(f"✅ {exercise.check}:")


@pytest.mark.parametrize(
    ("exercise", "slip", "body"),
    [(e, s, b) for e in TABLES for s in e.slips for b in s.bodies],
    ids=lambda x: getattr(x, "label", getattr(x, "name", "")),
)
def test_every_slip_fails_with_its_own_explanation(exercise, slip, body):
    """Each variant of a slip, on the first case where it differs from the right
    answer: its explanation, and no other slip's; or, where it raises first, the
    error and the check's hint."""
    with pytest.raises(AssertionError) as failed:
        _judge(exercise, body)
    message = str(failed.value)
    case = next(
        c
        for c in exercise.all_cases()
        if not _same_on(exercise, exercise.right, body, c.args)
    )
    assert case.description in message
    if not exercise.value and _raises(exercise, body, case.args):
        assert f"{exercise.name} raised" in message
        return
    facts = exercise._facts(case.args)
    assert slip.says.format(**facts) in message
    others = [s for s in exercise.slips if s is not slip]
    assert not any(s.says.format(**facts) in message for s in others) or (
        "several slips" in message
    )


def _raises(exercise, body, args):
    try:
        exercise.define(body)(*args)
    except Exception:
        return True
    return False


def _same_on(exercise, body, other, args):
    """Whether two bodies give the same result on ``args`` (an error: not the same)."""
    try:
        return exercise.equal(
            exercise.define(body)(*args), exercise.define(other)(*args)
        )
    except Exception:
        return False
