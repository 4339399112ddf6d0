"""The workshop folder stands alone: it installs offline and its notebooks run.

``make workshop-check`` writes the folder with every wheel (``pip download``, the
one step that uses the network), then creates a fresh virtual environment and
installs into it from the folder alone: ``pip --no-index`` with pip's configuration
files and ``PIP_*`` settings switched off, so that no index or other wheel folder
can help. That environment can import every module a student notebook imports,
and Chapter 1's student copy runs top to bottom there with the right answers pasted
into its answer cells, every check printing its ✅. (Every chapter's exercises are
answered wrong and right in their notebooks by ``make nbval``; the solutions
notebook's cells are the chapters' own, ``tests/test_notebooks.py``.)

The same wheels show that the website's portable copy of a chapter stands alone: in
another fresh virtual environment that holds nothing but a Jupyter kernel, its first
cell installs the course's package (offline, from the workshop's wheel that
``ATTN_COURSE_SOURCE`` names) and the chapter runs top to bottom.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import venv

import nbformat
import pytest

import attn_course
from tests.exercises import chapters
from tools.exercises import ANSWER_TAG, CHECK_TAG
from tools.portable import INSTALL_TAG, portable_copy
from tools.reproducible import PINNED
from tools.toc import CHAPTERS, chapter_notebooks
from tools.workshop import write_workshop

pytestmark = pytest.mark.workshop

RIGHT = {
    name: {label: answers.right for label, answers in table.items()}
    for name, table in chapters().items()
}


def _offline_env(tmp):
    """The environment for pip and Jupyter in the fresh venv: no pip configuration,
    no index, Jupyter's folders of its own, and the pinned numeric environment in
    which the course's outputs are stored."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PINNED)
    env.update(
        PIP_CONFIG_FILE=os.devnull,
        PIP_NO_INDEX="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        JUPYTER_DATA_DIR=str(tmp / "jupyter-data"),
        JUPYTER_CONFIG_DIR=str(tmp / "jupyter-config"),
        JUPYTER_PATH="",
    )
    env.pop("VIRTUAL_ENV", None)
    return env


