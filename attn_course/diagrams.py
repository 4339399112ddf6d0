"""Diagrams of how data flows through attention, drawn from the tensors themselves.

Tensors are blue boxes that carry their shape, operations orange boxes between
them; every name and shape is read from the arguments, so a diagram cannot disagree
with the code beside it. Figures are drawn like those of :mod:`attn_course.plot`,
4.6 inches wide. ``diagram_text(fig)`` lists the words on a diagram.

============================  ==========  ===================================
function                      chapter     shows
============================  ==========  ===================================
:func:`query_pipeline`        1           one query: scores, softmax, weighted sum
:func:`self_attention`        2           X -> Q, K, V -> scores -> weights -> Z
:func:`causal_mask`           3           the mask laid over the scores
:func:`dropout_placement`     4           dropout on the weights, after the softmax
:func:`multi_head`            5           split into heads, attend, merge, out_proj
:func:`encoder_decoder`       6           where Q, K and V come from in each attention
:func:`position_methods`      7           where each kind of position enters attention
:func:`gpt_model`             8           a decoder-only model: blocks, residuals, head
:func:`attention_tiles`       9           the tiles tiled attention computes or skips
:func:`kv_cache_step`         9           one step of generation with a KV cache
:func:`rnn_encoder_decoder`   10          a GRU encoder-decoder, attention or not
:func:`timeline`              10          dated events on a time axis
:func:`latent_attention`      11          latent attention: what is cached, every shape
:func:`roadmap`               all         the course in five stages, "you are here"
============================  ==========  ===================================
"""

from __future__ import annotations

import math

import torch
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from ._validate import (
    require_heads,
    require_int,
    require_probability,
    require_tensor,
    require_tokens,
)
from .plot import _NotebookFigure, _text_colour

__all__ = [
    "attention_tiles",
    "causal_mask",
    "diagram_text",
    "dropout_placement",
    "encoder_decoder",
    "gpt_model",
    "kv_cache_step",
    "latent_attention",
    "multi_head",
    "position_methods",
    "query_pipeline",
    "rnn_encoder_decoder",
    "roadmap",
    "self_attention",
    "timeline",
]

TENSOR_FILL, TENSOR_EDGE = "#dbe9f6", "#2c5d8f"
OPERATION_FILL, OPERATION_EDGE = "#fde9d4", "#b35900"
HIGHLIGHT_FILL, HIGHLIGHT_EDGE = "#fff3b0", "#8a6d00"
TEXT = "#111111"
FONT_SIZE = 11
# Diagrams are 4.6 inches (460 px) wide: a 390 px phone shows them at three quarters
# of that, so that their 11-point text stays about 11 px tall.
WIDTH = 4.6


class _Canvas:
    """A figure whose coordinates are inches from its lower-left corner."""

    def __init__(self, width, height):
        self.fig = _NotebookFigure(figsize=(width, height))
        self.fig.patch.set_facecolor("white")
        self.ax = self.fig.add_axes((0, 0, 1, 1))
        self.ax.set_xlim(0, width)
        self.ax.set_ylim(0, height)
        self.ax.set_axis_off()

    def box(
        self,
        x,
        y,
        text,
        *,
        width=2.6,
        height=0.62,
        kind="tensor",
        size=FONT_SIZE,
        detail=None,
    ):
        """A box centred on (x, y), with ``text`` and, under it in a fixed-width
        font, ``detail``; returns its (left, bottom, right, top)."""
        fill, edge = {
            "tensor": (TENSOR_FILL, TENSOR_EDGE),
            "operation": (OPERATION_FILL, OPERATION_EDGE),
            "highlight": (HIGHLIGHT_FILL, HIGHLIGHT_EDGE),
        }[kind]
        style = (
            "round,pad=0.02,rounding_size=0.12"
            if kind != "tensor"
            else "square,pad=0.02"
        )
        self.ax.add_patch(
            FancyBboxPatch(
                (x - width / 2, y - height / 2),
                width,
                height,
                boxstyle=style,
                facecolor=fill,
                edgecolor=edge,
                linewidth=1.4,
            )
        )
        if detail:
            self.ax.text(
                x,
                y + height / 2 - 0.08,
                text,
                ha="center",
                va="top",
                fontsize=size,
                color=TEXT,
            )
            self.ax.text(
                x,
                y - height / 2 + 0.08,
                detail,
                ha="center",
                va="bottom",
                fontsize=size - 1,
                color=TEXT,
                family="monospace",
            )
        else:
            self.ax.text(
                x, y, text, ha="center", va="center", fontsize=size, color=TEXT
            )
        return (x - width / 2, y - height / 2, x + width / 2, y + height / 2)

    def arrow(self, start, end, label=None, *, side="right", dashed=False):
        """An arrow from point ``start`` to point ``end``, with an optional label;
        ``dashed`` draws it dashed."""
        self.ax.add_patch(
            FancyArrowPatch(
                start,
                end,
                arrowstyle="-|>",
                mutation_scale=14,
                color="#333333",
                lw=1.3,
                linestyle="--" if dashed else "-",
            )
        )
        if label:
            x, y = (start[0] + end[0]) / 2, (start[1] + end[1]) / 2
            offset = 0.12 if side == "right" else -0.12
            self.ax.text(
                x + offset,
                y,
                label,
                ha="left" if side == "right" else "right",
                va="center",
                fontsize=FONT_SIZE - 1,
                color=TEXT,
                style="italic",
            )

    def text(self, x, y, text, **kwargs):
        kwargs.setdefault("fontsize", FONT_SIZE)
        kwargs.setdefault("color", TEXT)
        self.ax.text(x, y, text, **kwargs)


def _below(box):
    return ((box[0] + box[2]) / 2, box[1])


def _above(box):
    return ((box[0] + box[2]) / 2, box[3])


def _down(canvas, upper, lower, label=None, side="right"):
    canvas.arrow(_below(upper), _above(lower), label, side=side)


def _shape(letters, sizes):
    """``(T, D) = (6, 3)``: a shape in the chapters' letters and in numbers."""
    return f"({', '.join(letters)}) = {tuple(int(s) for s in sizes)}"


def _table(tokens, values):
    """Tokens over their values, in aligned columns (for a fixed-width font)."""
    width = max(6, *(len(t) + 1 for t in tokens))
    return (
        "".join(f"{t:>{width}}" for t in tokens)
        + "\n"
        + "".join(f"{v:>{width}.2f}" for v in values)
    )


def _numbers(values):
    return "  ".join(f"{v:.2f}" for v in values)


def diagram_text(fig):
    """Every line of text written on a diagram, in the order drawn.
    Introduced in Chapter 1.
    """
    return [
        line for ax in fig.axes for t in ax.texts for line in t.get_text().split("\n")
    ]


def _matrix_of(tensor, name, ndim, letters):
    tensor = require_tensor(tensor, name)
    if tensor.ndim != ndim:
        raise ValueError(
            f"{name} must have shape ({', '.join(letters)}), {ndim}-D, got shape "
            f"{tuple(tensor.shape)}"
        )
    return tensor.detach().to("cpu", torch.float64)


def _step_heights(steps):
    return [
        0.44 + 0.2 * detail.count("\n") + 0.2 if detail else 0.42
        for _, detail, _, _ in steps
    ]


_GAP = 0.28  # between two boxes of a column


