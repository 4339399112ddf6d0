"""Portable copies of the chapters: notebooks that run outside the repository.

A chapter in ``chapters/`` imports the course's package ``attn_course``, which a
clone installs (``make``) but Colab or a downloaded copy does not have. The portable
copy of a chapter (:func:`portable_copy`) is what the website hands out, through its
download button and its Colab button:

- the chapter with its outputs, its Markdown made plain (:func:`tools.exercises.
  plain_copy`), so that Colab and other viewers show exercises, notes and math;
- its solutions still collapsed, as in JupyterLab;
- no saved widget state and no widget views (:func:`without_widget_views`): an
  explorer's cell shows its still until the reader runs it, in Colab as anywhere;
- a first code cell (:func:`install_cell`) that installs ``attn_course`` with pip
  when Python cannot import it: the release of the page's own version from PyPI;
  where that fails, the same version's tag ``v<version>`` of the repository named
  once in ``_config.yml`` (``repository.url``), then its ``repository.branch``; or
  only the source named by the environment variable ``ATTN_COURSE_SOURCE`` (a
  wheel, a folder or any pip requirement). A chapter with explorers also gets
  ipywidgets where it is missing (the ``explorers`` extra of ``pyproject.toml``).
  Where everything is installed, the cell prints nothing.

The website's build writes these copies over ``_build/html/_sources/chapters/``
(``tools.sphinx_plain``); the publishing workflow pushes the same files to the
branch ``launch_buttons.colab_branch`` of ``_config.yml``, which the Colab button
opens. ``python -m tools.portable branch`` prints that branch's name, ``version`` the
version of the course and its package (which a page's install cell pins), and
``python -m tools.portable write OUT`` writes every portable copy into ``OUT``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import nbformat
import tomllib
import yaml

from tools.exercises import plain_copy
from tools.notebooks import WIDGET_VIEW
from tools.toc import ROOT, chapter_notebooks

CONFIG = ROOT / "_config.yml"
PYPROJECT = ROOT / "pyproject.toml"
SOURCE_VARIABLE = "ATTN_COURSE_SOURCE"
INSTALL_TAG = "install-attn-course"
# A chapter that uses the explorers names their module in its code.
_USES_EXPLORERS = re.compile(r"\bexplorer\b")


def _config(path: Path = CONFIG) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def repository(path: Path = CONFIG) -> tuple[str, str]:
    """``(url, branch)`` of the course's repository, as ``_config.yml`` names it."""
    config = _config(path).get("repository") or {}
    url, branch = config.get("url"), config.get("branch")
    if not url or not branch:
        raise ValueError(
            f"{path.name} names no repository: set `url` and `branch` under "
            "`repository:` (README.md, 'Publish the website')"
        )
    return url.rstrip("/"), branch


def colab_branch(path: Path = CONFIG) -> str:
    """The branch that holds the portable copies, which the Colab button opens
    (``launch_buttons.colab_branch`` of ``_config.yml``)."""
    branch = (_config(path).get("launch_buttons") or {}).get("colab_branch")
    if not branch:
        raise ValueError(
            f"{path.name} sets no `colab_branch` under `launch_buttons:`: name the "
            "branch that the publishing workflow pushes the portable notebooks to"
        )
    return branch


def colab_link(page: str, path: Path = CONFIG) -> str:
    """The Colab address of the portable copy of ``page`` (``chapters/01_x``, no
    suffix), on the branch :func:`colab_branch` of the configured repository."""
    url, _ = repository(path)
    launch = _config(path).get("launch_buttons") or {}
    colab = launch.get("colab_url", "https://colab.research.google.com").rstrip("/")
    match = re.fullmatch(r"https://github\.com/([\w.-]+)/([\w.-]+?)(?:\.git)?", url)
    if not match:
        raise ValueError(
            f"Colab opens notebooks from GitHub only, and repository.url of "
            f"{path.name} is {url!r}: use https://github.com/OWNER/REPOSITORY"
        )
    owner, name = match.groups()
    return f"{colab}/github/{owner}/{name}/blob/{colab_branch(path)}/{page}.ipynb"


def version(path: Path = PYPROJECT) -> str:
    """The version of the course and of its package, from ``pyproject.toml``."""
    return tomllib.loads(path.read_text(encoding="utf-8"))["project"]["version"]


def package_requirements(path: Path = CONFIG) -> list[str]:
    """The pip requirements that install ``attn_course``, tried in order: this
    version from PyPI, then its tag and the configured branch of the repository,
    e.g. ``attn-course @ git+https://github.com/o/r@v0.1.0``."""
    url, branch = repository(path)
    release = version()
    return [
        f"attn-course=={release}",
        f"attn-course @ git+{url}@v{release}",
        f"attn-course @ git+{url}@{branch}",
    ]


