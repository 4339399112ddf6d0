"""``tools.bench`` (``make bench``): a quick run writes the file the Chapter 9
notebook reads, with the expected fields, and the peak-memory measure counts what a
call allocates. Timings are not checked: they depend on the machine."""

import dataclasses
import datetime
import json
import re
from pathlib import Path

import pytest
import torch

from tools import bench

MIB_FLOATS = 2**20 // 4  # float32 entries in one MiB

needs_cpu_memory = pytest.mark.skipif(
    bench.cpu_memory_problem() != "", reason=bench.cpu_memory_problem()
)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """``python -m tools.bench --quick --out FILE``: (printed text, file contents)."""
    import contextlib
    import io

    out = tmp_path_factory.mktemp("bench") / "bench.json"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert bench.main(["--quick", "--out", str(out)]) == 0
    return printed.getvalue(), json.loads(out.read_text(encoding="utf-8"))


def expected_rows(settings, devices):
    """(section, device, T, mask, method, block size) of every row a run measures."""
    rows = set()
    for device in devices:
        for T in settings.lengths:
            for mask in ("causal", "none"):
                rows |= {
                    ("attention", device, T, mask, "plain", None),
                    ("attention", device, T, mask, "tiled", bench.DEFAULT_BLOCK),
                    ("attention", device, T, mask, "sdpa", None),
                }
        T = settings.block_length
        rows |= {
            ("block size", device, T, "causal", m, None) for m in ("plain", "sdpa")
        }
        rows |= {
            ("block size", device, T, "causal", "tiled", size)
            for size in settings.block_sizes
        }
    return rows


def test_the_file_names_the_machine_the_versions_and_the_date(quick_run):
    _, results = quick_run
    assert set(results) == {
        "date",
        "machine",
        "torch",
        "python",
        "settings",
        "memory_note",
        "rows",
        "generation",
    }
    date = datetime.datetime.fromisoformat(results["date"])
    assert date.tzinfo is not None
    assert abs(datetime.datetime.now(datetime.timezone.utc) - date).days < 1
    machine = results["machine"]
    assert set(machine) == {"cpu", "cores", "torch_threads", "gpu", "platform"}
    assert isinstance(machine["cpu"], str) and machine["cpu"]
    assert machine["cores"] >= 1 and machine["torch_threads"] >= 1
    assert (machine["gpu"] is None) == (not torch.cuda.is_available())
    assert results["torch"] == torch.__version__
    stored = json.loads(json.dumps(dataclasses.asdict(bench.QUICK)))
    assert results["settings"] == {**stored, "default_block_size": bench.DEFAULT_BLOCK}


def test_the_file_has_one_row_per_case_with_every_field(quick_run):
    _, results = quick_run
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    rows = results["rows"]
    keys = [
        (r["section"], r["device"], r["T"], r["mask"], r["method"], r["block_size"])
        for r in rows
    ]
    assert len(keys) == len(set(keys))
    assert set(keys) == expected_rows(bench.QUICK, devices)
    fields = {
        "section",
        "device",
        "T",
        "mask",
        "method",
        "block_size",
        "time_ms",
        "time_vs_sdpa",
        "peak_mib",
        "peak_vs_plain",
    }
    for row in rows:
        assert set(row) == fields
        assert row["time_ms"] > 0 and row["time_vs_sdpa"] > 0
        if row["method"] == "sdpa":
            assert row["time_vs_sdpa"] == 1
        if bench.cpu_memory_problem() == "" or row["device"] == "cuda":
            assert row["peak_mib"] >= 0
            if row["method"] == "plain":
                assert row["peak_vs_plain"] == 1


def expected_generation(settings, devices):
    """(device, kind, batch, tokens, method) of every generation row a run
    measures."""
    return {
        (device, kind, batch, tokens, method)
        for device in devices
        for batch in settings.generation_batches
        for kind, lengths in (
            ("step", settings.step_lengths),
            ("generate", settings.new_tokens),
        )
        for tokens in lengths
        for method in ("uncached", "cached")
    }