def _column(steps, heights, *, header, centre_x, widths, gap, fan):
    """Draw ``steps`` as a column of boxes joined by arrows under ``header`` inches;
    return the canvas and the boxes. ``widths`` maps a kind to a box width; the copies
    behind a stacked box are shifted by ``fan = (dx, dy)`` inches each.
    """
    total = header + sum(heights) + gap * (len(steps) - 1) + 0.3
    canvas = _Canvas(WIDTH, total)
    y, boxes = total - header - 0.15, []
    for (text, detail, kind, stack), height in zip(steps, heights, strict=True):
        centre = y - height / 2
        width = widths(kind)
        for layer in range(min(stack, 4) - 1, 0, -1):  # the other heads, behind
            canvas.ax.add_patch(
                FancyBboxPatch(
                    (
                        centre_x - width / 2 + fan[0] * layer,
                        centre - height / 2 + fan[1] * layer,
                    ),
                    width,
                    height,
                    boxstyle="square,pad=0.02",
                    facecolor=TENSOR_FILL,
                    edgecolor=TENSOR_EDGE,
                    lw=1,
                )
            )
        box = canvas.box(
            centre_x,
            centre,
            text,
            detail=detail,
            kind=kind,
            width=width,
            height=height,
        )
        if boxes:
            _down(canvas, boxes[-1], box)
        boxes.append(box)
        y -= height + gap
    return canvas, boxes


def _flow(steps, *, header=0.0):
    """A centred :func:`_column`. ``steps`` holds ``(text, detail, kind, stack)``:
    ``detail`` (or None) is written under ``text`` in a fixed-width font, ``kind`` is
    "tensor", "operation" or "highlight", ``stack`` > 1 draws copies (one per head).
    """
    return _column(
        steps,
        _step_heights(steps),
        header=header,
        centre_x=WIDTH / 2,
        widths=lambda kind: 4.0 if kind == "tensor" else 4.4,
        gap=_GAP,
        fan=(0.06, 0.06),
    )


def _side_column(steps, *, centre_x=2.1, width=3.7, gap=0.26):
    """A :func:`_column` left of centre, so that residual arcs fit on its right."""
    return _column(
        steps,
        [0.62 if detail else 0.38 for _, detail, _, _ in steps],
        header=0.0,
        centre_x=centre_x,
        widths=lambda kind: width,
        gap=gap,
        fan=(0.08, 0.0),
    )


def _residual(canvas, start, end, label, *, side=WIDTH - 0.3, start_dy=0.0, end_dy=0.0):
    """An arc on the right from box ``start`` to box ``end``, with ``label`` along
    it: the residual stream carried around the steps between them. ``start_dy`` and
    ``end_dy`` move its ends up or down, so that two arcs can meet at one box."""
    start_middle = (start[1] + start[3]) / 2 + start_dy
    end_middle = (end[1] + end[3]) / 2 + end_dy
    canvas.ax.plot(
        [start[2] + 0.02, side, side],
        [start_middle, start_middle, end_middle],
        color="#333333",
        lw=1.3,
        solid_capstyle="butt",
    )
    canvas.arrow((side, end_middle), (end[2] + 0.02, end_middle))
    canvas.text(
        side + 0.08,
        (start_middle + end_middle) / 2,
        label,
        rotation=90,
        ha="left",
        va="center",
        fontsize=FONT_SIZE - 1,
        style="italic",
    )


# --- Chapter 1 ---------------------------------------------------------------------


def query_pipeline(tokens, X, query):
    """One query's path, with the numbers: scores, softmax, weighted sum.
    Introduced in Chapter 1.

    Shapes
    ------
    X : (T, D)

    Examples
    --------
    >>> from attn_course import hello_shiny_sun
    >>> tokens, X = hello_shiny_sun()
    >>> fig = query_pipeline(tokens, X, "shiny")
    >>> "scores  (T,) = (3,)" in diagram_text(fig)
    True
    """
    X = _matrix_of(X, "X", 2, "TD")
    tokens = list(require_tokens(tokens, X.shape[0]))
    if isinstance(query, str):
        if query not in tokens:
            raise ValueError(f"query {query!r} is not one of the tokens {tokens}")
        index = tokens.index(query)
    else:
        index = require_int(query, "query", minimum=0)
        if index >= len(tokens):
            raise ValueError(
                f"query must be a position below T={len(tokens)}, got {index}"
            )
    T, D = X.shape
    scores = X @ X[index]
    weights = torch.softmax(scores, dim=-1)
    context = weights @ X
    steps = [
        ("dot product with every row: X @ x", None, "operation", 1),
        (f"scores  (T,) = ({T},)", _table(tokens, scores), "tensor", 1),
        ("softmax: exp, then divide by the sum", None, "operation", 1),
        (
            f"weights  (T,) = ({T},), sum = {weights.sum():.2f}",
            _table(tokens, weights),
            "tensor",
            1,
        ),
        ("weighted sum of the rows: weights @ X", None, "operation", 1),
        (f"context z  (D,) = ({D},)", _numbers(context), "tensor", 1),
    ]
    canvas, boxes = _flow(steps, header=1.0)
    top = canvas.ax.get_ylim()[1] - 0.5
    row = canvas.box(
        1.13, top, "X: every token", detail=_shape("TD", (T, D)), width=2.15, height=0.7
    )
    query_box = canvas.box(
        3.47,
        top,
        f"query x = X[{index}]",
        detail=f'"{tokens[index]}"  (D,) = ({D},)',
        width=2.15,
        height=0.7,
    )
    first = _above(boxes[0])
    canvas.arrow(_below(row), (first[0] - 0.8, first[1]))
    canvas.arrow(_below(query_box), (first[0] + 0.8, first[1]))
    return canvas.fig


# --- Chapter 2 ---------------------------------------------------------------------


def self_attention(X, d_out):
    """Self-attention with trainable weights: X -> Q, K, V -> scores -> weights -> Z.
    Introduced in Chapter 2.

    Shapes
    ------
    X : (T, d_in)

    Examples
    --------
    >>> fig = self_attention(torch.zeros(6, 3), 2)
    >>> "Q = X W_query" in diagram_text(fig)
    True
    """
    X = _matrix_of(X, "X", 2, ("T", "d_in"))
    d_out = require_int(d_out, "d_out")
    T, d_in = X.shape
    canvas = _Canvas(WIDTH, 7.3)
    top = canvas.box(
        WIDTH / 2,
        6.95,
        "X: the inputs",
        detail=_shape(("T", "d_in"), (T, d_in)),
        width=2.6,
        height=0.65,
    )
    columns = {"Q": 0.77, "K": 2.3, "V": 3.83}
    projected = {}
    for name, x in columns.items():
        full = {"Q": "query", "K": "key", "V": "value"}[name]
        weight = canvas.box(
            x,
            5.8,
            f"@ W_{full}",
            detail=f"(d_in, d_out)\n= {(d_in, d_out)}",
            kind="operation",
            width=1.45,
            height=0.9,
        )
        canvas.arrow(_below(top), _above(weight))
        projected[name] = canvas.box(
            x,
            4.55,
            f"{name} = X W_{full}",
            detail=f"(T, d_out)\n= {(T, d_out)}",
            width=1.45,
            height=0.9,
        )
        _down(canvas, weight, projected[name])
    scores_op = canvas.box(
        1.55, 3.5, "Q Kᵀ / √d_k", kind="operation", width=2.0, height=0.45
    )
    canvas.arrow(_below(projected["Q"]), (1.1, _above(scores_op)[1]))
    canvas.arrow(_below(projected["K"]), (2.0, _above(scores_op)[1]))
    scores = canvas.box(
        1.55, 2.75, "scores", detail=_shape("TT", (T, T)), width=2.0, height=0.65
    )
    _down(canvas, scores_op, scores)
    soft = canvas.box(
        1.55, 1.95, "softmax of each row", kind="operation", width=2.0, height=0.45
    )
    _down(canvas, scores, soft)
    weights = canvas.box(
        1.55, 1.15, "weights A", detail=_shape("TT", (T, T)), width=2.0, height=0.65
    )
    _down(canvas, soft, weights)
    out = canvas.box(
        3.3,
        0.35,
        "Z = A V",
        detail=_shape(("T", "d_out"), (T, d_out)),
        width=2.3,
        height=0.65,
    )
    canvas.arrow(_below(weights), (out[0], (out[1] + out[3]) / 2))
    canvas.arrow(_below(projected["V"]), (3.83, _above(out)[1]))
    return canvas.fig


