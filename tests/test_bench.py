"""``tools.bench`` (``make bench``): a quick run writes the file Chapter 9 reads, and
the peak-memory measure counts what a call allocates; timings are not checked."""

import dataclasses
import datetime
import json
import math
import os
import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from attn_course import sliding_window_mask
from tools import bench

MIB_FLOATS = 2**20 // 4  # float32 entries in one MiB

needs_cpu_memory = pytest.mark.skipif(
    bench.cpu_memory_problem() != "", reason=bench.cpu_memory_problem()
)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """``python -m tools.bench --quick --threads 1``: (printed text, contents)."""
    import contextlib
    import io

    out = tmp_path_factory.mktemp("bench") / "bench.json"
    printed = io.StringIO()
    threads = torch.get_num_threads()
    try:
        with contextlib.redirect_stdout(printed):
            assert bench.main(["--quick", "--threads", "1", "--out", str(out)]) == 0
    finally:
        torch.set_num_threads(threads)
    return printed.getvalue(), json.loads(out.read_text(encoding="utf-8"))


def expected_rows(settings, devices):
    """(section, device, T, mask, method, block size) of every row a run measures."""
    rows = set()
    block = bench.DEFAULT_BLOCK
    for device in devices:
        sections = ["attention"]
        if device == "cpu" and bench.cpu_memory_problem() == "":
            sections.append("attention, memory reused")
        for section in sections:
            for T in settings.lengths:
                for mask in ("causal", "none"):
                    rows |= {
                        (section, device, T, mask, "plain", None),
                        (section, device, T, mask, "tiled", block),
                        (section, device, T, mask, "sdpa", None),
                    }
        T = settings.block_length
        rows |= {
            ("block size", device, T, "causal", m, None) for m in ("plain", "sdpa")
        }
        rows |= {
            ("block size", device, T, "causal", "tiled", size)
            for size in settings.block_sizes
        }
        T = settings.window_length
        rows |= {
            ("window", device, T, "window", "sdpa", None),
            ("window", device, T, "window", "tiled", block),
            ("window", device, T, "window", "banded", block),
        }
    return rows


def test_the_file_names_the_machine_the_versions_and_the_date(quick_run):
    _, results = quick_run
    assert set(results) == set(
        "date machine torch python settings memory_note reused_memory_env rows "
        "generation exp".split()
    )
    assert results["reused_memory_env"] == bench.REUSE_MEMORY
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
    fields = set(
        "section device T mask method block_size time_ms time_vs_sdpa peak_mib "
        "peak_vs_plain faults".split()
    )
    for row in rows:
        assert set(row) == fields
        assert row["time_ms"] > 0 and row["time_vs_sdpa"] > 0
        if row["method"] == "sdpa":
            assert row["time_vs_sdpa"] == 1
        if bench.cpu_memory_problem() == "" or row["device"] == "cuda":
            assert row["peak_mib"] >= 0
            if row["method"] == "plain":
                assert row["peak_vs_plain"] == 1
            if row["section"] == "window":  # no plain row to compare with
                assert row["peak_vs_plain"] is None
        if row["device"] == "cpu" and bench.resource is not None:
            assert isinstance(row["faults"], int) and row["faults"] >= 0
        else:
            assert row["faults"] is None


def test_exp_and_exp2_are_timed_on_tiles_of_the_default_block_size(quick_run):
    _, results = quick_run
    settings = bench.QUICK
    tile = settings.batch * settings.heads * bench.DEFAULT_BLOCK**2
    tiles = math.ceil(settings.block_length / bench.DEFAULT_BLOCK) ** 2
    cpu = [row for row in results["exp"] if row["device"] == "cpu"]
    assert [row["function"] for row in cpu] == ["exp", "exp2"]
    for row in cpu:
        assert row["numbers"] == tiles * tile
        expected_ns = row["time_ms"] * 1e6 / row["numbers"]
        assert row["ns_per_number"] == pytest.approx(expected_ns, rel=2e-3)


def test_plain_and_banded_attention_give_pytorchs_results():
    gen = torch.Generator().manual_seed(0)
    q, k, v = torch.randn(3, 2, 3, 70, 16, generator=gen).unbind(0)
    for is_causal in (False, True):
        torch.testing.assert_close(
            bench.plain_attention(q, k, v, is_causal=is_causal),
            F.scaled_dot_product_attention(q, k, v, is_causal=is_causal),
        )
    for window, block in ((1, 16), (5, 16), (16, 8), (100, 32)):
        allowed = sliding_window_mask(70, window)
        torch.testing.assert_close(
            bench.banded_attention(q, k, v, window, block),
            F.scaled_dot_product_attention(q, k, v, attn_mask=allowed),
        )


def expected_generation(settings, devices):
    """(device, kind, batch, tokens, method) of every generation row a run makes."""
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
        assert set(row) == set(
            "device kind batch tokens method time_ms ms_per_token speedup".split()
        )
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
        r"^device .* time ms .* x sdpa .* peak MiB .* x plain .* faults$", printed, re.M
    )
    assert header, printed
    assert "exp and exp2" in printed
    table_lines = [line for line in printed.splitlines() if line.startswith("cpu ")]
    assert len(table_lines) == len(expected_rows(bench.QUICK, ["cpu"])) + len(
        generation_lines
    ) + len(results["exp"])


