"""The toy translation task in ``attn_course.translation``: grammar, splits, batches."""

import random

import pytest
import torch

from attn_course.translation import (
    ADJECTIVES,
    MODALS,
    NOUNS,
    OPENERS,
    VERBS,
    Clause,
    Vocab,
    iterate_batches,
    make_batch,
    make_splits,
    parse_source,
    reference_translation,
    sample_clause,
    source_vocab,
    target_vocab,
)


@pytest.fixture(scope="module")
def splits():
    return make_splits(2_000, 300, 300, seed=0)


# --- the grammar -------------------------------------------------------------------


@pytest.mark.parametrize(
    "english, german",
    [
        # plain clause: English order, articles agree with the noun and the case
        ("the dog sees the cat", "der Hund sieht die Katze"),
        ("the cat sees the dog", "die Katze sieht den Hund"),
        ("the big dog sees the big dog", "der große Hund sieht den großen Hund"),
        ("the old child loves the tired horse", "das alte Kind liebt das müde Pferd"),
        # an opening adverb puts the verb second, before the subject
        ("today the dog sees the cat", "heute sieht der Hund die Katze"),
        # a conjunction puts the verb last
        ("because the dog sees the cat", "weil der Hund die Katze sieht"),
        # a modal sends the infinitive to the end
        ("the man can hear the mouse", "der Mann kann die Maus hören"),
        ("now the man must find the bird", "jetzt muss der Mann den Vogel finden"),
        # conjunction and modal: infinitive, then the modal, at the end
        (
            "if the young woman wants to visit the small child",
            "wenn die junge Frau das kleine Kind besuchen will",
        ),
    ],
)
def test_reference_translations(english, german):
    assert " ".join(reference_translation(english)) == german


def test_alignment_points_each_german_word_at_its_english_word():
    clause = parse_source("that the old man wants to visit the child")
    source, target = clause.source(), clause.target()
    pairs = [
        (word, source[i]) for word, i in zip(target, clause.alignment(), strict=True)
    ]
    german = "dass der alte Mann das Kind besuchen will".split()
    english = "that the old man the child visit wants".split()
    assert pairs == list(zip(german, english, strict=True))


def test_alignment_is_not_the_diagonal_for_most_sentences():
    rng = random.Random(1)
    clauses = [sample_clause(rng) for _ in range(300)]
    reordered = [c for c in clauses if list(c.alignment()) != sorted(c.alignment())]
    # plain clauses without a modal keep the English order; the rest reorder
    assert len(reordered) > 0.6 * len(clauses)


def test_parse_source_inverts_rendering():
    rng = random.Random(2)
    for _ in range(200):
        clause = sample_clause(rng)
        assert parse_source(clause.source()) == clause
        assert parse_source(" ".join(clause.source())) == clause


def test_the_grammar_has_338688_sentences():
    openers = 1 + len(OPENERS)
    noun_phrase = len(NOUNS) * (1 + len(ADJECTIVES))
    object_phrase = (len(NOUNS) - 1) * (1 + len(ADJECTIVES))  # another noun
    verb_phrase = len(VERBS) * (1 + len(MODALS))
    assert openers * noun_phrase * object_phrase * verb_phrase == 338_688


# --- splits --------------------------------------------------------------------------


def test_split_sizes_and_no_overlap(splits):
    assert [len(split) for split in splits] == [2_000, 300, 300]
    sources = [{source for source, _ in split} for split in splits]
    assert [len(s) for s in sources] == [2_000, 300, 300]  # no repeats inside
    train, val, test = sources
    assert not train & val
    assert not train & test
    assert not val & test


def test_splits_hold_reference_translations(splits):
    for source, target in splits.test[:50]:
        assert reference_translation(source) == target


def test_splits_are_seeded():
    assert make_splits(50, 5, 5, seed=3) == make_splits(50, 5, 5, seed=3)
    assert make_splits(50, 5, 5, seed=3) != make_splits(50, 5, 5, seed=4)


def test_lengths_vary(splits):
    lengths = {len(source) for source, _ in splits.train}
    assert lengths == set(range(5, 11))  # 5 to 10 English words
    lengths = {len(target) for _, target in splits.train}
    assert lengths == set(range(5, 10))  # 5 to 9 German words


# --- vocabularies ---------------------------------------------------------------------


def test_vocab_special_tokens_and_sizes():
    src, tgt = source_vocab(), target_vocab()
    for vocab in (src, tgt):
        assert vocab.tokens[:3] == ("<pad>", "<bos>", "<eos>")
        assert (vocab.pad_id, vocab.bos_id, vocab.eos_id) == (0, 1, 2)
    assert (len(src), len(tgt)) == (39, 46)


def test_every_word_of_the_data_is_in_the_vocabularies(splits):
    src, tgt = source_vocab(), target_vocab()
    source_words = {w for split in splits for source, _ in split for w in source}
    target_words = {w for split in splits for _, target in split for w in target}
    assert source_words <= set(src.tokens)
    assert target_words <= set(tgt.tokens)


