"""The pages of the book: what ``chapters/`` holds and what ``_toc.yml`` lists.

Used by ``tools.notebooks`` and by the tests (``tests/test_notebooks.py`` checks that
``_toc.yml`` and ``chapters/`` agree; the browser check in ``tests/site/`` opens every
page listed). It needs only PyYAML, so that the browser check starts quickly.
"""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"
TOC = ROOT / "_toc.yml"
PAGE_SUFFIXES = (".ipynb", ".md")


def chapter_pages(root: Path = ROOT) -> list[Path]:
    """Every notebook and Markdown page under ``chapters/`` of the book at ``root``,
    sorted."""
    pages = [
        path
        for path in (root / CHAPTERS.name).rglob("*")
        if path.suffix in PAGE_SUFFIXES and ".ipynb_checkpoints" not in path.parts
    ]
    return sorted(pages)


def chapter_notebooks() -> list[Path]:
    """Every notebook under ``chapters/``, sorted."""
    return [path for path in chapter_pages() if path.suffix == ".ipynb"]


def core_chapters(toc_path: Path = TOC, root: Path = ROOT) -> list[Path]:
    """The notebooks of the numbered parts of ``_toc.yml`` (the Core chapters), in
    order: the pages that must meet the chapter standard (three exercises and more).
    Reference pages such as ``masks_in_pytorch`` are notebooks too, but not chapters.
    """
    toc = yaml.safe_load(toc_path.read_text(encoding="utf-8"))
    return [
        path
        for part in toc.get("parts", [])
        if part.get("numbered")
        for chapter in part.get("chapters", [])
        for path in resolve_entry(chapter["file"], root)
        if path.suffix == ".ipynb" and path.exists()
    ]


def toc_entries(toc_path: Path = TOC) -> list[str]:
    """The ``root`` and every ``file`` entry of ``_toc.yml``, in order."""
    toc = yaml.safe_load(toc_path.read_text(encoding="utf-8"))
    entries = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                entries.append(node["file"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk({key: value for key, value in toc.items() if key != "root"})
    return entries


def resolve_entry(entry: str, root: Path = ROOT) -> list[Path]:
    """The files a ``_toc.yml`` entry of the book at ``root`` may refer to (its suffix
    is optional)."""
    base = root / entry
    if base.suffix in PAGE_SUFFIXES:
        return [base]
    return [base.with_suffix(suffix) for suffix in PAGE_SUFFIXES]


def toc_problems(root: Path = ROOT) -> list[str]:
    """Pages in ``chapters/`` missing from ``_toc.yml``, and entries with no page, in
    the book whose ``_toc.yml`` and ``chapters/`` are in the folder ``root``."""
    toc_path = root / TOC.name
    entries = toc_entries(toc_path)
    listed = {
        path.resolve() for entry in entries for path in resolve_entry(entry, root)
    }
    problems = [
        f"{page.relative_to(root)} is in chapters/ but not in {toc_path.name}: "
        "add it to the table of contents (or delete it)"
        for page in chapter_pages(root)
        if page.resolve() not in listed
    ]
    problems += [
        f"{toc_path.name} lists {entry!r}, which does not exist"
        for entry in entries
        if not any(path.exists() for path in resolve_entry(entry, root))
    ]
    return problems
