"""Attention modules, in the order the course builds them.

- :class:`SelfAttentionV1`, :class:`SelfAttentionV2` (Chapter 2): trainable query,
  key and value matrices, then ``nn.Linear`` layers.
- :class:`CausalAttention` (Chapter 3): query ``i`` sees only keys ``0..i``;
  dropout on the weights (Chapter 4).
- :class:`MultiHeadAttentionWrapper`, :class:`MultiHeadAttention` (Chapter 5):
  heads side by side, then all heads from one wide projection; :class:`ShapeTracer`
  records the shape of every step.
- :class:`CrossAttention` (Chapter 6): queries from one sequence, keys and values
  from the *memory*.
- :class:`GroupedQueryAttention` (Chapter 9): query heads share fewer key-value
  heads; :class:`MultiHeadAttention` also takes a :class:`attn_course.LayerCache`.

Constructor arguments, parameter names and creation order follow LLMs-from-scratch
(chapter 3), so the same ``torch.manual_seed`` gives the same weights. Every forward
pass runs :func:`attn_course.functional.six_steps`. In the multi-head classes ``D``
stands for ``d_out``, split into ``H`` heads of width ``d``.
"""

import inspect
import math

import torch
from torch import nn

from ._validate import (
    describe_call,
    kind_of,
    require_bool_mask,
    require_floating,
    require_heads,
    require_int,
    require_probability,
    require_tensor,
)
from .functional import (
    _repeat_key_value_heads,
    scaled_dot_product_attention,
    six_steps,
)
from .kv_cache import LayerCache
from .masks import causal_mask, key_padding_to_attn_mask, require_padding_mask

__all__ = [
    "SelfAttentionV1",
    "SelfAttentionV2",
    "CausalAttention",
    "MultiHeadAttentionWrapper",
    "MultiHeadAttention",
    "GroupedQueryAttention",
    "ShapeTracer",
    "CrossAttention",
]


# --------------------------------------------------------------------------------------
# Argument checks shared by all modules
# --------------------------------------------------------------------------------------

_SIZES = ("d_in", "d_out", "context_length", "num_heads", "d_memory")


def _checked(module, *values, split_heads=False):
    """The constructor arguments ``values`` of ``module`` (in signature order), checked.

    Sizes must be ints >= 1, ``dropout`` in ``[0, 1)``; with ``split_heads``, ``d_out``
    must split into ``num_heads``. Messages show the whole call, since positional
    arguments are easy to swap.
    """
    names = list(inspect.signature(type(module).__init__).parameters)
    args = dict(zip(names[1:], values, strict=False))  # names[0] is self
    called_as = describe_call(type(module).__name__, args)
    checked = dict(args)
    for name, value in args.items():
        if name in _SIZES and value is not None:
            checked[name] = require_int(value, name, called_as=called_as)
    if "dropout" in args:
        checked["dropout"] = require_probability(
            args["dropout"], "dropout", called_as=called_as
        )
    if split_heads:
        _check_heads(checked["d_out"], checked["num_heads"], called_as)
    return tuple(checked.values())


def _check_heads(d_out, num_heads, called_as):
    """Unless ``d_out`` splits into ``num_heads``, raise; say how the module was called
    if the heads outnumber the features.
    """
    swapped = (
        f"num_heads={num_heads} is larger than d_out={d_out}; the module was called "
        f"as {called_as}: are two arguments swapped?"
    )
    require_heads(d_out, num_heads, hint=swapped if num_heads > d_out else "")


def _check_kv_heads(num_kv_heads, num_heads):
    num_kv_heads = require_int(
        num_kv_heads,
        "num_kv_heads",
        hint=f"e.g. num_kv_heads=1 for num_heads={num_heads}",
    )
    if num_heads % num_kv_heads:
        divisors = ", ".join(
            str(n) for n in range(1, num_heads + 1) if num_heads % n == 0
        )
        raise ValueError(
            f"num_kv_heads={num_kv_heads} does not divide num_heads={num_heads}: "
            "every key-value head serves the same number of query heads; choose "
            f"num_kv_heads in {{{divisors}}}"
        )
    return num_kv_heads


