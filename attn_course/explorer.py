"""Interactive explorers of attention, each a pure computation plus a small widget app.

Chapter 1, query and temperature: pick the query token, turn the temperature knob.
Chapter 3, masks: :func:`mask_explore` and :func:`mask_explorer` switch between no
mask, the causal mask and an inverted one (see the second half of this module).

:func:`explore` is the computation, a pure function you can call anywhere.
:func:`attention_explorer` wraps it in a small ipywidgets app: a dropdown for the
query token, a log-scale slider for the temperature, and a bar chart of the weights
that redraws whenever either changes. On the static website, where widgets cannot
run, :func:`attn_course.plot.temperature_panel` shows the same idea as a picture.

The attention here is Chapter 1's: no trainable projections, the scores are plain
dot products of the embeddings, and the temperature divides them before the softmax::

    scores  = x @ x[q]                         # (T, D) @ (D,) -> (T,)
    weights = softmax(scores / temperature)    # (T,)
    context = weights @ x                      # (T,) @ (T, D) -> (D,)

Shapes
------
T : number of tokens.
D : embedding width.
"""

from __future__ import annotations

import base64
import math
import operator
from numbers import Real
from typing import NamedTuple

import ipywidgets as widgets
import numpy as np
import torch

from .functional import scaled_dot_product_attention
from .masks import causal_mask, to_additive_mask
from .plot import attention_heatmap, weight_bars

__all__ = [
    "MASK_CONVENTIONS",
    "AttentionExplorer",
    "ExplorerState",
    "MaskExplorer",
    "MaskState",
    "attention_explorer",
    "explore",
    "mask_explore",
    "mask_explorer",
]


class ExplorerState(NamedTuple):
    """What one query sees at one temperature: its scores, weights and context.

    Attributes
    ----------
    scores : torch.Tensor
        Plain dot products of the query's embedding with every embedding, before the
        temperature is applied.
    weights : torch.Tensor
        ``softmax(scores / temperature)``: non-negative and summing to 1.
    context : torch.Tensor
        The weighted sum of the embeddings, ``weights @ embeddings``.

    Shapes
    ------
    scores : (T,); weights : (T,); context : (D,).

    Examples
    --------
    >>> from attn_course.data import hello_shiny_sun
    >>> scores, weights, context = explore(*hello_shiny_sun(), query_index=1)
    >>> scores.shape, weights.shape, context.shape
    (torch.Size([3]), torch.Size([3]), torch.Size([3]))
    """

    scores: torch.Tensor
    weights: torch.Tensor
    context: torch.Tensor


def _as_embeddings(embeddings):
    """Return the embeddings as a floating-point (T, D) tensor, or raise."""
    if isinstance(embeddings, np.ndarray):
        embeddings = torch.from_numpy(embeddings)
    if not isinstance(embeddings, torch.Tensor):
        raise TypeError(
            f"embeddings must be a torch.Tensor, got {type(embeddings).__name__}; "
            "convert it first, e.g. embeddings = torch.tensor(embeddings)"
        )
    if embeddings.dim() != 2:
        raise ValueError(
            f"embeddings must have shape (T, D), one row per token, got shape "
            f"{tuple(embeddings.shape)}; for a batch pick one sentence, e.g. "
            "embeddings[0]"
        )
    if not embeddings.is_floating_point():
        embeddings = embeddings.float()
    return embeddings


def _as_tokens(tokens, count):
    """Return the tokens as a tuple of str that matches ``count`` rows, or raise."""
    if tokens is None:
        return None
    if isinstance(tokens, str):
        raise TypeError(
            f"tokens must be a sequence of tokens such as ('Hello', 'shiny', 'sun!'), "
            f"not one string {tokens!r}; split it first, e.g. {tokens!r}.split()"
        )
    tokens = tuple(str(token) for token in tokens)
    if len(tokens) != count:
        raise ValueError(
            f"got {len(tokens)} tokens {tokens} but {count} embedding rows; pass "
            "one embedding row per token"
        )
    return tokens


def _check_query_index(query_index, count, tokens=None):
    """Return ``query_index`` as a position in ``0..count - 1``, or raise."""
    if isinstance(query_index, str):
        where = f"tokens.index({query_index!r})" if tokens else "its position"
        raise TypeError(
            f"query_index must be an int position, got the string {query_index!r}; "
            f"use {where}"
        )
    if isinstance(query_index, bool):
        raise TypeError(f"query_index must be an int position, got {query_index}")
    try:
        index = operator.index(query_index)
    except TypeError:
        raise TypeError(
            f"query_index must be an int position, got {type(query_index).__name__} "
            f"{query_index!r}"
        ) from None
    if not -count <= index < count:
        listing = f" {tokens}" if tokens else ""
        raise ValueError(
            f"query_index={index} is out of range for {count} tokens{listing}; "
            f"choose 0 to {count - 1} (or -{count} to -1 to count from the end)"
        )
    return index % count


