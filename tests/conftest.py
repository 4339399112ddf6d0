"""Shared fixtures; figures are drawn without a display, and tests import the
maintainer tools as ``tools.*`` (the repository root is on ``sys.path``)."""

import os
import shutil

import pytest

from tools.toc import CHAPTERS

os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture
def chapter_copy(tmp_path):
    """``copy(name)``: chapter ``name`` copied to tmp_path, as ``(path, notebook)``."""

    import nbformat  # here, so that runs without notebooks skip its slow import

    def copy(name: str):
        path = tmp_path / name
        shutil.copy(CHAPTERS / name, path)
        return path, nbformat.read(path, as_version=4)

    return copy


@pytest.fixture
def projected():
    """Chapter 3's journey projected with seed 123: ``(tokens, q, k, module)``."""
    import torch

    from attn_course import CausalAttention
    from attn_course.data import your_journey

    tokens, x = your_journey()
    torch.manual_seed(123)
    module = CausalAttention(3, 2, 6, 0.0)
    with torch.no_grad():
        return tokens, module.W_query(x), module.W_key(x), module


def teaches(call, error, fragments):
    """``call()`` raises ``error`` whose message holds each str or pattern."""
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    for fragment in fragments:
        if hasattr(fragment, "search"):
            assert fragment.search(message), (fragment.pattern, message)
        else:
            assert fragment in message, (fragment, message)


@pytest.fixture
def raises_teaching():
    """:func:`teaches`, for tests that take it as a fixture."""
    return teaches
