"""The encoder-decoder of ``attn_course.seq2seq``: shapes, masks, decoding, training."""

import pytest
import torch
from torch import nn

from attn_course.seq2seq import (
    AttentionMaps,
    Seq2SeqConfig,
    Seq2SeqTransformer,
    count_parameters,
    evaluating,
    exact_match,
    greedy_decode,
    sequence_loss,
    train,
    translate,
)
from attn_course.translation import make_batch, make_splits, source_vocab, target_vocab

SRC_V, TGT_V = 11, 13


def tiny_model(seed=0, **overrides):
    torch.manual_seed(seed)
    settings = dict(d_model=16, num_heads=2, num_layers=2, d_ff=32, context_length=12)
    settings.update(overrides)
    return Seq2SeqTransformer(Seq2SeqConfig(SRC_V, TGT_V, **settings)).eval()


def random_ids(B, T, vocab, seed):
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(3, vocab, (B, T), generator=gen)  # no special tokens


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny matrices: one thread is faster than several, above all on a busy CPU."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def toy_task():
    splits = make_splits(1_200, 100, 100, seed=0)
    src_vocab, tgt_vocab = source_vocab(), target_vocab()
    data = [make_batch(split, src_vocab, tgt_vocab) for split in splits]
    return splits, src_vocab, tgt_vocab, data


@pytest.fixture(scope="module")
def trained(toy_task):
    """A tiny model after a short, seeded training run (75 steps, under a second)."""
    splits, src_vocab, tgt_vocab, (train_data, val_data, _) = toy_task
    torch.manual_seed(0)
    config = Seq2SeqConfig(
        len(src_vocab), len(tgt_vocab), d_model=32, num_heads=2, num_layers=1, d_ff=64
    )
    model = Seq2SeqTransformer(config)
    untrained_loss = sequence_loss(model, val_data)
    step_losses, history = train(
        model, train_data, epochs=3, batch_size=48, lr=2e-2, warmup_steps=10, log=None
    )
    return model, untrained_loss, step_losses, history


# --- shapes ---------------------------------------------------------------------------


def test_forward_shapes_and_attention_maps():
    model = tiny_model()
    src = random_ids(3, 7, SRC_V, seed=1)  # (B, T_s)
    tgt = random_ids(3, 5, TGT_V, seed=2)  # (B, T_t)
    logits, maps = model(src, tgt, return_weights=True)
    assert logits.shape == (3, 5, TGT_V)
    assert isinstance(maps, AttentionMaps)
    assert len(maps.encoder) == len(maps.decoder) == len(maps.cross) == 2
    for enc, dec, cross in zip(maps.encoder, maps.decoder, maps.cross, strict=True):
        assert enc.shape == (3, 2, 7, 7)  # (B, H, T_s, T_s)
        assert dec.shape == (3, 2, 5, 5)  # (B, H, T_t, T_t)
        assert cross.shape == (3, 2, 5, 7)  # (B, H, T_t, T_s)
        for w in (enc, dec, cross):
            torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))
    torch.testing.assert_close(model(src, tgt), logits)  # same without weights


def test_encode_and_decode_compose_to_forward():
    model = tiny_model()
    src, tgt = random_ids(2, 6, SRC_V, seed=3), random_ids(2, 4, TGT_V, seed=4)
    memory = model.encode(src)
    assert memory.shape == (2, 6, 16)  # (B, T_s, D)
    logits = model.decode(tgt, memory, src != 0)
    torch.testing.assert_close(logits, model(src, tgt))


def test_chapter_configuration_has_174958_parameters():
    config = Seq2SeqConfig(len(source_vocab()), len(target_vocab()))
    assert count_parameters(Seq2SeqTransformer(config)) == 174_958


# --- masks ----------------------------------------------------------------------------


