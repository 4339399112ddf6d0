"""Shared pytest set-up: the helper module ``notebooks`` is importable from every test
folder, and figures are drawn without a display."""

import os
import sys
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")
sys.path.insert(0, str(Path(__file__).resolve().parent))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "site: browser checks of the built website (run by make site-check)"
    )
