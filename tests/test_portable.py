"""The portable copies of the chapters (tools.portable) that the website's download
and Colab buttons hand out; test_workshop.py runs one without the package."""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys

import nbformat
import pytest
import yaml

import attn_course
from tools import portable
from tools.exercises import HIDDEN, exercises, plain_copy
from tools.notebooks import WIDGET_STATE
from tools.sphinx_plain import point_colab_at_portable_copies
from tools.toc import CHAPTERS, ROOT

CHAPTER = CHAPTERS / "01_toy_attention.ipynb"
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
URL = CONFIG["repository"]["url"]
BRANCH = CONFIG["launch_buttons"]["colab_branch"]
FIND_SPEC = importlib.util.find_spec


@pytest.fixture(scope="module")
def copy():
    return portable.portable_copy(CHAPTER)


def _install_cells(notebook):
    return [
        cell
        for cell in notebook.cells
        if portable.INSTALL_TAG in cell.metadata.get("tags", [])
    ]


def test_the_first_code_cell_installs_the_package_from_the_configured_repository(
    copy,
):
    nbformat.validate(copy)
    first = next(cell for cell in copy.cells if cell.cell_type == "code")
    assert _install_cells(copy) == [first]
    release = portable.version()
    for requirement in (
        f"attn-course=={release}",
        f"attn-course @ git+{URL}@v{release}",
        f"attn-course @ git+{URL}@main",
    ):
        assert f'"{requirement}"' in first.source
    assert '"ATTN_COURSE_SOURCE"' in first.source
    assert not first.outputs
    ast.parse(first.source)
    comments = [line for line in first.source.splitlines() if line.startswith("#")]
    assert 3 <= len(comments) <= 9 and all(len(line) <= 88 for line in comments)


def test_the_copy_is_the_plain_chapter_with_its_solutions_collapsed(copy):
    plain = portable.without_widget_views(plain_copy(CHAPTER))
    rest = [cell for cell in copy.cells if cell not in _install_cells(copy)]
    assert [c.source for c in rest] == [c.source for c in plain.cells]
    assert [c.get("outputs") for c in rest] == [c.get("outputs") for c in plain.cells]
    markdown = "\n".join(c.source for c in rest if c.cell_type == "markdown")
    assert "```{" not in markdown and "> **Exercise 1.1:" in markdown
    source = nbformat.read(CHAPTER, as_version=4)
    solutions = {
        source.cells[j].id for ex in exercises(source) for j in ex.solution[1:]
    }
    kept = {c.id for c in rest}
    hidden = {c.id for c in rest if c.metadata.get("jupyter") == HIDDEN}
    assert solutions & kept and hidden == solutions & kept
    assert not any(c.metadata.get("jupyter") for c in plain.cells)


def test_the_copy_shows_each_explorer_as_its_still_with_no_widget_state(copy):
    source = nbformat.read(CHAPTER, as_version=4)
    assert source.metadata["widgets"][WIDGET_STATE]["state"]
    explorers = [
        cell for cell in source.cells if "explorer" in cell.metadata.get("tags", [])
    ]
    assert explorers, "Chapter 1 has an explorer cell tagged explorer"
    for cell in explorers:
        (stored,) = cell.outputs
        assert portable.WIDGET_VIEW in stored.data and "image/png" in stored.data
    assert "widgets" not in copy.metadata
    outputs = [o for c in copy.cells if c.cell_type == "code" for o in c.outputs]
    assert outputs and not any(
        portable.WIDGET_VIEW in o.get("data", {}) for o in outputs
    )
    by_id = {cell.id: cell for cell in copy.cells}
    for cell in explorers:
        (kept,) = by_id[cell.id].outputs
        assert kept.data.keys() == {"image/png", "text/plain"}
        assert kept.data["image/png"] == cell.outputs[0].data["image/png"]
        assert kept.metadata == cell.outputs[0].metadata
    nbformat.validate(copy)


def _run_install_cell(source, monkeypatch, *, missing, failing=()):
    """Run an install cell with ``missing`` modules absent and pip failing on the
    requirements ``failing``; the pip commands."""
    calls = []

    def find_spec(name, *args, **kwargs):
        return None if name in missing else FIND_SPEC(name, *args, **kwargs)

    def run(command, check):
        calls.append(command)
        return subprocess.CompletedProcess(command, int(command[-1] in failing))

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(subprocess, "run", run)
    exec(compile(source, "install-cell", "exec"), {})
    return calls


