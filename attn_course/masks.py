"""Attention masks: which keys each query may attend to.

Convention, everywhere in this package: in a bool mask ``True`` means *may attend*,
as in ``torch.nn.functional.scaled_dot_product_attention``. Beware that
``nn.MultiheadAttention`` uses the opposite (``True`` = *blocked*): a mask meant for
one silently gives wrong results in the other, so invert it with ``~mask`` when you
move between them.
"""

import torch

__all__ = [
    "causal_mask",
    "key_padding_to_attn_mask",
    "padding_mask",
    "to_additive_mask",
]


def causal_mask(T_q, T_k=None, *, device=None):
    """Bool mask letting query ``i`` attend only to keys ``0..i``.

    The lower triangle, including the diagonal, is ``True`` (= *may attend*, the
    convention of PyTorch's ``scaled_dot_product_attention``; ``nn.MultiheadAttention``
    uses the opposite). When ``T_q != T_k`` the triangle is aligned at the top-left
    corner, as ``is_causal=True`` does in PyTorch.

    Parameters
    ----------
    T_q : int
        Number of queries (rows), at least 1.
    T_k : int, optional
        Number of keys (columns), at least 1; defaults to ``T_q``.
    device : torch.device or str, optional
        Where to create the mask.

    Returns
    -------
    torch.Tensor
        Bool mask, ``True`` where query ``i`` may attend to key ``j`` (``j <= i``).

    Shapes
    ------
    - output: ``(T_q, T_k)``

    Raises
    ------
    TypeError
        If ``T_q`` or ``T_k`` is not an int.
    ValueError
        If ``T_q`` or ``T_k`` is smaller than 1.

    Examples
    --------
    >>> causal_mask(3)
    tensor([[ True, False, False],
            [ True,  True, False],
            [ True,  True,  True]])
    >>> causal_mask(2, 4)
    tensor([[ True, False, False, False],
            [ True,  True, False, False]])
    """
    if T_k is None:
        T_k = T_q
    for name, size in (("T_q", T_q), ("T_k", T_k)):
        _check_size(name, size)
    # (T_q, T_k): keep the diagonal and everything below it.
    return torch.ones(T_q, T_k, dtype=torch.bool, device=device).tril()


