"""Chapter 10's history: the timeline table and its drawing, the step-time
benchmark (``make bench-history``) and the file of it stored with the package."""

import contextlib
import io
import json
import re

import pytest
import torch

from attn_course import diagrams
from attn_course.history import KINDS, TIMELINE, Event, stored_step_times
from attn_course.plot import _png_width
from tools import bench_history
from tools.exercises import REFERENCES, _bibliography


def test_every_event_cites_an_entry_of_references_bib():
    entries = _bibliography(REFERENCES)
    missing = [event.key for event in TIMELINE if event.key not in entries]
    assert not missing, f"not in references.bib: {missing}"


def test_the_timeline_is_dated_in_order_with_known_kinds():
    assert len(TIMELINE) >= 10
    dates = [(event.year, event.month) for event in TIMELINE]
    assert dates == sorted(dates)
    assert all(0 <= month <= 12 for _, month in dates)
    assert {event.kind for event in TIMELINE} == set(KINDS)
    # The year of each entry in references.bib is the venue's, never before the
    # date the event was first made public.
    entries = _bibliography(REFERENCES)
    for event in TIMELINE:
        assert int(entries[event.key].fields["year"]) >= event.year, event


def test_the_timeline_figure_shows_every_event_and_fits():
    fig = diagrams.timeline(TIMELINE)
    lines = diagrams.diagram_text(fig)
    for event in TIMELINE:
        assert event.label in lines
    assert "2017-06" in lines and "1997" in lines
    png, metadata = fig._repr_png_()
    assert metadata["width"] <= 720 and _png_width(png) // 2 == metadata["width"]


def test_the_timeline_tells_bad_input_clearly():
    with pytest.raises(ValueError, match="empty"):
        diagrams.timeline([])
    with pytest.raises(ValueError, match="date order"):
        diagrams.timeline(list(reversed(TIMELINE)))
    with pytest.raises(ValueError, match="unknown kind"):
        diagrams.timeline([Event(2000, 1, "x", "magic", "k")])


@pytest.mark.parametrize("attention", [False, True])
def test_the_rnn_diagram_reads_its_shapes_from_the_tensors(attention):
    source = torch.zeros(3, 7, dtype=torch.long)
    target = torch.zeros(3, 5, dtype=torch.long)
    fig = diagrams.rnn_encoder_decoder(source, target, 16, 30, attention=attention)
    lines = diagrams.diagram_text(fig)
    assert "(B, T_s, D)" in lines and "= (3, 7, 16)" in lines
    assert "= (3, 5, 30)" in lines  # the logits
    if attention:
        assert "additive attention" in lines and "= (3, 32)" in lines
        # the previous state queries, the context goes into the cell, and the
        # encoder's last state still starts the decoder
        assert "query: previous state $s_{i-1}$" in lines
        assert "context $c_i$" in lines and "initial state" in lines
    else:
        assert "last state only" in lines and "= (3, 16)" in lines
    png, metadata = fig._repr_png_()
    assert metadata["width"] <= 720


def test_the_rnn_diagram_tells_bad_input_clearly():
    with pytest.raises(ValueError, match=r"\(B, T_s\)"):
        diagrams.rnn_encoder_decoder(torch.zeros(7), torch.zeros(1, 5), 8, 9)
    with pytest.raises(ValueError, match="same number of sentences"):
        diagrams.rnn_encoder_decoder(torch.zeros(2, 7), torch.zeros(3, 5), 8, 9)
    with pytest.raises(TypeError, match="attention must be a bool"):
        diagrams.rnn_encoder_decoder(
            torch.zeros(2, 7), torch.zeros(2, 5), 8, 9, attention=1
        )


# --- the benchmark ------------------------------------------------------------------


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """``python -m tools.bench_history --quick --out FILE``: (printed, contents)."""
    out = tmp_path_factory.mktemp("bench") / "history.json"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert bench_history.main(["--quick", "--out", str(out)]) == 0
    return printed.getvalue(), json.loads(out.read_text(encoding="utf-8"))


def _check_results(results, settings):
    assert {"date", "machine", "torch", "python", "settings", "rows"} <= set(results)
    assert results["settings"]["lengths"] == list(settings.lengths)
    assert {"cpu", "cores", "torch_threads", "gpu", "platform"} == set(
        results["machine"]
    )
    keys = {(row["device"], row["T"], row["method"]) for row in results["rows"]}
    assert {(d, T, m) for d, T, m in keys if d == "cpu"} == {
        ("cpu", T, method) for T in settings.lengths for method in bench_history.METHODS
    }
    assert len(keys) == len(results["rows"])
    for row in results["rows"]:
        assert row["time_ms"] > 0
        steps = row["T"] if row["method"] == "gru" else 1
        assert row["sequential_steps"] == steps


def test_a_quick_run_writes_the_file_and_prints_the_table(quick_run):
    printed, results = quick_run
    _check_results(results, bench_history.QUICK)
    assert results["torch"] == torch.__version__
    assert re.search(r"^device +T +gru ms +attention ms +gru/attention$", printed, re.M)
    assert len(re.findall(r"^cpu +\d+ ", printed, re.M)) == len(
        bench_history.QUICK.lengths
    )
    assert "written to" in printed


def test_a_quick_run_never_replaces_the_stored_results():
    assert (
        bench_history.default_out(True, False).parent == bench_history.bench.QUICK_DIR
    )
    stored = bench_history.default_out(False, False)
    assert stored == bench_history.bench.DATA / "history-cpu.json"
    assert stored.name != "bench-cpu.json"  # Chapter 9's run is another file


def test_the_stored_results_are_a_full_run_and_show_what_chapter_10_says():
    """A full run on one CPU thread. Chapter 10 reads in it that a GRU step is the
    slower one at short lengths, that the GRU's time grows about in proportion to T
    (between T/4 and 4 T from the shortest length to the longest), and that
    attention's grows faster than the GRU's over the last two doublings."""
    results = stored_step_times()
    _check_results(results, bench_history.Settings())
    assert results["machine"]["torch_threads"] == 1
    times = {(r["T"], r["method"]): r["time_ms"] for r in results["rows"]}
    lengths = bench_history.Settings().lengths
    first, last = lengths[0], lengths[-1]
    assert times[first, "gru"] > 1.5 * times[first, "attention"]
    growth = times[last, "gru"] / times[first, "gru"]
    assert last / first / 4 < growth < 4 * last / first
    before = lengths[-3]
    attention_growth = times[last, "attention"] / times[before, "attention"]
    assert attention_growth > times[last, "gru"] / times[before, "gru"]


def test_the_loader_tells_a_missing_run_clearly():
    with pytest.raises(ValueError, match="'cpu' or 'cuda'"):
        stored_step_times("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(FileNotFoundError, match="make bench-history"):
            stored_step_times("cuda")


def test_the_makefile_runs_the_benchmark_outside_make_test():
    makefile = (bench_history.bench.DATA.parent.parent / "Makefile").read_text()
    assert re.search(r"^#\s+make bench-history\s+\S", makefile, re.M)
    recipe = re.search(r"^bench-history: \$\(STAMP\)\n\t(.+)$", makefile, re.M)
    assert recipe and recipe.group(1) == "$(BIN)/python -m tools.bench_history"
    assert "bench-history" not in re.search(r"^test:(.*)$", makefile, re.M).group(1)
    phony = re.search(r"^\.PHONY:((?:.*\\\n)*.*)$", makefile, re.M).group(1)
    assert "bench-history" in phony.split()
