"""Multi-head latent attention, the KV-cache bytes of one token, and a table of
published model configurations (Chapter 11).

:class:`MultiHeadLatentAttention` caches one latent vector and one small rotated key
per token instead of every head's keys and values; :func:`kv_cache_bytes_per_token`
counts what a token costs in the cache of grouped-query and of latent attention;
:func:`model_card_table` applies it to the configurations in :data:`MODEL_CARDS`.

Shapes
------
x : (B, T, D) -> (B, T, D)
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ._validate import (
    describe_call,
    require_flag,
    require_floating,
    require_int,
    require_tensor,
)
from .kv_cache import kv_cache_numbers
from .masks import causal_mask
from .positions import apply_rope

__all__ = [
    "MODEL_CARDS",
    "MultiHeadLatentAttention",
    "format_model_card_table",
    "kv_cache_bytes_per_token",
    "model_card_table",
]


class MultiHeadLatentAttention(nn.Module):
    """Causal multi-head latent attention (MLA), as in DeepSeek-V2 (DeepSeek-AI 2024,
    section 2.1), without its compression of the queries.

    ``kv_down`` maps each token to a latent ``c_KV`` of ``kv_latent_dim`` numbers;
    ``key_up`` and ``value_up`` expand it into every head's keys and values.
    Position enters through a decoupled part: ``query_rope`` gives each head
    ``rope_dim`` more query features and ``key_rope`` one key of ``rope_dim``
    features that all heads share, both rotated by :func:`attn_course.apply_rope`. A
    head's score is ``(q . k + q_rope . k_rope) / sqrt(head_dim + rope_dim)``.
    A cache keeps ``c_KV`` and the rotated shared key, :attr:`numbers_per_token`
    per token. DeepSeek's models also normalise ``c_KV`` (RMSNorm); left out here.

    ``absorb=True`` never builds the per-head keys and values: ``key_up`` is folded
    into the query (per head, ``q @ W_uk`` is a query in latent space, scored
    against ``c_KV`` directly) and ``value_up`` is applied after the weighted sum of
    latents. The output is the same. Introduced in Chapter 11.

    Shapes
    ------
    x : (B, T, D) -> (B, T, D)

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> mla = MultiHeadLatentAttention(16, 4, 8, kv_latent_dim=6, rope_dim=2)
    >>> x = torch.randn(1, 5, 16)
    >>> torch.allclose(mla(x), mla(x, absorb=True), atol=1e-6)
    True
    >>> mla.numbers_per_token, 2 * 4 * 8  # cached per token: MLA, MHA
    (8, 64)
    """

    def __init__(self, d_model, num_heads, head_dim, kv_latent_dim, rope_dim):
        super().__init__()
        args = {
            "d_model": d_model,
            "num_heads": num_heads,
            "head_dim": head_dim,
            "kv_latent_dim": kv_latent_dim,
            "rope_dim": rope_dim,
        }
        called_as = describe_call(type(self).__name__, args)
        n = {k: require_int(v, k, called_as=called_as) for k, v in args.items()}
        if n["rope_dim"] % 2:
            raise ValueError(
                f"rope_dim={rope_dim} must be even: RoPE rotates features in pairs; "
                f"use e.g. rope_dim={rope_dim + 1}"
            )
        self.d_model, self.num_heads, self.head_dim = d_model, num_heads, head_dim
        self.kv_latent_dim, self.rope_dim = kv_latent_dim, rope_dim
        width = num_heads * head_dim
        self.query = nn.Linear(d_model, width, bias=False)
        self.query_rope = nn.Linear(d_model, num_heads * rope_dim, bias=False)
        self.kv_down = nn.Linear(d_model, kv_latent_dim, bias=False)
        self.key_rope = nn.Linear(d_model, rope_dim, bias=False)
        self.key_up = nn.Linear(kv_latent_dim, width, bias=False)
        self.value_up = nn.Linear(kv_latent_dim, width, bias=False)
        self.out_proj = nn.Linear(width, d_model, bias=False)

    @property
    def numbers_per_token(self):
        """The numbers a KV cache keeps per token in this layer: the latent and the
        shared rotated key, ``kv_latent_dim + rope_dim``."""
        return self.kv_latent_dim + self.rope_dim

    def forward(self, x, *, absorb=False):
        require_floating(require_tensor(x, "x"), "x")
        if x.dim() != 3 or x.size(-1) != self.d_model:
            raise ValueError(
                f"x must have shape (B, T, d_model={self.d_model}), got "
                f"{tuple(x.shape)}; for one sequence use x.unsqueeze(0)"
            )
        require_flag(absorb, "absorb", hint="True folds key_up into the queries")
        B, T, _ = x.shape
        H, d, r = self.num_heads, self.head_dim, self.rope_dim
        q = self.query(x).view(B, T, H, d).transpose(1, 2)  # (B, H, T, d)
        q_rope = apply_rope(self.query_rope(x).view(B, T, H, r).transpose(1, 2))
        latent = self.kv_down(x)  # (B, T, kv_latent_dim): c_KV, what a cache keeps
        k_rope = apply_rope(self.key_rope(x)).unsqueeze(1)  # (B, 1, T, r): shared
        if not absorb:
            k = self.key_up(latent).view(B, T, H, d).transpose(1, 2)  # (B, H, T, d)
            v = self.value_up(latent).view(B, T, H, d).transpose(1, 2)
            k = torch.cat([k, k_rope.expand(B, H, T, r)], dim=-1)  # (B, H, T, d + r)
            # The default scale is 1 / sqrt(d + r), the width of the joined features.
            context = F.scaled_dot_product_attention(
                torch.cat([q, q_rope], dim=-1), k, v, is_causal=True
            )  # (B, H, T, d)
        else:
            w_uk = self.key_up.weight.view(H, d, -1)  # (H, d, kv_latent_dim)
            w_uv = self.value_up.weight.view(H, d, -1)
            q_latent = q @ w_uk  # (B, H, T, d) @ (H, d, c) -> (B, H, T, c)
            scores = q_latent @ latent.unsqueeze(1).transpose(-2, -1)  # (B, H, T, T)
            scores = (scores + q_rope @ k_rope.transpose(-2, -1)) / math.sqrt(d + r)
            keep = causal_mask(T, device=x.device)
            weights = scores.masked_fill(~keep, float("-inf")).softmax(dim=-1)
            context = (weights @ latent.unsqueeze(1)) @ w_uv.transpose(-2, -1)
        return self.out_proj(context.transpose(1, 2).reshape(B, T, H * d))


def kv_cache_bytes_per_token(
    *,
    num_layers=1,
    num_kv_heads=None,
    head_dim=None,
    kv_latent_dim=None,
    rope_dim=None,
    bytes_per_number=2,
):
    """The bytes of KV cache one token costs in ``num_layers`` layers (one layer by
    default).

    Grouped-query attention (``num_kv_heads``, ``head_dim``; multi-head attention
    when ``num_kv_heads`` equals the query heads, multi-query when it is 1) keeps
    ``2 * num_kv_heads * head_dim`` numbers per layer; latent attention
    (``kv_latent_dim``, ``rope_dim``) keeps ``kv_latent_dim + rope_dim``. Pass one
    pair. ``bytes_per_number`` is 2 for bfloat16; 1 counts numbers instead of bytes.
    Introduced in Chapter 11.

    Examples
    --------
    >>> kv_cache_bytes_per_token(kv_latent_dim=512, rope_dim=64, bytes_per_number=1)
    576
    >>> kv_cache_bytes_per_token(num_kv_heads=8, head_dim=128, bytes_per_number=1)
    2048
    """
    grouped = {"num_kv_heads": num_kv_heads, "head_dim": head_dim}
    latent = {"kv_latent_dim": kv_latent_dim, "rope_dim": rope_dim}
    given = {k: v for k, v in {**grouped, **latent}.items() if v is not None}
    usage = (
        "pass num_kv_heads and head_dim (multi-head, grouped-query or multi-query "
        "attention) or kv_latent_dim and rope_dim (latent attention)"
    )
    if given.keys() not in (grouped.keys(), latent.keys()):
        raise ValueError(f"got {given or 'neither pair'}; {usage}, one pair exactly")
    layers = require_int(num_layers, "num_layers")
    width = require_int(bytes_per_number, "bytes_per_number", hint="2 for bfloat16")
    sizes = {k: require_int(v, k) for k, v in given.items()}
    if "head_dim" in sizes:
        numbers = kv_cache_numbers(layers, tokens=1, **sizes)
    else:
        numbers = layers * (sizes["kv_latent_dim"] + sizes["rope_dim"])
    return numbers * width


MODEL_CARDS = (
    {
        "model": "DeepSeek-V3",
        "attention": "MLA",
        "num_layers": 61,
        "num_heads": 128,
        "kv_latent_dim": 512,  # kv_lora_rank
        "rope_dim": 64,  # qk_rope_head_dim
        "head_dim": 128,  # qk_nope_head_dim and v_head_dim
        "source": "DeepSeek-AI 2024, arXiv:2412.19437, section 4.2; "
        "github.com/deepseek-ai/DeepSeek-V3 inference/configs/config_671B.json",
    },
    {
        "model": "gpt-oss-120b",
        "attention": "GQA",
        "num_layers": 36,
        "num_heads": 64,
        "num_kv_heads": 8,
        "head_dim": 64,
        "window": 128,
        "layer_pattern": ("sliding", "full"),  # layer i: pattern[i % 2]
        "sinks": True,
        "source": "OpenAI 2025, arXiv:2508.10925; github.com/openai/gpt-oss "
        "gpt_oss/torch/model.py (ModelConfig, AttentionBlock)",
    },
    {
        "model": "Gemma 3 27B",
        "attention": "GQA",
        "num_layers": 62,
        "num_heads": 32,
        "num_kv_heads": 16,
        "head_dim": 128,
        "window": 1024,
        "layer_pattern": ("sliding",) * 5 + ("full",),
        "qk_norm": True,
        "source": "Gemma Team 2025, arXiv:2503.19786; github.com/google/gemma_pytorch "
        "gemma/config.py (get_config_for_27b_v3)",
    },
    {
        "model": "Llama 3 70B",
        "attention": "GQA",
        "num_layers": 80,
        "num_heads": 64,
        "num_kv_heads": 8,
        "head_dim": 128,  # model width 8192 / 64 heads
        "source": "Llama Team 2024, arXiv:2407.21783, Table 3",
    },
)
"""Published attention configurations of four open models, each with its source.

