"""The numeric environment in which the course's outputs are stored and compared.

PyTorch on a CPU gives the same bits on every run of one machine, but not across
machines: which vector kernels run (AVX2 or AVX-512, Intel's or AMD's path through
MKL) and how many threads split a sum change the last bits of a result, and a
training run carries such a difference into the third decimal of its loss. So every
run that stores outputs (``make outputs``) or compares them with the stored ones
(``make nbval``, ``make exercises``, ``make workshop-check``) sets :data:`PINNED`, and
a reader running a chapter keeps every core and the fastest kernels. The README's
"Reproducible numbers" says which machines reproduce the stored outputs.

``python -m tools.reproducible check`` prints nothing and exits 0 where the pinned
environment can run, or prints one line saying what to do instead and exits 3.
``python -m tools.reproducible run -- COMMAND ...`` runs a command in it, after
that check.
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

PINNED = {
    # PyTorch's own kernels: the AVX2 build on every x86-64 CPU, also on those with
    # AVX-512, which would otherwise pick kernels that round differently.
    "ATEN_CPU_CAPABILITY": "avx2",
    # oneDNN, behind some of PyTorch's CPU operations, capped at AVX2 likewise.
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    # MKL, behind PyTorch's matrix products, on the one code path it keeps the same on
    # Intel and AMD CPUs (MKL's "conditional numerical reproducibility"; its AVX2
    # path is reproducible on Intel CPUs only).
    "MKL_CBWR": "COMPATIBLE",
    # One thread: a sum split over more threads is added up in another order.
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    # Sets and dicts of strings iterate in one order.
    "PYTHONHASHSEED": "0",
}


def problem(machine: str | None = None, cpuinfo: str | None = None) -> str:
    """Why this machine cannot reproduce the stored outputs, in one line; "" if it
    can. ``machine`` and ``cpuinfo`` (the text of /proc/cpuinfo) default to this
    machine's."""
    machine = (machine or platform.machine()).lower()
    instead = (
        "Run `make test-anywhere` here (every check, with the notebooks executed "
        "but their numbers not compared), or `make test` on an x86-64 Linux "
        "machine or container."
    )
    if machine not in {"x86_64", "amd64"}:
        return (
            f"make test compares the stored outputs, which reproduce only on x86-64 "
            f"CPUs with AVX2; this machine is {machine}. {instead}"
        )
    if cpuinfo is None:
        path = Path("/proc/cpuinfo")
        cpuinfo = path.read_text() if path.exists() else None
    if cpuinfo is not None and " avx2" not in cpuinfo:
        return (
            "make test compares the stored outputs, which reproduce only on x86-64 "
            f"CPUs with AVX2; this CPU lacks AVX2. {instead}"
        )
    return ""


def environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: ``os.environ``) with :data:`PINNED` set over it."""
    return {**(os.environ if base is None else base), **PINNED}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in {"check", "run"}:
        print("usage: python -m tools.reproducible check | run -- COMMAND ...")
        return 2
    found = problem()
    if found:
        print(found)
        return 3
    if argv[0] == "check":
        return 0
    command = argv[2:] if argv[1:2] == ["--"] else argv[1:]
    if not command:
        print("usage: python -m tools.reproducible run -- COMMAND ...")
        return 2
    os.execvpe(command[0], command, environment())


if __name__ == "__main__":
    sys.exit(main())
