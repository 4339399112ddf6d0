"""Attention modules, in the order the course builds them.

Each class adds one idea to the one before it:

- :class:`SelfAttentionV1`: trainable query, key and value matrices.
- :class:`SelfAttentionV2`: the same map, with ``nn.Linear`` layers.
- :class:`CausalAttention`: query ``i`` sees only keys ``0..i``; dropout on the weights.
- :class:`MultiHeadAttentionWrapper`: several causal heads side by side.
- :class:`MultiHeadAttention`: all heads at once, by splitting one wide projection.
- :class:`CrossAttention`: queries from one sequence, keys and values from another.

Constructor arguments, parameter names and the order in which parameters are created
follow the classes of the LLMs-from-scratch book (chapter 3), so the same
``torch.manual_seed`` gives the same weights and the same outputs. Every forward pass
calls :func:`attn_course.scaled_dot_product_attention`, the one copy of the attention
maths in this package. :class:`ShapeTracer` records the shape of every reshape step.

Shapes use these letters: ``B`` batch, ``T`` tokens (``T_q`` queries and ``T_k`` keys
in cross-attention), ``H`` = ``num_heads``, ``d`` = ``head_dim``, ``D`` = ``d_out``.
"""

from numbers import Real

import torch
from torch import nn

from .functional import scaled_dot_product_attention
from .masks import causal_mask, key_padding_to_attn_mask

__all__ = [
    "CausalAttention",
    "CrossAttention",
    "MultiHeadAttention",
    "MultiHeadAttentionWrapper",
    "SelfAttentionV1",
    "SelfAttentionV2",
    "ShapeTracer",
]


# --------------------------------------------------------------------------------------
# Argument checks shared by all modules
# --------------------------------------------------------------------------------------


def _describe_call(cls_name, args):
    """``Name(a=1, b=2)``: the call as received, to spot swapped arguments."""
    inner = ", ".join(f"{name}={value!r}" for name, value in args.items())
    return f"{cls_name}({inner})"