def test_the_cell_installs_what_is_missing_and_nothing_else(copy, monkeypatch):
    source = _install_cells(copy)[0].source
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    pypi, tag, branch = portable.package_requirements()
    monkeypatch.delenv("ATTN_COURSE_SOURCE", raising=False)
    assert _run_install_cell(source, monkeypatch, missing=()) == []
    assert _run_install_cell(source, monkeypatch, missing={"attn_course"}) == [
        pip + [pypi]
    ]
    # Not on PyPI (yet): the version's tag; no tag either: the branch.
    assert _run_install_cell(
        source, monkeypatch, missing={"attn_course"}, failing={pypi, tag}
    ) == [pip + [pypi], pip + [tag], pip + [branch]]
    with pytest.raises(RuntimeError, match="installed attn_course from none"):
        _run_install_cell(
            source, monkeypatch, missing={"attn_course"}, failing={pypi, tag, branch}
        )
    assert _run_install_cell(source, monkeypatch, missing={"ipywidgets"}) == [
        pip + portable.explorer_requirements()
    ]
    monkeypatch.setenv("ATTN_COURSE_SOURCE", "/wheels/attn_course-0.1.0.whl")
    assert _run_install_cell(
        source, monkeypatch, missing={"attn_course", "ipywidgets"}
    ) == [pip + ["/wheels/attn_course-0.1.0.whl"], pip + ["ipywidgets>=7.6"]]


def test_the_page_pins_the_version_the_package_reports():
    assert portable.version() == attn_course.__version__
    assert (
        portable.package_requirements()[0] == f"attn-course=={attn_course.__version__}"
    )


def test_a_chapter_without_explorers_does_not_install_ipywidgets():
    chapter = CHAPTERS / "02_trainable_weights.ipynb"
    (cell,) = _install_cells(portable.portable_copy(chapter))
    assert "ipywidgets" not in cell.source


def test_the_cell_is_silent_where_the_package_is_installed(copy):
    """With everything installed: no output, and pip never called."""
    env = dict(os.environ, ATTN_COURSE_SOURCE=str(ROOT / "no-such-wheel.whl"))
    result = subprocess.run(
        [sys.executable, "-c", _install_cells(copy)[0].source],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT.parent,
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_colab_links_open_the_portable_copy_on_its_branch():
    owner, name = URL.removeprefix("https://github.com/").split("/")
    assert portable.colab_link("chapters/01_toy_attention") == (
        f"https://colab.research.google.com/github/{owner}/{name}/blob/{BRANCH}/"
        "chapters/01_toy_attention.ipynb"
    )
    context = {
        "header_buttons": [
            {"label": "download-buttons", "buttons": [{"text": ".ipynb", "url": "x"}]},
            {
                "label": "launch-buttons",
                "buttons": [
                    {"text": "Colab", "url": f"https://colab/blob/main/{CHAPTER}"}
                ],
            },
        ]
    }

    class App:
        srcdir = str(ROOT)

    point_colab_at_portable_copies(App, "chapters/01_toy_attention", "", context, None)
    download, launch = context["header_buttons"]
    assert download["buttons"][0]["url"] == "x"
    assert launch["buttons"][0]["url"] == portable.colab_link(
        "chapters/01_toy_attention"
    )


def test_a_bad_configuration_is_named(tmp_path, raises_teaching):
    config = tmp_path / "_config.yml"
    config.write_text("repository:\n  url: https://gitlab.com/a/b\n  branch: main\n")
    raises_teaching(lambda: portable.colab_branch(config), ValueError, ["colab_branch"])
    config.write_text(
        config.read_text() + "launch_buttons:\n  colab_branch: notebooks\n"
    )
    raises_teaching(
        lambda: portable.colab_link("chapters/x", config),
        ValueError,
        ["GitHub only", "gitlab.com/a/b"],
    )
    config.write_text("title: x\n")
    raises_teaching(lambda: portable.repository(config), ValueError, ["`url`"])


def test_the_command_line_names_the_branch_and_writes_copies(tmp_path, capsys):
    assert portable.main(["branch"]) == 0
    assert capsys.readouterr().out == f"{BRANCH}\n"
    (written,) = portable.write_portable(tmp_path, [CHAPTER])
    assert written == tmp_path / "chapters" / CHAPTER.name
    assert _install_cells(nbformat.read(written, as_version=4))
