"""The stored runs of Chapter 12's associative-recall experiment.

``make bench-recall`` runs ``python -m tools.bench_recall`` in the course's pinned
numeric environment (``python -m tools.reproducible run -- ...``), so that seed 0
gives what the chapter would train live. Every mixer of
``attn_course.recall.MIXERS`` (softmax attention, causal linear attention, DeltaNet,
Gated DeltaNet, a GRU and the hybrid of Gated DeltaNet and one softmax layer) is
trained by ``attn_course.recall.recall_run`` (``d_model=32``, one head, 2 layers,
16 queries, 64 keys and 64 values, the same steps for every mixer) for each number of
pairs and seed, two processes of one thread each.

Each mixer trains at its own learning rate: first every mixer trains once at each
rate of ``Settings.lr_grid``, at ``Settings.tune_pairs`` pairs with the seed
``Settings.tune_seed`` (not one of the reported seeds), and the rate of the best
held-out accuracy is kept (of the lower final training loss on a tie). One file,
``attn_course/measured/recall-cpu.json``, which
``attn_course.recall.stored_recall_runs()`` reads: ``settings`` (with ``lr``, the rate
chosen for each mixer), ``tuning`` (one row per mixer and rate) and ``rows``, each
with ``mixer``, ``num_pairs``, ``seed``, ``lr``, ``accuracy`` (on 512 held-out
sequences), ``final_loss``, ``parameters``, ``growing_per_token`` and
``fixed_state`` (the numbers the model keeps: per token of context, and whatever the
length).

``--quick`` trains for a few steps and one seed, to check that the command works,
and writes to ``_build/bench/`` unless ``--out`` is given.
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import asdict, dataclass

import torch

from attn_course.recall import MIXERS, accuracy_by_mixer, recall_run
from tools import bench


@dataclass(frozen=True)
class Settings:
    """What one run measures; stored in the file next to the results."""

    seeds: tuple[int, ...] = (0, 1, 2)
    num_pairs: tuple[int, ...] = (8, 16, 32, 64)
    steps: int = 1000
    num_layers: int = 2
    lr_grid: tuple[float, ...] = (3e-3, 1e-2, 3e-2)
    tune_pairs: int = 32
    tune_seed: int = 9


QUICK = Settings(seeds=(0,), num_pairs=(8,), steps=3, lr_grid=(1e-2,))


def one_run(mixer, num_pairs, seed, lr, settings):
    """Train one model and measure it: a row of the results."""
    torch.set_num_threads(1)
    found = recall_run(
        mixer,
        num_pairs,
        seed=seed,
        steps=settings.steps,
        lr=lr,
        num_layers=settings.num_layers,
    )
    print(
        f"{mixer:>14} N={num_pairs:>3} seed {seed} lr {lr:g}: {found['accuracy']:.3f}",
        flush=True,
    )
    return {"mixer": mixer, "num_pairs": num_pairs, "seed": seed, "lr": lr, **found}


def best_rates(tuning):
    """The learning rate of each mixer's best accuracy, the lower final training
    loss breaking a tie (as at 100 %)."""
    best = {}
    for row in tuning:
        score = (row["accuracy"], -row["final_loss"])
        if row["mixer"] not in best or score > best[row["mixer"]][1]:
            best[row["mixer"]] = (row["lr"], score)
    return {mixer: lr for mixer, (lr, _) in best.items()}


def table(rows):
    """Mean and range over the seeds of each mixer's accuracy at each N."""
    return [
        f"{mixer:>14} N={n:>3}: mean {statistics.mean(acc):.3f}, from "
        f"{min(acc):.3f} to {max(acc):.3f}"
        for mixer, by_pairs in accuracy_by_mixer(rows).items()
        for n, acc in by_pairs.items()
    ]


def main(argv: list[str] | None = None) -> int:
    args = bench.training_arguments(argv, __doc__, "tools.bench_recall")
    if args is None:
        return 2
    settings = QUICK if args.quick else Settings()
    tuning = bench.in_two_processes(
        one_run,
        [
            (m, settings.tune_pairs, settings.tune_seed, lr)
            for m in MIXERS
            for lr in settings.lr_grid
        ],
        settings,
    )
    lr = best_rates(tuning)
    runs = [
        (m, n, s, lr[m])
        for m in MIXERS
        for n in settings.num_pairs
        for s in settings.seeds
    ]
    rows = bench.in_two_processes(one_run, runs, settings)
    results = {
        **bench.provenance(),
        "settings": {**asdict(settings), "lr": lr},
        "measures": "recall accuracy at the query positions of held-out sequences",
        "tuning": tuning,
        "rows": rows,
    }
    out = args.out or bench.default_out(args.quick, False, "recall")
    bench.report(results, out, table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