def test_generation_has_one_row_per_case_and_its_speedup(quick_run):
    _, results = quick_run
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    rows = results["generation"]
    keys = [
        (r["device"], r["kind"], r["batch"], r["tokens"], r["method"]) for r in rows
    ]
    assert len(keys) == len(set(keys))
    assert set(keys) == expected_generation(bench.QUICK, devices)
    by_key = {key: row for key, row in zip(keys, rows, strict=True)}
    for (device, kind, batch, tokens, _), row in by_key.items():
        assert set(row) == {
            "device",
            "kind",
            "batch",
            "tokens",
            "method",
            "time_ms",
            "ms_per_token",
            "speedup",
        }
        assert row["time_ms"] > 0
        per_token = 1 if kind == "step" else tokens
        assert row["ms_per_token"] == pytest.approx(row["time_ms"] / per_token, 1e-2)
        uncached = by_key[device, kind, batch, tokens, "uncached"]["time_ms"]
        cached = by_key[device, kind, batch, tokens, "cached"]["time_ms"]
        # each figure is kept to 4 significant digits, so their ratio to about 1e-3
        assert row["speedup"] == pytest.approx(uncached / cached, rel=2e-3)


def test_the_timed_cached_step_leaves_its_cache_as_it_found_it(monkeypatch):
    """Every repeat of the cached step must see a cache of ``tokens - 1`` tokens."""
    seen = []
    real = bench.KVCache

    class Watched(real):
        def __init__(self, num_layers):
            super().__init__(num_layers)
            seen.append(self)

    monkeypatch.setattr(bench, "KVCache", Watched)
    settings = dataclasses.replace(
        bench.QUICK,
        step_lengths=(6,),
        new_tokens=(2,),
        generation_batches=(1,),
        generation_repeats=3,
    )
    bench.generation_rows("cpu", settings)
    assert len(seen[0]) == 5


def test_the_table_is_printed(quick_run):
    printed, results = quick_run
    assert "attention:" in printed and "block size:" in printed
    assert "generation (" in printed
    generation_lines = [
        line
        for line in printed.splitlines()
        if re.match(r"cpu +(step|generate) ", line)
    ]
    assert len(generation_lines) == len(expected_generation(bench.QUICK, ["cpu"]))
    assert results["torch"] in printed and "written to" in printed
    header = re.search(
        r"^device .* time ms .* x sdpa .* peak MiB .* x plain$", printed, re.M
    )
    assert header, printed
    table_lines = [line for line in printed.splitlines() if line.startswith("cpu ")]
    assert len(table_lines) == len(expected_rows(bench.QUICK, ["cpu"])) + len(
        generation_lines
    )


def test_a_quick_run_never_replaces_the_stored_results():
    assert bench.default_out(True, False).parent == bench.QUICK_DIR
    assert (
        bench.default_out(False, False)
        == bench.ROOT / "attn_course/measured/bench-cpu.json"
    )
    assert bench.default_out(False, True).name == "bench-cuda.json"


def test_the_ratios_compare_within_one_case():
    rows = [
        {
            "section": "s",
            "device": "cpu",
            "T": 8,
            "mask": "none",
            "method": m,
            "time_ms": t,
            "peak_mib": p,
        }
        for m, t, p in [("plain", 4.0, 10.0), ("tiled", 3.0, 1.0), ("sdpa", 2.0, 0.5)]
    ] + [
        {
            "section": "s",
            "device": "cpu",
            "T": 16,
            "mask": "none",
            "method": m,
            "time_ms": t,
            "peak_mib": None,
        }
        for m, t in [("plain", 8.0), ("sdpa", 1.0)]
    ]
    bench.add_ratios(rows)
    assert [r["time_vs_sdpa"] for r in rows] == [2.0, 1.5, 1.0, 8.0, 1.0]
    assert [r["peak_vs_plain"] for r in rows] == [1.0, 0.1, 0.05, None, None]


@needs_cpu_memory
@pytest.mark.parametrize("mib", [4, 16, 64])
def test_the_cpu_peak_counts_a_tensor_of_known_size(mib):
    # Warmed up first, as in the benchmark: the first call of a function also
    # loads its machine code, which counts as resident memory too.
    torch.ones(mib * MIB_FLOATS)
    for _ in range(2):  # the same again, when that memory has been freed
        peak = bench.cpu_peak_mib(lambda: torch.ones(mib * MIB_FLOATS))
        assert abs(peak - mib) < 1, peak


