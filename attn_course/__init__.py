"""Helper package for the course *Attention, Executed*.

The chapters build each idea by hand first; this package holds the one tested copy
that later chapters import. Shapes in docstrings use the letters of
:mod:`attn_course.shapes`.

Modules
-------
functional
    ``scaled_dot_product_attention`` written out step by step.
masks
    Causal and padding masks (convention: ``True`` means *may attend*).
modules
    The attention modules, from ``SelfAttentionV1`` to ``MultiHeadAttention`` and
    ``CrossAttention``, and ``ShapeTracer``.
translation, seq2seq
    A toy English -> German task and an encoder-decoder transformer (Chapter 6).
positions, order_task
    Sinusoidal positions, RoPE and ALiBi, and Chapter 7's order-dependent tasks.
block
    The transformer block that Chapter 6's encoder and Chapter 8's GPT share.
corpus, gpt, training
    Text, a character tokenizer, a tiny GPT and its training (Chapter 8).
efficient, kv_cache
    Online softmax, tiled attention, sliding windows and the KV cache (Chapter 9);
    tiled attention's recomputing backward pass and the paged KV cache (Chapter 11).
latent
    Multi-head latent attention, KV-cache bytes per token and the model-card table
    (Chapter 11).
modern
    RMSNorm, SwiGLU and attention with sinks: the block of 2026 models (Chapter 11).
recurrence
    Causal linear attention and the (gated) delta rule as recurrences, their
    parallel and chunked forms, and state against KV-cache sizes (Chapter 12).
recall
    Associative recall and small models with six sequence mixers (Chapter 12).
rnn, history
    GRU encoder-decoders with additive attention, and Chapter 10's timeline.
data, walkthrough, plot, diagrams, explorer
    Toy sentences, the computations behind the explorers, figures, diagrams and
    the ipywidgets apps (the only module that imports ipywidgets).
checks
    Self-checks for the exercises, one module per chapter.
numerics, shapes
    Rounding errors printed by their order; the glossary of shape letters.

The modules import only downwards, with no cycle (a test checks it): ``_validate``,
``shapes``, ``data``, ``masks``, ``translation``, ``positions``, ``order_task`` and
``kv_cache`` import nothing of the package but ``_validate``, and ``numerics``
nothing at all; ``functional`` builds on ``masks``; ``modules`` on ``functional`` and
``kv_cache``; ``walkthrough`` and ``efficient`` on ``functional``; ``modern`` on
``efficient`` and ``modules``; ``block`` on ``modern``; ``training`` and ``corpus``
on ``_validate`` only; ``seq2seq`` on ``block``, ``positions`` and ``training``;
``gpt`` on those and ``corpus``; ``plot`` draws what ``walkthrough`` computes and
``diagrams`` uses ``plot``'s figures; ``checks`` use all of these; ``history`` on
``efficient`` (its loader of stored results); ``rnn`` on ``seq2seq``; ``latent`` on
``masks``, ``positions`` and ``kv_cache``; ``recurrence`` on ``functional`` and
``kv_cache``; ``recall`` on ``recurrence`` and ``efficient``; ``explorer`` comes
last.
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
    latent,
    masks,
    modern,
    modules,
    numerics,
    order_task,
    plot,
    positions,
    recall,
    recurrence,
    rnn,
    seq2seq,
    shapes,
    training,
    translation,
    walkthrough,
)
from .data import ToySentence, hello_shiny_sun, your_journey
from .efficient import (
    online_softmax,
    saved_tensor_bytes,
    sliding_window_mask,
    tiled_attention,
)
from .functional import scaled_dot_product_attention
from .gpt import GPT, GPTConfig, generate
from .kv_cache import (
    KVCache,
    LayerCache,
    PagedKVCache,
    kv_cache_numbers,
    paged_vs_preallocated,
)
from .latent import (
    MultiHeadLatentAttention,
    format_model_card_table,
    kv_cache_bytes_per_token,
    model_card_table,
)
from .masks import (
    causal_mask,
    key_padding_to_attn_mask,
    padding_mask,
    to_additive_mask,
)
from .modern import RMSNorm, SwiGLU, attention_with_sinks, swiglu_hidden
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
from .recall import (
    RecallModel,
    RecallTask,
    recall_batch,
    recall_run,
    stored_recall_runs,
)
from .recurrence import (
    causal_linear_attention,
    delta_rule,
    hybrid_cache_bytes,
    state_numbers,
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
    "MultiHeadLatentAttention",
    "PagedKVCache",
    "RMSNorm",
    "RecallModel",
    "RecallTask",
    "SelfAttentionV1",
    "SelfAttentionV2",
    "Seq2SeqConfig",
    "Seq2SeqTransformer",
    "ShapeTracer",
    "SwiGLU",
    "ToySentence",
    "alibi_bias",
    "alibi_slopes",
    "apply_rope",
    "attention_with_sinks",
    "causal_linear_attention",
    "causal_mask",
    "block",
    "bound",
    "checks",
    "cores",
    "corpus",
    "data",
    "delta_rule",
    "diagrams",
    "efficient",
    "explorer",
    "format_model_card_table",
    "functional",
    "generate",
    "gpt",
    "hello_shiny_sun",
    "history",
    "hybrid_cache_bytes",
    "key_padding_to_attn_mask",
    "kv_cache",
    "kv_cache_bytes_per_token",
    "kv_cache_numbers",
    "latent",
    "masks",
    "model_card_table",
    "modern",
    "modules",
    "numerics",
    "online_softmax",
    "order_task",
    "padding_mask",
    "paged_vs_preallocated",
    "plot",
    "positions",
    "recall",
    "recall_batch",
    "recall_run",
    "recurrence",
    "rnn",
    "rope_permutation",
    "saved_tensor_bytes",
    "scaled_dot_product_attention",
    "seq2seq",
    "shapes",
    "training",
    "sinusoidal_positions",
    "sliding_window_mask",
    "stored_recall_runs",
    "state_numbers",
    "swiglu_hidden",
    "to_additive_mask",
    "tiled_attention",
    "translation",
    "walkthrough",
    "your_journey",
]
__version__ = "0.1.0"
