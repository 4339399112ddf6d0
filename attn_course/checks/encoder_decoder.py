"""Self-checks for Chapter 6, encoder, decoder and cross-attention."""

from __future__ import annotations

import torch

from ._common import (
    _INVERTED,
    _call,
    _first_difference,
    _fmt_index,
    _require_callable,
    _require_tensor,
)

__all__ = [
    "check_cross_attention_mask",
    "check_cross_attention_shapes",
    "check_future_detector",
]


def _cross_mask_cases():
    """(description, src ids (B, T_s) with <pad> = 0, T_t) for the mask check.

    The second case has B == T_t, where a (B, T_s) mask broadcasts without an
    error but pairs query i with the padding of sentence i.
    """
    generator = torch.Generator().manual_seed(6)
    cases = []
    for lengths, T_t in (([5, 3, 1], 4), ([4, 2, 3, 1], 4), ([3], 2)):
        T_s = max(lengths)
        src = torch.randint(3, 39, (len(lengths), T_s), generator=generator)
        for b, n in enumerate(lengths):
            src[b, n:] = 0  # <pad> after the real tokens
        cases.append((f"source lengths {lengths} and T_t = {T_t}", src, T_t))
    return cases


def check_cross_attention_mask(fn):
    """Check a function that builds the cross-attention mask of a padded batch.

    ``fn(src, T_t)`` gets source ids ``(B, T_s)`` padded with ``<pad>`` (id 0) and
    the target length ``T_t``, and must return a bool mask that broadcasts against
    the cross-attention scores ``(B, H, T_t, T_s)``: ``True`` (may attend) for
    every real source token, ``False`` for padding, the same for every head and
    every target position. ``(B, 1, 1, T_s)`` and ``(B, 1, T_t, T_s)`` both work.

    Parameters
    ----------
    fn : callable
        Your function ``fn(src, T_t) -> mask``.

    Returns
    -------
    None
        Prints one line starting with ✅ when all three batches pass.

    Raises
    ------
    AssertionError
        If ``fn`` raises or returns a wrong mask; a ``(B, T_s)`` mask that does not
        broadcast, or broadcasts wrongly because ``B == T_t``, an inverted mask, a
        causal mask and a float mask are named.

    Shapes
    ------
    src : (B, T_s); fn(src, T_t) : broadcastable to (B, H, T_t, T_s), bool.

    Examples
    --------
    >>> def my_cross_mask(src, T_t):
    ...     return (src != 0)[:, None, None, :]  # (B, T_s) -> (B, 1, 1, T_s)
    >>> check_cross_attention_mask(my_cross_mask)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_cross_attention_mask: your mask is correct for 3 padded batches; every
    target position of every head may attend to the real source tokens and to no
    padding.
    >>> check_cross_attention_mask(lambda src, T_t: src != 0)
    Traceback (most recent call last):
    ...
    AssertionError: check_cross_attention_mask: your mask for source lengths ...
    """
    check = "check_cross_attention_mask"
    _require_callable(fn, check, "my_cross_mask")
    H = 2
    for description, src, T_t in _cross_mask_cases():
        B, T_s = src.shape
        scores_shape = (B, H, T_t, T_s)
        real = src != 0  # (B, T_s)
        expected = real[:, None, None, :].expand(scores_shape)  # (B, H, T_t, T_s)
        name = f"{check}: your mask for {description}"
        mask = _call(fn, check, (src.clone(), T_t), description)
        mask = _require_tensor(mask, name)
        if mask.dtype != torch.bool:
            raise AssertionError(
                f"{name}: dtype is {mask.dtype}, not bool. Compare the ids with the "
                "<pad> id, src != 0, which gives bool directly (True = real token = "
                "may attend); a float mask of 0 and 1 would be added to the scores."
            )
        try:
            broadcast = torch.broadcast_shapes(tuple(mask.shape), scores_shape)
        except RuntimeError:
            broadcast = None
        two_d = tuple(mask.shape) == (B, T_s)
        if broadcast != scores_shape:
            fix = "give it the shape (B, 1, 1, T_s) or (B, 1, T_t, T_s)"
            if two_d:
                fix = (
                    "a (B, T_s) padding mask lines up with the last two dimensions "
                    "(T_t, T_s) of the scores, not with (B, ..., T_s); insert the "
                    "head and query dimensions: mask[:, None, None, :] or "
                    "attn_course.key_padding_to_attn_mask(mask) -> (B, 1, 1, T_s)"
                )
            raise AssertionError(
                f"{name}: shape {tuple(mask.shape)} does not broadcast to the scores "
                f"shape {scores_shape} (B, H, T_t, T_s); {fix}."
            )
        mask = mask.expand(scores_shape)
        if torch.equal(mask, expected):
            continue
        if two_d:
            hint = (
                f"your mask has shape (B, T_s) = {(B, T_s)}. It broadcasts only "
                f"because B = T_t = {B}, and then query row i gets the padding of "
                "sentence i instead of its own sentence's: a silent bug. Insert the "
                "head and query dimensions: mask[:, None, None, :] -> (B, 1, 1, T_s)"
            )
        elif torch.equal(mask, ~expected):
            hint = _INVERTED
        elif torch.equal(mask, expected & torch.ones(T_t, T_s, dtype=bool).tril()):
            hint = (
                "your mask is also causal. Cross-attention is never causal: the "
                "source sentence is complete before decoding starts, so every "
                "target position may see every real source token"
            )
        else:
            index = _first_difference(mask, expected)
            b, _, i, j = index
            should = "a real token" if bool(real[b, j]) else "padding"
            hint = (
                f"entry {_fmt_index(index)} is {bool(mask[index])}, but source "
                f"position {j} of sentence {b} is {should} (for every head and "
                f"target position, e.g. {i})"
            )
        raise AssertionError(f"{name}: {hint}.\nsource ids:\n{src}")
    print(
        f"✅ {check}: your mask is correct for 3 padded batches; every target "
        "position of every head may attend to the real source tokens and to no "
        "padding."
    )


