"""The built website hands out portable notebooks (tools/portable.py): downloads
install the package in their first cell; Colab opens the copy on its branch."""

from __future__ import annotations

import re

import nbformat
import pytest
import yaml

from tools import portable
from tools.toc import ROOT, chapter_notebooks

pytestmark = pytest.mark.site

HTML = ROOT / "_build" / "html"
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
URL = CONFIG["repository"]["url"]
BRANCH = CONFIG["launch_buttons"]["colab_branch"]
COLAB = CONFIG["launch_buttons"]["colab_url"]
LINK = re.compile(r'href="(https://colab\.research\.google\.com/[^"]*)"')


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_the_colab_button_opens_the_portable_copy(path):
    page = (HTML / "chapters" / path.name).with_suffix(".html").read_text()
    owner_repo = URL.removeprefix("https://github.com/")
    expected = f"{COLAB}/github/{owner_repo}/blob/{BRANCH}/chapters/{path.name}"
    # the launch button, and the marker above each explorer (tools/sphinx_explorers.py)
    links = LINK.findall(page)
    assert links and set(links) == {expected}
    anchor = re.search(rf'<a href="{re.escape(expected)}"[^>]*>(.*?)</a>', page, re.S)
    assert "Colab" in anchor.group(1), "the link is not labelled Colab"
    # The branch holds the files the workflow uploads: _sources/chapters/*.ipynb.
    copy = nbformat.read(HTML / "_sources" / "chapters" / path.name, as_version=4)
    first = next(cell for cell in copy.cells if cell.cell_type == "code")
    assert "install-attn-course" in first.metadata.get("tags", []), path.name
    assert f"attn-course @ git+{URL}@{CONFIG['repository']['branch']}" in first.source
    assert f'"attn-course=={portable.version()}"' in first.source
    assert "ATTN_COURSE_SOURCE" in first.source
