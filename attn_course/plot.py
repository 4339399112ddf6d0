"""Pictures of attention: heatmaps of weight matrices and bar charts of one query.

Every helper returns a :class:`matplotlib.figure.Figure` without touching pyplot
or ``rcParams``; end a cell with the figure to show it once. Tensors (on any device,
requiring grad or not) and NumPy arrays are accepted. A weight matrix has one row
per query and one column per key. Introduced in Chapter 1.
"""

from __future__ import annotations

import io
import math
import struct
import textwrap
from collections.abc import Iterator, Sequence

import matplotlib
import numpy as np
import torch
from matplotlib.colors import Normalize, to_rgb
from matplotlib.figure import Figure

from ._validate import kind_of, require_flag, require_int, require_tokens
from .walkthrough import query_attention

__all__ = [
    "attention_heatmap",
    "heatmap_grid",
    "heatmap_panels",
    "line_panels",
    "seed_spread",
    "temperature_panel",
    "weight_bars",
]

_BAR_COLOR = "#3b75af"

# How figures are shown. One inch of a figure is CSS_PX_PER_INCH pixels on screen;
# the PNG holds PIXEL_RATIO times as many, so that it stays sharp on high-resolution
# screens. The website's text column is about 750 px wide on a 1280 px screen, so no
# figure is made wider than MAX_WIDTH_INCHES: each is shown at its intended size.
CSS_PX_PER_INCH = 100
PIXEL_RATIO = 2
MAX_WIDTH_INCHES = 7.2
# WCAG 2 asks for a contrast ratio of at least 4.5:1 between text and its background.
MIN_TEXT_CONTRAST = 4.5


class _NotebookFigure(Figure):
    """A Figure that shows itself as a PNG in Jupyter, without pyplot's display hook
    (IPython prefers the hook where it exists, so the figure still appears once).
    """

    def _repr_png_(self):
        """The figure as a PNG at twice its display resolution, with its display
        width in the output's metadata (JupyterLab and the website show it at that
        width, sharp on high-resolution screens)."""
        buffer = io.BytesIO()
        self.savefig(
            buffer,
            format="png",
            bbox_inches="tight",
            dpi=CSS_PX_PER_INCH * PIXEL_RATIO,
            facecolor="white",
        )
        png = buffer.getvalue()
        return png, {"width": _png_width(png) // PIXEL_RATIO}

    def __repr__(self):
        return super().__repr__().replace(type(self).__name__, "Figure", 1)


def _png_width(png):
    """The width in pixels of a PNG image, read from its header."""
    return struct.unpack(">I", png[16:20])[0]


def _new_figure(width, height):
    """An empty constrained-layout figure, at most :data:`MAX_WIDTH_INCHES` wide."""
    scale = min(1.0, MAX_WIDTH_INCHES / width)
    fig = _NotebookFigure(figsize=(width * scale, height * scale), layout="constrained")
    fig.cell_text_scale = scale  # cells shrink with the figure: so do their numbers
    return fig


def _axes(ax, width, height):
    """``ax`` itself, or the one axes of a new figure of the given size."""
    return _new_figure(width, height).add_subplot() if ax is None else ax


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
            f"{kind_of(values)}"
        )
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"{name} must be a torch.Tensor or a NumPy array of numbers, got "
            f"{kind_of(values)} that does not convert to numbers; "
            "build it with torch.tensor(...) first"
        ) from None
    return array


def _labels(tokens, count, *, arg, axis, shape):
    """``count`` tick labels: the tokens, checked, or 0, 1, ... when tokens is None."""
    if tokens is None:
        return [str(i) for i in range(count)]
    if isinstance(tokens, Iterator):
        tokens = tuple(tokens)  # read once, to check and to name in a message
    try:
        return list(require_tokens(tokens, count))
    except ValueError:
        labels = tuple(str(token) for token in tokens)
        raise ValueError(
            f"{arg} has {len(labels)} tokens {labels}, but the weights of shape "
            f"{shape} have {count} {axis}; pass exactly one token per {axis[:-1]}"
        ) from None


def _numbered(labels):
    """Whether ``labels`` are the positions 0, 1, ... that stand in for tokens."""
    return list(labels) == [str(i) for i in range(len(labels))]