_SHAPE_KEYS = ("W_query", "W_key", "W_value", "out_proj", "weights", "output")


def check_cross_attention_shapes(
    answer, *, d_in, d_context, d_out, num_heads, batch_size, T_q, T_k
):
    """Check predicted shapes and parameter count of a :class:`CrossAttention`.

    ``answer`` is a dict with the shapes of ``W_query.weight``, ``W_key.weight``,
    ``W_value.weight`` and ``out_proj.weight`` of
    ``CrossAttention(d_in, d_out, num_heads, d_context=d_context)``, the shapes of
    its attention ``weights`` and ``output`` for queries ``(batch_size, T_q, d_in)``
    and a context ``(batch_size, T_k, d_context)``, and its ``num_parameters``.
    The reference is the real module, built and run here.

    Parameters
    ----------
    answer : dict
        Keys ``"W_query"``, ``"W_key"``, ``"W_value"``, ``"out_proj"``,
        ``"weights"``, ``"output"`` (tuples of ints) and ``"num_parameters"`` (int).
    d_in, d_context, d_out, num_heads, batch_size, T_q, T_k : int
        The sizes of the exercise.

    Returns
    -------
    None
        Prints one line starting with ✅ when every prediction is right.

    Raises
    ------
    AssertionError
        For a missing key or a wrong prediction; transposed ``nn.Linear`` weights,
        swapped query and key lengths, a missing head dimension and a parameter count
        without the biases are named.

    Examples
    --------
    >>> answer = {
    ...     "W_query": (4, 4), "W_key": (4, 6), "W_value": (4, 6), "out_proj": (4, 4),
    ...     "weights": (1, 2, 3, 5), "output": (1, 3, 4), "num_parameters": 84,
    ... }
    >>> check_cross_attention_shapes(
    ...     answer, d_in=4, d_context=6, d_out=4, num_heads=2, batch_size=1, T_q=3,
    ...     T_k=5,
    ... )  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_cross_attention_shapes: all 7 predictions are right for
    CrossAttention(d_in=4, d_out=4, num_heads=2, d_context=6) on 3 queries and 5
    keys.
    """
    from ..modules import CrossAttention  # imported here, where it is needed

    check = "check_cross_attention_shapes"
    if not isinstance(answer, dict):
        raise AssertionError(
            f"{check}: expected a dict such as {{'W_query': (d_out, d_in), ...}}, "
            f"got {type(answer).__name__}."
        )
    missing = [key for key in (*_SHAPE_KEYS, "num_parameters") if key not in answer]
    if missing:
        raise AssertionError(f"{check}: your dict lacks the keys {missing}.")
    torch.manual_seed(0)
    module = CrossAttention(d_in, d_out, num_heads, d_context=d_context)
    x = torch.zeros(batch_size, T_q, d_in)
    context = torch.zeros(batch_size, T_k, d_context)
    output, weights = module(x, context, return_weights=True)
    expected = {
        "W_query": tuple(module.W_query.weight.shape),
        "W_key": tuple(module.W_key.weight.shape),
        "W_value": tuple(module.W_value.weight.shape),
        "out_proj": tuple(module.out_proj.weight.shape),
        "weights": tuple(weights.shape),
        "output": tuple(output.shape),
    }
    for key in _SHAPE_KEYS:
        value = answer[key]
        try:
            received = tuple(int(n) for n in value)
        except (TypeError, ValueError):
            raise AssertionError(
                f"{check}: answer[{key!r}] must be a shape such as (2, 3), got "
                f"{value!r}."
            ) from None
        right = expected[key]
        if received == right:
            continue
        hint = ""
        if key.startswith(("W_", "out_")) and received == right[::-1]:
            hint = (
                " nn.Linear(in_features, out_features) stores its weight as "
                "(out_features, in_features), the transpose of the x @ W "
                "convention: it computes x @ weight.T."
            )
        elif key == "weights" and received == (*right[:2], right[3], right[2]):
            hint = (
                " Rows are queries and columns keys: the T_q target positions ask, "
                "the T_k source tokens answer, so (B, H, T_q, T_k)."
            )
        elif key == "weights" and received in (
            (right[0], right[2], right[3]),
            right[2:],
        ):
            hint = " Each head has its own weights: keep the head dimension H."
        elif key == "W_key" or key == "W_value":
            hint = (
                " Keys and values are computed from the context (the encoder "
                f"output, width d_context = {d_context}), not from the queries."
            )
        raise AssertionError(
            f"{check}: answer[{key!r}] is {received}, but the module gives {right}."
            f"{hint}"
        )
    count = sum(p.numel() for p in module.parameters())
    received = answer["num_parameters"]
    if received != count:
        weights_only = sum(p.numel() for p in module.parameters() if p.dim() == 2)
        hint = ""
        if received == weights_only:
            hint = (
                f" You counted the weight matrices only: out_proj also has a bias of "
                f"{d_out} numbers (the query, key and value projections have none, "
                "qkv_bias=False)."
            )
        elif received == weights_only + 4 * d_out:
            hint = (
                " Only out_proj has a bias here: qkv_bias=False gives the query, "
                "key and value projections none."
            )
        raise AssertionError(
            f"{check}: answer['num_parameters'] is {received!r}, but the module has "
            f"{count}.{hint}"
        )
    print(
        f"✅ {check}: all 7 predictions are right for CrossAttention(d_in={d_in}, "
        f"d_out={d_out}, num_heads={num_heads}, d_context={d_context}) on {T_q} "
        f"queries and {T_k} keys."
    )


