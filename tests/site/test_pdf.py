"""The book as a PDF (``make pdf``, :mod:`tools.pdf`), read back with pypdf: every
page of ``_toc.yml`` in order, no TeX left untypeset, every figure of the website
embedded, every solution after its exercise, links that work on paper.

The PDF is built first where it is missing or older than what it is made from;
without Chromium these checks skip, or fail where ``REQUIRE_BROWSER=1``, as the
browser check does."""

from __future__ import annotations

import collections
import filecmp
import json
import re
import subprocess
import sys
import unicodedata
from functools import cache
from pathlib import Path

import pytest

from tests.site.conftest import _skip_or_fail
from tools import pdf as book_pdf
from tools.toc import ROOT, resolve_entry, toc_entries

pytestmark = pytest.mark.site

HTML = ROOT / "_build" / "html"
# What the PDF is made from: a change to any of them builds it again.
SOURCES = (
    "chapters/*",
    "_toc.yml",
    "_config.yml",
    "references.bib",
    "_static/*",
    "_templates/*",
    "tools/pdf.py",
    "tools/sphinx_*.py",
)
# TeX that MathJax would have typeset: none of it may reach the printed text.
RAW_TEX = re.compile(
    r"\$\$|\\\(|\\\)|\\\[|\\\]|\\(?:begin|end|frac|sqrt|sum|mathrm|mathbf|text"
    r"|left|right|cdot|operatorname|top|exp|log|max|softmax)(?![a-z])"
)
# A page of this book holds about 2,500 characters of text; far fewer per page means
# blank or half-empty pages, far more means text shrunk out of reading size.
CHARACTERS_PER_PAGE = (1_000, 5_000)
# A4 in points, and how far Chromium's page may differ from it.
A4_POINTS = (595.3, 841.9)
A4_TOLERANCE = 1.5
COLAB_NOTEBOOK = re.compile(
    r"colab\.research\.google\.com/github/.*?/(chapters/[^/]+)$"
)


@cache
def _pdf_path() -> Path:
    if book_pdf.find_chromium() is None:
        _skip_or_fail(
            "no Chromium to print the PDF with (install it with `apt-get install "
            "chromium`, or set CHROMIUM=/path/to/chromium)"
        )
    newest = max(
        path.stat().st_mtime for pattern in SOURCES for path in ROOT.glob(pattern)
    )
    pdf, beside_the_website = book_pdf.PDF, HTML / book_pdf.PDF.name
    if (
        not pdf.exists()
        or pdf.stat().st_mtime < newest
        or not beside_the_website.exists()
    ):
        subprocess.run([sys.executable, "-m", "tools.pdf"], cwd=ROOT, check=True)
    return book_pdf.PDF


@pytest.fixture(scope="module")
def reader():
    from pypdf import PdfReader

    return PdfReader(_pdf_path())


def _unicode_map(font) -> dict[str, str]:
    """A font's glyph codes (hex) to text, from its ToUnicode CMap."""
    if "/ToUnicode" not in font:
        return {}
    cmap = font["/ToUnicode"].get_object().get_data().decode("latin-1")
    table = {}

    def text(hex_codes: str) -> str:
        return bytes.fromhex(hex_codes).decode("utf-16-be", "replace")

    for block in re.findall(r"beginbfchar(.*?)endbfchar", cmap, re.S):
        for code, value in re.findall(r"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>", block):
            table[code.upper()] = text(value)
    for block in re.findall(r"beginbfrange(.*?)endbfrange", cmap, re.S):
        pattern = r"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*(<[0-9A-Fa-f]+>|\[[^\]]*\])"
        for start, end, value in re.findall(pattern, block):
            width = len(start)
            first, last = int(start, 16), int(end, 16)
            values = re.findall(r"<([0-9A-Fa-f]+)>", value)
            for offset, code in enumerate(range(first, last + 1)):
                key = f"{code:0{width}X}"
                if value.startswith("["):
                    table[key] = text(values[offset])
                else:
                    base = int(values[0], 16) + offset
                    table[key] = text(f"{base:0{len(values[0])}X}")
    return table


