"""Self-checks for Chapter 4, dropout on attention weights.

Shapes
------
Letters: see attn_course.shapes.
weights : (..., T_q, T_k)
"""

from __future__ import annotations

import copy

import torch

from ..data import your_journey
from ._common import (
    expect_close,
    expect_finite,
    expect_shape,
    expect_tensor,
    fmt_values,
)
from ._kit import (
    Case,
    Slip,
    call,
    exercise_check,
    first_slip,
    matches,
    run_cases,
    seeded,
)

__all__ = [
    "check_dropout_fn",
    "check_eval_forward",
    "check_row_drop_probability",
]


def _dropout_cases():
    """Weights, p and a seeded generator: two cases with all weights positive (so a
    zero in the output can only mean a dropped weight), then p = 0."""
    generator = torch.Generator().manual_seed(0)
    inputs = [
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
        (
            "a (3, 4) matrix of weights with p = 0",
            torch.softmax(torch.arange(12.0).reshape(3, 4) / 4, dim=-1),
            0.0,
        ),
    ]
    return [
        Case(text, (weights, p, torch.Generator().manual_seed(1)))
        for text, weights, p in inputs
    ]


_DROPOUT_ARGS = ("weights", "p", "generator")
_DROPOUT_FIX = "return a new tensor, e.g. torch.where(keep, weights / (1 - p), 0.0)."


