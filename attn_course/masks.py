"""Attention masks: which keys each query may attend to.

Convention, everywhere in this package: in a bool mask ``True`` means *may attend*,
as in ``torch.nn.functional.scaled_dot_product_attention``. ``nn.MultiheadAttention``
uses the opposite (``True`` = *blocked*): a mask meant for one silently gives wrong
results in the other, so invert it with ``~mask`` between them.

Introduced in Chapter 3; Chapter 5 adds the reshape of a padding mask for
multi-head scores.
"""

import torch

from ._validate import kind_of, require_bool_mask, require_int

__all__ = [
    "causal_mask",
    "padding_mask",
    "to_additive_mask",
    "key_padding_to_attn_mask",
]

_SIZE_HINT = "it counts tokens, e.g. the sequence length x.shape[-2]"
_OFFSET_HINT = (
    "it is the position of query 0 among the keys: 0 aligns the first query with "
    "the first key (as is_causal=True), T_k - T_q the last with the last (a KV cache)"
)


def causal_mask(T_q, T_k=None, *, offset=0, device=None):
    """Bool mask letting each query attend only to the keys up to its own position.

    Query ``i`` sits at key position ``offset + i`` and may attend to keys
    ``0..offset + i``. ``offset=0`` aligns the triangle at the top-left corner, as
    ``is_causal=True`` does; ``T_q`` new tokens after ``T_k - T_q`` cached ones (a KV
    cache, Chapter 9) take ``offset=T_k - T_q``, PyTorch's ``causal_lower_right``.
    Introduced in Chapter 3.

    Shapes
    ------
    output : (T_q, T_k)

    Examples
    --------
    >>> causal_mask(3)
    tensor([[ True, False, False],
            [ True,  True, False],
            [ True,  True,  True]])
    >>> causal_mask(2, 4, offset=2)  # 2 new tokens after 2 cached ones
    tensor([[ True,  True,  True, False],
            [ True,  True,  True,  True]])
    """
    T_q = require_int(T_q, "T_q", hint=_SIZE_HINT)
    T_k = T_q if T_k is None else require_int(T_k, "T_k", hint=_SIZE_HINT)
    offset = require_int(offset, "offset", minimum=0, hint=_OFFSET_HINT)
    # Keep key j for query i where j <= offset + i: the diagonal moved right.
    return torch.ones(T_q, T_k, dtype=torch.bool, device=device).tril(offset)


def padding_mask(lengths, max_len=None):
    """Bool mask marking the real tokens of padded sequences.

    Row ``b`` is ``True`` for the first ``lengths[b]`` positions and ``False`` for the
    padding after them; ``max_len`` defaults to ``max(lengths)``. Give
    ``nn.MultiheadAttention``'s ``key_padding_mask`` its inverse, ``~mask``; for
    multi-head scores reshape it with :func:`key_padding_to_attn_mask`.
    Introduced in Chapter 3.

    Shapes
    ------
    lengths : (B,)
    output : (B, max_len)

    Examples
    --------
    >>> padding_mask([3, 1])
    tensor([[ True,  True,  True],
            [ True, False, False]])
    """
    if not isinstance(lengths, (list, tuple, torch.Tensor)):
        raise TypeError(
            "lengths must be a list, tuple or 1-D tensor of ints, got "
            f"{kind_of(lengths)}; e.g. padding_mask([3, 1])"
        )
    try:
        lengths = torch.as_tensor(lengths)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(
            f"lengths must be a flat list of ints, got {lengths!r}; "
            "e.g. padding_mask([3, 1])"
        ) from None
    if lengths.dim() != 1 or lengths.numel() == 0:
        raise ValueError(
            "lengths must be a non-empty 1-D list of sequence lengths, got shape "
            f"{tuple(lengths.shape)}; e.g. padding_mask([3, 1]) for a batch of 2"
        )
    if lengths.dtype == torch.bool or lengths.is_floating_point():
        raise TypeError(
            f"lengths must hold whole numbers, got dtype {lengths.dtype}; "
            "pass token counts such as [3, 1] (or lengths.long())"
        )
    if (lengths < 0).any():
        raise ValueError(
            f"lengths must be >= 0, got {lengths.tolist()}; each entry counts the "
            "real tokens of one sequence"
        )
    longest = int(lengths.max())
    if max_len is None:
        if longest == 0:
            raise ValueError(
                f"every length is 0 (lengths={lengths.tolist()}), so the padded "
                "length would be 0; pass max_len >= 1 to get a mask of padding only"
            )
        max_len = longest
    max_len = require_int(max_len, "max_len", hint=_SIZE_HINT)
    if longest > max_len:
        raise ValueError(
            f"a length is larger than max_len={max_len}: lengths={lengths.tolist()}; "
            f"use max_len >= {longest}, or truncate the sequences first"
        )
    positions = torch.arange(max_len, device=lengths.device)  # (max_len,)
    # Position t is real if t < length: (max_len,) against (B, 1) -> (B, max_len).
    return positions < lengths[:, None]


