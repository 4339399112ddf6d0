"""Two small tasks that need order: copy the previous token, or the first (Chapter 7).

Every sequence is random tokens; the target at position ``t`` is the token at
position ``t - 1``. A model whose attention sees no positions cannot tell which of
the tokens before ``t`` came last, so it can only guess among them; a model with
positions can attend to exactly one place, one step back.

- :func:`previous_token_batch` draws a batch of sequences and their targets;
- :func:`first_token_batch` draws sequences whose target is always the first
  token: at position ``t`` that is ``t`` tokens back, so on sequences longer than
  the training ones the model needs distances it never saw;
- :func:`train` fits a model to fresh batches with Adam and returns the losses;
- :func:`accuracy_by_position` measures, at every position, how often the model's
  most likely token is the target.

The model is any module that maps token ids ``(B, T)`` to logits
``(B, T, vocab_size)``; Chapter 7 writes one with each way of giving positions.

Shapes
------
ids : (B, T)
targets : (B, T)
logits : (B, T, vocab_size)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ._validate import kind_of, require_int, require_positive, require_tensor

__all__ = ["accuracy_by_position", "first_token_batch", "previous_token_batch", "train"]

IGNORE = -100  # the target of position 0, which has no previous token


def previous_token_batch(batch_size, length, vocab_size, *, generator):
    """Random sequences and their targets: the token one position back.

    Introduced in Chapter 7.

    Parameters
    ----------
    batch_size : int
        Sequences ``B``.
    length : int
        Tokens per sequence ``T``, at least 2.
    vocab_size : int
        Token ids are drawn uniformly from ``0 .. vocab_size - 1``; at least 2.
    generator : torch.Generator
        The source of the random tokens, so that a batch can be drawn again.

    Returns
    -------
    ids : torch.Tensor
        Int64 token ids.
    targets : torch.Tensor
        Int64: ``targets[:, t] = ids[:, t - 1]``, and :data:`IGNORE` (-100, the
        value ``F.cross_entropy`` skips) at position 0.

    Shapes
    ------
    ids : (B, T)
    targets : (B, T)

    Examples
    --------
    >>> ids, targets = previous_token_batch(
    ...     1, 5, 10, generator=torch.Generator().manual_seed(0)
    ... )
    >>> ids
    tensor([[4, 9, 3, 0, 3]])
    >>> targets
    tensor([[-100,    4,    9,    3,    0]])
    """
    B = require_int(batch_size, "batch_size")
    T = require_int(length, "length", minimum=2, hint="position 0 has no target")
    V = require_int(vocab_size, "vocab_size", minimum=2, hint="one token is no task")
    if not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator, got {kind_of(generator)}; pass "
            "e.g. generator=torch.Generator().manual_seed(0)"
        )
    ids = torch.randint(V, (B, T), generator=generator)  # (B, T)
    targets = torch.full_like(ids, IGNORE)  # (B, T)
    targets[:, 1:] = ids[:, :-1]  # the token one position back
    return ids, targets


def first_token_batch(batch_size, length, vocab_size, *, generator):
    """Random sequences whose target at every position ``t >= 1`` is the token at 0.

    Takes the arguments of :func:`previous_token_batch` and returns the same kind
    of batch. Introduced in Chapter 7.

    Examples
    --------
    >>> ids, targets = first_token_batch(
    ...     1, 5, 10, generator=torch.Generator().manual_seed(0)
    ... )
    >>> ids
    tensor([[4, 9, 3, 0, 3]])
    >>> targets
    tensor([[-100,    4,    4,    4,    4]])
    """
    ids, targets = previous_token_batch(
        batch_size, length, vocab_size, generator=generator
    )
    targets[:, 1:] = ids[:, :1]  # (B, 1) broadcast over positions 1 .. T-1
    return ids, targets


def _logits(model, ids, vocab_size=None):
    """``model(ids)``, checked to be logits of shape ``(B, T, vocab_size)``."""
    logits = model(ids)
    require_tensor(logits, "the model's output")
    if vocab_size is None and logits.dim() == 3:
        vocab_size = logits.shape[-1]
    expected = (*ids.shape, vocab_size or "vocab_size")
    if tuple(logits.shape) != expected:
        raise ValueError(
            f"the model must map ids {tuple(ids.shape)} to logits (B, T, vocab_size) "
            f"= {expected}, got shape {tuple(logits.shape)}"
        )
    return logits


def train(model, *, steps, batch_size, length, vocab_size, lr, seed, task=None):
    """Fit ``model`` to fresh batches of a task with Adam (default: previous token).

    Each of the ``steps`` steps draws a new batch (from a generator seeded with
    ``seed``), computes the cross-entropy of the logits against the targets
    (position 0 skipped) and takes one Adam step with learning rate ``lr``. The
    model is left in training mode, as it was given. Introduced in Chapter 7.

    Parameters
    ----------
    model : torch.nn.Module
        Maps ids ``(B, T)`` to logits ``(B, T, vocab_size)``.
    steps, batch_size, length, vocab_size : int
        Number of steps, and the size of each batch (see
        :func:`previous_token_batch`).
    lr : float
        Learning rate, positive.
    seed : int
        Seed of the batches.
    task : callable, optional
        Draws a batch, like :func:`previous_token_batch` (the default) or
        :func:`first_token_batch`.

    Returns
    -------
    list of float
        The loss of every step, in nats per token.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> model = torch.nn.Sequential(torch.nn.Embedding(4, 8), torch.nn.Linear(8, 4))
    >>> losses = train(model, steps=3, batch_size=2, length=5, vocab_size=4,
    ...                lr=0.01, seed=0)
    >>> len(losses)
    3
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(
            f"model must be a torch.nn.Module, got {kind_of(model)}; pass the model "
            "itself, not its output"
        )
    steps = require_int(steps, "steps")
    task = previous_token_batch if task is None else task
    if not callable(task):
        raise TypeError(
            f"task must draw a batch, got {kind_of(task)}; pass e.g. "
            "task=order_task.first_token_batch"
        )
    lr = require_positive(lr, "lr", hint="e.g. lr=0.01")
    generator = torch.Generator().manual_seed(require_int(seed, "seed", minimum=0))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        ids, targets = task(batch_size, length, vocab_size, generator=generator)
        logits = _logits(model, ids, vocab_size)  # (B, T, vocab_size)
        loss = F.cross_entropy(
            logits.reshape(-1, vocab_size), targets.reshape(-1), ignore_index=IGNORE
        )
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def accuracy_by_position(model, ids, targets):
    """How often the model's most likely token is the target, at each position.

    Runs the model in evaluation mode without gradients (and puts back the mode it
    was in). Introduced in Chapter 7.

    Parameters
    ----------
    model : torch.nn.Module
        Maps ids ``(B, T)`` to logits ``(B, T, vocab_size)``.
    ids, targets : torch.Tensor
        A batch from :func:`previous_token_batch` or :func:`first_token_batch`.

    Returns
    -------
    torch.Tensor
        Float32 fractions in ``[0, 1]``, one per position; NaN where every target
        is :data:`IGNORE` (position 0).

    Shapes
    ------
    ids : (B, T)
    targets : (B, T)
    output : (T,)

    Examples
    --------
    >>> class Oracle(torch.nn.Module):  # predicts the previous token exactly
    ...     def forward(self, ids):
    ...         previous = torch.roll(ids, 1, dims=1)
    ...         return F.one_hot(previous, 10).float()
    >>> ids, targets = previous_token_batch(
    ...     4, 6, 10, generator=torch.Generator().manual_seed(0)
    ... )
    >>> accuracy_by_position(Oracle(), ids, targets)
    tensor([nan, 1., 1., 1., 1., 1.])
    """
    ids = require_tensor(ids, "ids")
    targets = require_tensor(targets, "targets")
    if ids.dim() != 2 or ids.shape != targets.shape:
        raise ValueError(
            f"ids and targets must both have shape (B, T), got {tuple(ids.shape)} "
            f"and {tuple(targets.shape)}; use a batch of previous_token_batch"
        )
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            predicted = _logits(model, ids).argmax(dim=-1)  # (B, T)
    finally:
        model.train(was_training)
    counted = targets != IGNORE  # (B, T)
    right = ((predicted == targets) & counted).sum(dim=0).float()  # (T,)
    return right / counted.sum(dim=0).float()  # 0 / 0 = NaN at position 0