@needs_cpu_memory
def test_the_cpu_peak_counts_memory_reused_from_earlier_calls():
    """Freed 4 MiB blocks stay with the allocator; an allocation reusing one must
    still count (this is what malloc_trim is for)."""
    for _ in range(3):
        blocks = [torch.ones(4 * MIB_FLOATS) for _ in range(8)]
        del blocks
    peak = bench.cpu_peak_mib(lambda: torch.ones(4 * MIB_FLOATS))
    assert abs(peak - 4) < 1, peak


@needs_cpu_memory
def test_the_cpu_peak_is_the_most_held_at_once_not_the_sum():
    """Blocks of 40 MiB, which glibc always maps and unmaps on its own (above its
    32 MiB limit for reusing freed blocks), so that a freed one is gone at once."""

    def one_after_the_other():
        first = torch.ones(40 * MIB_FLOATS)
        del first
        return torch.ones(40 * MIB_FLOATS)

    assert abs(bench.cpu_peak_mib(one_after_the_other) - 40) < 1
    both = bench.cpu_peak_mib(
        lambda: (torch.ones(40 * MIB_FLOATS), torch.ones(40 * MIB_FLOATS))
    )
    assert abs(both - 80) < 1


@needs_cpu_memory
def test_plain_attention_holds_scores_and_weights_and_tiled_does_not():
    """8 heads of 1024 x 1024 scores are 32 MiB: the plain computation holds them
    and the weights at once; tiled attention a small part of that. (The scores are
    large enough that the allocator's few MiB of slack cannot decide the test.)"""
    settings = bench.Settings(batch=1, heads=8, warmup=1, repeats=1)
    rows = bench.measure(
        [bench.PLAIN, bench.tiled(128), bench.SDPA],
        1024,
        False,
        "cpu",
        settings,
        bench.cpu_peak_mib,
    )
    peaks = {row["method"]: row["peak_mib"] for row in rows}
    assert peaks["plain"] >= 2 * 32
    assert peaks["tiled"] < peaks["plain"] / 4


def test_the_makefile_runs_the_benchmark_outside_make_test():
    makefile = (bench.ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^#\s+make bench\s+\S", makefile, re.M), "not in the header"
    recipe = re.search(r"^bench: \$\(STAMP\)\n\t(.+)$", makefile, re.M)
    assert recipe and recipe.group(1) == "$(BIN)/python -m tools.bench"
    test_target = re.search(r"^test:(.*)$", makefile, re.M).group(1).split()
    assert "bench" not in test_target
    phony = re.search(r"^\.PHONY:((?:.*\\\n)*.*)$", makefile, re.M).group(1)
    assert "bench" in phony.split()


def test_the_stored_results_are_a_full_run():
    """The file the chapter reads: every case of a full run, measured on the CPU."""
    path = bench.DATA / "bench-cpu.json"
    results = json.loads(Path(path).read_text(encoding="utf-8"))
    assert results["settings"]["lengths"] == list(bench.Settings().lengths)
    # Made with today's default block size of tiled_attention.
    assert results["settings"]["default_block_size"] == bench.DEFAULT_BLOCK
    keys = {
        (r["section"], r["device"], r["T"], r["mask"], r["method"], r["block_size"])
        for r in results["rows"]
    }
    assert keys == expected_rows(bench.Settings(), ["cpu"])
    generation = {
        (r["device"], r["kind"], r["batch"], r["tokens"], r["method"])
        for r in results["generation"]
    }
    assert generation == expected_generation(bench.Settings(), ["cpu"])


def test_the_stored_results_show_what_chapter_9_says():
    """With the causal mask, tiled attention takes at most 1.5 times the time of
    PyTorch's kernel at T = 1024, and at T = 4096 at most 15 % of the memory of
    the plain computation; writing 256 tokens with a KV cache is at least 3 times as
    fast as without, for a batch of 8 sequences and for one."""
    results = json.loads((bench.DATA / "bench-cpu.json").read_text(encoding="utf-8"))
    tiled = {
        row["T"]: row
        for row in results["rows"]
        if row["section"] == "attention"
        and row["method"] == "tiled"
        and row["mask"] == "causal"
    }
    assert tiled[1024]["time_vs_sdpa"] <= 1.5
    assert tiled[4096]["peak_vs_plain"] <= 0.15
    written = {
        row["batch"]: row["speedup"]
        for row in results["generation"]
        if row["kind"] == "generate" and row["tokens"] == 256
    }
    assert written[8] >= 3
    assert written[1] >= 3