def _check_sizes(cls_name, args, names):
    """Raise a teaching error unless each named argument is a positive int."""
    for name in names:
        value = args[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(
                f"{name} must be a positive int, got {name}={value!r}; the module was "
                f"called as {_describe_call(cls_name, args)}: check the values and "
                "their order"
            )


def _check_dropout(cls_name, args):
    """Raise a teaching error unless ``args['dropout']`` is a number in [0, 1)."""
    dropout = args["dropout"]
    if (
        isinstance(dropout, bool)
        or not isinstance(dropout, Real)
        or not 0.0 <= dropout < 1.0
    ):
        raise ValueError(
            f"dropout must be a number in [0, 1), got dropout={dropout!r}; it is the "
            "probability of dropping an attention weight: use e.g. 0.1, or 0.0 for no "
            f"dropout (the module was called as {_describe_call(cls_name, args)})"
        )


def _check_heads(cls_name, args):
    """Raise a teaching error unless ``d_out`` splits evenly into ``num_heads``."""
    d_out, num_heads = args["d_out"], args["num_heads"]
    if d_out % num_heads == 0:
        return
    divisors = ", ".join(str(n) for n in range(1, d_out + 1) if d_out % n == 0)
    message = (
        f"d_out={d_out} is not divisible by num_heads={num_heads}; choose num_heads "
        f"in {{{divisors}}}"
    )
    if num_heads > d_out:
        message += (
            f" (num_heads={num_heads} is larger than d_out={d_out}; the module was "
            f"called as {_describe_call(cls_name, args)}: are two arguments swapped?)"
        )
    raise ValueError(message)


def _check_input(x, name, width_name, width, *, allow_unbatched):
    """Raise a teaching error unless x is a ``(B, T, width)`` (or ``(T, width)``)
    float tensor; return T."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor, got {type(x).__name__}; convert it "
            f"first, e.g. {name} = torch.tensor({name})"
        )
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
    if not x.is_floating_point():
        raise TypeError(
            f"{name} must be floating point, got dtype {x.dtype}; convert it first, "
            f"e.g. {name} = {name}.float()"
        )
    return x.size(-2)


def _check_length(T, context_length):
    """Raise a teaching error if the input is longer than context_length."""
    if T > context_length:
        raise ValueError(
            f"input has T={T} tokens but context_length={context_length}; build the "
            f"module with context_length >= {T} or feed at most {context_length} "
            "tokens"
        )


def _check_key_padding_mask(mask, B, T, T_name):
    """Raise a teaching error unless mask is a bool ``(B, T)`` padding mask."""
    if not isinstance(mask, torch.Tensor):
        raise TypeError(
            f"key_padding_mask must be a torch.Tensor, got {type(mask).__name__}; "
            "build it with attn_course.padding_mask(lengths)"
        )
    if mask.dtype != torch.bool:
        raise ValueError(
            f"key_padding_mask must be bool (True = real token), got dtype "
            f"{mask.dtype}; if 1 marks the real tokens use key_padding_mask.bool(), "
            "or build it with attn_course.padding_mask(lengths)"
        )
    if tuple(mask.shape) != (B, T):
        raise ValueError(
            f"key_padding_mask must have shape (B, {T_name}) = {(B, T)}, got "
            f"{tuple(mask.shape)}; build it with attn_course.padding_mask(lengths, "
            f"max_len={T})"
        )


# --------------------------------------------------------------------------------------
# Tracing shapes
# --------------------------------------------------------------------------------------


class ShapeTracer:
    """Record the name and shape of every step of a forward pass.

    Pass an instance as ``trace=`` to :class:`MultiHeadAttention` or
    :class:`CrossAttention`; the module calls it at every projection and reshape.
    ``print(tracer)`` shows an aligned table of the steps with the shape letters.
    Any callable ``trace(name, tensor)`` works as ``trace=``; a ``ShapeTracer`` also
    receives a note with the letters of each shape.

    Attributes
    ----------
    steps : list of (str, tuple of int)
        ``(name, shape)`` of each step, in order.
    notes : list of str
        The shape in letters for each step, e.g. ``"(B, T, H, d)"``.

    Shapes
    ------
    Any tensor; only its shape is kept.

    Examples
    --------
    >>> import torch
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
        """Record one step: its name, the tensor's shape and an optional note."""
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
    """Report one step to ``trace``: any callable gets (name, tensor); a
    ShapeTracer also gets the note with the shape letters."""
    if trace is None:
        return
    if isinstance(trace, ShapeTracer):
        trace(name, tensor, note)
    else:
        trace(name, tensor)


# --------------------------------------------------------------------------------------
# Single-head self-attention
# --------------------------------------------------------------------------------------


class SelfAttentionV1(nn.Module):
    """Self-attention with trainable query, key and value matrices.

    Each token is projected to a query, a key and a value by a matrix product; the
    scores between queries and keys are scaled by ``1 / sqrt(d_out)``, turned into
    weights by a softmax, and the weights mix the values. No mask: every token sees
    every token.

    Parameters
    ----------
    d_in : int
        Width of the input token vectors.
    d_out : int
        Width of the queries, keys, values and of the output.

    Attributes
    ----------
    W_query, W_key, W_value : nn.Parameter
        Matrices of shape ``(d_in, d_out)``, filled with ``torch.rand`` and created in
        this order (as in the book, so the same seed gives the same numbers).

    Shapes
    ------
    - x: ``(T, d_in)`` or ``(B, T, d_in)``
    - output: ``(T, d_out)`` or ``(B, T, d_out)``
    - weights (``return_weights=True``): ``(T, T)`` or ``(B, T, T)``

    Examples
    --------
    >>> import torch
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
        args = {"d_in": d_in, "d_out": d_out}
        _check_sizes(type(self).__name__, args, ("d_in", "d_out"))
        self.d_in = d_in
        self.d_out = d_out
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x, *, return_weights=False):
        """Attend from every token to every token.

        Parameters
        ----------
        x : torch.Tensor
            Token vectors, ``(T, d_in)`` or ``(B, T, d_in)``.
        return_weights : bool, default False
            Also return the attention weights.

        Returns
        -------
        torch.Tensor or (torch.Tensor, torch.Tensor)
            The context vectors ``(..., T, d_out)``, and the weights ``(..., T, T)``
            if ``return_weights=True``.
        """
        _check_input(x, "x", "d_in", self.d_in, allow_unbatched=True)
        queries = x @ self.W_query  # (..., T, d_in) @ (d_in, D) -> (..., T, D)
        keys = x @ self.W_key  # (..., T, D)
        values = x @ self.W_value  # (..., T, D)
        # Scale 1 / sqrt(D), the default: D = keys.shape[-1].
        return scaled_dot_product_attention(
            queries, keys, values, return_weights=return_weights
        )

    def extra_repr(self):
        return f"d_in={self.d_in}, d_out={self.d_out}"


class SelfAttentionV2(nn.Module):
    """Self-attention with ``nn.Linear`` projections.

    The same map as :class:`SelfAttentionV1`: ``nn.Linear`` computes ``x @ W.T``, so
    V1 holding ``W_query.weight.T`` (and likewise for keys and values) gives the same
    outputs. ``nn.Linear`` also initialises the weights better and can add a bias.

    Parameters
    ----------
    d_in : int
        Width of the input token vectors.
    d_out : int
        Width of the queries, keys, values and of the output.
    qkv_bias : bool, default False
        Give the three projections a bias.

    Attributes
    ----------
    W_query, W_key, W_value : nn.Linear
        ``d_in -> d_out`` projections, created in this order.

    Shapes
    ------
    - x: ``(T, d_in)`` or ``(B, T, d_in)``
    - output: ``(T, d_out)`` or ``(B, T, d_out)``
    - weights (``return_weights=True``): ``(T, T)`` or ``(B, T, T)``

    Examples
    --------
    >>> import torch
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
        args = {"d_in": d_in, "d_out": d_out, "qkv_bias": qkv_bias}
        _check_sizes(type(self).__name__, args, ("d_in", "d_out"))
        self.d_in = d_in
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x, *, return_weights=False):
        """Attend from every token to every token.

        Parameters
        ----------
        x : torch.Tensor
            Token vectors, ``(T, d_in)`` or ``(B, T, d_in)``.
        return_weights : bool, default False
            Also return the attention weights.

        Returns
        -------
        torch.Tensor or (torch.Tensor, torch.Tensor)
            The context vectors ``(..., T, d_out)``, and the weights ``(..., T, T)``
            if ``return_weights=True``.
        """
        _check_input(x, "x", "d_in", self.d_in, allow_unbatched=True)
        queries = self.W_query(x)  # (..., T, d_in) -> (..., T, D)
        keys = self.W_key(x)  # (..., T, D)
        values = self.W_value(x)  # (..., T, D)
        return scaled_dot_product_attention(
            queries, keys, values, return_weights=return_weights
        )

    def extra_repr(self):
        return f"d_in={self.d_in}, d_out={self.d_out}"


