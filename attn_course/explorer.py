"""Interactive explorers of attention: small ipywidgets apps on pure computations.

:func:`attention_explorer` (Chapter 1): pick the query, turn the temperature.
:func:`mask_explorer` (Chapter 3): switch the causal mask and choose how it is
passed. The computations live in :mod:`attn_course.walkthrough`; this module draws
them and reacts to the controls. It is the only module that imports ipywidgets
(optional: ``pip install "attn-course[explorers]"``, 7.6 or newer; without it only
building an explorer fails, saying what to install). Where widgets cannot run, an
explorer shows a still picture of itself (:meth:`AttentionExplorer.still`).
Introduced in Chapter 1.
"""

from __future__ import annotations

import base64
import math

try:
    import ipywidgets as widgets
except ImportError:  # optional: the extra "explorers" of the package
    widgets = None

from matplotlib.patches import FancyBboxPatch

from ._validate import require_index, require_positive, require_tokens
from .plot import _new_figure, attention_heatmap, weight_bars
from .walkthrough import (
    MASK_CONVENTIONS,
    TEMPERATURE_HINT,
    as_embeddings,
    as_vectors,
    masked_attention,
    query_attention,
)

__all__ = [
    "AttentionExplorer",
    "MaskExplorer",
    "attention_explorer",
    "mask_explorer",
]


def _format_vector(vector):
    """Format a 1-D tensor as ``[0.4204, 0.4055, 0.8704]``."""
    return "[" + ", ".join(f"{float(v):.4f}" for v in vector) + "]"


NO_WIDGETS = (
    "the interactive explorers need ipywidgets, which is not installed in this "
    "Python: run `pip install ipywidgets` (or `pip install 'attn-course[explorers]'`; "
    "in a notebook `%pip install ipywidgets`), then restart the kernel and run the "
    "cells again"
)


def _require_widgets():
    """Raise the ``ImportError`` :data:`NO_WIDGETS` where ipywidgets is missing."""
    if widgets is None:
        raise ImportError(NO_WIDGETS, name="ipywidgets")


# The still of an explorer (:meth:`_ControlledView.still`): its width in inches, the
# height of one row of controls and of the line of text under the chart.
STILL_WIDTH = 6.4
STILL_ROW = 0.34
GREY = "#6b6b6b"  # a disabled control's text, 5.3:1 on white


def _slider_position(slider):
    """Where the knob of a slider sits, from 0 (left end) to 1 (right end)."""
    value = slider.value
    if isinstance(slider, widgets.FloatLogSlider):
        value = math.log(value, slider.base)
    span = slider.max - slider.min
    return 0.5 if span <= 0 else min(1.0, max(0.0, (value - slider.min) / span))


def _draw_control(ax, control, y, row):
    """Draw one control as JupyterLab shows it, centred on height ``y`` of ``ax`` in a
    row ``row`` high: its description, then a dropdown, a slider or a checkbox.
    """
    colour = GREY if control.disabled else "black"
    left = 0.24  # where every control starts; its description ends just before
    box = {"boxstyle": "round,pad=0,rounding_size=0.008", "linewidth": 0.8}
    ax.text(left - 0.012, y, control.description, ha="right", va="center", color=colour)
    if isinstance(control, widgets.Checkbox):
        # a square box: 0.6 of a row high, as wide in inches as it is high
        side = 0.6 * row
        width = side * STILL_ROW / row / STILL_WIDTH
        ax.add_patch(
            FancyBboxPatch(
                (left, y - side / 2), width, side, edgecolor=colour, fc="white", **box
            )
        )
        mark = "\u2713" if control.value else ""
        ax.text(left + width / 2, y, mark, ha="center", va="center", color=colour)
        state = "on" if control.value else "off"
        ax.text(left + width + 0.012, y, state, va="center", color=colour)
    elif isinstance(control, widgets.Dropdown):
        height = 0.8 * row
        ax.add_patch(
            FancyBboxPatch(
                (left, y - height / 2),
                0.74,
                height,
                edgecolor=GREY,
                fc="#f5f5f5",
                **box,
            )
        )
        ax.text(left + 0.012, y, control.label, va="center", color=colour)
        ax.text(left + 0.73, y, "\u25be", ha="right", va="center", color=colour)
    else:  # a slider
        end = left + 0.5
        knob = left + (end - left) * _slider_position(control)
        line = {"linewidth": 3, "solid_capstyle": "round"}
        ax.plot([left, end], [y, y], color="#bdbdbd", **line)
        ax.plot([left, knob], [y, y], color="#1f77b4", **line)
        ax.plot(knob, y, "o", color="white", markeredgecolor="#1f77b4", markersize=9)
        readout = format(control.value, control.readout_format)
        ax.text(end + 0.03, y, readout, va="center", color=colour)


