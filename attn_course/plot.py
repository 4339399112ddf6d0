"""Pictures of attention: heatmaps of weight matrices and bar charts of one query.

Every helper returns a :class:`matplotlib.figure.Figure` and leaves global state
alone: nothing here imports ``matplotlib.pyplot`` or changes ``rcParams``. In a
notebook, end a cell with the returned figure to show it, exactly once::

    fig = attention_heatmap(weights, tokens)
    fig

The helpers accept torch tensors (also ones that require grad, or live on a GPU) and
NumPy arrays.

Shapes
------
T_q : number of queries (rows of a weight matrix).
T_k : number of keys (columns of a weight matrix).
N : number of matrices drawn side by side, e.g. one per head.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

import matplotlib
import numpy as np
import torch
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

__all__ = [
    "attention_heatmap",
    "heatmap_grid",
    "heatmap_panels",
    "line_panels",
    "temperature_panel",
    "weight_bars",
]

_BAR_COLOR = "#3b75af"


class _NotebookFigure(Figure):
    """A Figure that draws itself as a PNG in Jupyter, without pyplot.

    A bare ``Figure`` shows up in a notebook only if ``matplotlib.pyplot`` (or the
    ``%matplotlib inline`` magic) has registered a display hook. ``_repr_png_`` lets
    the figure display itself either way; when the hook exists, IPython uses the hook
    instead, so the figure still appears once.
    """

    def _repr_png_(self):
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", bbox_inches="tight")
        return buffer.getvalue()

    def __repr__(self):
        return super().__repr__().replace(type(self).__name__, "Figure", 1)


def _new_figure(width, height):
    """Return an empty figure with constrained layout, not registered with pyplot."""
    return _NotebookFigure(figsize=(width, height), layout="constrained")


def _shape(array):
    """Format a shape like PyTorch and NumPy print tuples: (3,), (2, 3)."""
    return str(tuple(int(n) for n in array.shape))


def _as_array(values, name):
    """Convert a tensor, array or nested list of numbers to a float64 NumPy array."""
    if isinstance(values, torch.Tensor):
        if values.is_complex():
            raise TypeError(f"{name} must hold real numbers, got dtype {values.dtype}")
        # detach: plotting needs no gradient; cpu + float: NumPy has no bfloat16.
        return values.detach().to("cpu", torch.float64).numpy()
    if isinstance(values, (str, bytes)) or values is None:
        raise TypeError(
            f"{name} must be a torch.Tensor or a NumPy array of numbers, got "
            f"{type(values).__name__}"
        )
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"{name} must be a torch.Tensor or a NumPy array of numbers, got "
            f"{type(values).__name__} that does not convert to numbers; "
            "build it with torch.tensor(...) first"
        ) from None
    return array


def _labels(tokens, count, *, arg, axis, shape):
    """Return ``count`` tick labels: the tokens, or 0, 1, ... when tokens is None."""
    if tokens is None:
        return [str(i) for i in range(count)]
    if isinstance(tokens, str):
        raise TypeError(
            f"{arg} must be a sequence of tokens such as ('Hello', 'shiny', 'sun!'), "
            f"not one string {tokens!r}; split it first, e.g. {tokens!r}.split()"
        )
    labels = [str(token) for token in tokens]
    if len(labels) != count:
        raise ValueError(
            f"{arg} has {len(labels)} tokens {tuple(labels)}, but the weights of "
            f"shape {shape} have {count} {axis}; pass exactly one token per {axis[:-1]}"
        )
    return labels


def _rotate(labels):
    """Whether x tick labels are long enough to need rotating to stay readable."""
    return max((len(label) for label in labels), default=0) > 5 or len(labels) > 10


def _set_ticks(ax, x_labels, y_labels, *, show_x=True, show_y=True):
    """Put token labels on both axes; long x labels are rotated by 45 degrees."""
    ax.set_xticks(range(len(x_labels)))
    ax.set_yticks(range(len(y_labels)))
    if show_x:
        if _rotate(x_labels):
            ax.set_xticklabels(
                x_labels, rotation=45, ha="right", rotation_mode="anchor"
            )
        else:
            ax.set_xticklabels(x_labels)
    else:
        ax.set_xticklabels([])
    ax.set_yticklabels(y_labels if show_y else [])


def _colour_range(matrices):
    """Colour scale limits: 0..1 for weights, widened to fit any other values."""
    finite = [m[np.isfinite(m)] for m in matrices]
    finite = np.concatenate([f.ravel() for f in finite]) if finite else np.array([])
    if finite.size == 0:
        return 0.0, 1.0
    return min(0.0, float(finite.min())), max(1.0, float(finite.max()))


def _text_colour(cmap, norm, value):
    """Black on light cells, white on dark ones (by the cell colour's luminance)."""
    if not math.isfinite(value):
        return "black"
    red, green, blue, _ = cmap(norm(value))
    luminance = 0.2126 * red + 0.7152 * green + 0.0722 * blue
    return "white" if luminance < 0.5 else "black"


def _font_size(rows, cols):
    """A font size for cell annotations that shrinks as the matrix grows."""
    largest = max(rows, cols)
    return 10 if largest <= 6 else 8 if largest <= 10 else 6


def _check_fmt(fmt):
    """Raise a teaching error unless ``fmt`` formats one number."""
    try:
        fmt.format(0.5)
    except (AttributeError, IndexError, KeyError, ValueError):
        raise ValueError(
            f'fmt must be a format string for one number, such as "{{:.2f}}", '
            f"got {fmt!r}"
        ) from None


def _draw_matrix(ax, matrix, *, cmap, norm, annotate, fmt, shrink_font=0):
    """Draw one weight matrix as coloured cells; return the image for a colorbar."""
    image = ax.imshow(matrix, cmap=cmap, norm=norm)
    if annotate:
        size = _font_size(*matrix.shape) - shrink_font
        for row in range(matrix.shape[0]):
            for col in range(matrix.shape[1]):
                value = float(matrix[row, col])
                ax.text(
                    col,
                    row,
                    fmt.format(value),
                    ha="center",
                    va="center",
                    fontsize=size,
                    color=_text_colour(cmap, norm, value),
                )
    return image


def attention_heatmap(
    weights,
    query_tokens=None,
    key_tokens=None,
    *,
    title=None,
    annotate=True,
    fmt="{:.2f}",
    ax=None,
    cmap="Blues",
    xlabel="key",
    ylabel="query",
):
    """Draw an attention matrix as a heatmap: one row per query, one column per key.

    Parameters
    ----------
    weights : torch.Tensor or numpy.ndarray
        The matrix to draw, usually attention weights; scores work too.
    query_tokens : sequence of str, optional
        Labels of the rows. ``None`` numbers them 0, 1, ...
    key_tokens : sequence of str, optional
        Labels of the columns. ``None`` reuses ``query_tokens`` when the matrix is
        square (self-attention), and numbers the columns otherwise.
    title : str, optional
        Title above the heatmap.
    annotate : bool, default True
        Write each value in its cell, in black or white, whichever reads better.
    fmt : str, default "{:.2f}"
        Format string for the written values.
    ax : matplotlib.axes.Axes, optional
        Draw into this axes instead of a new figure.
    cmap : str or matplotlib.colors.Colormap, default "Blues"
        Colour map. The scale runs from 0 to 1, widened if values lie outside.
    xlabel, ylabel : str, default "key", "query"
        Axis labels.

    Returns
    -------
    matplotlib.figure.Figure
        A new figure, or ``ax.figure`` when ``ax`` is given.

    Shapes
    ------
    weights : (T_q, T_k). ``query_tokens`` has T_q entries, ``key_tokens`` T_k.

    Raises
    ------
    ValueError
        If ``weights`` is not 2-D or the token counts do not match its shape.
    TypeError
        If ``weights`` is not numeric, or tokens are given as one string.

    Examples
    --------
    >>> import torch
    >>> tokens = ("Hello", "shiny", "sun!")
    >>> weights = torch.tensor([[0.5, 0.3, 0.2], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]])
    >>> fig = attention_heatmap(weights, tokens, title="toy weights")
    >>> heatmap, colorbar = fig.axes
    >>> [label.get_text() for label in heatmap.get_xticklabels()]
    ['Hello', 'shiny', 'sun!']
    >>> heatmap.get_xlabel(), heatmap.get_ylabel()
    ('key', 'query')
    >>> [text.get_text() for text in heatmap.texts][:3]
    ['0.50', '0.30', '0.20']
    """
    matrix = _as_array(weights, "weights")
    if matrix.ndim != 2:
        if matrix.ndim == 1:
            fix = (
                "for one query's weights use weight_bars(weights, tokens), or draw "
                "them as a single row with weights[None]"
            )
        else:
            fix = (
                "pick one matrix, e.g. weights[0] for (B, T_q, T_k) or weights[0, h] "
                "for (B, H, T_q, T_k), or draw them all with heatmap_grid(weights)"
            )
        raise ValueError(
            f"attention_heatmap expects 2-D weights (T_q, T_k), got shape "
            f"{_shape(matrix)}; {fix}"
        )
    T_q, T_k = matrix.shape
    if key_tokens is None and query_tokens is not None and T_q == T_k:
        key_tokens = query_tokens  # self-attention: the same tokens on both axes
    y_labels = _labels(
        query_tokens, T_q, arg="query_tokens", axis="rows", shape=_shape(matrix)
    )
    x_labels = _labels(
        key_tokens, T_k, arg="key_tokens", axis="columns", shape=_shape(matrix)
    )
    _check_fmt(fmt)
    colour_map = matplotlib.colormaps.get_cmap(cmap)
    norm = Normalize(*_colour_range([matrix]))

    if ax is None:
        width = min(14.0, max(3.6, 1.8 + 0.75 * T_k))
        height = min(12.0, max(2.8, 1.1 + 0.6 * T_q))
        fig = _new_figure(width, height)
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    image = _draw_matrix(
        ax, matrix, cmap=colour_map, norm=norm, annotate=annotate, fmt=fmt
    )
    _set_ticks(ax, x_labels, y_labels)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title is not None:
        ax.set_title(title)
    fig.colorbar(image, ax=ax, shrink=0.9)
    return fig


def _grid_shape(count, ncols, *, default):
    """Columns and rows of a grid of ``count`` panels; ``ncols=None`` picks up to
    ``default`` columns."""
    if ncols is None:
        ncols = min(count, default)
    if not isinstance(ncols, int) or isinstance(ncols, bool) or ncols < 1:
        raise ValueError(f"ncols must be a positive int, got ncols={ncols!r}")
    ncols = min(ncols, count)
    return ncols, math.ceil(count / ncols)


def _as_matrices(weights):
    """Split ``weights`` into a list of 2-D arrays, one per panel."""
    if isinstance(weights, (list, tuple)) and all(
        isinstance(m, (torch.Tensor, np.ndarray)) for m in weights
    ):
        matrices = [_as_array(m, f"weights[{i}]") for i, m in enumerate(weights)]
    else:
        stack = _as_array(weights, "weights")
        if stack.ndim == 2:
            matrices = [stack]
        elif stack.ndim == 3:
            matrices = list(stack)  # (N, T_q, T_k) -> N matrices of (T_q, T_k)
        elif stack.ndim == 4:
            raise ValueError(
                f"heatmap_grid expects (N, T_q, T_k), got 4-D weights of shape "
                f"{_shape(stack)}, which looks like (B, H, T_q, T_k); pick one batch "
                f"element, e.g. weights[0], to draw its {stack.shape[1]} heads"
            )
        else:
            raise ValueError(
                f"heatmap_grid expects (N, T_q, T_k) or a list of 2-D matrices, got "
                f"shape {_shape(stack)}; for one query's weights use weight_bars"
            )
    if not matrices:
        raise ValueError("heatmap_grid needs at least one matrix, got none")
    for i, matrix in enumerate(matrices):
        if matrix.ndim != 2:
            raise ValueError(
                f"weights[{i}] has shape {_shape(matrix)}, but each panel needs a 2-D "
                "(T_q, T_k) matrix"
            )
    return matrices


def heatmap_grid(
    weights,
    titles=None,
    query_tokens=None,
    key_tokens=None,
    *,
    ncols=None,
    annotate=False,
    suptitle=None,
    cmap="Blues",
):
    """Draw several attention matrices side by side on one shared colour scale.

    Useful to compare heads, layers or masks: the same colour means the same weight
    in every panel, and one colorbar serves them all.

    Parameters
    ----------
    weights : torch.Tensor, numpy.ndarray or sequence of them
        A stack of matrices ``(N, T_q, T_k)``, or a list of 2-D matrices.
    titles : sequence of str, optional
        One title per panel; ``None`` titles them ``weights[0]``, ``weights[1]``, ...
    query_tokens, key_tokens : sequence of str, optional
        Row and column labels shared by all panels, as in :func:`attention_heatmap`.
    ncols : int, optional
        Panels per row; ``None`` puts up to 4 in a row.
    annotate : bool, default False
        Write each value in its cell.
    suptitle : str, optional
        Title above the whole grid.
    cmap : str or matplotlib.colors.Colormap, default "Blues"
        Colour map; the shared scale runs from 0 to 1, widened if values lie outside.

    Returns
    -------
    matplotlib.figure.Figure
        N heatmap axes followed by one colorbar axes.

    Shapes
    ------
    weights : (N, T_q, T_k), or N matrices of shape (T_q, T_k).

    Raises
    ------
    ValueError
        If a matrix is not 2-D, or the number of titles or tokens does not match.

    Examples
    --------
    >>> import torch
    >>> weights = torch.softmax(torch.arange(18.0).reshape(2, 3, 3) / 4, dim=-1)
    >>> fig = heatmap_grid(weights, titles=["head 0", "head 1"], suptitle="two heads")
    >>> len(fig.axes)  # two panels and one colorbar
    3
    >>> [ax.get_title() for ax in fig.axes[:2]]
    ['head 0', 'head 1']
    """
    matrices = _as_matrices(weights)
    count = len(matrices)
    if titles is None:
        titles = [f"weights[{i}]" for i in range(count)]
    elif isinstance(titles, str) or len(titles) != count:
        received = 1 if isinstance(titles, str) else len(titles)
        raise ValueError(
            f"got {received} titles for {count} matrices; pass one title per matrix, "
            f"e.g. titles=[f'head {{h}}' for h in range({count})]"
        )
    ncols, nrows = _grid_shape(count, ncols, default=4)
    if key_tokens is None and query_tokens is not None:
        if all(m.shape[0] == m.shape[1] for m in matrices):
            key_tokens = query_tokens  # self-attention: the same tokens on both axes
    labels = []
    for i, matrix in enumerate(matrices):
        shape = f"{_shape(matrix)} (weights[{i}])"
        y_labels = _labels(
            query_tokens, matrix.shape[0], arg="query_tokens", axis="rows", shape=shape
        )
        x_labels = _labels(
            key_tokens, matrix.shape[1], arg="key_tokens", axis="columns", shape=shape
        )
        labels.append((x_labels, y_labels))
    same_shape = all(m.shape == matrices[0].shape for m in matrices)
    colour_map = matplotlib.colormaps.get_cmap(cmap)
    norm = Normalize(*_colour_range(matrices))

    T_q = max(m.shape[0] for m in matrices)
    T_k = max(m.shape[1] for m in matrices)
    panel_width = max(2.0, 1.0 + 0.38 * T_k)
    panel_height = max(2.0, 1.0 + 0.38 * T_q)
    fig = _new_figure(
        min(18.0, ncols * panel_width + 1.0),
        min(16.0, nrows * panel_height + (0.4 if suptitle else 0.0)),
    )
    grid = fig.subplots(nrows, ncols, squeeze=False)
    panels = []
    for i, matrix in enumerate(matrices):
        ax = grid[i // ncols][i % ncols]
        image = _draw_matrix(
            ax,
            matrix,
            cmap=colour_map,
            norm=norm,
            annotate=annotate,
            fmt="{:.2f}",
            shrink_font=2,  # grid panels are smaller than a single heatmap
        )
        # With equal shapes, label only the outer panels: bottom of each column and
        # the first column; with mixed shapes every panel needs its own labels.
        bottom = i + ncols >= count
        left = i % ncols == 0
        x_labels, y_labels = labels[i]
        _set_ticks(
            ax,
            x_labels,
            y_labels,
            show_x=bottom or not same_shape,
            show_y=left or not same_shape,
        )
        if bottom:
            ax.set_xlabel("key")
        if left:
            ax.set_ylabel("query")
        ax.set_title(titles[i])
        panels.append(ax)
    for ax in grid.ravel()[count:]:
        ax.remove()  # empty slots of the last row
    fig.colorbar(image, ax=panels, shrink=0.85)
    if suptitle is not None:
        fig.suptitle(suptitle)
    return fig


def weight_bars(weights, tokens, *, ax=None, title=None):
    """Draw one query's attention weights as bars, one bar per key token.

    Parameters
    ----------
    weights : torch.Tensor or numpy.ndarray
        The weights of one query over the keys (a ``(1, T_k)`` row works too).
    tokens : sequence of str
        The key tokens, one per weight.
    ax : matplotlib.axes.Axes, optional
        Draw into this axes instead of a new figure.
    title : str, optional
        Title above the bars.

    Returns
    -------
    matplotlib.figure.Figure
        A new figure, or ``ax.figure`` when ``ax`` is given.

    Shapes
    ------
    weights : (T_k,) or (1, T_k); ``tokens`` has T_k entries.

    Raises
    ------
    ValueError
        If ``weights`` holds more than one query, or its length differs from the
        number of tokens.

    Examples
    --------
    >>> import torch
    >>> weights = torch.tensor([0.2, 0.5, 0.3])
    >>> fig = weight_bars(weights, ["Hello", "shiny", "sun!"], title='query "shiny"')
    >>> ax = fig.axes[0]
    >>> [text.get_text() for text in ax.texts]
    ['0.20', '0.50', '0.30']
    >>> float(ax.get_ylim()[0]), float(max(ax.get_yticks()))  # y axis from 0 to 1
    (0.0, 1.0)
    """
    values = _as_array(weights, "weights")
    if values.ndim == 2 and values.shape[0] == 1:
        values = values[0]  # (1, T_k) -> (T_k,)
    if values.ndim != 1:
        raise ValueError(
            f"weight_bars draws the weights of one query, shape (T_k,), got shape "
            f"{_shape(values)}; pick one query's row, e.g. weights[1], or draw the "
            "whole matrix with attention_heatmap(weights)"
        )
    labels = _labels(
        tokens, values.shape[0], arg="tokens", axis="weights", shape=_shape(values)
    )
    if ax is None:
        fig = _new_figure(min(12.0, max(3.6, 1.2 + 0.75 * len(labels))), 3.0)
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    _draw_bars(ax, values, labels)
    if title is not None:
        ax.set_title(title)
    return fig


def _draw_bars(ax, values, labels):
    """Bars with their values written on top, on a y axis from 0 to 1."""
    positions = np.arange(len(values))
    bars = ax.bar(positions, values, color=_BAR_COLOR)
    ax.bar_label(bars, labels=[f"{v:.2f}" for v in values], padding=2, fontsize=9)
    finite = values[np.isfinite(values)]
    low = min(0.0, float(finite.min())) if finite.size else 0.0
    high = max(1.0, float(finite.max())) if finite.size else 1.0
    # Headroom above 1 for the value written on a bar of height 1.
    ax.set_ylim(low, high + 0.15 * (high - low))
    ax.set_yticks([t for t in (0.0, 0.25, 0.5, 0.75, 1.0) if low <= t <= high])
    ax.set_xticks(positions)
    if _rotate(labels):
        ax.set_xticklabels(labels, rotation=45, ha="right", rotation_mode="anchor")
    else:
        ax.set_xticklabels(labels)
    ax.set_xlabel("key")
    ax.set_ylabel("attention weight")
    ax.spines[["top", "right"]].set_visible(False)


def temperature_panel(tokens, embeddings, query_index, temperatures=(0.25, 1.0, 4.0)):
    """Show how temperature reshapes one query's weights, one panel per temperature.

    The weights are ``softmax(scores / temperature)`` with plain dot-product scores,
    as computed by :func:`attn_course.explorer.explore`. A low temperature makes them
    nearly one-hot (the best-matching key takes all); a high temperature makes them
    nearly uniform. This is the static version of
    :func:`attn_course.explorer.attention_explorer` for the website.

    Parameters
    ----------
    tokens : sequence of str or None
        The tokens of the sentence; ``None`` numbers them 0, 1, ...
    embeddings : torch.Tensor or numpy.ndarray
        One embedding row per token.
    query_index : int
        Position of the query token.
    temperatures : sequence of float, default (0.25, 1.0, 4.0)
        One panel per temperature, each positive.

    Returns
    -------
    matplotlib.figure.Figure
        One bar-chart axes per temperature, titled e.g. ``"temperature 0.25"``.

    Shapes
    ------
    embeddings : (T, D), with T equal to the number of tokens.

    Raises
    ------
    ValueError
        If ``query_index`` is out of range, a temperature is not positive, or the
        number of tokens differs from the number of embedding rows.

    Examples
    --------
    >>> from attn_course.data import hello_shiny_sun
    >>> tokens, embeddings = hello_shiny_sun()
    >>> fig = temperature_panel(tokens, embeddings, query_index=1)
    >>> [ax.get_title() for ax in fig.axes]
    ['temperature 0.25', 'temperature 1', 'temperature 4']
    """
    # Imported here because explorer imports this module for weight_bars.
    from .explorer import explore

    if isinstance(temperatures, (int, float)):
        temperatures = (temperatures,)
    if not isinstance(temperatures, Sequence) or len(temperatures) == 0:
        raise ValueError(
            f"temperatures must be a non-empty sequence of positive numbers, got "
            f"{temperatures!r}; e.g. temperatures=(0.25, 1.0, 4.0)"
        )
    states = [explore(tokens, embeddings, query_index, t) for t in temperatures]
    T = states[0].weights.shape[0]
    labels = _labels(tokens, T, arg="tokens", axis="embedding rows", shape=f"({T},)")
    fig = _new_figure(min(18.0, len(states) * max(3.2, 0.7 * len(labels) + 1.0)), 3.2)
    axes = fig.subplots(1, len(states), sharey=True, squeeze=False)[0]
    for ax, state, temperature in zip(axes, states, temperatures, strict=True):
        weight_bars(state.weights, labels, ax=ax, title=f"temperature {temperature:g}")
    for ax in axes[1:]:
        ax.set_ylabel("")
    query = labels[query_index]
    fig.suptitle(f'weights of query "{query}" = softmax(scores / temperature)')
    return fig


# --- Chapter 2: curves over a shared x axis (e.g. over d_k) ---


def _curve_values(values, count, *, where):
    """Return a curve's y values as a float64 array of length ``count``."""
    array = _as_array(values, where)
    if array.ndim == 0:
        return array  # a single number: drawn as a horizontal reference line
    if array.ndim != 1 or array.shape[0] != count:
        raise ValueError(
            f"{where} has shape {_shape(array)}, but x has {count} values; give "
            f"one y value per x value (shape ({count},)), or a single number for a "
            "horizontal reference line"
        )
    return array


def line_panels(
    x,
    panels,
    *,
    xlabel="x",
    ylabels=None,
    log_x=False,
    log_y=False,
    ncols=None,
    suptitle=None,
):
    """Draw panels of curves that share one x axis, e.g. measurements over ``d_k``.

    Each panel is a title and a mapping from curve labels to y values, one per x
    value. A curve given as a single number is drawn as a grey horizontal line, for
    a reference level such as a theoretical value; the reference lines of a panel
    are dashed, dotted and dash-dotted in turn. Every panel gets a legend.

    Parameters
    ----------
    x : sequence of numbers, torch.Tensor or numpy.ndarray
        The shared x values, shape ``(N,)``.
    panels : mapping of str to mapping of str to values
        ``{panel title: {curve label: y values}}``; each y is ``(N,)`` or a number.
    xlabel : str, default "x"
        Label of every x axis.
    ylabels : sequence of str, optional
        One y-axis label per panel.
    log_x : bool or int, default False
        Logarithmic x axis: ``True`` for base 10, or the base, e.g. ``2`` for
        x values 2, 4, 8, ...
    log_y : bool or sequence of bool, default False
        Logarithmic y axis for every panel, or one flag per panel.
    ncols : int, optional
        Panels per row; ``None`` puts up to 3 in a row.
    suptitle : str, optional
        Title above all panels.

    Returns
    -------
    matplotlib.figure.Figure
        One axes per panel, in the order of ``panels``.

    Shapes
    ------
    x : (N,); each curve : (N,) or a single number.

    Raises
    ------
    TypeError
        If ``panels`` or one of its values is not a mapping.
    ValueError
        If there are no panels, a panel has no curves, a curve's length differs
        from ``x``, or the number of ``ylabels`` or ``log_y`` flags is wrong.

    Examples
    --------
    >>> d_k = [2, 4, 8, 16]
    >>> fig = line_panels(
    ...     d_k,
    ...     {"variance of q . k": {"measured": [2.1, 3.9, 8.2, 15.8], "d_k": d_k}},
    ...     xlabel="d_k",
    ...     log_x=2,
    ... )
    >>> ax = fig.axes[0]
    >>> ax.get_title(), ax.get_xscale()
    ('variance of q . k', 'log')
    >>> [line.get_label() for line in ax.get_lines()]
    ['measured', 'd_k']
    """
    if not hasattr(panels, "items"):
        raise TypeError(
            f"panels must be a dict {{title: {{label: y values}}}}, got "
            f"{type(panels).__name__}; e.g. {{'loss': {{'train': losses}}}}"
        )
    if len(panels) == 0:
        raise ValueError("line_panels needs at least one panel, got none")
    xs = _as_array(x, "x")
    if xs.ndim != 1 or xs.shape[0] == 0:
        raise ValueError(f"x must be a non-empty 1-D sequence, got shape {_shape(xs)}")
    count = len(panels)
    if ylabels is not None and (isinstance(ylabels, str) or len(ylabels) != count):
        received = 1 if isinstance(ylabels, str) else len(ylabels)
        raise ValueError(
            f"got {received} ylabels for {count} panels; pass one label per panel"
        )
    flags = [log_y] * count if isinstance(log_y, bool) else list(log_y)
    if len(flags) != count:
        raise ValueError(
            f"got {len(flags)} log_y flags for {count} panels; pass one bool per "
            "panel, or a single bool for all"
        )
    ncols, nrows = _grid_shape(count, ncols, default=3)
    fig = _new_figure(min(18.0, 4.4 * ncols), 3.3 * nrows + (0.4 if suptitle else 0))
    grid = fig.subplots(nrows, ncols, squeeze=False)
    markers = "os^Dv<>"
    dashes = ("--", ":", "-.")  # reference lines, told apart by their dashes
    for i, (title, curves) in enumerate(panels.items()):
        if not hasattr(curves, "items"):
            raise TypeError(
                f"panel {title!r} must be a dict {{label: y values}}, got "
                f"{type(curves).__name__}; e.g. {{'measured': values}}"
            )
        if len(curves) == 0:
            raise ValueError(f"panel {title!r} has no curves; give it at least one")
        ax = grid[i // ncols][i % ncols]
        references = 0
        for j, (label, values) in enumerate(curves.items()):
            where = f"curve {label!r} of panel {title!r}"
            ys = _curve_values(values, xs.shape[0], where=where)
            if ys.ndim == 0:
                style = dashes[references % len(dashes)]
                ax.axhline(float(ys), color="0.35", linestyle=style, label=str(label))
                references += 1
            else:
                marker = markers[j % len(markers)] if xs.shape[0] <= 20 else None
                ax.plot(xs, ys, marker=marker, markersize=4, label=str(label))
        if log_x:
            ax.set_xscale("log", base=10 if log_x is True else log_x)
        if flags[i]:
            ax.set_yscale("log")
        ax.set_title(str(title))
        ax.set_xlabel(xlabel)
        if ylabels is not None:
            ax.set_ylabel(ylabels[i])
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        ax.spines[["top", "right"]].set_visible(False)
    for ax in grid.ravel()[count:]:
        ax.remove()  # empty slots of the last row
    if suptitle is not None:
        fig.suptitle(suptitle)
    return fig


# --- Chapter 6: encoder, decoder and cross-attention side by side ---


def _per_panel(value, count, name, *, allow_str):
    """One value per panel: a str (or None) is shared, a sequence is checked."""
    if value is None or (allow_str and isinstance(value, str)):
        return [value] * count
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise TypeError(
            f"{name} must be a sequence with one entry per panel, got "
            f"{type(value).__name__} {value!r}"
        )
    if len(value) != count:
        raise ValueError(
            f"{name} has {len(value)} entries for {count} panels; give one per panel"
        )
    return list(value)


def heatmap_panels(
    weights,
    query_tokens=None,
    key_tokens=None,
    *,
    titles=None,
    xlabels="key",
    ylabels="query",
    annotate=False,
    fmt="{:.2f}",
    suptitle=None,
    cmap="Blues",
):
    """Draw attention matrices of *different* shapes and tokens in one row.

    :func:`heatmap_grid` shares one set of tokens between all panels; this helper
    gives each panel its own, so that encoder self-attention (source x source),
    decoder self-attention (target x target) and cross-attention (target x source)
    can stand side by side. All panels share one colour scale and one colorbar, and
    each panel is as wide as its number of keys.

    Parameters
    ----------
    weights : sequence of torch.Tensor or numpy.ndarray
        One 2-D matrix ``(T_q, T_k)`` per panel; shapes may differ.
    query_tokens, key_tokens : sequence of (sequence of str or None), optional
        Row and column labels, one sequence of tokens per panel (``None`` numbers
        them).
    titles : sequence of str, optional
        One title per panel.
    xlabels, ylabels : str or sequence of str, default "key", "query"
        Axis labels, shared or one per panel.
    annotate : bool, default False
        Write each value in its cell.
    fmt : str, default "{:.2f}"
        Format of the written values.
    suptitle : str, optional
        Title above all panels.
    cmap : str or matplotlib.colors.Colormap, default "Blues"
        Colour map; the shared scale runs from 0 to 1, widened if values lie outside.

    Returns
    -------
    matplotlib.figure.Figure
        One axes per panel, then one colorbar axes.

    Shapes
    ------
    weights[i] : (T_q_i, T_k_i); query_tokens[i] has T_q_i entries, key_tokens[i]
    T_k_i.

    Raises
    ------
    ValueError
        If there are no matrices, a matrix is not 2-D, or the number of titles,
        labels or tokens does not match.
    TypeError
        If the per-panel arguments are not sequences.

    Examples
    --------
    >>> import torch
    >>> source, target = ["the", "dog", "sees"], ["der", "Hund"]
    >>> fig = heatmap_panels(
    ...     [torch.full((3, 3), 1 / 3), torch.full((2, 3), 1 / 3)],
    ...     query_tokens=[source, target],
    ...     key_tokens=[source, source],
    ...     titles=["encoder", "cross"],
    ... )
    >>> len(fig.axes)  # two panels and one colorbar
    3
    >>> [label.get_text() for label in fig.axes[1].get_yticklabels()]
    ['der', 'Hund']
    """
    if isinstance(weights, (torch.Tensor, np.ndarray)) or not isinstance(
        weights, Sequence
    ):
        raise TypeError(
            "weights must be a list of 2-D matrices, one per panel, got "
            f"{type(weights).__name__}; e.g. [encoder_weights, cross_weights] (for "
            "a stack of equal shapes, heatmap_grid also works)"
        )
    matrices = [_as_array(m, f"weights[{i}]") for i, m in enumerate(weights)]
    count = len(matrices)
    if count == 0:
        raise ValueError("heatmap_panels needs at least one matrix, got none")
    for i, matrix in enumerate(matrices):
        if matrix.ndim != 2:
            raise ValueError(
                f"weights[{i}] has shape {_shape(matrix)}, but each panel needs a 2-D "
                "(T_q, T_k) matrix; from (B, H, T_q, T_k) weights pick one sentence "
                "and one head, weights[0, h], or average the heads: "
                "weights[0].mean(dim=0)"
            )
    if titles is None:
        titles = [f"weights[{i}]" for i in range(count)]
    titles = _per_panel(titles, count, "titles", allow_str=False)
    rows = _per_panel(query_tokens, count, "query_tokens", allow_str=False)
    cols = _per_panel(key_tokens, count, "key_tokens", allow_str=False)
    xlabels = _per_panel(xlabels, count, "xlabels", allow_str=True)
    ylabels = _per_panel(ylabels, count, "ylabels", allow_str=True)
    _check_fmt(fmt)
    labels = []
    for i, matrix in enumerate(matrices):
        shape = f"{_shape(matrix)} (weights[{i}])"
        y = _labels(
            rows[i], matrix.shape[0], arg="query_tokens", axis="rows", shape=shape
        )
        x = _labels(
            cols[i], matrix.shape[1], arg="key_tokens", axis="columns", shape=shape
        )
        labels.append((x, y))
    colour_map = matplotlib.colormaps.get_cmap(cmap)
    norm = Normalize(*_colour_range(matrices))

    widths = [m.shape[1] for m in matrices]
    T_q = max(m.shape[0] for m in matrices)
    fig = _new_figure(
        min(18.0, 0.45 * sum(widths) + 1.3 * count + 1.0),
        min(12.0, 0.45 * T_q + 1.8 + (0.4 if suptitle else 0.0)),
    )
    grid = fig.subplots(1, count, squeeze=False, width_ratios=widths)[0]
    for i, (ax, matrix) in enumerate(zip(grid, matrices, strict=True)):
        image = _draw_matrix(
            ax, matrix, cmap=colour_map, norm=norm, annotate=annotate, fmt=fmt
        )
        x_labels, y_labels = labels[i]
        _set_ticks(ax, x_labels, y_labels)
        if xlabels[i] is not None:
            ax.set_xlabel(xlabels[i])
        if ylabels[i] is not None:
            ax.set_ylabel(ylabels[i])
        ax.set_title(str(titles[i]))
    fig.colorbar(image, ax=list(grid), shrink=0.85)
    if suptitle is not None:
        fig.suptitle(suptitle)
    return fig
