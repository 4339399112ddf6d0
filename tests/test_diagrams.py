"""``attn_course.diagrams``: labels from the tensors, bad input told clearly, and
every diagram fits a phone-friendly width."""

from functools import partial

import matplotlib
import pytest
import torch

from attn_course import diagrams, hello_shiny_sun, your_journey
from attn_course import diagrams as d
from attn_course.gpt import GPTConfig
from attn_course.history import TIMELINE, Event
from attn_course.plot import _png_width


def text(fig):
    return diagrams.diagram_text(fig)


def test_query_pipeline_shows_the_numbers_it_computes():
    tokens, X = hello_shiny_sun()
    fig = diagrams.query_pipeline(tokens, X, "shiny")
    weights = torch.softmax(X @ X[1], dim=-1)
    lines = text(fig)
    assert "(T, D) = (3, 3)" in lines
    assert "".join(f"{w:>6.2f}" for w in weights.tolist()) in lines
    assert any(f"{v:.2f}" in " ".join(lines) for v in (weights @ X).tolist())
    # by position or by text, the same query
    assert text(diagrams.query_pipeline(tokens, X, 1)) == lines


def test_self_attention_labels_follow_the_shapes():
    lines = text(diagrams.self_attention(torch.zeros(5, 4), 3))
    assert "(T, d_in) = (5, 4)" in lines
    assert "(T, T) = (5, 5)" in lines
    assert "(T, d_out) = (5, 3)" in lines
    assert {"Q = X W_query", "K = X W_key", "V = X W_value"} <= set(lines)


def test_causal_mask_blocks_exactly_the_future():
    _, X = your_journey()
    lines = text(diagrams.causal_mask(X @ X.T))
    T = 6
    assert "scores (T, T) = (6, 6)" in lines
    assert lines.count("−∞") == T * (T - 1) // 2  # in the masked scores only
    assert lines.count("F") == T * (T - 1) // 2  # blocked cells of the mask
    assert lines.count("T") == T * (T + 1) // 2


def test_dropout_and_multi_head_and_encoder_decoder_shapes():
    lines = text(diagrams.dropout_placement(4, 2, 0.1))
    assert lines[lines.index("weights, rows sum to 1") + 1] == "(T, T) = (4, 4)"
    assert "dropout, p = 0.1" in lines
    lines = text(diagrams.multi_head(torch.zeros(2, 6, 3), num_heads=2, d_out=4))
    assert "(B, H, T, d) = (2, 2, 6, 2)" in lines
    assert "weights (B, H, T, T) = (2, 2, 6, 6)" in lines
    source = torch.zeros(3, 7, dtype=torch.long)
    target = torch.zeros(3, 5, dtype=torch.long)
    lines = text(
        diagrams.encoder_decoder(source, target, d_model=8, num_heads=2, vocab_size=30)
    )
    assert "weights (3, 2, 5, 7)" in lines  # cross-attention: (B, H, T, S)
    assert "(B, T_s, D)" in lines and "= (3, 7, 8)" in lines


def test_every_diagram_is_sharp_and_fits_a_phone():
    tokens, X = your_journey()
    figures = [
        diagrams.query_pipeline(tokens, X, 1),
        diagrams.self_attention(X, 2),
        diagrams.causal_mask(X @ X.T),
        diagrams.dropout_placement(6, 2, 0.5),
        diagrams.multi_head(X[None], 2, 4),
        diagrams.encoder_decoder(
            torch.zeros(1, 6, dtype=torch.long),
            torch.zeros(1, 4, dtype=torch.long),
            8,
            2,
            30,
        ),
        diagrams.position_methods(torch.zeros(64, 16, dtype=torch.long), 32, 8, 10),
        diagrams.gpt_model(
            torch.zeros(32, 64, dtype=torch.long),
            GPTConfig(vocab_size=103, context_length=64),
        ),
        diagrams.attention_tiles(1024, 1024, 128),
        diagrams.kv_cache_step(GPTConfig(vocab_size=103, context_length=64), 63),
        diagrams.latent_attention(
            torch.zeros(1, 4096, 7168, device="meta"), 128, 128, 512, 64
        ),
        diagrams.state_update(
            *torch.zeros(2, 1, 16, 4096, 128).unbind(0),
            torch.zeros(1, 16, 4096, 128),
            torch.zeros(1, 16, 4096),
        ),
    ]
    for fig in figures:
        png, metadata = fig._repr_png_()
        assert _png_width(png) >= 2 * metadata["width"]
        # a 390 px phone shows 342 px of it: at least 70 %, 11-point text >= 10 px
        assert metadata["width"] <= 342 / 0.7