class CausalAttention(nn.Module):
    """Causal self-attention: each token sees only itself and the tokens before it.

    :class:`SelfAttentionV2` plus two ideas: a causal mask (query ``i`` attends only
    to keys ``0..i``) and dropout on the attention weights (after the softmax) while
    training. The mask is built for each call from the input length, so there is no
    stored mask buffer to outgrow; ``context_length`` is the longest input accepted.

    Parameters
    ----------
    d_in : int
        Width of the input token vectors.
    d_out : int
        Width of the queries, keys, values and of the output.
    context_length : int
        The longest sequence the module accepts; longer inputs raise ``ValueError``.
    dropout : float
        Probability of dropping each attention weight in training mode, in
        ``[0, 1)``. ``module.eval()`` turns dropout off.
    qkv_bias : bool, default False
        Give the three projections a bias.

    Attributes
    ----------
    W_query, W_key, W_value : nn.Linear
        ``d_in -> d_out`` projections, created in this order.
    dropout : nn.Dropout
        Holds the dropout probability ``dropout.p``.

    Shapes
    ------
    - x: ``(B, T, d_in)``, with ``T <= context_length``; a 2-D ``(T, d_in)`` input is
      treated as one sequence and gives 2-D results
    - output: ``(B, T, d_out)``
    - weights (``return_weights=True``): ``(B, T, T)``, zero above the diagonal

    Examples
    --------
    >>> import torch
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
        args = {
            "d_in": d_in,
            "d_out": d_out,
            "context_length": context_length,
            "dropout": dropout,
            "qkv_bias": qkv_bias,
        }
        name = type(self).__name__
        _check_sizes(name, args, ("d_in", "d_out", "context_length"))
        _check_dropout(name, args)
        self.d_in = d_in
        self.d_out = d_out
        self.context_length = context_length
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, *, return_weights=False):
        """Attend from each token to itself and the tokens before it.

        Parameters
        ----------
        x : torch.Tensor
            Token vectors, ``(B, T, d_in)`` or ``(T, d_in)``.
        return_weights : bool, default False
            Also return the attention weights (after dropout).

        Returns
        -------
        torch.Tensor or (torch.Tensor, torch.Tensor)
            The context vectors ``(B, T, d_out)``, and the weights ``(B, T, T)`` if
            ``return_weights=True``.
        """
        T = _check_input(x, "x", "d_in", self.d_in, allow_unbatched=True)
        _check_length(T, self.context_length)
        queries = self.W_query(x)  # (B, T, d_in) -> (B, T, D)
        keys = self.W_key(x)  # (B, T, D)
        values = self.W_value(x)  # (B, T, D)
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

    **Here d_out is the width of EACH head**: the output has
    ``num_heads * d_out`` features. (In :class:`MultiHeadAttention`, ``d_out`` is the
    total width instead, split into ``num_heads`` heads.)

    Parameters
    ----------
    d_in : int
        Width of the input token vectors.
    d_out : int
        Width of each head's output (**per head**, not the total).
    context_length : int
        The longest sequence the module accepts.
    dropout : float
        Probability of dropping each attention weight in training mode, in ``[0, 1)``.
    num_heads : int
        Number of heads ``H``.
    qkv_bias : bool, default False
        Give the projections a bias.

    Attributes
    ----------
    heads : nn.ModuleList
        ``num_heads`` independent :class:`CausalAttention` modules, created in order.

    Shapes
    ------
    - x: ``(B, T, d_in)`` (or ``(T, d_in)``, one sequence)
    - output: ``(B, T, num_heads * d_out)``
    - weights (``return_weights=True``): ``(B, H, T, T)``

    Examples
    --------
    >>> import torch
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
        args = {
            "d_in": d_in,
            "d_out": d_out,
            "context_length": context_length,
            "dropout": dropout,
            "num_heads": num_heads,
            "qkv_bias": qkv_bias,
        }
        name = type(self).__name__
        _check_sizes(name, args, ("d_in", "d_out", "context_length", "num_heads"))
        _check_dropout(name, args)
        self.d_in = d_in
        self.d_out = d_out
        self.context_length = context_length
        self.num_heads = num_heads
        self.heads = nn.ModuleList(
            [
                CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                for _ in range(num_heads)
            ]
        )

    def forward(self, x, *, return_weights=False):
        """Run every head on x and concatenate their outputs.

        Parameters
        ----------
        x : torch.Tensor
            Token vectors, ``(B, T, d_in)`` or ``(T, d_in)``.
        return_weights : bool, default False
            Also return every head's attention weights.

        Returns
        -------
        torch.Tensor or (torch.Tensor, torch.Tensor)
            The context vectors ``(B, T, num_heads * d_out)``, and the weights
            ``(B, H, T, T)`` if ``return_weights=True``.
        """
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
# Multi-head attention: one wide projection, split into heads
# --------------------------------------------------------------------------------------


class _MultiHeadBase(nn.Module):
    """Projections, head split, attention, head merge and output projection shared
    by :class:`MultiHeadAttention` and :class:`CrossAttention`."""

    def __init__(self, d_in, d_kv, d_out, num_heads, dropout, qkv_bias):
        super().__init__()
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_kv, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_kv, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)  # mixes the heads' outputs
        self.dropout = nn.Dropout(dropout)

    def _split_heads(self, t, name, T, trace):
        """``(B, T, D) -> (B, H, T, d)``: cut each token's vector into H heads."""
        B, n_tokens, _ = t.shape
        t = t.view(B, n_tokens, self.num_heads, self.head_dim)  # (B, T, H, d)
        _emit(trace, f"{name}.view", t, f"(B, {T}, H, d)")
        t = t.transpose(1, 2)  # (B, T, H, d) -> (B, H, T, d)
        _emit(trace, f"{name}.transpose", t, f"(B, H, {T}, d)")
        return t

    def _attend(self, x, kv, *, attn_mask, is_causal, letters, trace):
        """Project, split into heads, attend, merge the heads, project out.

        ``letters`` = (query length, key length) as letters for the trace notes.
        Returns ``(output (B, T_q, D), weights (B, H, T_q, T_k))``.
        """
        Tq, Tk = letters
        B, n_queries, _ = x.shape
        queries = self.W_query(x)  # (B, T_q, d_in) -> (B, T_q, D)
        _emit(trace, "queries", queries, f"(B, {Tq}, D)")
        keys = self.W_key(kv)  # (B, T_k, d_kv) -> (B, T_k, D)
        _emit(trace, "keys", keys, f"(B, {Tk}, D)")
        values = self.W_value(kv)  # (B, T_k, d_kv) -> (B, T_k, D)
        _emit(trace, "values", values, f"(B, {Tk}, D)")

        queries = self._split_heads(queries, "queries", Tq, trace)  # (B, H, T_q, d)
        keys = self._split_heads(keys, "keys", Tk, trace)  # (B, H, T_k, d)
        values = self._split_heads(values, "values", Tk, trace)  # (B, H, T_k, d)

        # Every head attends on its own: (B, H, T_q, d) -> (B, H, T_q, d).
        context, weights = scaled_dot_product_attention(
            queries,
            keys,
            values,
            attn_mask=attn_mask,
            dropout_p=self.dropout.p,
            is_causal=is_causal,
            training=self.training,
            return_weights=True,
        )
        _emit(trace, "weights", weights, f"(B, H, {Tq}, {Tk})")
        _emit(trace, "context", context, f"(B, H, {Tq}, d)")

        # Merge the heads back: transpose, then glue each token's H pieces together.
        # view needs neighbouring memory, which transpose broke: hence .contiguous().
        context = context.transpose(1, 2)  # (B, H, T_q, d) -> (B, T_q, H, d)
        _emit(trace, "context.transpose", context, f"(B, {Tq}, H, d)")
        context = context.contiguous().view(B, n_queries, self.d_out)  # (B, T_q, D)
        _emit(trace, "context.view", context, f"(B, {Tq}, D)")
        output = self.out_proj(context)  # (B, T_q, D) -> (B, T_q, D)
        _emit(trace, "out_proj", output, f"(B, {Tq}, D)")
        return output, weights


