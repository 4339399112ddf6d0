"""Dated turning points of neural translation and attention, Chapter 10's experiment
on sentence length, and stored measurements (Chapter 10).

:data:`TIMELINE` holds one :class:`Event` per paper or talk, drawn by
:func:`attn_course.diagrams.timeline`. :data:`LENGTH_WIDTHS` sizes the four models
of the length experiment; :func:`length_model` builds one and :func:`length_run`
trains and scores it. The ``stored_*`` functions read what
``python -m tools.bench_history`` measured, stored with the package.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import torch

from . import seq2seq, translation
from .efficient import load_measured
from .rnn import GRUSeq2Seq, exact_match_by_length

__all__ = [
    "KINDS",
    "LENGTH_WIDTHS",
    "TIMELINE",
    "Event",
    "length_model",
    "length_run",
    "stored_length_runs",
    "stored_scoring_times",
    "stored_step_times",
]


class Event(NamedTuple):
    """One dated row of :data:`TIMELINE`: ``month`` 1 to 12 (first made public, usually
    the first arXiv version) or 0 for the year alone; ``kind`` one of :data:`KINDS`;
    ``key`` the citation key in ``references.bib``. Introduced in Chapter 10.
    """

    year: int
    month: int
    label: str
    kind: str
    key: str


KINDS = ("recurrent", "attention", "transformer", "after")
"""The kinds of step in :data:`TIMELINE`: recurrent (and convolutional) models,
attention added to them, the transformer, and what came after it.
Introduced in Chapter 10.
"""

TIMELINE = (
    Event(1997, 0, "LSTM", "recurrent", "hochreiter1997long"),
    Event(2014, 6, "RNN encoder-decoder, GRU", "recurrent", "cho2014learning"),
    Event(2014, 9, "sequence to sequence (LSTM)", "recurrent", "sutskever2014sequence"),
    Event(2014, 9, "additive attention", "attention", "bahdanau2015neural"),
    Event(
        2015,
        8,
        "dot-product (global, local) attention",
        "attention",
        "luong2015effective",
    ),
    Event(2016, 9, "GNMT: deep LSTMs + attention", "attention", "wu2016google"),
    Event(2016, 10, "ByteNet (convolutions)", "recurrent", "kalchbrenner2016neural"),
    Event(
        2017,
        1,
        "sparse mixture of experts (in LSTMs)",
        "recurrent",
        "shazeer2017outrageously",
    ),
    Event(
        2017,
        5,
        "ConvS2S (convolutions + attention)",
        "attention",
        "gehring2017convolutional",
    ),
    Event(2017, 6, "the Transformer", "transformer", "vaswani2017attention"),
    Event(2018, 6, "GPT (decoder only)", "after", "radford2018improving"),
    Event(2018, 10, "BERT (encoder only)", "after", "devlin2019bert"),
    Event(2019, 10, "T5 (encoder-decoder)", "after", "raffel2020exploring"),
    Event(2020, 5, "GPT-3", "after", "brown2020language"),
    Event(2021, 1, "Switch Transformer", "after", "fedus2022switch"),
    Event(2021, 4, "rotary positions", "after", "su2021roformer"),
    Event(2021, 11, "S4 (state spaces)", "after", "gu2022efficiently"),
    Event(2022, 5, "FlashAttention", "after", "dao2022flashattention"),
    Event(2023, 11, "Vaswani's CS25 talk", "after", "vaswani2023talk"),
    Event(2023, 12, "Mamba (selective state spaces)", "after", "gu2023mamba"),
)
"""The dated events that Chapter 10's timeline draws, oldest first.
Introduced in Chapter 10.
"""


def stored_step_times(device="cpu"):
    """The stored times of one training step of a GRU layer and of a self-attention
    layer of the same width as ``T`` grows: ``rows`` with ``T``, ``method`` ("gru" or
    "attention"), ``time_ms`` and ``sequential_steps``. Introduced in Chapter 10.

    >>> sorted({row["method"] for row in stored_step_times()["rows"]})
    ['attention', 'gru']
    """
    return load_measured("history", device, "step timings", "make bench-history")


def stored_scoring_times(device="cpu"):
    """The stored times of additive and dot-product scores for the shapes Chapter 10
    times live: ``rows`` with ``method`` ("additive" or "dot") and ``time_ms``.
    Introduced in Chapter 10.

    >>> [row["method"] for row in stored_scoring_times()["rows"]]
    ['additive', 'dot']
    """
    return load_measured(
        "history-scores",
        device,
        "scoring timings",
        "python -m tools.bench_history --part scores",
    )


LENGTH_WIDTHS = {
    "GRU": 115,
    "GRU + summary": 102,
    "GRU + attention": 96,
    "transformer": 64,
}
"""``d_model`` of each model of Chapter 10's length experiment, so that all four have
about 175,000 parameters, as many as Chapter 6's transformer: the plain
:class:`~attn_course.rnn.GRUSeq2Seq`, with ``summary_every_step`` and with
``attention``, and the transformer. Introduced in Chapter 10.
"""


def length_model(name):
    """One untrained model of Chapter 10's experiment, ``name`` a key of
    :data:`LENGTH_WIDTHS`, for Chapter 6's vocabularies. Introduced in Chapter 10.

    >>> counts = [seq2seq.count_parameters(length_model(n)) for n in LENGTH_WIDTHS]
    >>> max(counts) / min(counts) < 1.01
    True
    """
    if name not in LENGTH_WIDTHS:
        raise ValueError(
            f"no model named {name!r} in the experiment; use one of "
            f"{list(LENGTH_WIDTHS)}"
        )
    sizes = len(translation.source_vocab()), len(translation.target_vocab())
    D = LENGTH_WIDTHS[name]
    if name == "transformer":
        return seq2seq.Seq2SeqTransformer(seq2seq.Seq2SeqConfig(*sizes, d_model=D))
    return GRUSeq2Seq(
        *sizes,
        d_model=D,
        attention=name == "GRU + attention",
        summary_every_step=name == "GRU + summary",
    )


def length_run(
    name, train_data, test_data, train_subset, *, seed, epochs, warmup_steps=50
):
    """Build, train and score one model of Chapter 10's experiment.

    ``torch.manual_seed(seed)``, :func:`length_model`, Chapter 6's
    :func:`~attn_course.seq2seq.train`, then greedy exact match on the test pairs by
    source length and on ``train_subset``. Returns the model (in eval mode) and a dict:
    ``model``, ``seed``, ``epochs``, ``parameters``, ``train_exact_match``,
    ``test_exact_match``, ``by_length`` and ``seconds``. Introduced in Chapter 10.
    """
    torch.manual_seed(seed)
    model = length_model(name)
    start = time.perf_counter()
    seq2seq.train(
        model,
        train_data,
        epochs=epochs,
        warmup_steps=warmup_steps,
        seed=seed,
        log=None,
    )
    seconds = time.perf_counter() - start
    table = exact_match_by_length(model, test_data)  # {length: (accuracy, count)}
    correct = sum(round(accuracy * count) for accuracy, count in table.values())
    return model, {
        "model": name,
        "seed": seed,
        "epochs": epochs,
        "parameters": seq2seq.count_parameters(model),
        "train_exact_match": seq2seq.exact_match(model, train_subset),
        "test_exact_match": correct / sum(count for _, count in table.values()),
        "by_length": [[n, accuracy, count] for n, (accuracy, count) in table.items()],
        "seconds": round(seconds, 1),
    }


def stored_length_runs(device="cpu"):
    """The stored runs of :func:`length_run`: every model of :data:`LENGTH_WIDTHS`,
    several seeds, and the plain GRU with five times the epochs.
    Introduced in Chapter 10.

    >>> runs = stored_length_runs()
    >>> sorted({row["model"] for row in runs["rows"]}) == sorted(LENGTH_WIDTHS)
    True
    """
    return load_measured(
        "history-lengths",
        device,
        "runs of the length experiment",
        "python -m tools.bench_history --part lengths",
    )