def _check_temperature(temperature):
    """Return ``temperature`` as a positive float whose inverse is finite, or raise."""
    if isinstance(temperature, torch.Tensor) and temperature.numel() == 1:
        temperature = temperature.item()
    if not isinstance(temperature, Real) or isinstance(temperature, bool):
        raise TypeError(
            f"temperature must be a number, got {type(temperature).__name__}; "
            "use e.g. temperature=1.0"
        )
    temperature = float(temperature)
    if not (math.isfinite(temperature) and temperature > 0):
        raise ValueError(
            f"temperature must be a positive finite number, got "
            f"temperature={temperature:g}; the scores are divided by it. Small values "
            "such as 0.05 make the weights nearly one-hot, large ones such as 20 "
            "nearly uniform"
        )
    if not math.isfinite(1.0 / temperature):
        raise ValueError(
            f"temperature={temperature:g} is too small: 1 / temperature overflows; "
            "use 1e-6 or more, which is already one-hot for these scores"
        )
    return temperature


def explore(tokens, embeddings, query_index, temperature=1.0):
    """Compute one query's scores, weights and context vector at a temperature.

    A pure function: it changes nothing and returns an :class:`ExplorerState`. The
    attention itself is :func:`attn_course.scaled_dot_product_attention` with
    ``scale = 1 / temperature``, so ``temperature=1.0`` is Chapter 1's unscaled
    dot-product attention.

    Parameters
    ----------
    tokens : sequence of str or None
        The tokens, one per embedding row; used to check the lengths agree and in
        error messages. ``None`` skips that check.
    embeddings : torch.Tensor or numpy.ndarray
        One embedding row per token; they serve as queries, keys and values.
    query_index : int
        Position of the query token; negative values count from the end.
    temperature : float, default 1.0
        Positive. Below 1 it sharpens the weights, above 1 it flattens them.

    Returns
    -------
    ExplorerState
        ``(scores, weights, context)``.

    Shapes
    ------
    embeddings : (T, D) -> scores (T,), weights (T,), context (D,).

    Raises
    ------
    ValueError
        If ``query_index`` is out of range, ``temperature`` is not positive and
        finite, or the number of tokens differs from the number of rows.
    TypeError
        If ``query_index`` is not an int or ``embeddings`` is not a tensor or array.

    Examples
    --------
    The query "shiny" of Chapter 1:

    >>> from attn_course.data import hello_shiny_sun
    >>> tokens, embeddings = hello_shiny_sun()
    >>> state = explore(tokens, embeddings, query_index=1)
    >>> state.scores
    tensor([0.7842, 1.3569, 1.2487])
    >>> state.weights
    tensor([0.2291, 0.4063, 0.3646])
    >>> state.context
    tensor([0.3990, 0.3854, 0.8610])

    A low temperature gives nearly all the weight to the best-matching key, a high
    one spreads it almost evenly:

    >>> explore(tokens, embeddings, 1, temperature=0.01).weights.round(decimals=3)
    tensor([0., 1., 0.])
    >>> explore(tokens, embeddings, 1, temperature=100.0).weights.round(decimals=2)
    tensor([0.3300, 0.3300, 0.3300])
    """
    x = _as_embeddings(embeddings)  # (T, D)
    T = x.shape[0]
    tokens = _as_tokens(tokens, T)
    index = _check_query_index(query_index, T, tokens)
    temperature = _check_temperature(temperature)

    query = x[index].unsqueeze(0)  # (D,) -> (1, D): one query
    # Unscaled scores, as in Chapter 1; the temperature is applied inside as scale.
    scores = x @ x[index]  # (T, D) @ (D,) -> (T,)
    context, weights = scaled_dot_product_attention(
        query, x, x, scale=1.0 / temperature, return_weights=True
    )  # (1, D), (1, T)
    return ExplorerState(scores, weights[0], context[0])  # (T,), (T,), (D,)


def _format_vector(vector):
    """Format a 1-D tensor as ``[0.4204, 0.4055, 0.8704]``."""
    return "[" + ", ".join(f"{float(v):.4f}" for v in vector) + "]"


