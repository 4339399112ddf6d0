"""Recurrent encoder-decoders, with and without additive attention (Chapter 10).

An encoder GRU reads the source one word at a time, a decoder GRU writes the target.
:class:`GRUSeq2Seq` is the decoder in three forms: from the encoder's last state
alone (``attention=False``); reading that summary at every step too, as in Cho et
al. 2014 (``summary_every_step=True``); or querying all encoder states with
:class:`AdditiveAttention` before every word (``attention=True``). The models have
the ``encode``, ``decode``, ``forward`` and ``config`` of
:class:`attn_course.seq2seq.Seq2SeqTransformer`, so Chapter 6's training and
scoring work unchanged. :func:`exact_match_by_length` splits the accuracy by
source length.

Shapes
------
src : (B, T_s)
tgt_in : (B, T_t)
memory : (B, T_s, D)
logits : (B, T_t, V)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ._validate import (
    kind_of,
    require_bool_mask,
    require_flag,
    require_int,
    require_tensor,
)
from .seq2seq import _check_ids, exact_match
from .translation import Batch

__all__ = [
    "AdditiveAttention",
    "GRUSeq2Seq",
    "GRUSeq2SeqConfig",
    "exact_match_by_length",
]


class AdditiveAttention(nn.Module):
    """Additive (Bahdanau) attention of one query vector over a sequence of keys.

    ``score_j = v . tanh(W_query q + W_key k_j)``, scored by a network of
    ``hidden_dim`` units without biases; padding keys get ``-inf``, a softmax gives the
    weights and the context is the weighted sum of the keys (which are the values too).
    A row of padding only gets zero weights and context. Introduced in Chapter 10.

    Shapes
    ------
    query : (B, d_in)
    keys : (B, T_k, d_memory)
    key_padding_mask : (B, T_k)
    weights : (B, T_k)
    context : (B, d_memory)

    Examples
    --------
    >>> attention = AdditiveAttention(query_dim=6, key_dim=4, hidden_dim=5)
    >>> sum(p.numel() for p in attention.parameters())  # 5 * (6 + 4 + 1)
    55
    >>> query, keys = torch.randn(2, 6), torch.randn(2, 3, 4)
    >>> mask = torch.tensor([[True, True, True], [True, False, False]])  # (B, T_k)
    >>> context, weights = attention(query, keys, mask, return_weights=True)
    >>> weights[1].tolist()  # the second sentence has one real key
    [1.0, 0.0, 0.0]
    """

    def __init__(self, query_dim, key_dim, hidden_dim):
        super().__init__()
        self.query_dim = require_int(query_dim, "query_dim")
        self.key_dim = require_int(key_dim, "key_dim")
        self.hidden_dim = require_int(hidden_dim, "hidden_dim")
        self.W_query = nn.Linear(query_dim, hidden_dim, bias=False)
        self.W_key = nn.Linear(key_dim, hidden_dim, bias=False)
        self.v = nn.Linear(hidden_dim, 1, bias=False)

    def _check(self, query, keys, key_padding_mask):
        require_tensor(query, "query")
        require_tensor(keys, "keys")
        if query.dim() != 2 or query.shape[-1] != self.query_dim:
            raise ValueError(
                f"expected query of shape (B, {self.query_dim}), got "
                f"{tuple(query.shape)}; one query vector per sentence"
            )
        if keys.dim() != 3 or keys.shape[-1] != self.key_dim:
            raise ValueError(
                f"expected keys of shape (B, T_k, {self.key_dim}), got "
                f"{tuple(keys.shape)}"
            )
        if keys.shape[0] != query.shape[0]:
            raise ValueError(
                f"query has B={query.shape[0]} rows but keys B={keys.shape[0]}; "
                "give one query per sequence of keys"
            )
        if key_padding_mask is not None:
            require_bool_mask(
                key_padding_mask, "key_padding_mask", meaning="True = real token"
            )
            if tuple(key_padding_mask.shape) != tuple(keys.shape[:2]):
                raise ValueError(
                    f"expected key_padding_mask of shape {tuple(keys.shape[:2])} "
                    f"(B, T_k), got {tuple(key_padding_mask.shape)}"
                )

    def forward(self, query, keys, key_padding_mask=None, *, return_weights=False):
        """The context vector, and the weights if ``return_weights``; see the class
        docstring for shapes."""
        self._check(query, keys, key_padding_mask)
        hidden = torch.tanh(
            self.W_query(query)[:, None, :]  # (B, d_in) -> (B, 1, hidden_dim)
            + self.W_key(keys)  # (B, T_k, d_memory) -> (B, T_k, hidden_dim)
        )  # (B, T_k, hidden_dim)
        scores = self.v(hidden).squeeze(-1)  # (B, T_k, 1) -> (B, T_k)
        if key_padding_mask is not None:
            scores = scores.masked_fill(~key_padding_mask, float("-inf"))
            # A row with no real key: softmax of zeros, then zeroed by the mask.
            empty = ~key_padding_mask.any(dim=-1, keepdim=True)  # (B, 1)
            scores = scores.masked_fill(empty, 0.0)
        weights = torch.softmax(scores, dim=-1)  # (B, T_k), rows sum to 1
        if key_padding_mask is not None:
            weights = weights * key_padding_mask  # zero only for empty rows
        context = (weights[:, :, None] * keys).sum(dim=1)  # (B, T_k, d) -> (B, d)
        if return_weights:
            return context, weights
        return context


@dataclass(frozen=True)
class GRUSeq2SeqConfig:
    """Sizes and settings of a :class:`GRUSeq2Seq`. Introduced in Chapter 10."""

    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 64
    attention: bool = False
    context_length: int = 16
    pad_id: int = 0
    summary_every_step: bool = False


class GRUSeq2Seq(nn.Module):
    """A GRU encoder-decoder for translation, with or without additive attention.

    The encoder skips padding (packed sequences). The decoder starts from the encoder's
    state after the last real word. Without attention that vector is all the decoder
    sees of the source. With ``summary_every_step`` it is also the context ``c`` of
    every step: the GRU reads ``[embedding; c]`` and the logits come from
    ``[state; c]`` (Cho et al. 2014, without their output layer's previous word and
    ``tanh`` layers). With ``attention``, each step first computes a context with
    :class:`AdditiveAttention` (the previous state as query), runs a GRU cell on
    ``[embedding; context]`` and reads the logits from ``[new state; context]``, for
    ``D (2 D + 1)`` more parameters. Introduced in Chapter 10.

    Shapes
    ------
    src : (B, T_s)
    tgt_in : (B, T_t)
    logits : (B, T_t, V)
    weights : (B, T_t, T_s)

    Examples
    --------
    >>> model = GRUSeq2Seq(10, 12, d_model=8, attention=True)
    >>> src = torch.tensor([[3, 4, 5, 0], [6, 7, 8, 9]])  # (B=2, T_s=4), 0 = <pad>
    >>> tgt_in = torch.tensor([[1, 3, 4], [1, 5, 0]])  # (B=2, T_t=3), 1 = <bos>
    >>> logits, weights = model(src, tgt_in, return_weights=True)
    >>> logits.shape, weights.shape
    (torch.Size([2, 3, 12]), torch.Size([2, 3, 4]))
    >>> float(weights[0, :, 3].sum().detach())  # no weight on <pad>
    0.0
    """

    def __init__(
        self,
        src_vocab_size,
        tgt_vocab_size,
        *,
        d_model=64,
        attention=False,
        context_length=16,
        pad_id=0,
        summary_every_step=False,
    ):
        super().__init__()
        for name, value in (
            ("src_vocab_size", src_vocab_size),
            ("tgt_vocab_size", tgt_vocab_size),
            ("d_model", d_model),
            ("context_length", context_length),
        ):
            require_int(value, name)
        require_int(pad_id, "pad_id", minimum=0, hint="use the id of <pad>, e.g. 0")
        if pad_id >= min(src_vocab_size, tgt_vocab_size):
            raise ValueError(
                f"pad_id={pad_id} is not an id of a vocabulary of "
                f"{min(src_vocab_size, tgt_vocab_size)} tokens; use the id of <pad>"
            )
        require_flag(attention, "attention", hint="True adds additive attention")
        require_flag(
            summary_every_step,
            "summary_every_step",
            hint="True feeds the encoder's last state to every decoder step",
        )
        if attention and summary_every_step:
            raise ValueError(
                "attention=True and summary_every_step=True: the attention's context "
                "replaces the summary at every step; choose one of the two"
            )
        self.config = c = GRUSeq2SeqConfig(
            src_vocab_size,
            tgt_vocab_size,
            d_model,
            attention,
            context_length,
            pad_id,
            summary_every_step,
        )
        D = d_model
        self.src_embed = nn.Embedding(src_vocab_size, D, padding_idx=pad_id)
        self.tgt_embed = nn.Embedding(tgt_vocab_size, D, padding_idx=pad_id)
        self.encoder = nn.GRU(D, D, batch_first=True)
        if c.attention:
            self.attention = AdditiveAttention(D, D, D)
            self.decoder = nn.GRUCell(2 * D, D)  # input: [embedding; context]
            self.lm_head = nn.Linear(2 * D, tgt_vocab_size)  # [state; context]
        else:
            self.attention = None
            width = 2 * D if c.summary_every_step else D  # [embedding; c] or embedding
            self.decoder = nn.GRU(width, D, batch_first=True)
            self.lm_head = nn.Linear(width, tgt_vocab_size)  # [state; c] or state

    def _ids(self, ids, name):
        _check_ids(ids, name, self.config.context_length, "build the model with")
        return ids

    def encode(self, src):
        """The encoder's state after each source word, ``(B, T_s, D)``; zeros at
        padding.
        """
        src = self._ids(src, "src")
        lengths = (src != self.config.pad_id).sum(dim=1)  # (B,)
        if (lengths == 0).any():
            raise ValueError(
                f"source row {int((lengths == 0).nonzero()[0])} has no real token; "
                "every sentence needs at least one word"
            )
        packed = pack_padded_sequence(
            self.src_embed(src), lengths.cpu(), batch_first=True, enforce_sorted=False
        )  # the GRU sees each sentence's real words only
        states, _ = self.encoder(packed)
        memory, _ = pad_packed_sequence(
            states, batch_first=True, total_length=src.shape[1]
        )  # (B, T_s, D), zeros after each sentence's last word
        return memory

    def decode(self, tgt_in, memory, src_mask, *, return_weights=False):
        """Logits for every target position, and with attention, if asked, the weights:
        row ``i`` is the attention over the source before writing target word ``i + 1``.
        """
        tgt_in = self._ids(tgt_in, "tgt_in")
        require_bool_mask(src_mask, "src_mask", meaning="True = real token")
        last = src_mask.sum(dim=1) - 1  # (B,): index of each last real word
        rows = torch.arange(memory.shape[0], device=memory.device)
        state = memory[rows, last]  # (B, D): the encoder's final state
        embedded = self.tgt_embed(tgt_in)  # (B, T_t, D)
        if self.attention is None:
            if return_weights:
                raise ValueError(
                    "this model has no attention weights to return; build it with "
                    "attention=True"
                )
            if not self.config.summary_every_step:
                states, _ = self.decoder(embedded, state[None])  # (B, T_t, D)
                return self.lm_head(states)  # (B, T_t, V)
            summary = state[:, None].expand_as(embedded)  # c at every step: (B, T_t, D)
            states, _ = self.decoder(
                torch.cat([embedded, summary], dim=-1), state[None]
            )
            return self.lm_head(torch.cat([states, summary], dim=-1))  # (B, T_t, V)
        outputs, all_weights = [], []
        for t in range(tgt_in.shape[1]):  # one target word after the other
            context, weights = self.attention(
                state, memory, src_mask, return_weights=True
            )  # (B, D), (B, T_s): the previous state queries the source
            state = self.decoder(
                torch.cat([embedded[:, t], context], dim=-1), state
            )  # (B, 2 D), (B, D) -> (B, D)
            outputs.append(torch.cat([state, context], dim=-1))  # (B, 2 D)
            all_weights.append(weights)
        logits = self.lm_head(
            torch.stack(outputs, dim=1)
        )  # (B, T_t, 2 D) -> (B, T_t, V)
        if return_weights:
            return logits, torch.stack(all_weights, dim=1)  # (B, T_t, T_s)
        return logits

    def forward(self, src, tgt_in, *, return_weights=False):
        """Logits, and the attention weights if asked; see the class docstring."""
        memory = self.encode(src)  # (B, T_s) -> (B, T_s, D)
        return self.decode(
            tgt_in, memory, src != self.config.pad_id, return_weights=return_weights
        )


def exact_match_by_length(model, data, *, batch_size=1000):
    """Exact-match accuracy of greedy translations for each source length:
    ``{length: (accuracy, number of sentences)}``. Introduced in Chapter 10.

    Examples
    --------
    >>> from attn_course import translation
    >>> pairs = translation.make_splits(20, 1, 1, seed=0).train
    >>> src_vocab, tgt_vocab = translation.source_vocab(), translation.target_vocab()
    >>> data = translation.make_batch(pairs, src_vocab, tgt_vocab)
    >>> model = GRUSeq2Seq(len(src_vocab), len(tgt_vocab), d_model=8)
    >>> table = exact_match_by_length(model, data)  # an untrained model: 0 everywhere
    >>> sum(count for _, count in table.values()), min(table) >= 5
    (20, True)
    """
    if not isinstance(data, Batch):
        raise TypeError(
            f"data must be a translation.Batch, got {kind_of(data)}; e.g. "
            "translation.make_batch(pairs, src_vocab, tgt_vocab)"
        )
    require_int(batch_size, "batch_size")
    lengths = (data.src != model.config.pad_id).sum(dim=1)  # (N,)
    table = {}
    for length in sorted(set(lengths.tolist())):
        rows = lengths == length
        group = Batch(data.src[rows], data.tgt_in[rows], data.tgt_out[rows])
        table[length] = (
            exact_match(model, group, batch_size=batch_size),
            int(rows.sum()),
        )
    return table
