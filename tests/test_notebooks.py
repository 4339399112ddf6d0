"""What nbval cannot check: stored outputs from one full run, the exercise flow, the
table of contents against ``chapters/``, each shown to fail on a damaged copy."""

from __future__ import annotations

import re
import shutil

import nbformat
import pytest

from tools.exercises import (
    ANSWER_TAG,
    CHECK_TAG,
    OUR,
    exercises,
    flow_problems,
    mark_solutions,
    plain_markdown,
    solutions_notebook,
    student_copy,
)
from tools.main_path import DEEP_DIVE_END
from tools.notebooks import stored_output_problems
from tools.toc import (
    ROOT,
    TOC,
    chapter_notebooks,
    chapter_pages,
    core_chapters,
    toc_entries,
    toc_problems,
)
from tools.workshop import LEARNER_PACKAGES, learner_requirements

NOTEBOOKS = chapter_notebooks()
FIRST_CHAPTER = "01_toy_attention.ipynb"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def test_stored_outputs_come_from_one_full_run(path):
    problems = stored_output_problems(path)
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def test_no_prose_line_starts_with_a_percent_sign(path):
    # MyST reads such a line as a comment and drops it from the page: "45\n% and 44 %"
    # loses its second half. The deep dives' end marker is the one comment meant.
    lost = [
        line
        for cell in nbformat.read(path, as_version=4).cells
        if cell.cell_type == "markdown" and cell.source.strip() != DEEP_DIVE_END
        for line in cell.source.splitlines()
        if line.lstrip().startswith("%")
    ]
    assert not lost, f"{path.name}: lines MyST would drop: {lost}"


def test_toc_and_chapters_agree():
    assert NOTEBOOKS, "no notebooks found under chapters/"
    problems = toc_problems()
    assert not problems, "\n".join(problems)


def test_toc_starts_with_the_introduction():
    assert toc_entries()[0] == "chapters/intro"


# --- the exercise flow, and workshop copies without solutions ----------------------


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def test_every_exercise_follows_the_flow(path):
    problems = flow_problems(path)
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


def test_every_chapter_has_three_exercises():
    """Every core chapter; reference pages may have no exercises."""
    chapters = core_chapters()
    assert len(chapters) >= 6, f"the numbered part of _toc.yml lists {chapters}"
    for path in chapters:
        assert len(exercises(nbformat.read(path, as_version=4))) >= 3, path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def test_student_copy_keeps_answer_cells_and_checks_but_no_solution(path):
    original = nbformat.read(path, as_version=4)
    copy = student_copy(path)
    text = "\n".join(cell.source for cell in copy.cells)
    assert "{solution" not in text and "**Solution**" not in text, "a solution left"
    code = "\n".join(c.source for c in copy.cells if c.cell_type == "code")
    assert not re.search(rf"\b{OUR}", code), "a student copy holds a solution's code"
    assert "```{" not in text and "{ref}`" not in text, "MyST left in a student copy"
    markdown = "\n".join(c.source for c in copy.cells if c.cell_type == "markdown")
    labels = re.findall(r"^\([\w.:-]+\)=", markdown, re.M)
    assert not labels, f"MyST target labels left in a student copy: {labels}"
    assert not any(
        cell.get("outputs") or cell.get("execution_count") for cell in copy.cells
    ), "a student copy must come without outputs"
    answers = [c for c in copy.cells if ANSWER_TAG in c.metadata.get("tags", [])]
    checks = [c for c in copy.cells if CHECK_TAG in c.metadata.get("tags", [])]
    assert len(answers) == len(checks) == len(exercises(original))
    if path in core_chapters():
        assert len(answers) >= 3, f"{path.name} is a chapter with fewer than 3"
    for answer, check in zip(answers, checks, strict=True):
        following = copy.cells[copy.cells.index(answer) + 1]
        assert following is check and "..." in answer.source


def _flow_notebook(*sources):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell("```{exercise} Double it\n:label: ex\nDo.\n```"),
        nbformat.v4.new_code_cell(
            "# Your answer\ndouble = ...", metadata={"tags": ["answer"]}
        ),
        nbformat.v4.new_code_cell(
            "checks.check_x(double)", metadata={"tags": ["check"]}
        ),
        nbformat.v4.new_markdown_cell("```{solution-start} ex\n:class: dropdown\n```"),
        *sources,
    ]
    return notebook


