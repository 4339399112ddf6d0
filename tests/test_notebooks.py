"""What is stored in the notebooks, and the table of contents.

nbval (``make nbval``) re-runs every notebook and compares its outputs with the stored
ones. These tests check what nbval cannot: that the stored outputs come from one run
top to bottom with no code cell left without output, and that ``_toc.yml`` and
``chapters/`` list the same pages. The second half shows that each check fails on a
damaged copy, so none of them can pass vacuously.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import nbformat
import pytest
from notebooks import (
    ROOT,
    STUDENT_PROMPT,
    chapter_notebooks,
    stored_output_problems,
    student_copy,
    toc_entries,
    toc_problems,
)

NOTEBOOKS = chapter_notebooks()
FIRST_CHAPTER = ROOT / "chapters" / "01_toy_attention.ipynb"


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


@pytest.fixture
def damaged_copy(tmp_path):
    """A copy of Chapter 1 to damage, and a function that saves the damage."""
    copy = tmp_path / FIRST_CHAPTER.name
    shutil.copy(FIRST_CHAPTER, copy)
    notebook = nbformat.read(copy, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    return copy, notebook, code


def test_a_cleared_execution_count_is_caught(damaged_copy):
    copy, notebook, code = damaged_copy
    code[2].execution_count = None
    nbformat.write(notebook, copy)
    assert any("execution counts" in p for p in stored_output_problems(copy))


def test_a_deleted_output_is_caught(damaged_copy):
    copy, notebook, code = damaged_copy
    code[1].outputs = []
    nbformat.write(notebook, copy)
    assert any("no stored output" in p for p in stored_output_problems(copy))


def test_a_page_missing_from_the_toc_is_caught(tmp_path):
    extra = ROOT / "chapters" / "zz_not_in_toc_test_page.md"
    extra.write_text("# A page the table of contents does not list\n")
    try:
        problems = toc_problems()
    finally:
        extra.unlink()
    assert any("zz_not_in_toc_test_page.md" in p for p in problems)


def test_a_changed_printed_number_fails_nbval(damaged_copy):
    copy, notebook, code = damaged_copy
    cell, output = next(
        (cell, out)
        for cell in code
        if "nbval-ignore-output" not in cell.metadata.get("tags", [])
        for out in cell.outputs
        if out.output_type == "stream" and any(ch.isdigit() for ch in out.text)
    )
    digit = next(ch for ch in output.text if ch.isdigit())
    changed = str((int(digit) + 1) % 10)
    output.text = output.text.replace(digit, changed, 1)
    nbformat.write(notebook, copy)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
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
        cwd=ROOT / "chapters",
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1, result.stdout[-2000:]
    assert "1 failed" in result.stdout, result.stdout[-2000:]