# --- Chapter 7 ---------------------------------------------------------------------


def test_position_methods_shows_the_shapes_of_its_batch():
    ids = torch.zeros(4, 10, dtype=torch.long)
    lines = text(diagrams.position_methods(ids, 24, 3, 7))
    d = 24 // 3
    assert "(B, T) = (4, 10)" in lines
    assert "table (vocab_size, D) = (7, 24)" in lines  # the embedding
    assert "(T, D) = (10, 24)" in lines  # the absolute positions
    assert f"(B, H, T, d) = (4, 3, 10, {d})" in lines
    assert "(H, T, T) = (3, 10, 10)" in lines  # the ALiBi bias
    assert f"{d // 2} pairs per head, each by m·θ_i" in lines
    assert any(line.startswith("RoPE") for line in lines)
    assert "+ ALiBi bias: −s_h · (m − n)" in lines  # as the chapter writes it


def test_position_methods_draws_the_whole_layer_up_to_the_logits():
    lines = text(
        diagrams.position_methods(torch.zeros(2, 8, dtype=torch.long), 32, 8, 10)
    )
    assert "merge the heads, out_proj" in lines
    assert "x + out_proj(context)" in lines  # the residual connection
    assert any("residual" in line for line in lines)
    assert any(line.startswith("feed-forward") for line in lines)
    assert lines[-3:-1] == ["logits", "(B, T, vocab_size) = (2, 8, 10)"]


# --- Chapter 8 ---------------------------------------------------------------------


def test_gpt_model_shows_the_configs_sizes():
    config = GPTConfig(vocab_size=50, context_length=16, d_model=32, num_layers=3)
    lines = text(diagrams.gpt_model(torch.zeros(2, 9, dtype=torch.long), config))
    assert "weights (B, H, T, T) = (2, 4, 9, 9)" in lines
    assert "hidden (B, T, d_ff) = (2, 9, 128)" in lines
    assert "blocks 2 to 3: the same steps" in lines
    assert "(B, T, V) = (2, 9, 50)" in lines
    untied = GPTConfig(vocab_size=50, context_length=16, d_model=32, tie_weights=False)
    lines = text(diagrams.gpt_model(torch.zeros(2, 9, dtype=torch.long), untied))
    assert "final_norm, head" in lines


# --- Chapter 9 ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("T_q", "T_k", "block", "causal", "computed", "skipped"),
    [
        (1024, 1024, 128, True, 36, 28),
        (300, 200, 128, False, 6, 0),
        (8, 8, 4, True, 3, 1),
    ],
)
def test_attention_tiles_counts_the_tiles_of_tiled_attention(
    T_q, T_k, block, causal, computed, skipped
):
    lines = text(diagrams.attention_tiles(T_q, T_k, block, is_causal=causal))
    assert (
        f"{computed} of {computed + skipped} tiles computed, {skipped} skipped" in lines
    )
    assert f"scores ({T_q}, {T_k}) in tiles of {block} × {block}" in lines
    assert ("blue: computed; yellow: computed, masked inside;" in lines) == causal
    assert f"s ({block},), acc ({block}, d) = ({block}, 64)" in lines


