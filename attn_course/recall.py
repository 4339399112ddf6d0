"""Associative recall: the task, small models with a pluggable sequence mixer, and
their training, for Chapter 12's comparison of attention with recurrent layers.

The task is multi-query associative recall (Arora et al. 2024, "Zoology"): ``N``
pair positions, each carrying a key and its value, then ``Q`` query positions, each
naming one of those keys; the target at a query is that key's value.
:func:`recall_batch` draws it, :class:`RecallModel` learns it with one of the
mixers of :data:`MIXERS`, :func:`recall_run` trains one model and measures it, and
:func:`stored_recall_runs` reads the sweep that ``make bench-recall`` stores.
Introduced in Chapter 12.
"""

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ._validate import kind_of, require_choice, require_int, require_tensor
from .efficient import load_measured
from .kv_cache import kv_cache_numbers
from .recurrence import causal_linear_attention, delta_rule, state_numbers

__all__ = [
    "MIXERS",
    "RecallModel",
    "RecallTask",
    "accuracy_by_mixer",
    "numbers_per_token",
    "recall_accuracy",
    "recall_batch",
    "recall_run",
    "stored_recall_runs",
]

MIXERS = {
    "softmax": "causal softmax attention; keeps every key and value",
    "linear": "causal linear attention, the plain sum of unit keys; a d x d state",
    "deltanet": "the delta rule, beta = sigmoid of a projection; a d x d state",
    "gated_deltanet": "the delta rule with a learned decay in (0, 1); a d x d state",
    "gru": "a GRU; a state of d numbers",
    "hybrid": "Gated DeltaNet layers, then one softmax attention layer",
}
"""The sequence mixers of :class:`RecallModel`, by name. Introduced in Chapter 12."""

CHUNK = 16
"""Tokens per chunk of the chunked delta rule in training."""

IGNORE = -100
"""The target of positions that are not queries (``F.cross_entropy``'s default)."""


@dataclass(frozen=True)
class RecallTask:
    """The sizes of an associative-recall task. Introduced in Chapter 12.

    ``num_pairs`` key-value pairs with distinct keys out of ``num_keys``, values out
    of ``num_values`` (repeats allowed), then ``num_queries`` queries, each a key of
    the pairs drawn at random (repeats allowed): sequences of ``num_pairs +
    num_queries`` positions.
    """

    num_pairs: int = 16
    num_queries: int = 16
    num_keys: int = 64
    num_values: int = 64

    def __post_init__(self):
        for name in ("num_pairs", "num_queries", "num_keys", "num_values"):
            require_int(getattr(self, name), name)
        if self.num_pairs > self.num_keys:
            raise ValueError(
                f"num_pairs={self.num_pairs} needs as many distinct keys, but "
                f"num_keys={self.num_keys}; raise num_keys or lower num_pairs"
            )

    @property
    def length(self):
        """Positions per sequence: pairs, then queries."""
        return self.num_pairs + self.num_queries


def recall_batch(task, batch_size, *, seed):
    """A seeded batch of ``task``: ``(inputs, targets)``.

    ``inputs[b, t] = (key, value)``: at a pair position the key and its value; at a
    query position the key and ``task.num_values``, the "no value" token. ``targets``
    holds the value of the queried key at query positions and ``-100`` (ignored by
    ``F.cross_entropy``) at pair positions. The same ``seed`` gives the same batch.
    Introduced in Chapter 12.

    Shapes: ``inputs`` ``(B, T, 2)``, ``targets`` ``(B, T)``, integers, with
    ``T = num_pairs + num_queries``.

    Examples
    --------
    >>> task = RecallTask(num_pairs=3, num_queries=2, num_keys=8, num_values=8)
    >>> inputs, targets = recall_batch(task, 1, seed=0)
    >>> inputs.shape, targets.shape
    (torch.Size([1, 5, 2]), torch.Size([1, 5]))
    >>> targets[0, :3].tolist()
    [-100, -100, -100]
    """
    if not isinstance(task, RecallTask):
        raise TypeError(f"task must be a RecallTask, got {kind_of(task)}")
    require_int(batch_size, "batch_size")
    require_int(seed, "seed", minimum=0)
    g = torch.Generator().manual_seed(seed)
    B, N, Q = batch_size, task.num_pairs, task.num_queries
    keys = torch.rand(B, task.num_keys, generator=g).argsort(-1)[:, :N]
    values = torch.randint(task.num_values, (B, N), generator=g)
    asked = torch.randint(N, (B, Q), generator=g)
    query_keys = keys.gather(1, asked)
    blank = torch.full((B, Q), task.num_values)
    inputs = torch.stack(
        [torch.cat([keys, query_keys], 1), torch.cat([values, blank], 1)], -1
    )
    targets = torch.cat([torch.full((B, N), IGNORE), values.gather(1, asked)], 1)
    return inputs, targets


