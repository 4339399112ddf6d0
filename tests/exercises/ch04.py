"""Answers to the exercises of Chapter 4 (see tests/exercises/__init__.py)."""

from attn_course.checks.dropout import DROPOUT, EVAL, ROW_DROP
from tests.exercises import from_table

NOTEBOOK = "04_dropout.ipynb"

ANSWERS = {table.label: from_table(table) for table in (DROPOUT, ROW_DROP, EVAL)}
