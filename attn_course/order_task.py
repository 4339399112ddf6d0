"""Two small tasks that need order: copy the previous token, or the first (Chapter 7).

The target at position ``t`` is the token at ``t - 1``: without positions a model
cannot tell which earlier token came last, so it can only guess among them.
:func:`previous_token_batch` draws such a batch; :func:`first_token_batch` one whose
target is always the first token, ``t`` steps back, so longer sequences need
distances never trained on; :func:`train` fits a model with Adam;
:func:`accuracy_by_position` measures it at every position. The model is any module
mapping ids ``(B, T)`` to logits ``(B, T, vocab_size)``.

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

    Tokens are uniform in ``0 .. vocab_size - 1``; ``targets[:, t] = ids[:, t - 1]`` and
    :data:`IGNORE` (-100, which ``F.cross_entropy`` skips) at position 0.
    Introduced in Chapter 7.

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
    """Like :func:`previous_token_batch`, but the target at every ``t >= 1`` is token 0.
    Introduced in Chapter 7.

    >>> ids, targets = first_token_batch(
    ...     1, 5, 10, generator=torch.Generator().manual_seed(0)
    ... )
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
    """Fit ``model`` to fresh batches of ``task`` (default :func:`previous_token_batch`)
    with Adam; return the loss of every step, in nats per token.

    The batches come from a generator seeded with ``seed``; position 0 is skipped. The
    model is left in training mode. Introduced in Chapter 7.
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
    """How often the model's most likely token is the target, at each position; NaN
    where every target is :data:`IGNORE`. Runs in eval mode without gradients.
    Introduced in Chapter 7.

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