def test_attention_tiles_colours_each_tile_by_what_the_loop_did():
    """4 x 4 causal tiles: diagonal yellow, below blue, above white."""
    fig = diagrams.attention_tiles(16, 16, 4)
    colours = [
        matplotlib.colors.to_hex(patch.get_facecolor())
        for patch in fig.axes[0].patches
        if isinstance(patch, matplotlib.patches.FancyBboxPatch)
        and patch.get_width() == patch.get_height()
        and patch.get_width() < 1
    ]
    tiles = [colours[r * 4 : r * 4 + 4] for r in range(4)]
    blue, yellow = diagrams.TENSOR_EDGE, diagrams.HIGHLIGHT_FILL
    for r in range(4):
        for c in range(4):
            expected = yellow if c == r else blue if c < r else "#ffffff"
            assert tiles[r][c] == expected, (r, c)


def test_kv_cache_step_shows_the_shapes_of_one_step():
    config = GPTConfig(
        vocab_size=50, context_length=16, d_model=32, num_heads=8, num_kv_heads=2
    )
    lines = text(diagrams.kv_cache_step(config, 9, batch=3))
    assert "embedding + position 9" in lines
    assert "q (B, H, 1, d) = (3, 8, 1, 4)" in lines
    assert "k, v (B, H_kv, 1, d) = (3, 2, 1, 4)" in lines
    assert "K, V (B, H_kv, t + 1, d) = (3, 2, 10, 4)" in lines
    assert "weights (B, H, 1, t + 1) = (3, 8, 1, 10)" in lines
    assert "(B, 1, V) = (3, 1, 50)" in lines


def test_latent_attention_shows_what_the_cache_keeps():
    lines = text(diagrams.latent_attention(torch.zeros(3, 9, 40), 5, 6, 7, 2))
    assert "q (B, H, T, d)" in lines and "= (3, 5, 9, 6)" in lines
    assert "q_rope (B, H, T, r)" in lines and "= (3, 5, 9, 2)" in lines
    assert "c_KV (B, T, c)" in lines and "= (3, 9, 7)" in lines
    assert "k_rope (B, 1, T, r)" in lines and "= (3, 1, 9, 2)" in lines
    assert "weights (B, H, T, T) = (3, 5, 9, 9)" in lines
    assert "(B, T, D) = (3, 9, 40)" in lines
    assert "c + r = 9 numbers" in lines and "keeps 2·H·d = 60" in lines


def test_state_update_shows_the_state_and_each_steps_shapes():
    q = torch.zeros(3, 5, 9, 6)  # (B, H, T, d_k)
    lines = text(diagrams.state_update(q, q, torch.zeros(3, 5, 9, 7), q[..., 0]))
    assert "q_t, k_t (B, H, d_k) = (3, 5, 6)" in lines
    assert "v_t (B, H, d_v) = (3, 5, 7)" in lines
    assert "beta_t (B, H) = (3, 5)" in lines
    assert "S_t (B, H, d_v, d_k) = (3, 5, 7, 6)" in lines
    assert "o_t (B, H, d_v) = (3, 5, 7)" in lines
    assert "output (B, H, T, d_v) = (3, 5, 9, 7)" in lines
    assert "step t of T = 9: q_t, k_t, v_t, beta_t" in lines


def ids(*shape):
    return torch.zeros(shape, dtype=torch.long)


def rnn(source, target, **settings):
    return partial(diagrams.rnn_encoder_decoder, source, target, 8, 9, **settings)


CONFIG = GPTConfig(vocab_size=50, context_length=16)


