"""The transformer block: attention and a feed-forward network, each in a residual.

Attention moves information between tokens; the feed-forward network transforms
each token on its own. Each half reads the *residual stream* and adds its output
back: **pre-norm** (GPT-2) ``x = x + attention(norm(x))``, with a final layer norm
after the last block; **post-norm** (2017) ``x = norm(x + attention(x))``.
:class:`TransformerBlock` serves Chapter 6's encoder (not causal) and Chapter 8's
GPT (causal). Introduced in Chapter 6 (encoder layers) and Chapter 8 (the block).
"""

from __future__ import annotations

import functools

from torch import nn

from ._validate import require_choice, require_flag
from .modern import ModernAttention, RMSNorm, SwiGLU, swiglu_hidden
from .modules import GroupedQueryAttention, MultiHeadAttention

__all__ = ["FeedForward", "TransformerBlock"]

ACTIVATIONS = {
    "relu": nn.ReLU,
    "gelu": nn.GELU,
    "gelu_tanh": functools.partial(nn.GELU, approximate="tanh"),
}
ACTIVATION_NAMES = {
    "relu": "max(0, x), as in the 2017 transformer",
    "gelu": "x times the normal CDF of x, exact (with erf)",
    "gelu_tanh": "GELU's tanh approximation, as in GPT-2",
}
NORMS = {"layer": "nn.LayerNorm (GPT-2)", "rms": "RMSNorm (2026 models)"}


class FeedForward(nn.Module):
    """Two linear layers with a non-linearity between, applied to each token alone.

    ``d_model -> d_ff -> d_model``; ``activation`` is "relu" (Chapter 6), "gelu"
    (``nn.GELU()``) or "gelu_tanh" (GPT-2's approximation). Dropout after the
    activation and on the output, where ``nn.TransformerEncoderLayer`` drops.
    ``bias=False`` leaves out both biases (Chapter 11). Introduced in Chapter 6.

    Shapes
    ------
    x : (B, T, D) -> (B, T, D)

    Examples
    --------
    >>> import torch
    >>> FeedForward(d_model=8, d_ff=16)(torch.zeros(2, 3, 8)).shape
    torch.Size([2, 3, 8])
    """

    def __init__(self, d_model, d_ff, dropout=0.0, *, activation="relu", bias=True):
        super().__init__()
        require_choice(activation, "activation", ACTIVATION_NAMES)
        self.net = nn.Sequential(
            nn.Linear(d_model, d_ff, bias=bias),  # (B, T, D) -> (B, T, d_ff)
            ACTIVATIONS[activation](),
            nn.Dropout(dropout),
            nn.Linear(d_ff, d_model, bias=bias),  # (B, T, d_ff) -> (B, T, D)
            nn.Dropout(dropout),
        )

    def forward(self, x):
        """Transform every token vector; see the class docstring for shapes."""
        return self.net(x)


