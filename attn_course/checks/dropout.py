"""Self-checks for Chapter 4, dropout on attention weights."""

from __future__ import annotations

import torch

from ..data import your_journey
from ._common import (
    _built_with_seed,
    _call,
    _fmt_values,
    _matches,
    _require_callable,
    _require_close,
    _require_finite,
    _require_shape,
    _require_tensor,
)

__all__ = [
    "check_dropout_fn",
    "check_eval_forward",
    "check_row_drop_probability",
]


def _dropout_inputs():
    """(description, weights, p) cases for check_dropout_fn; all weights positive,
    so a zero in the output can only mean a dropped weight."""
    generator = torch.Generator().manual_seed(0)
    return [
        (
            "a (100, 100) tensor of positive weights with p = 0.2",
            torch.rand(100, 100, generator=generator) + 0.5,
            0.2,
        ),
        (
            "a (2, 4, 6, 6) tensor of positive weights with p = 0.5",
            torch.rand(2, 4, 6, 6, generator=generator) + 0.5,
            0.5,
        ),
    ]


def check_dropout_fn(fn):
    """Check a hand-written (inverted) dropout for attention weights.

    ``fn(weights, p, generator)`` must drop each weight with probability ``p``
    (set it to 0), divide every kept weight by ``1 - p``, and draw its random numbers
    from ``generator`` only (``torch.rand(..., generator=generator)`` or
    ``torch.bernoulli(..., generator=generator)``), so that the same seeded generator
    gives the same result. Any way of drawing the mask is accepted: the check tests
    these properties, not one particular mask.

    Parameters
    ----------
    fn : callable
        Your dropout: takes ``(weights, p, generator)``, returns a tensor shaped like
        ``weights``.

    Returns
    -------
    None
        Prints one line starting with ✅ when all properties hold.

    Raises
    ------
    AssertionError
        If ``fn`` raises, returns a wrong shape, changes a weight when ``p = 0``,
        scales kept weights wrongly (no rescaling, ``1/p`` or ``1 - p`` are named),
        drops far more or fewer weights than ``p`` (5 standard deviations), uses the
        global random generator, is not reproducible with the same seeded generator,
        or changes its input in place.

    Shapes
    ------
    weights : any shape -> fn(weights, p, generator) : the same shape.

    Examples
    --------
    >>> import torch
    >>> def dropout(weights, p, generator):
    ...     keep = torch.rand(weights.shape, generator=generator) >= p
    ...     return torch.where(keep, weights / (1 - p), 0.0)
    >>> check_dropout_fn(dropout)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_dropout_fn: your dropout is correct; it drops each weight with
    probability p, divides the kept ones by 1 - p, leaves the weights alone for
    p = 0, and draws only from the generator it is given.

    Forgetting to rescale is caught:

    >>> def unscaled(weights, p, generator):
    ...     keep = torch.rand(weights.shape, generator=generator) >= p
    ...     return torch.where(keep, weights, 0.0)
    >>> check_dropout_fn(unscaled)
    Traceback (most recent call last):
    ...
    AssertionError: check_dropout_fn: ... kept weights are not rescaled: ...
    """
    check = "check_dropout_fn"
    _require_callable(fn, check, "dropout")
    name = f"{check}: your output"
    for description, original, p in _dropout_inputs():
        where = f" on {description}"
        x = original.clone()
        global_state = torch.random.get_rng_state()
        out = _call(fn, check, (x, p, torch.Generator().manual_seed(1)), description)
        used_global = not torch.equal(global_state, torch.random.get_rng_state())
        torch.random.set_rng_state(global_state)
        out = _require_tensor(out, name, where)
        _require_shape(out, original, name, where)
        _require_finite(out, name, where)
        if not torch.equal(x, original):
            raise AssertionError(
                f"{check}: your function changed its input{where} in place; "
                "return a new tensor, e.g. torch.where(keep, weights / (1 - p), 0.0)."
            )
        values = out.detach().to(torch.float64)
        source = original.to(torch.float64)
        kept = values != 0
        if not bool(kept.any()):
            raise AssertionError(
                f"{name}{where} is all zeros: every weight was dropped. Keep each "
                f"weight with probability 1 - p = {1 - p:g}."
            )
        ratio = values[kept] / source[kept]  # 1 / (1 - p) for correct dropout
        scalings = [
            (1 / (1 - p), None),
            (1.0, "the kept weights are not rescaled: divide them by 1 - p"),
            (1 / p, "the kept weights are divided by p: divide them by 1 - p"),
            (
                1 - p,
                "the kept weights are multiplied by 1 - p: divide by 1 - p instead "
                "(inverted dropout rescales in training, so eval needs nothing)",
            ),
        ]
        for scale, mistake in scalings:
            if bool(torch.allclose(ratio, torch.full_like(ratio, scale), rtol=1e-4)):
                if mistake is not None:
                    raise AssertionError(
                        f"{name}{where}: {mistake}. With p = {p:g}, every kept "
                        f"weight must become weight / {1 - p:g}, so that its "
                        "expected value stays what it was."
                    )
                break
        else:
            raise AssertionError(
                f"{name}{where}: every kept weight should be weight / (1 - p) = "
                f"weight * {1 / (1 - p):g}, but the ratios kept / original are "
                f"{_fmt_values(ratio)}. Multiply the whole tensor by one mask of 0s "
                "and 1s and divide by 1 - p."
            )
        dropped = 1.0 - float(kept.double().mean())
        n = values.numel()
        spread = 5 * (p * (1 - p) / n) ** 0.5  # 5 standard deviations of the rate
        if abs(dropped - p) > spread:
            swapped = abs(dropped - (1 - p)) <= spread
            hint = (
                f" That is close to 1 - p = {1 - p:g}: you dropped a weight with "
                "probability 1 - p. torch.bernoulli(probs) gives 1 with probability "
                "probs, so use probs = 1 - p for the KEEP mask (or keep where "
                "torch.rand(...) >= p)."
                if swapped
                else ""
            )
            raise AssertionError(
                f"{name}{where}: {dropped:.1%} of the {n} weights were dropped, but "
                f"with p = {p:g} the rate should be within {spread:.1%} of "
                f"{p:.0%}.{hint}"
            )
        if used_global:
            raise AssertionError(
                f"{check}: your function used the global random generator{where} "
                "(nn.Dropout, F.dropout and torch.rand without generator= all do). "
                "Draw from the generator you are given: "
                "torch.rand(weights.shape, generator=generator), or "
                "torch.bernoulli(probs, generator=generator)."
            )
        again = _call(
            fn,
            check,
            (original.clone(), p, torch.Generator().manual_seed(1)),
            description + " (second call)",
        )
        if not (isinstance(again, torch.Tensor) and torch.equal(again, out)):
            raise AssertionError(
                f"{check}: two calls with generators seeded alike gave different "
                f"results{where}; draw every random number from the generator "
                "argument, and nothing else."
            )
    weights = torch.softmax(torch.arange(12.0).reshape(3, 4) / 4, dim=-1)
    description = "a (3, 4) matrix of weights with p = 0"
    out = _call(fn, check, (weights.clone(), 0.0, torch.Generator()), description)
    out = _require_tensor(out, name, f" on {description}")
    _require_shape(out, weights, name, f" on {description}")
    _require_close(
        out,
        weights,
        name,
        f" on {description}",
        atol=1e-6,
        rtol=1e-6,
        hint="\nWith p = 0 nothing is dropped and 1 / (1 - p) = 1: the weights must "
        "come back unchanged.",
    )
    print(
        f"✅ {check}: your dropout is correct; it drops each weight with probability "
        "p, divides the kept ones by 1 - p, leaves the weights alone for p = 0, and "
        "draws only from the generator it is given."
    )


