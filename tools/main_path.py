"""Deep dives, the main path of a chapter, and how long that path is.

A **deep dive** is an optional detour kept in a chapter but off its main path: a run
of consecutive cells that opens with a Markdown cell starting with an admonition of
class ``deep-dive``::

    :::{admonition} Deep dive: <title>
    :class: deep-dive
    What is inside, and that a first reading may skip it.
    :::

and closes with a Markdown cell holding only the MyST comment ``% end of deep dive``
(invisible in JupyterLab and on the website). The website folds everything in
between into one collapsed box (``tools.sphinx_deep_dives``). A deep dive holds no
heading and no exercise, and deep dives do not nest: :func:`deep_dive_problems`
says where a notebook breaks this.

The **main path** is every cell that is in no deep dive, no exercise and no
solution. ``python -m tools.main_path [NOTEBOOK ...]`` prints, for each chapter, the
words and code cells on its main path, the reading time they suggest, and the time
its deep dives add, then the totals of the numbered chapters (the first pass through
the course). ``--show NOTEBOOK`` prints the main path itself as text: what a reader
who skips every deep dive, exercise and solution reads, code and printed outputs
included.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import NamedTuple

import nbformat

from tools.exercises import exercises
from tools.toc import chapter_notebooks

DEEP_DIVE_CLASS = "deep-dive"
DEEP_DIVE_END = "% end of deep dive"
_START = re.compile(
    r"\A(?::::+|```+)\{admonition\}[^\n]*\n:class:[^\n]*\b" + DEEP_DIVE_CLASS + r"\b"
)
_HEADING = re.compile(r"^#{1,6} ", re.M)

# Reading pace for a first, careful reading of technical prose with equations, and
# the time to run and read one code cell and its output. Calibrated so that the
# estimates match a first reading of Chapters 1-6 by a newcomer.
WORDS_PER_MINUTE = 130
MINUTES_PER_CODE_CELL = 1.0


class DeepDive(NamedTuple):
    """Cell indices of a deep dive: its opening admonition and its end marker."""

    start: int
    end: int


def _source(cell) -> str:
    return cell.source if isinstance(cell.source, str) else "".join(cell.source)


def is_deep_dive_start(cell) -> bool:
    return cell.cell_type == "markdown" and bool(_START.match(_source(cell).lstrip()))


def is_deep_dive_end(cell) -> bool:
    return cell.cell_type == "markdown" and _source(cell).strip() == DEEP_DIVE_END


def deep_dives(notebook) -> list[DeepDive]:
    """Every well-formed deep dive of ``notebook``, in order."""
    found, start = [], None
    for index, cell in enumerate(notebook.cells):
        if is_deep_dive_start(cell) and start is None:
            start = index
        elif is_deep_dive_end(cell) and start is not None:
            found.append(DeepDive(start, index))
            start = None
    return found


def deep_dive_problems(notebook) -> list[str]:
    """What is wrong with the deep dives of ``notebook``; empty when nothing is."""
    problems, start = [], None
    for index, cell in enumerate(notebook.cells):
        where = f"cell {index}"
        if is_deep_dive_start(cell):
            if start is not None:
                problems.append(
                    f"{where}: a deep dive opens inside the deep dive of cell {start}; "
                    f"close that one first with a cell '{DEEP_DIVE_END}'"
                )
            start = index
        elif is_deep_dive_end(cell):
            if start is None:
                problems.append(f"{where}: '{DEEP_DIVE_END}' with no deep dive open")
            start = None
        elif start is not None and cell.cell_type == "markdown":
            source = _source(cell)
            if _HEADING.search(source):
                problems.append(
                    f"{where}: a heading inside the deep dive of cell {start}; use a "
                    "bold lead-in instead (the website folds the deep dive into a box)"
                )
            if "{exercise}" in source or "{solution-start}" in source:
                problems.append(
                    f"{where}: an exercise inside the deep dive of cell {start}"
                )
    if start is not None:
        problems.append(
            f"the deep dive of cell {start} never ends: add a Markdown cell "
            f"'{DEEP_DIVE_END}' after its last cell"
        )
    return problems


def off_main_path(notebook) -> set[int]:
    """Indices of the cells in a deep dive, an exercise or a solution."""
    cells = set()
    for dive in deep_dives(notebook):
        cells.update(range(dive.start, dive.end + 1))
    for ex in exercises(notebook):
        cells.update(range(ex.prompt, ex.solution.stop))
    return cells


_MARKUP = re.compile(r"[`*_#>|]|\{[\w-]+\}|^:\w+:.*$|^(?::::+|```+).*$", re.M)


def words(markdown: str) -> int:
    """Words in a Markdown text, its markup and math counted as words it shows."""
    return len(_MARKUP.sub(" ", markdown).split())


class Length(NamedTuple):
    words: int
    code_cells: int

    @property
    def minutes(self) -> float:
        return self.words / WORDS_PER_MINUTE + self.code_cells * MINUTES_PER_CODE_CELL


def _length(cells) -> Length:
    cells = list(cells)
    return Length(
        words=sum(words(_source(c)) for c in cells if c.cell_type == "markdown"),
        code_cells=sum(c.cell_type == "code" for c in cells),
    )


def main_path_length(notebook) -> Length:
    """Words of Markdown and number of code cells on the main path."""
    skip = off_main_path(notebook)
    return _length(c for i, c in enumerate(notebook.cells) if i not in skip)


def deep_dive_length(notebook) -> Length:
    """Words of Markdown and number of code cells in the deep dives."""
    return _length(
        notebook.cells[i]
        for dive in deep_dives(notebook)
        for i in range(dive.start, dive.end + 1)
    )


def show(notebook) -> str:
    """The main path of ``notebook`` as text: Markdown, code and text outputs."""
    skip, parts = off_main_path(notebook), []
    for index, cell in enumerate(notebook.cells):
        if index in skip:
            continue
        if cell.cell_type == "markdown":
            parts.append(_source(cell))
            continue
        parts.append(f"```python\n{_source(cell)}\n```")
        for output in cell.get("outputs", []):
            text = output.get("text") or output.get("data", {}).get("text/plain")
            if output.get("data", {}).get("image/png"):
                text = "[figure]"
            if text:
                text = text if isinstance(text, str) else "".join(text)
                parts.append(f"```text\n{text.rstrip()}\n```")
    return "\n\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument(
        "--show", action="store_true", help="print the main path of each notebook"
    )
    args = parser.parse_args(argv)
    paths = args.notebooks or chapter_notebooks()
    if args.show:
        for path in paths:
            print(show(nbformat.read(path, as_version=4)))
        return 0
    print(f"{'notebook':32} {'words':>6} {'code':>5} {'minutes':>8} {'deep dives':>11}")
    numbered = []
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        length, extra = main_path_length(notebook), deep_dive_length(notebook)
        print(
            f"{path.name:32} {length.words:6d} {length.code_cells:5d} "
            f"{length.minutes:8.0f} {extra.minutes:7.0f} min"
        )
        if path.name[:2].isdigit():
            numbered.append((int(path.name[:2]), length.minutes, extra.minutes))
    for name, chosen in (
        ("Chapters 1-5", [n for n in numbered if n[0] <= 5]),
        (f"all {len(numbered)} chapters", numbered),
    ):
        if len(chosen) > 1:
            main_minutes = sum(m for _, m, _ in chosen)
            extra_minutes = sum(e for _, _, e in chosen)
            print(
                f"{name:32} {'':6} {'':5} {main_minutes:8.0f} {extra_minutes:7.0f} min"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
