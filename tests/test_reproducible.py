"""The pinned numeric environment of tools/reproducible.py: a probe of the numbers the
chapters print gives the same bits under the pin whatever the machine asks for."""

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tools import reproducible
from tools.toc import chapter_notebooks

ELSEWHERE = Path(__file__).parent / "elsewhere"

PROBE = """
import torch, torch.nn.functional as F
from attn_course import GPT, GPTConfig, cores
torch.set_num_threads(cores())  # as Chapters 8 and 9 do
torch.manual_seed(0)
x = torch.randn(5, 1000) * 4
q, k, v = torch.randn(3, 2, 4, 300, 32).unbind(0)
numbers = [
    torch.softmax(x, 1).sum(),
    F.scaled_dot_product_attention(q, k, v, is_causal=True).sum(),
    (torch.randn(64, 96) @ torch.randn(96, 384)).sum(),
]
model = GPT(GPTConfig(50, 32, d_model=64, num_heads=4, num_layers=2))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
ids = torch.randint(0, 50, (8, 32))
for _ in range(3):
    loss = F.cross_entropy(model(ids).flatten(0, 1), ids.flatten())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
numbers.append(loss)
print(torch.get_num_threads(), [float(n).hex() for n in numbers])
"""


def _probe(env, one_core=False):
    """What the probe prints in a fresh Python with environment ``env``."""
    run = subprocess.run(
        [sys.executable, "-c", PROBE],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        # pin to the first core this process may use: "one core to run on"
        preexec_fn=(
            (lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}))
            if one_core
            else None
        ),
    )
    return run.stdout


def _clean():
    """This environment without any of the variables the pin sets."""
    return {k: v for k, v in os.environ.items() if k not in reproducible.PINNED}


needs_pinned_path = pytest.mark.skipif(
    bool(reproducible.problem()), reason=reproducible.problem() or "runs here"
)


@pytest.fixture(scope="module")
def pinned():
    """What the probe prints under the pin, over this environment."""
    return _probe(reproducible.environment(_clean()))


@needs_pinned_path
def test_the_pin_gives_the_same_bits_whatever_the_machine_asks_for(pinned):
    elsewhere = {
        **_clean(),
        "ATEN_CPU_CAPABILITY": "avx512",
        "OMP_NUM_THREADS": "4",
        "MKL_NUM_THREADS": "4",
        "MKL_CBWR": "AUTO",
        "ATTN_COURSE_SEEN_CORES": "4",  # tests/elsewhere/sitecustomize.py
        "PYTHONPATH": os.pathsep.join(
            [str(ELSEWHERE), os.environ.get("PYTHONPATH", "")]
        ),
    }
    assert pinned.startswith("1 ")  # one thread
    assert _probe(reproducible.environment(elsewhere), one_core=True) == pinned


def test_the_check_says_in_one_line_what_to_do_elsewhere():
    assert reproducible.problem("x86_64", "flags : fpu sse2 avx avx2 fma\n") == ""
    for found in (
        reproducible.problem("arm64", ""),
        reproducible.problem("x86_64", "flags : fpu sse2 avx\n"),
    ):
        assert "\n" not in found and "make test-anywhere" in found
    assert "arm64" in reproducible.problem("arm64", "")
    assert "lacks AVX2" in reproducible.problem("x86_64", "flags : fpu sse2 avx\n")


def test_stored_runs_set_the_pin_and_no_chapter_sets_its_own_thread_count():
    from tools.notebooks import STORING_ENV

    assert reproducible.PINNED.items() <= STORING_ENV.items()
    for path in chapter_notebooks():
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            if cell.cell_type == "code" and "cpu_count" in cell.source:
                pytest.fail(
                    f"{path.name} sizes its threads with os.cpu_count(); use "
                    "attn_course.cores(), which the stored runs pin:\n" + cell.source
                )


CLOCKS = ("perf_counter", "time.time(", "monotonic", ".seconds")


def test_no_chapter_asserts_on_a_time_it_measured():
    for path in chapter_notebooks():
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            timed = cell.cell_type == "code" and any(c in cell.source for c in CLOCKS)
            if timed and "assert" in cell.source:
                pytest.fail(
                    f"{path.name}: a cell that reads a clock also asserts; print the "
                    "time (attn_course.efficient.print_timings) and keep budgets in "
                    "make bench:\n" + cell.source
                )
