"""The toy sentences used throughout the course.

Each sentence comes with a tiny, hand-picked embedding, one row of ``D = 3``
numbers per token: no meaning learned from text, small enough to follow attention
by hand (Chapter 1). Every call builds a fresh ``float32`` tensor, so editing the
embeddings in one cell never changes what another cell receives.
Introduced in Chapter 1.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

__all__ = ["ToySentence", "hello_shiny_sun", "your_journey"]


class ToySentence(NamedTuple):
    """A short sentence together with one embedding row per token; unpacks like a pair.
    Introduced in Chapter 1.

    Shapes
    ------
    embeddings : (T, D)

    Examples
    --------
    >>> tokens, embeddings = hello_shiny_sun()
    >>> tokens
    ('Hello', 'shiny', 'sun!')
    >>> embeddings.shape
    torch.Size([3, 3])
    """

    tokens: tuple[str, ...]
    embeddings: torch.Tensor


def hello_shiny_sun() -> ToySentence:
    """Return the three-token sentence "Hello shiny sun!" of Chapter 1's worked example.
    Introduced in Chapter 1.

    Shapes
    ------
    embeddings : (3, 3)

    Examples
    --------
    >>> sentence = hello_shiny_sun()
    >>> sentence.embeddings
    tensor([[0.3400, 0.2200, 0.5400],
            [0.5300, 0.3400, 0.9800],
            [0.2900, 0.5400, 0.9300]])
    """
    embeddings = torch.tensor(
        [
            [0.34, 0.22, 0.54],  # Hello
            [0.53, 0.34, 0.98],  # shiny
            [0.29, 0.54, 0.93],  # sun!
        ],
        dtype=torch.float32,
    )
    return ToySentence(("Hello", "shiny", "sun!"), embeddings)


def your_journey() -> ToySentence:
    """Return the six-token sentence "Your journey starts with one step", the input of
    every module the course builds. Introduced in Chapter 1.

    Shapes
    ------
    embeddings : (6, 3)

    Examples
    --------
    >>> tokens, embeddings = your_journey()
    >>> tokens
    ('Your', 'journey', 'starts', 'with', 'one', 'step')
    >>> embeddings[0, 0] = 100.0  # each call returns its own tensor
    >>> your_journey().embeddings[0, 0]
    tensor(0.4300)
    """
    embeddings = torch.tensor(
        [
            [0.43, 0.15, 0.89],  # Your
            [0.55, 0.87, 0.66],  # journey
            [0.57, 0.85, 0.64],  # starts
            [0.22, 0.58, 0.33],  # with
            [0.77, 0.25, 0.10],  # one
            [0.05, 0.80, 0.55],  # step
        ],
        dtype=torch.float32,
    )
    return ToySentence(("Your", "journey", "starts", "with", "one", "step"), embeddings)