def explorer_requirements(path: Path = PYPROJECT) -> list[str]:
    """The packages of the ``explorers`` extra of ``pyproject.toml``."""
    project = tomllib.loads(path.read_text(encoding="utf-8"))["project"]
    extra = project.get("optional-dependencies", {}).get("explorers")
    if not extra:
        raise ValueError(
            f"{path.name} has no `explorers` extra under "
            "[project.optional-dependencies]"
        )
    return list(extra)


def install_cell_source(requirements: list[str], widgets: list[str] | None = None):
    """The source of the first code cell of a portable copy: when ``attn_course``
    cannot be imported it installs the first of ``requirements`` that pip can install
    (only ``$ATTN_COURSE_SOURCE`` where that is set), and the packages ``widgets``
    when ipywidgets cannot be imported."""
    lines = [
        "# Runs this notebook outside the course's repository, e.g. in Colab: when",
        "# Python cannot import the course's package attn_course, pip installs the",
        "# version this page was made with (from PyPI, else from the course's",
        "# repository), or the source that the environment variable",
        f"# {SOURCE_VARIABLE} names (a wheel, a folder or a pip requirement).",
    ]
    if widgets:
        lines.append(
            "# The explorers also need ipywidgets, installed where it is missing."
        )
    lines += [
        "# Where everything is installed already, this cell does nothing.",
        "import importlib.util",
        "import os",
        "import subprocess",
        "import sys",
        "",
        '_pip = [sys.executable, "-m", "pip", "install", "-q"]',
        "_sources = [",
        *(f"    {json.dumps(r)}," for r in requirements),
        "]",
        f'if os.environ.get("{SOURCE_VARIABLE}"):',
        f'    _sources = [os.environ["{SOURCE_VARIABLE}"]]',
        'if importlib.util.find_spec("attn_course") is None:',
        "    for _source in _sources:  # the first that pip can install",
        "        if subprocess.run([*_pip, _source], check=False).returncode == 0:",
        "            break",
        "    else:",
        "        raise RuntimeError(",
        '            f"pip installed attn_course from none of {_sources}"',
        "        )",
    ]
    if widgets:
        lines += [
            'if importlib.util.find_spec("ipywidgets") is None:',
            f"    subprocess.run([*_pip, *{json.dumps(widgets)}], check=True)",
        ]
    lines.append("importlib.invalidate_caches()")
    return "\n".join(lines)


def install_cell(path: Path, requirement: str | None = None):
    """The install cell (:func:`install_cell_source`) for the chapter at ``path``:
    ipywidgets included when the chapter uses the explorers."""
    notebook = nbformat.read(path, as_version=4)
    code = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
    widgets = explorer_requirements() if _USES_EXPLORERS.search(code) else None
    requirements = [requirement] if requirement else package_requirements()
    source = install_cell_source(requirements, widgets)
    return nbformat.v4.new_code_cell(source, metadata={"tags": [INSTALL_TAG]})


def without_widget_views(notebook):
    """Drop the saved widget state and every output's widget view from
    ``notebook``, in place, and return it.

    Saved state lets JupyterLab redraw a widget from the stored notebook; another
    Jupyter (Colab, VS Code, a viewer) shows an error or nothing instead. An
    explorer's output also holds a still of it (a PNG), which every viewer shows
    once the widget view is gone; running the cell brings the live widget back.
    """
    notebook.metadata.pop("widgets", None)  # holds only WIDGET_STATE
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            output.get("data", {}).pop(WIDGET_VIEW, None)
    return notebook


def portable_copy(path: Path, requirement: str | None = None):
    """The portable copy of the chapter at ``path`` (see the module's docstring):
    plain Markdown, outputs kept, solutions collapsed, and the install cell before
    the first code cell when the chapter imports ``attn_course``. ``requirement``
    replaces the configured repository as the default source."""
    notebook = without_widget_views(plain_copy(path, collapsed=True))
    if not any(
        "attn_course" in c.source for c in notebook.cells if c.cell_type == "code"
    ):
        return notebook
    first = next(
        (i for i, c in enumerate(notebook.cells) if c.cell_type == "code"),
        len(notebook.cells),
    )
    cell = install_cell(path, requirement)
    if notebook.nbformat_minor >= 5:
        cell["id"] = INSTALL_TAG  # unique: no stored cell id has this form
    else:
        cell.pop("id", None)  # cell ids came with nbformat 4.5
    notebook.cells.insert(first, cell)
    return notebook


def write_portable(out: Path, paths: list[Path] | None = None) -> list[Path]:
    """Write the portable copy of every chapter (or of ``paths``) into
    ``out/chapters/``; returns the written paths."""
    written = []
    for path in paths if paths is not None else chapter_notebooks():
        target = out / "chapters" / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(portable_copy(path), target)
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("branch", help="print the branch the Colab button opens")
    commands.add_parser("version", help="print the course's and package's version")
    write = commands.add_parser("write", help="write every portable copy into OUT")
    write.add_argument("out", type=Path, help="the folder to write")
    args = parser.parse_args(argv)
    if args.command == "branch":
        print(colab_branch())
    elif args.command == "version":
        print(version())
    else:
        for target in write_portable(args.out):
            print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
