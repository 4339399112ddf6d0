"""Every exercise written as a table (:mod:`attn_course.checks.table`), found in the
checks' modules."""

import importlib
import pkgutil

import attn_course.checks
from attn_course.checks.table import Exercise

TABLES = sorted(
    {
        id(value): value
        for info in pkgutil.iter_modules(attn_course.checks.__path__)
        for value in vars(
            importlib.import_module(f"attn_course.checks.{info.name}")
        ).values()
        if isinstance(value, Exercise)
    }.values(),
    key=lambda e: e.label,
)
