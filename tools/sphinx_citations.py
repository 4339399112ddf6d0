"""A Sphinx extension: the References page's list of sources, as assistive
technology reads it.

docutils writes the bibliography as ``<div role="list">`` holding one
``<div role="doc-biblioentry">`` per source. DPUB-ARIA 1.1 deprecates the role
``doc-biblioentry``, and browsers and screen readers that drop it see a list whose
children are not list items, among them the entries' links back to the citing text
(axe-core's rule ``aria-required-children``, of impact "critical"). Each entry is
written with the role ``listitem`` instead: the same list, read as one.
"""

from __future__ import annotations

ENTRY_ROLE = 'role="doc-biblioentry"'
LIST_ITEM_ROLE = 'role="listitem"'


def entries_as_list_items(app, pagename, templatename, context, doctree):
    """Give each bibliography entry of the page the role of a list item."""
    body = context.get("body")
    if body and ENTRY_ROLE in body:
        context["body"] = body.replace(ENTRY_ROLE, LIST_ITEM_ROLE)


def setup(app):
    app.connect("html-page-context", entries_as_list_items)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
