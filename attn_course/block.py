"""The transformer block: attention and a feed-forward network, each in a residual.

A transformer layer has two halves. Attention moves information *between* tokens;
the feed-forward network then transforms each token *on its own*. Each half reads
the running token vectors (the *residual stream*), and its output is added back to
them. Layer norm keeps the numbers each half reads at a steady scale:

- **pre-norm** (GPT-2 and most models since): ``x = x + attention(norm(x))``, then
  ``x = x + feed_forward(norm(x))``; the stream itself is never normalised, so a
  final layer norm follows the last block;
- **post-norm** (the 2017 transformer): ``x = norm(x + attention(x))``, then
  ``x = norm(x + feed_forward(x))``.

:class:`TransformerBlock` is the one block of the package: Chapter 6's encoder
layers are blocks without the causal mask, Chapter 8's GPT stacks causal ones.

Introduced in Chapter 6 (encoder layers) and Chapter 8 (the block on its own).
"""

from __future__ import annotations

import functools

from torch import nn

from ._validate import require_choice
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


class FeedForward(nn.Module):
    """Two linear layers with a non-linearity between, applied to each token alone.

    ``d_model -> d_ff -> d_model``; GPT-2 uses ``d_ff = 4 * d_model`` and GELU
    (Hendrycks and Gimpel, 2016) in its tanh approximation, ``"gelu_tanh"``;
    Chapter 6's translator uses ReLU. Introduced in Chapter 6.

    Parameters
    ----------
    d_model, d_ff : int
    dropout : float, default 0.0
        Dropout after the activation and on the output, in training mode: the two
        places where ``nn.TransformerEncoderLayer`` drops in its feed-forward half
        (``dropout`` and ``dropout2``).
    activation : {"relu", "gelu", "gelu_tanh"}, default "relu"
        ``"gelu"`` is the exact GELU, ``nn.GELU()``; ``"gelu_tanh"`` is
        ``nn.GELU(approximate="tanh")``, the form GPT-2's code computes.

    Shapes
    ------
    x : (B, T, D) -> (B, T, D)

    Examples
    --------
    >>> import torch
    >>> ff = FeedForward(d_model=8, d_ff=16)
    >>> ff(torch.zeros(2, 3, 8)).shape
    torch.Size([2, 3, 8])
    """

    def __init__(self, d_model, d_ff, dropout=0.0, *, activation="relu"):
        super().__init__()
        require_choice(activation, "activation", ACTIVATION_NAMES)
        self.net = nn.Sequential(
            nn.Linear(d_model, d_ff),  # (B, T, D) -> (B, T, d_ff)
            ACTIVATIONS[activation](),
            nn.Dropout(dropout),
            nn.Linear(d_ff, d_model),  # (B, T, d_ff) -> (B, T, D)
            nn.Dropout(dropout),
        )

    def forward(self, x):
        """Transform every token vector; see the class docstring for shapes."""
        return self.net(x)


class TransformerBlock(nn.Module):
    """Multi-head self-attention and a feed-forward network, each in a residual.

    Pre-norm (``norm_first=True``): ``x = x + dropout(attention(norm1(x)))``, then
    ``x = x + feed_forward(norm2(x))``. Post-norm: ``x = norm1(x +
    dropout(attention(x)))``, then ``x = norm2(x + feed_forward(x))``. With the
    weights copied across it computes what ``nn.TransformerEncoderLayer(d_model,
    num_heads, d_ff, dropout, activation, batch_first=True, norm_first=...)``
    computes, with its four dropouts in the same places. (The same seed does not
    give the same masks after attention: PyTorch's attention output is a
    transposed view, and dropout draws in memory order.) ``"relu"`` and
    ``"gelu"`` are PyTorch's names; for ``"gelu_tanh"`` give PyTorch's layer
    ``functools.partial(F.gelu, approximate="tanh")``, not an
    ``nn.GELU(approximate="tanh")`` module, which its fast path (eval mode, no
    gradients) computes as the exact GELU. Introduced in Chapter 8; Chapter 6's
    ``EncoderLayer`` is this block with ``causal=False``.

    Parameters
    ----------
    d_model, num_heads, d_ff, context_length : int
    dropout : float, default 0.0
        In training mode, on the attention weights, after attention, and in the
        feed-forward network after the activation and on its output.
    causal : bool, default True
        Keyword only. ``True``: each token sees itself and the tokens before it
        (a decoder, GPT); ``False``: every token sees every token (an encoder).
    activation : {"gelu", "gelu_tanh", "relu"}, default "gelu"
        See :class:`FeedForward`; :class:`attn_course.GPT` uses ``"gelu_tanh"``.
    norm_first : bool, default True
        Pre-norm (``True``) or post-norm (``False``).
    qkv_bias : bool, default False
        Biases on the query, key and value projections.
    num_kv_heads : int, optional
        Keyword only. Fewer key-value heads than ``num_heads`` make
        ``self_attn`` a :class:`attn_course.GroupedQueryAttention` (Chapter 9);
        ``None`` (or ``num_heads``) keeps one per head.

    Attributes
    ----------
    norm1, self_attn, norm2, feed_forward, dropout
        Created in this order: a :class:`torch.nn.LayerNorm`, a
        :class:`attn_course.MultiHeadAttention`, a layer norm, a
        :class:`FeedForward` and the dropout after attention.

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
    >>> out.shape, weights.shape
    (torch.Size([2, 5, 8]), torch.Size([2, 2, 5, 5]))
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
    ):
        super().__init__()
        self.norm_first = bool(norm_first)
        self.norm1 = nn.LayerNorm(d_model)
        given = (d_model, d_model, context_length, dropout, num_heads, qkv_bias)
        if num_kv_heads is None or num_kv_heads == num_heads:
            self.self_attn = MultiHeadAttention(*given, causal=causal)
        else:
            self.self_attn = GroupedQueryAttention(
                *given, num_kv_heads=num_kv_heads, causal=causal
            )
        self.norm2 = nn.LayerNorm(d_model)
        self.feed_forward = FeedForward(d_model, d_ff, dropout, activation=activation)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, key_padding_mask=None, *, return_weights=False, cache=None):
        """Update every token; see the class docstring for shapes.

        ``key_padding_mask`` is bool, ``True`` = real token (no query attends to a
        padding key); with ``return_weights=True`` the attention weights are
        returned too. ``cache``, a :class:`attn_course.LayerCache`, holds the keys
        and values of the tokens before ``x`` and receives those of ``x``.
        """
        attend = dict(
            key_padding_mask=key_padding_mask, return_weights=True, cache=cache
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
