"""Shared pytest set-up and fixtures: figures are drawn without a display.

The repository root is on ``sys.path`` (``pythonpath`` in pyproject.toml), so tests
import the maintainer tools as ``tools.toc`` and ``tools.notebooks``.
"""

import os
import shutil

import pytest

from tools.toc import CHAPTERS

os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture
def chapter_copy(tmp_path):
    """A function ``copy(name)`` that copies the chapter notebook ``name`` (a file in
    ``chapters/``) into the test's temporary folder and returns ``(path, notebook)``:
    the copy's path and its cells read with nbformat, ready to be changed and saved
    with ``nbformat.write(notebook, path)``."""

    import nbformat  # here, so that runs without notebooks skip its slow import

    def copy(name: str):
        source = CHAPTERS / name
        if not source.is_file():
            raise ValueError(
                f"chapter_copy got {name!r}, which is not a file in {CHAPTERS}; "
                "pass the name of a chapter notebook, e.g. '01_toy_attention.ipynb'"
            )
        path = tmp_path / name
        shutil.copy(source, path)
        return path, nbformat.read(path, as_version=4)

    return copy


@pytest.fixture
def projected():
    """The journey sentence of Chapter 3 projected by a ``CausalAttention`` built
    with seed 123, as in the chapter: ``(tokens, queries, keys, module)``."""
    import torch

    from attn_course import CausalAttention
    from attn_course.data import your_journey

    tokens, x = your_journey()
    torch.manual_seed(123)
    module = CausalAttention(3, 2, 6, 0.0)
    with torch.no_grad():
        return tokens, module.W_query(x), module.W_key(x), module


@pytest.fixture
def raises_teaching():
    """``check(call, error, fragments)``: ``call()`` raises ``error`` and its message
    contains every fragment (a str, or a compiled pattern to search for)."""

    def check(call, error, fragments):
        with pytest.raises(error) as info:
            call()
        message = str(info.value)
        for fragment in fragments:
            if hasattr(fragment, "search"):
                assert fragment.search(message), (fragment.pattern, message)
            else:
                assert fragment in message, (fragment, message)

    return check
