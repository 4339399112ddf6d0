"""Chapter 10's history: the timeline, the benchmarks of ``make bench-history`` and
the stored runs of Chapters 8 and 10."""

import contextlib
import io
import json
import re
from dataclasses import asdict

import pytest
import torch

from attn_course import diagrams, seq2seq, translation
from attn_course.corpus import CharTokenizer, python_docs_text, train_val_split
from attn_course.gpt import norm_run, stored_norm_runs
from attn_course.history import (
    KINDS,
    LENGTH_WIDTHS,
    TIMELINE,
    length_model,
    length_run,
    stored_length_runs,
    stored_scoring_times,
    stored_step_times,
)
from attn_course.plot import _png_width
from attn_course.rnn import exact_match_by_length
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
    quick, stored = (bench_history.default_out(q, False) for q in (True, False))
    assert quick.parent == bench_history.bench.QUICK_DIR
    assert stored == bench_history.bench.DATA / "history-cpu.json"  # not Chapter 9's


def test_the_stored_results_are_a_full_run_and_show_what_chapter_10_says():
    """A full run on one thread; GRU and attention times grow as Chapter 10 says."""
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


# --- Chapter 10's experiment on sentence length -------------------------------------


def test_the_four_models_have_about_the_same_size():
    counts = {
        name: seq2seq.count_parameters(length_model(name)) for name in LENGTH_WIDTHS
    }
    assert max(counts.values()) / min(counts.values()) < 1.01, counts
    chapter_6 = seq2seq.Seq2SeqTransformer(
        seq2seq.Seq2SeqConfig(
            len(translation.source_vocab()), len(translation.target_vocab())
        )
    )
    assert counts["transformer"] == seq2seq.count_parameters(chapter_6)
    gru = length_model("GRU + summary")
    assert gru.config.summary_every_step and not gru.config.attention
    with pytest.raises(ValueError, match="GRU \\+ attention"):
        length_model("LSTM")


def test_a_length_run_is_seeded_and_scores_what_it_says():
    src_vocab, tgt_vocab = translation.source_vocab(), translation.target_vocab()
    splits = translation.make_splits(48, 1, 24, seed=1)
    train, test = (
        translation.make_batch(pairs, src_vocab, tgt_vocab)
        for pairs in (splits.train, splits.test)
    )
    subset = translation.make_batch(splits.train[:8], src_vocab, tgt_vocab)
    model, result = length_run(
        "GRU + summary", train, test, subset, seed=3, epochs=1, warmup_steps=1
    )
    again = length_run(
        "GRU + summary", train, test, subset, seed=3, epochs=1, warmup_steps=1
    )[1]
    assert {k: v for k, v in result.items() if k != "seconds"} == {
        k: v for k, v in again.items() if k != "seconds"
    }
    assert result["test_exact_match"] == seq2seq.exact_match(model, test)
    assert result["train_exact_match"] == seq2seq.exact_match(model, subset)
    table = exact_match_by_length(model, test)
    assert result["by_length"] == [[n, a, c] for n, (a, c) in table.items()]
    assert result["parameters"] == seq2seq.count_parameters(model)
    assert [result[k] for k in ("model", "seed", "epochs")] == ["GRU + summary", 3, 1]


@pytest.fixture(scope="module")
def quick_parts(tmp_path_factory):
    """``--part scores``, ``lengths``, ``norms`` with ``--quick``: {part: results}."""
    found = {}
    for part in ("scores", "lengths", "norms"):
        out = tmp_path_factory.mktemp(part) / f"{part}.json"
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            argv = ["--part", part, "--quick", "--out", str(out)]
            assert bench_history.main(argv) == 0
        found[part] = printed.getvalue(), json.loads(out.read_text(encoding="utf-8"))
    return found


def test_a_quick_scores_run_times_both_scorings(quick_parts):
    printed, results = quick_parts["scores"]
    assert [row["method"] for row in results["rows"]] == ["additive", "dot"]
    assert all(row["time_ms"] > 0 for row in results["rows"])
    assert re.search(r"^additive +\d+\.\d+ ms$", printed, re.M)
    scorings = bench_history.scorings(bench_history.QUICK_SCORES)
    B, T = bench_history.QUICK_SCORES.batch, bench_history.QUICK_SCORES.length
    assert scorings["additive"]().shape == scorings["dot"]().shape == (B, T, T)


def test_a_quick_lengths_run_trains_every_model_and_the_long_runs(quick_parts):
    printed, results = quick_parts["lengths"]
    settings = bench_history.QUICK_LENGTHS
    runs = [(row["model"], row["seed"], row["epochs"]) for row in results["rows"]]
    assert runs == [
        (name, seed, settings.epochs)
        for seed in settings.seeds
        for name in LENGTH_WIDTHS
    ] + [
        (name, seed, settings.long_epochs)
        for name in settings.long_models
        for seed in settings.seeds
    ]
    assert results["settings"]["widths"] == LENGTH_WIDTHS
    assert sum(row["by_length"][0][2] for row in results["rows"][:1]) > 0
    assert printed.count(" epochs: train ") == len(runs)