def _thinned(labels, room, needed):
    """Position labels thinned to every 2nd, 5th, 10th, ... where ``room`` (points
    per label) is less than ``needed``, so that they never run into each other;
    tokens are kept, every one."""
    if room >= needed or not _numbered(labels):
        return list(labels)
    step = next(n for n in (2, 5, 10, 20, 50, 100, 200) if n * room >= needed)
    return [label if i % step == 0 else "" for i, label in enumerate(labels)]


# The smallest font size, in points, that tick labels are shrunk to so as to fit.
_SMALLEST_LABEL = 6.0


def _fitted_size(size, room, per_point, pad=0.0):
    """The font size at which labels needing ``per_point`` points per point of font
    size, plus ``pad``, fit in ``room`` points; ``size`` at most, 6 at least.

    >>> _fitted_size(10.0, room=20, per_point=1.1), _fitted_size(10.0, 8.8, 1.1)
    (10.0, 8.0)
    >>> _fitted_size(10.0, room=2, per_point=1.1)
    6.0
    """
    return min(size, max(_SMALLEST_LABEL, (room - pad) / per_point))


def _cell_points(ax, columns, rows):
    """The side of one cell of a heatmap of ``rows`` x ``columns`` in ``ax``, in
    points: square cells fill the axes' width or its height, whichever is less."""
    box = ax.get_position()
    width = box.width * ax.figure.get_figwidth() * 72
    height = box.height * ax.figure.get_figheight() * 72
    return min(width / max(1, columns), height / max(1, rows))


def _rotate(labels):
    """Whether x tick labels are long enough to need rotating to stay readable:
    long tokens, or many tokens of more than one character (single characters
    and thinned positions stand upright)."""
    longest = max((len(label) for label in labels), default=0)
    return longest > 5 or (len(labels) > 10 and longest > 1 and not _numbered(labels))


def _set_ticks(ax, x_labels, y_labels, *, show_x=True, show_y=True):
    """Put token labels on both axes; long x labels are rotated by 45 degrees,
    positions too many for their room are labelled at every few (:func:`_thinned`),
    and tokens too many for their room are set smaller (:func:`_fitted_size`).
    """
    ax.set_xticks(range(len(x_labels)))
    ax.set_yticks(range(len(y_labels)))
    ticks = ax.get_xticklabels()
    size = ticks[0].get_fontsize() if ticks else 10.0  # points
    room = _cell_points(ax, len(x_labels), len(y_labels))
    if show_x:
        if _rotate(x_labels):
            ax.set_xticklabels(
                x_labels, rotation=45, ha="right", rotation_mode="anchor"
            )
        else:
            widest = max((len(label) for label in x_labels), default=1)
            ax.set_xticklabels(_thinned(x_labels, room, 0.65 * size * widest + 3))
            if not _numbered(x_labels):  # tokens are all kept: make them fit
                fitted = _fitted_size(size, room, 0.65 * widest, pad=3)
                ax.tick_params(axis="x", labelsize=fitted)
    else:
        ax.set_xticklabels([])
    ax.set_yticklabels(_thinned(y_labels, room, 1.1 * size) if show_y else [])
    if show_y and not _numbered(y_labels):
        ax.tick_params(axis="y", labelsize=_fitted_size(size, room, 1.25))


def _colour_range(matrices):
    """Colour scale limits: 0 up to the largest value, so that weights that differ
    little still differ in colour; symmetric about 0 for signed values, so that a
    diverging map shows 0 in its middle colour.
    """
    finite = [m[np.isfinite(m)] for m in matrices]
    finite = np.concatenate([f.ravel() for f in finite]) if finite else np.array([])
    if finite.size == 0:
        return 0.0, 1.0
    low, high = float(finite.min()), float(finite.max())
    if low < 0:
        reach = max(-low, high)
        return -reach, reach
    return 0.0, high if high > 0 else 1.0


def relative_luminance(colour):
    """WCAG 2's relative luminance of a matplotlib colour (0 black .. 1 white)."""
    channels = to_rgb(colour)
    linear = [
        c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels
    ]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_ratio(foreground, background):
    """WCAG 2's contrast ratio of two colours, from 1 (none) to 21 (black on white)."""
    lighter, darker = sorted(
        (relative_luminance(foreground), relative_luminance(background)), reverse=True
    )
    return (lighter + 0.05) / (darker + 0.05)