def to_additive_mask(mask, dtype=torch.float32):
    """Turn a bool mask into a float mask that is added to the scores: ``True`` becomes
    ``0``, ``False`` becomes ``-inf``, a weight of 0 after the softmax.
    Introduced in Chapter 3.

    Shapes
    ------
    mask : (...)
    output : (...)

    Examples
    --------
    >>> to_additive_mask(causal_mask(3))
    tensor([[0., -inf, -inf],
            [0., 0., -inf],
            [0., 0., 0.]])
    """
    require_bool_mask(
        mask, "mask", fix="build it with padding_mask(lengths) or causal_mask(T)"
    )
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(
            f"dtype must be a floating-point torch.dtype, got {dtype!r}; "
            "use the dtype of your scores, e.g. torch.float32"
        )
    additive = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
    return additive.masked_fill(~mask, float("-inf"))


def key_padding_to_attn_mask(mask):
    """Reshape a ``(B, T_k)`` padding mask so it broadcasts over attention scores.

    A ``(B, T_k)`` mask lines up with the *last* two dimensions of the scores
    ``(B, H, T_q, T_k)``, so it fails or, worse, masks the wrong entries; the view
    ``(B, 1, 1, T_k)`` applies each sequence's padding to every head and query.
    Introduced in Chapter 5.

    Shapes
    ------
    mask : (B, T_k) -> (B, 1, 1, T_k)

    Examples
    --------
    >>> key_padding_to_attn_mask(padding_mask([3, 1])).shape
    torch.Size([2, 1, 1, 3])
    """
    require_padding_mask(mask, "mask")
    return mask[:, None, None, :]  # (B, T_k) -> (B, 1, 1, T_k)


def require_padding_mask(mask, name, *, shape=None, letters="(B, T_k)"):
    """Return ``mask`` if it is a bool, 2-D padding mask (of ``shape`` if given); the
    one check of a padding mask, so the same mistake reads the same everywhere.
    ``letters`` names the expected shape in the message.

    >>> require_padding_mask(padding_mask([2]), "mask", shape=(1, 3))
    Traceback (most recent call last):
    ...
    ValueError: mask must be a (B, T_k) padding mask of shape (1, 3), got shape \
(1, 2); build it with attn_course.padding_mask(lengths, max_len=3)
    """
    require_bool_mask(
        mask,
        name,
        meaning="True = real token",
        fix="build it with attn_course.padding_mask(lengths)",
    )
    if mask.dim() == 2 and shape in (None, tuple(mask.shape)):
        return mask
    expected, build = "", "padding_mask(lengths)"
    if shape is not None:
        expected = f" of shape {tuple(shape)}"
        build = f"padding_mask(lengths, max_len={shape[-1]})"
    raise ValueError(
        f"{name} must be a {letters} padding mask{expected}, got shape "
        f"{tuple(mask.shape)}; build it with attn_course.{build}"
    )