class AttentionExplorer(widgets.VBox):
    """An ipywidgets app: choose a query token and a temperature, see the weights.

    It is an ``ipywidgets.VBox`` holding a ``Dropdown`` (the query), a
    ``FloatLogSlider`` (the temperature) and an ``Output`` with a bar chart of the
    weights and a line with the context vector. Changing the dropdown or the slider
    calls :meth:`update`, which recomputes with :func:`explore`, stores the result in
    :attr:`state` and redraws. Everything also works without a browser: set
    ``explorer.dropdown.value`` or ``explorer.slider.value`` and read
    ``explorer.state``.

    Parameters
    ----------
    tokens : sequence of str
        The tokens, one per embedding row.
    embeddings : torch.Tensor or numpy.ndarray
        One embedding row per token.
    query_index : int, default 1
        The query token shown first.
    temperature : float, default 1.0
        The temperature shown first. The slider spans 0.01 to 100, widened to
        include this value if needed.

    Attributes
    ----------
    dropdown : ipywidgets.Dropdown
        Its ``value`` is the query position.
    slider : ipywidgets.FloatLogSlider
        Its ``value`` is the temperature.
    output : ipywidgets.Output
        Shows the bar chart and the context vector: its ``outputs`` are a PNG
        picture and a ``context vector of "<token>": [...]`` line, replaced on every
        update (no running kernel needed, so tests can read them).
    state : ExplorerState
        The result for the current dropdown and slider values.
    figure : matplotlib.figure.Figure
        The bar chart for the current values.

    Shapes
    ------
    embeddings : (T, D); state.weights : (T,); state.context : (D,).

    Examples
    --------
    >>> from attn_course.data import hello_shiny_sun
    >>> app = AttentionExplorer(*hello_shiny_sun(), query_index=1)
    >>> app.state.weights
    tensor([0.2291, 0.4063, 0.3646])
    >>> app.slider.value = 0.1  # a low temperature sharpens the weights
    >>> app.state.weights.round(decimals=2)
    tensor([0.0000, 0.7500, 0.2500])
    >>> app.dropdown.value = 0  # query "Hello"
    >>> app.figure.axes[0].get_title()
    'query "Hello", temperature 0.10'
    >>> app
    AttentionExplorer(tokens=('Hello', 'shiny', 'sun!'), query_index=0, temperature=0.1)
    """

    def __init__(self, tokens, embeddings, *, query_index=1, temperature=1.0):
        x = _as_embeddings(embeddings).detach().clone()  # (T, D), our own copy
        self.tokens = _as_tokens(tokens, x.shape[0])
        if self.tokens is None:
            raise TypeError("tokens must be a sequence of str, one per embedding row")
        self.embeddings = x
        index = _check_query_index(query_index, x.shape[0], self.tokens)
        temperature = _check_temperature(temperature)

        self.dropdown = widgets.Dropdown(
            options=[(f"{i}: {token}", i) for i, token in enumerate(self.tokens)],
            value=index,
            description="query",
        )
        # The slider moves in powers of 10, so 0.1 -> 1 is as far as 1 -> 10. It
        # reaches 0.01 because the toy scores differ by as little as 0.01-0.5, and
        # only a temperature below those gaps makes the weights nearly one-hot.
        exponent = math.log10(temperature)
        self.slider = widgets.FloatLogSlider(
            value=temperature,
            base=10,
            min=min(-2.0, math.floor(exponent)),
            max=max(2.0, math.ceil(exponent)),
            step=0.01,
            description="temperature",
            readout_format=".2f",
            continuous_update=False,
            style={"description_width": "initial"},
        )
        self.output = widgets.Output()
        self.state = None
        self.figure = None
        super().__init__([widgets.HBox([self.dropdown, self.slider]), self.output])
        self.dropdown.observe(self._on_change, names="value")
        self.slider.observe(self._on_change, names="value")
        self.update()

    def __repr__(self):
        # The default widget repr would include the whole picture as base64 text.
        return (
            f"AttentionExplorer(tokens={self.tokens}, "
            f"query_index={self.dropdown.value}, temperature={self.slider.value:g})"
        )

    def _on_change(self, change):
        """Widget callback: any new dropdown or slider value triggers a redraw."""
        self.update()

    def update(self):
        """Recompute for the current widget values and redraw the output.

        Returns
        -------
        ExplorerState
            The new :attr:`state`.
        """
        index = self.dropdown.value
        temperature = self.slider.value
        state = explore(self.tokens, self.embeddings, index, temperature)
        query = self.tokens[index]
        figure = weight_bars(
            state.weights,
            self.tokens,
            title=f'query "{query}", temperature {temperature:.2f}',
        )
        self.state = state
        self.figure = figure
        line = f'context vector of "{query}": {_format_vector(state.context)}\n'
        _show(self.output, figure, line)
        return state


