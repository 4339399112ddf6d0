"""Chapter 8's pieces: the block, the tiny GPT, generation, the schedule, the corpus."""

import math
import re

import pytest
import torch
from torch import nn

from attn_course.block import FeedForward, TransformerBlock
from attn_course.corpus import (
    CharTokenizer,
    python_docs_text,
    random_windows,
    train_val_split,
)
from attn_course.gpt import GPT, GPTConfig, estimate_loss, generate, train
from attn_course.training import count_parameters, lr_at

V = 11


def tiny_gpt(seed=0, **overrides):
    torch.manual_seed(seed)
    settings = dict(d_model=16, num_heads=2, num_layers=2, context_length=8)
    settings.update(overrides)
    return GPT(GPTConfig(vocab_size=V, **settings)).eval()


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny matrices: one thread is faster than several, above all on a busy CPU."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def torch_layer_from(block, d_model, num_heads, d_ff, norm_first):
    """``nn.TransformerEncoderLayer`` holding ``block``'s weights."""
    layer = nn.TransformerEncoderLayer(
        d_model,
        num_heads,
        d_ff,
        dropout=0.0,
        activation="gelu",
        batch_first=True,
        norm_first=norm_first,
    )
    attn = block.self_attn
    with torch.no_grad():
        layer.self_attn.in_proj_weight.copy_(
            torch.cat([attn.W_query.weight, attn.W_key.weight, attn.W_value.weight])
        )
        layer.self_attn.in_proj_bias.zero_()  # the block has no q, k, v biases
        layer.self_attn.out_proj.load_state_dict(attn.out_proj.state_dict())
        layer.linear1.load_state_dict(block.feed_forward.net[0].state_dict())
        layer.linear2.load_state_dict(block.feed_forward.net[2].state_dict())
        layer.norm1.load_state_dict(block.norm1.state_dict())
        layer.norm2.load_state_dict(block.norm2.state_dict())
    return layer.eval()


@pytest.mark.parametrize("norm_first", [True, False])
def test_the_block_equals_pytorchs_encoder_layer_with_a_causal_mask(norm_first):
    torch.manual_seed(3)
    D, H, d_ff, T = 16, 4, 64, 7
    block = TransformerBlock(D, H, d_ff, T, norm_first=norm_first).eval()
    for norm in (block.norm1, block.norm2):  # not the identity they start as
        nn.init.normal_(norm.weight)
        nn.init.normal_(norm.bias)
    layer = torch_layer_from(block, D, H, d_ff, norm_first)
    x = torch.randn(3, T, D)
    mask = nn.Transformer.generate_square_subsequent_mask(T)
    with torch.no_grad():
        expected = layer(x, src_mask=mask, is_causal=True)
        torch.testing.assert_close(block(x), expected)
        # and without the causal mask, as Chapter 6's encoder layers use it
        encoder = TransformerBlock(D, H, d_ff, T, causal=False, norm_first=norm_first)
        encoder.load_state_dict(block.state_dict())
        torch.testing.assert_close(encoder.eval()(x), layer(x))


def test_feed_forward_knows_its_activations():
    assert isinstance(FeedForward(4, 8).net[1], nn.ReLU)
    assert isinstance(FeedForward(4, 8, activation="gelu").net[1], nn.GELU)
    with pytest.raises(ValueError, match=r"activation='tanh' is not one of"):
        FeedForward(4, 8, activation="tanh")


def test_the_model_is_causal():
    model = tiny_gpt()
    idx = torch.randint(V, (2, 8), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        before = model(idx)
        for t in range(7):
            changed = idx.clone()
            changed[:, t + 1] = (changed[:, t + 1] + 1) % V
            after = model(changed)
            torch.testing.assert_close(after[:, : t + 1], before[:, : t + 1])
            assert not torch.allclose(after[:, t + 1], before[:, t + 1])


@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])
def test_shapes_and_attention_weights(positions):
    model = tiny_gpt(positions=positions)
    logits, weights = model(torch.zeros(3, 5, dtype=torch.long), return_weights=True)
    assert logits.shape == (3, 5, V)
    assert len(weights) == 2 and weights[0].shape == (3, 2, 5, 5)
    torch.testing.assert_close(weights[1].sum(-1), torch.ones(3, 2, 5))
    assert (weights[0].triu(1) == 0).all()


def test_weight_tying_shares_one_matrix_and_saves_its_parameters():
    tied, untied = tiny_gpt(), tiny_gpt(tie_weights=False)
    assert tied.head.weight is tied.token_embedding.weight
    assert count_parameters(untied) - count_parameters(tied) == V * 16


def test_post_norm_has_no_final_norm():
    assert isinstance(tiny_gpt(norm_first=False).final_norm, nn.Identity)
    assert isinstance(tiny_gpt().final_norm, nn.LayerNorm)


def test_residual_projections_start_smaller():
    model = tiny_gpt(d_model=64, num_layers=8, num_heads=4)
    std = model.blocks[0].self_attn.out_proj.weight.std().item()
    assert abs(std - 0.02 / math.sqrt(16)) < 0.002
    assert abs(model.blocks[0].self_attn.W_query.weight.std().item() - 0.02) < 0.002


