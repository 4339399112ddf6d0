"""Deep dives: the notebook rules (tools.main_path) and the website's folding of
each into one collapsed box (tools.sphinx_deep_dives), built with Sphinx here."""

from __future__ import annotations

import io
import re
from html.parser import HTMLParser

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from tools.main_path import (
    DEEP_DIVE_END,
    deep_dive_length,
    deep_dive_problems,
    deep_dives,
    main_path_length,
    show,
    words,
)
from tools.toc import ROOT, chapter_notebooks, core_chapters

OPEN = ":::{admonition} Deep dive: a detour\n:class: deep-dive\nOptional.\n:::"


def notebook(*cells):
    return new_notebook(
        cells=list(cells),
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}},
    )


def printed(source, text):
    cell = new_code_cell(source, execution_count=1)
    cell.outputs = [new_output("stream", name="stdout", text=text)]
    return cell


def example():
    return notebook(
        new_markdown_cell("# Title\n\nOn the main path."),
        new_markdown_cell(OPEN),
        new_markdown_cell("Inside the detour."),
        printed("print('inside')", "inside\n"),
        new_markdown_cell(DEEP_DIVE_END),
        new_markdown_cell("Back on the main path."),
    )


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_every_deep_dive_is_well_formed(path):
    problems = deep_dive_problems(nbformat.read(path, as_version=4))
    assert not problems, "\n".join(problems)


def test_the_main_path_shown_as_text_leaves_out_the_deep_dive():
    nb = example()
    nb.cells.insert(1, printed("print('main')", "main\n"))
    text = show(nb)
    assert "On the main path." in text and "Back on the main path." in text
    assert "print('main')" in text and "```text\nmain\n```" in text
    assert "inside" not in text.lower()


def test_deep_dives_are_found_and_left_off_the_main_path():
    nb = example()
    assert deep_dives(nb) == [(1, 4)]
    length = main_path_length(nb)
    assert length.code_cells == 0
    assert (
        length.words == words("# Title\n\nOn the main path.") + 5
    )  # + "Back on the main path."


@pytest.mark.parametrize(
    "cells, problem",
    [
        ([new_markdown_cell(OPEN), new_markdown_cell("text")], "never ends"),
        ([new_markdown_cell(DEEP_DIVE_END)], "no deep dive open"),
        (
            [new_markdown_cell(OPEN), new_markdown_cell("## A heading")],
            "a heading inside",
        ),
        (
            [new_markdown_cell(OPEN), new_markdown_cell(OPEN)],
            "opens inside",
        ),
    ],
)
def test_broken_deep_dives_are_caught(cells, problem):
    problems = deep_dive_problems(notebook(*cells))
    assert any(problem in p for p in problems), problems


def build(tmp_path, nb):
    """Build a one-page Sphinx site from ``nb``; return its HTML and warnings."""
    from sphinx.application import Sphinx

    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "conf.py").write_text(
        "extensions = ['myst_nb', 'sphinx_togglebutton', 'tools.sphinx_deep_dives']\n"
        "nb_execution_mode = 'off'\n"
        "myst_enable_extensions = ['colon_fence']\n"
    )
    nbformat.write(nb, src / "index.ipynb")
    warnings = io.StringIO()
    app = Sphinx(
        str(src),
        str(src),
        str(out),
        str(tmp_path / "doctrees"),
        "html",
        status=None,
        warning=warnings,
        freshenv=True,
    )
    app.build()
    return (out / "index.html").read_text(encoding="utf-8"), warnings.getvalue()


class BoxText(HTMLParser):
    """The text inside the first <div> whose classes include all of ``classes``."""

    def __init__(self, *classes):
        super().__init__()
        self.classes, self.depth, self.done, self.text = set(classes), 0, False, []

    def handle_starttag(self, tag, attrs):
        if tag != "div" or self.done:
            return
        if self.depth:
            self.depth += 1
        elif self.classes <= set((dict(attrs).get("class") or "").split()):
            self.depth = 1

    def handle_endtag(self, tag):
        if tag == "div" and self.depth:
            self.depth -= 1
            self.done = self.depth == 0

    def handle_data(self, data):
        if self.depth:
            self.text.append(data)


