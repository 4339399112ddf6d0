"""The course's sources: references.bib, the citations in the chapters, and their
plain-Markdown form in the downloaded and workshop notebooks."""

from __future__ import annotations

import re

import nbformat
import pytest

from tools.exercises import REFERENCES, _bibliography, citation, plain_markdown
from tools.toc import ROOT, chapter_pages

CITE = re.compile(r"\{cite(?::[a-z]+)?\}`([^`]*)`")
# Sources the chapters name, which the bibliography must keep.
REQUIRED = set(
    "vaswani2017attention bahdanau2015neural luong2015effective shaw2018self "
    "su2021roformer press2022train ba2016layer he2016deep hendrycks2016gaussian "
    "radford2019language devlin2019bert raffel2020exploring srivastava2014dropout "
    "xiong2020layer dao2022flashattention shazeer2019fast ainslie2023gqa "
    "kingma2015adam loshchilov2019decoupled raschka2024build pytorch_sdpa "
    "pytorch_mha".split()
)


def _cited_keys() -> dict[str, set[str]]:
    """``{page name: keys it cites}`` over every page of ``chapters/``."""
    cited = {}
    for path in chapter_pages():
        if path.suffix == ".ipynb":
            notebook = nbformat.read(path, as_version=4)
            text = "\n".join(
                cell.source for cell in notebook.cells if cell.cell_type == "markdown"
            )
        else:
            text = path.read_text(encoding="utf-8")
        keys = {
            key.strip()
            for group in CITE.findall(text)
            for key in group.split(",")
            if key.strip()
        }
        if keys:
            cited[path.name] = keys
    return cited


def test_every_cited_key_is_in_references_bib():
    cited = _cited_keys()
    # The core chapters name papers and books; each cites at least one.
    assert len(cited) >= 7, f"pages with citations: {sorted(cited)}"
    entries = _bibliography(REFERENCES)
    unknown = {page: sorted(keys - set(entries)) for page, keys in cited.items()}
    unknown = {page: keys for page, keys in unknown.items() if keys}
    assert not unknown, f"keys cited but not in references.bib: {unknown}"


def test_references_bib_holds_the_course_sources_each_with_authors_title_and_year():
    entries = _bibliography(REFERENCES)
    missing = REQUIRED - set(entries)
    assert not missing, f"sources missing from references.bib: {sorted(missing)}"
    for key, entry in entries.items():
        assert entry.persons.get("author"), f"{key}: no author"
        assert entry.fields.get("title"), f"{key}: no title"
        assert re.fullmatch(r"(19|20)\d\d", entry.fields.get("year", "")), key


def test_plain_markdown_writes_citations_as_authors_and_years():
    assert plain_markdown("Adam {cite:p}`kingma2015adam` trains it.") == (
        "Adam (Kingma and Ba, 2015) trains it."
    )
    assert plain_markdown("{cite}`raschka2024build`") == "(Raschka, 2024)"
    assert plain_markdown("{cite:t}`vaswani2017attention` add sines.") == (
        "Vaswani et al. (2017) add sines."
    )
    assert plain_markdown("{cite:p}`bahdanau2015neural, luong2015effective`") == (
        "(Bahdanau et al., 2015; Luong et al., 2015)"
    )
    assert plain_markdown("{cite:p}`pytorch_sdpa`") == "(PyTorch Contributors, 2026)"


def test_a_citation_of_an_unknown_key_names_the_key():
    with pytest.raises(ValueError, match="no entry 'vaswani2099' in references.bib"):
        plain_markdown("see {cite:p}`vaswani2099`")
    with pytest.raises(ValueError, match="no entry 'nobody'"):
        citation("nobody")


def test_downloaded_notebooks_have_no_citation_roles_left():
    """The plain copy of a chapter that cites the most keeps none of the roles."""
    cited = _cited_keys()
    name = max(cited, key=lambda page: len(cited[page]))
    notebook = nbformat.read(ROOT / "chapters" / name, as_version=4)
    plain = [
        plain_markdown(cell.source)
        for cell in notebook.cells
        if cell.cell_type == "markdown" and "{cite" in cell.source
    ]
    assert plain, name
    assert not any("{cite" in text for text in plain), name
    assert any(re.search(r"et al\., 20\d\d|et al\. \(20\d\d\)", t) for t in plain)
