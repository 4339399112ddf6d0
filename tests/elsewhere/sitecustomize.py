"""Python as on a machine with ATTN_COURSE_SEEN_CORES cores (``make nbval-elsewhere``
puts this folder on PYTHONPATH, so that every kernel imports it at start)."""

import os

if os.environ.get("ATTN_COURSE_SEEN_CORES"):
    _seen = int(os.environ["ATTN_COURSE_SEEN_CORES"])
    os.cpu_count = lambda: _seen
    if hasattr(os, "sched_getaffinity"):
        os.sched_getaffinity = lambda pid: set(range(_seen))
