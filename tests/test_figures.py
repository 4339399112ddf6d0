"""Every figure stored in a chapter: one image per cell, at twice its display width,
within the text column, with the caption, name and alt text the website shows."""

from __future__ import annotations

import base64
import re

import nbformat
import pytest

from attn_course.plot import _png_width
from tools.toc import chapter_notebooks, core_chapters

NOTEBOOKS = chapter_notebooks()
CORE = core_chapters()
# The text column of the website is about 750 px wide on a 1280 px screen.
COLUMN_PX = 750
# Alt text that is a file name or a path, as myst-nb writes when given none.
PATH_LIKE = r"\.(png|svg|jpe?g|gif)\b|_images/|^\.{0,2}/\S*$"


def figure_cells(path):
    notebook = nbformat.read(path, as_version=4)
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        images = [out for out in cell.outputs if "image/png" in out.get("data", {})]
        if images:
            yield index, cell, images


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_figure_has_a_caption_a_name_and_alt_text(path):
    problems = []
    for index, cell, images in figure_cells(path):
        where = f"{path.name} cell {index}"
        if len(images) != 1:
            problems.append(f"{where}: shows {len(images)} images; one per cell")
        options = cell.metadata.get("mystnb", {})
        figure, image = options.get("figure", {}), options.get("image", {})
        if len(str(figure.get("caption", "")).split()) < 4:
            problems.append(f"{where}: no caption (mystnb.figure.caption)")
        if not str(figure.get("name", "")).startswith("fig-"):
            problems.append(f"{where}: no name fig-... (mystnb.figure.name)")
        alt = str(image.get("alt", ""))
        if len(alt.split()) < 5 or re.search(PATH_LIKE, alt):
            problems.append(f"{where}: alt text must describe the image: {alt!r}")
    assert not problems, "\n".join(problems)


def test_figure_names_are_unique_across_the_book():
    names = [
        cell.metadata["mystnb"]["figure"]["name"]
        for path in NOTEBOOKS
        for _, cell, _ in figure_cells(path)
        if "name" in cell.metadata.get("mystnb", {}).get("figure", {})
    ]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    assert not duplicates, duplicates


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_figure_is_sharp_and_fits_the_column(path):
    problems = []
    for index, _, images in figure_cells(path):
        for out in images:
            shown = out.get("metadata", {}).get("image/png", {}).get("width")
            pixels = _png_width(base64.b64decode(out["data"]["image/png"]))
            where = f"{path.name} cell {index}"
            if shown is None or pixels < 2 * int(shown) - 1:
                problems.append(
                    f"{where}: {pixels} px shown at {shown}: not drawn at 2x (re-run "
                    "`make outputs`)"
                )
            elif int(shown) > COLUMN_PX:
                problems.append(f"{where}: {shown} px wide, wider than the column")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", CORE, ids=lambda p: p.name)
def test_every_chapter_has_a_diagram_drawn_from_its_code(path):
    drawn = [
        index
        for index, cell, _ in figure_cells(path)
        if re.search(r"\bdiagrams\.\w+\(", cell.source)
    ]
    assert drawn, f"{path.name}: no diagram from attn_course.diagrams"