def _check_tokens(x, name, width_name, width, *, allow_unbatched):
    """Check that x is a float ``(B, T, width)`` (or, with ``allow_unbatched``,
    ``(T, width)``) tensor; return T.
    """
    require_floating(require_tensor(x, name), name)
    ranks = (2, 3) if allow_unbatched else (3,)
    if x.dim() not in ranks:
        expected = f"(B, T, {width_name})"
        if allow_unbatched:
            expected += f" or (T, {width_name})"
        if x.dim() == 2:
            fix = f"for one sequence use {name}.unsqueeze(0)"
        elif x.dim() > 3:
            fix = (
                "merge the extra dimensions into the batch, e.g. "
                f"{name}.reshape(-1, {x.size(-2)}, {x.size(-1)})"
            )
        else:
            fix = f"give each token a row of {width_name}={width} features"
        raise ValueError(
            f"expected {name} of shape {expected} with {width_name}={width}, got "
            f"{tuple(x.shape)}; {fix}"
        )
    if x.size(-1) != width:
        raise ValueError(
            f"{name} has width {x.size(-1)} but the module was built with "
            f"{width_name}={width}; give every token {width} features, or build the "
            f"module with {width_name}={x.size(-1)}"
        )
    return x.size(-2)


def _check_length(T, context_length):
    if T > context_length:
        raise ValueError(
            f"input has T={T} tokens but context_length={context_length}; build the "
            f"module with context_length >= {T} or feed at most {context_length} "
            "tokens"
        )


# --------------------------------------------------------------------------------------
# Single-head self-attention
# --------------------------------------------------------------------------------------


class SelfAttentionV1(nn.Module):
    """Self-attention with trainable query, key and value matrices.
    Introduced in Chapter 2.

    Project each token to a query, key and value, scale the scores by
    ``1 / sqrt(d_out)``, softmax, mix the values. No mask. ``W_query``, ``W_key``,
    ``W_value`` are ``(d_in, d_out)`` parameters filled with ``torch.rand`` in this
    order, as in the book.

    Shapes
    ------
    x : (B, T, d_in) or (T, d_in)
    output : (B, T, d_out) or (T, d_out)
    weights : (B, T, T) or (T, T)

    Examples
    --------
    >>> from attn_course import your_journey
    >>> x = your_journey().embeddings  # (T=6, d_in=3)
    >>> sa = SelfAttentionV1(d_in=3, d_out=2)
    >>> context, weights = sa(x, return_weights=True)
    >>> context.shape, weights.shape
    (torch.Size([6, 2]), torch.Size([6, 6]))
    >>> torch.allclose(weights.sum(dim=-1), torch.ones(6))
    True
    """

    def __init__(self, d_in, d_out):
        super().__init__()
        d_in, d_out = _checked(self, d_in, d_out)
        self.d_in, self.d_out = d_in, d_out
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x, *, return_weights=False):
        """Attend from every token to every token; also return the weights if asked."""
        _check_tokens(x, "x", "d_in", self.d_in, allow_unbatched=True)
        queries = x @ self.W_query  # (..., T, d_in) @ (d_in, d_out) -> (..., T, d_out)
        keys = x @ self.W_key  # (..., T, d_in) -> (..., T, d_out)
        values = x @ self.W_value  # (..., T, d_in) -> (..., T, d_out)
        # Scale 1 / sqrt(d_out), the default: d_out = keys.shape[-1].
        return scaled_dot_product_attention(
            queries, keys, values, return_weights=return_weights
        )

    def extra_repr(self):
        return f"d_in={self.d_in}, d_out={self.d_out}"


class SelfAttentionV2(nn.Module):
    """Self-attention with ``nn.Linear`` projections. Introduced in Chapter 2.

    The same map as :class:`SelfAttentionV1` (``nn.Linear`` computes ``x @ W.T``),
    with a better initialisation and an optional bias, ``qkv_bias``.

    Shapes
    ------
    x : (B, T, d_in) or (T, d_in)
    output : (B, T, d_out) or (T, d_out)
    weights : (B, T, T) or (T, T)

    Examples
    --------
    >>> from attn_course import your_journey
    >>> x = your_journey().embeddings  # (T=6, d_in=3)
    >>> sa = SelfAttentionV2(d_in=3, d_out=2)
    >>> sa(x).shape
    torch.Size([6, 2])
    >>> sa(torch.stack([x, x])).shape  # a batch of two sequences
    torch.Size([2, 6, 2])
    """

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        d_in, d_out, _ = _checked(self, d_in, d_out, qkv_bias)
        self.d_in, self.d_out = d_in, d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x, *, return_weights=False):
        _check_tokens(x, "x", "d_in", self.d_in, allow_unbatched=True)
        queries = self.W_query(x)  # (..., T, d_in) -> (..., T, d_out)
        keys = self.W_key(x)  # (..., T, d_in) -> (..., T, d_out)
        values = self.W_value(x)  # (..., T, d_in) -> (..., T, d_out)
        return scaled_dot_product_attention(
            queries, keys, values, return_weights=return_weights
        )

    def extra_repr(self):
        return f"d_in={self.d_in}, d_out={self.d_out}"


