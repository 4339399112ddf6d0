"""The letters used for tensor shapes, stated once for the whole package.

A docstring's ``Shapes`` section writes one line per tensor, ``name : (dims)``,
with the dimensions named by the letters below (or by a constructor argument such
as ``d_in``, or a number). ``...`` stands for any number of leading dimensions.

========= ===============================================================
letter    meaning
========= ===============================================================
B         batch size: how many sequences are processed together
H         number of heads (``num_heads``)
T         sequence length, when queries and keys come from one sequence
T_q       number of queries
T_k       number of keys (and of values): the length of the sequence that
          keys and values come from
T_s       source length (the encoder's input, Chapter 6)
T_t       target length (the decoder's input, Chapter 6)
D         model width: the size of one token vector (``d_model``)
d         width of one head, ``d_out // num_heads``
d_k       width of queries and keys
d_v       width of values
d_in      input width of a module
d_out     output width of a module
d_memory  width of the memory vectors that cross-attention reads
d_ff      hidden width of the feed-forward network
V         vocabulary size (``vocab_size``)
N         number of items in a list (sentences, samples, steps)
========= ===============================================================

*Memory* is the sequence that keys and values come from when it is not the
sequence of the queries: in an encoder-decoder, the encoder's output.

Introduced in Chapter 1 (``T``, ``D``); each later letter in the chapter that first
needs it.
"""

from __future__ import annotations

LETTERS = {
    "B": "batch size",
    "H": "number of heads (num_heads)",
    "T": "sequence length, when queries and keys come from one sequence",
    "T_q": "number of queries",
    "T_k": "number of keys (and of values)",
    "T_s": "source length (encoder input)",
    "T_t": "target length (decoder input)",
    "D": "model width, the size of one token vector (d_model)",
    "d": "width of one head, d_out // num_heads",
    "d_k": "width of queries and keys",
    "d_v": "width of values",
    "d_in": "input width of a module",
    "d_out": "output width of a module",
    "d_memory": "width of the memory vectors that cross-attention reads",
    "d_ff": "hidden width of the feed-forward network",
    "V": "vocabulary size (vocab_size)",
    "N": "number of items in a list",
}
"""Each shape letter and what it counts, as data. Introduced in Chapter 1."""

__all__ = ["LETTERS"]
