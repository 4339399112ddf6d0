"""``attn_course.rnn`` (Chapter 10): additive attention, the GRU encoder-decoder with
and without it, and accuracy by source length."""

from functools import partial

import pytest
import torch
from torch import nn

from attn_course import seq2seq, translation
from attn_course.rnn import AdditiveAttention, GRUSeq2Seq, exact_match_by_length


def test_additive_attention_computes_v_tanh_of_the_sum():
    torch.manual_seed(0)
    attention = AdditiveAttention(4, 3, 6)
    query, keys = torch.randn(2, 4), torch.randn(2, 5, 3)
    W_q, W_k, v = attention.W_query.weight, attention.W_key.weight, attention.v.weight
    with torch.no_grad():
        scores = [[v[0] @ (W_q @ query[b] + W_k @ keys[b, j]).tanh() for j in range(5)]
                  for b in range(2)]  # fmt: skip
    weights = torch.softmax(torch.tensor(scores), dim=-1)
    context, got = attention(query, keys, return_weights=True)
    torch.testing.assert_close(got, weights)
    torch.testing.assert_close(context, torch.einsum("bj,bjd->bd", weights, keys))


def test_padding_never_gets_weight_and_does_not_change_the_context():
    torch.manual_seed(1)
    attention = AdditiveAttention(4, 3, 5)
    query, keys = torch.randn(2, 4), torch.randn(2, 6, 3)
    mask = torch.tensor([[True] * 6, [True, True, False, False, False, False]])
    context, weights = attention(query, keys, mask, return_weights=True)
    assert (weights[~mask] == 0).all()
    alone = attention(query[1:], keys[1:, :2])  # the second row without padding
    torch.testing.assert_close(context[1:], alone)
    # A row with no real key gets zeros, not NaN, and so do its gradients.
    query.requires_grad_(True)
    empty = torch.zeros(2, 6, dtype=torch.bool)
    context, weights = attention(query, keys, empty, return_weights=True)
    assert (weights == 0).all() and (context == 0).all()
    context.sum().backward()
    assert torch.isfinite(query.grad).all()


Q, KEYS = torch.zeros(2, 4), torch.zeros(2, 3, 3)


@pytest.mark.parametrize(
    "call, error, fragment",
    [
        (lambda a: a(torch.zeros(2, 5), KEYS), ValueError, "(B, 4)"),
        (lambda a: a(Q, torch.zeros(2, 3, 2)), ValueError, "(B, T_k, 3)"),
        (lambda a: a(torch.zeros(3, 4), KEYS), ValueError, "B=3"),
        (lambda a: a([1.0] * 4, KEYS), TypeError, "torch.Tensor"),
        (lambda a: a(Q, KEYS, torch.ones(2, 3)), TypeError, "bool"),
        (
            lambda a: a(Q, KEYS, torch.ones(2, 4, dtype=torch.bool)),
            ValueError,
            "(2, 3)",
        ),
        (
            lambda _: AdditiveAttention(4, 3, 2.0),
            TypeError,
            "hidden_dim must be an int",
        ),
        (
            lambda _: AdditiveAttention(4, 0, 2),
            ValueError,
            "key_dim must be at least 1",
        ),
    ],
)
def test_additive_attention_tells_bad_input_clearly(
    call, error, fragment, raises_teaching
):
    raises_teaching(partial(call, AdditiveAttention(4, 3, 5)), error, [fragment])


@pytest.fixture(scope="module")
def vocabs():
    return translation.source_vocab(), translation.target_vocab()


DECODERS = [{}, {"summary_every_step": True}, {"attention": True}]


