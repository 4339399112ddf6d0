"""A decoder-only language model (a tiny GPT), its text generation and its training.

:class:`GPT` is GPT-2 scaled down: token and learned position embeddings, causal
pre-norm :class:`attn_course.block.TransformerBlock` s, a final layer norm and an
output layer tied to the token embedding. Position ``t`` of the logits scores every
token as the one at ``t + 1``. :func:`generate` continues a sequence (greedy,
temperature, top-k, top-p); :func:`train` fits a model with AdamW, warm-up, cosine
decay (:func:`lr_at`) and clipping; :func:`estimate_loss` measures it.

Shapes
------
idx : (B, T)
logits : (B, T, V)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from ._validate import (
    _as_real,
    kind_of,
    require_choice,
    require_flag,
    require_heads,
    require_int,
    require_positive,
    require_probability,
    require_tensor,
)
from .block import NORMS, TransformerBlock, _norm
from .corpus import CharTokenizer, python_docs_text, random_windows, train_val_split
from .efficient import load_measured
from .kv_cache import KVCache
from .positions import sinusoidal_positions
from .training import evaluating, lr_at

__all__ = [
    "GPT",
    "GPTConfig",
    "TrainLog",
    "estimate_loss",
    "generate",
    "lr_schedule",
    "modern_run",
    "norm_run",
    "stored_modern_runs",
    "stored_norm_runs",
    "train",
    "weight_decay_groups",
]

POSITIONS = ("learned", "sinusoidal")
FEED_FORWARDS = {
    "gelu": "two linear layers with GPT-2's GELU between (Chapter 8)",
    "swiglu": "SwiGLU with as many weights (Chapter 11)",
}


@dataclass(frozen=True)
class GPTConfig:
    """Sizes and settings of a :class:`GPT`. Introduced in Chapter 8.

    ``d_ff`` defaults to ``4 * d_model``; ``norm_first`` picks pre-norm (GPT-2) or
    post-norm (2017) blocks; ``tie_weights`` makes the output layer reuse the token
    embedding; ``positions`` is "learned" or "sinusoidal"; ``num_kv_heads`` below
    ``num_heads`` is grouped-query attention (Chapter 9).

    Chapter 11's swaps, each off by default: ``norm="rms"`` (RMSNorm everywhere),
    ``feed_forward="swiglu"`` (at :func:`attn_course.swiglu_hidden` of ``d_ff``),
    ``bias=False`` (no bias in ``out_proj``, feed-forward networks or norms),
    ``qk_norm`` (RMSNorm of each head's queries and keys), ``sinks`` (a learned sink
    logit per head and layer), ``window`` (each query sees the last ``window`` keys,
    itself included) and ``global_every`` (with a window, every ``global_every``-th
    layer, the last of each group, sees all keys: 6 is Gemma 3's 5 local to 1
    global, 2 gpt-oss's alternation). See :class:`attn_course.block.TransformerBlock`.

    >>> GPTConfig(vocab_size=65, context_length=64).d_ff
    512
    """

    vocab_size: int
    context_length: int
    d_model: int = 128
    num_heads: int = 4
    num_layers: int = 4
    dropout: float = 0.0
    d_ff: int | None = None
    norm_first: bool = True
    tie_weights: bool = True
    positions: str = "learned"
    qkv_bias: bool = False
    num_kv_heads: int | None = None
    norm: str = "layer"
    feed_forward: str = "gelu"
    bias: bool = True
    qk_norm: bool = False
    sinks: bool = False
    window: int | None = None
    global_every: int | None = None

    def __post_init__(self):
        for name in (
            "vocab_size",
            "context_length",
            "d_model",
            "num_heads",
            "num_layers",
        ):
            require_int(getattr(self, name), name)
        if self.d_ff is None:
            object.__setattr__(self, "d_ff", 4 * self.d_model)
        require_int(self.d_ff, "d_ff")
        if self.num_kv_heads is None:
            object.__setattr__(self, "num_kv_heads", self.num_heads)
        require_int(self.num_kv_heads, "num_kv_heads")
        require_probability(self.dropout, "dropout", hint="use e.g. dropout=0.1")
        if self.positions not in POSITIONS:
            raise ValueError(
                f"positions={self.positions!r} is not one of {POSITIONS}: 'learned' "
                "= a trainable table (GPT-2), 'sinusoidal' = fixed waves (2017)"
            )
        swapped = "every head gets d_model // num_heads features; did you swap "
        require_heads(
            self.d_model,
            self.num_heads,
            width_name="d_model",
            hint=swapped + "num_heads and num_layers?",
        )
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"num_kv_heads={self.num_kv_heads} does not divide num_heads="
                f"{self.num_heads}: each key-value head serves num_heads // "
                "num_kv_heads query heads; e.g. num_kv_heads="
                f"{math.gcd(self.num_heads, self.num_kv_heads)}"
            )
        require_choice(self.norm, "norm", NORMS)
        require_choice(self.feed_forward, "feed_forward", FEED_FORWARDS)
        for name in ("bias", "qk_norm", "sinks"):
            require_flag(getattr(self, name), name)
        if self.window is not None:
            require_int(self.window, "window", hint="e.g. window=16, itself included")
        if self.global_every is not None:
            if self.window is None:
                raise ValueError(
                    f"global_every={self.global_every} needs a window: it picks the "
                    "layers that see every key among layers with a sliding window; "
                    "give window=W too, or leave global_every=None"
                )
            require_int(
                self.global_every,
                "global_every",
                hint="e.g. global_every=6 for 5 local layers to 1 global",
            )
        if self.positions == "sinusoidal" and self.d_model % 2:
            raise ValueError(
                f"d_model={self.d_model} must be even for sinusoidal positions, "
                "which come in (sin, cos) pairs"
            )


class GPT(nn.Module):
    """A decoder-only transformer language model. Introduced in Chapter 8.

    ``logits = head(final_norm(blocks(token_embedding(idx) + positions)))``. Weights
    start as in GPT-2: normal with std 0.02, biases 0, and the two layers that write
    into the residual stream (``out_proj`` and the feed-forward's second layer) at
    ``0.02 / sqrt(2 * num_layers)``. GELU in its tanh approximation. Post-norm blocks
    end in a layer norm already, so their ``final_norm`` is an ``nn.Identity``.

    Shapes
    ------
    idx : (B, T)
    logits : (B, T, V)
    weights[layer] : (B, H, T, T)

    Examples
    --------
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> model = GPT(GPTConfig(vocab_size=10, context_length=8, d_model=16,
    ...                       num_heads=2, num_layers=2))
    >>> model(torch.tensor([[1, 2, 3]])).shape  # (B, T) -> (B, T, V)
    torch.Size([1, 3, 10])
    """

    def __init__(self, config):
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise TypeError(
                f"config must be a GPTConfig, got {kind_of(config)}; e.g. "
                "GPT(GPTConfig(vocab_size=65, context_length=64))"
            )
        self.config = c = config
        self.token_embedding = nn.Embedding(c.vocab_size, c.d_model)
        if c.positions == "learned":
            self.position_embedding = nn.Embedding(c.context_length, c.d_model)
        else:
            self.position_embedding = None
            table = sinusoidal_positions(c.context_length, c.d_model)
            self.register_buffer("positions", table, persistent=False)
        self.dropout = nn.Dropout(c.dropout)
        self.blocks = nn.ModuleList(
            [
                TransformerBlock(
                    c.d_model,
                    c.num_heads,
                    c.d_ff,
                    c.context_length,
                    c.dropout,
                    causal=True,
                    # GPT-2's GELU, or SwiGLU
                    activation="gelu_tanh" if c.feed_forward == "gelu" else "swiglu",
                    norm_first=c.norm_first,
                    qkv_bias=c.qkv_bias,
                    num_kv_heads=c.num_kv_heads,
                    norm=c.norm,
                    bias=c.bias,
                    qk_norm=c.qk_norm,
                    sinks=c.sinks,
                    window=None if self.is_global(layer) else c.window,
                )
                for layer in range(c.num_layers)
            ]
        )
        self.final_norm = (
            _norm(c.norm, c.d_model, c.bias) if c.norm_first else nn.Identity()
        )
        self.head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        self.apply(self._init_weights)
        residual_std = 0.02 / math.sqrt(2 * c.num_layers)
        for block in self.blocks:
            nn.init.normal_(block.self_attn.out_proj.weight, std=residual_std)
            ff = block.feed_forward
            second_linear = ff.down_proj if c.feed_forward == "swiglu" else ff.net[3]
            nn.init.normal_(second_linear.weight, std=residual_std)  # (d_ff -> D)
        if c.tie_weights:
            self.head.weight = self.token_embedding.weight

    def is_global(self, layer):
        """Whether block ``layer`` sees every key: always without a window; with
        one, only every ``global_every``-th (the last of each group). Introduced in
        Chapter 11."""
        c = self.config
        if c.window is None:
            return True
        return c.global_every is not None and (layer + 1) % c.global_every == 0

    @staticmethod
    def _init_weights(module):
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def _check(self, idx):
        fix = "encode the text first, e.g. tokenizer.encode(text)[None]"
        require_tensor(idx, "idx", fix=fix)
        if idx.dtype != torch.long:
            raise TypeError(
                f"idx must be a LongTensor of token ids, got dtype {idx.dtype}; {fix}"
            )
        if idx.dim() != 2:
            raise ValueError(
                f"expected idx of shape (B, T), got {tuple(idx.shape)}; for one "
                "sequence use idx[None] (or idx.unsqueeze(0))"
            )
        T, limit = idx.shape[1], self.config.context_length
        if T > limit:
            raise ValueError(
                f"idx has T={T} tokens but context_length={limit}; keep the last "
                f"{limit} tokens, e.g. idx[:, -{limit}:], or use a GPTConfig with "
                f"context_length >= {T}"
            )
        if idx.numel() and not 0 <= int(idx.min()) <= int(idx.max()) < (
            V := self.config.vocab_size
        ):
            raise ValueError(
                f"idx holds ids from {int(idx.min())} to {int(idx.max())}, outside "
                f"0..{V - 1} (vocab_size={V}); encode with the model's tokenizer"
            )
        return T

    def _check_cache(self, cache, T):
        """The number of tokens ``cache`` holds (0 without one), after checking
        that it belongs to this model and has room for ``T`` more."""
        if cache is None:
            return 0
        L = self.config.num_layers
        if not isinstance(cache, KVCache):
            raise TypeError(
                f"cache must be a KVCache, got {kind_of(cache)}; e.g. "
                f"cache=KVCache({L})"
            )
        if len(cache.layers) != L:
            raise ValueError(
                f"the cache has {len(cache.layers)} layers but the model has {L}; "
                f"make one for this model, KVCache({L})"
            )
        past, limit = len(cache), self.config.context_length
        if past + T > limit:
            raise ValueError(
                f"the cache holds {past} tokens and idx adds {T}: {past + T} is more "
                f"than context_length={limit}, and there are no positions beyond it; "
                "start a new cache from the last tokens (generate(..., "
                "use_cache=True) does this)"
            )
        return past

    def forward(self, idx, *, return_weights=False, cache=None, attn_mask=None):
        """Logits for the next token at every position, and each block's weights if
        asked.

        With a :class:`attn_course.KVCache` (Chapter 9), ``idx`` continues the cached
        tokens at positions ``len(cache)`` onwards and its keys and values join the
        cache. ``attn_mask``, bool ``(T, len(cache) + T)`` with ``True`` = may attend,
        restricts every block's attention further (and the causal mask still holds):
        e.g. a sliding window at evaluation (Chapter 11).
        """
        T = self._check(idx)
        past = self._check_cache(cache, T)
        x = self.token_embedding(idx)  # (B, T) -> (B, T, D)
        where = torch.arange(past, past + T, device=idx.device)  # (T,)
        if self.position_embedding is not None:
            x = x + self.position_embedding(where)  # (B, T, D) + (T, D)
        else:
            x = x + self.positions[where]  # (B, T, D) + (T, D)
        x = self.dropout(x)
        layers = [None] * len(self.blocks) if cache is None else cache.layers
        all_weights = []
        for block, layer_cache in zip(self.blocks, layers, strict=True):
            x, weights = block(
                x, return_weights=True, cache=layer_cache, attn_mask=attn_mask
            )
            all_weights.append(weights)  # x (B, T, D), weights (B, H, T, T)
        logits = self.head(self.final_norm(x))  # (B, T, D) -> (B, T, V)
        return (logits, tuple(all_weights)) if return_weights else logits


def _check_sampling(model, max_new_tokens, temperature, top_k, top_p):
    """``temperature`` and ``top_p`` as floats, after checking every setting."""
    if not isinstance(model, GPT):
        raise TypeError(f"model must be a GPT, got {kind_of(model)}")
    require_int(max_new_tokens, "max_new_tokens", minimum=0)
    temperature = (
        require_positive(
            temperature, "temperature", hint="use temperature=0 for greedy decoding"
        )
        if temperature != 0
        else 0.0
    )
    if top_k is not None:
        require_int(top_k, "top_k")
        V = model.config.vocab_size
        if top_k > V:
            raise ValueError(
                f"top_k={top_k} is larger than the vocabulary (vocab_size={V}); "
                f"use 1 <= top_k <= {V}, or top_k=None to keep every token"
            )
    if top_p is not None:
        hint = (
            "it is the probability the kept tokens must reach together: use e.g. "
            "top_p=0.9, or top_p=None to keep every token"
        )
        p = _as_real(top_p, "top_p", hint)
        if not 0.0 < p <= 1.0:  # NaN fails too
            raise ValueError(f"top_p must be in (0, 1], got top_p={top_p!r}; {hint}")
        top_p = p
    return temperature, top_p


@torch.no_grad()
def generate(
    model,
    idx,
    max_new_tokens,
    *,
    temperature=1.0,
    top_k=None,
    top_p=None,
    generator=None,
    use_cache=False,
):
    """Continue every sequence of ``idx`` by ``max_new_tokens`` tokens.
    Introduced in Chapter 8.

    Each step reads the last ``context_length`` tokens and draws the next from the
    last position's logits divided by ``temperature``, cut to the ``top_k`` most
    likely (exactly ``top_k``, as ``torch.topk`` picks them) and then to the nucleus of
    ``top_p``. ``temperature=0`` is greedy. The model runs in eval mode and is left in
    its mode. ``use_cache`` keeps a :class:`attn_course.KVCache` so that each step runs
    the one new token (Chapter 9), with the same tokens; once the window slides past
    ``context_length`` the cache is rebuilt every step and saves nothing.

    Examples
    --------
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> model = GPT(GPTConfig(vocab_size=10, context_length=4, d_model=8,
    ...                       num_heads=2, num_layers=1))
    >>> generate(model, torch.tensor([[1, 2]]), 6, temperature=0).shape
    torch.Size([1, 8])
    """
    temperature, top_p = _check_sampling(
        model, max_new_tokens, temperature, top_k, top_p
    )
    require_flag(use_cache, "use_cache")
    C = model.config.context_length
    model._check(idx[:, -C:] if idx.dim() == 2 else idx)
    cache = None
    with evaluating(model):
        for _ in range(max_new_tokens):
            if not use_cache:
                logits = model(idx[:, -C:])  # the window, (B, <= C, V)
            elif cache is not None and len(cache) < C:
                # Only the newest token is new: (B, 1) -> (B, 1, V).
                logits = model(idx[:, -1:], cache=cache)
            else:  # the first step, or the window slid: fill a fresh cache
                cache = KVCache(len(model.blocks))
                logits = model(idx[:, -C:], cache=cache)
            last = logits[:, -1, :]  # (B, V)
            if temperature == 0:
                next_id = last.argmax(dim=-1, keepdim=True)  # (B, 1)
            else:
                probs = _sampling_probs(last, temperature, top_k, top_p)  # (B, V)
                next_id = torch.multinomial(probs, 1, generator=generator)  # (B, 1)
            idx = torch.cat([idx, next_id], dim=1)  # (B, T + 1)
    return idx


def _sampling_probs(logits, temperature, top_k=None, top_p=None):
    """The distribution ``(B, V)`` that :func:`generate` draws the next token from,
    given the last position's ``logits``, ``(B, V)``."""
    logits = logits / temperature
    if top_k is not None:
        kept = torch.topk(logits, top_k, dim=-1).indices  # (B, k): exactly k, ties too
        only_kept = torch.full_like(logits, float("-inf"))
        logits = only_kept.scatter(-1, kept, logits.gather(-1, kept))  # (B, V)
    probs = torch.softmax(logits, dim=-1)  # (B, V)
    if top_p is not None and top_p < 1.0:  # 1 keeps all, even where rounding errs
        ranked, order = probs.sort(dim=-1, descending=True, stable=True)  # (B, V)
        before = ranked.cumsum(dim=-1) - ranked  # what the more likely tokens hold
        keep = torch.zeros_like(probs, dtype=torch.bool)
        keep = keep.scatter(-1, order, before < top_p)  # (B, V); the first always
        probs = probs.masked_fill(~keep, 0.0)
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs


@torch.no_grad()
def estimate_loss(model, batches):
    """Mean cross-entropy (nats per token) over ``(inputs, targets)`` batches, in eval
    mode. Introduced in Chapter 8.
    """
    with evaluating(model):
        losses = [
            F.cross_entropy(model(x).flatten(0, 1), y.flatten()).item()
            for x, y in batches
        ]
    return sum(losses) / len(losses)


class TrainLog(NamedTuple):
    """One row of :func:`train`'s history. Introduced in Chapter 8."""

    step: int
    lr: float
    train_loss: float  # mean over the steps since the previous row
    val_loss: float
    seconds: float  # wall time since the start of training


def lr_schedule(steps, *, max_lr, warmup_steps, min_lr=0.0):
    """The learning rate of each of the ``steps`` steps of :func:`train`, in order.

    :func:`attn_course.training.lr_at` at steps ``0 .. steps - 1``: a linear warm-up
    over ``warmup_steps`` steps, then half a cosine from ``max_lr`` towards ``min_lr``.
    :func:`train` takes its rates from this list. Introduced in Chapter 8.

    Examples
    --------
    >>> [round(lr, 3) for lr in lr_schedule(6, max_lr=1.0, warmup_steps=2)]
    [0.5, 1.0, 1.0, 0.854, 0.5, 0.146]
    """
    require_int(steps, "steps")
    require_int(warmup_steps, "warmup_steps", minimum=0)
    return [
        lr_at(
            step,
            max_lr=max_lr,
            warmup_steps=warmup_steps,
            total_steps=steps,
            min_lr=min_lr,
        )
        for step in range(steps)
    ]


def train(
    model,
    train_ids,
    val_batches,
    *,
    steps,
    batch_size,
    max_lr,
    warmup_steps,
    min_lr=0.0,
    weight_decay=0.1,
    clip=1.0,
    eval_every=100,
    seed=0,
    on_eval=None,
):
    """Train ``model`` on random windows of ``train_ids``; return the history.

    Each step: ``batch_size`` windows (:func:`attn_course.corpus.random_windows`,
    seeded by ``seed``), next-token cross-entropy, backward, gradients clipped to
    ``clip``, an AdamW step at the step's rate from :func:`lr_schedule`, with
    ``weight_decay`` on the matrices only (:func:`weight_decay_groups`). Every
    ``eval_every`` steps and after the last, the loss on ``val_batches`` becomes a
    :class:`TrainLog` row (passed to ``on_eval``). Introduced in Chapter 8.
    """
    require_int(steps, "steps")
    require_int(batch_size, "batch_size")
    require_int(eval_every, "eval_every")
    require_int(warmup_steps, "warmup_steps", minimum=0)
    optimizer = torch.optim.AdamW(
        weight_decay_groups(model, weight_decay), lr=max_lr, betas=(0.9, 0.95)
    )
    generator = torch.Generator().manual_seed(seed)
    T = model.config.context_length
    rates = lr_schedule(
        steps, max_lr=max_lr, warmup_steps=warmup_steps, min_lr=min_lr
    )  # one learning rate per step: warm-up, then cosine
    history, running, start = [], [], time.perf_counter()
    model.train()
    for step in range(steps):
        lr = rates[step]
        for group in optimizer.param_groups:
            group["lr"] = lr
        inputs, targets = random_windows(train_ids, batch_size, T, generator=generator)
        logits = model(inputs)  # (B, T, V)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        running.append(loss.item())
        if (step + 1) % eval_every == 0 or step + 1 == steps:
            row = TrainLog(
                step + 1,
                lr,
                sum(running) / len(running),
                estimate_loss(model, val_batches),
                time.perf_counter() - start,
            )
            history.append(row)
            running = []
            if on_eval is not None:
                on_eval(row)
    model.eval()
    return history


def weight_decay_groups(model, weight_decay):
    """AdamW's two parameter groups: weight decay on matrices, none on vectors.

    nanoGPT's rule: parameters of two or more dimensions (linear weights, the embedding
    tables) are decayed; biases and layer norms are not. A shared matrix is listed
    once. Introduced in Chapter 8.

    Examples
    --------
    >>> model = GPT(GPTConfig(vocab_size=10, context_length=4, d_model=8,
    ...                       num_heads=2, num_layers=1))
    >>> decay, no_decay = weight_decay_groups(model, 0.1)
    >>> decay["param_names"][:2]
    ['token_embedding.weight', 'position_embedding.weight']
    >>> no_decay["weight_decay"], no_decay["param_names"][:2]
    (0.0, ['blocks.0.norm1.weight', 'blocks.0.norm1.bias'])
    """
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    groups = []
    for decayed, rate in ((True, weight_decay), (False, 0.0)):
        chosen = [(n, p) for n, p in named if (p.dim() >= 2) == decayed]
        groups.append(
            {
                "params": [p for _, p in chosen],
                "param_names": [n for n, _ in chosen],
                "weight_decay": rate,
            }
        )
    return groups


def norm_run(norm_first, *, seed=0, steps=150, eval_every=50):
    """Chapter 8's pre-norm against post-norm experiment, for one model and seed.

    A GPT of 8 blocks (``d_model=64``, 4 heads, windows of 32 characters) trained by
    :func:`train` on the first 90 % of :func:`~attn_course.corpus.python_docs_text`,
    16 windows a step, at a constant 3e-3; returns the loss on 64 fixed windows of the
    last 10 % every ``eval_every`` steps. Introduced in Chapter 8.
    """
    _, _, history = _docs_run(
        seed,
        steps,
        32,
        max_lr=3e-3,
        min_lr=3e-3,
        warmup_steps=0,
        eval_every=eval_every,
        num_layers=8,
        norm_first=norm_first,
    )
    return [row.val_loss for row in history]


def stored_norm_runs(device="cpu"):
    """The runs of :func:`norm_run` stored with the package, for several seeds and both
    arrangements: ``date``, ``machine``, ``torch``, ``settings`` and ``rows`` (``norm``,
    ``seed``, ``val_loss``). Introduced in Chapter 8.
    """
    return load_measured(
        "norms", device, "pre-norm and post-norm runs", "make bench-history"
    )


def modern_run(seed=0, *, steps=300, num_layers=4, **changes):
    """Chapter 11's swaps, for one model and seed: the trained model, its validation
    windows and its validation loss.

    A GPT of ``num_layers`` blocks (``d_model=64``, 4 heads, windows of 64
    characters) with the :class:`GPTConfig` ``changes`` (e.g. ``norm="rms"``),
    trained by :func:`train` on the first 90 % of
    :func:`~attn_course.corpus.python_docs_text`, 16 windows a step, warm-up over a
    tenth of the steps then cosine from 3e-3 to 3e-4; the loss is on 64 fixed windows
    of the last 10 %. Introduced in Chapter 11.
    """
    model, val, history = _docs_run(
        seed,
        steps,
        64,
        max_lr=3e-3,
        min_lr=3e-4,
        warmup_steps=steps // 10,
        eval_every=steps,
        num_layers=num_layers,
        **changes,
    )
    return model, val, history[-1].val_loss


def _docs_run(
    seed, steps, context_length, *, max_lr, min_lr, warmup_steps, eval_every, **config
):
    """The training that :func:`norm_run` and :func:`modern_run` describe and share:
    the model, the validation windows and the history."""
    text = python_docs_text()
    tokenizer = CharTokenizer(text)
    train_ids, val_ids = train_val_split(tokenizer.encode(text), val_fraction=0.1)
    val = [
        random_windows(
            val_ids, 64, context_length, generator=torch.Generator().manual_seed(1)
        )
    ]
    torch.manual_seed(seed)
    model = GPT(GPTConfig(tokenizer.vocab_size, context_length, d_model=64, **config))
    history = train(
        model,
        train_ids,
        val,
        steps=steps,
        batch_size=16,
        max_lr=max_lr,
        warmup_steps=warmup_steps,
        min_lr=min_lr,
        eval_every=eval_every,
        seed=seed,
    )
    return model, val, history


def stored_modern_runs(device="cpu"):
    """The runs of :func:`modern_run` stored with the package (``make
    bench-modern``): ``date``, ``machine``, ``torch``, ``settings`` and ``rows`` (one
    per part, variant and seed). Introduced in Chapter 11.
    """
    return load_measured("modern", device, "modern-block runs", "make bench-modern")
