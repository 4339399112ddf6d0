"""Dated turning points of neural translation and of attention, Chapter 10's
experiment on sentence length, and stored measurements (Chapter 10).

:data:`TIMELINE` is a small table: one :class:`Event` per paper (or talk), with
the year and month it was first made public, a short label, what kind of step it
was, and the key of its entry in the course's ``references.bib``. Chapter 10 draws
it with :func:`attn_course.diagrams.timeline`.

:data:`LENGTH_WIDTHS` sizes the four models of Chapter 10's experiment so that each
has about 175,000 parameters; :func:`length_model` builds one and
:func:`length_run` trains and scores it. The readers of stored results,
:func:`stored_step_times`, :func:`stored_scoring_times` and
:func:`stored_length_runs`, return what ``python -m tools.bench_history`` measured,
in files that travel with the package.

Introduced in Chapter 10.
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
    """One dated row of :data:`TIMELINE`. Introduced in Chapter 10.

    Attributes
    ----------
    year : int
    month : int
        1 to 12: when the work was first made public (for most papers, its first
        arXiv version, whose number starts with the year and month); 0 when only
        the year is given.
    label : str
        A few words for the figure.
    kind : str
        One of :data:`KINDS`.
    key : str
        The citation key in ``references.bib``.
    """

    year: int
    month: int
    label: str
    kind: str
    key: str


KINDS = ("recurrent", "attention", "transformer", "after")
"""The kinds of step in :data:`TIMELINE`: recurrent and convolutional models,
attention added to them, the transformer, and what was built on it or looks
beyond it.
Introduced in Chapter 10."""

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

Introduced in Chapter 10."""


def stored_step_times(device="cpu"):
    """The results of ``make bench-history`` stored with the package, as a dict.

    ``python -m tools.bench_history`` times one training step (forward and
    backward) of a GRU layer and of a self-attention layer of the same width as
    the length ``T`` grows. The dict holds ``date``, ``machine``, ``torch``,
    ``settings`` and ``rows``, one per method and length, each with ``T``,
    ``method`` (``"gru"`` or ``"attention"``), ``time_ms`` and
    ``sequential_steps``. Introduced in Chapter 10.

    Parameters
    ----------
    device : {"cpu", "cuda"}, default "cpu"

    Examples
    --------
    >>> results = stored_step_times()
    >>> sorted({row["method"] for row in results["rows"]})
    ['attention', 'gru']
    """
    return load_measured("history", device, "step timings", "make bench-history")


def stored_scoring_times(device="cpu"):
    """The timings of additive and dot-product scores stored with the package.

    ``python -m tools.bench_history --part scores`` times the scores of every
    query against every key, additive (a hidden layer of ``d_a`` units and a
    ``tanh`` for every pair) and dot product (one matrix product), for the shapes
    that Chapter 10 times live. The dict holds ``date``, ``machine``, ``torch``,
    ``settings`` and ``rows``, one per method, each with ``method``
    (``"additive"`` or ``"dot"``) and ``time_ms``. Introduced in Chapter 10.

    Parameters
    ----------
    device : {"cpu", "cuda"}, default "cpu"

    Examples
    --------
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
"""``d_model`` of each model of Chapter 10's experiment on sentence length, chosen so
that all four have about 175,000 parameters on Chapter 6's vocabularies, as many as
Chapter 6's transformer (2 + 2 layers, 4 heads, ``d_ff = 128``). ``"GRU"`` is the
plain :class:`~attn_course.rnn.GRUSeq2Seq`, ``"GRU + summary"`` the one with
``summary_every_step=True`` (Cho et al., 2014), ``"GRU + attention"`` the one with
``attention=True`` (Bahdanau et al., 2015). Introduced in Chapter 10."""


def length_model(name):
    """One model of Chapter 10's experiment, untrained, with its width from
    :data:`LENGTH_WIDTHS`, for Chapter 6's vocabularies. Introduced in Chapter 10.

    Parameters
    ----------
    name : str
        A key of :data:`LENGTH_WIDTHS`.

    Returns
    -------
    GRUSeq2Seq or attn_course.seq2seq.Seq2SeqTransformer

    Examples
    --------
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

    ``torch.manual_seed(seed)`` before :func:`length_model`, then Chapter 6's
    :func:`~attn_course.seq2seq.train` (``seed`` shuffles the batches), then the
    exact match of greedy translations: on the test pairs by source length, and on
    ``train_subset``, pairs the model was trained on. Introduced in Chapter 10.

    Parameters
    ----------
    name : str
        A key of :data:`LENGTH_WIDTHS`.
    train_data, test_data, train_subset : attn_course.translation.Batch
    seed, epochs : int
    warmup_steps : int, default 50

    Returns
    -------
    model : torch.nn.Module
        Trained, in eval mode.
    result : dict
        ``model`` (the name), ``seed``, ``epochs``, ``parameters``,
        ``train_exact_match``, ``test_exact_match``, ``by_length`` (a list of
        ``[source length, accuracy, number of test pairs]``) and ``seconds``, the
        time training took.
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
    """The runs of Chapter 10's experiment on sentence length stored with the
    package: every model of :data:`LENGTH_WIDTHS`, several seeds.

    ``python -m tools.bench_history --part lengths`` calls :func:`length_run` for
    each model and seed, and for the plain GRU with five times the epochs too.
    The dict holds ``date``, ``machine``, ``torch``, ``settings`` and ``rows``,
    the ``result`` dicts of :func:`length_run`. Introduced in Chapter 10.

    Parameters
    ----------
    device : {"cpu", "cuda"}, default "cpu"

    Examples
    --------
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
