"""Answers to the exercises of Chapter 3 (see tests/exercises/__init__.py)."""

from attn_course.checks.causal_mask import ADDITIVE_MASK, CAUSAL_ATTENTION, CAUSAL_MASK
from tests.exercises import from_table

NOTEBOOK = "03_causal_mask.ipynb"

ANSWERS = {
    table.label: from_table(table)
    for table in (CAUSAL_MASK, ADDITIVE_MASK, CAUSAL_ATTENTION)
}