@pytest.mark.parametrize(
    "call, error, fragment",
    [
        (partial(d.query_pipeline, ["a"], torch.zeros(2, 3), 0), ValueError, "token"),
        (
            partial(d.query_pipeline, ["a", "b"], torch.zeros(2, 3), "c"),
            ValueError,
            "'c'",
        ),
        (partial(d.self_attention, [[1.0]], 2), TypeError, "torch.Tensor"),
        (partial(d.causal_mask, torch.zeros(2, 3)), ValueError, "square"),
        (partial(d.dropout_placement, 4, 2, 1.5), ValueError, "p"),
        (partial(d.multi_head, torch.zeros(2, 6, 3), 3, 4), ValueError, "divisible"),
        (
            partial(d.encoder_decoder, torch.zeros(2, 7), torch.zeros(3, 5), 8, 2, 9),
            ValueError,
            "same number of sentences",
        ),
        (partial(d.position_methods, [[0, 1]], 8, 2, 5), TypeError, "ids"),
        (
            partial(d.position_methods, torch.zeros(5), 8, 2, 5),
            ValueError,
            "shape (B, T)",
        ),
        (
            partial(d.position_methods, ids(1, 5), 12, 4, 5),
            ValueError,
            "even head width",
        ),
        (partial(d.position_methods, ids(1, 5), 8, 3, 5), ValueError, "num_heads=3"),
        (partial(d.position_methods, ids(1, 5), 8.0, 2, 5), TypeError, "d_model"),
        (partial(d.position_methods, ids(1, 5), 8, 2, 5.0), TypeError, "vocab_size"),
        (partial(d.gpt_model, ids(9), CONFIG), ValueError, "for one sequence use idx"),
        (partial(d.kv_cache_step, CONFIG, -1), ValueError, "cached"),
        (
            partial(d.state_update, *torch.zeros(3, 9, 6), torch.zeros(9)),
            ValueError,
            "(B, H, T, d_k)",
        ),
        (
            partial(
                d.state_update,
                *torch.zeros(2, 1, 2, 9, 6),
                torch.zeros(1, 2, 8, 6),
                torch.zeros(1, 2, 9),
            ),
            ValueError,
            "value must have shape (B, H, T, d_v) = (1, 2, 9, d_v)",
        ),
        (
            partial(d.state_update, *torch.zeros(3, 1, 2, 9, 6), torch.zeros(1, 2, 8)),
            ValueError,
            "beta must have shape (1, 2, 9)",
        ),
        (
            partial(d.latent_attention, torch.zeros(9, 40), 5, 6, 7, 2),
            ValueError,
            "(B, T, D)",
        ),
        (
            partial(d.latent_attention, torch.zeros(1, 9, 40), 5, 6, 0, 2),
            ValueError,
            "kv_latent_dim",
        ),
        (partial(d.timeline, []), ValueError, "empty"),
        (partial(d.timeline, TIMELINE[::-1]), ValueError, "date order"),
        (
            partial(d.timeline, [Event(2000, 1, "x", "magic", "k")]),
            ValueError,
            "unknown",
        ),
        (rnn(torch.zeros(7), torch.zeros(1, 5)), ValueError, "(B, T_s)"),
        (rnn(torch.zeros(2, 7), torch.zeros(3, 5)), ValueError, "same number of"),
        (rnn(ids(2, 7), ids(2, 5), attention=1), TypeError, "attention must be a bool"),
    ],
)
def test_bad_input_is_told_clearly(call, error, fragment, raises_teaching):
    raises_teaching(call, error, [fragment])


def test_roadmap_highlights_only_the_chapter_it_is_given():
    fills = [p.get_facecolor() for p in diagrams.roadmap(5).axes[0].patches]
    highlighted = matplotlib.colors.to_rgba(d.HIGHLIGHT_FILL)
    assert fills.count(highlighted) == 1 and fills[4] == highlighted  # chapter 5
    assert "you are here: Chapter 5" in text(diagrams.roadmap(5))
    assert highlighted not in [
        p.get_facecolor() for p in diagrams.roadmap().axes[0].patches
    ]
    with pytest.raises(ValueError, match="got 13"):
        diagrams.roadmap(13)
