"""Maintainer tools of the course, run from the repository root.

``tools.toc`` lists the pages of the book (``chapters/`` and ``_toc.yml``);
``python -m tools.notebooks`` re-executes the chapter notebooks (``make outputs``) and
writes workshop copies without solutions (``make student``). The tests import both to
check what the notebooks and the table of contents hold.
"""
