"""Helper package for the course *Attention, Executed*.

The chapters build each idea by hand first; this package holds the one tested copy
that later chapters import.

Modules
-------
functional
    ``scaled_dot_product_attention`` written out step by step.
masks
    Causal and padding masks (convention: ``True`` means *may attend*).
data
    The toy sentences used throughout the course.
plot
    Attention heatmaps and bar charts; every helper returns a ``Figure``.
explorer
    An ipywidgets explorer of query choice and softmax temperature.
checks
    Self-checks for the exercises.
"""

from . import checks, data, explorer, functional, masks, plot
from .data import ToySentence, hello_shiny_sun, your_journey
from .functional import scaled_dot_product_attention
from .masks import (
    causal_mask,
    key_padding_to_attn_mask,
    padding_mask,
    to_additive_mask,
)

__all__ = [
    "ToySentence",
    "causal_mask",
    "checks",
    "data",
    "explorer",
    "functional",
    "hello_shiny_sun",
    "key_padding_to_attn_mask",
    "masks",
    "padding_mask",
    "plot",
    "scaled_dot_product_attention",
    "to_additive_mask",
    "your_journey",
]
__version__ = "0.1.0"
