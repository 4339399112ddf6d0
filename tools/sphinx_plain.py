"""A Sphinx extension: the notebooks the website hands out use plain Markdown.

The download button of every chapter links to the chapter's source notebook,
copied to ``_sources/``. After an HTML build this extension writes over that copy
with :func:`tools.exercises.plain_copy` (the same notebook, outputs included, with
exercises, notes and math in plain Markdown), so that a notebook downloaded from
the site reads well in Colab, VS Code or any other viewer.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from tools.exercises import plain_copy


def write_plain_sources(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    sources = Path(app.outdir) / "_sources"
    for path in sorted((Path(app.srcdir) / "chapters").glob("*.ipynb")):
        target = sources / "chapters" / path.name
        if target.exists():
            nbformat.write(plain_copy(path), target)


def setup(app):
    app.connect("build-finished", write_plain_sources)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