class _Mixer(nn.Module):
    """One head of width ``d_model``: projections, the mixing rule, an output."""

    def __init__(self, kind, d_model):
        super().__init__()
        self.kind = kind
        if kind == "gru":
            self.gru = nn.GRU(d_model, d_model, batch_first=True)
            return
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        if kind in ("deltanet", "gated_deltanet"):
            self.beta = nn.Linear(d_model, 1)
        if kind == "gated_deltanet":
            self.rate = nn.Linear(d_model, 1)
            # a_t = exp(-softplus(-4)) = 0.98 at the start: slow forgetting
            nn.init.constant_(self.rate.bias, -4.0)

    def forward(self, x):
        if self.kind == "gru":
            return self.gru(x)[0]
        q, k, v = (part.unsqueeze(1) for part in self.qkv(x).chunk(3, -1))
        if self.kind == "softmax":
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.out(y.squeeze(1))
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)  # unit queries and keys
        if self.kind == "linear":  # the delta rule's state without its correction
            y = causal_linear_attention(q, k, v, feature_map=None)
        else:
            beta = torch.sigmoid(self.beta(x)).squeeze(-1).unsqueeze(1)
            decay = None
            if self.kind == "gated_deltanet":
                decay = torch.exp(-F.softplus(self.rate(x))).squeeze(-1).unsqueeze(1)
            y = delta_rule(q, k, v, beta, decay=decay, chunk_size=CHUNK)
        return self.out(y.squeeze(1))


class RecallModel(nn.Module):
    """A small model for :func:`recall_batch`'s task with a pluggable mixer.

    A key embedding plus a value embedding (``num_values + 1`` rows, the last the
    "no value" of queries), ``num_layers`` pre-norm residual layers of one mixer of
    :data:`MIXERS` each (``"hybrid"``: Gated DeltaNet layers, the last one softmax
    attention), a final LayerNorm and a linear readout over the values.

    There are no positions: each pair is one token carrying its key and value, so a
    query finds its pair by content alone (its key matches the pair's key), and the
    order of the pairs does not matter. Softmax attention needs no positions for
    that; the recurrent mixers get order from their recurrence. Nor is there a short
    convolution before the mixers: it serves, in DeltaNet-style models, to join a key
    to the value in the next token, and here they share one token.
    Introduced in Chapter 12.

    Shapes: ``inputs`` ``(B, T, 2)`` -> logits ``(B, T, num_values)``.

    Examples
    --------
    >>> task = RecallTask(num_pairs=4, num_queries=2, num_keys=8, num_values=8)
    >>> inputs, _ = recall_batch(task, 3, seed=0)
    >>> RecallModel("deltanet", task, d_model=16)(inputs).shape
    torch.Size([3, 6, 8])
    """

    def __init__(self, mixer, task, *, d_model=32, num_layers=2):
        super().__init__()
        require_choice(mixer, "mixer", MIXERS)
        if not isinstance(task, RecallTask):
            raise TypeError(f"task must be a RecallTask, got {kind_of(task)}")
        require_int(d_model, "d_model")
        require_int(num_layers, "num_layers", minimum=2 if mixer == "hybrid" else 1)
        self.mixer, self.task = mixer, task
        self.kinds = [mixer] * num_layers
        if mixer == "hybrid":
            self.kinds = ["gated_deltanet"] * (num_layers - 1) + ["softmax"]
        self.keys = nn.Embedding(task.num_keys, d_model)
        self.values = nn.Embedding(task.num_values + 1, d_model)
        self.norms = nn.ModuleList(nn.LayerNorm(d_model) for _ in self.kinds)
        self.layers = nn.ModuleList(_Mixer(kind, d_model) for kind in self.kinds)
        self.norm = nn.LayerNorm(d_model)
        self.readout = nn.Linear(d_model, task.num_values)

    def forward(self, inputs):
        require_tensor(inputs, "inputs")
        if inputs.dim() != 3 or inputs.shape[-1] != 2:
            raise ValueError(
                f"inputs must be (B, T, 2) pairs of (key, value) ids, got shape "
                f"{tuple(inputs.shape)}; make them with recall_batch"
            )
        x = self.keys(inputs[..., 0]) + self.values(inputs[..., 1])
        for norm, layer in zip(self.norms, self.layers, strict=True):
            x = x + layer(norm(x))
        return self.readout(self.norm(x))