# --- Chapter 3 ---------------------------------------------------------------------


def _grid(
    canvas,
    left,
    top,
    matrix,
    title,
    *,
    cell=0.36,
    blocked=None,
    fmt="{:.2f}",
    blocked_label="−∞",
):
    """A matrix as coloured cells under a title; blocked cells grey, labelled
    ``blocked_label``."""
    import matplotlib

    rows, cols = matrix.shape
    cmap = matplotlib.colormaps["Blues"]
    finite = matrix[torch.isfinite(matrix)]
    low = min(0.0, float(finite.min())) if finite.numel() else 0.0
    high = max(1.0, float(finite.max())) if finite.numel() else 1.0
    norm = matplotlib.colors.Normalize(low, high)
    canvas.text(left + cols * cell / 2, top + 0.08, title, ha="center", va="bottom")
    for r in range(rows):
        for c in range(cols):
            x, y = left + c * cell, top - (r + 1) * cell
            value = float(matrix[r, c])
            is_blocked = blocked is not None and bool(blocked[r, c])
            colour = "#9a9a9a" if is_blocked else cmap(norm(value))
            canvas.ax.add_patch(
                FancyBboxPatch(
                    (x, y),
                    cell,
                    cell,
                    boxstyle="square,pad=0",
                    facecolor=colour,
                    edgecolor="white",
                    lw=1,
                )
            )
            if is_blocked:
                label, ink = blocked_label, "black"
            elif not math.isfinite(value):
                label, ink = "−∞", "black"
            else:
                label, ink = fmt.format(value), _text_colour(cmap, norm, value)
            canvas.text(
                x + cell / 2,
                y + cell / 2,
                label,
                ha="center",
                va="center",
                fontsize=7.5,
                color=ink,
            )
    return (left, top - rows * cell, left + cols * cell, top)


def causal_mask(scores):
    """The causal mask laid over the scores: the scores, the mask, the masked scores and
    the weights after the softmax. Introduced in Chapter 3.

    Shapes
    ------
    scores : (T, T)
    """
    scores = _matrix_of(scores, "scores", 2, "TT")
    T = scores.shape[0]
    if scores.shape[1] != T:
        raise ValueError(
            f"scores must be square, (T, T), got shape {tuple(scores.shape)}"
        )
    allowed = torch.ones(T, T, dtype=torch.bool).tril()
    masked = scores.masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(masked, dim=-1)
    cell = min(0.3, 1.8 / T)
    side = T * cell
    gap = WIDTH - 2 * side - 0.3
    height = 2 * side + 1.6
    canvas = _Canvas(WIDTH, height)
    left1, left2 = 0.15, 0.15 + side + gap
    top1, top2 = height - 0.4, height - side - 1.1
    a = _grid(canvas, left1, top1, scores, f"scores {_shape('TT', (T, T))}", cell=cell)
    keep = torch.where(allowed, 1.0, 0.0).double()
    b = _grid(
        canvas,
        left2,
        top1,
        keep,
        "mask: T = may attend",
        cell=cell,
        blocked=~allowed,
        fmt="T",
        blocked_label="F",
    )
    c = _grid(canvas, left1, top2, masked, "masked scores", cell=cell, blocked=~allowed)
    d = _grid(canvas, left2, top2, weights, "weights (rows sum to 1)", cell=cell)
    canvas.arrow(
        _below(a),
        (_above(c)[0], _above(c)[1] + 0.35),
        "−∞ where\nmask = F",
        side="left",
    )
    canvas.arrow((b[0], b[1]), (c[2], c[3] + 0.3))
    canvas.arrow((c[2] + 0.05, (c[1] + c[3]) / 2), (d[0] - 0.05, (d[1] + d[3]) / 2))
    canvas.text(
        (c[2] + d[0]) / 2,
        (c[1] + c[3]) / 2 + 0.12,
        "softmax",
        ha="center",
        va="bottom",
        style="italic",
        fontsize=FONT_SIZE - 1,
    )
    return canvas.fig


# --- Chapter 4 ---------------------------------------------------------------------


def dropout_placement(T, d_out, p):
    """Where dropout sits: on the attention weights, after the softmax.
    Introduced in Chapter 4.
    """
    T = require_int(T, "T")
    d_out = require_int(d_out, "d_out")
    p = require_probability(p, "p")
    steps = [
        ("scores = Q Kᵀ / √d_k", _shape("TT", (T, T)), "tensor", 1),
        ("causal mask, then softmax of each row", None, "operation", 1),
        ("weights, rows sum to 1", _shape("TT", (T, T)), "tensor", 1),
        (
            f"dropout, p = {p:g}",
            f"zero each weight with probability {p:g},\n"
            f"scale the kept ones by 1/(1 − p) = {1 / (1 - p):g}",
            "highlight",
            1,
        ),
        ("dropped weights (training only)", _shape("TT", (T, T)), "tensor", 1),
        ("@ V, the values", _shape(("T", "d_out"), (T, d_out)), "operation", 1),
        ("context", _shape(("T", "d_out"), (T, d_out)), "tensor", 1),
    ]
    return _flow(steps)[0].fig


# --- Chapter 5 ---------------------------------------------------------------------


def multi_head(x, num_heads, d_out):
    """Multi-head attention's shapes: split into heads, attend, merge, out_proj.
    Introduced in Chapter 5.

    Shapes
    ------
    x : (B, T, d_in)
    """
    x = _matrix_of(x, "x", 3, ("B", "T", "d_in"))
    H = require_int(num_heads, "num_heads")
    D = require_int(d_out, "d_out")
    require_heads(D, H)
    B, T, d_in = x.shape
    d = D // H
    steps = [
        ("x: the inputs", _shape(("B", "T", "d_in"), (B, T, d_in)), "tensor", 1),
        ("@ W_query, W_key, W_value", f"each (d_in, D) = {(d_in, D)}", "operation", 1),
        ("Q, K, V", _shape(("B", "T", "D"), (B, T, D)), "tensor", 1),
        (
            "split D = H · d: .view(B, T, H, d)",
            f"H = {H} heads of width d = {d}",
            "operation",
            1,
        ),
        ("Q, K, V per head", _shape(("B", "T", "H", "d"), (B, T, H, d)), "tensor", 1),
        (".transpose(1, 2): heads first", None, "operation", 1),
        ("Q, K, V", _shape(("B", "H", "T", "d"), (B, H, T, d)), "tensor", H),
        (
            "attention in every head at once",
            "weights " + _shape(("B", "H", "T", "T"), (B, H, T, T)),
            "highlight",
            H,
        ),
        ("context per head", _shape(("B", "H", "T", "d"), (B, H, T, d)), "tensor", H),
        (
            ".transpose(1, 2).contiguous()",
            ".view(B, T, D): the heads side by side",
            "operation",
            1,
        ),
        ("merged", _shape(("B", "T", "D"), (B, T, D)), "tensor", 1),
        (
            "out_proj: a (D, D) linear layer",
            "mixes what the heads found",
            "operation",
            1,
        ),
        ("output", _shape(("B", "T", "D"), (B, T, D)), "tensor", 1),
    ]
    return _flow(steps)[0].fig


