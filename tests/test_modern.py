"""``attn_course.modern``: RMSNorm against ``torch.nn.RMSNorm``, SwiGLU against its
formula, attention with sinks against the softmax with an extra column written out."""

import math
import re
from dataclasses import asdict
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attn_course import (
    GPT,
    GPTConfig,
    MultiHeadAttention,
    RMSNorm,
    SwiGLU,
    attention_with_sinks,
    causal_mask,
    generate,
    scaled_dot_product_attention,
    sliding_window_mask,
    swiglu_hidden,
)
from attn_course.block import FeedForward, TransformerBlock
from attn_course.gpt import stored_modern_runs
from attn_course.training import count_parameters


@pytest.mark.parametrize(
    ("dtype", "tol"),
    [
        # Same formula, different order of operations: float64 rounding only.
        (torch.float64, 1e-12),
        # float32: a few ulps of outputs of order 1 (rsqrt against 1 / sqrt, and a
        # mean summed in another order), 1.2e-7 each.
        (torch.float32, 1e-6),
    ],
)
@pytest.mark.parametrize("eps", [1e-6, 1e-2])
def test_rmsnorm_equals_torchs(dtype, tol, eps):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(3, 5, 16, generator=gen, dtype=dtype)
    ours = RMSNorm(16, eps=eps).to(dtype)
    with torch.no_grad():
        ours.weight.copy_(torch.randn(16, generator=gen))
    theirs = nn.RMSNorm(16, eps=eps).to(dtype)
    theirs.load_state_dict(ours.state_dict())
    torch.testing.assert_close(ours(x), theirs(x), atol=tol, rtol=tol)


def test_rmsnorm_starts_with_a_weight_of_ones_and_checks_its_arguments():
    assert torch.equal(RMSNorm(4).weight, torch.ones(4))
    with pytest.raises(TypeError, match="d must be an int, got float"):
        RMSNorm(4.0)
    with pytest.raises(ValueError, match="eps must be a positive finite number"):
        RMSNorm(4, eps=0)


def test_swiglu_equals_its_formula_written_with_functional():
    torch.manual_seed(0)
    D, h = 8, 24
    ff = SwiGLU(D, h).double()
    x = torch.randn(2, 5, D, dtype=torch.float64)
    gate = F.linear(x, ff.gate_proj.weight)
    up = F.linear(x, ff.up_proj.weight)
    expected = F.linear(gate * torch.sigmoid(gate) * up, ff.down_proj.weight)
    # SiLU is x * sigmoid(x); float64 rounding only.
    torch.testing.assert_close(ff(x), expected, atol=1e-12, rtol=1e-12)
    assert [name for name, _ in ff.named_parameters()] == [
        "gate_proj.weight",
        "up_proj.weight",
        "down_proj.weight",
    ]


@pytest.mark.parametrize("D", [8, 64, 96, 768])
def test_swiglu_hidden_matches_a_gelu_networks_weights(D):
    h = swiglu_hidden(4 * D)
    gelu_weights, swiglu_weights = 2 * D * 4 * D, 3 * D * h
    assert h % 8 == 0
    # At least as many weights, and fewer than one more multiple of 8 adds.
    assert 0 <= swiglu_weights - gelu_weights < 3 * D * 8


def test_swiglu_hidden_rounds_up_to_the_multiple():
    assert swiglu_hidden(12, multiple_of=1) == 8
    assert swiglu_hidden(12, multiple_of=3) == 9
    with pytest.raises(TypeError, match="d_ff must be an int"):
        swiglu_hidden(4.5)


# --- attention with sinks


def reference_with_sinks(query, key, value, sink_logits, allowed):
    """The masked scores written out, a column of sinks, softmax, drop the column."""
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    scores = scores.masked_fill(~allowed, float("-inf"))
    B, H, T_q, _ = scores.shape
    column = sink_logits.view(1, H, 1, 1).expand(B, H, T_q, 1)
    weights = torch.softmax(torch.cat([scores, column], dim=-1), dim=-1)[..., :-1]
    return weights @ value, weights


