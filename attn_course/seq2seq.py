"""A small encoder-decoder transformer that learns to translate on a CPU (Chapter 6).

The 2017 transformer, scaled down: token embeddings plus sinusoidal positions; an
encoder of bidirectional self-attention and feed-forward layers; a decoder of
causal self-attention, cross-attention to the encoder's output (the *memory*) and
feed-forward layers; pre-norm residuals; a final norm and linear layer giving one
logit per target word. No query attends to a ``<pad>`` key. :func:`greedy_decode`
translates, :func:`train` fits, :func:`exact_match` measures.

Shapes
------
src : (B, T_s)
tgt_in : (B, T_t)
memory : (B, T_s, D)
logits : (B, T_t, V)
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
    kind_of,
    require_heads,
    require_int,
    require_positive,
    require_probability,
    require_tensor,
)
from .block import FeedForward, TransformerBlock
from .modules import CrossAttention, MultiHeadAttention
from .positions import sinusoidal_positions
from .training import count_parameters, evaluating, lr_at
from .translation import iterate_batches

__all__ = [
    "AttentionMaps",
    "DecoderLayer",
    "EncoderLayer",
    "EpochLog",
    "FeedForward",
    "Seq2SeqConfig",
    "Seq2SeqTransformer",
    "count_parameters",
    "evaluating",
    "exact_match",
    "greedy_decode",
    "sequence_loss",
    "sinusoidal_positions",
    "train",
    "translate",
]


@dataclass(frozen=True)
class Seq2SeqConfig:
    """Sizes and settings of a :class:`Seq2SeqTransformer`. Introduced in Chapter 6.

    ``num_layers`` encoder layers and as many decoder layers; ``context_length`` is
    the longest source or target; ``pad_id`` is ``<pad>`` in both vocabularies.
    ``causal_decoder=False`` lets the decoder see future target tokens: a bug, kept
    for the chapter's exercise.
    """

    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 2
    d_ff: int = 128
    context_length: int = 16
    dropout: float = 0.0
    pad_id: int = 0
    causal_decoder: bool = True

    def __post_init__(self):
        for name in (
            "src_vocab_size",
            "tgt_vocab_size",
            "d_model",
            "num_heads",
            "num_layers",
            "d_ff",
            "context_length",
        ):
            require_int(getattr(self, name), name)
        smallest = min(self.src_vocab_size, self.tgt_vocab_size)
        require_int(
            self.pad_id,
            "pad_id",
            minimum=0,
            hint="use the id of <pad>, e.g. pad_id=0",
        )
        if self.pad_id >= smallest:
            raise ValueError(
                f"pad_id={self.pad_id} is not an id of a vocabulary of {smallest} "
                "tokens; use the id of <pad>, e.g. pad_id=0"
            )
        require_probability(self.dropout, "dropout", hint="use e.g. dropout=0.1")
        if self.d_model % 2:
            raise ValueError(
                f"d_model={self.d_model} must be even: the sinusoidal positions come "
                "in (sin, cos) pairs"
            )
        require_heads(
            self.d_model,
            self.num_heads,
            width_name="d_model",
            hint="every head gets d_model // num_heads features",
        )


class EncoderLayer(TransformerBlock):
    """Bidirectional self-attention and a feed-forward network, each in a residual.

    A :class:`attn_course.block.TransformerBlock` with ``causal=False`` and ReLU:
    every source token may attend to every real one (``src_mask``, ``True`` = real).
    Introduced in Chapter 6.

    Shapes
    ------
    x : (B, T_s, D) -> (B, T_s, D)
    src_mask : (B, T_s)
    weights : (B, H, T_s, T_s)

    Examples
    --------
    >>> layer = EncoderLayer(d_model=8, num_heads=2, d_ff=16, context_length=5)
    >>> from attn_course import padding_mask
    >>> x, mask = torch.randn(2, 5, 8), padding_mask([5, 3])  # (B, T_s, D), (B, T_s)
    >>> out, weights = layer(x, mask, return_weights=True)
    >>> out.shape, weights.shape
    (torch.Size([2, 5, 8]), torch.Size([2, 2, 5, 5]))
    """

    def __init__(self, d_model, num_heads, d_ff, context_length, dropout=0.0):
        super().__init__(
            d_model,
            num_heads,
            d_ff,
            context_length,
            dropout,
            causal=False,
            activation="relu",
        )


class DecoderLayer(nn.Module):
    """Causal self-attention, cross-attention to ``memory`` and a feed-forward network,
    each in a pre-norm residual. The masks are bool, ``True`` = real token.
    Introduced in Chapter 6.

    Shapes
    ------
    y : (B, T_t, D) -> (B, T_t, D)
    memory : (B, T_s, D)
    tgt_mask, src_mask : (B, T_t), (B, T_s)
    self_weights, cross_weights : (B, H, T_t, T_t), (B, H, T_t, T_s)

    Examples
    --------
    >>> from attn_course import padding_mask
    >>> layer = DecoderLayer(d_model=8, num_heads=2, d_ff=16, context_length=6)
    >>> y, memory = torch.randn(2, 4, 8), torch.randn(2, 6, 8)
    >>> tgt_mask, src_mask = padding_mask([4, 2]), padding_mask([6, 3])
    >>> out, (self_w, cross_w) = layer(
    ...     y, memory, tgt_mask, src_mask, return_weights=True
    ... )
    >>> out.shape, self_w.shape, cross_w.shape
    (torch.Size([2, 4, 8]), torch.Size([2, 2, 4, 4]), torch.Size([2, 2, 4, 6]))
    """

    def __init__(
        self, d_model, num_heads, d_ff, context_length, dropout=0.0, *, causal=True
    ):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.self_attn = MultiHeadAttention(
            d_model, d_model, context_length, dropout, num_heads, causal=causal
        )
        self.norm2 = nn.LayerNorm(d_model)
        self.cross_attn = CrossAttention(d_model, d_model, num_heads, dropout)
        self.norm3 = nn.LayerNorm(d_model)
        self.feed_forward = FeedForward(d_model, d_ff, dropout)
        self.dropout = nn.Dropout(dropout)

    def forward(self, y, memory, tgt_mask, src_mask, *, return_weights=False):
        """Update every target token; see the class docstring for shapes."""
        attended, self_weights = self.self_attn(
            self.norm1(y), key_padding_mask=tgt_mask, return_weights=True
        )  # (B, T_t, D), (B, H, T_t, T_t)
        y = y + self.dropout(attended)
        attended, cross_weights = self.cross_attn(
            self.norm2(y), memory, key_padding_mask=src_mask, return_weights=True
        )  # (B, T_t, D), (B, H, T_t, T_s)
        y = y + self.dropout(attended)
        y = y + self.feed_forward(self.norm3(y))
        if return_weights:
            return y, (self_weights, cross_weights)
        return y


class AttentionMaps(NamedTuple):
    """Attention weights of every layer of a :class:`Seq2SeqTransformer`, one tensor per
    layer. Introduced in Chapter 6.

    Shapes
    ------
    encoder[layer] : (B, H, T_s, T_s)
    decoder[layer] : (B, H, T_t, T_t)
    cross[layer] : (B, H, T_t, T_s)
    """

    encoder: tuple
    decoder: tuple
    cross: tuple


class Seq2SeqTransformer(nn.Module):
    """An encoder-decoder transformer for translation, with pre-norm residual layers.

    ``src`` and ``tgt_in`` are right-padded with ``pad_id``; ``tgt_in`` starts with
    ``<bos>``, and position ``i`` of the logits predicts target token ``i + 1``.
    Introduced in Chapter 6.

    Shapes
    ------
    src : (B, T_s)
    tgt_in : (B, T_t)
    logits : (B, T_t, V)

    Examples
    --------
    >>> config = Seq2SeqConfig(src_vocab_size=10, tgt_vocab_size=12, d_model=16,
    ...                        num_heads=2, num_layers=1, d_ff=32)
    >>> model = Seq2SeqTransformer(config)
    >>> src = torch.tensor([[3, 4, 5, 0], [6, 7, 8, 9]])  # (B=2, T_s=4), 0 = <pad>
    >>> tgt_in = torch.tensor([[1, 3, 4], [1, 5, 0]])  # (B=2, T_t=3), 1 = <bos>
    >>> logits, maps = model(src, tgt_in, return_weights=True)
    >>> logits.shape, maps.cross[0].shape
    (torch.Size([2, 3, 12]), torch.Size([2, 2, 3, 4]))
    """

    def __init__(self, config):
        super().__init__()
        if not isinstance(config, Seq2SeqConfig):
            raise TypeError(
                f"config must be a Seq2SeqConfig, got {kind_of(config)}; e.g. "
                "Seq2SeqTransformer(Seq2SeqConfig(src_vocab_size=39, "
                "tgt_vocab_size=46))"
            )
        self.config = c = config
        self.src_embed = nn.Embedding(c.src_vocab_size, c.d_model, padding_idx=c.pad_id)
        self.tgt_embed = nn.Embedding(c.tgt_vocab_size, c.d_model, padding_idx=c.pad_id)
        positions = sinusoidal_positions(c.context_length, c.d_model)
        self.register_buffer("positions", positions, persistent=False)
        layer_args = (c.d_model, c.num_heads, c.d_ff, c.context_length, c.dropout)
        self.encoder = nn.ModuleList(
            [EncoderLayer(*layer_args) for _ in range(c.num_layers)]
        )
        self.decoder = nn.ModuleList(
            [
                DecoderLayer(*layer_args, causal=c.causal_decoder)
                for _ in range(c.num_layers)
            ]
        )
        self.encoder_norm = nn.LayerNorm(c.d_model)
        self.decoder_norm = nn.LayerNorm(c.d_model)
        self.lm_head = nn.Linear(c.d_model, c.tgt_vocab_size)

    def _embed(self, ids, embedding, name):
        """Token embedding plus position: ``(B, T) -> (B, T, D)``."""
        _check_ids(ids, name, self.config.context_length, "use a Seq2SeqConfig with")
        T = ids.shape[1]
        # nn.Embedding starts at N(0, 1), the same size as the sinusoids, so the
        # sum keeps both the word and the position visible: (B, T, D) + (T, D).
        return embedding(ids) + self.positions[:T]

    def encode(self, src, *, return_weights=False):
        """Run the encoder: the memory, ``(B, T_s, D)``, and each layer's weights if
        asked.
        """
        x = self._embed(src, self.src_embed, "src")  # (B, T_s) -> (B, T_s, D)
        src_mask = src != self.config.pad_id  # True = real token
        all_weights = []
        for layer in self.encoder:
            x, weights = layer(x, src_mask, return_weights=True)
            all_weights.append(weights)
        memory = self.encoder_norm(x)
        return (memory, tuple(all_weights)) if return_weights else memory

    def decode(self, tgt_in, memory, src_mask, *, return_weights=False):
        """Run the decoder on ``memory``: the logits, and per layer the self- and
        cross-attention weights if asked.
        """
        y = self._embed(tgt_in, self.tgt_embed, "tgt_in")  # (B, T_t) -> (B, T_t, D)
        tgt_mask = tgt_in != self.config.pad_id  # True = real token
        self_weights, cross_weights = [], []
        for layer in self.decoder:
            y, (w_self, w_cross) = layer(
                y, memory, tgt_mask, src_mask, return_weights=True
            )
            self_weights.append(w_self)
            cross_weights.append(w_cross)
        logits = self.lm_head(self.decoder_norm(y))  # (B, T_t, D) -> (B, T_t, V)
        if return_weights:
            return logits, (tuple(self_weights), tuple(cross_weights))
        return logits

    def forward(self, src, tgt_in, *, return_weights=False):
        """Logits for every target position (teacher forcing), and the
        :class:`AttentionMaps` if asked.
        """
        if return_weights:
            memory, enc_weights = self.encode(src, return_weights=True)
            src_mask = src != self.config.pad_id
            logits, (dec_weights, cross_weights) = self.decode(
                tgt_in, memory, src_mask, return_weights=True
            )
            return logits, AttentionMaps(enc_weights, dec_weights, cross_weights)
        memory = self.encode(src)
        return self.decode(tgt_in, memory, src != self.config.pad_id)


@torch.no_grad()
def _check_ids(ids, name, context_length, how):
    """Check that ``ids`` is a ``(B, T)`` LongTensor with ``T <= context_length``;
    ``how`` starts the fix.
    """
    fix = "encode the words with a Vocab first, e.g. vocab.encode_batch(sentences)"
    require_tensor(ids, name, fix=fix)
    if ids.dtype != torch.long:
        raise TypeError(
            f"{name} must be a LongTensor of token ids, got dtype {ids.dtype}; {fix}"
        )
    if ids.dim() != 2:
        raise ValueError(
            f"expected {name} of shape (B, T), got {tuple(ids.shape)}; for one "
            f"sentence use {name}.unsqueeze(0)"
        )
    T = ids.shape[1]
    if T > context_length:
        raise ValueError(
            f"{name} has T={T} tokens but context_length={context_length}; {how} "
            f"context_length >= {T}"
        )


def greedy_decode(model, src, *, max_len=None, bos_id=1, eos_id=2):
    """Translate by always picking the most likely next word. Introduced in Chapter 6.

    The encoder runs once, the decoder once per word on everything generated so far.
    A finished sentence gets ``<pad>`` after its ``<eos>``; decoding stops when all are
    finished or after ``max_len`` words (default ``context_length - 1``). Returns the
    ids without the leading ``<bos>``, in eval mode.

    Shapes
    ------
    src : (B, T_s)
    output : (B, N)
    """
    pad_id = model.config.pad_id
    if max_len is None:
        max_len = model.config.context_length - 1
    max_len = require_int(max_len, "max_len")
    bos_id = require_int(bos_id, "bos_id", minimum=0)
    eos_id = require_int(eos_id, "eos_id", minimum=0)
    with evaluating(model):
        memory = model.encode(src)  # (B, T_s) -> (B, T_s, D)
        src_mask = src != pad_id
        B = src.shape[0]
        tgt = torch.full((B, 1), bos_id, dtype=torch.long, device=src.device)
        finished = torch.zeros(B, dtype=torch.bool, device=src.device)
        for _ in range(max_len):
            logits = model.decode(tgt, memory, src_mask)  # (B, T_t) -> (B, T_t, V)
            next_id = logits[:, -1].argmax(dim=-1)  # (B, V) -> (B,)
            next_id = next_id.masked_fill(finished, pad_id)
            tgt = torch.cat([tgt, next_id[:, None]], dim=1)  # -> (B, T_t + 1)
            finished |= next_id == eos_id
            if finished.all():
                break
    return tgt[:, 1:]


def translate(model, sentences, src_vocab, tgt_vocab):
    """Translate sentences (strings or word sequences) with :func:`greedy_decode`.
    Introduced in Chapter 6.
    """
    if isinstance(sentences, str):
        sentences = [sentences]
    src = src_vocab.encode_batch(sentences)  # (B, T_s)
    out = greedy_decode(model, src, bos_id=tgt_vocab.bos_id, eos_id=tgt_vocab.eos_id)
    return [tgt_vocab.decode(row) for row in out]


def _strip(ids, eos_id, pad_id):
    """Ids up to and including the first ``<eos>``; the rest set to ``pad_id``."""
    is_eos = ids == eos_id
    after = (is_eos.cumsum(dim=1) - is_eos.long()) > 0  # past the first eos
    return ids.masked_fill(after, pad_id)


@torch.no_grad()
def exact_match(model, data, *, batch_size=1000, bos_id=1, eos_id=2):
    """Fraction of sentences whose greedy translation, ``<eos>`` included, equals the
    reference. Introduced in Chapter 6.
    """
    pad_id = model.config.pad_id
    correct = 0
    for batch in iterate_batches(data, batch_size, pad_id=pad_id):
        reference = batch.tgt_out  # words, then <eos>, then padding
        T = reference.shape[1]
        out = greedy_decode(model, batch.src, max_len=T, bos_id=bos_id, eos_id=eos_id)
        out = _strip(out, eos_id, pad_id)
        if out.shape[1] < T:  # every sentence stopped early: pad to compare
            out = F.pad(out, (0, T - out.shape[1]), value=pad_id)
        correct += int((out[:, :T] == reference).all(dim=1).sum())
    return correct / data.src.shape[0]


@torch.no_grad()
def sequence_loss(model, data, *, batch_size=1000):
    """Mean cross-entropy per target token under teacher forcing, in eval mode.
    Introduced in Chapter 6.
    """
    pad_id = model.config.pad_id
    total, count = 0.0, 0
    with evaluating(model):
        for batch in iterate_batches(data, batch_size, pad_id=pad_id):
            logits = model(batch.src, batch.tgt_in)  # (B, T_t) -> (B, T_t, V)
            total += float(_token_loss(logits, batch.tgt_out, pad_id, "sum"))
            count += int((batch.tgt_out != pad_id).sum())
    return total / count


def _token_loss(logits, targets, pad_id, reduction="mean"):
    """Cross-entropy over the real target tokens; padding is ignored."""
    B, T, V = logits.shape
    return F.cross_entropy(
        logits.reshape(B * T, V),  # (B, T, V) -> (B*T, V)
        targets.reshape(B * T),  # (B, T) -> (B*T,)
        ignore_index=pad_id,
        reduction=reduction,
    )


class EpochLog(NamedTuple):
    """What :func:`train` records after each epoch. Introduced in Chapter 6."""

    epoch: int
    loss: float
    val_exact_match: float | None
    seconds: float


def train(
    model,
    data,
    *,
    epochs,
    batch_size=64,
    lr=3e-3,
    warmup_steps=100,
    seed=0,
    val_data=None,
    log=print,
):
    """Fit the model with AdamW on teacher-forced cross-entropy.
    Introduced in Chapter 6.

    Linear warm-up for ``warmup_steps``, then a cosine to 0; gradients clipped to norm
    1; batches shuffled with a generator seeded by ``seed``. With ``val_data``, the
    exact-match accuracy is measured after each epoch. ``log`` gets one line per epoch
    (``None``: silence). Returns the loss of every step and one :class:`EpochLog` per
    epoch; the model is left in eval mode.
    """
    epochs = require_int(epochs, "epochs")
    batch_size = require_int(batch_size, "batch_size")
    warmup_steps = require_int(warmup_steps, "warmup_steps", minimum=0)
    lr = require_positive(lr, "lr", hint="use e.g. lr=3e-3")
    pad_id = model.config.pad_id
    N = data.src.shape[0]
    steps_per_epoch = math.ceil(N / batch_size)
    total_steps = epochs * steps_per_epoch
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=0.01
    )

    def lr_factor(step):  # the learning rate at ``step`` is lr * lr_factor(step)
        return lr_at(
            step, max_lr=1.0, warmup_steps=warmup_steps, total_steps=total_steps
        )

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor)
    generator = torch.Generator().manual_seed(seed)
    step_losses, history = [], []
    start = time.perf_counter()
    model.train()
    for epoch in range(1, epochs + 1):
        epoch_losses = []
        for batch in iterate_batches(data, batch_size, generator=generator):
            logits = model(batch.src, batch.tgt_in)  # (B, T_t) -> (B, T_t, V)
            loss = _token_loss(logits, batch.tgt_out, pad_id)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            epoch_losses.append(loss.item())
        step_losses += epoch_losses
        accuracy = None if val_data is None else exact_match(model, val_data)
        entry = EpochLog(
            epoch=epoch,
            loss=sum(epoch_losses) / len(epoch_losses),
            val_exact_match=accuracy,
            seconds=time.perf_counter() - start,
        )
        history.append(entry)
        if log is not None:
            val = "" if accuracy is None else f"  val exact match {accuracy:6.1%}"
            log(f"epoch {epoch:>2}/{epochs}  loss {entry.loss:.4f}{val}")
    model.eval()
    return step_losses, history
