"""A Sphinx extension: the explorers of Chapters 1 and 3 on the website.

An explorer (:mod:`attn_course.explorer`) is an ipywidgets app: it runs where a
Python kernel runs, in JupyterLab or Colab, and cannot run on a static page. The
output of its code cell holds the live widget and a still of it, a PNG of its
controls and chart (``AttentionExplorer.still``). On the website:

- the still is shown, as a numbered figure with alt text from the cell's metadata
  (``nb_mime_priority_overrides`` in ``_config.yml`` leaves the widget view out of
  HTML pages);
- a marker stands above every code cell tagged ``explorer``: "Interactive in
  JupyterLab or Colab", with a link that opens the chapter's portable copy in Colab
  (:func:`tools.portable.colab_link`, built from the repository named in
  ``_config.yml``);
- the saved widget state, which myst-nb would write into the page's head for a
  widget renderer that this site does not load, is dropped.
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes

from tools.portable import colab_link

EXPLORER_TAG = "explorer"
MARKER_CLASS = "explorer-marker"
# The keys under which myst-nb keeps a page's saved widget state and the scripts
# that would render it (myst_nb.core.render.NbElementRenderer.render_nb_finalise).
WIDGET_SCRIPT_KEYS = ("ipywidgets_state", "ipywidgets_")


def drop_widget_state(app, doctree):
    """Forget the saved widget state of the page just read, so that no page
    carries state that nothing on the website renders."""
    metadata = getattr(app.env, "nb_metadata", {}).get(app.env.docname, {})
    scripts = metadata.get("js_files", {})
    for key in [k for k in scripts if k.startswith(WIDGET_SCRIPT_KEYS)]:
        del scripts[key]


def marker(url: str) -> nodes.container:
    """The box above an explorer: what it is, where it runs and a link to Colab."""
    text = nodes.paragraph()
    text += nodes.strong(text="Interactive in JupyterLab or Colab.")
    text += nodes.Text(
        " The explorer in this cell runs when the notebook runs: "
        "its controls recompute the figure. "
    )
    text += nodes.reference("", "Open this chapter in Colab", refuri=url)
    text += nodes.Text(", or run it in JupyterLab (")
    text += nodes.literal(text="make lab")
    text += nodes.Text(
        " in a clone of the course). Here it shows a still of itself, drawn when "
        "the notebook was last run."
    )
    box = nodes.container(classes=[MARKER_CLASS])
    box += text
    return box


def mark_explorers(app, doctree, docname):
    """Put :func:`marker` above every code cell tagged ``explorer``."""
    if app.builder.format != "html":
        return
    cells = [
        node
        for node in doctree.findall(nodes.container)
        if f"tag_{EXPLORER_TAG}" in node.get("classes", [])
    ]
    if not cells:
        return
    config = Path(app.srcdir) / "_config.yml"
    for cell in cells:
        cell.insert(0, marker(colab_link(_page_of(cell, docname), config)))


def _page_of(node, docname: str) -> str:
    """The page ``node`` comes from: ``docname``, except in the one page of the
    ``singlehtml`` builder (the PDF, tools/pdf.py), where each inlined page's sections
    carry the page's name."""
    while node is not None:
        if isinstance(node, nodes.section) and node.get("docname"):
            return node["docname"]
        node = node.parent
    return docname


def setup(app):
    app.connect("doctree-read", drop_widget_state)
    app.connect("doctree-resolved", mark_explorers)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
