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
positions
    Sinusoidal positions (Chapter 6), RoPE in both pair layouts and ALiBi (Chapter 7).
order_task
    Chapter 7's order-dependent task (copy the previous token) and its training and
    per-position accuracy.
block
    The transformer block (attention and a feed-forward network, each in a
    residual, pre- or post-norm) that Chapter 6's encoder and Chapter 8's GPT share.
seq2seq
    A small encoder-decoder transformer, greedy decoding and training (Chapter 6).
corpus
    Python's own documentation as English text, a character tokenizer, training
    windows (Chapter 8).
gpt
    A decoder-only language model, ``generate`` and its training (Chapter 8).
training
    The learning-rate schedule, parameter counts and eval mode that the models of
    Chapters 6 and 8 share.
efficient
    Online softmax, tiled attention (the score matrix one tile at a time) and
    sliding-window masks (Chapter 9).
kv_cache
    The keys and values kept between the steps of generation, and their size
    (Chapter 9).
data
    The toy sentences used throughout the course.
walkthrough
    What one query sees at a softmax temperature (Chapter 1) and what a causal mask
    lets through (Chapter 3): the pure computations behind the explorers.
plot
    Attention heatmaps and bar charts; every helper returns a ``Figure``.
diagrams
    How data flows through attention, one diagram per chapter, drawn from the
    chapter's tensors (Chapters 1-10).
explorer
    ipywidgets apps on top of ``walkthrough`` and ``plot``: query choice and
    softmax temperature (Chapter 1), mask conventions (Chapter 3). The only module
    that imports ipywidgets; nothing but this package face imports it.
rnn
    GRU encoder-decoders with and without additive attention (Chapter 10).
history
    The dated events of Chapter 10's timeline and its stored step timings.
checks
    Self-checks for the exercises, one module per chapter.
numerics
    Rounding errors printed by their order, and the thread count to train with.
shapes
    The glossary of the letters every docstring's ``Shapes`` section uses.

The modules import only downwards, with no cycle (a test checks it): ``_validate``,
``shapes``, ``data``, ``masks``, ``translation``, ``positions``, ``order_task`` and
``kv_cache`` import nothing of the package but ``_validate``, and ``numerics``
nothing at all; ``functional`` builds
on ``masks``; ``modules`` on ``functional`` and ``kv_cache``; ``walkthrough`` and
``efficient`` on ``functional``; ``block`` on ``modules``; ``training`` and
``corpus`` on ``_validate`` only; ``seq2seq`` on ``block``, ``positions`` and
``training``; ``gpt`` on those and ``corpus``; ``plot`` draws what ``walkthrough``
computes and ``diagrams`` uses ``plot``'s figures; ``checks`` use all of these;
``history`` on ``efficient`` (its loader of stored results); ``rnn`` on ``seq2seq``;
``explorer`` comes last.
"""

from . import (
    block,
    checks,
    corpus,
    data,
    diagrams,
    efficient,
    explorer,
    functional,
    gpt,
    history,
    kv_cache,
    masks,
    modules,
    numerics,
    order_task,
    plot,
    positions,
    rnn,
    seq2seq,
    shapes,
    training,
    translation,
    walkthrough,
)
from .data import ToySentence, hello_shiny_sun, your_journey
from .efficient import online_softmax, sliding_window_mask, tiled_attention
from .functional import scaled_dot_product_attention
from .gpt import GPT, GPTConfig, generate
from .kv_cache import KVCache, LayerCache, kv_cache_numbers
from .masks import (
    causal_mask,
    key_padding_to_attn_mask,
    padding_mask,
    to_additive_mask,
)
from .modules import (
    CausalAttention,
    CrossAttention,
    GroupedQueryAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SelfAttentionV1,
    SelfAttentionV2,
    ShapeTracer,
)
from .numerics import bound, cores
from .positions import (
    alibi_bias,
    alibi_slopes,
    apply_rope,
    rope_permutation,
    sinusoidal_positions,
)
from .rnn import AdditiveAttention, GRUSeq2Seq
from .seq2seq import Seq2SeqConfig, Seq2SeqTransformer

__all__ = [
    "AdditiveAttention",
    "CausalAttention",
    "CrossAttention",
    "GPT",
    "GPTConfig",
    "GRUSeq2Seq",
    "GroupedQueryAttention",
    "KVCache",
    "LayerCache",
    "MultiHeadAttention",
    "MultiHeadAttentionWrapper",
    "SelfAttentionV1",
    "SelfAttentionV2",
    "Seq2SeqConfig",
    "Seq2SeqTransformer",
    "ShapeTracer",
    "ToySentence",
    "alibi_bias",
    "alibi_slopes",
    "apply_rope",
    "causal_mask",
    "block",
    "bound",
    "checks",
    "cores",
    "corpus",
    "data",
    "diagrams",
    "efficient",
    "explorer",
    "functional",
    "generate",
    "gpt",
    "hello_shiny_sun",
    "history",
    "key_padding_to_attn_mask",
    "kv_cache",
    "kv_cache_numbers",
    "masks",
    "modules",
    "numerics",
    "online_softmax",
    "order_task",
    "padding_mask",
    "plot",
    "positions",
    "rnn",
    "rope_permutation",
    "scaled_dot_product_attention",
    "seq2seq",
    "shapes",
    "training",
    "sinusoidal_positions",
    "sliding_window_mask",
    "to_additive_mask",
    "tiled_attention",
    "translation",
    "walkthrough",
    "your_journey",
]
__version__ = "0.1.0"