class CausalAttention(nn.Module):
    """Causal self-attention: each token sees itself and the tokens before it.

    :class:`SelfAttentionV2` plus a causal mask, built for each call from the input
    length (``context_length`` is the longest input accepted), and dropout on the
    weights while training. Introduced in Chapter 3; Chapter 4 explains its dropout.

    Shapes
    ------
    x : (B, T, d_in) or (T, d_in)
    output : (B, T, d_out) or (T, d_out)
    weights : (B, T, T) or (T, T)

    Examples
    --------
    >>> from attn_course import your_journey
    >>> x = your_journey().embeddings
    >>> batch = torch.stack([x, x])  # (B=2, T=6, d_in=3)
    >>> ca = CausalAttention(d_in=3, d_out=2, context_length=6, dropout=0.0)
    >>> context, weights = ca(batch, return_weights=True)
    >>> context.shape, weights.shape
    (torch.Size([2, 6, 2]), torch.Size([2, 6, 6]))
    >>> bool((weights.triu(diagonal=1) == 0).all())  # no weight on future tokens
    True
    >>> ca(batch[:, :4]).shape  # shorter inputs are fine
    torch.Size([2, 4, 2])
    """

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        d_in, d_out, context_length, dropout, _ = _checked(
            self, d_in, d_out, context_length, dropout, qkv_bias
        )
        self.d_in, self.d_out, self.context_length = d_in, d_out, context_length
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, *, return_weights=False):
        T = _check_tokens(x, "x", "d_in", self.d_in, allow_unbatched=True)
        _check_length(T, self.context_length)
        queries = self.W_query(x)  # (B, T, d_in) -> (B, T, d_out)
        keys = self.W_key(x)  # (B, T, d_in) -> (B, T, d_out)
        values = self.W_value(x)  # (B, T, d_in) -> (B, T, d_out)
        # Causal mask, softmax and dropout on the weights, all in the functional.
        return scaled_dot_product_attention(
            queries,
            keys,
            values,
            dropout_p=self.dropout.p,
            is_causal=True,
            training=self.training,
            return_weights=return_weights,
        )

    def extra_repr(self):
        return (
            f"d_in={self.d_in}, d_out={self.d_out}, "
            f"context_length={self.context_length}"
        )