def _text_colour(cmap, norm, value):
    """Black or white, whichever contrasts more with the cell's colour.

    One of the two always reaches 4.58:1, above WCAG's 4.5:1 for text.
    """
    if not math.isfinite(value):
        return "black"
    cell = cmap(norm(value))
    return max(("black", "white"), key=lambda text: contrast_ratio(text, cell))


def _font_size(rows, cols):
    """A font size for cell annotations that shrinks as the matrix grows."""
    largest = max(rows, cols)
    return 10 if largest <= 6 else 8 if largest <= 10 else 6


def _check_fmt(fmt):
    """Raise a teaching error unless ``fmt`` formats one number."""
    if not isinstance(fmt, str):
        raise TypeError(
            f'fmt must be a str, a format string for one number such as "{{:.2f}}", '
            f"got {kind_of(fmt)} {fmt!r}"
        )
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
        scale = getattr(ax.figure, "cell_text_scale", 1.0)
        size = max(5.0, (_font_size(*matrix.shape) - shrink_font) * scale)
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

    ``key_tokens=None`` reuses ``query_tokens`` for a square matrix; labels left out
    are numbers. ``annotate`` writes each value (``fmt``) in black or white, whichever
    reads better. The colour scale runs from 0 to the largest value.
    Pass ``ax`` to draw into an existing axes. Introduced in Chapter 1.

    Shapes
    ------
    weights : (T_q, T_k)
    query_tokens, key_tokens : (T_q,), (T_k,)

    Examples
    --------
    >>> tokens = ("Hello", "shiny", "sun!")
    >>> weights = torch.tensor([[0.5, 0.3, 0.2], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]])
    >>> fig = attention_heatmap(weights, tokens, title="toy weights")
    >>> heatmap, colorbar = fig.axes
    >>> [label.get_text() for label in heatmap.get_xticklabels()]
    ['Hello', 'shiny', 'sun!']
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
    ((x_labels, y_labels),) = _shared_labels(
        [matrix], query_tokens, key_tokens, numbered=False
    )
    _check_fmt(fmt)
    colour_map = matplotlib.colormaps.get_cmap(cmap)
    norm = Normalize(*_colour_range([matrix]))

    width = min(14.0, max(3.6, 1.8 + 0.75 * T_k))
    ax = _axes(ax, width, min(12.0, max(2.8, 1.1 + 0.6 * T_q)))
    image = _draw_matrix(
        ax, matrix, cmap=colour_map, norm=norm, annotate=annotate, fmt=fmt
    )
    _set_ticks(ax, x_labels, y_labels)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title is not None:
        ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, shrink=0.9)
    return ax.figure


def _grid_shape(count, ncols, *, default):
    """Columns and rows of a grid of ``count`` panels; ``ncols=None`` picks up to
    ``default`` columns."""
    if ncols is None:
        ncols = min(count, default)
    ncols = require_int(
        ncols,
        "ncols",
        hint="ncols must be a positive int, the number of panels per row, or None "
        f"for up to {default} per row",
    )
    ncols = min(ncols, count)
    return ncols, math.ceil(count / ncols)


def _panel_axes(fig, count, nrows, ncols, *, suptitle=None, **grid):
    """The first ``count`` axes of an ``nrows`` x ``ncols`` grid, row by row; the rest
    removed.
    """
    axes = fig.subplots(nrows, ncols, squeeze=False, **grid).ravel()
    for ax in axes[count:]:
        ax.remove()
    if suptitle is not None:
        fig.suptitle(suptitle)
    return list(axes[:count])


def _per_panel(
    value, count, name, *, shared=(), label=None, panels="panels", example=""
):
    """One value per panel: ``None`` or a value of a ``shared`` type serves every panel,
    otherwise a sequence with one entry per panel (``label``, ``panels`` and
    ``example`` word the error).
    """
    if value is None or isinstance(value, shared):
        return [value] * count
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise TypeError(
            f"{name} must be a sequence with one entry per panel, got "
            f"{kind_of(value)} {value!r}"
        )
    if len(value) != count:
        entries = "entry" if len(value) == 1 else "entries"
        also = f", or a single {shared[0].__name__} for all" if shared else ""
        raise ValueError(
            f"got {len(value)} {label or name} for {count} {panels} ({name} has "
            f"{len(value)} {entries}); pass one per panel{also}{example}"
        )
    return list(value)