# --- Chapter 6 ---------------------------------------------------------------------


def _source_and_target(source, target):
    """Check a translation diagram's id tensors, ``(B, T_s)`` and ``(B, T_t)``."""
    source = require_tensor(source, "source")
    target = require_tensor(target, "target")
    for name, ids, letters in (
        ("source", source, "B, T_s"),
        ("target", target, "B, T_t"),
    ):
        if ids.ndim != 2:
            raise ValueError(
                f"{name} must hold token ids of shape ({letters}), 2-D, got "
                f"shape {tuple(ids.shape)}"
            )
    if source.shape[0] != target.shape[0]:
        raise ValueError(
            f"source and target must hold the same number of sentences B, got "
            f"{source.shape[0]} and {target.shape[0]}"
        )
    return source, target


def encoder_decoder(source, target, d_model, num_heads, vocab_size):
    """The encoder-decoder transformer: where Q, K and V come from in each of its three
    kinds of attention, with one batch's shapes. Introduced in Chapter 6.

    Shapes
    ------
    source : (B, T_s)
    target : (B, T_t)

    Examples
    --------
    >>> fig = encoder_decoder(torch.zeros(2, 7), torch.zeros(2, 5), 64, 4, 30)
    >>> "= (2, 5, 30)" in diagram_text(fig)  # the logits (B, T_t, vocab_size)
    True
    """
    source, target = _source_and_target(source, target)
    D = require_int(d_model, "d_model")
    H = require_int(num_heads, "num_heads")
    V = require_int(vocab_size, "vocab_size")
    (B, S), T = source.shape, target.shape[1]

    def shape(letters, sizes):  # two lines: the boxes are narrow
        return _shape(letters, sizes).replace(" = ", "\n= ")

    canvas = _Canvas(WIDTH, 7.5)
    enc_x, dec_x, w = 1.12, 3.48, 2.15
    canvas.text(enc_x, 7.3, "encoder", ha="center", va="center", weight="bold")
    canvas.text(dec_x, 7.3, "decoder", ha="center", va="center", weight="bold")
    attention = {}
    for x, side, letter, length, kind in (
        (enc_x, "source", "T_s", S, "self-attention"),
        (dec_x, "target", "T_t", T, "masked self-attn."),
    ):
        ids = canvas.box(
            x,
            6.7,
            f"{side} ids",
            detail=shape(("B", letter), (B, length)),
            width=w,
            height=0.8,
        )
        embedded = canvas.box(
            x,
            5.6,
            "embedded",
            detail=shape(("B", letter, "D"), (B, length, D)),
            width=w,
            height=0.8,
        )
        attention[side] = canvas.box(
            x,
            4.35,
            f"{kind}\nQ, K, V: {side}",
            kind="operation",
            width=w,
            height=0.9,
            detail=f"weights {(B, H, length, length)}",
        )
        _down(canvas, ids, embedded)
        _down(canvas, embedded, attention[side])
    enc_self, dec_self = attention["source"], attention["target"]
    memory = canvas.box(
        enc_x,
        2.65,
        "encoder output\n(the memory)",
        detail=shape(("B", "T_s", "D"), (B, S, D)),
        width=w,
        height=1.1,
    )
    canvas.arrow(_below(enc_self), _above(memory), "+ feed-\nforward", side="right")
    cross = canvas.box(
        dec_x,
        2.65,
        "cross-attention\nQ: target\nK, V: memory",
        kind="highlight",
        width=w,
        height=1.15,
        detail=f"weights {(B, H, T, S)}",
    )
    _down(canvas, dec_self, cross)
    middle = (memory[1] + memory[3]) / 2
    canvas.arrow((memory[2], middle), (cross[0], middle))
    logits = canvas.box(
        dec_x,
        0.6,
        "+ feed-forward,\nlinear: logits",
        detail=shape(("B", "T_t", "vocab_size"), (B, T, V)),
        width=w,
        height=1.15,
    )
    _down(canvas, cross, logits)
    canvas.text(
        enc_x,
        0.75,
        f"D = {D}, H = {H}\nEach layer repeats;\n"
        "the decoder reads\nthe last encoder layer.",
        ha="center",
        va="center",
        fontsize=FONT_SIZE - 1,
    )
    return canvas.fig


# --- Chapter 7 ---------------------------------------------------------------------


