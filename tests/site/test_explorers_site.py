"""The explorers on the built website (``_build/html``, no browser): a Colab marker,
the still as a numbered figure, and no saved widget state."""

from __future__ import annotations

import re

import nbformat
import pytest

from tools.portable import colab_link
from tools.sphinx_explorers import EXPLORER_TAG, MARKER_CLASS
from tools.toc import ROOT, chapter_notebooks

pytestmark = pytest.mark.site

HTML = ROOT / "_build" / "html"
CELL = re.compile(r'<div class="cell ([^"]*)docutils container">')


def _explorer_cells(path):
    notebook = nbformat.read(path, as_version=4)
    return [c for c in notebook.cells if EXPLORER_TAG in c.metadata.get("tags", [])]


def _cells_of(page: str) -> list[str]:
    """The HTML of each code cell of a page, from its opening tag to the next."""
    starts = [match.start() for match in CELL.finditer(page)] + [len(page)]
    return [page[a:b] for a, b in zip(starts, starts[1:], strict=False)]


def test_chapters_1_and_3_have_explorers():
    names = [p.name for p in chapter_notebooks() if _explorer_cells(p)]
    assert names == ["01_toy_attention.ipynb", "03_causal_mask.ipynb"]


@pytest.mark.parametrize(
    "path", [p for p in chapter_notebooks() if _explorer_cells(p)], ids=lambda p: p.name
)
def test_each_explorer_is_marked_and_shown_as_its_still(path):
    page = (HTML / "chapters" / path.name).with_suffix(".html").read_text()
    link = colab_link(f"chapters/{path.stem}")
    explorers = _explorer_cells(path)
    marked = [cell for cell in _cells_of(page) if f"tag_{EXPLORER_TAG}" in cell]
    assert len(marked) == len(explorers) == page.count(f'class="{MARKER_CLASS} ')
    for html, cell in zip(marked, explorers, strict=True):
        marker = html[html.index(MARKER_CLASS) : html.index("cell_input")]
        assert "Interactive in JupyterLab or Colab." in marker
        assert f'href="{link}"' in marker
        figure = cell.metadata["mystnb"]["figure"]["name"]
        assert f'<figure class="align-default" id="{figure}">' in html
        assert re.search(
            r'<img alt="[^"]{40,}" src="\.\./_images/[0-9a-f]+\.png"', html
        )
        assert '<span class="caption-number">Fig. ' in html


def test_no_page_carries_widget_state_or_widget_views():
    pages = sorted(HTML.rglob("*.html"))
    assert len(pages) > 10
    carrying = [
        p.relative_to(HTML).as_posix()
        for p in pages
        if "application/vnd.jupyter.widget" in p.read_text(encoding="utf-8")
    ]
    assert carrying == []