@pytest.mark.parametrize("decoder", DECODERS)
def test_the_encoder_ignores_padding(vocabs, decoder):
    src_vocab, tgt_vocab = vocabs
    torch.manual_seed(0)
    model = GRUSeq2Seq(len(src_vocab), len(tgt_vocab), d_model=8, **decoder)
    src = torch.tensor([[5, 6, 7, 8, 9], [5, 6, 7, 0, 0]])  # (B, T_s), 0 = <pad>
    memory = model.encode(src)  # (B, T_s, D)
    alone = model.encode(src[1:, :3])  # the short sentence without padding
    torch.testing.assert_close(memory[1, :3], alone[0])
    assert (memory[1, 3:] == 0).all()
    tgt_in = torch.tensor([[1, 5, 6], [1, 7, 0]])
    logits = model(src, tgt_in)
    assert logits.shape == (2, 3, len(tgt_vocab))
    torch.testing.assert_close(logits[1:, :2], model(src[1:, :3], tgt_in[1:, :2]))


def test_the_parameter_counts_follow_the_sizes(vocabs):
    src_vocab, tgt_vocab = vocabs
    S, V, D = len(src_vocab), len(tgt_vocab), 8
    gru = 3 * (D * D + D * D + 2 * D)  # three gates: W_i, W_h and two biases
    plain = GRUSeq2Seq(S, V, d_model=D)
    assert seq2seq.count_parameters(plain) == (S + V) * D + 2 * gru + D * V + V
    wide = 3 * (2 * D * D + D * D + 2 * D)  # its input is [word; context]
    summary = GRUSeq2Seq(S, V, d_model=D, summary_every_step=True)
    expected = (S + V) * D + gru + wide + 2 * D * V + V
    assert seq2seq.count_parameters(summary) == expected
    with_attention = GRUSeq2Seq(S, V, d_model=D, attention=True)
    expected += D * (D + D + 1)  # W_query, W_key and v
    assert seq2seq.count_parameters(with_attention) == expected


def test_the_summary_decoder_reads_the_last_state_at_every_step(vocabs):
    """Cho et al. (2014), written out step by step with the model's GRU weights."""
    src_vocab, tgt_vocab = vocabs
    torch.manual_seed(0)
    model = GRUSeq2Seq(
        len(src_vocab), len(tgt_vocab), d_model=8, summary_every_step=True
    )
    src = torch.tensor([[5, 6, 7, 8], [9, 10, 0, 0]])  # (B, T_s), 0 = <pad>
    tgt_in = torch.tensor([[1, 5, 6], [1, 7, 8]])  # (B, T_t)
    memory = model.encode(src)  # (B, T_s, D)
    c = torch.stack([memory[0, 3], memory[1, 1]])  # (B, D): after each last word
    cell = nn.GRUCell(16, 8)
    cell.load_state_dict({k[:-3]: v for k, v in model.decoder.state_dict().items()})
    state, logits = c, []
    for i in range(3):
        state = cell(torch.cat([model.tgt_embed(tgt_in[:, i]), c], dim=-1), state)
        logits.append(model.lm_head(torch.cat([state, c], dim=-1)))
    torch.testing.assert_close(model(src, tgt_in), torch.stack(logits, dim=1))


def test_attention_is_the_summary_decoder_with_a_new_context_at_every_step(vocabs):
    """With the summary's weights and a last-state attention: the same logits."""
    src_vocab, tgt_vocab = vocabs
    torch.manual_seed(0)
    S, V = len(src_vocab), len(tgt_vocab)
    summary = GRUSeq2Seq(S, V, d_model=8, summary_every_step=True)
    attention = GRUSeq2Seq(S, V, d_model=8, attention=True)
    weights = {  # the decoder's GRUCell names drop the GRU's layer suffix "_l0"
        k.replace("_l0", "") if k.startswith("decoder.") else k: v
        for k, v in summary.state_dict().items()
    }
    attention.load_state_dict({**attention.state_dict(), **weights})

    class LastState(nn.Module):
        def forward(self, query, keys, key_padding_mask, *, return_weights=False):
            last = key_padding_mask.sum(dim=1) - 1  # (B,)
            context = keys[torch.arange(keys.shape[0]), last]  # (B, D)
            return context, key_padding_mask.float()

    attention.attention = LastState()
    src = torch.tensor([[5, 6, 7, 8], [9, 10, 11, 0]])
    tgt_in = torch.tensor([[1, 5, 6, 7], [1, 7, 8, 0]])
    torch.testing.assert_close(attention(src, tgt_in), summary(src, tgt_in))


