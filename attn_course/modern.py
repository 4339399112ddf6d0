"""The pieces of a 2026 transformer block that Chapter 8's GPT-2 block lacks.

- :class:`RMSNorm`: scale each token to unit root mean square, no centring and no
  bias (Zhang & Sennrich 2019).
- :class:`SwiGLU`: a gated feed-forward network (Shazeer 2020), and
  :func:`swiglu_hidden`, the width that gives it a GELU network's parameters.
- :func:`attention_with_sinks`: attention whose softmax has one extra learned logit
  per head, a *sink* that can take weight from every key (gpt-oss, OpenAI 2025).
- :class:`ModernAttention`: causal multi-head attention with QK-norm, sinks, a
  sliding window and no output bias, each an option, for Chapter 8's GPT.

Introduced in Chapter 11.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from ._validate import (
    require_flag,
    require_floating,
    require_int,
    require_positive,
    require_tensor,
)
from .efficient import sliding_window_mask
from .functional import _check_inputs, _masked
from .modules import MultiHeadAttention

__all__ = [
    "ModernAttention",
    "RMSNorm",
    "SwiGLU",
    "attention_with_sinks",
    "swiglu_hidden",
]

_WINDOW_HINT = "it counts the keys a query sees, itself included"


class RMSNorm(nn.Module):
    """Divide each token vector by its root mean square, then scale by ``weight``.

    ``x / sqrt(mean(x ** 2) + eps) * weight`` over the last dimension (Zhang &
    Sennrich 2019, arXiv:1910.07467): a layer norm without subtracting the mean and
    without a bias. ``weight`` starts as ones. Computes what ``torch.nn.RMSNorm(d,
    eps=eps)`` does. Introduced in Chapter 11.

    Shapes
    ------
    x : (..., D) -> (..., D)

    Examples
    --------
    >>> x = torch.tensor([[3.0, -4.0]])  # root mean square sqrt(12.5)
    >>> RMSNorm(2)(x).round(decimals=4)
    tensor([[ 0.8485, -1.1314]], grad_fn=<RoundBackward1>)
    """

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.d = require_int(d, "d", hint="it is the width of each token vector")
        self.eps = require_positive(eps, "eps", hint="use e.g. eps=1e-6")
        self.weight = nn.Parameter(torch.ones(self.d))

    def forward(self, x):
        mean_square = x.pow(2).mean(dim=-1, keepdim=True)  # (..., D) -> (..., 1)
        return x * torch.rsqrt(mean_square + self.eps) * self.weight

    def extra_repr(self):
        return f"{self.d}, eps={self.eps}"


def swiglu_hidden(d_ff, *, multiple_of=8):
    """The hidden width of a :class:`SwiGLU` with as many weights as a two-layer
    feed-forward network of hidden width ``d_ff``.

    A GELU network has ``2 * D * d_ff`` weights, a SwiGLU ``3 * D * h``: equal at
    ``h = 2 * d_ff / 3``, ``8 * D / 3`` for the usual ``d_ff = 4 * D``. Rounded up to
    a multiple of ``multiple_of``: 8 keeps the widths even for the matrix kernels
    while adding at most ``3 * D * 7`` weights (LLaMA rounds to 256 at widths of
    thousands). Introduced in Chapter 11.

    Examples
    --------
    >>> swiglu_hidden(4 * 64)  # 170.7 rounded up to a multiple of 8
    176
    """
    d_ff = require_int(d_ff, "d_ff", hint="e.g. d_ff=4 * d_model")
    multiple_of = require_int(multiple_of, "multiple_of", hint="e.g. multiple_of=8")
    return multiple_of * math.ceil(2 * d_ff / (3 * multiple_of))


class SwiGLU(nn.Module):
    """A gated feed-forward network: ``down_proj(silu(gate_proj(x)) * up_proj(x))``.

    The gate, squashed by SiLU (``x * sigmoid(x)``), scales the ``up_proj`` features
    one by one (Shazeer 2020, arXiv:2002.05202). Three bias-free ``nn.Linear``s;
    :func:`swiglu_hidden` gives the ``d_hidden`` that matches a GELU network's
    parameters. Dropout on the output. Introduced in Chapter 11.

    Shapes
    ------
    x : (B, T, D) -> (B, T, D)

    Examples
    --------
    >>> SwiGLU(d_model=8, d_hidden=24)(torch.zeros(2, 3, 8)).shape
    torch.Size([2, 3, 8])
    """

    def __init__(self, d_model, d_hidden, dropout=0.0):
        super().__init__()
        d_model = require_int(d_model, "d_model")
        d_hidden = require_int(d_hidden, "d_hidden", hint="e.g. swiglu_hidden(4 * D)")
        self.gate_proj = nn.Linear(d_model, d_hidden, bias=False)
        self.up_proj = nn.Linear(d_model, d_hidden, bias=False)
        self.down_proj = nn.Linear(d_hidden, d_model, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        gated = F.silu(self.gate_proj(x)) * self.up_proj(x)  # (B, T, d_hidden)
        return self.dropout(self.down_proj(gated))  # (B, T, D)


def attention_with_sinks(
    query,
    key,
    value,
    sink_logits,
    *,
    is_causal=False,
    attn_mask=None,
    return_weights=False,
):
    """Scaled dot-product attention with one extra logit per head in the softmax.

    Each row's scores get a column ``sink_logits[h]`` before the softmax, and the
    column is dropped after it: the weights on the keys sum to less than 1, and a
    head can give a query almost nothing to read (gpt-oss, OpenAI 2025,
    arXiv:2508.10925). A very negative sink is plain attention. Masks as in
    :func:`attn_course.scaled_dot_product_attention` (``True`` = may attend); a query
    whose keys are all masked puts all its weight on the sink and reads zeros.
    Introduced in Chapter 11.

    Shapes
    ------
    query : (B, H, T_q, d_k)
    key : (B, H, T_k, d_k)
    value : (B, H, T_k, d_v)
    sink_logits : (H,)
    attn_mask : (..., T_q, T_k)
    output : (B, H, T_q, d_v)
    weights : (B, H, T_q, T_k)

    Examples
    --------
    >>> q = k = v = torch.zeros(1, 2, 3, 4)  # equal scores
    >>> sinks = torch.tensor([0.0, -1e4])  # head 1: no sink
    >>> _, weights = attention_with_sinks(q, k, v, sinks, return_weights=True)
    >>> weights.sum(dim=-1)  # head 0 gives 1 part in 4 to its sink
    tensor([[[0.7500, 0.7500, 0.7500],
             [1.0000, 1.0000, 1.0000]]])
    """
    _, _, scale = _check_inputs(query, key, value, attn_mask, 0.0, is_causal, None)
    require_floating(require_tensor(sink_logits, "sink_logits"), "sink_logits")
    if query.dim() < 3:
        raise ValueError(
            "query needs a head dimension (..., H, T_q, d_k) for the per-head sinks, "
            f"got shape {tuple(query.shape)}; add one, e.g. query.unsqueeze(-3)"
        )
    H = query.size(-3)
    if tuple(sink_logits.shape) != (H,):
        raise ValueError(
            f"sink_logits must have shape (H,) = ({H},), one logit per head of query "
            f"{tuple(query.shape)}, got shape {tuple(sink_logits.shape)}"
        )
    return _with_sinks(
        query, key, value, sink_logits, attn_mask, is_causal, scale, return_weights
    )


def _with_sinks(query, key, value, sink_logits, attn_mask, is_causal, scale, weights):
    """:func:`attention_with_sinks` on checked inputs; ``weights`` = return them."""
    scores = _masked(query @ key.transpose(-2, -1) * scale, attn_mask, is_causal)
    # One sink column per head: (H,) -> (..., H, T_q, 1).
    sinks = sink_logits.to(scores.dtype)[:, None, None].expand(*scores.shape[:-1], 1)
    # (..., T_q, T_k + 1) -> softmax -> drop the sink column -> (..., T_q, T_k)
    attention = torch.softmax(torch.cat([scores, sinks], dim=-1), dim=-1)[..., :-1]
    output = attention @ value  # (..., T_q, T_k) @ (..., T_k, d_v)
    return (output, attention) if weights else output


class ModernAttention(MultiHeadAttention):
    """Causal multi-head self-attention with the options of 2026 models.

    :class:`attn_course.MultiHeadAttention` (or, with ``num_kv_heads``,
    :class:`attn_course.GroupedQueryAttention`) plus: ``qk_norm``, an
    :class:`RMSNorm` over each head's features of the queries (``q_norm``) and keys
    (``k_norm``) before the scores, one weight of ``head_dim`` shared by the heads
    (Qwen3, OLMo 2); ``sinks``, a learned logit per head, ``sink_logits`` (zeros at
    first), through :func:`attention_with_sinks`; ``window``, the number of keys a
    query sees, itself included (:func:`attn_course.sliding_window_mask`); ``bias``,
    ``False`` for an ``out_proj`` without bias. Introduced in Chapter 11.

    Shapes
    ------
    x : (B, T, d_in)
    output : (B, T, d_out)
    weights : (B, H, T, T)

    Examples
    --------
    >>> attn = ModernAttention(8, 8, 6, 0.0, 2, qk_norm=True, sinks=True, window=3)
    >>> out, weights = attn(torch.randn(1, 6, 8), return_weights=True)
    >>> bool(weights[0, :, 5, :3].eq(0).all())  # token 5 sees tokens 3 to 5 only
    True
    """

    _shown = MultiHeadAttention._shown + ("qk_norm", "sinks", "window")

    def __init__(
        self,
        d_in,
        d_out,
        context_length,
        dropout,
        num_heads,
        qkv_bias=False,
        *,
        num_kv_heads=None,
        qk_norm=False,
        sinks=False,
        window=None,
        bias=True,
    ):
        given = (d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        self._build(given, True, num_kv_heads=num_kv_heads)
        self.qk_norm = require_flag(qk_norm, "qk_norm")
        self.sinks = require_flag(sinks, "sinks")
        if window is not None:
            window = require_int(window, "window", hint=_WINDOW_HINT)
        self.window = window
        if not require_flag(bias, "bias"):
            self.out_proj = nn.Linear(self.d_out, self.d_out, bias=False)
        if qk_norm:
            self.q_norm = RMSNorm(self.head_dim)
            self.k_norm = RMSNorm(self.head_dim)
        if sinks:
            self.sink_logits = nn.Parameter(torch.zeros(self.num_heads))

    def forward(self, x, *, return_weights=False, cache=None, attn_mask=None, **rest):
        """As :meth:`attn_course.MultiHeadAttention.forward`; the window joins
        ``attn_mask``."""
        if self.window is not None:
            past = 0 if cache is None else len(cache)
            T_k = past + x.size(-2)
            window = sliding_window_mask(T_k, self.window, device=x.device)[past:]
            attn_mask = window if attn_mask is None else attn_mask & window
        return super().forward(
            x, return_weights=return_weights, cache=cache, attn_mask=attn_mask, **rest
        )

    def _weigh(self, queries, keys, values, attn_mask, is_causal):
        if self.qk_norm:
            queries, keys = self.q_norm(queries), self.k_norm(keys)  # (B, H, T, d)
        if not self.sinks:
            return super()._weigh(queries, keys, values, attn_mask, is_causal)
        scale = 1.0 / math.sqrt(self.head_dim)
        _, weights = _with_sinks(
            queries, keys, values, self.sink_logits, attn_mask, is_causal, scale, True
        )
        weights = self.dropout(weights)
        return weights @ values, weights  # (B, H, T_q, d), (B, H, T_q, T_k)
