"""Chapter 8's pieces: the block, the tiny GPT, generation, the schedule, the corpus."""

import functools
import math
from functools import partial

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attn_course.block import FeedForward, TransformerBlock
from attn_course.corpus import (
    CharTokenizer,
    python_docs_text,
    random_windows,
    train_val_split,
)
from attn_course.gpt import (
    GPT,
    GPTConfig,
    _sampling_probs,
    estimate_loss,
    generate,
    lr_schedule,
    train,
    weight_decay_groups,
)
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


# The tanh GELU as a function: with a module, PyTorch's eval fast path uses exact GELU.
TORCH_ACTIVATIONS = {
    "relu": "relu",
    "gelu": "gelu",
    "gelu_tanh": functools.partial(F.gelu, approximate="tanh"),
}


def torch_layer_from(block, d_model, num_heads, d_ff, norm_first, **settings):
    """An ``nn.TransformerEncoderLayer`` holding ``block``'s weights."""
    activation = settings.get("activation", "gelu")
    layer = nn.TransformerEncoderLayer(
        d_model,
        num_heads,
        d_ff,
        dropout=settings.get("dropout", 0.0),
        activation=TORCH_ACTIVATIONS[activation],
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
        layer.linear2.load_state_dict(block.feed_forward.net[3].state_dict())
        layer.norm1.load_state_dict(block.norm1.state_dict())
        layer.norm2.load_state_dict(block.norm2.state_dict())
    return layer.eval()


def with_random_norms(block):
    for norm in (block.norm1, block.norm2):  # not the identity they start as
        nn.init.normal_(norm.weight)
        nn.init.normal_(norm.bias)
    return block


@pytest.mark.parametrize("activation", ["gelu", "gelu_tanh"])
@pytest.mark.parametrize("norm_first", [True, False])
def test_the_block_equals_pytorchs_encoder_layer_with_a_causal_mask(
    norm_first, activation
):
    torch.manual_seed(3)
    D, H, d_ff, T = 16, 4, 64, 7
    block = TransformerBlock(
        D, H, d_ff, T, norm_first=norm_first, activation=activation
    )
    with_random_norms(block.eval())
    layer = torch_layer_from(block, D, H, d_ff, norm_first, activation=activation)
    x = torch.randn(3, T, D)
    mask = nn.Transformer.generate_square_subsequent_mask(T)
    with torch.no_grad():
        expected = layer(x, src_mask=mask, is_causal=True)
        torch.testing.assert_close(block(x), expected)
        # and without the causal mask, as Chapter 6's encoder layers use it
        encoder = TransformerBlock(
            D, H, d_ff, T, causal=False, norm_first=norm_first, activation=activation
        )
        encoder.load_state_dict(block.state_dict())
        torch.testing.assert_close(encoder.eval()(x), layer(x))


class FixedDropout(nn.Module):
    """Dropout seeded on its own, in logical order (nn.Dropout follows memory)."""

    def __init__(self, p, seed):
        super().__init__()
        self.p, self.seed = p, seed

    def forward(self, x):
        generator = torch.Generator().manual_seed(self.seed)
        keep = torch.rand(x.shape, generator=generator) >= self.p
        return x * keep / (1 - self.p)


@pytest.mark.parametrize("activation", ["gelu", "gelu_tanh", "relu"])
@pytest.mark.parametrize("norm_first", [True, False])
def test_the_block_equals_pytorchs_encoder_layer_in_training(norm_first, activation):
    torch.manual_seed(4)
    D, H, d_ff, T, p = 16, 4, 64, 7, 0.3
    block = TransformerBlock(
        D, H, d_ff, T, p, norm_first=norm_first, activation=activation
    )
    with_random_norms(block)
    layer = torch_layer_from(
        block, D, H, d_ff, norm_first, dropout=p, activation=activation
    ).train()
    # PyTorch's three dropouts outside attention, and ours at the same places.
    layer.dropout1 = block.dropout = FixedDropout(p, seed=1)  # after attention
    layer.dropout = block.feed_forward.net[2] = FixedDropout(p, seed=2)  # inside
    layer.dropout2 = block.feed_forward.net[4] = FixedDropout(p, seed=3)  # after
    x = torch.randn(3, T, D)
    mask = nn.Transformer.generate_square_subsequent_mask(T)
    for seed in range(3):  # the dropout on the attention weights: the same draws
        torch.manual_seed(seed)
        expected = layer(x, src_mask=mask, is_causal=True)
        torch.manual_seed(seed)
        torch.testing.assert_close(block(x), expected)
    assert not torch.allclose(block(x), block.eval()(x))  # dropout did drop


def test_the_feed_forward_defaults_to_relu_and_drops_after_it_and_at_the_end():
    net = FeedForward(4, 8, 0.25).net
    linear, dropout = nn.Linear, nn.Dropout
    assert [type(layer) for layer in net] == [linear, nn.ReLU, dropout, linear, dropout]
    assert net[2].p == net[4].p == 0.25


def test_the_gpt_uses_gpt2s_tanh_gelu():
    model = tiny_gpt()
    x = torch.linspace(-4, 4, 81)
    gpt2 = 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    for block in model.blocks:
        torch.testing.assert_close(block.feed_forward.net[1](x), gpt2)
    assert not torch.allclose(F.gelu(x), gpt2, atol=1e-5, rtol=0)  # not the erf form


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
    for layer in (
        model.blocks[0].self_attn.out_proj,
        model.blocks[0].feed_forward.net[3],  # the second linear layer
    ):
        assert abs(layer.weight.std().item() - 0.02 / math.sqrt(16)) < 0.002
    assert abs(model.blocks[0].self_attn.W_query.weight.std().item() - 0.02) < 0.002


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


def test_top_k_keeps_exactly_k_tokens_among_ties():
    probs = _sampling_probs(torch.tensor([[2.0, 5.0, 5.0, 5.0, 1.0]]), 1.0, top_k=2)
    assert int((probs > 0).sum()) == 2 and probs[0, [0, 4]].eq(0).all()
    torch.testing.assert_close(probs.sum(), torch.tensor(1.0))


def test_top_p_keeps_the_smallest_set_of_likeliest_tokens_that_reaches_p():
    p = torch.tensor([[0.1, 0.5, 0.15, 0.25]])  # most likely first: 1, 3, 2, 0
    logits = p.log()
    kept_for = {
        0.3: [0, 0.5, 0, 0],  # 0.5 alone reaches 0.3
        0.7: [0, 0.5, 0, 0.25],  # 0.5 < 0.7 <= 0.5 + 0.25
        0.8: [0, 0.5, 0.15, 0.25],  # 0.75 < 0.8 <= 0.9
        0.95: [0.1, 0.5, 0.15, 0.25],  # 0.9 < 0.95: all four
    }
    for top_p, kept in kept_for.items():
        kept = torch.tensor([kept])
        probs = _sampling_probs(logits, 1.0, top_p=top_p)
        torch.testing.assert_close(probs, kept / kept.sum())
    # top_k first: tokens 1 and 3, renormalised to 2/3 and 1/3; 0.6 keeps one.
    probs = _sampling_probs(logits, 1.0, top_k=2, top_p=0.6)
    torch.testing.assert_close(probs, torch.tensor([[0.0, 1.0, 0.0, 0.0]]))
    # temperature first: sqrt(p) renormalised, and 0.7 now needs three tokens.
    flatter = p.sqrt() / p.sqrt().sum()
    kept = flatter.clone()
    kept[0, 0] = 0.0
    probs = _sampling_probs(logits, 2.0, top_p=0.7)
    torch.testing.assert_close(probs, kept / kept.sum())


def test_top_p_of_one_changes_nothing():
    logits = torch.randn(3, V, generator=torch.Generator().manual_seed(0))
    for top_k in (None, 5):
        assert torch.equal(
            _sampling_probs(logits, 0.8, top_k, top_p=1.0),
            _sampling_probs(logits, 0.8, top_k),
        )


def test_a_tiny_top_p_keeps_the_most_likely_token_only():
    model, prompt = tiny_gpt(), torch.tensor([[1, 2, 3]])
    greedy = generate(model, prompt, 12, temperature=0)
    tiny = generate(model, prompt, 12, top_p=1e-6, generator=torch.Generator())
    assert torch.equal(tiny, greedy)


def test_generate_keeps_training_mode():
    model = tiny_gpt().train()
    generate(model, torch.tensor([[1]]), 2, temperature=0)
    assert model.training


def test_weight_decay_groups_decay_matrices_and_embeddings_not_biases_and_norms():
    for model in (tiny_gpt(), tiny_gpt(tie_weights=False)):
        named = dict(model.named_parameters())  # a tied matrix once
        decay, no_decay = weight_decay_groups(model, 0.1)
        assert (decay["weight_decay"], no_decay["weight_decay"]) == (0.1, 0.0)
        for group in (decay, no_decay):
            pairs = zip(group["param_names"], group["params"], strict=True)
            assert all(parameter is named[name] for name, parameter in pairs)
        vectors = {n for n in named if n.endswith(".bias") or "norm" in n}
        assert set(no_decay["param_names"]) == vectors
        assert set(decay["param_names"]) == set(named) - vectors
        assert len(decay["param_names"] + no_decay["param_names"]) == len(named)
        assert {"token_embedding.weight", "position_embedding.weight"} <= set(
            decay["param_names"]
        )
        assert ("head.weight" in decay["param_names"]) == (not model.config.tie_weights)
    frozen = tiny_gpt()
    frozen.position_embedding.weight.requires_grad_(False)
    decay, _ = weight_decay_groups(frozen, 0.1)
    assert "position_embedding.weight" not in decay["param_names"]


def test_train_gives_adamw_those_groups(monkeypatch):
    optimizers = []

    class RecordedAdamW(torch.optim.AdamW):
        def __init__(self, params, **settings):
            super().__init__(params, **settings)
            optimizers.append(self)

    monkeypatch.setattr(torch.optim, "AdamW", RecordedAdamW)
    ids = torch.arange(60) % V
    model = tiny_gpt(context_length=6)
    val = [random_windows(ids, 2, 6, generator=torch.Generator().manual_seed(0))]
    train(model, ids, val, steps=1, batch_size=2, max_lr=1e-3, warmup_steps=0,
          weight_decay=0.3)  # fmt: skip
    (optimizer,) = optimizers
    expected = weight_decay_groups(model, 0.3)
    for group, wanted in zip(optimizer.param_groups, expected, strict=True):
        assert group["param_names"] == wanted["param_names"]
        assert group["weight_decay"] == wanted["weight_decay"]


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
    rates = lr_schedule(60, max_lr=1e-2, warmup_steps=5)
    assert [row.lr for row in history] == [rates[row.step - 1] for row in history]


def test_lr_schedule_is_lr_at_at_every_step():
    kwargs = dict(max_lr=3e-3, warmup_steps=20, min_lr=3e-4)
    rates = lr_schedule(350, **kwargs)
    assert rates == [lr_at(s, total_steps=350, **kwargs) for s in range(350)]
    assert rates[0] == pytest.approx(1.5e-4) and max(rates) == rates[19]


def test_char_tokenizer_round_trip():
    tok = CharTokenizer("abcab c")
    assert tok.vocab_size == 4 and tok.chars == [" ", "a", "b", "c"]
    assert tok.decode(tok.encode("cab")) == "cab"


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


def run(idx):
    return lambda: tiny_gpt()(idx)


def sample(max_new_tokens=2, **settings):
    return lambda: generate(tiny_gpt(), torch.tensor([[1]]), max_new_tokens, **settings)


LONG = torch.long


@pytest.mark.parametrize(
    "call, error, fragment",
    [
        (
            run(torch.zeros(1, 9, dtype=LONG)),
            ValueError,
            "T=9 tokens but context_length=8",
        ),
        (run(torch.zeros(4, dtype=LONG)), ValueError, "for one sequence use idx[None]"),
        (run(torch.zeros(1, 4)), TypeError, "LongTensor of token ids, got dtype"),
        (run(torch.tensor([[3, 11]])), ValueError, "outside 0..10 (vocab_size=11)"),
        (partial(GPT, {"vocab_size": 5}), TypeError, "config must be a GPTConfig"),
        (partial(GPTConfig, 5, 4, num_heads=6), ValueError, "did you swap num_heads"),
        (
            partial(GPTConfig, 5, 4, positions="rope"),
            ValueError,
            "'rope' is not one of",
        ),
        (
            partial(FeedForward, 4, 8, activation="tanh"),
            ValueError,
            "'tanh' is not one",
        ),
        (sample(top_k=12), ValueError, "top_k=12 is larger than the vocabulary"),
        *[
            (sample(top_p=top_p), ValueError, "top_p must be in (0, 1], got top_p=")
            for top_p in (0, 0.0, 1.5, -0.1, float("nan"))
        ],
        (sample(top_p="0.9"), TypeError, "top_p must be a number"),
        (sample(top_p=True), TypeError, "top_p must be a number"),
        (sample(temperature=-1.0), ValueError, "temperature"),
        (sample(-1), ValueError, "max_new_tokens"),
        (lambda: CharTokenizer("abc").encode("az"), ValueError, "vocabulary: ['z']"),
        (lambda: CharTokenizer("abc").decode([0, 3]), ValueError, "outside 0..2"),
        (partial(CharTokenizer, ["a"]), TypeError, "non-empty str"),
        (partial(random_windows, torch.arange(50), 4, 50), ValueError, "too few for"),
    ],
)
def test_errors_teach(call, error, fragment, raises_teaching):
    raises_teaching(call, error, [fragment])