def check_row_drop_probability(answer, weights, p):
    """Check the probability that dropout removes ALL of a query's weights.

    Dropout drops each weight independently with probability ``p``. A query whose
    row has ``k`` nonzero weights loses all of them with probability ``p ** k``;
    weights that are already 0 (masked keys) cannot make a difference. Its context
    vector is then a vector of zeros for that training step.

    Parameters
    ----------
    answer : torch.Tensor
        Your probabilities, one per query (row of ``weights``).
    weights : torch.Tensor
        The attention weights before dropout, e.g. causal weights with zeros above
        the diagonal.
    p : float
        The dropout probability.

    Returns
    -------
    None
        Prints one line starting with ✅ when the probabilities are right.

    Raises
    ------
    AssertionError
        If ``answer`` is not a tensor, has another shape, or wrong values; the
        probability of keeping all weights, of dropping at least one, a count that
        includes masked keys, and ``p`` alone are named.

    Shapes
    ------
    weights : (..., T_q, T_k); answer : (..., T_q).

    Examples
    --------
    >>> import torch
    >>> causal = torch.tensor([[1.0, 0.0], [0.4, 0.6]])  # 1 and 2 nonzero weights
    >>> check_row_drop_probability(torch.tensor([0.1, 0.01]), causal, 0.1)
    ... # doctest: +NORMALIZE_WHITESPACE
    ✅ check_row_drop_probability: your probabilities are correct; a row with k
    nonzero weights loses all of them with probability p ** k.
    """
    check = "check_row_drop_probability"
    values = weights.detach().to("cpu", torch.float64)
    k = (values != 0).sum(dim=-1).to(torch.float64)  # (..., T_q)
    expected = p**k
    name = f"{check}: your probabilities"
    answer = _require_tensor(answer, name)
    _require_shape(answer, expected, name)
    _require_finite(answer, name)
    slips = [
        ((1 - p) ** k, "the probability that every weight is KEPT, (1 - p) ** k"),
        (
            1 - (1 - p) ** k,
            "the probability that AT LEAST ONE weight is dropped, 1 - (1 - p) ** k",
        ),
        (
            torch.full_like(k, p ** values.shape[-1]),
            f"p ** {values.shape[-1]} for every row: the masked keys were counted "
            "too. Their weights are 0 already, so only the k nonzero weights of a row "
            "matter",
        ),
        (
            torch.full_like(k, p),
            "p for every row: all k weights of a row must be dropped, independently, "
            "so multiply p by itself k times",
        ),
    ]
    hint = ""
    for candidate, slip in slips:
        if _matches(answer, candidate, atol=1e-6) and not _matches(
            candidate, expected, atol=1e-6
        ):
            hint = f"\nYour values match {slip}."
            break
    _require_close(answer, expected, name, atol=1e-6, rtol=1e-4, hint=hint)
    print(
        f"✅ {check}: your probabilities are correct; a row with k nonzero weights "
        "loses all of them with probability p ** k."
    )