``layer_pattern`` repeats over the layers: a ``"sliding"`` layer attends to (and
caches) at most the last ``window`` tokens. Introduced in Chapter 11.
"""


def _windowed_layers(card):
    pattern = card.get("layer_pattern", ("full",))
    layers = range(card["num_layers"])
    return sum(pattern[i % len(pattern)] == "sliding" for i in layers)


_FEATURES = (("sinks", "sinks"), ("qk_norm", "QK-norm"))


def model_card_table(*, tokens, bytes_per_number=2, cards=MODEL_CARDS):
    """One row per model of ``cards``: its attention, heads and KV-cache size.

    Each row holds ``model``, ``attention`` (kind and features; ``window 128 on
    18/36``: 18 of the 36 layers attend to the last 128 tokens only), ``heads``
    (``"query/kv"``; MLA's keys and values come from one latent), ``numbers`` (per
    token per layer), ``bytes_per_token`` (whole model) and ``cache_bytes``: one
    sequence of ``tokens`` tokens, where a sliding layer keeps at most its window.
    Introduced in Chapter 11.

    Examples
    --------
    >>> rows = model_card_table(tokens=4096)
    >>> [(row["model"], row["numbers"]) for row in rows[::3]]
    [('DeepSeek-V3', 576), ('Llama 3 70B', 2048)]
    """
    tokens = require_int(tokens, "tokens", hint="the length of one sequence")
    width = require_int(bytes_per_number, "bytes_per_number", hint="2 for bfloat16")
    rows = []
    for card in cards:
        if card["attention"] == "MLA":
            pair = {k: card[k] for k in ("kv_latent_dim", "rope_dim")}
            heads = f"{card['num_heads']}/latent"
        else:
            pair = {k: card[k] for k in ("num_kv_heads", "head_dim")}
            heads = f"{card['num_heads']}/{card['num_kv_heads']}"
        numbers = kv_cache_bytes_per_token(**pair, bytes_per_number=1)
        windowed = _windowed_layers(card)
        features = [card["attention"]]
        if windowed:
            features.append(
                f"window {card['window']} on {windowed}/{card['num_layers']}"
            )
        features += [name for key, name in _FEATURES if card.get(key)]
        kept = windowed * min(tokens, card.get("window", tokens))
        kept += (card["num_layers"] - windowed) * tokens  # token-layers in the cache
        rows.append(
            {
                "model": card["model"],
                "attention": ", ".join(features),
                "heads": heads,
                "numbers": numbers,
                "bytes_per_token": numbers * card["num_layers"] * width,
                "cache_bytes": numbers * kept * width,
            }
        )
    return rows


def format_model_card_table(rows):
    """The rows of :func:`model_card_table` as an aligned text table: numbers per
    token per layer, KiB per token, GiB per sequence. Introduced in Chapter 11.

    >>> print(format_model_card_table(model_card_table(tokens=1024)[:1]))
    model        attention  heads       numbers  KiB/tok  GiB/seq
    DeepSeek-V3  MLA        128/latent  576      68.6     0.07
    """
    header = ("model", "attention", "heads", "numbers", "KiB/tok")
    table = [(*header, "GiB/seq")]
    for row in rows:
        table.append(
            (
                row["model"],
                row["attention"],
                row["heads"],
                str(row["numbers"]),
                f"{row['bytes_per_token'] / 2**10:.1f}",
                f"{row['cache_bytes'] / 2**30:.2f}",
            )
        )
    widths = [max(len(line[i]) for line in table) for i in range(len(header) + 1)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        for line in table
    )