class MultiHeadAttentionWrapper(nn.Module):
    """Several :class:`CausalAttention` heads side by side, outputs concatenated.

    **Here d_out is the width of EACH head**: the output has ``num_heads * d_out``
    features (in :class:`MultiHeadAttention`, ``d_out`` is the total width).
    Introduced in Chapter 5.

    Shapes
    ------
    x : (B, T, d_in) or (T, d_in)
    output : (B, T, num_heads * d_out)
    weights : (B, H, T, T)

    Examples
    --------
    >>> from attn_course import your_journey
    >>> x = your_journey().embeddings
    >>> batch = torch.stack([x, x])  # (B=2, T=6, d_in=3)
    >>> mha = MultiHeadAttentionWrapper(
    ...     d_in=3, d_out=2, context_length=6, dropout=0.0, num_heads=2
    ... )
    >>> context, weights = mha(batch, return_weights=True)
    >>> context.shape  # 2 heads x d_out=2 features each
    torch.Size([2, 6, 4])
    >>> weights.shape
    torch.Size([2, 2, 6, 6])
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        args = _checked(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        self.d_in, self.d_out, self.context_length, _, self.num_heads, _ = args
        self.heads = nn.ModuleList(
            [CausalAttention(*args[:4], qkv_bias) for _ in range(self.num_heads)]
        )

    def forward(self, x, *, return_weights=False):
        results = [head(x, return_weights=True) for head in self.heads]
        # H tensors (B, T, d_out) -> (B, T, H * d_out)
        context = torch.cat([out for out, _ in results], dim=-1)
        if not return_weights:
            return context
        # H tensors (B, T, T) -> (B, H, T, T)
        weights = torch.stack([w for _, w in results], dim=-3)
        return context, weights

    def extra_repr(self):
        return f"d_out={self.d_out} per head, num_heads={self.num_heads}"


# --------------------------------------------------------------------------------------
# Tracing shapes
# --------------------------------------------------------------------------------------


class ShapeTracer:
    """Record the name and shape of every step of a forward pass.
    Introduced in Chapter 5.

    Pass one as ``trace=`` to :class:`MultiHeadAttention` or :class:`CrossAttention`
    (any callable ``trace(name, tensor)`` works; a ``ShapeTracer`` also gets a note
    with the letters of each shape). ``print(tracer)`` shows the steps as a table.

    Examples
    --------
    >>> tracer = ShapeTracer()
    >>> tracer("queries", torch.zeros(2, 6, 2), "(B, T, D)")
    >>> tracer("queries.view", torch.zeros(2, 6, 2, 1), "(B, T, H, d)")
    >>> tracer.steps
    [('queries', (2, 6, 2)), ('queries.view', (2, 6, 2, 1))]
    >>> print(tracer)
    step          shape         note
    queries       (2, 6, 2)     (B, T, D)
    queries.view  (2, 6, 2, 1)  (B, T, H, d)
    """

    def __init__(self):
        self.steps = []
        self.notes = []

    def __call__(self, name, tensor, note=""):
        self.steps.append((str(name), tuple(tensor.shape)))
        self.notes.append(str(note))

    def clear(self):
        """Forget all recorded steps, to trace another forward pass."""
        self.steps.clear()
        self.notes.clear()

    def __len__(self):
        return len(self.steps)

    def __str__(self):
        rows = [("step", "shape", "note")]
        rows += [
            (name, str(shape), note)
            for (name, shape), note in zip(self.steps, self.notes, strict=True)
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(2)]
        lines = [
            f"{name:<{widths[0]}}  {shape:<{widths[1]}}  {note}".rstrip()
            for name, shape, note in rows
        ]
        return "\n".join(lines)

    def __repr__(self):
        return str(self)


def _emit(trace, name, tensor, note):
    """Report one step to ``trace``; a ShapeTracer also gets the note."""
    if trace is None:
        return
    if isinstance(trace, ShapeTracer):
        trace(name, tensor, note)
    else:
        trace(name, tensor)


# --------------------------------------------------------------------------------------
# Multi-head attention: one wide projection, split into heads
# --------------------------------------------------------------------------------------


class _MultiHeadBase(nn.Module):
    """What :class:`MultiHeadAttention` and :class:`CrossAttention` share."""

    def __init__(self, d_in, d_kv, d_out, num_heads, dropout, qkv_bias, num_kv_heads):
        super().__init__()
        self.d_out = d_out
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_out // num_heads
        kv_width = num_kv_heads * self.head_dim  # d_out, unless heads share keys
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_kv, kv_width, bias=qkv_bias)
        self.W_value = nn.Linear(d_kv, kv_width, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)  # mixes the heads' outputs
        self.dropout = nn.Dropout(dropout)

    def _split_heads(self, t, name, T, trace, heads="H"):
        """``(B, T, D) -> (B, H, T, d)`` (``H_kv`` heads with ``heads="H_kv"``)."""
        B, n_tokens, _ = t.shape
        count = self.num_heads if heads == "H" else self.num_kv_heads
        t = t.view(B, n_tokens, count, self.head_dim)  # -> (B, T, H, d)
        _emit(trace, f"{name}.view", t, f"(B, {T}, {heads}, d)")
        t = t.transpose(1, 2)  # (B, T, H, d) -> (B, H, T, d)
        _emit(trace, f"{name}.transpose", t, f"(B, {heads}, {T}, d)")
        return t

    def extra_repr(self):
        return ", ".join(f"{name}={getattr(self, name)}" for name in self._shown)

    def _weigh(self, queries, keys, values, attn_mask, is_causal):
        """Every head attends on its own: the six steps of
        scaled_dot_product_attention, without its checks of the inputs."""
        return six_steps(
            queries,
            keys,
            values,
            attn_mask,
            self.dropout.p,
            is_causal=is_causal,
            scale=1.0 / math.sqrt(self.head_dim),
            training=self.training,
            return_weights=True,
        )

    def _attend(
        self, x, memory, key_padding_mask, return_weights, trace, cache=None, mask=None
    ):
        """Mask, project, split into heads, attend, merge the heads, project out.

        ``memory`` is ``x`` itself for self-attention; ``self.causal`` and
        ``self._letters`` come from the subclass. With a ``cache``, the new keys and
        values are appended to it and the queries attend to all it holds. ``mask``,
        ``(T_q, past + T_k)``, is combined with the others.
        """
        causal = self.causal
        Tq, Tk = self._letters
        B, T_q, _ = x.shape
        T_k = memory.size(1)
        past = 0 if cache is None else len(cache)
        attn_mask = None
        if past and causal and T_q > 1:
            # Query i is token past + i: it sees keys 0..past + i, the last T_q rows
            # of the square mask over all past + T_q tokens. (T_q, past + T_q)
            # (One new token sees every key: no mask at all.)
            attn_mask = causal_mask(past + T_q, device=x.device)[past:]
        if key_padding_mask is not None:
            require_padding_mask(
                key_padding_mask,
                "key_padding_mask",
                shape=(B, T_k),
                letters=f"(B, {Tk})",
            )
            # The same padding for every head and query: (B, T_k) -> (B, 1, 1, T_k).
            attn_mask = key_padding_to_attn_mask(key_padding_mask)
            if causal:
                # The functional takes a mask or is_causal, not both: combine them.
                # (B, 1, 1, T_k) & (T_q, T_k) -> (B, 1, T_q, T_k)
                attn_mask = attn_mask & causal_mask(T_q, T_k, device=x.device)
        if mask is not None:
            if causal and attn_mask is None:
                mask = mask & causal_mask(T_q, past + T_q, offset=past, device=x.device)
            attn_mask = mask if attn_mask is None else attn_mask & mask

        queries = self.W_query(x)  # (B, T_q, d_in) -> (B, T_q, D)
        _emit(trace, "queries", queries, f"(B, {Tq}, D)")
        grouped = self.num_kv_heads != self.num_heads
        kv_heads, kv_width = ("H_kv", "H_kv * d") if grouped else ("H", "D")
        keys = self.W_key(memory)  # (B, T_k, d_kv) -> (B, T_k, D)
        _emit(trace, "keys", keys, f"(B, {Tk}, {kv_width})")
        values = self.W_value(memory)  # (B, T_k, d_kv) -> (B, T_k, D)
        _emit(trace, "values", values, f"(B, {Tk}, {kv_width})")

        queries = self._split_heads(queries, "queries", Tq, trace)  # (B, H, T_q, d)
        keys = self._split_heads(keys, "keys", Tk, trace, kv_heads)  # (B, H, T_k, d)
        values = self._split_heads(values, "values", Tk, trace, kv_heads)
        if cache is not None:
            # Everything this layer has seen: (B, H_kv, past + T_k, d) each.
            keys, values = cache.append(keys, values)

        if grouped:
            # Each group of H // H_kv query heads shares one key and value head:
            # (B, H_kv, T_k, d) -> (B, H, T_k, d), as enable_gqa=True does.
            keys, values = _repeat_key_value_heads(queries, keys, values)
        is_causal = causal and not past and attn_mask is None
        context, weights = self._weigh(queries, keys, values, attn_mask, is_causal)
        _emit(trace, "weights", weights, f"(B, H, {Tq}, {Tk})")
        _emit(trace, "context", context, f"(B, H, {Tq}, d)")

        # Merge the heads back: transpose, then glue each token's H pieces together.
        # view needs neighbouring memory, which transpose broke: hence .contiguous().
        context = context.transpose(1, 2)  # (B, H, T_q, d) -> (B, T_q, H, d)
        _emit(trace, "context.transpose", context, f"(B, {Tq}, H, d)")
        context = context.contiguous().view(B, T_q, self.d_out)  # -> (B, T_q, D)
        _emit(trace, "context.view", context, f"(B, {Tq}, D)")
        output = self.out_proj(context)
        _emit(trace, "out_proj", output, f"(B, {Tq}, D)")
        if return_weights:
            return output, weights
        return output


class MultiHeadAttention(_MultiHeadBase):
    """Multi-head self-attention, all heads computed at once. Introduced in Chapter 5.

    One ``d_in -> d_out`` projection each for queries, keys and values; each token's
    ``d_out`` features are cut into ``num_heads`` heads of ``head_dim``, each head
    attends on its own, and ``out_proj`` mixes the glued heads. **Here d_out is the
    total width.** ``causal=False`` lets every token see every token (an encoder).
    Chapter 4 borrows it once, to show dropout in every head.

    Shapes
    ------
    x : (B, T, d_in)
    key_padding_mask : (B, T)
    output : (B, T, d_out)
    weights : (B, H, T, T)

    Examples
    --------
    >>> from attn_course import your_journey
    >>> x = your_journey().embeddings
    >>> batch = torch.stack([x, x])  # (B=2, T=6, d_in=3)
    >>> mha = MultiHeadAttention(
    ...     d_in=3, d_out=2, context_length=6, dropout=0.0, num_heads=2
    ... )
    >>> tracer = ShapeTracer()
    >>> _ = mha(batch, trace=tracer)
    >>> print(tracer)
    step               shape         note
    x                  (2, 6, 3)     (B, T, d_in)
    queries            (2, 6, 2)     (B, T, D)
    keys               (2, 6, 2)     (B, T, D)
    values             (2, 6, 2)     (B, T, D)
    queries.view       (2, 6, 2, 1)  (B, T, H, d)
    queries.transpose  (2, 2, 6, 1)  (B, H, T, d)
    keys.view          (2, 6, 2, 1)  (B, T, H, d)
    keys.transpose     (2, 2, 6, 1)  (B, H, T, d)
    values.view        (2, 6, 2, 1)  (B, T, H, d)
    values.transpose   (2, 2, 6, 1)  (B, H, T, d)
    weights            (2, 2, 6, 6)  (B, H, T, T)
    context            (2, 2, 6, 1)  (B, H, T, d)
    context.transpose  (2, 6, 2, 1)  (B, T, H, d)
    context.view       (2, 6, 2)     (B, T, D)
    out_proj           (2, 6, 2)     (B, T, D)
    """

    _letters = ("T", "T")  # query and key lengths, as messages write them
    _shown = ("d_in", "d_out", "num_heads", "head_dim", "context_length", "causal")

    def __init__(
        self,
        d_in,
        d_out,
        context_length,
        dropout,
        num_heads,
        qkv_bias=False,
        *,
        causal=True,
    ):
        given = (d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        self._build(given, causal, num_kv_heads=None)

    def _build(self, given, causal, num_kv_heads):
        d_in, d_out, context_length, dropout, num_heads, qkv_bias = _checked(
            self, *given, split_heads=True
        )
        if num_kv_heads is None:
            num_kv_heads = num_heads
        else:
            num_kv_heads = _check_kv_heads(num_kv_heads, num_heads)
        super().__init__(d_in, d_in, d_out, num_heads, dropout, qkv_bias, num_kv_heads)
        self.d_in = d_in
        self.context_length = context_length
        self.causal = bool(causal)

    def forward(
        self,
        x,
        *,
        key_padding_mask=None,
        return_weights=False,
        trace=None,
        cache=None,
        attn_mask=None,
    ):
        """Attend from each token to the tokens it may see, in every head.

        ``key_padding_mask`` (``True`` = real token) is combined with the causal mask.
        ``cache``, a :class:`attn_course.LayerCache` of the tokens before ``x``
        (Chapter 9), gets the new keys and values, and the weights become
        ``(B, H, T, past + T)``. ``attn_mask``, a bool ``(T, past + T)`` mask
        (``True`` = may attend), is combined with the others too: e.g. a sliding
        window at evaluation (Chapter 11).
        """
        T = _check_tokens(x, "x", "d_in", self.d_in, allow_unbatched=False)
        past = 0
        if cache is not None:
            if not isinstance(cache, LayerCache):
                raise TypeError(
                    f"cache must be a LayerCache, got {kind_of(cache)}; pass one "
                    "layer of a KVCache, e.g. cache=KVCache(num_layers).layers[0]"
                )
            if key_padding_mask is not None:
                raise ValueError(
                    "key_padding_mask cannot be combined with a cache: the cache "
                    "holds keys of earlier calls, which the mask does not cover; "
                    "generate without padding, one sequence length per batch"
                )
            past = len(cache)
        _check_length(past + T, self.context_length)
        if attn_mask is not None:
            require_bool_mask(attn_mask, "attn_mask")
            if tuple(attn_mask.shape) != (T, past + T):
                raise ValueError(
                    f"attn_mask must have shape (T, past + T) = ({T}, {past + T}), "
                    f"one row per token of x, got {tuple(attn_mask.shape)}; e.g. "
                    f"attn_course.sliding_window_mask({T}, window)"
                )
        _emit(trace, "x", x, "(B, T, d_in)")
        return self._attend(
            x, x, key_padding_mask, return_weights, trace, cache, attn_mask
        )


class GroupedQueryAttention(MultiHeadAttention):
    """Multi-head self-attention whose query heads share fewer key-value heads.

    Each group of ``num_heads // num_kv_heads`` query heads attends with the same keys
    and values; ``num_kv_heads=1`` is multi-query attention. The key and value
    projections, and a KV cache, shrink by that factor. Introduced in Chapter 9.

    Shapes
    ------
    x : (B, T, d_in)
    output : (B, T, d_out)

    Examples
    --------
    >>> gqa = GroupedQueryAttention(8, 8, 6, 0.0, num_heads=4, num_kv_heads=2)
    >>> gqa.W_query.weight.shape, gqa.W_key.weight.shape  # keys: 2 heads of 2
    (torch.Size([8, 8]), torch.Size([4, 8]))
    >>> gqa(torch.randn(1, 6, 8)).shape
    torch.Size([1, 6, 8])
    """

    _shown = MultiHeadAttention._shown + ("num_kv_heads",)

    def __init__(
        self,
        d_in,
        d_out,
        context_length,
        dropout,
        num_heads,
        qkv_bias=False,
        *,
        num_kv_heads,
        causal=True,
    ):
        given = (d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        self._build(given, causal, num_kv_heads=num_kv_heads)


class CrossAttention(_MultiHeadBase):
    """Multi-head cross-attention: queries from x, keys and values from memory.

    Each of the ``T_q`` tokens of ``x`` attends to all ``T_k`` tokens of ``memory``
    (the encoder's output, in an encoder-decoder). Never causal. A query whose keys are
    all padding gets zeros before ``out_proj``. Introduced in Chapter 6.

    Shapes
    ------
    x -> output : (B, T_q, d_in) -> (B, T_q, d_out)
    memory, key_padding_mask : (B, T_k, d_memory), (B, T_k)
    weights : (B, H, T_q, T_k)

    Examples
    --------
    >>> from attn_course import padding_mask
    >>> x = torch.randn(2, 3, 4)  # (B=2, T_q=3, d_in=4)
    >>> memory = torch.randn(2, 5, 6)  # (B=2, T_k=5, d_memory=6)
    >>> xattn = CrossAttention(d_in=4, d_out=8, num_heads=2, d_memory=6)
    >>> mask = padding_mask([5, 2])  # the second memory has 2 real tokens
    >>> out, weights = xattn(
    ...     x, memory, key_padding_mask=mask, return_weights=True
    ... )
    >>> out.shape, weights.shape
    (torch.Size([2, 3, 8]), torch.Size([2, 2, 3, 5]))
    >>> bool((weights[1, :, :, 2:] == 0).all())  # no weight on padding
    True
    """

    _letters = ("T_q", "T_k")
    _shown = ("d_in", "d_memory", "d_out", "num_heads", "head_dim")

    def __init__(
        self, d_in, d_out, num_heads, dropout=0.0, qkv_bias=False, *, d_memory=None
    ):
        d_in, d_out, num_heads, dropout, _, d_memory = _checked(
            self, d_in, d_out, num_heads, dropout, qkv_bias, d_memory, split_heads=True
        )
        d_memory = d_in if d_memory is None else d_memory
        super().__init__(d_in, d_memory, d_out, num_heads, dropout, qkv_bias, num_heads)
        self.d_in = d_in
        self.d_memory = d_memory
        self.causal = False  # the memory is complete: every query sees all of it

    def forward(
        self, x, memory, *, key_padding_mask=None, return_weights=False, trace=None
    ):
        _check_tokens(x, "x", "d_in", self.d_in, allow_unbatched=False)
        _check_tokens(
            memory, "memory", "d_memory", self.d_memory, allow_unbatched=False
        )
        if memory.size(0) != x.size(0):
            raise ValueError(
                f"x and memory must have the same batch size B, got x "
                f"{tuple(x.shape)} and memory {tuple(memory.shape)}; pair each "
                "sequence of x with its own memory"
            )
        _emit(trace, "x", x, "(B, T_q, d_in)")
        _emit(trace, "memory", memory, "(B, T_k, d_memory)")
        return self._attend(x, memory, key_padding_mask, return_weights, trace)
