"""A key-value cache: the keys and values of the tokens already read, kept for the
next step of generation.

Without a cache every step recomputes the keys and values of all tokens; with one,
each step computes those of the new token in every layer, appends them and attends
from its query to everything stored: the same result, without the recomputation.
The price is memory, ``2 * num_layers * B * num_kv_heads * T * d`` numbers
(:func:`kv_cache_numbers`), which grouped-query attention shrinks. ``H_kv`` is the
number of key-value heads. Introduced in Chapter 9.

Chapter 11's :class:`PagedKVCache` serves many sequences from one pool of
fixed-size blocks, sharing the blocks of a common prompt, and
:func:`paged_vs_preallocated` compares its memory with a cache that reserves the
maximum length for every sequence.
"""

import torch

from ._validate import require_int, require_tensor

__all__ = [
    "KVCache",
    "LayerCache",
    "PagedKVCache",
    "kv_cache_numbers",
    "paged_vs_preallocated",
]


class LayerCache:
    """The keys and values one attention layer has seen, ``(B, H_kv, T, d)`` each.

    :meth:`append` writes the new tokens after those stored and returns all of them.
    Storage is reserved ahead (``capacity`` tokens, doubling when full), so a step
    copies only its new tokens, where ``torch.cat`` would copy the whole cache. It is
    written in place: for inference, under ``torch.no_grad()``.
    Introduced in Chapter 9.

    Examples
    --------
    >>> import torch
    >>> layer = LayerCache()
    >>> k = torch.zeros(1, 2, 3, 4)  # (B, H_kv, T_new=3, d)
    >>> _ = layer.append(k, k)
    >>> _ = layer.append(k[:, :, :1], k[:, :, :1])  # one token more: room for 6
    >>> len(layer), layer.capacity, tuple(layer.keys.shape)
    (4, 6, (1, 2, 4, 4))
    """

    def __init__(self, *, capacity=0):
        self._capacity = require_int(capacity, "capacity", minimum=0)
        self._keys = self._values = None  # the storage, (B, H_kv, capacity, d)
        self._length = 0  # the tokens written so far

    def __len__(self):
        """The number of tokens stored."""
        return self._length

    @property
    def capacity(self):
        """The number of tokens the storage has room for."""
        return 0 if self._keys is None else self._keys.size(2)

    @property
    def keys(self):
        return None if self._keys is None else self._keys[:, :, : self._length]

    @property
    def values(self):
        return None if self._values is None else self._values[:, :, : self._length]

    def append(self, keys, values):
        """Store the new tokens' ``keys`` and ``values``, ``(B, H_kv, T_new, d)``
        each, after those already stored; return all of them, ``(B, H_kv, T, d)``.
        """
        for name, t in (("keys", keys), ("values", values)):
            require_tensor(t, name)
            if t.dim() != 4:
                raise ValueError(
                    f"expected {name} of shape (B, H_kv, T_new, d), got "
                    f"{tuple(t.shape)}; split the heads before caching"
                )
        if keys.shape != values.shape:
            raise ValueError(
                f"keys {tuple(keys.shape)} and values {tuple(values.shape)} must have "
                "the same shape (B, H_kv, T_new, d)"
            )
        B, H_kv, T_new, d = keys.shape
        if self._keys is not None and (B, H_kv, d) != (
            self._keys.size(0),
            self._keys.size(1),
            self._keys.size(3),
        ):
            raise ValueError(
                f"the cache holds keys of shape {tuple(self.keys.shape)} "
                f"(B, H_kv, T, d); new keys of shape {tuple(keys.shape)} differ in "
                "B, H_kv or d. Use a fresh KVCache for a new batch or a different model"
            )
        start, end = self._length, self._length + T_new
        if end > self.capacity:
            # Room for at least twice as many tokens: (B, H_kv, capacity, d)
            capacity = max(end, 2 * self.capacity, self._capacity)
            stored = self.keys, self.values
            self._keys = keys.new_empty((B, H_kv, capacity, d))
            self._values = values.new_empty((B, H_kv, capacity, d))
            if start:  # the one copy of what is stored, once per doubling
                self._keys[:, :, :start] = stored[0]
                self._values[:, :, :start] = stored[1]
        # The new tokens go after the stored ones, in place: positions start..end-1
        self._keys[:, :, start:end] = keys
        self._values[:, :, start:end] = values
        self._length = end
        return self.keys, self.values

    def truncate(self, length):
        """Keep the first ``length`` tokens and forget the rest; the storage stays."""
        length = require_int(length, "length", minimum=0)
        if length > self._length:
            raise ValueError(
                f"cannot keep length={length} tokens: the cache holds "
                f"{self._length}; use a length from 0 to {self._length}"
            )
        self._length = length

    def numbers(self):
        """How many numbers the stored keys and values hold together (those of
        the tokens stored, not of the room reserved)."""
        return 0 if self._keys is None else self.keys.numel() + self.values.numel()

    def nbytes(self):
        """The bytes of the stored keys and values."""
        if self._keys is None:
            return 0
        return self.numbers() * self._keys.element_size()


