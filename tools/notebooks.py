"""Execute and inspect the course notebooks.

Used by ``make outputs`` (``python -m tools.notebooks execute``) to regenerate every
stored output, by ``make student`` (``python -m tools.notebooks student DIR``) to write
workshop copies without solutions, and by ``tests/test_notebooks.py`` to check what is
stored. Run it from the repository root.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from tools.exercises import ANSWER_TAG, mark_solutions, student_copy
from tools.reproducible import PINNED, problem
from tools.toc import ROOT, chapter_notebooks

# The longest cell, a training run, takes under 3 minutes on an idle two-core machine;
# the limit leaves room for a busy one.
CELL_TIMEOUT_S = 900

# Kernels that store outputs run in the pinned numeric environment, and tell cells
# that time something on the reader's machine to print a stable line instead of
# times (attn_course.efficient.print_timings).
STORING_ENV = {**PINNED, "ATTN_COURSE_STORING_OUTPUTS": "1"}

WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


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
    """Run a notebook top to bottom in a fresh kernel, in the pinned numeric
    environment (:mod:`tools.reproducible`), and store its outputs in place.

    Returns the wall time in seconds. Solution cells are collapsed for JupyterLab
    (see :func:`tools.exercises.mark_solutions`). Widget state is saved so that
    JupyterLab shows the explorers' last view. Re-running an unchanged notebook leaves
    the file unchanged: no timing metadata is stored, widget models get ids derived
    from the notebook's path (:func:`normalise_widget_ids`), and no cell prints a
    measured duration (timings belong to benchmarks, not to stored outputs).
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
    client.execute(env={**os.environ, **STORING_ENV})
    elapsed = time.perf_counter() - start
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = _merge_streams(cell.outputs)
    normalise_widget_ids(notebook, _notebook_key(path))
    nbformat.write(notebook, path)
    return elapsed


def _notebook_key(path: Path) -> str:
    """The notebook's path relative to the repository, the same on every machine."""
    path = Path(path).resolve()
    try:
        return path.relative_to(ROOT).as_posix()
    except ValueError:
        return path.name


def widget_model_id(key: str, number: int) -> str:
    """The id of the ``number``-th widget model (from 0) of the notebook ``key``.

    It has the form of the ids ipywidgets makes (32 hex digits of a version 4 UUID),
    but is derived from ``key`` and ``number``, so it is the same on every run and
    different in every notebook.
    """
    if not isinstance(key, str) or not key:
        raise ValueError(f"key must be a non-empty string, got {key!r}")
    if not isinstance(number, int) or isinstance(number, bool) or number < 0:
        raise ValueError(f"number must be an int >= 0, got {number!r}")
    digest = hashlib.sha256(f"{key}#{number}".encode()).digest()
    return uuid.UUID(bytes=digest[:16], version=4).hex


def _strings(value):
    """Every string in a JSON-like value (dict keys sorted, lists in order)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for name in sorted(value):
            yield from _strings(value[name])
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _replace_strings(value, pattern: re.Pattern, mapping: dict[str, str]):
    """``value`` with every match of ``pattern`` in its strings replaced via
    ``mapping``; dicts and lists are changed in place."""
    if isinstance(value, str):
        return pattern.sub(lambda match: mapping[match.group()], value)
    if isinstance(value, dict):
        for name in value:
            value[name] = _replace_strings(value[name], pattern, mapping)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            value[index] = _replace_strings(item, pattern, mapping)
    return value


def normalise_widget_ids(notebook, key: str) -> dict[str, str]:
    """Rename the widget models of an executed notebook to ids that depend only on
    ``key`` (the notebook's path) and the order in which the models appear.

    ipywidgets gives every model a random id, which appears as a key of the saved
    widget state (``metadata.widgets``), in references between models
    (``"IPY_MODEL_<id>"``) and in the ``model_id`` of every widget output. All of
    them are renamed together, so the saved state stays consistent for JupyterLab.
    Models are numbered in the order they are reached: from the widget outputs, cell
    by cell, then through the models they refer to; models that nothing reaches come
    last, ordered by their content. Returns the mapping from old to new ids (empty
    when the notebook has no widgets). Changes ``notebook`` in place.
    """
    if not isinstance(key, str) or not key:
        raise ValueError(f"key must be a non-empty string, got {key!r}")
    widgets = notebook.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {})
    state = widgets.get("state", {})
    if not isinstance(state, dict):
        raise ValueError(
            f"metadata.widgets[{WIDGET_STATE!r}].state must be a dict, "
            f"got {type(state).__name__}"
        )
    outputs = [
        output
        for cell in notebook.get("cells", [])
        if cell.get("cell_type") == "code"
        for output in cell.get("outputs", [])
    ]
    known = set(state)
    for output in outputs:
        model_id = output.get("data", {}).get(WIDGET_VIEW, {}).get("model_id")
        if isinstance(model_id, str) and model_id:
            known.add(model_id)
    if not known:
        return {}
    pattern = re.compile(
        "|".join(
            re.escape(model_id)
            for model_id in sorted(known, key=lambda m: (-len(m), m))
        )
    )
    order: list[str] = []

    def reach(value) -> None:
        queue = []
        for text in _strings(value):
            for match in pattern.finditer(text):
                if match.group() not in order:
                    order.append(match.group())
                    queue.append(match.group())
        for model_id in queue:
            reach(state.get(model_id))

    reach(outputs)
    unreached = [model_id for model_id in state if model_id not in order]
    unreached.sort(key=lambda m: pattern.sub("", json.dumps(state[m], sort_keys=True)))
    for model_id in unreached:
        if model_id not in order:
            order.append(model_id)
            reach(state[model_id])
    mapping = {old: widget_model_id(key, number) for number, old in enumerate(order)}
    for output in outputs:
        _replace_strings(output, pattern, mapping)
    if state:
        renamed = {
            mapping[old]: _replace_strings(model, pattern, mapping)
            for old, model in state.items()
        }
        widgets["state"] = type(state)(sorted(renamed.items()))
    return mapping


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
    if problem():
        print(problem())
        return 3
    paths = [path.resolve() for path in args.paths] or chapter_notebooks()
    with ThreadPoolExecutor(max_workers=2) as pool:  # two kernels of one thread each
        for path, seconds in zip(paths, pool.map(execute, paths), strict=True):
            print(f"executed {path.relative_to(ROOT)} in {seconds:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
