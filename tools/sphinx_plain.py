"""A Sphinx extension: the notebooks the website hands out run anywhere.

The download button of every chapter links to the chapter's source notebook,
copied to ``_sources/``. After an HTML build this extension writes over that copy
with the chapter's portable copy (:func:`tools.portable.portable_copy`: outputs
kept, exercises, notes and math in plain Markdown, solutions collapsed, and a first
code cell that installs the course's package where it is missing), so that a
notebook downloaded from the site runs and reads well in Colab, VS Code or any
other Jupyter.

The Colab button opens the same portable copy: its link, which Jupyter Book builds
for ``chapters/X.ipynb`` on the repository's ``main`` branch (the MyST source), is
pointed at the branch ``launch_buttons.colab_branch`` of ``_config.yml``, where
the publishing workflow pushes these files (:func:`tools.portable.colab_link`).
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from tools.portable import colab_link, portable_copy

COLAB = "Colab"


def write_portable_sources(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    sources = Path(app.outdir) / "_sources"
    for path in sorted((Path(app.srcdir) / "chapters").glob("*.ipynb")):
        target = sources / "chapters" / path.name
        if target.exists():
            nbformat.write(portable_copy(path), target)


def point_colab_at_portable_copies(app, pagename, templatename, context, doctree):
    """Aim the Colab launch button of a notebook page at its portable copy (runs
    after sphinx_book_theme has built the launch buttons)."""
    for group in context.get("header_buttons", []):
        for button in group.get("buttons", []):
            if button.get("text") == COLAB and "url" in button:
                button["url"] = colab_link(pagename, Path(app.srcdir) / "_config.yml")


def setup(app):
    app.connect("html-page-context", point_colab_at_portable_copies, priority=600)
    app.connect("build-finished", write_portable_sources)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
