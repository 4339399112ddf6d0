"""What is stored in the notebooks, and the table of contents.

nbval (``make nbval``) re-runs every notebook and compares its outputs with the stored
ones. These tests check what nbval cannot: that the stored outputs come from one run
top to bottom with no code cell left without output, and that ``_toc.yml`` and
``chapters/`` list the same pages. The second half shows that each check fails on a
damaged copy, so none of them can pass vacuously.
"""

from __future__ import annotations

import shutil

import nbformat
import pytest

from tools.notebooks import STUDENT_PROMPT, stored_output_problems, student_copy
from tools.toc import (
    ROOT,
    TOC,
    chapter_notebooks,
    chapter_pages,
    toc_entries,
    toc_problems,
)

NOTEBOOKS = chapter_notebooks()
FIRST_CHAPTER = "01_toy_attention.ipynb"
# The nbval self-test runs this many code cells from the top of Chapter 1.
NBVAL_CELLS = 3


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks found under chapters/"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def test_stored_outputs_come_from_one_full_run(path):
    problems = stored_output_problems(path)
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


def test_toc_and_chapters_agree():
    problems = toc_problems()
    assert not problems, "\n".join(problems)


def test_toc_starts_with_the_introduction():
    assert toc_entries()[0] == "chapters/intro"


# --- workshop copies without solutions (make student) -----------------------------


def _exercise_count(notebook):
    return sum(
        cell.source.lstrip().startswith("```{exercise}")
        for cell in notebook.cells
        if cell.cell_type == "markdown"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def test_student_copy_keeps_exercises_and_checks_but_no_solution(path):
    original = nbformat.read(path, as_version=4)
    copy = student_copy(path)
    text = "\n".join(cell.source for cell in copy.cells)
    assert "solution-start" not in text and "solution-end" not in text
    assert not any(
        cell.get("outputs") or cell.get("execution_count") for cell in copy.cells
    ), "a student copy must come without outputs"
    prompts = [i for i, cell in enumerate(copy.cells) if cell.source == STUDENT_PROMPT]
    assert len(prompts) == _exercise_count(copy) == _exercise_count(original) >= 3
    for i in prompts:
        answer = copy.cells[i + 1]
        assert answer.cell_type == "code" and answer.source == ""
        check = next(
            cell
            for cell in copy.cells[i + 2 :]
            if cell.cell_type == "code" and cell.source
        )
        assert "checks.check_" in check.source, (
            f"{path.name}: the first code cell after a removed solution should be "
            f"its self-check, found:\n{check.source}"
        )


def test_student_copy_rejects_a_solution_that_never_ends(tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell("```{solution-start} ex\n:class: dropdown\n```"),
        nbformat.v4.new_code_cell("answer = 42"),
    ]
    path = tmp_path / "broken.ipynb"
    nbformat.write(notebook, path)
    with pytest.raises(ValueError, match="never ends"):
        student_copy(path)


# --- the checks above, and nbval, fail on damaged copies --------------------------


def _code_cells(notebook):
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def test_a_cleared_execution_count_is_caught(chapter_copy):
    copy, notebook = chapter_copy(FIRST_CHAPTER)
    assert not stored_output_problems(copy)
    _code_cells(notebook)[2].execution_count = None
    nbformat.write(notebook, copy)
    assert any("execution counts" in p for p in stored_output_problems(copy))


def test_a_deleted_output_is_caught(chapter_copy):
    copy, notebook = chapter_copy(FIRST_CHAPTER)
    _code_cells(notebook)[1].outputs = []
    nbformat.write(notebook, copy)
    assert any("no stored output" in p for p in stored_output_problems(copy))


@pytest.fixture
def book_tree(tmp_path):
    """An empty stand-in for the book in a temporary folder: the real ``_toc.yml``
    and, for each page of ``chapters/``, an empty file of the same name."""
    shutil.copy(TOC, tmp_path / TOC.name)
    (tmp_path / "chapters").mkdir()
    for page in chapter_pages():
        target = tmp_path / page.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.touch()
    return tmp_path


def test_a_page_missing_from_the_toc_is_caught(book_tree):
    assert not toc_problems(book_tree)
    (book_tree / "chapters" / "zz_not_in_toc.md").write_text("# Not listed\n")
    problems = toc_problems(book_tree)
    assert len(problems) == 1 and "zz_not_in_toc.md" in problems[0], problems


def test_a_toc_entry_with_no_page_is_caught(book_tree):
    (book_tree / "chapters" / "intro.md").unlink()
    problems = toc_problems(book_tree)
    assert len(problems) == 1 and "'chapters/intro'" in problems[0], problems


class _CellOutcomes:
    """A pytest plugin that records how each cell of an nbval run ended."""

    def __init__(self):
        self.outcomes: dict[str, str] = {}

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.outcome != "passed":
            self.outcomes[report.nodeid.rpartition("::")[2]] = report.outcome


def test_a_changed_printed_number_fails_nbval(chapter_copy):
    """nbval over Chapter 1's first code cells: the intact ones pass, the one whose
    stored output has one digit changed fails."""
    copy, notebook = chapter_copy(FIRST_CHAPTER)
    notebook.cells = _code_cells(notebook)[:NBVAL_CELLS]
    last = notebook.cells[-1]
    assert "nbval-ignore-output" not in last.metadata.get("tags", [])
    output = next((out for out in last.outputs if out.output_type == "stream"), None)
    assert output is not None and any(ch.isdigit() for ch in output.text), (
        f"code cell {NBVAL_CELLS} of {FIRST_CHAPTER} should print a number for "
        f"this test to change; it shows {last.outputs}"
    )
    digit = next(ch for ch in output.text if ch.isdigit())
    output.text = output.text.replace(digit, str((int(digit) + 1) % 10), 1)
    nbformat.write(notebook, copy)
    # nbval runs in this process (its kernel is a process of its own), as
    # `make nbval` runs it, on the copy alone.
    cells = _CellOutcomes()
    exit_code = pytest.main(
        [
            "--nbval",
            "--nbval-current-env",
            "--nbval-sanitize-with",
            str(ROOT / "tests" / "sanitize.cfg"),
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(copy.parent),
            str(copy),
        ],
        plugins=[cells],
    )
    expected = {f"Cell {i}": "passed" for i in range(NBVAL_CELLS)}
    expected[f"Cell {NBVAL_CELLS - 1}"] = "failed"
    assert cells.outcomes == expected
    assert exit_code == pytest.ExitCode.TESTS_FAILED