class _ControlledView(widgets.VBox if widgets is not None else object):
    """Controls in a row above an ``Output``; any change recomputes and redraws.

    A subclass builds its controls, calls :meth:`_start` with them and implements
    :meth:`_recompute` (the new state, its figure and one line of text);
    ``chart_height`` is the chart's height in inches in :meth:`still`.
    """

    chart_height = 3.0

    def _start(self, controls, state=None):
        self.output = widgets.Output()
        self.state = state
        self.figure = None
        self.controls = tuple(controls)
        super().__init__([widgets.HBox(controls), self.output])
        for control in controls:
            control.observe(self._on_change, names="value")
        self.update()

    def _on_change(self, change):
        """Widget callback: any new value of a control triggers a redraw."""
        self.update()

    def update(self):
        """Recompute for the current controls, redraw the output in one step (no running
        kernel needed, so tests and doctests see it too) and return the new
        :attr:`state`.
        """
        self.state, self.figure, line = self._recompute()
        png, size = self.figure._repr_png_()
        picture = base64.b64encode(png).decode("ascii")
        self.output.outputs = (
            {
                "output_type": "display_data",
                "data": {"image/png": picture, "text/plain": repr(self.figure)},
                "metadata": {"image/png": size},
            },
            {"output_type": "stream", "name": "stdout", "text": line},
        )
        return self.state

    def still(self):
        """A picture of the explorer as it stands, :data:`STILL_WIDTH` inches wide: the
        controls with their values, the chart and the line of text under it.

        Examples
        --------
        >>> from attn_course.data import hello_shiny_sun
        >>> app = AttentionExplorer(*hello_shiny_sun(), query_index=1)
        >>> app.slider.value = 0.5
        >>> controls, chart, line = app.still().axes
        >>> [text.get_text() for text in controls.texts if len(text.get_text()) > 1]
        ['query', '1: shiny', 'temperature', '0.50']
        """
        rows = len(self.controls)
        fig = _new_figure(STILL_WIDTH, STILL_ROW * (rows + 1) + self.chart_height)
        top, chart, bottom = fig.subplots(
            3, 1, height_ratios=[STILL_ROW * rows, self.chart_height, STILL_ROW]
        )
        top.set(xlim=(0, 1), ylim=(0, 1))
        for number, control in enumerate(self.controls):
            _draw_control(top, control, 1 - (number + 0.5) / rows, 1 / rows)
        _, _, line = self._recompute(ax=chart)
        bottom.text(
            0, 0.5, line.strip(), va="center", family="monospace", fontsize="small"
        )
        for ax in (top, bottom):
            ax.set_axis_off()
        return fig

    def _repr_mimebundle_(self, **kwargs):
        """The live widget, plus :meth:`still` as a PNG for viewers that cannot run it
        (ipywidgets 8).
        """
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        png, size = self.still()._repr_png_()
        bundle["image/png"] = base64.b64encode(png).decode("ascii")
        return bundle, {"image/png": size}


class AttentionExplorer(_ControlledView):
    """An ipywidgets app: choose a query token and a temperature, see the weights.

    A ``VBox`` of a ``Dropdown`` (the query), a ``FloatLogSlider`` (the temperature,
    0.01 to 100) and an ``Output`` with a bar chart and the context vector. A change
    recomputes with :func:`~attn_course.walkthrough.query_attention` into
    :attr:`state` and :attr:`figure`; set ``dropdown.value`` or ``slider.value`` to use
    it without a browser. Introduced in Chapter 1.

    Shapes
    ------
    embeddings : (T, D)
    state.weights : (T,)
    state.context : (D,)

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
    >>> app
    AttentionExplorer(tokens=('Hello', 'shiny', 'sun!'), query_index=0, temperature=0.1)
    """

    def __init__(self, tokens, embeddings, *, query_index=1, temperature=1.0):
        _require_widgets()
        x = as_embeddings(embeddings).detach().clone()  # our own copy
        if tokens is None:
            raise TypeError("tokens must be a sequence of str, one per embedding row")
        self.tokens = require_tokens(tokens, x.shape[0])
        self.embeddings = x
        index = require_index(query_index, x.shape[0], "query_index", tokens=tokens)
        temperature = require_positive(
            temperature, "temperature", hint=TEMPERATURE_HINT
        )

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
        self._start([self.dropdown, self.slider])

    def __repr__(self):
        # The default widget repr would include the whole picture as base64 text.
        return (
            f"AttentionExplorer(tokens={self.tokens}, "
            f"query_index={self.dropdown.value}, temperature={self.slider.value:g})"
        )

    def _recompute(self, ax=None):
        """The state, bar chart (into ``ax`` if given) and context line for the
        current query and temperature."""
        index = self.dropdown.value
        temperature = self.slider.value
        state = query_attention(self.tokens, self.embeddings, index, temperature)
        query = self.tokens[index]
        figure = weight_bars(
            state.weights,
            self.tokens,
            title=f'query "{query}", temperature {temperature:.2f}',
            ax=ax,
        )
        line = f'context vector of "{query}": {_format_vector(state.context)}\n'
        return state, figure, line