def test_encode_decode_round_trip():
    vocab = target_vocab()
    words = ("heute", "sieht", "der", "große", "Hund", "die", "Katze")
    ids = vocab.encode(words, bos=True, eos=True)
    assert ids[0] == vocab.bos_id and ids[-1] == vocab.eos_id
    assert vocab.decode(ids + [vocab.pad_id] * 3) == words
    assert vocab.decode(torch.tensor(ids)) == words


def test_decode_stops_at_the_first_eos():
    vocab = Vocab(["a", "b"])
    assert vocab.decode([3, 2, 4, 2]) == ("a",)


def test_encode_batch_pads_every_sentence_to_the_longest():
    vocab = Vocab(["a", "b", "c"])
    ids = vocab.encode_batch([["a", "b", "c"], "c", ("b", "a")], eos=True)
    assert ids.dtype == torch.long
    assert ids.tolist() == [[3, 4, 5, 2], [5, 2, 0, 0], [4, 3, 2, 0]]
    for row, sentence in zip(ids, ["a b c", "c", "b a"], strict=True):
        assert vocab.decode(row) == tuple(sentence.split())


# --- batches --------------------------------------------------------------------------


def test_make_batch_pads_and_shifts(splits):
    src_vocab, tgt_vocab = source_vocab(), target_vocab()
    pairs = splits.train[:6]
    batch = make_batch(pairs, src_vocab, tgt_vocab)
    longest_source = max(len(source) for source, _ in pairs)
    longest_target = max(len(target) for _, target in pairs)
    assert batch.src.shape == (6, longest_source)
    assert batch.tgt_in.shape == batch.tgt_out.shape == (6, longest_target + 1)
    assert (batch.tgt_in[:, 0] == tgt_vocab.bos_id).all()
    for row, (source, target) in enumerate(pairs):
        assert src_vocab.decode(batch.src[row]) == source
        assert tgt_vocab.decode(batch.tgt_out[row]) == target
        n = len(target)
        assert batch.tgt_out[row, n] == tgt_vocab.eos_id
        assert (batch.src[row, len(source) :] == src_vocab.pad_id).all()
        assert (batch.tgt_out[row, n + 1 :] == tgt_vocab.pad_id).all()
        # teacher forcing: the input is the output shifted right by one
        assert torch.equal(batch.tgt_in[row, 1 : n + 1], batch.tgt_out[row, :n])


def test_iterate_batches_covers_every_pair_once_and_trims(splits):
    data = make_batch(splits.val, source_vocab(), target_vocab())
    generator = torch.Generator().manual_seed(0)
    seen = []
    for batch in iterate_batches(data, 64, generator=generator):
        assert batch.src.shape[0] <= 64
        assert (batch.src[:, -1] != 0).any()  # no column of padding only
        assert (batch.tgt_in[:, -1] != 0).any()
        assert batch.tgt_in.shape == batch.tgt_out.shape
        seen += [tuple(row[row != 0].tolist()) for row in batch.src]
    expected = [tuple(row[row != 0].tolist()) for row in data.src]
    assert len(seen) == len(expected)
    assert sorted(seen) == sorted(expected)
    assert seen != expected  # shuffled


# --- errors ---------------------------------------------------------------------------


def four_pairs():
    return make_batch(make_splits(4, 1, 1).train, source_vocab(), target_vocab())


@pytest.mark.parametrize(
    "call, error, fragments",
    [
        (lambda: parse_source("the dog sees the unicorn"), ValueError, ["word 4"]),
        (lambda: parse_source("the dog sees"), ValueError, ["ends after 3 words"]),
        (
            lambda: parse_source("the dog sees the cat today"),
            ValueError,
            ["goes on after the object"],
        ),
        (lambda: parse_source("the dog wants see the cat"), ValueError, ["'to'"]),
        (lambda: parse_source("dog sees the cat"), ValueError, ["expects an article"]),
        (lambda: Clause("dog", "eats", "cat"), ValueError, ["choose one of"]),
        (
            lambda: Clause("dog", "sees", ["cat"]),
            TypeError,
            ["obj must be a str", "got list"],
        ),
        (lambda: make_splits(0, 1, 1), ValueError, ["num_train"]),
        (lambda: make_splits(1, 1.5, 1), TypeError, ["num_val"]),
        (lambda: make_splits(90_000, 9_000, 2_000), ValueError, ["smaller splits"]),
        (lambda: target_vocab().encode(["der", "hund"]), ValueError, ["hund"]),
        (lambda: Vocab(["a", "a"]), ValueError, ["repeats"]),
        (lambda: Vocab(["a"]).encode_batch([]), ValueError, ["at least one sentence"]),
        (lambda: next(iterate_batches(four_pairs(), 0)), ValueError, ["at least 1"]),
        (lambda: next(iterate_batches(four_pairs(), 2.0)), TypeError, ["int"]),
        (
            lambda: make_batch([], source_vocab(), target_vocab()),
            ValueError,
            ["at least one"],
        ),
    ],
)
def test_errors_teach(call, error, fragments, raises_teaching):
    raises_teaching(call, error, fragments)