def _page_text(page, maps: dict) -> str:
    """The text of a page as Chromium writes it: runs of two-byte glyph codes
    (``<...> Tj``) in fonts with a ToUnicode map. pypdf's ``extract_text`` reads the
    same in minutes rather than seconds, on this book."""
    fonts = page["/Resources"].get("/Font", {})
    font_maps = {}
    for name, ref in fonts.items():
        key = getattr(ref, "idnum", name)
        if key not in maps:
            maps[key] = _unicode_map(ref.get_object())
        font_maps[name.lstrip("/")] = maps[key]
    data = page.get_contents().get_data().decode("latin-1")
    runs, table = [], {}
    for font, glyphs in re.findall(r"/(\S+) [-\d.]+ Tf|<([0-9A-Fa-f]*)> ?Tj", data):
        if font:
            table = font_maps.get(font, {})
        else:
            codes = [glyphs[i : i + 4].upper() for i in range(0, len(glyphs), 4)]
            runs.append("".join(table.get(code, "\ufffd") for code in codes))
    return "\n".join(runs)


@pytest.fixture(scope="module")
def pages_text(reader) -> list[str]:
    maps: dict = {}
    return [_page_text(page, maps) for page in reader.pages]


def _squeezed(text: str) -> str:
    """``text`` without white space, its ligatures (ﬁ, ﬃ) spelt out."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))


def _page_title(entry: str) -> str:
    """The first heading of a page's source, its text only."""
    path = next(p for p in resolve_entry(entry) if p.exists())
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        source = "\n".join(
            "".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown"
        )
    else:
        source = path.read_text(encoding="utf-8")
    heading = re.search(r"^# (.+)$", source, re.M).group(1)
    return re.sub(r"[`*_]", "", heading).strip()


def _article(entry: str) -> str:
    page = (HTML / entry).with_suffix(".html").read_text(encoding="utf-8")
    return re.search(r'<article class="bd-article".*?</article>', page, re.S).group(0)


def test_every_page_is_there_in_the_order_of_the_toc(pages_text):
    book = _squeezed("\n".join(pages_text))
    where, after = {}, 0
    for entry in toc_entries():
        title = _squeezed(_page_title(entry))
        found = book.find(title, after)
        assert found >= 0, (
            f"{entry}: its title {title!r} is not in the PDF after the page before it"
        )
        where[entry], after = found, found + len(title)
    assert list(where) == toc_entries()


def test_no_tex_is_left_untypeset(pages_text):
    raw = [
        (number, text[max(match.start() - 40, 0) : match.end() + 40])
        for number, text in enumerate(pages_text, 1)
        for match in RAW_TEX.finditer(text)
    ]
    assert not raw, f"TeX left as text (page, where): {raw[:10]}"


def _image_sizes(reader) -> collections.Counter:
    """The pixel sizes of the images the PDF embeds, each image once."""
    sizes = {}

    def walk(resources):
        objects = resources.get("/XObject") if resources else None
        for ref in (objects.get_object() if objects else {}).values():
            item = ref.get_object()
            if item["/Subtype"] == "/Image":
                sizes[ref.idnum] = (int(item["/Width"]), int(item["/Height"]))
            elif item["/Subtype"] == "/Form":
                walk(item.get("/Resources"))

    for page in reader.pages:
        walk(page.get("/Resources"))
    return collections.Counter(sizes.values())


def test_every_figure_of_the_website_is_embedded(reader):
    from PIL import Image

    figures = collections.Counter()
    files = set()
    for entry in toc_entries():
        page = (HTML / entry).with_suffix(".html")
        for source in re.findall(r'<img [^>]*src="([^"]+)"', _article(entry)):
            files.add((page.parent / source).resolve())
    for path in files:
        with Image.open(path) as image:
            figures[image.size] += 1
    assert figures, "the built pages have no figures: is _build/html complete?"
    missing = figures - _image_sizes(reader)
    assert not missing, (
        f"figures of the website missing from the PDF (by size): {missing}"
    )