class KVCache:
    """One :class:`LayerCache` per layer of a model.

    ``model(idx, cache=cache)`` gives the new tokens the positions after those cached,
    and every block appends to its own layer; ``len(cache)`` counts the tokens cached.
    :func:`attn_course.generate` with ``use_cache=True`` makes and fills one.
    Introduced in Chapter 9.

    Examples
    --------
    >>> import torch
    >>> cache = KVCache(num_layers=2)
    >>> k = torch.zeros(1, 2, 3, 4)  # (B, H_kv, T_new=3, d)
    >>> _ = cache.layers[0].append(k, k)
    >>> _ = cache.layers[1].append(k, k)
    >>> len(cache), cache.numbers()  # 2 layers * (keys + values) * 1 * 2 * 3 * 4
    (3, 96)
    """

    def __init__(self, num_layers, *, capacity=0):
        require_int(num_layers, "num_layers", hint="e.g. KVCache(config.num_layers)")
        self.layers = [LayerCache(capacity=capacity) for _ in range(num_layers)]

    def __len__(self):
        """The number of tokens cached (those of the first layer)."""
        return len(self.layers[0])

    def truncate(self, length):
        """Keep the first ``length`` tokens in every layer (see
        :meth:`LayerCache.truncate`)."""
        for layer in self.layers:
            layer.truncate(length)

    def numbers(self):
        """How many numbers the whole cache holds."""
        return sum(layer.numbers() for layer in self.layers)

    def nbytes(self):
        """The bytes the whole cache holds."""
        return sum(layer.nbytes() for layer in self.layers)

    def __repr__(self):
        return (
            f"KVCache(layers={len(self.layers)}, tokens={len(self)}, "
            f"numbers={self.numbers():,})"
        )


def kv_cache_numbers(num_layers, num_kv_heads, head_dim, tokens, batch=1):
    """How many numbers a KV cache holds:
    ``2 * num_layers * batch * num_kv_heads * tokens * head_dim``; times the bytes of
    one number (4 for float32) for the memory. Introduced in Chapter 9.

    >>> kv_cache_numbers(num_layers=4, num_kv_heads=4, head_dim=24, tokens=64)
    49152
    """
    sizes = {
        "num_layers": num_layers,
        "num_kv_heads": num_kv_heads,
        "head_dim": head_dim,
        "tokens": tokens,
        "batch": batch,
    }
    n = {name: require_int(value, name, minimum=0) for name, value in sizes.items()}
    return (
        2
        * n["num_layers"]
        * n["batch"]
        * n["num_kv_heads"]
        * n["tokens"]
        * n["head_dim"]
    )


