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
plot
    Attention heatmaps and bar charts; every helper returns a ``Figure``.
explorer
    ipywidgets explorers: query choice and softmax temperature (Chapter 1), mask
    conventions (Chapter 3).
checks
    Self-checks for the exercises, one module per chapter.
"""

from . import (
    checks,
    data,
    explorer,
    functional,
    masks,
    modules,
    plot,
    seq2seq,
    translation,
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
    "to_additive_mask",
    "translation",
    "your_journey",
]
__version__ = "0.1.0"