def padding_mask(lengths, max_len=None):
    """Bool mask marking the real tokens of padded sequences.

    Row ``b`` is ``True`` for the first ``lengths[b]`` positions (real tokens) and
    ``False`` for the padding after them: ``True`` = *may attend*, the convention of
    PyTorch's ``scaled_dot_product_attention`` (``nn.MultiheadAttention``'s
    ``key_padding_mask`` uses the opposite, ``True`` = padding; pass it ``~mask``).

    Parameters
    ----------
    lengths : list of int, tuple of int or torch.Tensor
        The length of each sequence, shape ``(B,)``; each between 0 and ``max_len``.
    max_len : int, optional
        Padded length ``T``, at least 1; defaults to ``max(lengths)``.

    Returns
    -------
    torch.Tensor
        Bool mask, ``True`` for real tokens, ``False`` for padding.

    Shapes
    ------
    - lengths: ``(B,)``
    - output: ``(B, T)`` with ``T = max_len``

    To use it as an ``attn_mask`` over scores of shape ``(B, H, T_q, T_k)``, reshape
    it with :func:`key_padding_to_attn_mask`.

    Raises
    ------
    TypeError
        If ``lengths`` is not a list, tuple or tensor of whole numbers, or
        ``max_len`` is not an int.
    ValueError
        If ``lengths`` is empty or not 1-D, a length is negative or larger than
        ``max_len``, or the padded length would be 0.

    Examples
    --------
    >>> padding_mask([3, 1])
    tensor([[ True,  True,  True],
            [ True, False, False]])
    >>> padding_mask(torch.tensor([2]), max_len=4)
    tensor([[ True,  True, False, False]])
    """
    if not isinstance(lengths, (list, tuple, torch.Tensor)):
        raise TypeError(
            "lengths must be a list, tuple or 1-D tensor of ints, got "
            f"{type(lengths).__name__}; e.g. padding_mask([3, 1])"
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
        max_len = longest
        if max_len == 0:
            raise ValueError(
                f"every length is 0 (lengths={lengths.tolist()}), so the padded "
                "length would be 0; pass max_len >= 1 to get a mask of padding only"
            )
    _check_size("max_len", max_len)
    if longest > max_len:
        raise ValueError(
            f"a length is larger than max_len={max_len}: lengths={lengths.tolist()}; "
            f"use max_len >= {longest}, or truncate the sequences first"
        )
    positions = torch.arange(max_len, device=lengths.device)  # (T,)
    # (T,) against (B, 1) -> (B, T): position t is real if t < length.
    return positions < lengths[:, None]


def key_padding_to_attn_mask(mask):
    """Reshape a ``(B, T_k)`` padding mask so it broadcasts over attention scores.

    Scores have shape ``(B, H, T_q, T_k)``; a ``(B, T_k)`` mask lines up with the
    *last* two dimensions (``T_q, T_k``) instead, so it fails or, worse, silently
    masks the wrong entries. Inserting two size-1 dimensions gives ``(B, 1, 1, T_k)``,
    which applies each sequence's padding to every head and every query. The
    convention is unchanged: ``True`` = *may attend* (as in PyTorch's
    ``scaled_dot_product_attention``; ``nn.MultiheadAttention`` uses the opposite).

    Parameters
    ----------
    mask : torch.Tensor
        Bool padding mask, ``True`` for real tokens, e.g. from :func:`padding_mask`.

    Returns
    -------
    torch.Tensor
        The same mask as a view of shape ``(B, 1, 1, T_k)``.

    Shapes
    ------
    - mask: ``(B, T_k)``
    - output: ``(B, 1, 1, T_k)``, broadcasts against ``(B, H, T_q, T_k)``

    Raises
    ------
    TypeError
        If ``mask`` is not a bool tensor.
    ValueError
        If ``mask`` is not 2-D.

    Examples
    --------
    >>> mask = padding_mask([3, 1])  # (B=2, T_k=3)
    >>> key_padding_to_attn_mask(mask).shape
    torch.Size([2, 1, 1, 3])
    """
    _check_bool_mask(mask)
    if mask.dim() != 2:
        raise ValueError(
            f"mask must be a 2-D (B, T_k) padding mask, got shape {tuple(mask.shape)}; "
            "build one with padding_mask(lengths)"
        )
    return mask[:, None, None, :]  # (B, T_k) -> (B, 1, 1, T_k)


def to_additive_mask(mask, dtype=torch.float32):
    """Turn a bool mask into a float mask that is added to the scores.

    ``True`` (= *may attend*, the convention of PyTorch's
    ``scaled_dot_product_attention``; ``nn.MultiheadAttention`` uses the opposite)
    becomes ``0``, which leaves a score unchanged; ``False`` becomes ``-inf``, which
    gives the key a weight of 0 after the softmax. Both masks give the same attention.

    Parameters
    ----------
    mask : torch.Tensor
        Bool mask of any shape, ``True`` = may attend.
    dtype : torch.dtype, default torch.float32
        Floating-point dtype of the result; use the dtype of your scores.

    Returns
    -------
    torch.Tensor
        Float mask, ``0.0`` where ``mask`` is ``True`` and ``-inf`` where it is
        ``False``.

    Shapes
    ------
    - mask: any shape ``(...)``
    - output: the same shape ``(...)``

    Raises
    ------
    TypeError
        If ``mask`` is not a bool tensor or ``dtype`` is not a floating-point dtype.

    Examples
    --------
    >>> to_additive_mask(causal_mask(3))
    tensor([[0., -inf, -inf],
            [0., 0., -inf],
            [0., 0., 0.]])
    """
    _check_bool_mask(mask)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(
            f"dtype must be a floating-point torch.dtype, got {dtype!r}; "
            "use the dtype of your scores, e.g. torch.float32"
        )
    additive = torch.zeros(mask.shape, dtype=dtype, device=mask.device)  # (...)
    return additive.masked_fill(~mask, float("-inf"))  # (...)


def _check_size(name, size):
    """Raise a teaching error unless size is an int of at least 1."""
    if not isinstance(size, int) or isinstance(size, bool):
        raise TypeError(
            f"{name} must be an int, got {type(size).__name__} {size!r}; e.g. {name}=4"
        )
    if size < 1:
        raise ValueError(
            f"{name} must be at least 1, got {name}={size}; it counts tokens, "
            "e.g. the sequence length x.shape[-2]"
        )


def _check_bool_mask(mask):
    """Raise a teaching error unless mask is a bool tensor."""
    if not isinstance(mask, torch.Tensor):
        raise TypeError(
            f"mask must be a torch.Tensor, got {type(mask).__name__}; "
            "build it with padding_mask(lengths) or causal_mask(T)"
        )
    if mask.dtype != torch.bool:
        raise TypeError(
            f"mask must be bool (True = may attend), got dtype {mask.dtype}; "
            "if 1 marks the positions that may be attended to, use mask.bool()"
        )
