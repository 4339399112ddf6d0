"""A Sphinx extension: each deep dive of a chapter becomes one collapsed box.

A deep dive (see :mod:`tools.main_path`) is a run of notebook cells: an admonition
of class ``deep-dive``, any Markdown and code cells, and a Markdown cell holding
only the comment ``% end of deep dive``. In the document tree these are siblings;
this transform moves the nodes between the admonition and the comment into the
admonition and marks it ``dropdown``, which sphinx-togglebutton shows collapsed
under its title. A deep dive with no end is reported as a warning (an error in
the book's ``-W`` build).
"""

from __future__ import annotations

from docutils import nodes
from sphinx.transforms import SphinxTransform
from sphinx.util import logging

from tools.main_path import DEEP_DIVE_CLASS, DEEP_DIVE_END

logger = logging.getLogger(__name__)
END_TEXT = DEEP_DIVE_END.lstrip("%").strip()


def _is_end(node) -> bool:
    return isinstance(node, nodes.comment) and node.astext().strip() == END_TEXT


class FoldDeepDives(SphinxTransform):
    default_priority = 800

    def apply(self, **kwargs):
        for box in list(self.document.findall(nodes.admonition)):
            if DEEP_DIVE_CLASS not in box["classes"]:
                continue
            parent = box.parent
            after = parent.children[parent.index(box) + 1 :]
            end = next((i for i, node in enumerate(after) if _is_end(node)), None)
            if end is None:
                logger.warning(
                    "a deep dive with no end: add a Markdown cell '%s' after its "
                    "last cell (headings may not stand inside a deep dive)",
                    DEEP_DIVE_END,
                    location=box,
                )
                continue
            for node in after[: end + 1]:
                parent.remove(node)
            box.extend(after[:end])
            box["classes"].append("dropdown")


def setup(app):
    app.add_transform(FoldDeepDives)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