def _check_matrices(matrices, caller):
    """Raise a teaching error unless ``matrices`` is a non-empty list of 2-D arrays."""
    if not matrices:
        raise ValueError(f"{caller} needs at least one matrix, got none")
    for i, matrix in enumerate(matrices):
        if matrix.ndim != 2:
            raise ValueError(
                f"weights[{i}] has shape {_shape(matrix)}, but each panel needs a 2-D "
                "(T_q, T_k) matrix; from (B, H, T_q, T_k) weights pick one sentence "
                "and one head, weights[0, h], or average the heads: "
                "weights[0].mean(dim=0)"
            )
    return matrices


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
    return _check_matrices(matrices, "heatmap_grid")


def _panel_labels(matrices, query_tokens, key_tokens, *, numbered=True):
    """Tick labels ``(x, y)`` of every panel, from one token sequence per panel.

    ``numbered`` names the panel, ``weights[i]``, in a message about a wrong count.
    """
    labels = []
    for i, (matrix, rows, cols) in enumerate(
        zip(matrices, query_tokens, key_tokens, strict=True)
    ):
        shape = _shape(matrix) + f" (weights[{i}])" * numbered
        y = _labels(rows, matrix.shape[0], arg="query_tokens", axis="rows", shape=shape)
        x = _labels(
            cols, matrix.shape[1], arg="key_tokens", axis="columns", shape=shape
        )
        labels.append((x, y))
    return labels


def _shared_labels(matrices, query_tokens, key_tokens, *, numbered=True):
    """Tick labels shared by all panels; square matrices reuse the query tokens."""
    if key_tokens is None and all(m.shape[0] == m.shape[1] for m in matrices):
        key_tokens = query_tokens  # self-attention: the same tokens on both axes
    count = len(matrices)
    return _panel_labels(
        matrices, [query_tokens] * count, [key_tokens] * count, numbered=numbered
    )


def _draw_panels(
    axes,
    matrices,
    labels,
    names,
    cmap,
    *,
    annotate,
    fmt,
    outer_ticks=0,
    shrink_font=0,
    colorbar=True,
    stacked=False,
):
    """Draw one heatmap per matrix on one shared colour scale, with one colorbar
    (under the panels when they are ``stacked`` one under another).

    ``names`` holds titles, x labels and y labels per panel. With ``outer_ticks`` (the
    number of columns of a grid of equal shapes) only the outer panels get tick labels.
    """
    titles, xlabels, ylabels = names
    style = {
        "cmap": matplotlib.colormaps.get_cmap(cmap),
        "norm": Normalize(*_colour_range(matrices)),
        "annotate": annotate,
        "fmt": fmt,
        "shrink_font": shrink_font,
    }
    if not all(m.shape == matrices[0].shape for m in matrices):
        outer_ticks = 0
    for i, (ax, matrix) in enumerate(zip(axes, matrices, strict=True)):
        image = _draw_matrix(ax, matrix, **style)
        x_labels, y_labels = labels[i]
        inner_row = outer_ticks and i + outer_ticks < len(matrices)  # not the bottom
        inner_column = outer_ticks and i % outer_ticks != 0  # not the first column
        _set_ticks(
            ax, x_labels, y_labels, show_x=not inner_row, show_y=not inner_column
        )
        if xlabels[i] is not None:
            ax.set_xlabel(xlabels[i])
        if ylabels[i] is not None:
            ax.set_ylabel(ylabels[i])
        title = f"weights[{i}]" if titles[i] is None else str(titles[i])
        ax.set_title(_wrap_title(title, ax))
    if colorbar and stacked:
        axes[-1].figure.colorbar(
            image, ax=axes, orientation="horizontal", shrink=0.6, fraction=0.04
        )
    elif colorbar:
        axes[0].figure.colorbar(image, ax=axes, shrink=0.85)