def test_the_website_folds_a_deep_dive_into_one_collapsed_box(tmp_path):
    html, warnings = build(tmp_path, example())
    assert "deep dive" not in warnings.lower(), warnings
    box = BoxText("admonition", "deep-dive", "dropdown")
    box.feed(html)
    inside = " ".join(box.text)
    assert "Deep dive: a detour" in inside
    assert "Inside the detour." in inside and "print('inside')" in inside
    assert "On the main path." not in inside and "Back on the main path." not in inside
    assert "Back on the main path." in html


def test_the_website_warns_of_a_deep_dive_with_no_end(tmp_path):
    nb = example()
    del nb.cells[4]
    _, warnings = build(tmp_path, nb)
    assert "a deep dive with no end" in warnings


@pytest.mark.parametrize("path", core_chapters(), ids=lambda p: p.name)
def test_the_stated_time_matches_the_main_path(path):
    """A chapter's stated time is within 5 minutes of its main path's."""
    stated = _stated_times(path)[0]
    measured = main_path_length(nbformat.read(path, as_version=4)).minutes
    assert abs(stated - measured) <= 5, (
        f"{path.name}: states {stated} minutes, the main path measures "
        f"{measured:.0f} (python -m tools.main_path)"
    )


def _stated_times(path):
    """The minutes a chapter states near its top: (notebook, exercises)."""
    notebook = nbformat.read(path, as_version=4)
    text = "\n".join(c.source for c in notebook.cells[:3] if c.cell_type == "markdown")
    stated = re.search(r"\*\*Time:\*\* about (\d+) minutes, plus (\d+)", text)
    assert stated, f"{path.name}: no '**Time:** about N minutes, plus M' near the top"
    return int(stated.group(1)), int(stated.group(2))


def test_the_instructors_table_gives_each_chapter_s_stated_times():
    """chapters/instructors.md repeats each chapter's stated times."""
    page = (ROOT / "chapters" / "instructors.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+)\. [^|]+\| (\d+) min \| (\d+) min \|$", page, re.M)
    table = {int(n): (int(a), int(b)) for n, a, b in rows}
    chapters = core_chapters()
    assert sorted(table) == list(range(1, len(chapters) + 1))
    for number, path in enumerate(chapters, start=1):
        assert table[number] == _stated_times(path), (
            f"instructors.md gives Chapter {number} {table[number]} minutes "
            f"(notebook, exercises); {path.name} states {_stated_times(path)}"
        )


def test_the_introduction_gives_both_routes_with_the_chapters_times():
    """intro.md: the first pass is the sum of the chapters' stated times, the
    exercises theirs, and the deep dives what tools.main_path measures."""
    page = (ROOT / "chapters" / "intro.md").read_text(encoding="utf-8")
    chapters = core_chapters()
    times = [_stated_times(path) for path in chapters]
    page = " ".join(page.split())  # one line, single spaces
    first_five = re.search(r"Chapters 1 to 5[^.]*?take about (\d+) minutes", page)
    every = re.search(rf"all {len(chapters)} chapters take about (\d+) minutes", page)
    exercises = re.search(r"exercises[^.]*?add about (\d+) minutes", page)
    dives = re.search(r"deep dives[^.]*?add about (\d+) minutes", page)
    assert first_five and every and exercises and dives, "intro.md: no two routes"
    assert int(first_five.group(1)) == sum(main for main, _ in times[:5])
    assert int(every.group(1)) == sum(main for main, _ in times)
    assert int(exercises.group(1)) == sum(extra for _, extra in times)
    measured = sum(
        deep_dive_length(nbformat.read(path, as_version=4)).minutes for path in chapters
    )
    assert abs(int(dives.group(1)) - measured) <= 0.1 * measured, (
        f"intro.md: the deep dives add {dives.group(1)} minutes; they measure "
        f"{measured:.0f} (python -m tools.main_path)"
    )