@pytest.fixture(scope="session")
def installed(tmp_path_factory):
    """(workshop folder, fresh venv's bin folder, environment) after the offline
    install that the folder's README gives."""
    tmp = tmp_path_factory.mktemp("workshop")
    folder = tmp / "attention-workshop"
    archive = write_workshop(folder, with_wheels=True)
    assert archive.exists()
    env = _offline_env(tmp)
    venv.create(tmp / "env", with_pip=True)
    bin_ = tmp / "env" / "bin"
    subprocess.run(
        [
            str(bin_ / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--find-links",
            "wheels",
            "-r",
            "requirements.txt",
            "attn-course",
        ],
        cwd=folder,
        env=env,
        check=True,
    )
    return folder, bin_, env


def _run(bin_, env, path, nbconvert=None):
    """Execute a notebook with the fresh venv's own nbconvert (or the command given
    as ``nbconvert``); return it executed. A failure shows the cell that failed and
    its error, as nbconvert printed them."""
    done = path.with_name(path.stem + ".done.ipynb")
    command = nbconvert or [str(bin_ / "jupyter"), "nbconvert"]
    run = subprocess.run(
        [*command, "--to", "notebook", "--execute"]
        + ["--ExecutePreprocessor.timeout=600", "--output", done.name, path.name],
        cwd=path.parent,
        env=env,
        capture_output=True,
        text=True,
    )
    if run.returncode != 0:
        pytest.fail(
            f"{path.name} failed under nbconvert (exit {run.returncode}):\n"
            f"{run.stderr[-6000:]}",
            pytrace=False,
        )
    return nbformat.read(done, as_version=4)


def _printed(cell):
    return "".join(
        out.get("text", "")
        for out in cell.get("outputs", [])
        if out.output_type == "stream"
    )


def test_the_package_comes_from_the_wheel(installed):
    folder, bin_, env = installed
    where = subprocess.run(
        [str(bin_ / "python"), "-c", "import attn_course; print(attn_course.__file__)"],
        cwd=folder,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert str(bin_.parent) in where, where
    assert (folder / "README.md").read_text().count("--no-index") >= 2


def _imported(notebook):
    """The top-level modules that a notebook's code cells import."""
    found = set()
    for cell in notebook.cells:
        if cell.cell_type == "code":
            for node in ast.walk(ast.parse(cell.source)):
                if isinstance(node, ast.Import):
                    found |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    found.add(node.module.split(".")[0])
    return found


def test_every_student_notebook_has_what_it_imports(installed):
    """Every page of the book is a student notebook, and the fresh environment can
    import every module any of them imports."""
    folder, bin_, env = installed
    notebooks = sorted((folder / "notebooks").glob("*.ipynb"))
    assert [path.name for path in notebooks] == [p.name for p in chapter_notebooks()]
    modules = sorted(
        set().union(*(_imported(nbformat.read(p, as_version=4)) for p in notebooks))
    )
    assert "attn_course" in modules and "torch" in modules
    subprocess.run(
        [str(bin_ / "python"), "-c", f"import {', '.join(modules)}"],
        cwd=folder,
        env=env,
        check=True,
    )


def test_a_student_notebook_runs_with_the_answers_pasted_in(installed):
    """Chapter 1's student copy, its answers pasted in, run in the fresh environment:
    every check prints its ✅. (Every chapter's exercises are answered wrong and right
    in their notebooks by make nbval, tests/exercise_rounds.py.)"""
    folder, bin_, env = installed
    path = folder / "notebooks" / "01_toy_attention.ipynb"
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if ANSWER_TAG in cell.metadata.get("tags", []):
            cell.source = RIGHT[path.name][cell.metadata["exercise"]]
    nbformat.write(notebook, path)
    checks = [
        c
        for c in _run(bin_, env, path).cells
        if CHECK_TAG in c.metadata.get("tags", [])
    ]
    assert len(checks) == len(RIGHT[path.name]) > 0
    for cell in checks:
        assert "✅" in _printed(cell), f"{path.name}: {cell.source}\n{cell.outputs}"


def _has(python, env, module):
    """Whether ``module`` can be imported by ``python``, run outside the repository
    (whose root would put ``attn_course`` on the path)."""
    found = subprocess.run(
        [
            str(python),
            "-c",
            f"import importlib.util as u; print(u.find_spec({module!r}))",
        ],
        env=env,
        cwd=python.parent,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return found.strip() != "None"


def test_a_portable_notebook_installs_the_package_itself(installed, tmp_path):
    folder, _, _ = installed
    wheels = folder / "wheels"
    (wheel,) = wheels.glob("attn_course-*.whl")
    env = _offline_env(tmp_path)
    env.pop("PYTHONPATH", None)
    # The cell asks pip for this page's version, attn-course==<version>: offline
    # (PIP_NO_INDEX) the workshop's wheels stand in for PyPI, the course's wheel
    # and its dependencies alike.
    env.pop("ATTN_COURSE_SOURCE", None)
    env.update(PIP_FIND_LINKS=str(wheels))
    assert wheel.name.startswith(f"attn_course-{attn_course.__version__}-")
    venv.create(tmp_path / "env", with_pip=True)
    python = tmp_path / "env" / "bin" / "python"
    # Nothing but a kernel, registered in this test's own Jupyter folders.
    kernel = ["-m", "ipykernel", "install", "--user", "--name", "portable-check"]
    for command in (["-m", "pip", "install", "-q", "ipykernel"], kernel):
        subprocess.run([str(python), *command], env=env, check=True, cwd=tmp_path)
    assert _has(python, env, "ipykernel")
    assert not _has(python, env, "attn_course") and not _has(python, env, "torch")

    chapter = CHAPTERS / "01_toy_attention.ipynb"
    path = tmp_path / chapter.name
    nbformat.write(portable_copy(chapter), path)
    kernel = "--ExecutePreprocessor.kernel_name=portable-check"
    done = _run(None, env, path, [sys.executable, "-m", "nbconvert", kernel])
    first = next(cell for cell in done.cells if cell.cell_type == "code")
    assert INSTALL_TAG in first.metadata["tags"]
    assert not [o for o in first.outputs if o.output_type == "error"]
    checks = [c for c in done.cells if CHECK_TAG in c.metadata.get("tags", [])]
    assert checks and all("not answered yet" in _printed(c) for c in checks)
    where = subprocess.run(
        [
            str(python),
            "-c",
            "import attn_course, ipywidgets; print(attn_course.__file__)",
        ],
        env=env,
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert str(tmp_path / "env") in where, where
