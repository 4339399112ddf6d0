"""Every exercise written as a table (:mod:`attn_course.checks.table`): its right
answer passes its check, and every slip fails it with its own explanation."""

import pytest

from attn_course.checks.causal_mask import ADDITIVE_MASK, CAUSAL_MASK
from attn_course.checks.efficient import DILATED
from attn_course.checks.gpt import TOP_K

TABLES = [ADDITIVE_MASK, CAUSAL_MASK, DILATED, TOP_K]


@pytest.mark.parametrize("exercise", TABLES, ids=lambda e: e.label)
def test_the_right_answer_passes(exercise, capsys):
    exercise.make_check()(exercise.define(exercise.right))
    assert capsys.readouterr().out.startswith(f"✅ {exercise.check}:")


@pytest.mark.parametrize(
    ("exercise", "slip"),
    [(e, s) for e in TABLES for s in e.slips],
    ids=lambda x: getattr(x, "label", getattr(x, "name", "")),
)
def test_every_slip_fails_with_its_own_explanation(exercise, slip):
    """Its explanation, on the first case where it differs from the right answer;
    and no other slip's."""
    with pytest.raises(AssertionError) as failed:
        exercise.make_check()(exercise.define(slip.body))
    message = str(failed.value)
    args = next(
        a
        for a in exercise.all_cases()
        if not _same_on(exercise, exercise.right, slip.body, a)
    )
    facts = exercise._facts(args)
    assert slip.says.format(**facts) in message
    assert exercise.describe(*args) in message
    others = [s for s in exercise.slips if s is not slip]
    assert not any(s.says.format(**facts) in message for s in others) or (
        "several slips" in message
    )


def _same_on(exercise, body, other, args):
    from attn_course.checks.table import _same

    return _same(exercise.define(body)(*args), exercise.define(other)(*args))