def _show(output, figure, line):
    """Replace what an Output widget shows with a figure and one line of text.

    The outputs are set in one step. Unlike printing inside ``with output:``, this
    needs no running kernel, so the explorers behave the same in a notebook, in a
    test and in a doctest.
    """
    output.outputs = (
        {
            "output_type": "display_data",
            "data": {
                "image/png": base64.b64encode(figure._repr_png_()).decode("ascii"),
                "text/plain": repr(figure),
            },
            "metadata": {},
        },
        {"output_type": "stream", "name": "stdout", "text": line},
    )


def attention_explorer(tokens, embeddings, *, query_index=1, temperature=1.0):
    """Build the interactive explorer of query choice and softmax temperature.

    Parameters
    ----------
    tokens : sequence of str
        The tokens, one per embedding row.
    embeddings : torch.Tensor or numpy.ndarray
        One embedding row per token.
    query_index : int, default 1
        The query token shown first.
    temperature : float, default 1.0
        The temperature shown first.

    Returns
    -------
    AttentionExplorer
        An ``ipywidgets.VBox``; display it by ending a cell with it. Its
        ``dropdown``, ``slider``, ``state`` and ``update()`` are described in
        :class:`AttentionExplorer`.

    Shapes
    ------
    embeddings : (T, D).

    Examples
    --------
    >>> from attn_course.data import your_journey
    >>> app = attention_explorer(*your_journey(), query_index=1, temperature=0.5)
    >>> app.dropdown.label, app.slider.value
    ('1: journey', 0.5)
    >>> round(float(app.state.weights.sum()), 4)
    1.0
    """
    return AttentionExplorer(
        tokens, embeddings, query_index=query_index, temperature=temperature
    )


# --- Chapter 3: causal mask explorer ---

MASK_CONVENTIONS = {
    "bool": "bool mask, True = may attend (SDPA)",
    "additive": "float mask added to the scores, 0 / -inf",
    "is_causal": "is_causal=True, no mask tensor",
    "inverted": "nn.MultiheadAttention's mask (True = blocked) given to SDPA: a bug",
}
"""The ways :class:`MaskExplorer` can pass a causal mask: key -> description."""


class MaskState(NamedTuple):
    """The attention weights under one mask, and what the mask let through.

    Attributes
    ----------
    allowed : torch.Tensor
        Bool, ``True`` where query ``i`` could attend to key ``j`` under the mask
        as it was actually applied (all ``True`` without a mask).
    weights : torch.Tensor
        The attention weights; a query that may attend to no key gets zeros.
    future_weight : float
        The weight all queries together put on keys after them (``j > i``): 0 for a
        causal mask, more than 0 when the future leaks in.
    empty_rows : tuple of int
        The queries that may attend to no key at all.

    Shapes
    ------
    allowed : (T_q, T_k); weights : (T_q, T_k).

    Examples
    --------
    >>> import torch
    >>> x = torch.eye(3)
    >>> state = mask_explore(x, x, causal=True)
    >>> state.future_weight, state.empty_rows
    (0.0, ())
    """

    allowed: torch.Tensor
    weights: torch.Tensor
    future_weight: float
    empty_rows: tuple


