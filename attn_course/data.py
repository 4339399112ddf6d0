"""The toy sentences used throughout the course.

Each sentence comes with a tiny, hand-picked embedding: one row of three numbers per
token. The numbers carry no meaning learned from text; they are small enough to follow
every step of attention by hand, which is what Chapter 1 does.

Every call builds a fresh ``float32`` tensor, so a reader who edits the embeddings in
one cell never changes what another cell (or another chapter) receives.

Shape letters are those of :mod:`attn_course.shapes`: ``T`` tokens in the sentence,
``D`` the embedding width (3 for both toy sentences). Introduced in Chapter 1.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

__all__ = ["ToySentence", "hello_shiny_sun", "your_journey"]


class ToySentence(NamedTuple):
    """A short sentence together with one embedding row per token.

    ``len(tokens)`` equals the number of rows ``T`` of ``embeddings``.
    Introduced in Chapter 1.

    Attributes
    ----------
    tokens : tuple of str
        The words of the sentence, in order.
    embeddings : torch.Tensor
        One row per token, in the same order as ``tokens``.

    Shapes
    ------
    embeddings : (T, D)

    Examples
    --------
    A ``ToySentence`` unpacks like a pair:

    >>> tokens, embeddings = hello_shiny_sun()
    >>> tokens
    ('Hello', 'shiny', 'sun!')
    >>> embeddings.shape
    torch.Size([3, 3])
    """

    tokens: tuple[str, ...]
    embeddings: torch.Tensor


def hello_shiny_sun() -> ToySentence:
    """Return the three-token sentence "Hello shiny sun!".

    The sentence of Chapter 1's worked example, small enough to compute attention
    by hand. Introduced in Chapter 1.

    Returns
    -------
    ToySentence
        ``tokens`` is ``("Hello", "shiny", "sun!")``; ``embeddings`` is a new
        ``float32`` tensor on every call, one row of ``D = 3`` numbers per token.

    Shapes
    ------
    embeddings : (3, 3)

    Examples
    --------
    >>> sentence = hello_shiny_sun()
    >>> sentence.tokens
    ('Hello', 'shiny', 'sun!')
    >>> sentence.embeddings
    tensor([[0.3400, 0.2200, 0.5400],
            [0.5300, 0.3400, 0.9800],
            [0.2900, 0.5400, 0.9300]])
    >>> sentence.embeddings.dtype
    torch.float32

    The row of "shiny" is the query of Chapter 1's worked example:

    >>> sentence.embeddings[sentence.tokens.index("shiny")]
    tensor([0.5300, 0.3400, 0.9800])
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
    """Return the six-token sentence "Your journey starts with one step".

    The running example from Chapter 1 on: the input of every module the course
    builds. Introduced in Chapter 1.

    Returns
    -------
    ToySentence
        ``tokens`` is ``("Your", "journey", "starts", "with", "one", "step")``;
        ``embeddings`` is a new ``float32`` tensor on every call.

    Shapes
    ------
    embeddings : (6, 3)

    Examples
    --------
    >>> tokens, embeddings = your_journey()
    >>> tokens
    ('Your', 'journey', 'starts', 'with', 'one', 'step')
    >>> embeddings.shape
    torch.Size([6, 3])
    >>> embeddings[1]  # the row of "journey"
    tensor([0.5500, 0.8700, 0.6600])

    Each call returns its own tensor, so editing one copy leaves the next call intact:

    >>> embeddings[0, 0] = 100.0
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
