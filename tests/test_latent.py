"""Multi-head latent attention, KV-cache bytes per token and the model-card table
(Chapter 11): each against a plain loop or the formula written out here."""

import math

import pytest
import torch

from attn_course import (
    LayerCache,
    MultiHeadLatentAttention,
    kv_cache_bytes_per_token,
    model_card_table,
)
from attn_course.latent import MODEL_CARDS, format_model_card_table

CONFIGS = [  # d_model, num_heads, head_dim, kv_latent_dim, rope_dim
    (16, 4, 8, 6, 2),
    (12, 3, 4, 20, 4),  # a latent wider than all heads' keys together
    (8, 1, 6, 3, 2),
]


def _mla(config, seed=0):
    torch.manual_seed(seed)
    return MultiHeadLatentAttention(*config).double()


def _rotate(vector, position, base=10000.0):
    """RoPE on one vector, pairing feature i with i + n/2, angle written out."""
    half = vector.numel() // 2
    out = vector.clone()
    for i in range(half):
        angle = position * base ** (-2 * i / vector.numel())
        a, b = vector[i], vector[i + half]
        out[i] = a * math.cos(angle) - b * math.sin(angle)
        out[i + half] = a * math.sin(angle) + b * math.cos(angle)
    return out


def _loop_reference(mla, x):
    """Per sequence, head and query: scores over keys 0..t, an explicit softmax."""
    H, d, r = mla.num_heads, mla.head_dim, mla.rope_dim
    W = {name: getattr(mla, name).weight for name in ("query", "query_rope")}
    out = torch.zeros_like(x)
    for b in range(x.size(0)):
        latent = [mla.kv_down.weight @ token for token in x[b]]
        k_rope = [_rotate(mla.key_rope.weight @ tok, s) for s, tok in enumerate(x[b])]
        for t in range(x.size(1)):
            heads = []
            for h in range(H):
                rows = slice(h * d, (h + 1) * d)
                q = W["query"][rows] @ x[b, t]
                q_rope = _rotate(W["query_rope"][h * r : (h + 1) * r] @ x[b, t], t)
                keys = [mla.key_up.weight[rows] @ latent[s] for s in range(t + 1)]
                scores = torch.stack(
                    [q @ k + q_rope @ k_rope[s] for s, k in enumerate(keys)]
                ) / math.sqrt(d + r)
                e = torch.exp(scores - scores.max())
                weights = e / e.sum()
                values = [mla.value_up.weight[rows] @ latent[s] for s in range(t + 1)]
                heads.append(sum(w * v for w, v in zip(weights, values, strict=True)))
            out[b, t] = mla.out_proj.weight @ torch.cat(heads)
    return out


@pytest.mark.parametrize("config", CONFIGS)
def test_the_absorbed_form_equals_the_plain_form(config):
    mla = _mla(config)
    x = torch.randn(2, 7, config[0], dtype=torch.float64)
    # The same sums in another order (W_uk multiplied into the query first):
    # float64 rounding, about 1e-16 per operation, is all that may differ.
    torch.testing.assert_close(mla(x, absorb=True), mla(x), atol=1e-12, rtol=1e-10)


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("absorb", [False, True])
def test_both_forms_equal_a_plain_loop_over_heads_queries_and_keys(config, absorb):
    mla = _mla(config, seed=1)
    x = torch.randn(2, 5, config[0], dtype=torch.float64)
    with torch.no_grad():
        expected = _loop_reference(mla, x)
        got = mla(x, absorb=absorb)
    # float64 throughout; the loop sums in yet another order: rounding only.
    torch.testing.assert_close(got, expected, atol=1e-12, rtol=1e-10)


@pytest.mark.parametrize("absorb", [False, True])
def test_a_later_token_does_not_change_an_earlier_output(absorb):
    mla = _mla(CONFIGS[0], seed=2)
    x = torch.randn(1, 6, 16, dtype=torch.float64)
    changed = x.clone()
    changed[:, 3] += 1.0
    before, after = mla(x, absorb=absorb), mla(changed, absorb=absorb)
    # Masked keys add exact zeros to the softmax: the first three rows are bitwise
    # equal, from row 3 on they see the change.
    torch.testing.assert_close(after[:, :3], before[:, :3], atol=0, rtol=0)
    assert not torch.allclose(after[:, 3:], before[:, 3:])


def test_the_cache_keeps_the_latent_and_the_shared_rotated_key():
    mla = MultiHeadLatentAttention(16, 4, 8, kv_latent_dim=6, rope_dim=2)
    assert mla.numbers_per_token == mla.kv_down.out_features + mla.key_rope.out_features
    assert mla.numbers_per_token == kv_cache_bytes_per_token(
        kv_latent_dim=6, rope_dim=2, bytes_per_number=1
    )


def test_bad_arguments_get_errors_that_name_them():
    with pytest.raises(TypeError, match=r"num_heads must be an int, got float 4\.0"):
        MultiHeadLatentAttention(16, 4.0, 8, 6, 2)
    with pytest.raises(ValueError, match="rope_dim=3 must be even"):
        MultiHeadLatentAttention(16, 4, 8, 6, 3)
    mla = MultiHeadLatentAttention(16, 4, 8, 6, 2)
    with pytest.raises(ValueError, match=r"d_model=16\), got \(1, 5, 12\)"):
        mla(torch.randn(1, 5, 12))
    with pytest.raises(TypeError, match="x must be floating point"):
        mla(torch.ones(1, 5, 16, dtype=torch.long))
    with pytest.raises(TypeError, match="absorb must be True or False"):
        mla(torch.randn(1, 5, 16), absorb="yes")


