"""Dated turning points of neural translation and of attention, and stored timings
(Chapter 10).

:data:`TIMELINE` is a small table: one :class:`Event` per paper (or talk), with
the year and month it was first made public, a short label, what kind of step it
was, and the key of its entry in the course's ``references.bib``. Chapter 10 draws
it with :func:`attn_course.diagrams.timeline`. :func:`stored_step_times` reads the
timings of ``make bench-history`` (``python -m tools.bench_history``) that travel
with the package.

Introduced in Chapter 10.
"""

from __future__ import annotations

from typing import NamedTuple

from .efficient import load_measured

__all__ = ["KINDS", "TIMELINE", "Event", "stored_step_times"]


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

    Raises
    ------
    ValueError
        If ``device`` is neither.
    FileNotFoundError
        If no run on ``device`` is stored; the message says how to make one.

    Examples
    --------
    >>> results = stored_step_times()
    >>> sorted({row["method"] for row in results["rows"]})
    ['attention', 'gru']
    """
    return load_measured("history", device, "step timings", "make bench-history")