def numbers_per_token(model):
    """What ``model`` keeps, over its layers: ``(growing, fixed)``, the numbers each
    token of context adds (a softmax layer's key and value, :func:`kv_cache_numbers`)
    and the numbers kept whatever the length (a linear or delta-rule layer's
    ``d x d`` state, :func:`state_numbers`; a GRU's ``d``). Introduced in Chapter 12.

    >>> numbers_per_token(RecallModel("hybrid", RecallTask(), d_model=32))
    (64, 1024)
    """
    d = model.norm.normalized_shape[0]
    growing = kv_cache_numbers(model.kinds.count("softmax"), 1, d, tokens=1)
    fixed = sum(
        d if kind == "gru" else state_numbers(1, d, d)
        for kind in model.kinds
        if kind != "softmax"
    )
    return growing, fixed


def recall_accuracy(model, inputs, targets):
    """The share of query positions whose value ``model`` predicts (argmax).
    Introduced in Chapter 12."""
    with torch.no_grad():
        was_training = model.training
        model.eval()
        predicted = model(inputs).argmax(-1)
        model.train(was_training)
    asked = targets != IGNORE
    return (predicted[asked] == targets[asked]).float().mean().item()


def recall_run(
    mixer,
    num_pairs,
    *,
    seed,
    steps=1000,
    lr=1e-2,
    num_layers=2,
    d_model=32,
    num_queries=16,
):
    """Train one :class:`RecallModel` and measure it.

    Fresh batches of 64 every step (seeded by ``seed`` and the step), AdamW with a
    linear warm-up over the first tenth of ``steps`` then a cosine to zero,
    cross-entropy at the query positions only. Returns a dict: ``accuracy`` on a fixed
    held-out set (512 sequences, the same for every mixer and seed), ``final_loss``,
    ``parameters``, and the numbers the model keeps, ``growing_per_token`` and
    ``fixed_state`` (see :func:`numbers_per_token`).

    The stored sweep (``make bench-recall``) trains with these defaults and each
    mixer's own learning rate, ``stored_recall_runs()["settings"]["lr"][mixer]``; in
    the pinned numeric environment ``recall_run(mixer, 8, seed=0, lr=that)`` gives
    the stored row of that mixer, number of pairs and seed. Introduced in Chapter 12.
    """
    task = RecallTask(num_pairs=num_pairs, num_queries=num_queries)
    require_int(seed, "seed", minimum=0)
    require_int(steps, "steps")
    torch.manual_seed(seed)
    model = RecallModel(mixer, task, d_model=d_model, num_layers=num_layers)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    warmup = max(1, steps // 10)

    def scale(step):
        if step < warmup:
            return (step + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))

    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, scale)
    for step in range(steps):
        inputs, targets = recall_batch(task, 64, seed=seed * 10**6 + step + 1)
        logits = model(inputs)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
    held_out = recall_batch(task, 512, seed=0)
    growing, fixed = numbers_per_token(model)
    return {
        "accuracy": recall_accuracy(model, *held_out),
        "final_loss": loss.item(),
        "parameters": sum(p.numel() for p in model.parameters()),
        "growing_per_token": growing,
        "fixed_state": fixed,
    }


def stored_recall_runs(device="cpu"):
    """The runs of :func:`recall_run` stored with the package (``make
    bench-recall``): ``date``, ``machine``, ``torch``, ``settings`` and ``rows``, one
    per mixer, number of pairs and seed. Introduced in Chapter 12.
    """
    return load_measured(
        "recall", device, "associative-recall runs", "make bench-recall"
    )


def accuracy_by_mixer(rows):
    """The accuracies of ``rows`` (those of :func:`stored_recall_runs`), grouped:
    ``{mixer: {num_pairs: [accuracy of each seed, in seed order]}}``, mixers and
    numbers of pairs in the order they first appear. Introduced in Chapter 12.

    >>> rows = [{"mixer": "gru", "num_pairs": 8, "seed": s, "accuracy": a}
    ...         for s, a in ((1, 0.25), (0, 0.5))]
    >>> accuracy_by_mixer(rows)
    {'gru': {8: [0.5, 0.25]}}
    """
    grouped = {}
    for row in sorted(rows, key=lambda row: row["seed"]):
        by_pairs = grouped.setdefault(row["mixer"], {})
        by_pairs.setdefault(row["num_pairs"], []).append(row["accuracy"])
    order = list(dict.fromkeys(row["mixer"] for row in rows))
    pairs = list(dict.fromkeys(row["num_pairs"] for row in rows))
    return {
        mixer: {n: grouped[mixer][n] for n in pairs if n in grouped[mixer]}
        for mixer in order
    }