def test_the_model_tells_bad_input_clearly(vocabs):
    src_vocab, tgt_vocab = vocabs
    model = GRUSeq2Seq(len(src_vocab), len(tgt_vocab), d_model=8, context_length=6)
    with pytest.raises(TypeError, match="LongTensor"):
        model(torch.ones(2, 3), torch.ones(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="context_length=6"):
        model(torch.ones(1, 7, dtype=torch.long), torch.ones(1, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="no real token"):
        model(torch.tensor([[5, 6], [0, 0]]), torch.ones(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="attention=True"):
        model(torch.tensor([[5, 6]]), torch.tensor([[1, 5]]), return_weights=True)
    with pytest.raises(TypeError, match="attention must be True or False"):
        GRUSeq2Seq(10, 10, attention="yes")
    with pytest.raises(TypeError, match="summary_every_step must be True or False"):
        GRUSeq2Seq(10, 10, summary_every_step=1)
    with pytest.raises(ValueError, match="choose one of the two"):
        GRUSeq2Seq(10, 10, attention=True, summary_every_step=True)
    summary = GRUSeq2Seq(10, 10, summary_every_step=True)
    with pytest.raises(ValueError, match="attention=True"):
        summary(torch.tensor([[5, 6]]), torch.tensor([[1, 5]]), return_weights=True)
    with pytest.raises(ValueError, match="pad_id=12"):
        GRUSeq2Seq(10, 12, pad_id=12)


@pytest.mark.parametrize("decoder", DECODERS)
def test_chapter_6_training_lowers_the_loss_and_decoding_works(vocabs, decoder):
    src_vocab, tgt_vocab = vocabs
    pairs = translation.make_splits(256, 1, 1, seed=0).train
    data = translation.make_batch(pairs, src_vocab, tgt_vocab)
    torch.manual_seed(0)
    model = GRUSeq2Seq(len(src_vocab), len(tgt_vocab), d_model=16, **decoder)
    before = seq2seq.sequence_loss(model, data)
    seq2seq.train(
        model, data, epochs=5, batch_size=32, lr=1e-2, warmup_steps=5, log=None
    )
    assert seq2seq.sequence_loss(model, data) < 0.8 * before
    out = seq2seq.greedy_decode(model, data.src[:4], max_len=5)
    assert out.shape[0] == 4 and out.shape[1] <= 5


def test_exact_match_by_length_splits_exact_match(vocabs):
    src_vocab, tgt_vocab = vocabs
    pairs = translation.make_splits(60, 1, 1, seed=3).train
    data = translation.make_batch(pairs, src_vocab, tgt_vocab)

    lengths = (data.src != 0).sum(dim=1)  # (N,)
    references = {n: data.tgt_out[lengths == n] for n in set(lengths.tolist())}

    class Copy(GRUSeq2Seq):
        """The reference on sentences of 6 words or fewer, <eos> on longer ones."""

        def decode(self, tgt_in, memory, src_mask, *, return_weights=False):
            B, T = tgt_in.shape
            length = int(src_mask.sum(dim=1)[0])  # one length per group
            logits = torch.zeros(B, T, len(tgt_vocab))
            for b in range(B):
                right = references[length][b, T - 1]
                logits[b, -1, right if length <= 6 else tgt_vocab.eos_id] = 1.0
            return logits

    model = Copy(len(src_vocab), len(tgt_vocab), d_model=4)
    table = exact_match_by_length(model, data)
    assert sum(count for _, count in table.values()) == 60
    for length, (accuracy, count) in table.items():
        assert count == int((lengths == length).sum())
        assert accuracy == (1.0 if length <= 6 else 0.0)
    with pytest.raises(TypeError, match="translation.Batch"):
        exact_match_by_length(model, [data.src])