def test_a_quick_norms_run_trains_both_arrangements_from_every_seed(quick_parts):
    printed, results = quick_parts["norms"]
    settings = bench_history.QUICK_NORMS
    runs = [(row["norm"], row["seed"]) for row in results["rows"]]
    assert runs == [(n, s) for n in ("pre-norm", "post-norm") for s in settings.seeds]
    for row in results["rows"]:
        assert len(row["val_loss"]) == settings.steps // settings.eval_every
    assert "post-norm, 1 seeds, loss after 4 steps:" in printed


def test_a_norm_run_at_its_constant_rate_continues_its_shorter_run():
    """As Chapter 8 says: a longer run's first losses are the shorter run's."""
    short = norm_run(False, seed=3, steps=2, eval_every=1)
    longer = norm_run(False, seed=3, steps=4, eval_every=1)
    assert longer[:2] == short and len(longer) == 4
    assert norm_run(True, seed=3, steps=2, eval_every=1) != short


@pytest.mark.parametrize("part", ["lengths", "norms"])
def test_the_training_parts_refuse_to_store_outside_the_pinned_environment(
    monkeypatch, capsys, part
):
    monkeypatch.delenv("MKL_CBWR", raising=False)
    assert bench_history.main(["--part", part]) == 2
    assert "tools.reproducible run" in capsys.readouterr().out


def test_the_stored_length_runs_are_a_full_run_and_show_what_chapter_10_says():
    """Every model and seed; the accuracies by length that Chapter 10 states."""
    results = stored_length_runs()
    settings = bench_history.LengthSettings()
    rows = {(r["model"], r["epochs"], r["seed"]): r for r in results["rows"]}
    expected = {
        (name, settings.epochs, seed)
        for name in LENGTH_WIDTHS
        for seed in settings.seeds
    }
    expected |= {
        (name, settings.long_epochs, seed)
        for name in settings.long_models
        for seed in settings.seeds
    }
    assert set(rows) == expected and len(rows) == len(results["rows"])
    assert results["settings"]["widths"] == LENGTH_WIDTHS
    for (name, epochs, _), row in rows.items():
        assert row["parameters"] == seq2seq.count_parameters(length_model(name))
        assert sum(count for _, _, count in row["by_length"]) == settings.test_pairs
        accuracies = [accuracy for _, accuracy, _ in row["by_length"]]
        if "attention" in name or name == "transformer":
            assert min(accuracies) > 0.9
        elif epochs == settings.epochs:
            assert row["train_exact_match"] < 0.9 and row["test_exact_match"] < 0.9
            assert accuracies[-1] < accuracies[0] - 0.3
        else:
            assert row["train_exact_match"] > 0.9


def test_the_stored_scoring_times_show_additive_scores_slower():
    results = stored_scoring_times()
    assert results["settings"] == asdict(bench_history.ScoreSettings())
    times = {row["method"]: row["time_ms"] for row in results["rows"]}
    assert times["additive"] > 2 * times["dot"]
    assert results["machine"]["torch_threads"] == 1


def test_the_stored_norm_runs_are_a_full_run_and_show_what_chapter_8_says():
    """Pre-norm passes the bigram model at steps 550-800; post-norm mostly stalls."""
    results = stored_norm_runs()
    settings = bench_history.NormSettings()
    assert results["settings"] == json.loads(json.dumps(asdict(settings)))
    runs = [(row["norm"], row["seed"]) for row in results["rows"]]
    assert runs == [(n, s) for n in ("pre-norm", "post-norm") for s in settings.seeds]
    text = python_docs_text()
    tokenizer = CharTokenizer(text)
    train_ids, val_ids = train_val_split(tokenizer.encode(text), val_fraction=0.1)
    V = tokenizer.vocab_size
    counts = torch.ones(V, V).index_put_(
        (train_ids[:-1], train_ids[1:]),
        torch.ones(len(train_ids) - 1),
        accumulate=True,
    )
    bigram = (counts / counts.sum(1, keepdim=True))[val_ids[:-1], val_ids[1:]]
    bigram_loss = -bigram.log().mean().item()
    unigram = torch.bincount(train_ids, minlength=V).float() / len(train_ids)
    unigram_loss = -unigram[val_ids].log().mean().item()
    every = settings.eval_every
    pre = [row["val_loss"] for row in results["rows"] if row["norm"] == "pre-norm"]
    post = [row["val_loss"] for row in results["rows"] if row["norm"] == "post-norm"]
    for losses in pre + post:
        assert len(losses) == settings.steps // every
    passed = [
        every * next(n + 1 for n, v in enumerate(ls) if v < bigram_loss) for ls in pre
    ]
    assert min(passed) == 550 and max(passed) == 800
    assert all(losses[-1] < bigram_loss for losses in pre)
    stalled = [ls for ls in post if abs(ls[-1] - unigram_loss) < 0.1]
    escaped = [ls for ls in post if ls[-1] < min(p[-1] for p in pre)]
    assert len(stalled) == 3 and len(escaped) == 1