# --- KV-cache bytes per token


@pytest.mark.parametrize("num_kv_heads, head_dim", [(8, 128), (1, 64), (4, 24)])
def test_grouped_query_bytes_are_what_a_one_token_cache_holds(num_kv_heads, head_dim):
    layer = LayerCache()
    k = torch.zeros(1, num_kv_heads, 1, head_dim, dtype=torch.bfloat16)
    layer.append(k, k)  # one token, (B, H_kv, T_new, d)
    got = kv_cache_bytes_per_token(num_kv_heads=num_kv_heads, head_dim=head_dim)
    assert got == layer.nbytes() == 2 * num_kv_heads * head_dim * 2
    model = kv_cache_bytes_per_token(
        num_layers=3, num_kv_heads=num_kv_heads, head_dim=head_dim, bytes_per_number=4
    )
    assert model == 3 * 2 * num_kv_heads * head_dim * 4


def test_latent_bytes_count_the_latent_and_the_rope_key():
    got = kv_cache_bytes_per_token(num_layers=5, kv_latent_dim=10, rope_dim=4)
    assert got == 5 * (10 + 4) * 2


def test_deepseek_v3_keeps_576_numbers_where_llama_3_70b_keeps_2048():
    # Published values (DeepSeek-AI 2024, section 4.2; Llama Team 2024, Table 3).
    deepseek = kv_cache_bytes_per_token(
        kv_latent_dim=512, rope_dim=64, bytes_per_number=1
    )
    llama = kv_cache_bytes_per_token(num_kv_heads=8, head_dim=128, bytes_per_number=1)
    assert (deepseek, llama) == (512 + 64, 8 * 128 * 2) == (576, 2048)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_kv_heads": 8, "kv_latent_dim": 512}, "one pair exactly"),
        ({"num_kv_heads": 8}, r"got \{'num_kv_heads': 8\}"),
        ({}, "got neither pair"),
        ({"num_kv_heads": 8, "head_dim": 128, "rope_dim": 64}, "one pair exactly"),
    ],
)
def test_cache_bytes_want_exactly_one_pair_of_sizes(kwargs, message):
    with pytest.raises(ValueError, match=message):
        kv_cache_bytes_per_token(**kwargs)


def test_cache_bytes_sizes_are_ints():
    with pytest.raises(TypeError, match="head_dim must be an int"):
        kv_cache_bytes_per_token(num_kv_heads=8, head_dim=128.0)
    with pytest.raises(TypeError, match="num_layers must be an int"):
        kv_cache_bytes_per_token(num_layers="61", kv_latent_dim=512, rope_dim=64)


# --- The model-card table


def _sliding_layers(card):
    pattern = card.get("layer_pattern", ("full",))
    return [
        i for i in range(card["num_layers"]) if pattern[i % len(pattern)] == "sliding"
    ]


@pytest.mark.parametrize("tokens", [100, 4096, 131_072])
def test_the_rows_follow_the_formulas_from_the_stored_configurations(tokens):
    rows = model_card_table(tokens=tokens)
    assert [row["model"] for row in rows] == [card["model"] for card in MODEL_CARDS]
    for card, row in zip(MODEL_CARDS, rows, strict=True):
        if card["attention"] == "MLA":
            numbers = card["kv_latent_dim"] + card["rope_dim"]
        else:
            numbers = 2 * card["num_kv_heads"] * card["head_dim"]
        sliding = len(_sliding_layers(card))
        full = card["num_layers"] - sliding
        window = card.get("window", tokens)
        assert row["numbers"] == numbers
        assert row["bytes_per_token"] == numbers * card["num_layers"] * 2
        per_layer = [min(tokens, window)] * sliding + [tokens] * full
        assert row["cache_bytes"] == sum(per_layer) * numbers * 2
        assert card["source"]


def test_the_published_layer_patterns():
    cards = {card["model"]: card for card in MODEL_CARDS}
    # gpt-oss: a window on the even layers (gpt_oss/torch/model.py, AttentionBlock)
    assert _sliding_layers(cards["gpt-oss-120b"]) == list(range(0, 36, 2))
    # Gemma 3: five local layers, then a global one (layers 5, 11, ..., 59)
    gemma = cards["Gemma 3 27B"]
    assert set(range(62)) - set(_sliding_layers(gemma)) == set(range(5, 62, 6))


def test_windowed_layers_cap_the_cache_of_a_long_sequence():
    gemma = next(card for card in MODEL_CARDS if card["model"] == "Gemma 3 27B")
    all_global = dict(gemma, layer_pattern=("full",))

    def caches(tokens):
        return [
            model_card_table(tokens=tokens, cards=[card])[0]["cache_bytes"]
            for card in (gemma, all_global)
        ]

    # Up to the window a sliding layer keeps every token ...
    local, plain = caches(gemma["window"])
    assert local == plain
    # ... far beyond it only the 10 global layers of 62 grow.
    local, plain = caches(131_072)
    assert 10 / 62 < local / plain < 10.5 / 62


def test_the_table_prints_one_aligned_line_per_model():
    rows = model_card_table(tokens=8192)
    lines = format_model_card_table(rows).splitlines()
    assert len(lines) == len(rows) + 1
    column = lines[0].index("heads")
    for line, row in zip(lines[1:], rows, strict=True):
        assert line.index(row["heads"]) == column
    assert "576" in lines[1] and "2048" in lines[-1]