@exercise_check("fn")
def check_dropout_fn(fn):
    """Check a hand-written (inverted) dropout for attention weights.

    Introduced in Chapter 4. ``fn(weights, p, generator)`` must drop each weight
    with probability ``p`` (set it to 0), divide every kept weight by ``1 - p``, and
    draw its random numbers from ``generator`` only (``torch.rand(...,
    generator=generator)`` or ``torch.bernoulli(..., generator=generator)``), so
    that the same seeded generator gives the same result. Any way of drawing the
    mask is accepted: the check tests these properties, not one particular mask.

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
        If ``fn`` raises, changes its input in place, returns a wrong shape, scales
        kept weights wrongly (no rescaling, ``1/p`` or ``1 - p`` are named), drops
        far more or fewer weights than ``p`` (5 standard deviations), uses the
        global random generator, is not reproducible with the same seeded
        generator, or changes a weight when ``p = 0``.
    TypeError
        If ``fn`` is not a function, e.g. an ``nn.Dropout`` module.

    Shapes
    ------
    Letters: see attn_course.shapes.
    weights : (...)
    output : (...)

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
    name = f"{check}: your output"

    def verify(case, out):
        (original, p, _), where = case.args, case.where
        out = expect_tensor(out, name, where)
        expect_shape(out, original, name, where)
        if p == 0:
            expect_close(
                out,
                original,
                name,
                where,
                atol=1e-6,
                rtol=1e-6,
                hint="\nWith p = 0 nothing is dropped and 1 / (1 - p) = 1: the "
                "weights must come back unchanged.",
            )
            return
        expect_finite(out, name, where)
        values = out.detach().to(torch.float64)
        kept = values != 0
        if not bool(kept.any()):
            raise AssertionError(
                f"{name}{where} is all zeros: every weight was dropped. Keep each "
                f"weight with probability 1 - p = {1 - p:g}."
            )
        ratio = values[kept] / original.to(torch.float64)[kept]  # 1 / (1 - p)
        tolerance = {"atol": 1e-8, "rtol": 1e-4}
        if not matches(ratio, torch.full_like(ratio, 1 / (1 - p)), **tolerance):
            slips = [
                Slip(
                    torch.full_like(ratio, scale),
                    f"{mistake}. With p = {p:g}, every kept weight must become "
                    f"weight / {1 - p:g}, so that its expected value stays what it "
                    "was",
                )
                for scale, mistake in [
                    (1.0, "the kept weights are not rescaled: divide them by 1 - p"),
                    (1 / p, "the kept weights are divided by p: divide them by 1 - p"),
                    (
                        1 - p,
                        "the kept weights are multiplied by 1 - p: divide by 1 - p "
                        "instead (inverted dropout rescales in training, so eval "
                        "needs nothing)",
                    ),
                ]
            ]
            why = first_slip(ratio, slips, **tolerance) or (
                f"every kept weight should be weight / (1 - p) = weight * "
                f"{1 / (1 - p):g}, but the ratios kept / original are "
                f"{fmt_values(ratio)}. Multiply the whole tensor by one mask of 0s "
                "and 1s and divide by 1 - p"
            )
            raise AssertionError(f"{name}{where}: {why}.")
        dropped = 1.0 - float(kept.double().mean())
        n = values.numel()
        spread = 5 * (p * (1 - p) / n) ** 0.5  # 5 standard deviations of the rate
        if abs(dropped - p) > spread:
            hint = ""
            if abs(dropped - (1 - p)) <= spread:
                hint = (
                    f" That is close to 1 - p = {1 - p:g}: you dropped a weight with "
                    "probability 1 - p. torch.bernoulli(probs) gives 1 with "
                    "probability probs, so use probs = 1 - p for the KEEP mask (or "
                    "keep where torch.rand(...) >= p)."
                )
            raise AssertionError(
                f"{name}{where}: {dropped:.1%} of the {n} weights were dropped, but "
                f"with p = {p:g} the rate should be within {spread:.1%} of "
                f"{p:.0%}.{hint}"
            )
        state = torch.random.get_rng_state()  # only read: run_cases restores it
        again = call(
            fn,
            check,
            case._replace(description=f"{case.description} (second call)"),
            fix=_DROPOUT_FIX,
            names=_DROPOUT_ARGS,
        )
        if not torch.equal(state, torch.random.get_rng_state()):
            raise AssertionError(
                f"{check}: your function used the global random generator{where} "
                "(nn.Dropout, F.dropout and torch.rand without generator= all do). "
                "Draw from the generator you are given: "
                "torch.rand(weights.shape, generator=generator), or "
                "torch.bernoulli(probs, generator=generator)."
            )
        if not (isinstance(again, torch.Tensor) and torch.equal(again, out)):
            raise AssertionError(
                f"{check}: two calls with generators seeded alike gave different "
                f"results{where}; draw every random number from the generator "
                "argument, and nothing else."
            )

    run_cases(
        check,
        fn,
        _dropout_cases(),
        verify,
        example="dropout",
        names=_DROPOUT_ARGS,
        fix=_DROPOUT_FIX,
        success="your dropout is correct; it drops each weight with probability p, "
        "divides the kept ones by 1 - p, leaves the weights alone for p = 0, and "
        "draws only from the generator it is given.",
    )


def _row_drop_cases():
    """Weights with zeros (masked keys) and several p: random causal weights,
    whose rows have 1 to 6 nonzero weights, and a batch of padded rows with more
    keys than queries. The p differ from 0.5, where p ** k = (1 - p) ** k, except
    in one case."""
    generator = torch.Generator().manual_seed(0)
    causal = torch.softmax(
        torch.randn(6, 6, generator=generator).masked_fill(
            ~torch.ones(6, 6, dtype=torch.bool).tril(), -torch.inf
        ),
        dim=-1,
    )  # (T, T): k = 1, 2, ..., 6 nonzero weights
    lengths = torch.tensor([[2, 5, 1], [4, 3, 7]])  # (B, T_q): keys each query sees
    scores = torch.randn(2, 3, 7, generator=generator)  # (B, T_q, T_k)
    padded = torch.softmax(
        scores.masked_fill(torch.arange(7) >= lengths[..., None], -torch.inf), dim=-1
    )
    inputs = [
        ("causal (6, 6) weights with p = 0.1", causal, 0.1),
        ("a batch of (2, 3, 7) weights with zeros, p = 0.3", padded, 0.3),
        ("causal (6, 6) weights with p = 0.5", causal, 0.5),
        ("causal (6, 6) weights with p = 0.8", causal, 0.8),
    ]
    return [Case(text, (weights, p)) for text, weights, p in inputs]


def _row_drop_slips(weights, p):
    """The known slips of check_row_drop_probability on ``weights`` and ``p``."""
    values = weights.to(torch.float64)
    k = (values != 0).sum(dim=-1).to(torch.float64)  # (..., T_q, T_k) -> (..., T_q)
    T_q, T_k = values.shape[-2:]
    by_column = (values != 0).sum(dim=-2).to(torch.float64)  # (..., T_k)
    return [
        Slip(
            (1 - p) ** k,
            "Your values match the probability that every weight is KEPT, "
            "(1 - p) ** k. A weight is dropped with probability p, so all k of "
            "them are dropped with probability p ** k (the two agree only for "
            "p = 0.5).",
        ),
        Slip(
            1 - (1 - p) ** k,
            "Your values match the probability that AT LEAST ONE weight is dropped, "
            "1 - (1 - p) ** k; the question is about losing ALL of them.",
        ),
        Slip(
            1 - p**k,
            "Your values match 1 - p ** k, the probability that at least one weight "
            "is KEPT; the question is about losing all of them.",
        ),
        Slip(
            torch.full_like(k, p**T_k),
            f"Your values match p ** {T_k} for every row: the masked keys were "
            "counted too. Their weights are 0 already, so only the k nonzero "
            "weights of a row matter: count them with (weights > 0).sum(dim=-1).",
        ),
        Slip(
            p**by_column if T_q == T_k else None,
            "Your values match p ** k with k counted down the columns (over the "
            "queries, dim=-2); a query's weights are a row: count over the keys, "
            "(weights > 0).sum(dim=-1).",
        ),
        Slip(
            torch.full_like(k, p),
            "Your values match p for every row: all k weights of a row must be "
            "dropped, independently, so multiply p by itself k times. (If you "
            "computed k as weights.sum(dim=-1): that is 1 for every row; count the "
            "nonzero weights with (weights > 0).sum(dim=-1)).",
        ),
        Slip(
            p * k,
            "Your values match p * k: the k weights are dropped independently, so "
            "their probabilities multiply, p ** k, rather than add.",
        ),
    ]


@exercise_check("fn")
def check_row_drop_probability(fn):
    """Check a function giving the probability that dropout removes ALL of a
    query's weights.

    Introduced in Chapter 4. Dropout drops each weight independently with
    probability ``p``. A query whose row has ``k`` nonzero weights loses all of them
    with probability ``p ** k``; weights that are already 0 (masked keys) cannot
    make a difference. Its context vector is then a vector of zeros for that
    training step. ``fn(weights, p)`` must return these probabilities, one per
    row; it is tried on causal and padded weights with ``p`` = 0.1, 0.3, 0.5 and
    0.8, so that an answer right only for ``p = 0.5``, where ``p = 1 - p``, fails.

    Parameters
    ----------
    fn : callable
        Your function: takes the attention weights before dropout and the dropout
        probability ``p``, returns one probability per query.

    Returns
    -------
    None
        Prints one line starting with ✅ when every case passes.

    Raises
    ------
    AssertionError
        If ``fn`` raises, changes the weights in place, returns something that is
        not a tensor, has another shape, or wrong values; the probability of
        keeping all weights, of dropping at least one, of keeping at least one, a
        count that includes masked keys or runs down the columns, ``p`` alone and
        ``p * k`` are named.
    TypeError
        If ``fn`` is not a function, e.g. the probabilities it returned.

    Shapes
    ------
    Letters: see attn_course.shapes.
    weights : (..., T_q, T_k)
    output : (..., T_q)

    Examples
    --------
    >>> import torch
    >>> def prob_all_dropped(weights, p):
    ...     return p ** (weights > 0).sum(dim=-1)
    >>> check_row_drop_probability(prob_all_dropped)
    ... # doctest: +NORMALIZE_WHITESPACE
    ✅ check_row_drop_probability: your probabilities are correct for p = 0.1, 0.3,
    0.5 and 0.8; a row with k nonzero weights loses all of them with probability
    p ** k.
    >>> check_row_drop_probability(lambda weights, p: (1 - p) ** (weights > 0).sum(-1))
    Traceback (most recent call last):
    ...
    AssertionError: check_row_drop_probability: your probabilities on causal ...
    """
    check = "check_row_drop_probability"
    name = f"{check}: your probabilities"

    def verify(case, answer):
        (weights, p), where = case.args, case.where
        k = (weights != 0).sum(dim=-1).to(torch.float64)  # (..., T_q)
        expected = p**k
        answer = expect_tensor(answer, name, where)
        expect_shape(answer, expected, name, where)
        expect_finite(answer, name, where)
        expect_close(
            answer,
            expected,
            name,
            where,
            atol=1e-6,
            rtol=1e-4,
            slips=_row_drop_slips(weights, p),
        )

    run_cases(
        check,
        fn,
        _row_drop_cases(),
        verify,
        example="prob_all_dropped",
        names=("weights", "p"),
        fix="compute from the weights without changing them.",
        success="your probabilities are correct for p = 0.1, 0.3, 0.5 and 0.8; a "
        "row with k nonzero weights loses all of them with probability p ** k.",
    )


def _eval_cases():
    """The same CausalAttention with dropout 0.5, once in training and once in eval
    mode, on the journey sentence; the output without dropout as data."""
    from ..modules import CausalAttention

    x = your_journey().embeddings.unsqueeze(0)  # (T, d_in) -> (1, T, d_in)
    cases = []
    for mode in ("training", "eval"):
        with seeded(123):
            module = CausalAttention(3, 2, 6, 0.5)
        with torch.no_grad():
            expected = copy.deepcopy(module).eval()(x)  # (1, T, d_out)
        module.train(mode == "training")
        text = f"a CausalAttention(3, 2, 6, dropout=0.5) in {mode} mode"
        cases.append(Case(text, (module, x), (mode, expected)))
    return cases


_EVAL_ARGS = ("module", "x")


@exercise_check("fn")
def check_eval_forward(fn):
    """Check a function that runs a module deterministically and restores its mode.

    Introduced in Chapter 4. ``fn(module, x)`` must return ``module(x)`` computed
    with dropout switched off, and leave ``module.training`` as it found it: a
    module in training mode must still be in training mode afterwards, and one in
    eval mode in eval mode. It is tried on an ``attn_course.CausalAttention`` with
    ``dropout=0.5``, twice in each mode.

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
    TypeError
        If ``fn`` is not a function, e.g. the output it returned.

    Shapes
    ------
    Letters: see attn_course.shapes.
    x : (B, T, d_in)
    output : (B, T, d_out)

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
    check = "check_eval_forward"
    name = f"{check}: your output"
    fix = "leave the module's weights and the input as they are."

    def verify(case, first):
        (module, _), (before, expected), where = case.args, case.data, case.where

        def output_of(result):
            result = expect_tensor(result, name, where).detach()
            expect_shape(result, expected, name, where)
            after = "training" if module.training else "eval"
            if after != before:
                raise AssertionError(
                    f"{check}: the module was in {before} mode before your function "
                    f"and is in {after} mode after it. Remember the mode first, "
                    "was_training = module.training, and restore it at the end "
                    "with module.train(was_training)."
                )
            return result

        outputs = [output_of(first)]
        outputs.append(output_of(call(fn, check, case, names=_EVAL_ARGS, fix=fix)))
        if not torch.equal(*outputs):
            raise AssertionError(
                f"{check}: two calls gave different outputs{where}: dropout is "
                "still on. torch.no_grad() only stops gradient tracking; it does "
                "not switch dropout off. Call module.eval() before the forward pass."
            )
        expect_close(
            outputs[0],
            expected,
            name,
            where,
            atol=1e-6,
            rtol=1e-5,
            hint="\nIt should equal module(x) in eval mode.",
        )

    run_cases(
        check,
        fn,
        _eval_cases(),
        verify,
        example="eval_forward",
        names=_EVAL_ARGS,
        fix=fix,
        success="your function is correct; its output equals the module without "
        "dropout, twice in a row, and the module keeps its training or eval mode.",
    )
