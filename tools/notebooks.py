"""Execute and inspect the course notebooks.

Used by ``make outputs`` (``python -m tools.notebooks execute``) to regenerate every
stored output, by ``make student`` (``python -m tools.notebooks student DIR``) to write
workshop copies without solutions, and by ``tests/test_notebooks.py`` to check what is
stored. Run it from the repository root.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from tools.exercises import ANSWER_TAG, mark_solutions, student_copy
from tools.toc import ROOT, chapter_notebooks

CELL_TIMEOUT_S = 300

# Execution environment: the same hash seed on every run, so that anything that
# iterates over a set prints in the same order.
EXECUTION_ENV = {"PYTHONHASHSEED": "0"}


def stored_output_problems(path: Path) -> list[str]:
    """What is wrong with the outputs stored in a notebook; empty when nothing is.

    The stored outputs must come from one run top to bottom (execution counts 1, 2,
    3, ...), every code cell but the exercises' answer cells must show an output,
    error outputs may appear only in cells tagged ``raises-exception`` (and such a
    cell must raise), and the kernel must be ``python3``.
    """
    notebook = nbformat.read(path, as_version=4)
    cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    problems = []
    counts = [cell.execution_count for cell in cells]
    expected = list(range(1, len(cells) + 1))
    if counts != expected:
        problems.append(
            f"execution counts are {counts}, expected {expected}: re-run the "
            "notebook with `make outputs`"
        )
    silent = [
        number
        for number, cell in enumerate(cells, 1)
        if not cell.outputs and ANSWER_TAG not in cell.metadata.get("tags", [])
    ]
    if silent:
        problems.append(
            f"code cells {silent} (counting code cells from 1) have no stored output: "
            "make each cell show its result, then run `make outputs`"
        )
    for number, cell in enumerate(cells, 1):
        errors = [out.ename for out in cell.outputs if out.output_type == "error"]
        tagged = "raises-exception" in cell.metadata.get("tags", [])
        if errors and not tagged:
            problems.append(
                f"code cell {number} raised {errors[0]} but is not tagged "
                "'raises-exception'"
            )
        elif tagged and not errors:
            problems.append(
                f"code cell {number} is tagged 'raises-exception' but raised nothing"
            )
    kernel = notebook.metadata.get("kernelspec", {}).get("name")
    if kernel != "python3":
        problems.append(f"the kernelspec names {kernel!r}; it must be 'python3'")
    return problems


def execute(path: Path) -> float:
    """Run a notebook top to bottom in a fresh kernel and store its outputs in place.

    Returns the wall time in seconds. Solution cells are collapsed for JupyterLab
    (see :func:`tools.exercises.mark_solutions`). Widget state is saved so that
    JupyterLab shows the explorers' last view; no timing metadata is stored, so
    re-running an unchanged notebook leaves the file unchanged.
    """
    notebook = nbformat.read(path, as_version=4)
    mark_solutions(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            cell.metadata.pop("execution", None)
    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        record_timing=False,
        store_widget_state=True,
    )
    start = time.perf_counter()
    saved_env = {key: os.environ.get(key) for key in EXECUTION_ENV}
    os.environ.update(EXECUTION_ENV)
    try:
        client.execute()
    finally:
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    elapsed = time.perf_counter() - start
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = _merge_streams(cell.outputs)
    nbformat.write(notebook, path)
    return elapsed


def _merge_streams(outputs):
    """Join consecutive prints to the same stream into one output.

    How a cell's prints are split into stream messages depends on timing; merged, the
    stored notebook is the same on every run.
    """
    merged = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if (
            output.output_type == "stream"
            and previous is not None
            and previous.output_type == "stream"
            and previous.name == output.name
        ):
            previous.text += output.text
        else:
            merged.append(output)
    return merged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("execute", help="re-execute notebooks in place")
    run.add_argument(
        "paths", nargs="*", type=Path, help="notebooks (default: all in chapters/)"
    )
    student = sub.add_parser(
        "student", help="write copies without solutions or outputs, for a workshop"
    )
    student.add_argument("out", type=Path, help="folder for the copies")
    args = parser.parse_args(argv)
    if args.command == "student":
        args.out.mkdir(parents=True, exist_ok=True)
        for path in chapter_notebooks():
            nbformat.write(student_copy(path), args.out / path.name)
            print(f"wrote {args.out / path.name}")
        return 0
    paths = [path.resolve() for path in args.paths] or chapter_notebooks()
    for path in paths:
        print(f"executing {path.relative_to(ROOT)} ...", flush=True)
        print(f"  done in {execute(path):.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