class MultiHeadAttention(_MultiHeadBase):
    """Multi-head self-attention, all heads computed at once.

    One ``d_in -> d_out`` projection each for queries, keys and values; the ``d_out``
    features of each token are then cut into ``num_heads`` pieces of
    ``head_dim = d_out // num_heads``, each head attends on its own piece, the pieces
    are glued back together and ``out_proj`` mixes them. **Here d_out is the total
    width** (in :class:`MultiHeadAttentionWrapper` it is the width of each head).

    Parameters
    ----------
    d_in : int
        Width of the input token vectors.
    d_out : int
        Total width of the output, divisible by ``num_heads``.
    context_length : int
        The longest sequence the module accepts; the causal mask is built for each
        call, so any shorter input works.
    dropout : float
        Probability of dropping each attention weight in training mode, in ``[0, 1)``.
    num_heads : int
        Number of heads ``H``.
    qkv_bias : bool, default False
        Give the query, key and value projections a bias (``out_proj`` always has one).
    causal : bool, default True
        Keyword only. ``True``: query ``i`` sees keys ``0..i`` (decoder). ``False``:
        every token sees every token (encoder).

    Attributes
    ----------
    W_query, W_key, W_value : nn.Linear
        ``d_in -> d_out`` projections, created in this order, then
    out_proj : nn.Linear
        ``d_out -> d_out``, with bias, then
    dropout : nn.Dropout
        Holds the dropout probability ``dropout.p``.
    d_out, num_heads, head_dim, context_length, causal
        The sizes and settings above; ``head_dim = d_out // num_heads``.

    Shapes
    ------
    - x: ``(B, T, d_in)`` with ``T <= context_length``
    - key_padding_mask: ``(B, T)``, bool, ``True`` = real token
    - output: ``(B, T, d_out)``
    - weights (``return_weights=True``): ``(B, H, T, T)``

    Raises
    ------
    ValueError
        If ``d_out`` is not divisible by ``num_heads``, a size is not a positive int,
        ``dropout`` is outside ``[0, 1)``, or (when called) ``x`` has the wrong rank
        or width, is longer than ``context_length``, or ``key_padding_mask`` has the
        wrong shape or dtype.

    Examples
    --------
    >>> import torch
    >>> from attn_course import your_journey
    >>> x = your_journey().embeddings
    >>> batch = torch.stack([x, x])  # (B=2, T=6, d_in=3)
    >>> mha = MultiHeadAttention(
    ...     d_in=3, d_out=2, context_length=6, dropout=0.0, num_heads=2
    ... )
    >>> mha.head_dim
    1
    >>> context, weights = mha(batch, return_weights=True)
    >>> context.shape, weights.shape
    (torch.Size([2, 6, 2]), torch.Size([2, 2, 6, 6]))

    Print the shape of every step with a :class:`ShapeTracer`:

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
        args = {
            "d_in": d_in,
            "d_out": d_out,
            "context_length": context_length,
            "dropout": dropout,
            "num_heads": num_heads,
            "qkv_bias": qkv_bias,
        }
        name = type(self).__name__
        _check_sizes(name, args, ("d_in", "d_out", "context_length", "num_heads"))
        _check_dropout(name, args)
        _check_heads(name, args)
        super().__init__(d_in, d_in, d_out, num_heads, dropout, qkv_bias)
        self.d_in = d_in
        self.context_length = context_length
        self.causal = bool(causal)

    def forward(self, x, *, key_padding_mask=None, return_weights=False, trace=None):
        """Attend from each token to the tokens it may see, in every head.

        Parameters
        ----------
        x : torch.Tensor
            Token vectors, ``(B, T, d_in)``.
        key_padding_mask : torch.Tensor, optional
            Bool ``(B, T)``, ``True`` = real token, ``False`` = padding that no query
            may attend to (e.g. from :func:`attn_course.padding_mask`). Combined with
            the causal mask when ``causal=True``.
        return_weights : bool, default False
            Also return the attention weights of every head (after dropout).
        trace : callable, optional
            Called as ``trace(name, tensor)`` at every step; see :class:`ShapeTracer`.

        Returns
        -------
        torch.Tensor or (torch.Tensor, torch.Tensor)
            The output ``(B, T, d_out)``, and the weights ``(B, H, T, T)`` if
            ``return_weights=True``.
        """
        T = _check_input(x, "x", "d_in", self.d_in, allow_unbatched=False)
        _check_length(T, self.context_length)
        B = x.size(0)
        _emit(trace, "x", x, "(B, T, d_in)")
        attn_mask = None
        if key_padding_mask is not None:
            _check_key_padding_mask(key_padding_mask, B, T, "T")
            # (B, T) -> (B, 1, 1, T): the same padding for every head and query.
            attn_mask = key_padding_to_attn_mask(key_padding_mask)
            if self.causal:
                # The functional takes a mask or is_causal, not both: combine them.
                # (B, 1, 1, T) & (T, T) -> (B, 1, T, T)
                attn_mask = attn_mask & causal_mask(T, device=x.device)
        output, weights = self._attend(
            x,
            x,
            attn_mask=attn_mask,
            is_causal=self.causal and attn_mask is None,
            letters=("T", "T"),
            trace=trace,
        )
        if return_weights:
            return output, weights
        return output

    def extra_repr(self):
        return (
            f"d_in={self.d_in}, d_out={self.d_out}, num_heads={self.num_heads}, "
            f"head_dim={self.head_dim}, context_length={self.context_length}, "
            f"causal={self.causal}"
        )


class CrossAttention(_MultiHeadBase):
    """Multi-head cross-attention: queries from x, keys and values from context.

    The decoder of an encoder-decoder model uses it to look at the encoder's output:
    each of the ``T_q`` tokens of ``x`` attends to all ``T_k`` tokens of
    ``context``. Never causal; the two sequences may differ in length and width.

    Parameters
    ----------
    d_in : int
        Width of the tokens of ``x`` (the queries).
    d_out : int
        Total width of the output, divisible by ``num_heads``.
    num_heads : int
        Number of heads ``H``.
    dropout : float, default 0.0
        Probability of dropping each attention weight in training mode, in ``[0, 1)``.
    qkv_bias : bool, default False
        Give the query, key and value projections a bias (``out_proj`` always has one).
    d_context : int, optional
        Keyword only. Width of the tokens of ``context``; defaults to ``d_in``.

    Attributes
    ----------
    W_query : nn.Linear
        ``d_in -> d_out``, created first, then
    W_key, W_value : nn.Linear
        ``d_context -> d_out``, then
    out_proj : nn.Linear
        ``d_out -> d_out``, with bias, then
    dropout : nn.Dropout
        Holds the dropout probability ``dropout.p``.

    Shapes
    ------
    - x: ``(B, T_q, d_in)``
    - context: ``(B, T_k, d_context)``
    - key_padding_mask: ``(B, T_k)``, bool, ``True`` = real token
    - output: ``(B, T_q, d_out)``
    - weights (``return_weights=True``): ``(B, H, T_q, T_k)``

    Examples
    --------
    >>> import torch
    >>> from attn_course import padding_mask
    >>> x = torch.randn(2, 3, 4)  # (B=2, T_q=3, d_in=4)
    >>> memory = torch.randn(2, 5, 6)  # (B=2, T_k=5, d_context=6)
    >>> xattn = CrossAttention(d_in=4, d_out=8, num_heads=2, d_context=6)
    >>> mask = padding_mask([5, 2])  # the second context has 2 real tokens
    >>> out, weights = xattn(
    ...     x, memory, key_padding_mask=mask, return_weights=True
    ... )
    >>> out.shape, weights.shape
    (torch.Size([2, 3, 8]), torch.Size([2, 2, 3, 5]))
    >>> bool((weights[1, :, :, 2:] == 0).all())  # no weight on padding
    True
    """

    def __init__(
        self, d_in, d_out, num_heads, dropout=0.0, qkv_bias=False, *, d_context=None
    ):
        args = {
            "d_in": d_in,
            "d_out": d_out,
            "num_heads": num_heads,
            "dropout": dropout,
            "qkv_bias": qkv_bias,
            "d_context": d_context,
        }
        name = type(self).__name__
        sizes = ("d_in", "d_out", "num_heads")
        if d_context is not None:
            sizes += ("d_context",)
        _check_sizes(name, args, sizes)
        _check_dropout(name, args)
        _check_heads(name, args)
        d_context = d_in if d_context is None else d_context
        super().__init__(d_in, d_context, d_out, num_heads, dropout, qkv_bias)
        self.d_in = d_in
        self.d_context = d_context

    def forward(
        self, x, context, *, key_padding_mask=None, return_weights=False, trace=None
    ):
        """Attend from every token of x to every (real) token of context.

        Parameters
        ----------
        x : torch.Tensor
            Query tokens, ``(B, T_q, d_in)``.
        context : torch.Tensor
            Key and value tokens, ``(B, T_k, d_context)``.
        key_padding_mask : torch.Tensor, optional
            Bool ``(B, T_k)``, ``True`` = real token of ``context``. A query whose
            keys are all padding gets weights and output of zeros before
            ``out_proj``.
        return_weights : bool, default False
            Also return the attention weights of every head (after dropout).
        trace : callable, optional
            Called as ``trace(name, tensor)`` at every step; see :class:`ShapeTracer`.

        Returns
        -------
        torch.Tensor or (torch.Tensor, torch.Tensor)
            The output ``(B, T_q, d_out)``, and the weights ``(B, H, T_q, T_k)`` if
            ``return_weights=True``.
        """
        _check_input(x, "x", "d_in", self.d_in, allow_unbatched=False)
        T_k = _check_input(
            context, "context", "d_context", self.d_context, allow_unbatched=False
        )
        B = x.size(0)
        if context.size(0) != B:
            raise ValueError(
                f"x and context must have the same batch size B, got x "
                f"{tuple(x.shape)} and context {tuple(context.shape)}; pair each "
                "sequence of x with its own context"
            )
        _emit(trace, "x", x, "(B, T_q, d_in)")
        _emit(trace, "context (input)", context, "(B, T_k, d_context)")
        attn_mask = None
        if key_padding_mask is not None:
            _check_key_padding_mask(key_padding_mask, B, T_k, "T_k")
            # (B, T_k) -> (B, 1, 1, T_k): the same padding for every head and query.
            attn_mask = key_padding_to_attn_mask(key_padding_mask)
        output, weights = self._attend(
            x,
            context,
            attn_mask=attn_mask,
            is_causal=False,
            letters=("T_q", "T_k"),
            trace=trace,
        )
        if return_weights:
            return output, weights
        return output

    def extra_repr(self):
        return (
            f"d_in={self.d_in}, d_context={self.d_context}, d_out={self.d_out}, "
            f"num_heads={self.num_heads}, head_dim={self.head_dim}"
        )