def qkv(T_q=5, T_k=5, H=3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    shapes = [(2, H, T_q, 4), (2, H, T_k, 4), (2, H, T_k, 6)]
    return [torch.randn(s, generator=gen, dtype=torch.float64) for s in shapes]


@pytest.mark.parametrize("mask", ["none", "causal", "bool"])
def test_attention_with_sinks_equals_the_softmax_with_an_extra_column(mask):
    query, key, value = qkv(T_q=4, T_k=6)
    sinks = torch.tensor([-1.0, 0.5, 2.0], dtype=torch.float64)
    allowed = torch.ones(4, 6, dtype=torch.bool)
    given = {}
    if mask == "causal":
        allowed = causal_mask(4, 6)
        given = {"is_causal": True}
    elif mask == "bool":
        allowed = torch.rand(2, 1, 4, 6, generator=torch.Generator().manual_seed(1))
        allowed = allowed > 0.4
        given = {"attn_mask": allowed}
    out, weights = attention_with_sinks(
        query, key, value, sinks, return_weights=True, **given
    )
    expected_out, expected_weights = reference_with_sinks(
        query, key, value, sinks, allowed
    )
    # float64, the same operations in another grouping: rounding only.
    torch.testing.assert_close(weights, expected_weights, atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(out, expected_out, atol=1e-12, rtol=1e-12)
    assert (weights.sum(dim=-1) < 1).all()


def test_a_very_negative_sink_is_plain_attention():
    query, key, value = qkv()
    sinks = torch.full((3,), -1e4, dtype=torch.float64)  # exp(-1e4) underflows to 0
    torch.testing.assert_close(
        attention_with_sinks(query, key, value, sinks, is_causal=True),
        scaled_dot_product_attention(query, key, value, is_causal=True),
        atol=1e-12,
        rtol=1e-12,
    )


def test_a_query_with_every_key_masked_reads_zeros_not_nan():
    query, key, value = qkv()
    blocked = torch.zeros(5, 5, dtype=torch.bool)
    blocked[1:] = True
    out = attention_with_sinks(query, key, value, torch.zeros(3), attn_mask=blocked)
    assert torch.equal(out[:, :, 0], torch.zeros_like(out[:, :, 0]))
    assert not out.isnan().any()


def test_the_sink_logits_get_gradients():
    query, key, value = qkv()
    sinks = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    attention_with_sinks(query, key, value, sinks).square().sum().backward()
    assert sinks.grad is not None and (sinks.grad != 0).all()


def test_attention_with_sinks_errors():
    query, key, value = qkv()
    with pytest.raises(ValueError, match=r"shape \(H,\) = \(3,\).*got shape \(2,\)"):
        attention_with_sinks(query, key, value, torch.zeros(2))
    with pytest.raises(TypeError, match="sink_logits must be a torch.Tensor"):
        attention_with_sinks(query, key, value, [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="query needs a head dimension"):
        attention_with_sinks(query[0, 0], key[0, 0], value[0, 0], torch.zeros(1))
    with pytest.raises(ValueError, match="both attn_mask and is_causal"):
        attention_with_sinks(
            query, key, value, torch.zeros(3), is_causal=True, attn_mask=causal_mask(5)
        )


# --- the swaps in Chapter 8's GPT


def gpt(seed=0, **changes):
    torch.manual_seed(seed)
    sizes = dict(vocab_size=11, context_length=12, d_model=16, num_heads=2)
    return GPT(GPTConfig(**sizes, num_layers=2, **changes)).eval()


CHAPTER_8 = dict(
    norm="layer",
    feed_forward="gelu",
    bias=True,
    qk_norm=False,
    sinks=False,
    window=None,
    global_every=None,
)


def test_the_defaults_build_chapter_8s_gpt():
    model = gpt()
    assert gpt(**CHAPTER_8).config == model.config
    for block in model.blocks:
        assert type(block.self_attn) is MultiHeadAttention
        assert type(block.norm1) is nn.LayerNorm and block.norm1.bias is not None
        assert type(block.feed_forward) is FeedForward
    assert type(model.final_norm) is nn.LayerNorm
    # Chapter 8's parameter names, in Chapter 8's order, per block.
    assert [n for n, _ in model.blocks[0].named_parameters()] == [
        f"{module}.{kind}"
        for module in (
            "norm1",
            "self_attn.W_query",
            "self_attn.W_key",
            "self_attn.W_value",
            "self_attn.out_proj",
            "norm2",
            "feed_forward.net.0",
            "feed_forward.net.3",
        )
        for kind in ("weight", "bias")
        if kind == "weight" or "W_" not in module
    ]


def test_rms_swaps_every_norm():
    model = gpt(norm="rms")
    norms = [m for m in model.modules() if isinstance(m, RMSNorm | nn.LayerNorm)]
    assert len(norms) == 2 * 2 + 1
    assert all(type(m) is RMSNorm for m in norms)


def test_swiglu_has_about_the_gelu_models_parameters():
    sizes = dict(vocab_size=65, context_length=64, d_model=64, num_heads=4)
    counts = {
        ff: count_parameters(GPT(GPTConfig(**sizes, feed_forward=ff)))
        for ff in ("gelu", "swiglu")
    }
    assert abs(counts["swiglu"] / counts["gelu"] - 1) < 0.02
    block = gpt(feed_forward="swiglu").blocks[0]
    assert block.feed_forward.up_proj.out_features == swiglu_hidden(4 * 16)


def test_no_bias_leaves_no_bias():
    model = gpt(bias=False, norm="layer")
    assert not [n for n, _ in model.named_parameters() if n.endswith("bias")]
    assert [n for n, _ in gpt().named_parameters() if n.endswith("bias")]


@pytest.mark.parametrize("qk_norm", [True, False])
def test_qk_norm_makes_the_scores_blind_to_the_scale_of_queries_and_keys(qk_norm):
    model = gpt(qk_norm=qk_norm).double()
    attention = [block.self_attn for block in model.blocks]
    if qk_norm:
        assert all(
            a.q_norm.weight.shape == a.k_norm.weight.shape == (8,) for a in attention
        )
        for a in attention:
            a.q_norm.eps = a.k_norm.eps = 1e-30  # scale-free up to eps
    idx = torch.arange(10)[None]
    before = model(idx)
    with torch.no_grad():
        for a in attention:
            a.W_query.weight.mul_(3.0)
            a.W_key.weight.mul_(5.0)
    # float64: equal up to rounding with QK-norm; far apart without.
    close = torch.allclose(model(idx), before, atol=1e-10, rtol=1e-10)
    assert close == qk_norm


def test_sinks_start_at_zero_and_get_gradients():
    model = gpt(sinks=True).train()
    sinks = [block.self_attn.sink_logits for block in model.blocks]
    assert all(torch.equal(s, torch.zeros(2)) for s in sinks)
    model(torch.arange(10)[None]).square().mean().backward()
    assert all(s.grad is not None and (s.grad != 0).all() for s in sinks)


def changed_outputs(model, position):
    """Which earlier tokens change the logits at ``position`` when changed."""
    idx = torch.arange(12)[None] % 11
    base = model(idx)[0, position]
    changed = []
    for t in range(position):
        other = idx.clone()
        other[0, t] = (other[0, t] + 1) % 11
        if not torch.equal(model(other)[0, position], base):
            changed.append(t)
    return changed


@pytest.mark.parametrize("window", [1, 3, 5])
def test_a_window_hides_the_tokens_before_it(window):
    torch.manual_seed(0)
    model = GPT(GPTConfig(11, 12, d_model=16, num_heads=2, num_layers=1, window=window))
    t = 9
    assert changed_outputs(model.eval(), t) == list(range(t - window + 1, t))


def test_global_layers_see_everything():
    model = gpt(window=2, global_every=2)  # layer 0 local, layer 1 global
    assert [model.is_global(i) for i in range(2)] == [False, True]
    assert model.blocks[0].self_attn.window == 2
    assert type(model.blocks[1].self_attn) is MultiHeadAttention
    assert changed_outputs(model, 9) == list(range(9))
    assert [gpt(window=2, global_every=3).is_global(i) for i in range(2)] == [False] * 2


def test_an_evaluation_mask_equals_a_trained_window():
    """A window given at evaluation computes what the window option builds in."""
    windowed = gpt(window=4)
    plain = gpt()
    plain.load_state_dict(windowed.state_dict())
    idx = torch.arange(12)[None] % 11
    # The same operations on the same numbers.
    assert torch.equal(plain(idx, attn_mask=sliding_window_mask(12, 4)), windowed(idx))
    # The hook keeps the causal mask: an all-True mask changes nothing.
    assert torch.equal(
        plain(idx, attn_mask=torch.ones(12, 12, dtype=torch.bool)), plain(idx)
    )


def test_modern_models_generate_with_a_cache_as_without():
    model = gpt(window=3, sinks=True, qk_norm=True, norm="rms", bias=False)
    idx = torch.tensor([[1, 2, 3]])
    assert torch.equal(
        generate(model, idx, 6, temperature=0, use_cache=True),
        generate(model, idx, 6, temperature=0),
    )


def test_the_swaps_are_checked():
    sizes = dict(vocab_size=11, context_length=8)
    with pytest.raises(ValueError, match="norm='batch' is not one of"):
        GPTConfig(**sizes, norm="batch")
    with pytest.raises(ValueError, match="feed_forward='relu' is not one of"):
        GPTConfig(**sizes, feed_forward="relu")
    with pytest.raises(TypeError, match="sinks must be True or False, got int 1"):
        GPTConfig(**sizes, sinks=1)
    with pytest.raises(ValueError, match="window must be at least 1, got window=0"):
        GPTConfig(**sizes, window=0)
    with pytest.raises(ValueError, match="global_every=6 needs a window"):
        GPTConfig(**sizes, global_every=6)
    with pytest.raises(ValueError, match=r"attn_mask must have shape \(T, past \+ T\)"):
        gpt()(torch.arange(4)[None], attn_mask=torch.ones(3, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="options of causal self-attention"):
        TransformerBlock(8, 2, 16, 4, causal=False, qk_norm=True)


# --- the stored runs


def test_the_stored_runs_have_every_row_and_setting_the_chapter_reads():
    from tools import bench_modern

    stored = stored_modern_runs()
    assert {"date", "machine", "torch", "settings", "rows"} <= set(stored)
    # JSON keeps the tuple of seeds as a list.
    assert stored["settings"] == {
        **asdict(bench_modern.Settings()),
        "seeds": list(bench_modern.Settings().seeds),
    }
    seeds = stored["settings"]["seeds"]
    expected = {("swaps", v, s) for v in bench_modern.SWAPS for s in seeds}
    expected |= {("sinks", "sinks", s) for s in seeds}
    expected |= {("windows", v, s) for v in bench_modern.WINDOWS for s in seeds}
    rows = stored["rows"]
    assert {(r["part"], r["variant"], r["seed"]) for r in rows} == expected
    assert len(rows) == len(expected)
    masked = ("window_loss", "streaming_loss", "full_loss")
    for row in rows:
        assert {"parameters", "val_loss"} <= set(row)
        if row["variant"] in ("baseline", "sinks"):
            assert set(masked) <= set(row)
        if row["variant"] == "baseline":
            assert len(row["first_token_share"]) == stored["settings"]["num_layers"]
        if row["part"] == "windows":
            assert "kv_numbers_per_token" in row


def test_the_kv_numbers_count_a_window_per_local_layer():
    from tools.bench_modern import kv_numbers_per_token

    model = gpt(window=3, global_every=2)  # T = 12, 2 layers, 2 heads of 8
    assert kv_numbers_per_token(model) == (3 + 12) * 2 * 16 / 12
    assert kv_numbers_per_token(gpt()) == 2 * 2 * 16


def test_make_bench_modern_runs_in_the_pinned_environment():
    makefile = (Path(__file__).parent.parent / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^#\s+make bench-modern\s+\S", makefile, re.M)
    recipe = re.search(r"^bench-modern: \$\(STAMP\)\n\t(.+)$", makefile, re.M)
    assert recipe.group(1) == (
        "$(BIN)/python -m tools.reproducible run -- $(BIN)/python -m tools.bench_modern"
    )
