"""The kit every self-check is built on (seeded randomness, calling the learner's
function), and its promise for every check: a check leaves the notebook's random
numbers alone, and its verdict does not depend on them."""

import contextlib
import inspect
import io
import re
from pathlib import Path

import pytest
import torch

from attn_course import checks
from attn_course.checks._kit import (
    NOT_ANSWERED,
    Case,
    call,
    require_callable,
    seeded,
)

from .answers import EXAMPLES

# --- seeded --------------------------------------------------------------------------


def test_seeded_draws_the_same_numbers_and_restores_the_state():
    torch.manual_seed(123)
    state = torch.random.get_rng_state()
    with seeded(7):
        first = torch.rand(3)
    with seeded(7):
        second = torch.rand(3)
    assert torch.equal(first, second)
    assert torch.equal(torch.random.get_rng_state(), state)


def test_seeded_restores_the_state_when_the_body_raises():
    torch.manual_seed(123)
    state = torch.random.get_rng_state()
    with pytest.raises(RuntimeError, match="inside"), seeded(0):
        torch.rand(5)
        raise RuntimeError("raised inside the body")
    assert torch.equal(torch.random.get_rng_state(), state)


# --- call --------------------------------------------------------------------------


def test_call_reports_a_change_of_the_input_in_place():
    case = Case("a vector", (torch.tensor([1.0, -2.0]),))
    with pytest.raises(AssertionError) as info:
        call(torch.Tensor.abs_, "check_abs", case, names=("x",), fix="use abs(x).")
    assert str(info.value) == (
        "check_abs: your function changed its input x on a vector in place; use abs(x)."
    )
    assert torch.equal(case.args[0], torch.tensor([1.0, -2.0]))  # a copy changed


def test_call_reports_a_changed_module_and_wraps_errors():
    module = torch.nn.Linear(2, 2)
    case = Case("a Linear(2, 2)", (module,))

    def zero(linear):
        with torch.no_grad():
            linear.bias.zero_()

    with pytest.raises(AssertionError, match=r"changed the bias of the Linear on a"):
        call(zero, "check_x", case, fix="copy it.")
    with pytest.raises(AssertionError) as info:
        call(lambda linear: 1 / 0, "check_x", case)
    assert str(info.value) == (
        "check_x: your function raised ZeroDivisionError on a Linear(2, 2): "
        "division by zero"
    )
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_call_gives_each_call_a_generator_in_the_same_state():
    case = Case("a generator", (torch.Generator().manual_seed(4),))

    def draw(generator):
        return torch.rand(2, generator=generator)

    assert torch.equal(call(draw, "check_x", case), call(draw, "check_x", case))


def test_require_callable_refuses_results_and_modules():
    with pytest.raises(TypeError, match=r"got torch.Tensor; pass it without calling"):
        require_callable(torch.ones(2), "check_x", "fn")
    with pytest.raises(TypeError, match=r"got a Linear module"):
        require_callable(torch.nn.Linear(2, 2), "check_x", "fn")
    assert require_callable(abs, "check_x", "fn") is abs


def test_no_check_seeds_the_global_generator_directly():
    folder = Path(checks.__file__).parent
    for path in folder.glob("*.py"):
        source = path.read_text(encoding="utf-8")
        assert not re.search(r"\btorch\.(random\.)?manual_seed\(", source), path.name


# --- every check, with a right and a wrong answer ------------------------------------


def test_the_table_covers_every_check():
    assert sorted(example.check for example in EXAMPLES) == sorted(checks.__all__)


def outcome(run):
    """What a check printed, or the message it raised."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            run()
    except AssertionError as error:
        return f"AssertionError: {error}"
    return out.getvalue()


IDS = [example.check for example in EXAMPLES]


@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_a_check_leaves_the_global_random_state_alone(example):
    torch.manual_seed(123)
    state = torch.random.get_rng_state()
    assert outcome(example.right).startswith(f"✅ {example.check}:")
    with pytest.raises(AssertionError):
        example.wrong()
    assert torch.equal(torch.random.get_rng_state(), state)


@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_a_check_says_the_same_whatever_the_callers_seed(example):
    said = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        said.append((outcome(example.right), outcome(example.wrong)))
    assert said[0] == said[1]
    right, wrong = said[0]
    assert right.startswith(f"✅ {example.check}:")
    assert wrong.startswith("AssertionError: ")


# --- an exercise not answered yet ----------------------------------------------------


def _placeholder_call(check):
    """Call ``check`` with ``...`` for every parameter, as an untouched answer cell
    and made-up values for the rest would; return what it printed."""
    signature = inspect.signature(check)
    args, kwargs = [], {}
    for name, parameter in signature.parameters.items():
        if parameter.default is not inspect.Parameter.empty:
            continue
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY:
            kwargs[name] = ...
        else:
            args.append(...)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert check(*args, **kwargs) is None
    return out.getvalue()


@pytest.mark.parametrize("name", sorted(checks.__all__))
def test_every_check_says_not_answered_yet_for_a_placeholder(name):
    check = getattr(checks, name)
    assert check.answers, f"{name} names none of its parameters as the answer"
    printed = _placeholder_call(check)
    assert printed == f"⏳ {name}: {NOT_ANSWERED}\n"


def test_a_function_that_only_holds_the_placeholder_is_not_answered():
    def stable_softmax(x): ...

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        checks.check_softmax(stable_softmax)
    assert "not answered yet" in out.getvalue()


def test_a_function_that_forgets_to_return_is_answered_and_wrong():
    def stable_softmax(x):
        x - x.max(dim=-1, keepdim=True).values  # the result is dropped

    with pytest.raises(AssertionError, match="return"):
        checks.check_softmax(stable_softmax)
