"""A key-value cache: the keys and values of the tokens already read, kept for the
next step of generation.

Without a cache every step recomputes the keys and values of all tokens; with one,
each step computes those of the new token in every layer, appends them and attends
from its query to everything stored: the same result, without the recomputation.
The price is memory, ``2 * num_layers * B * num_kv_heads * T * d`` numbers
(:func:`kv_cache_numbers`), which grouped-query attention shrinks. ``H_kv`` is the
number of key-value heads. Introduced in Chapter 9.
"""

from ._validate import require_int, require_tensor

__all__ = ["KVCache", "LayerCache", "kv_cache_numbers"]


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
