"""Helper package for the course *Attention, Executed*.

The chapters build each idea by hand first; this package holds the one tested copy
that later chapters import.

Modules
-------
functional
    ``scaled_dot_product_attention`` written out step by step.
masks
    Causal and padding masks (convention: ``True`` means *may attend*).
modules
    The attention modules the chapters build, from ``SelfAttentionV1`` to
    ``MultiHeadAttention`` and ``CrossAttention``, and ``ShapeTracer``.
translation
    A toy English -> German translation task generated in code (Chapter 6).
seq2seq
    A small encoder-decoder transformer, greedy decoding and training (Chapter 6).
data
    The toy sentences used throughout the course.
walkthrough
    What one query sees at a softmax temperature (Chapter 1) and what a causal mask
    lets through (Chapter 3): the pure computations behind the explorers.
plot
    Attention heatmaps and bar charts; every helper returns a ``Figure``.
explorer
    ipywidgets apps on top of ``walkthrough`` and ``plot``: query choice and
    softmax temperature (Chapter 1), mask conventions (Chapter 3). The only module
    that imports ipywidgets; nothing but this package face imports it.
checks
    Self-checks for the exercises, one module per chapter.
shapes
    The glossary of the letters every docstring's ``Shapes`` section uses.

The modules import only downwards, with no cycle (a test checks it): ``_validate``,
``shapes``, ``data``, ``masks`` and ``translation`` import nothing of the package;
``functional`` builds on ``masks``; ``modules`` and ``walkthrough`` on
``functional``; ``seq2seq`` on ``modules``; ``plot`` draws what ``walkthrough``
computes; ``checks`` use all of these; ``explorer`` comes last.
"""

from . import (
    checks,
    data,
    diagrams,
    explorer,
    functional,
    masks,
    modules,
    plot,
    seq2seq,
    shapes,
    translation,
    walkthrough,
)
from .data import ToySentence, hello_shiny_sun, your_journey
from .functional import scaled_dot_product_attention
from .masks import (
    causal_mask,
    key_padding_to_attn_mask,
    padding_mask,
    to_additive_mask,
)
from .modules import (
    CausalAttention,
    CrossAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SelfAttentionV1,
    SelfAttentionV2,
    ShapeTracer,
)
from .seq2seq import Seq2SeqConfig, Seq2SeqTransformer

__all__ = [
    "CausalAttention",
    "CrossAttention",
    "MultiHeadAttention",
    "MultiHeadAttentionWrapper",
    "SelfAttentionV1",
    "SelfAttentionV2",
    "Seq2SeqConfig",
    "Seq2SeqTransformer",
    "ShapeTracer",
    "ToySentence",
    "causal_mask",
    "checks",
    "data",
    "diagrams",
    "explorer",
    "functional",
    "hello_shiny_sun",
    "key_padding_to_attn_mask",
    "masks",
    "modules",
    "padding_mask",
    "plot",
    "scaled_dot_product_attention",
    "seq2seq",
    "shapes",
    "to_additive_mask",
    "translation",
    "walkthrough",
    "your_journey",
]
__version__ = "0.1.0"