class PagedKVCache:
    """The keys and values of many sequences in one pool of fixed-size blocks, as a
    serving engine keeps them (PagedAttention, Kwon et al. 2023).

    Two pools, keys and values, of shape ``(num_blocks, block_size, H_kv, d)``: a
    block holds ``block_size`` consecutive tokens of one sequence, token after token,
    so that a token's slot is ``(block, position % block_size)``. Each sequence has
    a *block table*, the list of its blocks in order, and a length. :meth:`append`
    takes the new tokens as ``(H_kv, T_new, d)``, and :meth:`keys` and
    :meth:`values` give them back as ``(H_kv, T, d)``, in the layout of one
    sequence of :attr:`LayerCache.keys`. A sequence takes blocks from the free list
    only as it grows, so at most its last block has empty slots
    (:attr:`wasted_slots`), where a contiguous cache reserves the maximum length for
    every sequence (:func:`paged_vs_preallocated`).

    :meth:`add_sequence` with ``parent`` starts a sequence from the first
    ``prefix_length`` tokens of another, e.g. a shared prompt: the *full* blocks of
    that prefix are shared, and the partial last block, if any, is copied into a
    block of its own. A full block is never written again (appends go after the
    last token), so shared blocks need no copy-on-write; each block counts its users
    and returns to the free list when the last one is freed. For inference: the
    pools are written in place. Introduced in Chapter 11.

    Examples
    --------
    >>> import torch
    >>> cache = PagedKVCache(num_blocks=8, block_size=4, num_kv_heads=2, head_dim=3)
    >>> cache.add_sequence("prompt")
    >>> k = torch.randn(2, 6, 3)  # (H_kv, T_new=6, d): blocks of 4 and 2 tokens
    >>> cache.append("prompt", k, k)
    >>> cache.add_sequence("reply", parent="prompt")  # shares 1 block, copies 1
    >>> cache.block_table("prompt"), cache.block_table("reply")
    ([0, 1], [0, 2])
    >>> torch.equal(cache.keys("reply"), k)
    True
    >>> cache.blocks_in_use, cache.wasted_slots  # 3 blocks; 2 + 2 empty slots
    (3, 4)
    """

    def __init__(
        self, num_blocks, block_size, num_kv_heads, head_dim, *, dtype=torch.float32
    ):
        self.num_blocks = require_int(num_blocks, "num_blocks")
        self.block_size = require_int(
            block_size, "block_size", hint="it counts the tokens of a block, e.g. 16"
        )
        self.num_kv_heads = require_int(num_kv_heads, "num_kv_heads")
        self.head_dim = require_int(head_dim, "head_dim")
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise TypeError(
                f"dtype must be a floating-point torch.dtype, got {dtype!r}; e.g. "
                "dtype=torch.float32"
            )
        shape = (num_blocks, block_size, num_kv_heads, head_dim)
        self.key_pool = torch.zeros(shape, dtype=dtype)
        self.value_pool = torch.zeros(shape, dtype=dtype)
        self._free = list(range(num_blocks - 1, -1, -1))  # pop() takes the lowest
        self._users = [0] * num_blocks  # how many block tables hold each block
        self._tables = {}  # sequence -> its blocks, in order
        self._lengths = {}  # sequence -> its tokens

    def add_sequence(self, seq, *, parent=None, prefix_length=None):
        """Start the sequence ``seq`` (any hashable name), empty, or holding the first
        ``prefix_length`` tokens (all, by default) of the sequence ``parent``."""
        if seq in self._tables:
            raise ValueError(
                f"the cache already holds a sequence {seq!r}; choose another name, "
                f"or free({seq!r}) first"
            )
        table, length = [], 0
        if parent is not None:
            parent_length = self.length(parent)
            length = parent_length if prefix_length is None else prefix_length
            length = require_int(length, "prefix_length", minimum=0)
            if length > parent_length:
                raise ValueError(
                    f"prefix_length={length} is longer than the parent {parent!r}, "
                    f"which holds {parent_length} tokens; use 0 to {parent_length}"
                )
            full, rest = divmod(length, self.block_size)
            table = self._tables[parent][:full]
            if rest:  # the partial block: a copy of its first `rest` tokens
                (block,) = self._take(1, seq, length)
                source = self._tables[parent][full]
                for pool in (self.key_pool, self.value_pool):
                    pool[block, :rest] = pool[source, :rest]
                table = [*table, block]
            for block in table[:full]:
                self._users[block] += 1
        self._tables[seq], self._lengths[seq] = table, length

    def append(self, seq, keys, values):
        """Write ``keys`` and ``values``, ``(H_kv, T_new, d)`` each, after the tokens
        of ``seq``, taking blocks from the free list as needed."""
        length = self.length(seq)
        expected = (self.num_kv_heads, self.head_dim)
        for name, t in (("keys", keys), ("values", values)):
            require_tensor(t, name)
            if t.dim() != 3 or (t.size(0), t.size(2)) != expected:
                raise ValueError(
                    f"expected {name} of shape (H_kv={expected[0]}, T_new, "
                    f"d={expected[1]}), got {tuple(t.shape)}; for one sequence of a "
                    f"LayerCache batch, pass {name}[b]"
                )
            if t.dtype != self.key_pool.dtype:
                raise TypeError(
                    f"{name} have dtype {t.dtype}, the cache holds "
                    f"{self.key_pool.dtype}; convert them, e.g. "
                    f"{name}.to({self.key_pool.dtype})"
                )
        if keys.shape != values.shape:
            raise ValueError(
                f"keys {tuple(keys.shape)} and values {tuple(values.shape)} must have "
                "the same shape (H_kv, T_new, d)"
            )
        end = length + keys.size(1)
        table = self._tables[seq]
        needed = -(-end // self.block_size) - len(table)  # ceil(end / block_size)
        table.extend(self._take(needed, seq, end))
        # The slot of each new token in the pools seen as (blocks * block_size, ...)
        positions = torch.arange(length, end)
        blocks = torch.tensor(table, dtype=torch.long)[positions // self.block_size]
        slots = blocks * self.block_size + positions % self.block_size
        for pool, new in ((self.key_pool, keys), (self.value_pool, values)):
            pool.view(-1, *expected)[slots] = new.transpose(0, 1)  # (T_new, H_kv, d)
        self._lengths[seq] = end

    def _take(self, count, seq, end):
        """``count`` blocks from the free list, or an error that names the numbers."""
        if count > len(self._free):
            free, size = len(self._free), self.block_size
            raise ValueError(
                f"the pool is exhausted: sequence {seq!r} needs {count} more "
                f"block{'s' * (count != 1)} of {size} token{'s' * (size != 1)} to "
                f"hold {end} tokens, but {free} of {self.num_blocks} blocks "
                f"{'is' if free == 1 else 'are'} free; free a finished sequence, or "
                "make the cache with more blocks"
            )
        taken = [self._free.pop() for _ in range(count)]
        for block in taken:
            self._users[block] = 1
        return taken

    def _gather(self, pool, seq):
        """The tokens of ``seq`` from ``pool``, in order: ``(H_kv, T, d)``."""
        length, table = self.length(seq), self._tables[seq]
        tokens = pool[table].flatten(0, 1)[:length]  # (T, H_kv, d)
        return tokens.transpose(0, 1)

    def keys(self, seq):
        """The keys of ``seq``'s tokens, in order, ``(H_kv, T, d)``: a copy."""
        return self._gather(self.key_pool, seq)

    def values(self, seq):
        """The values of ``seq``'s tokens, in order, ``(H_kv, T, d)``: a copy."""
        return self._gather(self.value_pool, seq)

    def length(self, seq):
        """The number of tokens that ``seq`` holds."""
        if seq not in self._lengths:
            raise ValueError(
                f"the cache holds no sequence {seq!r} (it holds "
                f"{list(self._lengths)}); add it first with add_sequence({seq!r})"
            )
        return self._lengths[seq]

    def block_table(self, seq):
        """The blocks of ``seq``, in order (a copy of its block table)."""
        self.length(seq)
        return list(self._tables[seq])

    def free(self, seq):
        """Forget ``seq``; a block returns to the free list when no other sequence
        holds it."""
        self.length(seq)
        for block in self._tables.pop(seq):
            self._users[block] -= 1
            if self._users[block] == 0:
                self._free.append(block)
        del self._lengths[seq]

    @property
    def blocks_in_use(self):
        """The blocks that some sequence holds, each shared block once."""
        return self.num_blocks - len(self._free)

    @property
    def wasted_slots(self):
        """Slots in blocks in use that hold no token: the empty end of each
        sequence's last block (shared blocks are full)."""
        return sum(
            len(table) * self.block_size - self._lengths[seq]
            for seq, table in self._tables.items()
        )

    def __repr__(self):
        return (
            f"PagedKVCache(sequences={len(self._tables)}, blocks in use "
            f"{self.blocks_in_use} of {self.num_blocks}, block_size={self.block_size})"
        )


def paged_vs_preallocated(lengths, max_length, block_size):
    """Token slots that a batch of sequences of ``lengths`` takes in a paged cache
    (whole blocks of ``block_size``) and in a contiguous cache that reserves
    ``max_length`` for each, as the pair ``(paged, preallocated)``; per layer, times
    ``2 * H_kv * d`` for the numbers. Introduced in Chapter 11.

    >>> paged_vs_preallocated([5, 100, 17], max_length=128, block_size=16)
    (160, 384)
    """
    max_length = require_int(max_length, "max_length")
    block_size = require_int(block_size, "block_size")
    lengths = [require_int(n, "each length", minimum=0) for n in lengths]
    longer = [n for n in lengths if n > max_length]
    if longer:
        raise ValueError(
            f"lengths {longer} exceed max_length={max_length}; a preallocated cache "
            "reserves max_length tokens per sequence: raise it to at least "
            f"{max(longer)}"
        )
    paged = sum(-(-n // block_size) * block_size for n in lengths)
    return paged, len(lengths) * max_length