def test_extra_source_padding_changes_nothing():
    model = tiny_model()
    src, tgt = random_ids(2, 6, SRC_V, seed=5), random_ids(2, 4, TGT_V, seed=6)
    src[1, 4:] = 0  # the second sentence has 4 real tokens
    padded = torch.cat([src, torch.zeros(2, 3, dtype=torch.long)], dim=1)  # + 3 pads
    logits, maps = model(src, tgt, return_weights=True)
    logits_padded, maps_padded = model(padded, tgt, return_weights=True)
    torch.testing.assert_close(logits_padded, logits, atol=1e-5, rtol=1e-5)
    memory, memory_padded = model.encode(src), model.encode(padded)
    torch.testing.assert_close(memory_padded[0, :6], memory[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(
        memory_padded[1, :4], memory[1, :4], atol=1e-5, rtol=1e-5
    )
    for cross in maps_padded.cross:
        assert (cross[..., 6:] == 0).all()  # no weight on the extra padding
        assert (cross[1, ..., 4:] == 0).all()  # nor on the second sentence's


def test_extra_target_padding_changes_nothing_for_real_tokens():
    model = tiny_model()
    src, tgt = random_ids(2, 6, SRC_V, seed=7), random_ids(2, 5, TGT_V, seed=8)
    tgt[0, 3:] = 0  # the first target has 3 real tokens
    padded = torch.cat([tgt, torch.zeros(2, 4, dtype=torch.long)], dim=1)
    logits, logits_padded = model(src, tgt), model(src, padded)
    torch.testing.assert_close(
        logits_padded[0, :3], logits[0, :3], atol=1e-5, rtol=1e-5
    )
    torch.testing.assert_close(logits_padded[1, :5], logits[1], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("causal", [True, False])
def test_the_decoder_is_causal_unless_told_otherwise(causal):
    model = tiny_model(causal_decoder=causal)
    src, tgt = random_ids(2, 6, SRC_V, seed=13), random_ids(2, 5, TGT_V, seed=14)
    changed = tgt.clone()
    changed[:, 3] = (tgt[:, 3] - 3 + 1) % (TGT_V - 3) + 3  # another real token
    before, after = model(src, tgt), model(src, changed)
    assert torch.equal(after[:, :3], before[:, :3]) == causal
    assert not torch.allclose(after[:, 3:], before[:, 3:])  # the change is seen


def test_the_encoder_is_bidirectional():
    model = tiny_model()
    src = random_ids(1, 6, SRC_V, seed=15)
    changed = src.clone()
    changed[0, 5] = (src[0, 5] - 3 + 1) % (SRC_V - 3) + 3  # change the last token
    assert not torch.allclose(model.encode(changed)[:, 0], model.encode(src)[:, 0])


# --- decoding, training, evaluation ---------------------------------------------------


def test_a_short_training_run_lowers_the_loss(trained, toy_task):
    model, untrained_loss, step_losses, history = trained
    val_data = toy_task[3][1]
    first, last = sum(step_losses[:5]) / 5, sum(step_losses[-5:]) / 5
    assert len(step_losses) == 3 * 25  # 3 epochs of 1200 / 48 steps
    assert last < 0.5 * first
    assert sequence_loss(model, val_data) < 0.5 * untrained_loss
    assert [entry.epoch for entry in history] == [1, 2, 3]
    assert history[2].loss < history[1].loss < history[0].loss
    assert history[0].val_exact_match is None


def test_training_is_reproducible(toy_task):
    splits, src_vocab, tgt_vocab, _ = toy_task
    data = make_batch(splits.train[:200], src_vocab, tgt_vocab)
    config = Seq2SeqConfig(len(src_vocab), len(tgt_vocab), d_model=16, d_ff=32)
    runs = []
    for _ in range(2):
        torch.manual_seed(0)
        model = Seq2SeqTransformer(config)
        runs.append(train(model, data, epochs=1, batch_size=50, log=None)[0])
    assert runs[0] == runs[1]


def test_train_logs_one_line_per_epoch(toy_task):
    data = make_batch(toy_task[0].train[:100], toy_task[1], toy_task[2])
    val = make_batch(toy_task[0].val[:20], toy_task[1], toy_task[2])
    model = Seq2SeqTransformer(
        Seq2SeqConfig(len(toy_task[1]), len(toy_task[2]), d_model=16, d_ff=32)
    )
    lines = []
    _, history = train(model, data, epochs=2, val_data=val, log=lines.append)
    assert len(lines) == 2
    assert lines[0].startswith("epoch  1/2  loss ")
    assert "val exact match" in lines[0] and not lines[0].endswith(" s")
    assert 0.0 <= history[1].val_exact_match <= 1.0


def test_greedy_decode_stops_at_eos_and_pads_after_it(trained, toy_task):
    model = trained[0]
    data = toy_task[3][2]
    out = greedy_decode(model, data.src[:20])
    assert out.dtype == torch.long and out.shape[0] == 20
    assert (out[:, 0] != 1).all()  # no <bos> in the output
    for row in out:
        eos = (row == 2).nonzero()
        if len(eos):
            assert (row[int(eos[0]) + 1 :] == 0).all()


def test_exact_match_agrees_with_translate(trained, toy_task):
    model = trained[0]
    splits, src_vocab, tgt_vocab, data = toy_task
    sources = [source for source, _ in splits.test]
    outputs = translate(model, sources, src_vocab, tgt_vocab)
    expected = sum(
        out == target for out, (_, target) in zip(outputs, splits.test, strict=True)
    )
    score = exact_match(model, data[2])
    assert score == expected / len(splits.test)
    assert 0.0 < score  # the short run already gets some sentences right


def test_translate_accepts_one_string(trained, toy_task):
    model, _, _, _ = trained
    (words,) = translate(model, "the dog sees the cat", toy_task[1], toy_task[2])
    assert isinstance(words, tuple) and all(isinstance(w, str) for w in words)


def test_decoding_and_measuring_the_loss_restore_training_mode(trained, toy_task):
    model, data = trained[0], toy_task[3][2]
    for measure in (
        lambda: greedy_decode(model, data.src[:2]),
        lambda: sequence_loss(model, data),
    ):
        model.train()
        measure()
        assert model.training
    model.eval()


# --- evaluating -----------------------------------------------------------------------


def modes(model):
    return [module.training for module in model.modules()]


def test_evaluating_switches_off_dropout_and_restores_the_mode():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    x = torch.ones(8, 4)
    with evaluating(model) as inside:
        assert inside is model
        assert modes(model) == [False, False, False]
        torch.testing.assert_close(model(x), model(x))  # dropout is off
    assert modes(model) == [True, True, True]
    model.eval()
    with evaluating(model):
        pass
    assert modes(model) == [False, False, False]  # eval stays eval


def test_evaluating_restores_every_submodule_even_when_the_block_raises():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.Dropout(0.1))
    model[2].eval()  # mixed modes: each submodule gets its own back
    before = modes(model)
    with pytest.raises(RuntimeError, match="inside the block"):
        with evaluating(model):
            assert not any(modes(model))
            raise RuntimeError("inside the block")
    assert modes(model) == before == [True, True, True, False]


# --- errors ---------------------------------------------------------------------------

LONG = torch.ones(1, 2, dtype=torch.long)
VOCABS = dict(src_vocab_size=SRC_V, tgt_vocab_size=TGT_V)


def tiny_data():
    pairs = make_splits(4, 1, 1, seed=0).train
    return make_batch(pairs, source_vocab(), target_vocab())


def small_model():
    config = Seq2SeqConfig(len(source_vocab()), len(target_vocab()), d_model=8)
    return Seq2SeqTransformer(config)


ERRORS = [
    (
        lambda: tiny_model()(torch.zeros(1, 3), LONG),
        TypeError,
        ["src must be a LongTensor", "torch.float32", "Vocab"],
    ),
    (
        lambda: tiny_model()([[3, 4]], LONG),
        TypeError,
        ["src must be a torch.Tensor", "got list", "Vocab"],
    ),
    (
        lambda: tiny_model()(torch.ones(3, dtype=torch.long), LONG),
        ValueError,
        ["unsqueeze"],
    ),
    (
        lambda: tiny_model()(torch.ones(1, 13, dtype=torch.long), LONG),
        ValueError,
        ["context_length >= 13"],
    ),
    (
        lambda: Seq2SeqTransformer({"d_model": 16}),
        TypeError,
        ["Seq2SeqConfig", "got dict"],
    ),
    (
        lambda: Seq2SeqConfig(**VOCABS, d_model=30, num_heads=4),
        ValueError,
        [
            "d_model=30 is not divisible by num_heads=4",
            "num_heads in {1, 2, 3, 5, 6, 10, 15, 30}",
        ],
    ),
    (
        lambda: Seq2SeqConfig(**VOCABS, d_model=7, num_heads=1),
        ValueError,
        ["d_model=7 must be even"],
    ),
    (
        lambda: Seq2SeqConfig(**VOCABS, num_layers=0),
        ValueError,
        ["num_layers must be at least 1"],
    ),
    (
        lambda: Seq2SeqConfig(**VOCABS, d_model=64.0),
        TypeError,
        ["d_model must be an int", "float"],
    ),
    (
        lambda: Seq2SeqConfig(**VOCABS, dropout=1.0),
        ValueError,
        ["dropout must be in [0, 1)"],
    ),
    (
        lambda: Seq2SeqConfig(**VOCABS, pad_id=11),
        ValueError,
        ["pad_id=11", "11 tokens"],
    ),
    (lambda: train(small_model(), tiny_data(), epochs=0), ValueError, ["epochs"]),
    (
        lambda: train(small_model(), tiny_data(), epochs=1.5),
        TypeError,
        ["epochs must be an int"],
    ),
    (
        lambda: train(small_model(), tiny_data(), epochs=1, lr=0),
        ValueError,
        ["lr must be a positive finite number"],
    ),
    (
        lambda: greedy_decode(tiny_model(), LONG, max_len=0),
        ValueError,
        ["max_len must be at least 1"],
    ),
    (
        lambda: evaluating("model").__enter__(),
        TypeError,
        ["model must be a torch.nn.Module", "got str"],
    ),
]


@pytest.mark.parametrize("call, error, fragments", ERRORS)
def test_errors_teach(call, error, fragments, raises_teaching):
    raises_teaching(call, error, fragments)