def test_a_quick_run_never_replaces_the_stored_results():
    assert bench.default_out(True, False).parent == bench.QUICK_DIR
    stored = bench.ROOT / "attn_course/measured/bench-cpu.json"  # Chapter 9 reads it
    assert bench.default_out(False, False) == stored
    assert bench.default_out(False, True).name == "bench-cuda.json"


def test_the_ratios_compare_within_one_case():
    def row(section, T, method, time_ms, peak_mib):
        return dict(section=section, device="cpu", T=T, mask="none", method=method,
                    time_ms=time_ms, peak_mib=peak_mib)  # fmt: skip

    rows = [
        row("s", 8, "plain", 4.0, 10.0),
        row("s", 8, "tiled", 3.0, 1.0),
        row("s", 8, "sdpa", 2.0, 0.5),
        row("s", 16, "plain", 8.0, None),
        row("s", 16, "sdpa", 1.0, None),
        row("w", 8, "sdpa", 2.0, 1.0),  # no plain row: no fraction of its peak
        row("w", 8, "banded", 1.0, 1.0),
    ]
    bench.add_ratios(rows)
    assert [r["time_vs_sdpa"] for r in rows] == [2.0, 1.5, 1.0, 8.0, 1.0, 1.0, 0.5]
    assert [r["peak_vs_plain"] for r in rows] == [1.0, 0.1, 0.05] + [None] * 4


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
    """Memory the allocator reuses still counts (what malloc_trim is for)."""
    for _ in range(3):
        blocks = [torch.ones(4 * MIB_FLOATS) for _ in range(8)]
        del blocks
    peak = bench.cpu_peak_mib(lambda: torch.ones(4 * MIB_FLOATS))
    assert abs(peak - 4) < 1, peak


@needs_cpu_memory
def test_the_cpu_peak_is_the_most_held_at_once_not_the_sum():
    """Blocks of 40 MiB, which glibc maps and unmaps on its own."""

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
    """8 heads of 1024 x 1024 scores (32 MiB): plain holds two such, tiled little."""
    settings = bench.Settings(batch=1, heads=8, warmup=1, repeats=1)
    methods = bench._with_mask([bench.PLAIN, bench.tiled(128), bench.SDPA], False)
    rows = bench.measure(methods, 1024, "cpu", settings, bench.cpu_peak_mib)
    peaks = {row["method"]: row["peak_mib"] for row in rows}
    assert peaks["plain"] >= 2 * 32
    assert peaks["tiled"] < peaks["plain"] / 4


@pytest.mark.parametrize("target", ["bench", "bench-history"])
def test_the_makefile_runs_the_benchmarks_outside_make_test(target):
    makefile = (bench.ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(rf"^#\s+make {target}\s+\S", makefile, re.M), "not in the header"
    recipe = re.search(rf"^{target}: \$\(STAMP\)\n\t(.+)$", makefile, re.M)
    module = "tools." + target.replace("-", "_")
    assert recipe and recipe.group(1) == f"$(BIN)/python -m {module}"
    assert target not in re.search(r"^test:(.*)$", makefile, re.M).group(1).split()
    phony = re.search(r"^\.PHONY:((?:.*\\\n)*.*)$", makefile, re.M).group(1)
    assert target in phony.split()


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
    assert [row["function"] for row in results["exp"]] == ["exp", "exp2"]
    generation = {
        (r["device"], r["kind"], r["batch"], r["tokens"], r["method"])
        for r in results["generation"]
    }
    assert generation == expected_generation(bench.Settings(), ["cpu"])


def test_the_stored_results_show_what_chapter_9_says():
    """The timings, memory, page faults and exp costs that Chapter 9 states."""
    results = json.loads((bench.DATA / "bench-cpu.json").read_text(encoding="utf-8"))
    rows = {
        (row["section"], row["mask"], row["method"], row["T"]): row
        for row in results["rows"]
        if row["block_size"] in (None, bench.DEFAULT_BLOCK)
    }
    tiled = {T: rows["attention", "causal", "tiled", T] for T in (1024, 4096)}
    assert tiled[1024]["time_vs_sdpa"] <= 1.5
    assert tiled[4096]["peak_vs_plain"] <= 0.15
    written = {
        row["batch"]: row["speedup"]
        for row in results["generation"]
        if row["kind"] == "generate" and row["tokens"] == 256
    }
    assert written[8] >= 3
    assert written[1] >= 3
    page = os.sysconf("SC_PAGE_SIZE")
    settings = results["settings"]
    for T in (512, 1024, 2048, 4096):
        scores_pages = settings["batch"] * settings["heads"] * T * T * 4 // page
        fresh = rows["attention", "none", "plain", T]["faults"]
        reused = rows["attention, memory reused", "none", "plain", T]["faults"]
        assert fresh >= scores_pages and reused < scores_pages / 100, (T, fresh, reused)
    reused = "attention, memory reused"
    assert (
        rows[reused, "none", "plain", 4096]["time_ms"]
        < rows["attention", "none", "plain", 4096]["time_ms"]
    )
    assert (
        rows[reused, "causal", "tiled", 4096]["time_ms"]
        < rows[reused, "causal", "plain", 4096]["time_ms"]
    )
    ns = {row["function"]: row["ns_per_number"] for row in results["exp"]}
    assert ns["exp2"] > ns["exp"]
