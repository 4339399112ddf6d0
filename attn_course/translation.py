"""A toy English -> German translation task, generated in code (Chapter 6).

Every sentence is one clause, ``the [adjective] noun``, a verb and an object, with
an optional modal (``can``, ``must``, ``wants to``) and an optional opening adverb
or conjunction. The German side follows real rules, so word-by-word is wrong:

- **Verb second**: ``today the dog sees the cat`` -> ``heute sieht der Hund die Katze``.
- **Verb last** after a conjunction:
  ``because the dog sees the cat`` -> ``weil der Hund die Katze sieht``.
- **Infinitive last** with a modal (``der Hund kann die Katze sehen``), after a
  conjunction before the modal: ``dass der Hund die Katze sehen kann``.
- **Agreement**: ``the big dog`` is ``der große Hund`` as a subject but
  ``den großen Hund`` as an object.

Sentences come from a seeded :class:`random.Random`; nothing is downloaded. Pairs
become padded id tensors, ``<bos>`` and ``<eos>`` framing the target.

Shapes
------
src : (B, T_s)
tgt_in, tgt_out : (B, T_t)
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import NamedTuple

import torch

from ._validate import kind_of, require_int

__all__ = [
    "ADJECTIVES",
    "BOS",
    "EOS",
    "MODALS",
    "NOUNS",
    "OPENERS",
    "PAD",
    "VERBS",
    "Batch",
    "Clause",
    "Splits",
    "Vocab",
    "iterate_batches",
    "make_batch",
    "make_splits",
    "parse_source",
    "reference_translation",
    "sample_clause",
    "source_vocab",
    "target_vocab",
]

PAD = "<pad>"
"""The padding token, id 0 in both vocabularies. Introduced in Chapter 6."""
BOS = "<bos>"
"""The beginning-of-sentence token that opens every decoder input, id 1.
Introduced in Chapter 6."""
EOS = "<eos>"
"""The end-of-sentence token that closes every decoder target, id 2.
Introduced in Chapter 6."""

NOUNS = {
    "dog": ("Hund", "m"),
    "man": ("Mann", "m"),
    "bird": ("Vogel", "m"),
    "cat": ("Katze", "f"),
    "woman": ("Frau", "f"),
    "mouse": ("Maus", "f"),
    "horse": ("Pferd", "n"),
    "child": ("Kind", "n"),
}
"""English noun -> (German noun, grammatical gender: m, f or n).
Introduced in Chapter 6."""
ADJECTIVES = {
    "big": "groß",
    "small": "klein",
    "old": "alt",
    "young": "jung",
    "tired": "müd",
}
"""English adjective -> German stem; the ending (-e or -en) comes from the noun
phrase. Introduced in Chapter 6."""
VERBS = {
    "sees": ("see", "sieht", "sehen"),
    "hears": ("hear", "hört", "hören"),
    "finds": ("find", "findet", "finden"),
    "knows": ("know", "kennt", "kennen"),
    "visits": ("visit", "besucht", "besuchen"),
    "loves": ("love", "liebt", "lieben"),
}
"""English 3rd person -> (English infinitive, German 3rd person, German infinitive).
Introduced in Chapter 6."""
MODALS = {
    "can": (("can",), "kann"),
    "must": (("must",), "muss"),
    "wants": (("wants", "to"), "will"),
}
"""Modal -> (its English words, German 3rd person). Introduced in Chapter 6."""
OPENERS = {
    english: (kind, german)
    for kind, words in (
        ("adverb", {"today": "heute", "now": "jetzt", "often": "oft"}),
        ("conjunction", {"because": "weil", "that": "dass", "if": "wenn"}),
    )
    for english, german in words.items()
}
"""Opening word -> (kind, German word). An adverb puts the verb second, a
conjunction puts it last. Introduced in Chapter 6."""
_ARTICLES = {  # (case, gender) -> definite article
    ("nominative", "m"): "der",
    ("nominative", "f"): "die",
    ("nominative", "n"): "das",
    ("accusative", "m"): "den",
    ("accusative", "f"): "die",
    ("accusative", "n"): "das",
}


def _adjective_ending(case, gender):
    """Weak ending after a definite article: ``-en`` for a masculine object, else -e."""
    return "en" if (case, gender) == ("accusative", "m") else "e"


@dataclass(frozen=True)
class Clause:
    """One sentence of the toy grammar, in English (:meth:`source`) and German
    (:meth:`target`); the words are keys of :data:`NOUNS`, :data:`VERBS`,
    :data:`ADJECTIVES`, :data:`MODALS` and :data:`OPENERS`. Introduced in Chapter 6.

    Examples
    --------
    >>> clause = Clause("dog", "sees", "cat", object_adjective="big", opener="that")
    >>> " ".join(clause.source())
    'that the dog sees the big cat'
    >>> " ".join(clause.target())
    'dass der Hund die große Katze sieht'
    >>> clause.alignment()  # source position of each German word
    (0, 1, 2, 4, 5, 6, 3)
    """

    subject: str
    verb: str
    obj: str
    subject_adjective: str | None = None
    object_adjective: str | None = None
    modal: str | None = None
    opener: str | None = None

    def __post_init__(self):
        tables = (
            ("subject", self.subject, NOUNS, False),
            ("obj", self.obj, NOUNS, False),
            ("verb", self.verb, VERBS, False),
            ("subject_adjective", self.subject_adjective, ADJECTIVES, True),
            ("object_adjective", self.object_adjective, ADJECTIVES, True),
            ("modal", self.modal, MODALS, True),
            ("opener", self.opener, OPENERS, True),
        )
        for field, value, table, optional in tables:
            if value is None and optional:
                continue
            if not isinstance(value, str):
                raise TypeError(
                    f"{field} must be a str, one English word, got {kind_of(value)} "
                    f"{value!r}; e.g. {field}={sorted(table)[0]!r}"
                )
            if value not in table:
                raise ValueError(
                    f"{field}={value!r} is not in the toy grammar; choose one of "
                    f"{sorted(table)}" + (" or None" if optional else "")
                )

    def _source_parts(self):
        """English words, each with the role it plays, in English order."""
        parts = []
        if self.opener is not None:
            parts.append(("opener", self.opener))
        parts += self._noun_phrase("subject", self.subject_adjective, self.subject)
        if self.modal is None:
            parts.append(("finite", self.verb))
        else:
            parts += [("finite", word) for word in MODALS[self.modal][0]]
            parts.append(("infinitive", VERBS[self.verb][0]))
        parts += self._noun_phrase("object", self.object_adjective, self.obj)
        return parts

    @staticmethod
    def _noun_phrase(role, adjective, noun):
        parts = [(f"{role} article", "the")]
        if adjective is not None:
            parts.append((f"{role} adjective", adjective))
        parts.append((f"{role} noun", noun))
        return parts

    def _target_parts(self):
        """German words, each with the role of the English word it translates."""
        subject = self._german_phrase("subject", "nominative")
        obj = self._german_phrase("object", "accusative")
        if self.modal is None:
            finite, rest = VERBS[self.verb][1], []
        else:
            finite = MODALS[self.modal][1]
            rest = [("infinitive", VERBS[self.verb][2])]
        finite = [("finite", finite)]
        if self.opener is None:  # subject, verb, object
            return subject + finite + obj + rest
        kind, word = OPENERS[self.opener]
        opener = [("opener", word)]
        if kind == "adverb":  # verb second: adverb, verb, subject, object
            return opener + finite + subject + obj + rest
        return opener + subject + obj + rest + finite  # conjunction: verb last

    def _german_phrase(self, role, case):
        noun, adjective = (
            (self.subject, self.subject_adjective)
            if role == "subject"
            else (self.obj, self.object_adjective)
        )
        german, gender = NOUNS[noun]
        parts = [(f"{role} article", _ARTICLES[case, gender])]
        if adjective is not None:
            ending = _adjective_ending(case, gender)
            parts.append((f"{role} adjective", ADJECTIVES[adjective] + ending))
        parts.append((f"{role} noun", german))
        return parts

    def source(self):
        """The English sentence as a tuple of words."""
        return tuple(word for _, word in self._source_parts())

    def target(self):
        """The German sentence as a tuple of words."""
        return tuple(word for _, word in self._target_parts())

    def alignment(self):
        """For each German word, the position of the English word it translates (a
        German modal points at the first English modal word, an article at ``the``).
        """
        positions = {}
        for position, (role, _) in enumerate(self._source_parts()):
            positions.setdefault(role, position)  # first word of each role
        return tuple(positions[role] for role, _ in self._target_parts())


def sample_clause(rng):
    """Draw one random clause from ``rng``. Introduced in Chapter 6.

    Plain, adverb-first and conjunction-first sentences each have probability 1/3, a
    modal 1/2, an adjective 1/2 per noun phrase; the object differs from the subject.
    """
    nouns, adjectives = sorted(NOUNS), sorted(ADJECTIVES)
    subject = rng.choice(nouns)
    obj = rng.choice([noun for noun in nouns if noun != subject])
    shape = rng.choice(["plain", "adverb", "conjunction"])
    opener = None
    if shape != "plain":
        opener = rng.choice(sorted(w for w, (k, _) in OPENERS.items() if k == shape))
    return Clause(
        subject=subject,
        verb=rng.choice(sorted(VERBS)),
        obj=obj,
        subject_adjective=rng.choice(adjectives) if rng.random() < 0.5 else None,
        object_adjective=rng.choice(adjectives) if rng.random() < 0.5 else None,
        modal=rng.choice(sorted(MODALS)) if rng.random() < 0.5 else None,
        opener=opener,
    )


def parse_source(words):
    """Parse an English sentence of the toy grammar into a :class:`Clause`.
    Introduced in Chapter 6.

    >>> parse_source("today the old man wants to visit the child").target()
    ('heute', 'will', 'der', 'alte', 'Mann', 'das', 'Kind', 'besuchen')
    """
    if isinstance(words, str):
        words = words.split()
    words = list(words)
    sentence = " ".join(words)
    position = 0

    def expect(options, what):
        nonlocal position
        if position >= len(words):
            raise ValueError(
                f"{sentence!r} ends after {len(words)} words, but the toy grammar "
                f"expects {what} next, one of {sorted(options)}"
            )
        word = words[position]
        if word not in options:
            raise ValueError(
                f"word {position} of {sentence!r} is {word!r}, but the toy grammar "
                f"expects {what} there, one of {sorted(options)}"
            )
        position += 1
        return word

    def peek(options):
        return position < len(words) and words[position] in options

    opener = expect(OPENERS, "an opener") if peek(OPENERS) else None
    expect({"the"}, "an article")
    subject_adjective = expect(ADJECTIVES, "an adjective") if peek(ADJECTIVES) else None
    subject = expect(NOUNS, "a noun")
    modal = expect(MODALS, "a modal") if peek(MODALS) else None
    if modal is None:
        verb = expect(VERBS, "a verb or a modal")
    else:
        for word in MODALS[modal][0][1:]:  # the "to" of "wants to"
            expect({word}, f"{word!r} after {modal!r}")
        infinitives = {english: third for third, (english, _, _) in VERBS.items()}
        verb = infinitives[expect(infinitives, "an infinitive")]
    expect({"the"}, "an article")
    object_adjective = expect(ADJECTIVES, "an adjective") if peek(ADJECTIVES) else None
    obj = expect(NOUNS, "a noun")
    if position != len(words):
        raise ValueError(
            f"{sentence!r} goes on after the object with {words[position:]}; a "
            "sentence of the toy grammar ends with its object noun"
        )
    return Clause(
        subject, verb, obj, subject_adjective, object_adjective, modal, opener
    )


def reference_translation(words):
    """Translate an English sentence of the toy grammar by its rules.
    Introduced in Chapter 6.

    >>> " ".join(reference_translation("because the big dog can see the cat"))
    'weil der große Hund die Katze sehen kann'
    """
    return parse_source(words).target()


class Vocab:
    """Map words to ids and back; ids 0, 1, 2 are ``<pad>``, ``<bos>``, ``<eos>``, and
    ``words`` get 3, 4, ... Introduced in Chapter 6.

    Examples
    --------
    >>> vocab = Vocab(["the", "dog"])
    >>> vocab.encode(["the", "dog"], eos=True)
    [3, 4, 2]
    >>> vocab.decode([1, 3, 4, 2, 0, 0])
    ('the', 'dog')
    >>> vocab.encode_batch(["the dog", "dog"])
    tensor([[3, 4],
            [4, 0]])
    """

    pad_id, bos_id, eos_id = 0, 1, 2

    def __init__(self, words):
        self.tokens = (PAD, BOS, EOS, *words)
        self.ids = {token: i for i, token in enumerate(self.tokens)}
        if len(self.ids) != len(self.tokens):
            repeated = sorted({t for t in self.tokens if self.tokens.count(t) > 1})
            raise ValueError(f"every word must appear once, got repeats {repeated}")

    def __len__(self):
        return len(self.tokens)

    def __repr__(self):
        shown = ", ".join(self.tokens[:8])
        return f"Vocab({len(self)} tokens: {shown}, ...)"

    def encode(self, words, *, bos=False, eos=False):
        """Turn words into ids, optionally framed by ``<bos>`` and ``<eos>``."""
        if isinstance(words, str):
            words = words.split()
        unknown = [word for word in words if word not in self.ids]
        if unknown:
            raise ValueError(
                f"{unknown} not in the vocabulary of {len(self)} tokens; the toy "
                "grammar knows only its own words (see attn_course.translation.NOUNS, "
                "VERBS, ...), and German nouns are capitalised"
            )
        ids = [self.ids[word] for word in words]
        return [self.bos_id] * bos + ids + [self.eos_id] * eos

    def encode_batch(self, sentences, *, bos=False, eos=False):
        """Encode sentences with :meth:`encode`, padded with ``<pad>`` into one long
        tensor.

        Shapes
        ------
        output : (B, T)
        """
        rows = [self.encode(sentence, bos=bos, eos=eos) for sentence in sentences]
        if not rows:
            raise ValueError("encode_batch needs at least one sentence, got none")
        longest = max(len(row) for row in rows)
        return torch.tensor(
            [row + [self.pad_id] * (longest - len(row)) for row in rows]
        )

    def decode(self, ids):
        """Ids to words: stop at the first ``<eos>``, drop ``<pad>`` and ``<bos>``."""
        if isinstance(ids, torch.Tensor):
            ids = ids.tolist()
        words = []
        for i in ids:
            if i == self.eos_id:
                break
            if i not in (self.pad_id, self.bos_id):
                words.append(self.tokens[i])
        return tuple(words)


def source_vocab():
    """The English vocabulary: special tokens, then every English word of the grammar.
    Introduced in Chapter 6.

    >>> vocab = source_vocab()
    >>> len(vocab), vocab.tokens[:5]
    (39, ('<pad>', '<bos>', '<eos>', 'the', 'dog'))
    """
    infinitives = [english for english, _, _ in VERBS.values()]
    modal_words = [w for words, _ in MODALS.values() for w in words]
    return Vocab(
        ["the", *NOUNS, *ADJECTIVES, *VERBS, *infinitives, *modal_words, *OPENERS]
    )


def target_vocab():
    """The German vocabulary: special tokens, then every German word of the grammar.
    Introduced in Chapter 6.

    >>> target_vocab().tokens[3:7]
    ('der', 'die', 'das', 'den')
    """
    articles = list(dict.fromkeys(_ARTICLES.values()))
    nouns = [german for german, _ in NOUNS.values()]
    adjectives = [stem + end for stem in ADJECTIVES.values() for end in ("e", "en")]
    verbs = [w for _, third, infinitive in VERBS.values() for w in (third, infinitive)]
    modals = [german for _, german in MODALS.values()]
    openers = [german for _, german in OPENERS.values()]
    return Vocab([*articles, *nouns, *adjectives, *verbs, *modals, *openers])


class Splits(NamedTuple):
    """Train, validation and test sentence pairs; no English sentence is in two.
    Introduced in Chapter 6.
    """

    train: tuple
    val: tuple
    test: tuple


def make_splits(num_train=8_000, num_val=500, num_test=1_000, *, seed=0):
    """Sample distinct sentences and split them into train, validation and test.

    Each element is a pair ``(source, target)`` of word tuples; no English sentence
    appears twice (the grammar has 338,688). Introduced in Chapter 6.

    >>> splits = make_splits(5, 2, 2, seed=0)
    >>> [len(split) for split in splits]
    [5, 2, 2]
    """
    num_train = require_int(num_train, "num_train")
    num_val = require_int(num_val, "num_val")
    num_test = require_int(num_test, "num_test")
    total = num_train + num_val + num_test
    if total > 100_000:
        raise ValueError(
            f"asked for {total} sentences; the toy grammar has 338,688, and sampling "
            "more than 100,000 distinct ones gets slow: use smaller splits"
        )
    rng = random.Random(seed)
    pairs = {}  # English sentence -> German sentence, in the order drawn
    while len(pairs) < total:
        clause = sample_clause(rng)
        pairs.setdefault(clause.source(), clause.target())
    ordered = list(pairs.items())
    return Splits(
        train=tuple(ordered[:num_train]),
        val=tuple(ordered[num_train : num_train + num_val]),
        test=tuple(ordered[num_train + num_val :]),
    )


class Batch(NamedTuple):
    """Padded id tensors of sentence pairs: ``tgt_in`` is ``<bos>`` and the target
    words, ``tgt_out`` the target words and ``<eos>`` (``tgt_in`` shifted left).
    Introduced in Chapter 6.

    Shapes
    ------
    src : (B, T_s)
    tgt_in, tgt_out : (B, T_t)
    """

    src: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor


def make_batch(pairs, src_vocab, tgt_vocab):
    """Encode sentence pairs and pad them into one :class:`Batch`; ``T_t`` is the
    longest target plus 1. Introduced in Chapter 6.

    Examples
    --------
    >>> pairs = [(("the", "dog", "sees", "the", "cat"),
    ...           ("der", "Hund", "sieht", "die", "Katze"))]
    >>> batch = make_batch(pairs, source_vocab(), target_vocab())
    >>> batch.src.shape, batch.tgt_in.shape
    (torch.Size([1, 5]), torch.Size([1, 6]))
    >>> target_vocab().decode(batch.tgt_out[0])
    ('der', 'Hund', 'sieht', 'die', 'Katze')
    """
    if len(pairs) == 0:
        raise ValueError("make_batch needs at least one sentence pair, got none")
    sources = [source for source, _ in pairs]
    targets = [target for _, target in pairs]
    src = src_vocab.encode_batch(sources)  # (B, T_s)
    tgt = tgt_vocab.encode_batch(targets, bos=True, eos=True)  # (B, T_t + 1)
    return Batch(src=src, tgt_in=tgt[:, :-1], tgt_out=tgt[:, 1:])


def _trim(ids, pad_id):
    """Drop the trailing columns that hold only padding."""
    used = (ids != pad_id).any(dim=0).nonzero()  # (n, 1): columns with a real id
    return ids[:, : int(used.max()) + 1] if used.numel() else ids[:, :1]


def iterate_batches(data, batch_size, *, generator=None, pad_id=Vocab.pad_id):
    """Cut one big :class:`Batch` into mini-batches, shuffled with ``generator`` if
    given; each keeps only the columns its longest sentence needs.
    Introduced in Chapter 6.

    >>> splits = make_splits(10, 1, 1)
    >>> data = make_batch(splits.train, source_vocab(), target_vocab())
    >>> [b.src.shape[0] for b in iterate_batches(data, 4)]
    [4, 4, 2]
    """
    batch_size = require_int(batch_size, "batch_size")
    N = data.src.shape[0]
    if generator is None:
        order = torch.arange(N)
    else:
        order = torch.randperm(N, generator=generator)
    for start in range(0, N, batch_size):
        index = order[start : start + batch_size]
        tgt_in = _trim(data.tgt_in[index], pad_id)  # (N, T_t) -> (B, T_t)
        yield Batch(
            src=_trim(data.src[index], pad_id),  # (N, T_s) -> (B, T_s)
            tgt_in=tgt_in,
            tgt_out=data.tgt_out[index, : tgt_in.shape[1]],  # (N, T_t) -> (B, T_t)
        )