def test_bad_inputs_get_clear_errors():
    model = tiny_gpt()
    message = "idx has T=9 tokens but context_length=8"
    with pytest.raises(ValueError, match=re.escape(message)):
        model(torch.zeros(1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match=r"for one sequence use idx\[None\]"):
        model(torch.zeros(4, dtype=torch.long))
    with pytest.raises(TypeError, match="LongTensor of token ids, got dtype"):
        model(torch.zeros(1, 4))
    with pytest.raises(ValueError, match=r"outside 0\.\.10 \(vocab_size=11\)"):
        model(torch.tensor([[3, 11]]))
    with pytest.raises(TypeError, match="config must be a GPTConfig"):
        GPT({"vocab_size": 5})
    with pytest.raises(ValueError, match="did you swap num_heads and num_layers"):
        GPTConfig(vocab_size=5, context_length=4, d_model=16, num_heads=6)
    with pytest.raises(ValueError, match="positions='rope' is not one of"):
        GPTConfig(vocab_size=5, context_length=4, positions="rope")


def test_generate_greedy_top_k_and_seeded_sampling():
    model = tiny_gpt()
    prompt = torch.tensor([[1, 2, 3]])
    greedy = generate(model, prompt, 12, temperature=0)
    assert greedy.shape == (1, 15) and torch.equal(greedy[:, :3], prompt)
    # top_k=1 keeps only the most likely token: sampling becomes greedy
    top1 = generate(model, prompt, 12, top_k=1, generator=torch.Generator())
    assert torch.equal(top1, greedy)
    # the greedy token at each step is the argmax of the logits of its window
    with torch.no_grad():
        for t in range(3, 15):
            window = greedy[:, max(0, t - 8) : t]
            assert model(window)[0, -1].argmax() == greedy[0, t]
    first = generate(model, prompt, 20, generator=torch.Generator().manual_seed(5))
    again = generate(model, prompt, 20, generator=torch.Generator().manual_seed(5))
    assert torch.equal(first, again)
    assert model.training is False


def test_top_k_never_picks_outside_the_k_most_likely():
    model = tiny_gpt()
    prompt = torch.tensor([[4]])
    with torch.no_grad():
        allowed = set(torch.topk(model(prompt)[0, -1], 3).indices.tolist())
    gen = torch.Generator().manual_seed(0)
    picks = {
        generate(model, prompt, 1, top_k=3, temperature=2.0, generator=gen)[0, 1].item()
        for _ in range(60)
    }
    assert picks <= allowed and len(picks) > 1


def test_generate_rejects_bad_settings():
    model = tiny_gpt()
    prompt = torch.tensor([[1]])
    with pytest.raises(ValueError, match="top_k=12 is larger than the vocabulary"):
        generate(model, prompt, 2, top_k=12)
    with pytest.raises(ValueError, match="temperature"):
        generate(model, prompt, 2, temperature=-1.0)
    with pytest.raises(ValueError, match="max_new_tokens"):
        generate(model, prompt, -1)


def test_generate_keeps_training_mode():
    model = tiny_gpt().train()
    generate(model, torch.tensor([[1]]), 2, temperature=0)
    assert model.training


def test_lr_schedule_warms_up_then_decays_to_min_lr():
    lrs = [
        lr_at(s, max_lr=1e-3, warmup_steps=10, total_steps=100, min_lr=1e-4)
        for s in range(100)
    ]
    assert lrs[0] == pytest.approx(1e-4) and lrs[9] == pytest.approx(1e-3)
    assert all(a < b for a, b in zip(lrs[:9], lrs[1:10], strict=True))
    assert all(a >= b for a, b in zip(lrs[10:], lrs[11:], strict=False))
    assert lrs[-1] == pytest.approx(1e-4, rel=0.01)


def test_training_lowers_the_loss_on_a_repeating_text():
    ids = torch.tensor([1, 2, 3, 4, 5, 6, 7] * 40)
    model = tiny_gpt(context_length=6)
    gen = torch.Generator().manual_seed(1)
    val = [random_windows(ids, 8, 6, generator=gen)]
    before = estimate_loss(model, val)
    history = train(
        model, ids, val, steps=60, batch_size=8, max_lr=1e-2, warmup_steps=5,
        eval_every=20,
    )  # fmt: skip
    assert [row.step for row in history] == [20, 40, 60]
    assert history[-1].val_loss < 0.3 < 2.0 < before


def test_char_tokenizer_round_trip_and_errors():
    tok = CharTokenizer("abcab c")
    assert tok.vocab_size == 4 and tok.chars == [" ", "a", "b", "c"]
    assert tok.decode(tok.encode("cab")) == "cab"
    with pytest.raises(ValueError, match=r"not in the vocabulary: \['z'\]"):
        tok.encode("az")
    with pytest.raises(ValueError, match="outside 0..3"):
        tok.decode([0, 4])
    with pytest.raises(TypeError, match="non-empty str"):
        CharTokenizer(["a"])


def test_the_corpus_is_the_python_docs():
    text = python_docs_text()
    assert len(text) > 300_000 and text.startswith('The "assert" statement')
    assert "yield" in text and text == python_docs_text()
    train_ids, val_ids = train_val_split(torch.arange(1000))
    assert len(train_ids) == 900 and int(val_ids[0]) == 900


def test_random_windows_are_shifted_by_one():
    ids = torch.arange(50) * 2
    x, y = random_windows(ids, 4, 10, generator=torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (4, 10)
    assert torch.equal(y[:, :-1], x[:, 1:]) and (y - x == 2).all()
    with pytest.raises(ValueError, match="too few for windows"):
        random_windows(ids, 4, 50)
