"""The stored measurements of Chapters 8 and 10: step times, scoring times, the
length runs, the pre-norm and post-norm runs.

``make bench-history`` runs ``python -m tools.bench_history``, whose default part,
``--part steps``, times one training step of a recurrent layer and of an attention
layer as T grows. For a batch of 8
sequences of width 128 and T = 16, 32, ..., 1024 tokens it times one training step,
the forward pass, a loss and the backward pass, of

- ``gru``: ``torch.nn.GRU(128, 128)``, one recurrent layer; its T steps run one
  after the other, each waiting for the hidden state of the step before;
- ``attention``: ``attn_course.MultiHeadAttention`` with 4 heads and no causal
  mask, one self-attention layer of the same width, where every position is
  computed at once.

Each is timed with ``median_ms`` of :mod:`tools.bench` (warm-up calls, then rounds
that call the two in turn, the median of each). PyTorch runs on one CPU thread
unless ``--threads`` says otherwise: the two layers then compare by the work each
does, and a machine busy with other programs disturbs the run less. The thread
count is stored with the machine. The results are printed as a
table and written as JSON, with the machine, the torch version, the date and the
settings, to ``attn_course/measured/history-cpu.json`` (``history-cuda.json`` with
CUDA, where the rows are measured on the GPU too). Chapter 10 reads the file with
``attn_course.history.stored_step_times()``.

``--part scores`` times the scores of every query against every key for the shapes
that Chapter 10 times live (a batch of 8, 128 queries and 128 keys of width 64):
additive, through ``attn_course.AdditiveAttention``'s ``W_query``, ``W_key``, a
``tanh`` on a ``(B, T_q, T_k, d_a)`` tensor and ``v``; and the scaled dot product,
one matrix product. It writes ``history-scores-cpu.json``, which
``attn_course.history.stored_scoring_times()`` reads.

``--part lengths`` runs Chapter 10's experiment on sentence length: each model of
``attn_course.history.LENGTH_WIDTHS`` (about 175,000 parameters each) is trained
on Chapter 6's 8,000 training pairs for each seed by
``attn_course.history.length_run``, and scored by exact match on the 1,000 test
pairs, by source length, and on the first 1,000 training pairs; the plain GRU is
trained with five times the epochs too. Results do not depend on the machine when
the command runs in the course's pinned numeric environment, as it should:
``python -m tools.reproducible run -- python -m tools.bench_history --part lengths``
(the training times it stores do). It writes ``history-lengths-cpu.json``, which
``attn_course.history.stored_length_runs()`` reads.

``--part norms`` trains Chapter 8's pre-norm and post-norm GPTs
(``attn_course.gpt.norm_run``) for each seed, longer than the chapter does live,
in the pinned numeric environment too, so that seed 0 starts as the chapter's live
run does. It writes ``norms-cpu.json``, which ``attn_course.gpt.stored_norm_runs()``
reads.

``--quick`` runs a part on small sizes, to check that the command works, and
writes to ``_build/bench/`` unless ``--out`` is given.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass

import torch
from torch import nn

from attn_course import AdditiveAttention, MultiHeadAttention, gpt, history, translation
from tools import bench
from tools.bench import median_ms
from tools.reproducible import PINNED


@dataclass(frozen=True)
class Settings:
    """What one run measures; stored in the file next to the results."""

    batch: int = 8
    width: int = 128
    heads: int = 4
    lengths: tuple[int, ...] = (16, 32, 64, 128, 256, 512, 1024)
    warmup: int = 2
    repeats: int = 7
    dtype: str = "float32"


QUICK = Settings(lengths=(8, 16), warmup=1, repeats=1)
"""``--quick``: two short lengths and one repeat, to check that the command works."""

METHODS = ("gru", "attention")


def layers(settings, T, device):
    """``{method: layer}``, both of width ``settings.width``, seeded."""
    torch.manual_seed(0)
    D = settings.width
    return {
        "gru": nn.GRU(D, D, batch_first=True).to(device),
        "attention": MultiHeadAttention(D, D, T, 0.0, settings.heads, causal=False).to(
            device
        ),
    }


def training_step(layer, x):
    """Forward, a loss (the mean of the output), backward; gradients dropped."""
    out = layer(x)
    if isinstance(out, tuple):  # nn.GRU returns (states, last state)
        out = out[0]
    out.mean().backward()  # (B, T, D) -> a scalar, then gradients
    layer.zero_grad(set_to_none=True)


def rows(settings, device):
    """One row per method and length: the median time of a training step."""
    found = []
    dtype = getattr(torch, settings.dtype)
    for T in settings.lengths:
        gen = torch.Generator(device=device).manual_seed(T)
        shape = (settings.batch, T, settings.width)
        x = torch.randn(shape, generator=gen, device=device, dtype=dtype)
        x.requires_grad_(True)  # as if it came from the layers below
        timed = layers(settings, T, device)
        calls = {
            name: (lambda layer=layer, x=x: training_step(layer, x))
            for name, layer in timed.items()
        }
        times = median_ms(calls, device, settings)
        for name in METHODS:
            found.append(
                {
                    "device": device,
                    "T": T,
                    "method": name,
                    "time_ms": bench.significant(times[name]),
                    # steps that must run one after the other in the layer
                    "sequential_steps": T if name == "gru" else 1,
                }
            )
    return found


def run(settings):
    """Every length on the CPU, and on the GPU when there is one: the results."""
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    found = [row for device in devices for row in rows(settings, device)]
    return {
        **bench.provenance(),
        "settings": asdict(settings),
        "measures": "median time of one training step (forward, mean, backward)",
        "rows": found,
    }


def table(results):
    """The results as a text table: one line per device and length."""
    lines = [
        f"{'device':6} {'T':>5} {'gru ms':>9} {'attention ms':>13} "
        f"{'gru/attention':>14}"
    ]
    by_key = {(r["device"], r["T"], r["method"]): r["time_ms"] for r in results["rows"]}
    for device, T in dict.fromkeys((r["device"], r["T"]) for r in results["rows"]):
        gru, attention = by_key[device, T, "gru"], by_key[device, T, "attention"]
        lines.append(
            f"{device:6} {T:>5} {gru:>9.2f} {attention:>13.2f} {gru / attention:>14.2f}"
        )
    return "\n".join(lines)


def default_out(quick, has_cuda):
    """Where results go without ``--out``: the package's data, or ``_build/bench/``
    for a quick run (so that it never replaces a full run's file)."""
    return bench.default_out(quick, has_cuda, "history")


# --- scores: additive against dot product ---------------------------------------


@dataclass(frozen=True)
class ScoreSettings:
    """The shapes of Chapter 10's live timing of the two scorings."""

    batch: int = 8
    length: int = 128  # queries, and as many keys
    width: int = 64  # d_q = d_k = d_a
    warmup: int = 2
    repeats: int = 9


QUICK_SCORES = ScoreSettings(batch=2, length=16, width=8, warmup=1, repeats=1)
"""``--part scores --quick``: small shapes and one repeat."""


def scorings(settings):
    """``{method: call}``: the two scorings of seeded queries and keys, each a
    zero-argument call that returns the ``(B, T_q, T_k)`` scores."""
    torch.manual_seed(0)
    B, T, d = settings.batch, settings.length, settings.width
    q, k = torch.randn(B, T, d), torch.randn(B, T, d)  # (B, T_q, d), (B, T_k, d)
    additive = AdditiveAttention(d, d, d)

    def additive_scores():  # (B, T_q, T_k, d_a) through tanh, then v
        pairs = additive.W_query(q)[:, :, None] + additive.W_key(k)[:, None]
        return additive.v(torch.tanh(pairs)).squeeze(-1)

    def dot_scores():  # one matrix product
        return q @ k.transpose(1, 2) / d**0.5

    return {"additive": additive_scores, "dot": dot_scores}


def score_rows(settings):
    """One row per scoring: the median time of computing the scores, in ms."""
    with torch.no_grad():
        times = median_ms(scorings(settings), "cpu", settings)
    return [
        {"method": name, "time_ms": bench.significant(time_ms)}
        for name, time_ms in times.items()
    ]


# --- lengths: Chapter 10's experiment ---------------------------------------------


@dataclass(frozen=True)
class LengthSettings:
    """The data, seeds and training of the runs of Chapter 10's experiment."""

    train_pairs: int = 8_000  # Chapter 6's split
    val_pairs: int = 500
    test_pairs: int = 1_000
    split_seed: int = 0
    train_subset: int = 1_000  # the first training pairs, scored like the test
    seeds: tuple[int, ...] = (0, 1, 2)
    epochs: int = 2
    warmup_steps: int = 50
    long_models: tuple[str, ...] = ("GRU",)  # also trained long_epochs
    long_epochs: int = 10


QUICK_LENGTHS = LengthSettings(
    train_pairs=64, val_pairs=1, test_pairs=32, train_subset=16, seeds=(0,),
    epochs=1, warmup_steps=1, long_epochs=2,
)  # fmt: skip
"""``--part lengths --quick``: a few pairs, one seed, one epoch."""


def length_rows(settings):
    """The result of :func:`attn_course.history.length_run` for every model and
    seed, then for the long runs; each run's line is printed as it ends."""
    splits = translation.make_splits(
        settings.train_pairs,
        settings.val_pairs,
        settings.test_pairs,
        seed=settings.split_seed,
    )
    src_vocab, tgt_vocab = translation.source_vocab(), translation.target_vocab()
    data = [
        translation.make_batch(pairs, src_vocab, tgt_vocab)
        for pairs in (
            splits.train,
            splits.test,
            splits.train[: settings.train_subset],
        )
    ]
    runs = [
        (name, seed, settings.epochs)
        for seed in settings.seeds
        for name in history.LENGTH_WIDTHS
    ] + [
        (name, seed, settings.long_epochs)
        for name in settings.long_models
        for seed in settings.seeds
    ]
    found = []
    for name, seed, epochs in runs:
        _, result = history.length_run(
            name,
            *data,
            seed=seed,
            epochs=epochs,
            warmup_steps=settings.warmup_steps,
        )
        print(length_line(result), flush=True)
        found.append(result)
    return found


def length_line(row):
    """One run as a line of text: model, seed, epochs, exact match, time."""
    return (
        f"{row['model']:<16} seed {row['seed']}, {row['epochs']:>2} epochs: "
        f"train {row['train_exact_match']:6.1%}, test {row['test_exact_match']:6.1%}"
        f" ({row['parameters']:,} parameters, {row['seconds']:.0f} s)"
    )


def length_table(results):
    """Mean and range over the seeds of the test exact match of each model."""
    groups = {}
    for row in results["rows"]:
        groups.setdefault((row["model"], row["epochs"]), []).append(row)
    lines = []
    for (name, epochs), rows in groups.items():
        test = [row["test_exact_match"] for row in rows]
        lines.append(
            f"{name:<16} {epochs:>2} epochs, {len(rows)} seeds: test mean "
            f"{statistics.mean(test):6.1%}, from {min(test):6.1%} to {max(test):6.1%}"
        )
    return "\n".join(lines)


def scores_part(quick):
    """``--part scores``: the results, and the lines that print them."""
    settings = QUICK_SCORES if quick else ScoreSettings()
    rows = score_rows(settings)
    results = {
        **bench.provenance(),
        "settings": asdict(settings),
        "measures": "median time of the (B, T_q, T_k) scores, no gradients",
        "rows": rows,
    }
    return results, [f"{row['method']:<9} {row['time_ms']:9.3f} ms" for row in rows]


def lengths_part(quick):
    """``--part lengths``: the results, and the lines that print them."""
    settings = QUICK_LENGTHS if quick else LengthSettings()
    rows = length_rows(settings)
    results = {
        **bench.provenance(),
        "settings": {**asdict(settings), "widths": history.LENGTH_WIDTHS},
        "measures": "exact match of greedy translations after training",
        "rows": rows,
    }
    return results, [length_table(results)]


@dataclass(frozen=True)
class NormSettings:
    """What ``--part norms`` trains; stored in the file next to the results."""

    seeds: tuple[int, ...] = (0, 1, 2, 3)
    steps: int = 1200
    eval_every: int = 50


QUICK_NORMS = NormSettings(seeds=(0,), steps=4, eval_every=2)


def norm_row(norm, seed, settings):
    """One run of ``--part norms``, as a row of its results."""
    losses = gpt.norm_run(
        norm == "pre-norm",
        seed=seed,
        steps=settings.steps,
        eval_every=settings.eval_every,
    )
    print(f"{norm:>9} seed {seed}: {losses[-1]:.3f}", flush=True)
    return {"norm": norm, "seed": seed, "val_loss": losses}


def norms_part(quick):
    """``--part norms``: the results, and the lines that print them. The runs
    share out over two processes of one thread each."""
    settings = QUICK_NORMS if quick else NormSettings()
    runs = [(n, s, settings) for n in ("pre-norm", "post-norm") for s in settings.seeds]
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=spawn) as pool:
        rows = list(pool.map(norm_row, *zip(*runs, strict=True)))
    lines = [
        f"{norm:>9}, {len(settings.seeds)} seeds, loss after {settings.steps} steps: "
        + " ".join(f"{row['val_loss'][-1]:.3f}" for row in rows if row["norm"] == norm)
        for norm in ("pre-norm", "post-norm")
    ]
    results = {
        **bench.provenance(),
        "settings": asdict(settings),
        "measures": "validation loss every eval_every steps",
        "rows": rows,
    }
    return results, lines


