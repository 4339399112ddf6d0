"""Self-checks for Chapter 4, dropout, as tables (see attn_course.checks.table)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import torch

from ..data import your_journey
from ..modules import CausalAttention
from ._kit import require_callable, seeded
from .table import Exercise, rows, what_differs


@dataclass(frozen=True)
class _Watched(Exercise):
    """An exercise whose output is ``watch(fn, *args)``: a result and more of a call."""

    watch: object = None  # always given

    def define(self, body):
        return partial(self.watch, super().define(body))

    def judge(self, fn):
        require_callable(fn, self.check, self.name)
        watched = getattr(fn, "func", None) is self.watch  # the code of an answer
        super().judge(fn if watched else partial(self.watch, fn))


def _drawing(fn, weights, p, seed):
    """``fn``'s output on a generator seeded with ``seed``; whether it drew globally;
    whether another seed changes it; whether the matrices of a batch share a mask."""
    state = torch.random.get_rng_state()
    out = fn(weights, p, torch.Generator().manual_seed(seed))
    drew = not torch.equal(state, torch.random.get_rng_state())
    other = fn(weights, p, torch.Generator().manual_seed(seed + 1))
    varies = not (torch.is_tensor(out) and torch.is_tensor(other) and out.equal(other))
    kept = (out != 0).flatten(0, -3) if torch.is_tensor(out) and out.dim() > 2 else None
    return out, drew, varies, kept is not None and bool((kept == kept[:1]).all())


def _off(got, expected, subject=""):
    """What differs between two dropouts of the same weights, whatever their masks:
    the generator, a weight both keep, the share dropped (by over 6 sd), or ''."""
    (out, drew, varies, shared), (ref, ref_drew, ref_varies, ref_shared) = (
        got,
        (expected or (None,) * 4),
    )
    if drew != ref_drew:
        return _GLOBAL
    if varies != ref_varies:
        return "it gives the same output whatever the generator's seed: draw with it"
    if shared != ref_shared:
        return "every matrix of the batch gets one mask: draw weights.shape numbers"
    if not (
        torch.is_tensor(out) and out.shape == ref.shape and out.is_floating_point()
    ):
        return what_differs(out, ref, subject) if subject else "another type"
    out, ref = out.double(), ref.double()
    wrong = (out != 0) & (ref != 0) & ~torch.isclose(out, ref, 1e-5, 1e-5)
    if wrong.any():
        return f"it keeps a weight as {out[wrong][0]:.4g}, not {ref[wrong][0]:.4g}"
    rate = float((ref != 0).double().mean())  # the share kept
    spread = 6 * (2 * rate * (1 - rate) / ref.numel()) ** 0.5
    if abs(float((out != 0).double().mean()) - rate) > spread:
        return f"it drops {(out == 0).double().mean():.1%}, not about {1 - rate:.0%}"
    return ""


_GLOBAL = "it draws from torch's global random generator (as F.dropout does)"
_DROPOUT = (
    "    keep = torch.rand(weights.shape, generator=generator) >= p\n"
    "    return torch.where(keep, weights / (1 - p), 0.0)\n"
)

DROPOUT = _Watched(
    label="ch04-ex-dropout",
    check="check_dropout_fn",
    function="my_dropout(weights, p, generator)",
    parameter="fn",
    output="output",
    right=_DROPOUT,
    cases=(  # positive weights: a 0 is a dropped weight; a generator seeded with 1
        (torch.arange(1e4).view(100, 100).sin() + 1.5, 0.2, 1),
        (torch.arange(288.0).view(2, 4, 6, 6).cos() + 1.5, 0.5, 1),
        (torch.arange(12.0).view(3, 4).softmax(-1), 0.0, 1),
    ),
    describe=lambda weights, p, _: f"weights {tuple(weights.shape)} with p = {p}",
    rule="drop each weight with probability p, divide the kept ones by 1 - p, and "
    "draw from the generator given, generator=generator",
    watch=_drawing,
    same=lambda got, out: not _off(got, out),
    otherwise=_off,
    slips=rows(
        "unscaled",
        _DROPOUT.replace(" / (1 - p)", ""),
        "the kept weights are not rescaled",
        "divided-by-p",
        _DROPOUT.replace("(1 - p)", "p"),
        "the kept weights are divided by p, the probability to drop them",
        "times-keep",
        _DROPOUT.replace("/ (1 - p)", "* (1 - p)"),
        "the kept weights are multiplied by 1 - p, not divided by it",
        "drops-1-p",
        _DROPOUT.replace(">= p", "< p"),
        "it drops a weight with probability 1 - p instead of p",
        "global-generator",
        "    return F.dropout(weights, p, training=True)\n",
        _GLOBAL,
    ),
)
check_dropout_fn = DROPOUT.make_check()

_CAUSAL = torch.ones(6, 6).tril() / torch.arange(1, 7)[:, None]  # 1 to 6 keys a row
_PADDED = torch.ones(2, 3, 7).tril(2) / torch.arange(3, 6)[:, None]  # 3 to 5 keys
_P_K = "    return p ** (weights > 0).sum(dim=-1)\n"  # p = 0.5 tells less: comes late

ROW_DROP = Exercise(
    label="ch04-ex-all-dropped",
    check="check_row_drop_probability",
    function="prob_all_dropped(weights, p)",
    parameter="fn",
    output="probabilities",
    right=_P_K,
    cases=((_CAUSAL, 0.1), (_PADDED, 0.3), (_CAUSAL, 0.5), (_CAUSAL, 0.8)),
    describe=lambda weights, p: f"weights {tuple(weights.shape)} with zeros, p = {p}",
    rule="a row with k nonzero weights loses all of them with probability p ** k",
    tolerance=1e-5,
    slips=rows(
        "all-kept",
        _P_K.replace("p **", "(1 - p) **"),
        "(1 - p) ** k is the probability that every weight is KEPT",
        "at-least-one-dropped",
        _P_K.replace("p **", "1 - (1 - p) **"),
        "1 - (1 - p) ** k is the probability that AT LEAST ONE weight is dropped",
        "masked-counted",
        "    return torch.full(weights.shape[:-1], p ** weights.shape[-1])\n",
        "it counts the masked keys too: count the nonzero weights, (weights > 0)",
        "columns",
        _P_K.replace("-1)", "0)"),
        "it counts down the columns; a query's weights are a row: sum over dim=-1",
        "p-alone",
        "    return p ** weights.sum(dim=-1)\n",
        "it is p for every row (weights.sum(dim=-1) is 1; count with weights > 0)",
    ),
)
check_row_drop_probability = ROW_DROP.make_check()


def _mode_after(fn, module, x):
    """``fn``'s output under seeded(0), the module's mode after it (put back), and
    whether it changed the module's settings (its repr, such as dropout's p)."""
    before, settings = module.training, repr(module)
    with seeded(0):
        out = fn(module, x), module.training, repr(module) != settings
    module.train(before)
    return out


def _eval_cases():
    """A CausalAttention with dropout 0.5 in training mode, then in eval mode."""
    with seeded(123):
        modules = [CausalAttention(3, 2, 6, 0.5).train(mode) for mode in (True, False)]
    return tuple((module, your_journey().embeddings[None]) for module in modules)


EVAL = _Watched(
    label="ch04-ex-eval",
    check="check_eval_forward",
    function="eval_forward(module, x)",
    parameter="fn",
    output="output",
    right="    was_training = module.training\n    module.eval()\n"
    "    output = module(x)\n    module.train(was_training)\n    return output\n",
    cases=_eval_cases,
    describe=lambda m, x: f"a CausalAttention with dropout, training={m.training}",
    rule="return module(x) with module.eval(), then module.train(was_training)",
    watch=_mode_after,
    otherwise=lambda got, out, subject: (
        "it changes the module itself (such as its "
        "dropout's p): switch modes only, module.eval() then module.train(was_training)"
        if got[2] != out[2]
        else what_differs(got[0], out[0], subject)
    ),
    slips=rows(
        "dropout-on",
        "    with torch.no_grad():\n        return module(x)\n",
        "dropout is still on: neither torch.no_grad() nor module.dropout.eval() "
        "switches it off; this module reads its own mode, module.eval()",
        "never-restores",
        "    module.eval()\n    return module(x)\n",
        "the module was in training mode and is in eval mode after your function",
        "back-to-training",
        "    module.eval()\n    out = module(x)\n    module.train()\n    return out\n",
        "the module was in eval mode and is in training mode after your function",
    ),
)
check_eval_forward = EVAL.make_check()

__all__ = [name for name in dir() if name.startswith("check_")]
