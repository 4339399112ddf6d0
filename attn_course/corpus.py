"""Real English text for Chapter 8's language model, and a character tokenizer.

Every Python ships its language reference's topics (what ``help("assert")``
prints) in ``pydoc_data.topics``: about 465,000 characters of English prose under
the PSF licence. :func:`python_docs_text` reads that file with
:func:`ast.literal_eval`, so nothing is run or downloaded; the text differs a
little between Python versions. :class:`CharTokenizer` gives each character an id;
:func:`train_val_split` and :func:`random_windows` make the training data.

Shapes
------
ids : (N,)
inputs, targets : (B, T)
"""

from __future__ import annotations

import ast
import importlib.resources

import torch

from ._validate import kind_of, require_int, require_tensor

__all__ = ["CharTokenizer", "python_docs_text", "random_windows", "train_val_split"]


def python_docs_text():
    """The English text of Python's language-reference topics, in alphabetical order of
    their names, joined with a blank line. Introduced in Chapter 8.

    >>> python_docs_text()[:22]
    'The "assert" statement'
    """
    source = importlib.resources.files("pydoc_data").joinpath("topics.py")
    tree = ast.parse(source.read_text(encoding="utf-8"))
    assignment = next(
        node
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(getattr(target, "id", None) == "topics" for target in node.targets)
    )
    topics = ast.literal_eval(assignment.value)
    return "\n\n".join(topics[name].strip() for name in sorted(topics))


class CharTokenizer:
    """One id per distinct character of ``text``, in sorted order: ``chars[i]`` has id
    ``i``. :meth:`encode` rejects a character it does not know. Introduced in Chapter 8.

    Shapes
    ------
    ids : (N,), from encode and for decode

    Examples
    --------
    >>> tok = CharTokenizer("hello world")
    >>> tok.chars
    [' ', 'd', 'e', 'h', 'l', 'o', 'r', 'w']
    >>> tok.encode("hold")
    tensor([3, 5, 4, 1])
    >>> tok.decode(tok.encode("hold"))
    'hold'
    """

    def __init__(self, text):
        if not isinstance(text, str) or not text:
            raise TypeError(
                f"text must be a non-empty str, got {kind_of(text)}; pass the corpus, "
                "e.g. CharTokenizer(python_docs_text())"
            )
        self.chars = sorted(set(text))
        self.vocab_size = len(self.chars)
        self._ids = {ch: i for i, ch in enumerate(self.chars)}

    def __repr__(self):
        return f"CharTokenizer(vocab_size={self.vocab_size})"

    def encode(self, text):
        """The ids of ``text``'s characters as a LongTensor ``(N,)``."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {kind_of(text)}")
        unknown = sorted(set(text) - self._ids.keys())
        if unknown:
            raise ValueError(
                f"{len(unknown)} character(s) not in the vocabulary: {unknown[:5]!r}; "
                "build the tokenizer from a text that contains them"
            )
        return torch.tensor([self._ids[ch] for ch in text], dtype=torch.long)

    def decode(self, ids):
        """The text of a sequence of ids (a 1-D tensor or a list of ints)."""
        if isinstance(ids, torch.Tensor):
            if ids.dim() != 1:
                raise ValueError(
                    f"decode takes one sequence of ids, shape (N,), got "
                    f"{tuple(ids.shape)}; decode each row, e.g. tok.decode(ids[0])"
                )
            ids = ids.tolist()
        bad = [i for i in ids if not 0 <= i < self.vocab_size]
        if bad:
            raise ValueError(
                f"ids {bad[:5]} are outside 0..{self.vocab_size - 1} (vocab_size="
                f"{self.vocab_size})"
            )
        return "".join(self.chars[i] for i in ids)


def train_val_split(ids, val_fraction=0.1):
    """The first ``1 - val_fraction`` of ``ids`` for training, the rest for validation.

    A cut, not a shuffle: neighbouring windows overlap, so a shuffle would leak
    training text into validation. Introduced in Chapter 8.

    Shapes
    ------
    ids : (N,)

    Examples
    --------
    >>> train, val = train_val_split(torch.arange(10), val_fraction=0.2)
    >>> train.tolist(), val.tolist()
    ([0, 1, 2, 3, 4, 5, 6, 7], [8, 9])
    """
    require_tensor(ids, "ids")
    if not 0 < val_fraction < 1:
        raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction!r}")
    cut = int(len(ids) * (1 - val_fraction))
    return ids[:cut], ids[cut:]


def random_windows(ids, batch_size, context_length, *, generator=None):
    """``batch_size`` random windows of ``ids`` and the same windows one step later:
    ``targets[b, t] = ids[start_b + t + 1]``, the next character.
    Introduced in Chapter 8.

    Shapes
    ------
    ids : (N,)
    inputs, targets : (B, T) with ``T = context_length``

    Examples
    --------
    >>> x, y = random_windows(torch.arange(100), 2, 5,
    ...                       generator=torch.Generator().manual_seed(0))
    >>> bool((y == x + 1).all())
    True
    """
    require_tensor(ids, "ids")
    require_int(batch_size, "batch_size")
    require_int(context_length, "context_length")
    if len(ids) <= context_length:
        raise ValueError(
            f"ids has {len(ids)} tokens, too few for windows of context_length="
            f"{context_length} plus one target; use a shorter context_length"
        )
    starts = torch.randint(
        len(ids) - context_length, (batch_size,), generator=generator
    )  # (B,)
    offsets = torch.arange(context_length)  # (T,)
    inputs = ids[starts[:, None] + offsets]  # (B, T)
    targets = ids[starts[:, None] + offsets + 1]  # (B, T)
    return inputs, targets