# --- the command ------------------------------------------------------------------

PARTS = ("steps", "scores", "lengths", "norms")


def main(argv: list[str] | None = None) -> int:
    chooser = argparse.ArgumentParser(add_help=False)
    chooser.add_argument("--part", choices=PARTS, default="steps")
    chosen, rest = chooser.parse_known_args(argv)
    args = bench.arguments(
        rest,
        __doc__,
        quick_help="small sizes and one repeat, to check that the command works",
        threads_default=1,
        threads_help="torch's CPU threads (default 1: see the module's docstring)",
    )
    if chosen.part == "steps":
        settings = QUICK if args.quick else Settings()
        out = args.out or default_out(args.quick, torch.cuda.is_available())
        results = run(settings)
        widths = (
            f"batch {settings.batch}, width {settings.width}: {results['measures']}, ms"
        )
        bench.report(results, out, [widths, table(results)])
        return 0
    unpinned = sorted(k for k, v in PINNED.items() if os.environ.get(k) != v)
    if chosen.part in ("lengths", "norms") and unpinned and not args.quick:
        print(
            f"not in the pinned numeric environment ({', '.join(unpinned)} not set): "
            "run python -m tools.reproducible run -- python -m tools.bench_history "
            f"--part {chosen.part}, so that seed 0 gives what its chapter trains live"
        )
        return 2
    part = {"scores": scores_part, "lengths": lengths_part, "norms": norms_part}
    results, lines = part[chosen.part](args.quick)
    stem = "norms" if chosen.part == "norms" else f"history-{chosen.part}"
    out = args.out or bench.default_out(args.quick, False, stem)
    bench.report(results, out, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
