"""Write the folder (and zip) an instructor copies to a room without Wi-Fi.

``python -m tools.workshop OUT`` (``make workshop``) writes ``OUT/``:

- ``notebooks/``: the student copy of every chapter (no solutions, no outputs, plain
  Markdown, each exercise's answer cell holding ``...``);
- ``solutions.ipynb``: every exercise with its solution and explanation, to hand
  out afterwards;
- ``wheels/``: the course package as a wheel, and with ``--with-wheels`` every
  pinned package it needs (``pip download``, so run it where there is network);
- ``requirements.txt``: the pinned packages a learner needs (the course's pins of
  them);
- ``README.md``: how to install from the folder alone and how the exercises work;

and ``OUT.zip`` with the same content.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import nbformat

from tools.exercises import solutions_notebook, student_copy
from tools.toc import ROOT, chapter_notebooks

# What a learner's machine needs from requirements.txt: the package's own needs, the
# kernel and JupyterLab with the widgets' extension. (The book, tests and lint are
# for maintainers.)
LEARNER_PACKAGES = (
    "torch",
    "numpy",
    "matplotlib",
    "ipywidgets",
    "widgetsnbextension",
    "jupyterlab_widgets",
    "ipykernel",
    "jupyterlab",
)

README = """\
# Attention, Executed: workshop folder

Everything here works without a network once the folder is on the machine.

- `notebooks/`: one notebook per chapter. Each exercise has an **answer cell** that
  holds `...`: replace it with your answer and run it, then run the **check** cell
  under it. The check says "not answered yet", prints ✅ when the answer is right, or
  stops with a message that says what is wrong and how to fix it.
- `solutions.ipynb`: every exercise with its solution and the explanation. Hand it
  out after the session.
- `wheels/`: the course package `attn_course` as a wheel{wheel_note}.
- `requirements.txt`: the exact versions the notebooks were tested with.

## Install (Python 3.11, no network needed)

Linux and macOS:

```bash
python3.11 -m venv attention-env
attention-env/bin/python -m pip install --no-index --find-links wheels \\
    -r requirements.txt attn-course
attention-env/bin/jupyter lab notebooks
```

Windows (PowerShell):

```powershell
py -3.11 -m venv attention-env
attention-env\\Scripts\\python -m pip install --no-index --find-links wheels `
    -r requirements.txt attn-course
attention-env\\Scripts\\jupyter lab notebooks
```

`--no-index` makes pip install from `wheels/` only. The wheels in `wheels/` are for
the system the folder was made on ({platform}). For learners on another system, run
on a machine with network, for each of their platforms:

```bash
python3.11 -m pip download -r requirements.txt -d wheels
```

on a machine of that kind (or with pip's `--platform` and `--only-binary=:all:`
options), and copy the files into `wheels/`.

## Chapters

{chapters}
"""


def _title(path):
    first = nbformat.read(path, as_version=4).cells[0].source.lstrip()
    return first.splitlines()[0].lstrip("# ").strip()


def learner_requirements(path: Path = ROOT / "requirements.txt") -> str:
    """The lines of ``requirements.txt`` that pin :data:`LEARNER_PACKAGES`."""
    pins = {}
    for line in path.read_text().splitlines():
        name, sep, _version = line.partition("==")
        if sep and name.strip() in LEARNER_PACKAGES:
            pins[name.strip()] = line.strip()
    missing = [name for name in LEARNER_PACKAGES if name not in pins]
    if missing:
        raise ValueError(f"requirements.txt pins none of {missing}")
    return "\n".join(pins[name] for name in LEARNER_PACKAGES) + "\n"


def build_wheel(out: Path) -> Path:
    """The course package as a wheel in ``out``; returns its path."""
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "-q",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
    )
    shutil.rmtree(ROOT / "build", ignore_errors=True)  # setuptools' leftovers
    (wheel,) = sorted(out.glob("attn_course-*.whl"))
    return wheel


def download_wheels(requirements: Path, out: Path) -> None:
    """Every pinned package and its dependencies as wheels in ``out`` (network)."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--disable-pip-version-check",
            "-q",
            "--only-binary=:all:",
            "-r",
            str(requirements),
            "-d",
            str(out),
        ],
        check=True,
    )


def write_workshop(out: Path, *, with_wheels: bool = False) -> Path:
    """Write the workshop folder ``out`` and ``out.zip``; returns the zip's path."""
    if out.exists():
        shutil.rmtree(out)
    (out / "notebooks").mkdir(parents=True)
    paths = chapter_notebooks()
    for path in paths:
        nbformat.write(student_copy(path), out / "notebooks" / path.name)
    nbformat.write(
        solutions_notebook(paths, "Attention, Executed: solutions to the exercises"),
        out / "solutions.ipynb",
    )
    requirements = out / "requirements.txt"
    requirements.write_text(learner_requirements())
    build_wheel(out / "wheels")
    if with_wheels:
        download_wheels(requirements, out / "wheels")
        note = " and every package in `requirements.txt` with its dependencies"
    else:
        note = (
            "; the other packages are not included yet: run `make workshop "
            "WHEELS=1` (or the `pip download` command below) where there is network"
        )
    chapters = "\n".join(f"- `{p.name}`: {_title(p)}" for p in paths)
    (out / "README.md").write_text(
        README.format(
            wheel_note=note,
            platform=f"{sysconfig.get_platform()}, Python {sys.version_info[0]}."
            f"{sys.version_info[1]}",
            chapters=chapters,
        )
    )
    archive = shutil.make_archive(
        str(out), "zip", root_dir=out.parent, base_dir=out.name
    )
    return Path(archive)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the folder to write")
    parser.add_argument(
        "--with-wheels",
        action="store_true",
        help="also download every pinned package as a wheel (needs network)",
    )
    args = parser.parse_args(argv)
    archive = write_workshop(args.out.resolve(), with_wheels=args.with_wheels)
    print(f"wrote {args.out}/ and {archive}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