def _wrap_title(title, ax):
    """``title`` broken into lines no wider than its panel, so that the titles of
    neighbouring panels never run into each other."""
    width = ax.get_position().width * ax.figure.get_figwidth()  # inches
    points = ax.title.get_fontsize()
    characters = max(12, int(width * 72 / (0.55 * points)))
    return "\n".join(textwrap.wrap(title, characters)) or title


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
    colorbar=True,
):
    """Draw several attention matrices side by side on one shared colour scale.

    To compare heads, layers or masks: the same colour means the same weight in every
    panel. ``ncols=None`` fits as many panels in a row as read well, at most 3;
    ``colorbar=False`` suits masks. Introduced in Chapter 1.

    Shapes
    ------
    weights : (N, T_q, T_k)

    Examples
    --------
    >>> weights = torch.softmax(torch.arange(18.0).reshape(2, 3, 3) / 4, dim=-1)
    >>> fig = heatmap_grid(weights, titles=["head 0", "head 1"], suptitle="two heads")
    >>> len(fig.axes)  # two panels and one colorbar
    3
    """
    matrices = _as_matrices(weights)
    count = len(matrices)
    example = f", e.g. titles=[f'head {{h}}' for h in range({count})]"
    titles = _per_panel(titles, count, "titles", panels="matrices", example=example)
    labels = _shared_labels(matrices, query_tokens, key_tokens)
    T_q = max(m.shape[0] for m in matrices)
    T_k = max(m.shape[1] for m in matrices)
    # Cells wide enough for their numbers. Up to 3 panels stand in one row, more in
    # rows of as many as fit; cells (and their numbers) shrink to fit the column.
    # Inches beside the cells: tick labels on the left, a gap between panels, the
    # colorbar on the right; above and below them: titles, rotated labels, "key".
    cell = 0.34 if annotate else 0.28
    # (A PNG adds 0.1 inch of white on each side, hence the 0.2 held back.)
    left, between, right, above_below = 1.0, 0.3, 0.9, 1.7
    column = MAX_WIDTH_INCHES - 0.2 - left - right
    fits = int(column // (cell * T_k + between))
    ncols, nrows = _grid_shape(count, ncols, default=3 if count <= 3 else max(1, fits))
    room = column / ncols - between
    size = min(cell, room / T_k)
    fig = _NotebookFigure(
        figsize=(
            left + ncols * (size * T_k + between) + right,
            nrows * (size * T_q + above_below) + (0.4 if suptitle else 0.0),
        ),
        layout="constrained",
    )
    fig.cell_text_scale = size / cell
    names = (
        titles,
        ["key" if i + ncols >= count else None for i in range(count)],
        ["query" if i % ncols == 0 else None for i in range(count)],
    )
    _draw_panels(
        _panel_axes(fig, count, nrows, ncols, suptitle=suptitle),
        matrices,
        labels,
        names,
        cmap,
        annotate=annotate,
        fmt="{:.2f}",
        outer_ticks=ncols,
        shrink_font=2,  # grid panels are smaller than a single heatmap
        colorbar=require_flag(colorbar, "colorbar"),
    )
    return fig


def weight_bars(weights, tokens, *, ax=None, title=None):
    """Draw one query's attention weights as bars, one bar per key token.
    Introduced in Chapter 1.

    Shapes
    ------
    weights : (T_k,)
    tokens : (T_k,)

    Examples
    --------
    >>> weights = torch.tensor([0.2, 0.5, 0.3])
    >>> fig = weight_bars(weights, ["Hello", "shiny", "sun!"], title='query "shiny"')
    >>> [text.get_text() for text in fig.axes[0].texts]
    ['0.20', '0.50', '0.30']
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
    ax = _axes(ax, min(12.0, max(3.6, 1.2 + 0.75 * len(labels))), 3.0)
    _draw_bars(ax, values, labels)
    if title is not None:
        ax.set_title(title)
    return ax.figure


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

    The weights are those of :func:`attn_course.walkthrough.query_attention`: nearly
    one-hot at a low temperature, nearly uniform at a high one. The static version of
    :func:`attn_course.explorer.attention_explorer`. Introduced in Chapter 1.

    Shapes
    ------
    tokens : (T,)
    embeddings : (T, D)

    Examples
    --------
    >>> from attn_course.data import hello_shiny_sun
    >>> tokens, embeddings = hello_shiny_sun()
    >>> fig = temperature_panel(tokens, embeddings, query_index=1)
    >>> [ax.get_title() for ax in fig.axes]
    ['temperature 0.25', 'temperature 1', 'temperature 4']
    """
    if isinstance(temperatures, (int, float)):
        temperatures = (temperatures,)
    example = "e.g. temperatures=(0.25, 1.0, 4.0)"
    if isinstance(temperatures, str) or not isinstance(temperatures, Sequence):
        raise TypeError(
            f"temperatures must be a sequence of positive numbers, got "
            f"{kind_of(temperatures)} {temperatures!r}; {example}"
        )
    if len(temperatures) == 0:
        raise ValueError(
            f"temperatures must be a non-empty sequence of positive numbers, got "
            f"{temperatures!r}; {example}"
        )
    states = [query_attention(tokens, embeddings, query_index, t) for t in temperatures]
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

    ``panels`` is ``{panel title: {curve label: y values}}``; a curve given as one
    number is a grey reference line. ``log_x`` is ``True`` (base 10) or the base;
    ``log_y`` and ``ylabels`` may be one per panel. Introduced in Chapter 2.

    Shapes
    ------
    x : (N,)
    y : (N,)

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
    """
    if not hasattr(panels, "items"):
        raise TypeError(
            f"panels must be a dict {{title: {{label: y values}}}}, got "
            f"{kind_of(panels)}; e.g. {{'loss': {{'train': losses}}}}"
        )
    if len(panels) == 0:
        raise ValueError("line_panels needs at least one panel, got none")
    xs = _as_array(x, "x")
    if xs.ndim != 1 or xs.shape[0] == 0:
        raise ValueError(f"x must be a non-empty 1-D sequence, got shape {_shape(xs)}")
    count = len(panels)
    ylabels = _per_panel(ylabels, count, "ylabels", shared=(str,))
    flags = _per_panel(log_y, count, "log_y", shared=(bool,), label="log_y flags")
    ncols, nrows = _grid_shape(count, ncols, default=3)
    fig = _new_figure(min(18.0, 4.4 * ncols), 3.3 * nrows + (0.4 if suptitle else 0))
    axes = _panel_axes(fig, count, nrows, ncols, suptitle=suptitle)
    markers = "os^Dv<>"
    dashes = ("--", ":", "-.")  # reference lines, told apart by their dashes
    for i, (ax, (title, curves)) in enumerate(zip(axes, panels.items(), strict=True)):
        if not hasattr(curves, "items"):
            raise TypeError(
                f"panel {title!r} must be a dict {{label: y values}}, got "
                f"{kind_of(curves)}; e.g. {{'measured': values}}"
            )
        if len(curves) == 0:
            raise ValueError(f"panel {title!r} has no curves; give it at least one")
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
        if ylabels[i] is not None:
            ax.set_ylabel(ylabels[i])
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        ax.spines[["top", "right"]].set_visible(False)
    return fig


# --- Chapter 6: matrices of different shapes side by side ---


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
    """Draw attention matrices of *different* shapes and tokens side by side.

    Unlike :func:`heatmap_grid`, each panel has its own tokens, so encoder
    self-attention, decoder self-attention and cross-attention can stand side by side.
    One shared colour scale; each panel as wide as its keys; panels too wide for one
    row stand one under another. Introduced in Chapter 6.

    Shapes
    ------
    weights[i] : (T_q, T_k)

    Examples
    --------
    >>> source, target = ["the", "dog", "sees"], ["der", "Hund"]
    >>> fig = heatmap_panels(
    ...     [torch.full((3, 3), 1 / 3), torch.full((2, 3), 1 / 3)],
    ...     query_tokens=[source, target],
    ...     key_tokens=[source, source],
    ...     titles=["encoder", "cross"],
    ... )
    >>> [label.get_text() for label in fig.axes[1].get_yticklabels()]
    ['der', 'Hund']
    """
    if isinstance(weights, (torch.Tensor, np.ndarray)) or not isinstance(
        weights, Sequence
    ):
        raise TypeError(
            "weights must be a list of 2-D matrices, one per panel, got "
            f"{kind_of(weights)}; e.g. [encoder_weights, cross_weights] (for "
            "a stack of equal shapes, heatmap_grid also works)"
        )
    matrices = [_as_array(m, f"weights[{i}]") for i, m in enumerate(weights)]
    count = len(_check_matrices(matrices, "heatmap_panels"))
    titles = _per_panel(titles, count, "titles")
    rows = _per_panel(query_tokens, count, "query_tokens")
    cols = _per_panel(key_tokens, count, "key_tokens")
    xlabels = _per_panel(xlabels, count, "xlabels", shared=(str,))
    ylabels = _per_panel(ylabels, count, "ylabels", shared=(str,))
    _check_fmt(fmt)
    labels = _panel_labels(matrices, rows, cols)

    widths = [m.shape[1] for m in matrices]
    heights = [m.shape[0] for m in matrices]
    extra = 0.4 if suptitle else 0.0
    # Side by side with cells of 0.45 inches, narrower (down to 0.22) where that fits
    # the text column; wider panels go one under another, so tick labels never collide.
    # Beside each panel: its query labels (as wide as the longest) and axis label.
    longest = max(len(str(label)) for _, y in labels for label in y)
    beside = min(1.3, 0.55 + 0.08 * longest)
    cell = min(0.45, (MAX_WIDTH_INCHES - 0.2 - beside * count - 1.0) / sum(widths))
    stacked = cell < 0.22 and count > 1
    if not stacked:
        fig = _new_figure(
            cell * sum(widths) + beside * count + 1.0,
            cell * max(heights) + 1.8 + extra,
        )
        axes = _panel_axes(fig, count, 1, count, suptitle=suptitle, width_ratios=widths)
    else:
        cell = min(0.3, (MAX_WIDTH_INCHES - 2.3) / max(widths))
        fig = _new_figure(
            cell * max(widths) + 2.3,
            sum(cell * rows + 1.7 for rows in heights) + extra + 0.6,
        )
        axes = _panel_axes(
            fig,
            count,
            count,
            1,
            suptitle=suptitle,
            height_ratios=[cell * rows + 1.7 for rows in heights],
        )
    names = (titles, xlabels, ylabels)
    _draw_panels(
        axes, matrices, labels, names, cmap, annotate=annotate, fmt=fmt, stacked=stacked
    )
    return fig


# --- Chapter 11: measurements over several seeds ---


def seed_spread(panels, *, xlabel="validation loss", xlim=None):
    """Draw each setting's measurements over several seeds: a dot per seed and a
    bar at their mean, one row per setting, so that the spread between seeds sits
    beside the differences between settings.

    ``panels`` is ``{panel title: {setting: values, one per seed}}``; the panels sit
    side by side, each with its own x axis, or the range ``xlim`` for all. Panels
    with the same settings name them once, on the left. Introduced in Chapter 11.

    Examples
    --------
    >>> fig = seed_spread({"swaps": {"baseline": [2.31, 2.35], "rms": [2.30, 2.33]}})
    >>> [t.get_text() for t in fig.axes[0].get_yticklabels()]
    ['baseline', 'rms']
    """
    if not hasattr(panels, "items") or len(panels) == 0:
        raise TypeError(
            f"panels must be a non-empty dict {{title: {{setting: values}}}}, got "
            f"{kind_of(panels)}; e.g. {{'loss': {{'baseline': [2.31, 2.35]}}}}"
        )
    rows = max(len(settings) for settings in panels.values())
    named_once = len({tuple(settings) for settings in panels.values()}) == 1
    fig = _new_figure(min(3.6 * len(panels), MAX_WIDTH_INCHES), 0.9 + 0.38 * rows)
    fig.get_layout_engine().set(wspace=0.06)  # room between the panels' tick labels
    for i, (ax, (title, settings)) in enumerate(
        zip(fig.subplots(1, len(panels), squeeze=False)[0], panels.items(), strict=True)
    ):
        if not hasattr(settings, "items") or len(settings) == 0:
            raise ValueError(
                f"panel {title!r} must be a non-empty dict {{setting: values}}, got "
                f"{kind_of(settings)}"
            )
        for y, (label, values) in enumerate(settings.items()):
            xs = _as_array(values, f"the values of {label!r} in panel {title!r}")
            if xs.ndim != 1 or xs.shape[0] == 0:
                raise ValueError(
                    f"the values of {label!r} in panel {title!r} must be a non-empty "
                    f"1-D sequence, one per seed, got shape {_shape(xs)}"
                )
            ax.plot(xs, [y] * len(xs), "o", color=_BAR_COLOR, alpha=0.7, markersize=5)
            ax.plot([xs.mean()] * 2, [y - 0.3, y + 0.3], color="black", lw=2)
        shown = not (named_once and i > 0)
        ax.set_yticks(range(len(settings)), [str(s) for s in settings] if shown else [])
        ax.set_ylim(len(settings) - 0.5, -0.5)  # the first setting on top
        if xlim is not None:
            ax.set_xlim(*xlim)
        ax.set_title(str(title))
        ax.set_xlabel(xlabel)
        ax.grid(True, axis="x", alpha=0.3)
        ax.spines[["top", "right"]].set_visible(False)
    return fig