def _detector_models():
    """(description, model, sees the future?) for check_future_detector."""
    from ..seq2seq import Seq2SeqConfig, Seq2SeqTransformer

    models = []
    for causal in (True, False):
        torch.manual_seed(0)
        config = Seq2SeqConfig(
            11,
            13,
            d_model=16,
            num_heads=2,
            num_layers=1,
            d_ff=32,
            causal_decoder=causal,
        )
        name = "a causal decoder" if causal else "a decoder without the causal mask"
        models.append((name, Seq2SeqTransformer(config).eval(), not causal))
    return models


def check_future_detector(fn):
    """Check a function that tells whether a decoder can see future target tokens.

    ``fn(model, src, tgt_in)`` gets a :class:`attn_course.Seq2SeqTransformer`,
    source ids ``(B, T_s)`` and target ids ``(B, T_t)``, and must return ``True``
    if some logit depends on a *later* target token (the decoder sees the future)
    and ``False`` if not. It is tried on a causal decoder and on one built with
    ``causal_decoder=False``, for two batches.

    Parameters
    ----------
    fn : callable
        Your function ``fn(model, src, tgt_in) -> bool``.

    Returns
    -------
    None
        Prints one line starting with ✅ when every answer is right.

    Raises
    ------
    AssertionError
        If ``fn`` raises, returns something that is not a bool, changes its inputs
        in place, or gives a wrong answer (with the likely reason).

    Examples
    --------
    >>> def sees_the_future(model, src, tgt_in):
    ...     changed = tgt_in.clone()
    ...     changed[:, -1] = (changed[:, -1] + 1) % 10 + 3  # change the last token
    ...     before, after = model(src, tgt_in), model(src, changed)
    ...     return not torch.equal(before[:, :-1], after[:, :-1])
    >>> check_future_detector(sees_the_future)  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_future_detector: your detector is right on 2 batches: it clears the
    causal decoder and catches the one without the causal mask.
    """
    check = "check_future_detector"
    _require_callable(fn, check, "sees_the_future")
    generator = torch.Generator().manual_seed(6)
    batches = [
        (
            torch.randint(3, 11, (2, 6), generator=generator),
            torch.randint(3, 13, (2, 5), generator=generator),
        ),
        (
            torch.randint(3, 11, (3, 4), generator=generator),
            torch.randint(3, 13, (3, 7), generator=generator),
        ),
    ]
    for description, model, leaks in _detector_models():
        for src, tgt_in in batches:
            where = f" for {description} and tgt_in of shape {tuple(tgt_in.shape)}"
            src_copy, tgt_copy = src.clone(), tgt_in.clone()
            with torch.no_grad():
                answer = _call(fn, check, (model, src_copy, tgt_copy), where[5:])
            if not (torch.equal(src_copy, src) and torch.equal(tgt_copy, tgt_in)):
                raise AssertionError(
                    f"{check}: your function changed src or tgt_in in place{where}; "
                    "change a copy instead: changed = tgt_in.clone()."
                )
            if isinstance(answer, torch.Tensor) and answer.numel() == 1:
                answer = bool(answer)
            if not isinstance(answer, bool):
                raise AssertionError(
                    f"{check}: expected True or False{where}, got "
                    f"{type(answer).__name__} {answer!r}."
                )
            if answer == leaks:
                continue
            if leaks:
                hint = (
                    "it missed a decoder that sees the future. Change a target token "
                    "that has positions before it (the last one is a good choice) "
                    "and compare the logits at the positions BEFORE it: with the "
                    "leak, they change"
                )
            else:
                hint = (
                    "it flagged the causal decoder. The logits at the changed "
                    "position and after it may change (they see the new token); "
                    "compare only the positions before it"
                )
            raise AssertionError(f"{check}: wrong answer {answer}{where}: {hint}.")
    print(
        f"✅ {check}: your detector is right on 2 batches: it clears the causal "
        "decoder and catches the one without the causal mask."
    )