def attention_explorer(tokens, embeddings, *, query_index=1, temperature=1.0):
    """Build an :class:`AttentionExplorer`; end a cell with it to display it.
    Introduced in Chapter 1.

    >>> from attn_course.data import your_journey
    >>> app = attention_explorer(*your_journey(), query_index=1, temperature=0.5)
    >>> app.dropdown.label, app.slider.value
    ('1: journey', 0.5)
    """
    return AttentionExplorer(
        tokens, embeddings, query_index=query_index, temperature=temperature
    )


# --- Chapter 3: causal mask explorer ---


class MaskExplorer(_ControlledView):
    """An ipywidgets app: switch the causal mask and choose how it is passed.

    A ``Checkbox`` (the mask), a ``Dropdown`` of :data:`MASK_CONVENTIONS` (disabled
    while the mask is off) and an ``Output`` with the heatmap of the weights and a line
    on the weight given to future keys and the queries that saw no key. A change
    recomputes with :func:`~attn_course.walkthrough.masked_attention` into
    :attr:`state`. ``query_vectors`` and ``key_vectors`` hold copies of the inputs
    (``keys`` is a name ipywidgets reserves). Introduced in Chapter 3.

    Shapes
    ------
    queries, keys : (T, d_k)
    state.weights : (T, T)

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
    """

    chart_height = 4.2

    def __init__(self, tokens, queries, keys, *, causal=True, convention="bool"):
        _require_widgets()
        state = masked_attention(queries, keys, causal=causal, convention=convention)
        # Our own copies. (Not self.keys: ipywidgets uses that name for traits.)
        self.query_vectors = as_vectors(queries, "queries").clone()
        self.key_vectors = as_vectors(keys, "keys").clone()
        T, T_k = self.query_vectors.shape[0], self.key_vectors.shape[0]
        if tokens is None:
            raise TypeError(
                "tokens must be a sequence of str with one token per query and key "
                "row, got None"
            )
        if T != T_k:
            raise ValueError(
                "the explorer shows self-attention: it needs one token per query and "
                f"key row, got {T} queries and {T_k} keys"
            )
        self.tokens = require_tokens(tokens, T)
        self.checkbox = widgets.Checkbox(value=bool(causal), description="causal mask")
        self.dropdown = widgets.Dropdown(
            options=[(text, key) for key, text in MASK_CONVENTIONS.items()],
            value=convention,
            description="passed as",
            disabled=not causal,
            layout=widgets.Layout(width="34em"),
        )
        self._start([self.checkbox, self.dropdown], state)

    def __repr__(self):
        return (
            f"MaskExplorer(tokens={self.tokens}, causal={self.checkbox.value}, "
            f"convention={self.dropdown.value!r})"
        )

    def _recompute(self, ax=None):
        """The state, heatmap (into ``ax`` if given) and summary line for the
        current controls."""
        causal = self.checkbox.value
        convention = self.dropdown.value
        self.dropdown.disabled = not causal
        state = masked_attention(
            self.query_vectors, self.key_vectors, causal=causal, convention=convention
        )
        title = f"causal: {MASK_CONVENTIONS[convention]}" if causal else "no mask"
        figure = attention_heatmap(state.weights, self.tokens, title=title, ax=ax)
        empty = ", ".join(self.tokens[i] for i in state.empty_rows) or "none"
        line = (
            f"weight on future keys (summed over queries): {state.future_weight:.4f}; "
            f"queries that see no key: {empty}\n"
        )
        return state, figure, line


def mask_explorer(tokens, queries, keys, *, causal=True, convention="bool"):
    """Build a :class:`MaskExplorer`; end a cell with it to display it.
    Introduced in Chapter 3.

    >>> from attn_course.data import your_journey
    >>> tokens, x = your_journey()
    >>> app = mask_explorer(tokens, x, x, convention="additive")
    >>> app.figure.axes[0].get_title()
    'causal: float mask added to the scores, 0 / -inf'
    """
    return MaskExplorer(tokens, queries, keys, causal=causal, convention=convention)