def test_a_solution_that_never_ends_is_caught():
    notebook = _flow_notebook(nbformat.v4.new_code_cell("our_double = 2"))
    with pytest.raises(ValueError, match="never ends"):
        exercises(notebook)


def test_a_solution_that_overwrites_the_answer_is_caught(tmp_path):
    notebook = _flow_notebook(
        nbformat.v4.new_code_cell("double = 2\nchecks.check_x(double)"),
        nbformat.v4.new_markdown_cell("Two.\n\n```{solution-end}\n```"),
    )
    mark_solutions(notebook)
    path = tmp_path / "overwrites.ipynb"
    nbformat.write(notebook, path)
    problems = flow_problems(path)
    assert any("binds ['double']" in p for p in problems), problems


def test_an_answer_cell_after_the_check_is_caught():
    notebook = _flow_notebook()
    cells = notebook.cells
    cells[1], cells[2] = cells[2], cells[1]
    with pytest.raises(ValueError, match="answer cell"):
        exercises(notebook)


def test_plain_markdown_turns_an_exercise_into_a_quote():
    text = plain_markdown("```{exercise} Double it\n:label: ex\nDo $x$.\n```", "2")
    assert text == "> **Exercise 2: Double it**\n>\n> Do $x$."


# --- the checks above fail on damaged copies ----------------------------------------


def _code_cells(notebook):
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


@pytest.mark.parametrize(
    "damage, problem",
    [
        (lambda cells: setattr(cells[2], "execution_count", None), "execution counts"),
        (lambda cells: setattr(cells[1], "outputs", []), "no stored output"),
    ],
)
def test_a_damaged_run_is_caught(chapter_copy, damage, problem):
    copy, notebook = chapter_copy(FIRST_CHAPTER)
    assert not stored_output_problems(copy)
    damage(_code_cells(notebook))
    nbformat.write(notebook, copy)
    assert any(problem in p for p in stored_output_problems(copy))


@pytest.fixture
def book_tree(tmp_path):
    """The real ``_toc.yml`` and an empty file for each page of ``chapters/``."""
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


def test_solutions_notebook_holds_every_solution_and_no_learner_cell():
    book = solutions_notebook(NOTEBOOKS, "Solutions")
    text = "\n".join(cell.source for cell in book.cells)
    for path in NOTEBOOKS:
        for ex in exercises(nbformat.read(path, as_version=4)):
            assert ex.title in text, f"{ex.label} is missing from the solutions"
    tags = [tag for cell in book.cells for tag in cell.metadata.get("tags", [])]
    assert ANSWER_TAG not in tags and CHECK_TAG not in tags
    assert "```{" not in text
    assert text.count("checks.check_") >= sum(
        len(exercises(nbformat.read(path, as_version=4))) for path in NOTEBOOKS
    )


def test_workshop_requirements_are_the_course_pins():
    lines = learner_requirements().splitlines()
    pinned = set((ROOT / "requirements.txt").read_text().splitlines())
    assert len(lines) == len(LEARNER_PACKAGES) and set(lines) <= pinned
    assert all("==" in line for line in lines)


# --- the glossary ---------------------------------------------------------------------

GLOSSARY = ROOT / "chapters" / "glossary.md"


def _glossary_terms():
    text = GLOSSARY.read_text()
    body = text.split("```{glossary}", 1)[1].split("\n```", 1)[0]
    return {line.strip() for line in body.splitlines() if line and line[0] != " "}


def _linked_terms():
    linked = {}
    for path in NOTEBOOKS:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                for text in re.findall(r"\{term\}`([^`]*)`", cell.source):
                    shown = re.match(r".*?<([^>]*)>$", text, re.S)
                    linked.setdefault(shown.group(1) if shown else text, path.name)
    return linked


def test_every_glossary_term_is_linked_from_a_chapter():
    terms, linked = _glossary_terms(), _linked_terms()
    assert len(terms) >= 10, f"the glossary parser found only {sorted(terms)}"
    assert not terms - set(linked), f"never linked: {sorted(terms - set(linked))}"
    assert not set(linked) - terms, f"links to no entry: {sorted(set(linked) - terms)}"