def position_methods(ids, d_model, num_heads, vocab_size):
    """Where each kind of position acts in Chapter 7's layer, with one batch's shapes.

    Absolute positions are added to the token vectors; RoPE rotates the queries and
    keys of every head (so the head width must be even); ALiBi adds a bias to the
    scores. Then the output projection, the residual and the read-out to the logits.
    Introduced in Chapter 7.

    Shapes
    ------
    ids : (B, T)

    Examples
    --------
    >>> fig = position_methods(torch.zeros(64, 16, dtype=torch.long), 32, 8, 10)
    >>> "(H, T, T) = (8, 16, 16)" in diagram_text(fig)  # the ALiBi bias
    True
    """
    ids = require_tensor(ids, "ids")
    if ids.ndim != 2:
        raise ValueError(
            f"ids must hold token ids of shape (B, T), 2-D, got shape "
            f"{tuple(ids.shape)}"
        )
    D = require_int(d_model, "d_model")
    H = require_int(num_heads, "num_heads")
    V = require_int(vocab_size, "vocab_size")
    if D % H or (D // H) % 2:
        raise ValueError(
            f"d_model={D} must be num_heads={H} times an even head width d (RoPE "
            "rotates pairs of features); e.g. d_model=32 with num_heads=8"
        )
    B, T = ids.shape
    d = D // H
    # (text, detail, kind, heads drawn behind); detail=None: a one-line box
    steps = [
        ("token ids", _shape(("B", "T"), (B, T)), "tensor", 1),
        (
            "embedding: look up each id",
            "table " + _shape(("vocab_size", "D"), (V, D)),
            "operation",
            1,
        ),
        (
            "+ positions: sinusoidal or learned",
            _shape(("T", "D"), (T, D)),
            "highlight",
            1,
        ),
        ("x", _shape(("B", "T", "D"), (B, T, D)), "tensor", 1),
        ("W_query, W_key, W_value; split heads", None, "operation", 1),
        (
            "q, k, v of every head",
            _shape(("B", "H", "T", "d"), (B, H, T, d)),
            "tensor",
            H,
        ),
        (
            "RoPE: rotate q and k",
            f"{d // 2} pairs per head, each by m·θ_i",
            "highlight",
            1,
        ),
        (
            "scores = q @ kᵀ / √d",
            _shape(("B", "H", "T", "T"), (B, H, T, T)),
            "operation",
            1,
        ),
        (
            "+ ALiBi bias: −s_h · (m − n)",
            _shape(("H", "T", "T"), (H, T, T)),
            "highlight",
            1,
        ),
        (
            "causal mask, softmax, weights @ v",
            _shape(("B", "H", "T", "d"), (B, H, T, d)),
            "operation",
            1,
        ),
        (
            "merge the heads, out_proj",
            _shape(("B", "T", "D"), (B, T, D)),
            "operation",
            1,
        ),
        ("x + out_proj(context)", _shape(("B", "T", "D"), (B, T, D)), "tensor", 1),
        ("feed-forward: D → 4D → vocab_size", None, "operation", 1),
        ("logits", _shape(("B", "T", "vocab_size"), (B, T, V)), "tensor", 1),
    ]
    canvas, boxes = _side_column(steps)
    # The residual connection: x goes around the attention and is added back.
    _residual(canvas, boxes[3], boxes[11], "residual: x is added back")
    return canvas.fig


# --- Chapter 8 ---------------------------------------------------------------------


def gpt_model(idx, config):
    """A decoder-only model (a GPT) from token ids to logits, with one batch's shapes.

    Each half of a block reads the *residual stream* through a layer norm and adds its
    output back (the arcs on the right); a final norm and the output layer (tied to
    the token embedding with ``tie_weights``) give the logits. Introduced in Chapter 8.

    Shapes
    ------
    idx : (B, T)

    Examples
    --------
    >>> from attn_course.gpt import GPTConfig
    >>> config = GPTConfig(vocab_size=103, context_length=64, num_layers=4)
    >>> lines = diagram_text(gpt_model(torch.zeros(32, 64, dtype=torch.long), config))
    >>> "(B, T, V) = (32, 64, 103)" in lines
    True
    """
    idx = require_tensor(idx, "idx")
    if idx.ndim != 2:
        raise ValueError(
            f"idx must hold token ids of shape (B, T), 2-D, got shape "
            f"{tuple(idx.shape)}; for one sequence use idx[None]"
        )
    B, T = idx.shape
    c = config
    D, H, V, L = c.d_model, c.num_heads, c.vocab_size, c.num_layers
    positions = "position_embedding" if c.positions == "learned" else "sinusoids"
    head = "head = token_embedding.weightᵀ" if c.tie_weights else "head"
    steps = [
        ("token ids idx", _shape(("B", "T"), (B, T)), "tensor", 1),
        (
            f"token_embedding + {positions}",
            f"tables (V, D) = {(V, D)} and {(c.context_length, D)}",
            "operation",
            1,
        ),
        ("x: the residual stream", _shape(("B", "T", "D"), (B, T, D)), "tensor", 1),
        (
            "norm1, causal multi-head attention",
            "weights " + _shape(("B", "H", "T", "T"), (B, H, T, T)),
            "highlight",
            H,
        ),
        ("x + attention(norm1(x))", _shape(("B", "T", "D"), (B, T, D)), "tensor", 1),
        (
            "norm2, feed-forward D → d_ff → D",
            "hidden " + _shape(("B", "T", "d_ff"), (B, T, c.d_ff)),
            "operation",
            1,
        ),
        ("x + feed_forward(norm2(x))", _shape(("B", "T", "D"), (B, T, D)), "tensor", 1),
        (
            f"blocks 2 to {L}: the same steps" if L > 1 else "one block only",
            f"num_layers = {L}",
            "operation",
            1,
        ),
        (f"final_norm, {head}", None, "operation", 1),
        ("logits", _shape(("B", "T", "V"), (B, T, V)), "tensor", 1),
    ]
    canvas, boxes = _side_column(steps)
    _residual(canvas, boxes[2], boxes[4], "residual", end_dy=0.08)
    _residual(canvas, boxes[4], boxes[6], "residual", start_dy=-0.08)
    return canvas.fig


# --- Chapter 9 ---------------------------------------------------------------------


def attention_tiles(T_q, T_k, block_size, *, is_causal=True, head_dim=64):
    """Which tiles of scores tiled attention computes, and the steps of one tile.

    Top: the score matrix in tiles, as :func:`attn_course.tiled_attention` reports them
    (``return_tiles=True``): dark tiles computed, tiles the causal mask cuts through
    computed and masked, white tiles skipped. Below: one tile's update of the running
    maximum ``m``, sum ``s`` and weighted sum ``acc``; ``head_dim`` is the ``d``
    written in the shapes. Introduced in Chapter 9.

    Examples
    --------
    >>> lines = diagram_text(attention_tiles(8, 8, 4))
    >>> "3 of 4 tiles computed, 1 skipped" in lines
    True
    """
    from .efficient import tiled_attention

    T_q = require_int(T_q, "T_q")
    T_k = require_int(T_k, "T_k")
    b = require_int(block_size, "block_size")
    d = require_int(head_dim, "head_dim")
    q = torch.zeros(T_q, 1)
    k = torch.zeros(T_k, 1)
    _, tiles = tiled_attention(
        q, k, k, block_size=b, is_causal=bool(is_causal), return_tiles=True
    )
    rows, cols = tiles.shape
    cell = min(0.42, 2.6 / max(rows, cols))
    grid_height = rows * cell + 1.35
    steps = [
        (
            "tile of scores S = Q_i K_jᵀ · scale",
            f"Q_i (b, d), K_j (b, d) -> S ({b}, {b})",
            "operation",
            1,
        ),
        ("m_new = max(m, row max of S)", f"m, m_new ({b},)", "operation", 1),
        (
            "P = exp(S - m_new); r = exp(m - m_new)",
            f"P ({b}, {b}), r ({b},)",
            "operation",
            1,
        ),
        (
            "s = r · s + row sums of P;  acc = r · acc + P V_j",
            f"s ({b},), acc ({b}, d) = ({b}, {d})",
            "highlight",
            1,
        ),
        (
            "after the last tile: output = acc / s",
            f"({b}, d) = ({b}, {d})",
            "tensor",
            1,
        ),
    ]
    canvas, _ = _flow(steps, header=grid_height)
    top = canvas.ax.get_ylim()[1] - 0.45
    left = (WIDTH - cols * cell) / 2
    computed = int(tiles.sum())
    canvas.text(
        WIDTH / 2,
        top + 0.1,
        f"scores ({T_q}, {T_k}) in tiles of {b} × {b}",
        ha="center",
        va="bottom",
    )
    for r in range(rows):
        for c in range(cols):
            # The causal mask cuts a tile whose last key comes after its first query.
            cut = is_causal and (c + 1) * b - 1 > r * b
            fill = (
                "white" if not tiles[r, c] else (HIGHLIGHT_FILL if cut else TENSOR_EDGE)
            )
            canvas.ax.add_patch(
                FancyBboxPatch(
                    (left + c * cell, top - (r + 1) * cell),
                    cell,
                    cell,
                    boxstyle="square,pad=0",
                    facecolor=fill,
                    edgecolor="#555555",
                    lw=1,
                )
            )
    legend = "blue: computed; white: skipped"
    if is_causal:
        legend = "blue: computed; yellow: computed, masked inside;\nwhite: skipped"
    canvas.text(
        WIDTH / 2,
        top - rows * cell - 0.1,
        f"{computed} of {rows * cols} tiles computed, {rows * cols - computed} "
        f"skipped\n{legend}",
        ha="center",
        va="top",
        fontsize=FONT_SIZE - 1,
    )
    return canvas.fig


def kv_cache_step(config, cached, batch=1):
    """One step of generation with a KV cache of ``cached`` tokens, with every shape.

    The newest token alone goes through the model; in every layer its query attends
    to the cache, to which its own key and value were just appended (``num_kv_heads``
    heads with grouped-query attention). Introduced in Chapter 9.

    Examples
    --------
    >>> from attn_course.gpt import GPTConfig
    >>> config = GPTConfig(vocab_size=103, context_length=64, d_model=96,
    ...                    num_heads=4, num_kv_heads=1)
    >>> lines = diagram_text(kv_cache_step(config, 10))
    >>> "K, V (B, H_kv, t + 1, d) = (1, 1, 11, 24)" in lines
    True
    """
    cached = require_int(cached, "cached", minimum=0)
    B = require_int(batch, "batch")
    c = config
    D, H, V, L = c.d_model, c.num_heads, c.vocab_size, c.num_layers
    Hkv, d = c.num_kv_heads, c.d_model // c.num_heads
    t = cached
    steps = [
        ("the newest token", _shape(("B", "1"), (B, 1)), "tensor", 1),
        (
            f"embedding + position {t}",
            _shape(("B", "1", "D"), (B, 1, D)),
            "operation",
            1,
        ),
        (
            "query, and the new key and value",
            f"q (B, H, 1, d) = {(B, H, 1, d)}\nk, v (B, H_kv, 1, d) = {(B, Hkv, 1, d)}",
            "operation",
            H,
        ),
        (
            f"append to the cache of t = {t} tokens",
            "K, V (B, H_kv, t + 1, d) = " + str((B, Hkv, t + 1, d)),
            "highlight",
            1,
        ),
        (
            "softmax(q Kᵀ · scale) V",
            "weights (B, H, 1, t + 1) = " + str((B, H, 1, t + 1)),
            "operation",
            H,
        ),
        (
            f"the rest of layer 1; then layers 2 to {L}"
            if L > 1
            else "the rest of the layer",
            _shape(("B", "1", "D"), (B, 1, D)),
            "operation",
            1,
        ),
        ("logits for the next token", _shape(("B", "1", "V"), (B, 1, V)), "tensor", 1),
    ]
    canvas, _ = _flow(steps)
    return canvas.fig


# --- Chapter 10 --------------------------------------------------------------------


def rnn_encoder_decoder(source, target, d_model, vocab_size, *, attention=False):
    """A GRU encoder-decoder: without attention the decoder sees the source only through
    the encoder's last state; with attention it reads all the states.
    Introduced in Chapter 10.

    Shapes
    ------
    source : (B, T_s)
    target : (B, T_t)

    Examples
    --------
    >>> fig = rnn_encoder_decoder(torch.zeros(2, 7), torch.zeros(2, 5), 64, 30)
    >>> "= (2, 64)" in diagram_text(fig)  # the last state (B, D): the bottleneck
    True
    """
    source, target = _source_and_target(source, target)
    D = require_int(d_model, "d_model")
    V = require_int(vocab_size, "vocab_size")
    if not isinstance(attention, bool):
        raise TypeError(f"attention must be a bool, got {attention!r}")
    (B, S), T = source.shape, target.shape[1]

    def shape(letters, sizes):  # two lines: the boxes are narrow
        return _shape(letters, sizes).replace(" = ", "\n= ")

    # With attention, the columns stand further apart: the arrows between them
    # (initial state, query, context) carry labels.
    canvas = _Canvas(6.3 if attention else WIDTH, 7.3)
    enc_x, dec_x, w = 1.12, 5.13 if attention else 3.48, 2.15
    canvas.text(enc_x, 7.1, "encoder", ha="center", va="center", weight="bold")
    canvas.text(dec_x, 7.1, "decoder", ha="center", va="center", weight="bold")
    src = canvas.box(
        enc_x,
        6.45,
        "source ids",
        detail=shape(("B", "T_s"), (B, S)),
        width=w,
        height=0.8,
    )
    gru = canvas.box(
        enc_x,
        5.25,
        f"GRU: {S} steps,\none after another",
        kind="operation",
        width=w,
        height=0.8,
    )
    states = canvas.box(
        enc_x,
        4.0,
        "encoder states",
        detail=shape(("B", "T_s", "D"), (B, S, D)),
        width=w,
        height=0.8,
    )
    _down(canvas, src, gru, "embed")
    _down(canvas, gru, states)
    tgt = canvas.box(
        dec_x,
        6.45,
        "target ids",
        detail=shape(("B", "T_t"), (B, T)),
        width=w,
        height=0.8,
    )
    if not attention:
        last = canvas.box(
            enc_x,
            2.55,
            "last state only",
            detail=shape(("B", "D"), (B, D)),
            kind="highlight",
            width=w,
            height=0.8,
        )
        _down(canvas, states, last)
        decoder = canvas.box(
            dec_x,
            2.55,
            f"GRU: {T} steps,\nstarts from the\nlast state",
            kind="operation",
            width=w,
            height=0.8,
        )
        canvas.arrow(_below(tgt), _above(decoder), "embed", side="right")
        middle = (last[1] + last[3]) / 2
        canvas.arrow((last[2], middle), (decoder[0], middle))
        features = decoder
        note = f"D = {D}: the whole\nsentence must fit\nin {D} numbers."
    else:
        decoder = canvas.box(
            dec_x,
            4.0,
            "GRU cell, step i:\n[word; context] in",
            kind="operation",
            width=w,
            height=1.0,
            detail=f"state (B, D) = {(B, D)}",
        )
        canvas.arrow(_below(tgt), _above(decoder), "embed", side="right")
        attend = canvas.box(
            enc_x,
            2.55,
            "additive attention",
            detail=f"weights (B, T_s)\n= {(B, S)}\ncontext (B, D)",
            kind="highlight",
            width=w,
            height=1.0,
        )
        _down(canvas, states, attend, "keys")
        small = {"fontsize": FONT_SIZE - 1, "style": "italic", "va": "center"}
        # The encoder's last state still starts the decoder.
        canvas.arrow((gru[2], 5.15), (decoder[0], 4.35), dashed=True)
        canvas.text(3.05, 5.0, "initial state", ha="center", rotation=-24, **small)
        # Before step i: the previous state s_(i-1) queries the encoder states...
        canvas.arrow((decoder[0], 3.95), (attend[2], 3.0))
        canvas.text(
            3.05,
            3.72,
            "query: previous state $s_{i-1}$",
            ha="center",
            rotation=27,
            **small,
        )
        # ... and the context they give back goes into the cell.
        canvas.arrow((attend[2], 2.62), (decoder[0], 3.55))
        canvas.text(3.3, 2.88, "context $c_i$", ha="center", rotation=27, **small)
        features = canvas.box(
            dec_x,
            2.55,
            "[state; context]",
            detail=shape(("B", "2D"), (B, 2 * D)),
            width=w,
            height=0.8,
        )
        _down(canvas, decoder, features, "new state $s_i$")
        canvas.arrow((attend[2], 2.3), (features[0], 2.3))
        canvas.text(
            3.05,
            2.18,
            "context $c_i$",
            ha="center",
            va="top",
            fontsize=FONT_SIZE - 1,
            style="italic",
        )
        note = f"D = {D}: a new\ncontext for every\ntarget word."
    logits = canvas.box(
        dec_x,
        0.75,
        "linear: logits",
        detail=shape(("B", "T_t", "V"), (B, T, V)),
        width=w,
        height=0.8,
    )
    _down(canvas, features, logits)
    canvas.text(enc_x, 0.8, note, ha="center", va="center", fontsize=FONT_SIZE - 1)
    return canvas.fig


_KIND_COLOURS = {
    "recurrent": "#2c5d8f",
    "attention": "#b35900",
    "transformer": "#b0002a",
    "after": "#3d7a2a",
}
_KIND_NAMES = {
    "recurrent": "recurrent and convolutional models",
    "attention": "attention added to them",
    "transformer": "attention alone: the Transformer",
    "after": "built on it, or looking beyond it",
}


def timeline(events):
    """Dated events (:class:`attn_course.history.Event`, in date order), oldest at the
    top: on the left a time axis in years, where each event's dot stands at its date;
    a thin line joins the dot to the event's row, one evenly spaced row each, so
    that events close in time stay readable. Coloured by kind.
    Introduced in Chapter 10.

    Examples
    --------
    >>> from attn_course.history import TIMELINE
    >>> fig = timeline(TIMELINE)
    >>> "2017-06" in diagram_text(fig) and "the Transformer" in diagram_text(fig)
    True
    """
    events = list(events)
    if not events:
        raise ValueError("events is empty; pass e.g. attn_course.history.TIMELINE")
    dates = [(e.year, e.month) for e in events]
    if dates != sorted(dates):
        raise ValueError(
            "events must be in date order (oldest first); sort them with "
            "sorted(events, key=lambda e: (e.year, e.month))"
        )
    unknown = {e.kind for e in events} - set(_KIND_COLOURS)
    if unknown:
        raise ValueError(
            f"unknown kind(s) {sorted(unknown)}; use one of {list(_KIND_COLOURS)}"
        )
    row = 0.27
    height = row * len(events) + 1.45
    canvas = _Canvas(WIDTH, height)
    top, bottom = height - 0.35, height - 0.35 - row * (len(events) - 1)
    axis_x, row_x = 0.45, 1.55
    first = events[0].year
    last = events[-1].year + 1
    span = last - first

    def at(year):  # the height of a date (in years) on the axis
        return top - (year - first) / span * (top - bottom)

    canvas.ax.plot([axis_x, axis_x], [top, bottom], color="#777777", lw=1.2)
    for year in range(first - first % 5 + 5 * (first % 5 != 0), last + 1, 5):
        canvas.ax.plot([axis_x - 0.05, axis_x], [at(year)] * 2, color="#777777")
        canvas.text(
            axis_x - 0.08,
            at(year),
            str(year),
            ha="right",
            va="center",
            fontsize=FONT_SIZE - 2,
        )
    for i, event in enumerate(events):
        y = top - row * i
        colour = _KIND_COLOURS[event.kind]
        when = at(event.year + (event.month - 0.5 if event.month else 6) / 12)
        canvas.ax.plot([axis_x, row_x - 0.5], [when, y], color=colour, lw=0.6)
        canvas.ax.plot([axis_x], [when], marker="o", markersize=5, color=colour)
        date = f"{event.year}" if not event.month else f"{event.year}-{event.month:02d}"
        canvas.text(row_x - 0.45, y, date, va="center", fontsize=FONT_SIZE - 2)
        canvas.text(
            row_x + 0.15,
            y,
            event.label,
            ha="left",
            va="center",
            fontsize=FONT_SIZE - 1,
            weight="bold" if event.kind == "transformer" else "normal",
        )
    kinds = [kind for kind in _KIND_COLOURS if any(e.kind == kind for e in events)]
    for j, kind in enumerate(kinds):
        x, y = 0.3, 0.95 - 0.25 * j
        canvas.ax.plot([x], [y], marker="o", markersize=7, color=_KIND_COLOURS[kind])
        canvas.text(x + 0.12, y, _KIND_NAMES[kind], va="center", fontsize=FONT_SIZE - 2)
    return canvas.fig


# --- Chapter 11 --------------------------------------------------------------------


def latent_attention(x, num_heads, head_dim, kv_latent_dim, rope_dim):
    """Multi-head latent attention on the batch ``x``: the queries on the left; on
    the right the latent ``c_KV`` and the shared rotated key ``k_rope`` that a cache
    keeps (highlighted), expanded by ``key_up`` and ``value_up`` into every head's
    keys and values; then the scores, the weighted sum and ``out_proj``. The names
    are those of :class:`attn_course.MultiHeadLatentAttention`, with c for
    ``kv_latent_dim`` and r for ``rope_dim``. Introduced in Chapter 11.

    Shapes
    ------
    x : (B, T, D)

    Examples
    --------
    >>> lines = diagram_text(latent_attention(torch.zeros(2, 10, 64), 4, 16, 8, 4))
    >>> "c_KV (B, T, c)" in lines and "c + r = 12 numbers" in lines
    True
    """
    x = require_tensor(x, "x")
    if x.ndim != 3:
        raise ValueError(
            f"x must have shape (B, T, D), 3-D, got shape {tuple(x.shape)}; for one "
            "sequence use x[None]"
        )
    H = require_int(num_heads, "num_heads")
    d = require_int(head_dim, "head_dim")
    c = require_int(kv_latent_dim, "kv_latent_dim")
    r = require_int(rope_dim, "rope_dim")
    B, T, D = x.shape

    def shape(name, letters, sizes):  # two lines: the boxes are narrow
        return f"{name} {_shape(letters, sizes)}".strip().replace(" = ", "\n= ")

    canvas = _Canvas(WIDTH, 8.55)
    left, right, w = 1.17, 3.43, 2.2
    top = canvas.box(
        WIDTH / 2, 8.17, "x", detail=_shape("BTD", (B, T, D)), width=2.8, height=0.62
    )
    ops = [
        canvas.box(x_, 7.25, text, kind="operation", width=w, height=0.42)
        for x_, text in ((left, "query, query_rope"), (right, "kv_down, key_rope"))
    ]
    canvas.arrow((top[0] + 0.3, top[1]), _above(ops[0]))
    canvas.arrow((top[2] - 0.3, top[1]), _above(ops[1]))
    queries = canvas.box(
        left,
        6.1,
        "queries",
        detail=shape("q", "BHTd", (B, H, T, d))
        + "\n"
        + shape("q_rope", "BHTr", (B, H, T, r)),
        width=w,
        height=1.3,
    )
    cached = canvas.box(
        right,
        6.1,
        "cached per token",
        detail=shape("c_KV", "BTc", (B, T, c))
        + "\n"
        + shape("k_rope", "B1Tr", (B, 1, T, r)),
        kind="highlight",
        width=w,
        height=1.3,
    )
    for op, box in zip(ops, (queries, cached), strict=True):
        _down(canvas, op, box)
    expand = canvas.box(
        right, 4.95, "key_up, value_up", kind="operation", width=w, height=0.42
    )
    _down(canvas, cached, expand)
    keys = canvas.box(
        right,
        4.05,
        "every head's k, v",
        detail=shape("", "BHTd", (B, H, T, d)),
        width=w,
        height=0.95,
    )
    _down(canvas, expand, keys)
    canvas.text(
        left - 0.2,
        4.3,
        f"a cache keeps\nc + r = {c + r} numbers\na token, where MHA\n"
        f"keeps 2·H·d = {2 * H * d}",
        ha="center",
        va="center",
        fontsize=FONT_SIZE - 1,
    )
    steps = [
        (
            "(q kᵀ + q_rope k_ropeᵀ) / √(d + r)",
            "weights " + _shape("BHTT", (B, H, T, T)),
        ),
        ("causal softmax, weights @ v", _shape("BHTd", (B, H, T, d))),
        ("merge the heads, out_proj", _shape("BTD", (B, T, D))),
    ]
    boxes = [
        canvas.box(WIDTH / 2, y, text, detail=detail, kind=kind, width=4.2, height=0.62)
        for y, (text, detail), kind in zip(
            (2.85, 1.85, 0.85), steps, ("operation", "operation", "tensor"), strict=True
        )
    ]
    canvas.arrow((left + 0.8, queries[1]), (left + 0.8, boxes[0][3]))
    canvas.arrow(_below(keys), (right, boxes[0][3]))
    for upper, lower in zip(boxes, boxes[1:], strict=False):
        _down(canvas, upper, lower)
    return canvas.fig


# --- Chapter 12 --------------------------------------------------------------------


def state_update(query, key, value, beta):
    """One step t of the gated delta rule on the batch ``query``, ``key``, ``value``,
    ``beta``: the step's q_t, k_t, v_t and beta_t enter, the state S of shape
    (d_v, d_k) per head is updated (highlighted: it is all the layer keeps, whatever
    the length), o_t = S_t q_t leaves; a dashed arrow carries S to step t + 1. With
    a_t = 1 it is the delta rule, with beta_t = 1 and no erasing term linear
    attention. Introduced in Chapter 12.

    Shapes
    ------
    query, key : (B, H, T, d_k)
    value : (B, H, T, d_v)
    beta : (B, H, T)

    Examples
    --------
    >>> q = k = torch.zeros(2, 4, 10, 16)
    >>> lines = diagram_text(state_update(q, k, torch.zeros(2, 4, 10, 8), q[..., 0]))
    >>> "S_t (B, H, d_v, d_k) = (2, 4, 8, 16)" in lines
    True
    """
    query = require_tensor(query, "query")
    if query.ndim != 4:
        raise ValueError(
            f"query must have shape (B, H, T, d_k), 4-D, got shape "
            f"{tuple(query.shape)}; for one head use query[None, None]"
        )
    B, H, T, d_k = query.shape
    expected = {
        "key": (key, (B, H, T, d_k)),
        "value": (value, None),
        "beta": (beta, (B, H, T)),
    }
    for name, (tensor, shape) in expected.items():
        tensor = require_tensor(tensor, name)
        if shape is not None and tuple(tensor.shape) != shape:
            raise ValueError(
                f"{name} must have shape {shape}, like query, got shape "
                f"{tuple(tensor.shape)}"
            )
    if value.ndim != 4 or tuple(value.shape[:3]) != (B, H, T):
        raise ValueError(
            f"value must have shape (B, H, T, d_v) = ({B}, {H}, {T}, d_v), got shape "
            f"{tuple(value.shape)}"
        )
    d_v = value.shape[-1]
    steps = [
        (
            f"step t of T = {T}: q_t, k_t, v_t, beta_t",
            f"q_t, k_t (B, H, d_k) = {(B, H, d_k)}\n"
            f"v_t (B, H, d_v) = {(B, H, d_v)}\nbeta_t (B, H) = {(B, H)}",
            "tensor",
            1,
        ),
        (
            "update the state",
            "S_t = a_t S_(t-1) (I − beta_t k_t k_tᵀ)\n      + beta_t v_t k_tᵀ",
            "operation",
            H,
        ),
        (
            "the state, all the layer keeps",
            f"S_t (B, H, d_v, d_k) = {(B, H, d_v, d_k)}",
            "highlight",
            H,
        ),
        ("o_t = S_t q_t", f"o_t (B, H, d_v) = {(B, H, d_v)}", "operation", H),
        (
            f"the T = {T} steps' outputs, stacked",
            f"output (B, H, T, d_v) = {(B, H, T, d_v)}",
            "tensor",
            1,
        ),
    ]
    canvas, boxes = _column(
        steps,
        _step_heights(steps),
        header=0.0,
        centre_x=2.05,
        widths=lambda kind: 3.7,
        gap=_GAP,
        fan=(0.06, 0.06),
    )
    state, update = boxes[2], boxes[1]
    side = state[2] + 0.42
    middle = (state[1] + state[3]) / 2
    canvas.ax.plot(
        [state[2] + 0.02, side, side],
        [middle, middle, (update[1] + update[3]) / 2],
        color="#333333",
        lw=1.3,
        linestyle="--",
    )
    canvas.arrow(
        (side, (update[1] + update[3]) / 2),
        (update[2] + 0.02, (update[1] + update[3]) / 2),
        dashed=True,
    )
    canvas.text(
        side + 0.08,
        (middle + update[3]) / 2,
        "to step t + 1",
        rotation=90,
        ha="left",
        va="center",
        fontsize=FONT_SIZE - 1,
        style="italic",
    )
    return canvas.fig


# The course in stages, (stage, ((chapter, title), ...)): one column each in roadmap().
COURSE = (
    (
        "One attention\nlayer",
        (
            (1, "Toy attention"),
            (2, "Trainable\nweights"),
            (3, "Causal mask"),
            (4, "Dropout"),
        ),
    ),
    (
        "The layer\nin full",
        ((5, "Multi-head"), (6, "Encoder and\ndecoder"), (7, "Positions")),
    ),
    ("Models", ((8, "A tiny GPT"), (9, "Efficient\nattention"))),
    ("Why it won", ((10, "Attention\nagainst RNNs"),)),
    (
        "Today's\nmodels",
        ((11, "The 2026\nattention layer"), (12, "Beyond\nsoftmax")),
    ),
)


def roadmap(chapter=None):
    """The course as five stages, left to right, with ``chapter`` (a number, or
    ``None`` for none) highlighted as "you are here". Introduced in Chapter 1.

    Examples
    --------
    >>> lines = diagram_text(roadmap(3))
    >>> "3  Causal mask" in lines and "you are here: Chapter 3" in lines
    True
    """
    numbers = [n for _, chapters in COURSE for n, _ in chapters]
    if chapter is not None and chapter not in numbers:
        raise ValueError(
            f"chapter must be one of {numbers[0]}..{numbers[-1]} or None, got "
            f"{chapter!r}"
        )
    column, box_height, gap = 1.3, 0.5, 0.12
    width = column * len(COURSE)
    tallest = max(len(chapters) for _, chapters in COURSE)
    title = 0.35 if chapter else 0.0
    height = title + 0.6 + tallest * (box_height + gap)
    canvas = _Canvas(width, height)
    if chapter:
        canvas.text(
            width / 2,
            height - 0.2,
            f"you are here: Chapter {chapter}",
            ha="center",
            va="center",
            weight="bold",
        )
    top = height - title - 0.25
    for i, (stage, chapters) in enumerate(COURSE):
        x = column * (i + 0.5)
        canvas.text(
            x,
            top,
            f"Stage {i + 1}\n{stage}",
            ha="center",
            va="center",
            fontsize=FONT_SIZE - 2,
            style="italic",
        )
        for j, (number, name) in enumerate(chapters):
            y = top - 0.55 - j * (box_height + gap)
            here = number == chapter
            canvas.box(
                x,
                y,
                f"{number}  {name}",
                width=column - 0.14,
                height=box_height,
                size=FONT_SIZE - 2,
                kind="highlight" if here else "operation",
            )
            if here:
                canvas.ax.patches[-1].set_linewidth(3)
    return canvas.fig
