"""What the chapters print about numbers that depend on the machine.

A rounding error such as ``4.8e-07`` changes its digits with the CPU's kernels and
thread count, so the chapters print its order, :func:`bound`; :func:`cores` is the
thread count a chapter trains with.
"""

from __future__ import annotations

import math
import os

__all__ = ["bound", "cores"]


def bound(difference):
    """The smallest power of ten above ``difference``, as text: a rounding error
    stated by its order, the part that is the same on every machine.
    Introduced in Chapter 7.

    Examples
    --------
    >>> bound(4.8e-07), bound(1e-06), bound(0.0)
    ('below 1e-06', 'below 1e-05', '0 (exactly equal)')
    >>> import torch
    >>> bound(torch.tensor([1e-7, -3e-5]).abs().max())
    'below 1e-04'
    """
    value = float(difference.detach() if hasattr(difference, "detach") else difference)
    if math.isnan(value) or value < 0:
        raise ValueError(
            f"bound takes a difference >= 0, e.g. (a - b).abs().max(); got {value}"
        )
    if value == 0:
        return "0 (exactly equal)"
    return f"below 1e{math.floor(math.log10(value)) + 1:+03d}"


def cores():
    """How many threads to train with: ``OMP_NUM_THREADS`` where it is set (the
    course's stored runs set 1, see the README), else every core this process may
    run on. Introduced in Chapter 8.

    Examples
    --------
    >>> cores() >= 1
    True
    """
    setting = os.environ.get("OMP_NUM_THREADS", "").strip()
    if setting.isdigit() and int(setting) > 0:
        return int(setting)
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