def check_eval_forward(fn):
    """Check a function that runs a module deterministically and restores its mode.

    ``fn(module, x)`` must return ``module(x)`` computed with dropout switched off,
    and leave ``module.training`` as it found it: a module in training mode must
    still be in training mode afterwards, and one in eval mode in eval mode. It is
    tried on an ``attn_course.CausalAttention`` with ``dropout=0.5``.

    Parameters
    ----------
    fn : callable
        Your function: takes ``(module, x)``, returns the module's output.

    Returns
    -------
    None
        Prints one line starting with ✅ when it passes.

    Raises
    ------
    AssertionError
        If ``fn`` raises, returns something that is not the deterministic output (a
        function that relies on ``torch.no_grad()`` alone is named: it does not
        switch dropout off), or leaves the module in another mode than before.

    Shapes
    ------
    x : (B, T, d_in) -> fn(module, x) : (B, T, d_out).

    Examples
    --------
    >>> def eval_forward(module, x):
    ...     was_training = module.training
    ...     module.eval()
    ...     try:
    ...         return module(x)
    ...     finally:
    ...         module.train(was_training)
    >>> check_eval_forward(eval_forward)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_eval_forward: your function is correct; its output equals the module
    without dropout, twice in a row, and the module keeps its training or eval
    mode.
    """
    from ..modules import CausalAttention

    check = "check_eval_forward"
    _require_callable(fn, check, "eval_forward")
    module = _built_with_seed(123, lambda: CausalAttention(3, 2, 6, 0.5))
    reference = _built_with_seed(123, lambda: CausalAttention(3, 2, 6, 0.0))
    reference.load_state_dict(module.state_dict())  # the same weights, no dropout
    x = your_journey().embeddings.unsqueeze(0)  # (1, T, d_in): a batch of one
    with torch.no_grad():
        expected = reference(x)  # (1, T, d_out)
    state = torch.random.get_rng_state()
    try:
        for mode in ("training", "eval"):
            module.train(mode == "training")
            where = f" on a CausalAttention(3, 2, 6, dropout=0.5) in {mode} mode"
            outputs = []
            for _ in range(2):
                out = _call(fn, check, (module, x.clone()), f"a module in {mode} mode")
                outputs.append(_require_tensor(out, f"{check}: your output", where))
                _require_shape(outputs[-1], expected, f"{check}: your output", where)
                if module.training != (mode == "training"):
                    now = "training" if module.training else "eval"
                    raise AssertionError(
                        f"{check}: the module was in {mode} mode before your function "
                        f"and is in {now} mode after it. Remember the mode first, "
                        "was_training = module.training, and restore it at the end "
                        "with module.train(was_training)."
                    )
            first, second = (o.detach() for o in outputs)
            if not torch.equal(first, second):
                raise AssertionError(
                    f"{check}: two calls gave different outputs{where}: dropout is "
                    "still on. torch.no_grad() only stops gradient tracking; it does "
                    "not switch dropout off. Call module.eval() before the forward "
                    "pass."
                )
            _require_close(
                first,
                expected,
                f"{check}: your output",
                where,
                atol=1e-6,
                rtol=1e-5,
                hint="\nIt should equal module(x) in eval mode.",
            )
    finally:
        torch.random.set_rng_state(state)
    print(
        f"✅ {check}: your function is correct; its output equals the module without "
        "dropout, twice in a row, and the module keeps its training or eval mode."
    )