def _as_vectors(tensor, name):
    """Return ``tensor`` as a floating-point ``(T, d)`` tensor, or raise."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor of shape (T, d), got "
            f"{type(tensor).__name__}; e.g. {name} = module.W_{name[:-1]}(x)"
        )
    if tensor.dim() != 2:
        raise ValueError(
            f"{name} must have shape (T, d), one row per token, got shape "
            f"{tuple(tensor.shape)}; for a batch pick one sequence, e.g. {name}[0]"
        )
    return tensor.detach().float()


def mask_explore(queries, keys, *, causal=True, convention="bool"):
    """Attention weights with or without a causal mask, passed one of four ways.

    A pure function, computed with :func:`attn_course.scaled_dot_product_attention`
    (scale ``1 / sqrt(d)``). The first three conventions of
    :data:`MASK_CONVENTIONS` give the same causal weights; ``"inverted"`` passes
    ``~causal_mask(T)``, a mask in ``nn.MultiheadAttention``'s convention (True =
    blocked), to a function that reads True as *may attend*: no error, but every
    query sees only the future, and the last query sees nothing.

    Parameters
    ----------
    queries : torch.Tensor
        One query vector per token.
    keys : torch.Tensor
        One key vector per token, the same width as the queries.
    causal : bool, default True
        Apply a causal mask; ``False`` lets every query see every key.
    convention : str, default "bool"
        How the mask is passed: a key of :data:`MASK_CONVENTIONS`. Ignored when
        ``causal=False``.

    Returns
    -------
    MaskState
        ``(allowed, weights, future_weight, empty_rows)``.

    Shapes
    ------
    queries : (T_q, d); keys : (T_k, d) -> allowed, weights : (T_q, T_k).

    Raises
    ------
    ValueError
        If ``convention`` is unknown, or the inputs are not 2-D or differ in width.
    TypeError
        If ``queries`` or ``keys`` is not a tensor.

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> mask_explore(x, x, causal=True).weights.round(decimals=2)
    tensor([[1.0000, 0.0000, 0.0000],
            [0.3300, 0.6700, 0.0000],
            [0.2500, 0.2500, 0.5000]])
    >>> bug = mask_explore(x, x, causal=True, convention="inverted")
    >>> bug.weights.round(decimals=2)
    tensor([[0.0000, 0.3300, 0.6700],
            [0.0000, 0.0000, 1.0000],
            [0.0000, 0.0000, 0.0000]])
    >>> bug.empty_rows
    (2,)
    """
    if convention not in MASK_CONVENTIONS:
        raise ValueError(
            f"convention={convention!r} is not one of {tuple(MASK_CONVENTIONS)}: "
            + "; ".join(f"{key!r} = {text}" for key, text in MASK_CONVENTIONS.items())
        )
    q = _as_vectors(queries, "queries")  # (T_q, d)
    k = _as_vectors(keys, "keys")  # (T_k, d)
    if q.shape[1] != k.shape[1]:
        raise ValueError(
            f"queries and keys must have the same width d, got queries "
            f"{tuple(q.shape)} and keys {tuple(k.shape)}"
        )
    T_q, T_k = q.shape[0], k.shape[0]
    causal_allowed = causal_mask(T_q, T_k)  # (T_q, T_k), True = may attend
    options = {}
    allowed = torch.ones(T_q, T_k, dtype=torch.bool)  # no mask: everything
    if causal and convention == "bool":
        options["attn_mask"] = allowed = causal_allowed
    elif causal and convention == "additive":
        options["attn_mask"] = to_additive_mask(causal_allowed)  # 0 / -inf
        allowed = causal_allowed
    elif causal and convention == "is_causal":
        options["is_causal"] = True
        allowed = causal_allowed
    elif causal:  # "inverted": True = blocked, read as True = may attend
        options["attn_mask"] = allowed = ~causal_allowed
    _, weights = scaled_dot_product_attention(
        q, k, k, return_weights=True, **options
    )  # (T_q, T_k)
    future = weights.masked_fill(causal_allowed, 0.0)  # weights on keys j > i
    empty = tuple(int(i) for i in (~allowed.any(dim=-1)).nonzero().reshape(-1))
    return MaskState(allowed, weights, float(future.sum()), empty)


class MaskExplorer(widgets.VBox):
    """An ipywidgets app: switch the causal mask on and off, and choose how it is
    passed, and see the attention weights as a heatmap.

    A ``Checkbox`` turns the causal mask on or off, a ``Dropdown`` picks one of
    :data:`MASK_CONVENTIONS`, and an ``Output`` shows the heatmap and one line that
    says how much weight went to future keys and which queries saw no key at all.
    Changing a control calls :meth:`update`, which recomputes with
    :func:`mask_explore`; tests can set ``explorer.checkbox.value`` or
    ``explorer.dropdown.value`` and read ``explorer.state``, no browser needed.

    Parameters
    ----------
    tokens : sequence of str
        The tokens, one per query and key row.
    queries, keys : torch.Tensor
        One query and one key vector per token, e.g. ``module.W_query(x)``.
    causal : bool, default True
        Whether the mask starts switched on.
    convention : str, default "bool"
        The convention shown first, a key of :data:`MASK_CONVENTIONS`.

    Attributes
    ----------
    query_vectors, key_vectors : torch.Tensor
        Copies of the queries and keys (``keys`` is a name ipywidgets reserves).
    checkbox : ipywidgets.Checkbox
        Its ``value`` switches the causal mask.
    dropdown : ipywidgets.Dropdown
        Its ``value`` is a key of :data:`MASK_CONVENTIONS`; disabled while the
        mask is off.
    output : ipywidgets.Output
        Its ``outputs`` are a PNG of the heatmap and a summary line.
    state : MaskState
        The result for the current controls.
    figure : matplotlib.figure.Figure
        The heatmap for the current controls.

    Shapes
    ------
    queries, keys : (T, d); state.weights : (T, T).

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> app = MaskExplorer(["a", "b", "c"], x, x)
    >>> app.state.future_weight
    0.0
    >>> app.checkbox.value = False  # no mask: the future leaks in
    >>> round(app.state.future_weight, 4), app.dropdown.disabled
    (1.0, True)
    >>> app.checkbox.value = True
    >>> app.dropdown.value = "inverted"
    >>> app.state.empty_rows
    (2,)
    >>> app
    MaskExplorer(tokens=('a', 'b', 'c'), causal=True, convention='inverted')
    """

    def __init__(self, tokens, queries, keys, *, causal=True, convention="bool"):
        state = mask_explore(queries, keys, causal=causal, convention=convention)
        # Our own copies. (Not self.keys: ipywidgets uses that name for traits.)
        self.query_vectors = _as_vectors(queries, "queries").clone()  # (T, d)
        self.key_vectors = _as_vectors(keys, "keys").clone()  # (T, d)
        T, T_k = self.query_vectors.shape[0], self.key_vectors.shape[0]
        if tokens is None or T != T_k:
            raise TypeError(
                "tokens must be a sequence of str with one token per query and key "
                f"row; got {T} queries and {T_k} keys"
            )
        self.tokens = _as_tokens(tokens, T)
        self.checkbox = widgets.Checkbox(value=bool(causal), description="causal mask")
        self.dropdown = widgets.Dropdown(
            options=[(text, key) for key, text in MASK_CONVENTIONS.items()],
            value=convention,
            description="passed as",
            disabled=not causal,
            layout=widgets.Layout(width="34em"),
        )
        self.output = widgets.Output()
        self.state = state
        self.figure = None
        super().__init__([widgets.HBox([self.checkbox, self.dropdown]), self.output])
        self.checkbox.observe(self._on_change, names="value")
        self.dropdown.observe(self._on_change, names="value")
        self.update()

    def __repr__(self):
        return (
            f"MaskExplorer(tokens={self.tokens}, causal={self.checkbox.value}, "
            f"convention={self.dropdown.value!r})"
        )

    def _on_change(self, change):
        """Widget callback: any new checkbox or dropdown value triggers a redraw."""
        self.update()

    def update(self):
        """Recompute for the current controls and redraw the output.

        Returns
        -------
        MaskState
            The new :attr:`state`.
        """
        causal = self.checkbox.value
        convention = self.dropdown.value
        self.dropdown.disabled = not causal
        state = mask_explore(
            self.query_vectors, self.key_vectors, causal=causal, convention=convention
        )
        title = f"causal: {MASK_CONVENTIONS[convention]}" if causal else "no mask"
        figure = attention_heatmap(state.weights, self.tokens, title=title)
        empty = ", ".join(self.tokens[i] for i in state.empty_rows) or "none"
        line = (
            f"weight on future keys (summed over queries): {state.future_weight:.4f}; "
            f"queries that see no key: {empty}\n"
        )
        self.state = state
        self.figure = figure
        _show(self.output, figure, line)
        return state


def mask_explorer(tokens, queries, keys, *, causal=True, convention="bool"):
    """Build the interactive explorer of the causal mask and its conventions.

    Parameters
    ----------
    tokens : sequence of str
        The tokens, one per query and key row.
    queries, keys : torch.Tensor
        One query and one key vector per token.
    causal : bool, default True
        Whether the mask starts switched on.
    convention : str, default "bool"
        The convention shown first, a key of :data:`MASK_CONVENTIONS`.

    Returns
    -------
    MaskExplorer
        An ``ipywidgets.VBox``; display it by ending a cell with it.

    Shapes
    ------
    queries, keys : (T, d).

    Examples
    --------
    >>> import torch
    >>> from attn_course.data import your_journey
    >>> tokens, x = your_journey()
    >>> app = mask_explorer(tokens, x, x, convention="additive")
    >>> app.state.future_weight
    0.0
    >>> app.figure.axes[0].get_title()
    'causal: float mask added to the scores, 0 / -inf'
    """
    return MaskExplorer(tokens, queries, keys, causal=causal, convention=convention)