class TransformerBlock(nn.Module):
    """Multi-head self-attention and a feed-forward network, each in a residual.

    Pre-norm: ``x = x + dropout(attention(norm1(x)))``, then
    ``x = x + feed_forward(norm2(x))``; post-norm puts ``norm1`` and ``norm2`` around
    the sums instead. With the same weights it computes what
    ``nn.TransformerEncoderLayer(..., batch_first=True, norm_first=...)`` does, dropouts
    in the same places (though not the same masks). For "gelu_tanh", give PyTorch's
    layer ``functools.partial(F.gelu, approximate="tanh")``: its fast path computes an
    ``nn.GELU(approximate="tanh")`` module as the exact GELU. ``num_kv_heads`` makes
    ``self_attn`` a :class:`attn_course.GroupedQueryAttention` (Chapter 9).

    Chapter 11's swaps: ``norm="rms"`` (:class:`attn_course.RMSNorm`),
    ``activation="swiglu"`` (:class:`attn_course.SwiGLU` with as many weights as a
    GELU network of width ``d_ff``), ``bias=False`` (no bias in ``out_proj``, the
    feed-forward network or the norms); ``qk_norm``, ``sinks`` and ``window`` make
    ``self_attn`` a causal :class:`attn_course.modern.ModernAttention`.
    Introduced in Chapter 8; Chapter 6's ``EncoderLayer`` is this block with
    ``causal=False``.

    Shapes
    ------
    x : (B, T, D) -> (B, T, D)
    key_padding_mask : (B, T)
    weights : (B, H, T, T)

    Examples
    --------
    >>> import torch
    >>> block = TransformerBlock(d_model=8, num_heads=2, d_ff=32, context_length=5)
    >>> out, weights = block(torch.randn(2, 5, 8), return_weights=True)
    >>> bool(weights[0, 0, 0, 1:].eq(0).all())  # causal: token 0 sees only itself
    True
    """

    def __init__(
        self,
        d_model,
        num_heads,
        d_ff,
        context_length,
        dropout=0.0,
        *,
        causal=True,
        activation="gelu",
        norm_first=True,
        qkv_bias=False,
        num_kv_heads=None,
        norm="layer",
        bias=True,
        qk_norm=False,
        sinks=False,
        window=None,
    ):
        super().__init__()
        require_choice(norm, "norm", NORMS)
        require_flag(bias, "bias")
        self.norm_first = bool(norm_first)
        self.norm1 = _norm(norm, d_model, bias)
        given = (d_model, d_model, context_length, dropout, num_heads, qkv_bias)
        if qk_norm or sinks or window is not None or not bias:
            if not causal:
                raise ValueError(
                    "qk_norm, sinks, window and bias=False are options of causal "
                    "self-attention: use causal=True, or leave them at their defaults"
                )
            self.self_attn = ModernAttention(
                *given,
                num_kv_heads=num_kv_heads,
                qk_norm=qk_norm,
                sinks=sinks,
                window=window,
                bias=bias,
            )
        elif num_kv_heads is None or num_kv_heads == num_heads:
            self.self_attn = MultiHeadAttention(*given, causal=causal)
        else:
            self.self_attn = GroupedQueryAttention(
                *given, num_kv_heads=num_kv_heads, causal=causal
            )
        self.norm2 = _norm(norm, d_model, bias)
        if activation == "swiglu":
            self.feed_forward = SwiGLU(d_model, swiglu_hidden(d_ff), dropout)
        else:
            self.feed_forward = FeedForward(
                d_model, d_ff, dropout, activation=activation, bias=bias
            )
        self.dropout = nn.Dropout(dropout)

    def forward(
        self,
        x,
        key_padding_mask=None,
        *,
        return_weights=False,
        cache=None,
        attn_mask=None,
    ):
        """Update every token. ``key_padding_mask`` is ``True`` for real tokens;
        ``cache``, a :class:`attn_course.LayerCache`, holds the keys and values of the
        tokens before ``x`` and receives those of ``x``; ``attn_mask`` (Chapter 11)
        goes to :meth:`attn_course.MultiHeadAttention.forward`.
        """
        attend = dict(
            key_padding_mask=key_padding_mask,
            return_weights=True,
            cache=cache,
            attn_mask=attn_mask,
        )
        if self.norm_first:
            attended, weights = self.self_attn(self.norm1(x), **attend)
            # (B, T, D), (B, H, T, T)
            x = x + self.dropout(attended)
            x = x + self.feed_forward(self.norm2(x))
        else:
            attended, weights = self.self_attn(x, **attend)
            x = self.norm1(x + self.dropout(attended))
            x = self.norm2(x + self.feed_forward(x))
        return (x, weights) if return_weights else x


def _norm(norm, d_model, bias):
    """The block's norm: ``nn.LayerNorm`` (without bias if not ``bias``) or RMSNorm."""
    return nn.LayerNorm(d_model, bias=bias) if norm == "layer" else RMSNorm(d_model)
