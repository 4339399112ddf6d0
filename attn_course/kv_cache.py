"""A key-value cache: the keys and values of the tokens already read, kept for the
next step of generation.

When a decoder generates, step ``t`` needs the keys and values of tokens
``0..t``. Without a cache the model recomputes all of them at every step, so the
work of one step grows with the length. With a cache, each step computes the key
and value of the one new token in every layer, appends them, and attends from the
new token's query to everything stored. The result is the same; only the
recomputation is gone.

Memory is the price: per layer, a key and a value of ``d`` numbers per key-value
head per token, so ``2 * num_layers * B * num_kv_heads * T * d`` numbers in all
(:func:`kv_cache_numbers`). Grouped-query attention shrinks it by using fewer
key-value heads than query heads.

Shape letters are those of :mod:`attn_course.shapes`; ``H_kv`` is the number of
key-value heads. Introduced in Chapter 9.
"""

import torch

from ._validate import require_int, require_tensor

__all__ = ["KVCache", "LayerCache", "kv_cache_numbers"]


class LayerCache:
    """The keys and values one attention layer has seen, ``(B, H_kv, T, d)`` each.

    :meth:`append` adds the new tokens' keys and values and returns everything
    stored so far, which is what the layer attends to. Introduced in Chapter 9.

    Attributes
    ----------
    keys, values : torch.Tensor or None
        ``(B, H_kv, T, d)``; ``None`` before the first :meth:`append`.
    """

    def __init__(self):
        self.keys = None
        self.values = None

    def __len__(self):
        """The number of tokens stored."""
        return 0 if self.keys is None else self.keys.size(2)

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
        if self.keys is None:
            self.keys, self.values = keys, values
        else:
            stored = self.keys.shape
            if (stored[0], stored[1], stored[3]) != (
                keys.size(0),
                keys.size(1),
                keys.size(3),
            ):
                raise ValueError(
                    f"the cache holds keys of shape {tuple(stored)} (B, H_kv, T, d); "
                    f"new keys of shape {tuple(keys.shape)} differ in B, H_kv or d. "
                    "Use a fresh KVCache for a new batch or a different model"
                )
            # Along T: (B, H_kv, T, d) + (B, H_kv, T_new, d) -> (B, H_kv, T + T_new, d)
            self.keys = torch.cat([self.keys, keys], dim=2)
            self.values = torch.cat([self.values, values], dim=2)
        return self.keys, self.values

    def numbers(self):
        """How many numbers the stored keys and values hold together."""
        return 0 if self.keys is None else self.keys.numel() + self.values.numel()

    def nbytes(self):
        """The bytes of the stored keys and values."""
        if self.keys is None:
            return 0
        return self.numbers() * self.keys.element_size()


class KVCache:
    """One :class:`LayerCache` per layer of a model.

    Pass it to :class:`attn_course.GPT` as ``model(idx, cache=cache)``: the model
    gives the new tokens the positions after those cached, and every block appends
    its keys and values to its own layer's cache. ``len(cache)`` is the number of
    tokens cached. :func:`attn_course.generate` with ``use_cache=True`` makes and
    fills one. Introduced in Chapter 9.

    Parameters
    ----------
    num_layers : int
        The number of attention layers of the model (``config.num_layers``).

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

    def __init__(self, num_layers):
        require_int(num_layers, "num_layers", hint="e.g. KVCache(config.num_layers)")
        self.layers = [LayerCache() for _ in range(num_layers)]

    def __len__(self):
        """The number of tokens cached (those of the first layer)."""
        return len(self.layers[0])

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
    """How many numbers a KV cache holds: ``2 * num_layers * batch * num_kv_heads *
    tokens * head_dim`` (a key and a value per layer, head and token).

    Multiply by the bytes of one number (4 for float32, 2 for float16) for the
    memory. Introduced in Chapter 9.

    Examples
    --------
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
