"""A small encoder-decoder transformer that learns to translate on a CPU (Chapter 6).

The model has the shape of the 2017 transformer, scaled down:

- token embeddings plus fixed **sinusoidal** positions, for the source and the target;
- an **encoder**: layers of bidirectional self-attention
  (:class:`attn_course.modules.MultiHeadAttention` with ``causal=False``) and a
  feed-forward network;
- a **decoder**: layers of causal self-attention, **cross-attention** to the
  encoder's output (:class:`attn_course.modules.CrossAttention`) and a feed-forward
  network;
- a residual connection around every sub-layer, with layer norm *before* it
  (pre-norm), and a final layer norm and linear layer that give one score (logit)
  per target-vocabulary word.

Padding is masked on both sides: no query attends to a ``<pad>`` key. The module
returns attention weights when asked (``return_weights=True``) instead of storing
them. :func:`greedy_decode` translates, :func:`train` fits the model and
:func:`exact_match` measures it; :func:`evaluating` switches a model to eval mode
for a ``with`` block. ``memory`` is the encoder's output, which cross-attention
reads.

Shapes
------
src : (B, T_s)
tgt_in : (B, T_t)
memory : (B, T_s, D)
logits : (B, T_t, V)

Introduced in Chapter 6.
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
    """Sizes and settings of a :class:`Seq2SeqTransformer`.

    Introduced in Chapter 6.

    Parameters
    ----------
    src_vocab_size, tgt_vocab_size : int
        Number of source and target tokens, special tokens included.
    d_model : int, default 64
        Width ``D`` of every token vector.
    num_heads : int, default 4
        Heads ``H`` of every attention layer; ``d_model`` must be divisible by it.
    num_layers : int, default 2
        Encoder layers, and as many decoder layers.
    d_ff : int, default 128
        Hidden width of the feed-forward networks.
    context_length : int, default 16
        The longest source or target sequence the model accepts.
    dropout : float, default 0.0
        Dropout on attention weights and after each sub-layer while training.
    pad_id : int, default 0
        Id of ``<pad>`` in both vocabularies.
    causal_decoder : bool, default True
        ``False`` lets the decoder's self-attention see future target tokens; that
        is a bug, kept as an option only for the chapter's exercise.
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

    ``x = x + attention(norm(x))`` then ``x = x + feed_forward(norm(x))``: every
    source token may attend to every real source token, before and after it.
    ``forward(x, src_mask, return_weights=False)`` takes a bool ``src_mask``,
    ``True`` = real token, and also returns the weights when asked. A
    :class:`attn_course.block.TransformerBlock` with ``causal=False`` and ReLU.
    Introduced in Chapter 6.

    Parameters
    ----------
    d_model, num_heads, d_ff, context_length : int
    dropout : float, default 0.0

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
    """Causal self-attention, cross-attention and a feed-forward network.

    ``y = y + self_attention(norm(y))``: each target token looks at itself and the
    target tokens before it. ``y = y + cross_attention(norm(y), memory)``: each
    target token looks at every real source token (the encoder's output,
    ``memory``). ``y = y + feed_forward(norm(y))``. The masks are bool, ``True`` =
    real token; when asked, ``forward`` also returns the self-attention and the
    cross-attention weights. Introduced in Chapter 6.

    Parameters
    ----------
    d_model, num_heads, d_ff, context_length : int
    dropout : float, default 0.0
    causal : bool, default True
        Mask future target tokens in the self-attention (always, except to show
        what goes wrong without it).

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
    """Attention weights of every layer of a :class:`Seq2SeqTransformer`.

    Introduced in Chapter 6.

    Attributes
    ----------
    encoder : tuple of torch.Tensor
        Encoder self-attention, one tensor per layer.
    decoder : tuple of torch.Tensor
        Decoder (causal) self-attention, one tensor per layer.
    cross : tuple of torch.Tensor
        Decoder cross-attention, one tensor per layer: row ``i`` says which source
        tokens target position ``i`` looked at.

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

    ``src`` and ``tgt_in`` are padded with ``pad_id`` on the right; ``tgt_in``
    starts with ``<bos>``, and position ``i`` of the logits predicts target token
    ``i + 1``. Introduced in Chapter 6.

    Parameters
    ----------
    config : Seq2SeqConfig

    Attributes
    ----------
    src_embed, tgt_embed : nn.Embedding
        Token embeddings, one row of width ``D`` per source or target token.
    positions : torch.Tensor
        Buffer ``(context_length, D)`` from :func:`sinusoidal_positions`.
    encoder, decoder : nn.ModuleList
        ``num_layers`` :class:`EncoderLayer` and :class:`DecoderLayer`.
    encoder_norm, decoder_norm : nn.LayerNorm
        Final layer norms (pre-norm layers leave their output unnormalised).
    lm_head : nn.Linear
        ``D -> V_t``: one logit per target word.

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
        """Run the encoder over source ids.

        Returns
        -------
        memory : torch.Tensor
            One vector per source token.
        weights : tuple of torch.Tensor
            Only if ``return_weights=True``: the self-attention weights of every
            layer.

        Shapes
        ------
        src : (B, T_s)
        memory : (B, T_s, D)
        weights[layer] : (B, H, T_s, T_s)
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
        """Run the decoder over target ids, looking at the encoder's ``memory``.

        Parameters
        ----------
        tgt_in : torch.Tensor
            Target ids, starting with ``<bos>``.
        memory : torch.Tensor
            The encoder's output, from :meth:`encode`.
        src_mask : torch.Tensor
            Bool, ``True`` = real source token.
        return_weights : bool, default False

        Returns
        -------
        logits : torch.Tensor
        weights : (tuple, tuple)
            Only if ``return_weights=True``: per layer, the self-attention weights
            and the cross-attention weights.

        Shapes
        ------
        tgt_in : (B, T_t)
        memory : (B, T_s, D)
        src_mask : (B, T_s)
        logits : (B, T_t, V)
        self_weights[layer], cross_weights[layer] : (B, H, T_t, T_t), (B, H, T_t, T_s)
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
        """Logits for every target position, given the source and the target so far.

        Parameters
        ----------
        src : torch.Tensor
            Source ids, padded with ``pad_id``.
        tgt_in : torch.Tensor
            Target ids starting with ``<bos>`` (teacher forcing).
        return_weights : bool, default False
            Also return an :class:`AttentionMaps` with every layer's weights.

        Returns
        -------
        torch.Tensor or (torch.Tensor, AttentionMaps)
            The logits; see the class docstring for shapes.
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
    """Raise a clear error unless ``ids`` is a ``(B, T)`` LongTensor of token ids
    with ``T <= context_length``; ``how`` starts the fix for a long input, e.g.
    ``"use a Seq2SeqConfig with"``."""
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
    """Translate by always picking the most likely next word.

    The encoder runs once; the decoder runs once per output word on everything
    generated so far, and the argmax of its last position becomes the next word.
    A sentence that has produced ``<eos>`` gets ``<pad>`` after it; decoding stops
    when every sentence is finished or after ``max_len`` words. The model runs in
    eval mode (see :func:`evaluating`). Introduced in Chapter 6.

    Parameters
    ----------
    model : Seq2SeqTransformer
    src : torch.Tensor
        Source ids.
    max_len : int, optional
        Most words to generate (``<eos>`` included); default ``context_length - 1``.
    bos_id, eos_id : int
        Ids of ``<bos>`` and ``<eos>``.

    Returns
    -------
    torch.Tensor
        The generated ids, without the leading ``<bos>``; ``N`` is at most
        ``max_len``.

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

    Parameters
    ----------
    model : Seq2SeqTransformer
    sentences : str or sequence of (str or sequence of str)
        One sentence, or several.
    src_vocab, tgt_vocab : attn_course.translation.Vocab

    Returns
    -------
    list of tuple of str
        One tuple of target words per sentence.
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
    """Fraction of sentences whose greedy translation equals the reference exactly.

    Introduced in Chapter 6.

    Parameters
    ----------
    model : Seq2SeqTransformer
    data : attn_course.translation.Batch
        Padded source and target ids of the sentences to score.
    batch_size : int, default 1000

    Returns
    -------
    float
        Between 0 and 1. A sentence counts only if every word and the ``<eos>``
        are right.
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
    """Mean cross-entropy per target token under teacher forcing (no training).

    The model runs in eval mode (see :func:`evaluating`). Introduced in Chapter 6.

    Parameters
    ----------
    model : Seq2SeqTransformer
    data : attn_course.translation.Batch
        Padded source and target ids.
    batch_size : int, default 1000

    Returns
    -------
    float
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

    The learning rate rises linearly for ``warmup_steps`` steps, then falls along a
    cosine to 0 at the last step. Gradients are clipped to norm 1. Batches are
    shuffled with a generator seeded by ``seed``, so a run is reproducible on one
    machine. The model is left in eval mode. Introduced in Chapter 6.

    Parameters
    ----------
    model : Seq2SeqTransformer
    data : attn_course.translation.Batch
        All training pairs, padded.
    epochs : int
        Passes over ``data``.
    batch_size : int, default 64
    lr : float, default 3e-3
        Peak learning rate.
    warmup_steps : int, default 100
    seed : int, default 0
        Seed of the shuffling.
    val_data : Batch, optional
        If given, the greedy exact-match accuracy on it is measured after each epoch.
    log : callable or None, default print
        Called with one line of text per epoch (loss, and the validation accuracy
        when ``val_data`` is given); ``None`` for silence. The time each epoch ended
        at is in the returned history, not in the line.

    Returns
    -------
    step_losses : list of float
        The training loss of every step.
    epochs : list of EpochLog
        One entry per epoch.
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
