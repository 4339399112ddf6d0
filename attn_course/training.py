"""Pieces of training shared by the course's models.

:func:`lr_at` is the learning-rate schedule of Chapters 6 and 8 (a linear warm-up,
then half a cosine); :func:`count_parameters` counts what a model learns;
:func:`evaluating` switches a model to eval mode for a ``with`` block.

Introduced in Chapter 6.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

from torch import nn

from ._validate import kind_of

__all__ = ["count_parameters", "evaluating", "lr_at"]


def lr_at(step, *, max_lr, warmup_steps, total_steps, min_lr=0.0):
    """The learning rate at ``step``: linear warm-up, then a cosine down to min_lr.

    Steps ``0 .. warmup_steps - 1`` climb from ``max_lr / warmup_steps`` to
    ``max_lr``; from step ``warmup_steps`` on, the rate follows half a cosine from
    ``max_lr`` towards ``min_lr``, which it would reach at ``total_steps``.
    Introduced in Chapter 6 (Chapter 8 names it).

    Examples
    --------
    >>> [round(lr_at(s, max_lr=1.0, warmup_steps=2, total_steps=6), 3)
    ...  for s in range(6)]
    [0.5, 1.0, 1.0, 0.854, 0.5, 0.146]
    """
    if step < warmup_steps:
        return max_lr * (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    factor = 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))
    return min_lr + (max_lr - min_lr) * factor


def count_parameters(model):
    """Number of trainable parameters; a tensor shared by two layers counts once.

    Introduced in Chapter 6.

    Examples
    --------
    >>> count_parameters(nn.Linear(3, 2))  # 3 * 2 weights + 2 biases
    8
    """
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


@contextmanager
def evaluating(model):
    """Put ``model`` in eval mode for a ``with`` block, then restore its modes.

    Eval mode turns dropout off, so that a model measured or decoded inside the
    block gives its deterministic output. On leaving the block, every submodule gets
    back the mode it had before, also when the block raises; a model that was
    training goes on training. Introduced in Chapter 6.

    Parameters
    ----------
    model : torch.nn.Module

    Yields
    ------
    torch.nn.Module
        ``model`` itself, in eval mode.

    Examples
    --------
    >>> model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
    >>> with evaluating(model):
    ...     model.training, model[1].training
    (False, False)
    >>> model.training, model[1].training
    (True, True)
    """
    if not isinstance(model, nn.Module):
        raise TypeError(
            f"model must be a torch.nn.Module, got {kind_of(model)}; pass the model "
            "itself, e.g. with evaluating(model):"
        )
    modes = [(module, module.training) for module in model.modules()]
    model.eval()
    try:
        yield model
    finally:
        for module, training in modes:
            module.training = training