def test_the_page_count_fits_the_text(reader, pages_text):
    count = len(reader.pages)
    per_page = sum(len(text) for text in pages_text) / count
    low, high = CHARACTERS_PER_PAGE
    assert low <= per_page <= high, (count, per_page)
    assert len(toc_entries()) < count
    size = [float(side) for side in reader.pages[0].mediabox[2:]]
    off = [abs(side - a4) for side, a4 in zip(size, A4_POINTS, strict=True)]
    assert max(off) <= A4_TOLERANCE, f"pages of {size} points, not A4"


def test_every_solution_follows_its_exercise(pages_text):
    book = _squeezed("\n".join(pages_text))
    solutions = [
        title
        for entry in toc_entries()
        for title in re.findall(
            r"Solution to[^<]*<a[^>]*>[^<]*?Exercise (\d+\.\d+)", _article(entry)
        )
    ]
    assert solutions, "the built pages have no solutions: is _build/html complete?"
    for number in solutions:
        exercise = book.find(_squeezed(f"Exercise {number} ("))
        solution = book.find(_squeezed(f"Solution to Exercise {number} ("))
        assert 0 <= exercise < solution, (
            f"Exercise {number}: {exercise}, solution {solution}"
        )
    assert book.count("SolutiontoExercise") == len(solutions)


def test_links_lead_somewhere_on_paper(reader):
    destinations = reader.named_destinations
    inside, outside = [], []
    for page in reader.pages:
        for annotation in page.get("/Annots") or []:
            link = annotation.get_object()
            if link.get("/Subtype") != "/Link":
                continue
            if "/Dest" in link:
                inside.append(str(link["/Dest"]))
            else:
                outside.append(str(link["/A"]["/URI"]))
    dangling = sorted({name for name in inside if name not in destinations})
    assert not dangling, f"links to no place in the PDF: {dangling[:10]}"
    assert len(inside) > 100, len(inside)
    # The contents list on the first page links every page after the introduction,
    # each further on than the one before.
    contents = [
        reader.get_destination_page_number(
            destinations[str(link.get_object()["/Dest"])]
        )
        for link in reader.pages[0].get("/Annots") or []
        if "/Dest" in link.get_object()
    ]
    assert len(contents) == len(toc_entries()) - 1, contents
    assert contents == sorted(set(contents)) and contents[0] > 0, contents
    local = [
        url for url in outside if re.match(r"(file:|https?://(127\.|localhost))", url)
    ]
    assert not local, f"links to the machine that printed the PDF: {local}"
    notebooks = {m.group(1) for url in outside if (m := COLAB_NOTEBOOK.search(url))}
    assert notebooks and all((ROOT / name).exists() for name in notebooks), notebooks


def test_every_page_of_the_website_links_to_the_pdf_beside_it():
    pdf = _pdf_path()
    copy = HTML / pdf.name
    for entry in toc_entries():
        page = (HTML / entry).with_suffix(".html")
        links = re.findall(r'href="([^"]*attention-executed\.pdf)"', page.read_text())
        assert links, f"{entry}: no link to the PDF"
        assert {(page.parent / link).resolve() for link in links} == {copy.resolve()}
    assert filecmp.cmp(pdf, copy, shallow=False), "the website holds an older PDF"


def _bookmarks(reader) -> list[str]:
    titles = []

    def walk(items):
        for item in items:
            if isinstance(item, list):
                walk(item)
            else:
                titles.append(str(item["/Title"]))

    walk(reader.outline)
    return titles


def test_the_bookmarks_name_every_page_as_its_heading_does(reader):
    bookmarks = _bookmarks(reader)
    unnumbered = {_squeezed(re.sub(r"^(\d+\.)+ ", "", title)) for title in bookmarks}
    missing = [
        entry
        for entry in toc_entries()
        if _squeezed(_page_title(entry)) not in unnumbered
    ]
    assert not missing, f"pages with no bookmark: {missing}"
    repeated = [title for title in bookmarks if book_pdf.REPEATED_START.match(title)]
    assert not repeated, f"bookmarks that repeat their start: {repeated}"
