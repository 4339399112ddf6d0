"""Self-checks for Chapter 6, encoder, decoder and cross-attention.

Shapes
------
Letters: see attn_course.shapes.
src : (B, T_s)
tgt_in : (B, T_t)
memory : (B, T_k, d_memory)
"""

from __future__ import annotations

import torch

from .._validate import require_int
from ._common import (
    INVERTED,
    as_shape,
    expect_dict,
    expect_mask,
    expect_tensor,
    first_difference,
    fmt_index,
    shape_mismatch,
)
from ._kit import (
    Case,
    Slip,
    call,
    exercise_check,
    first_slip,
    passed,
    run_cases,
    seeded,
)

__all__ = [
    "check_cross_attention_mask",
    "check_cross_attention_shapes",
    "check_future_detector",
]


def _cross_mask_cases():
    """Source ids ``(B, T_s)`` padded with ``<pad>`` = 0, and a target length.

    The second case has B == T_t, where a (B, T_s) mask broadcasts without an
    error but pairs query i with the padding of sentence i.
    """
    generator = torch.Generator().manual_seed(6)
    cases = []
    for lengths, T_t in (([5, 3, 1], 4), ([4, 2, 3, 1], 4), ([3], 2)):
        src = torch.randint(3, 39, (len(lengths), max(lengths)), generator=generator)
        for b, n in enumerate(lengths):
            src[b, n:] = 0  # <pad> after the real tokens
        cases.append(Case(f"source lengths {lengths} and T_t = {T_t}", (src, T_t)))
    return cases


@exercise_check("fn")
def check_cross_attention_mask(fn):
    """Check a function that builds the cross-attention mask of a padded batch.

    Introduced in Chapter 6. ``fn(src, T_t)`` gets source ids ``(B, T_s)`` padded
    with ``<pad>`` (id 0) and the target length ``T_t``, and must return a bool
    mask that broadcasts against the cross-attention scores ``(B, H, T_t, T_s)``:
    ``True`` (may attend) for every real source token, ``False`` for padding, the
    same for every head and every target position. ``(B, 1, 1, T_s)`` and ``(B, 1,
    T_t, T_s)`` both work.

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
        If ``fn`` raises, changes ``src``, or returns a wrong mask; a float mask, a
        ``(B, T_s)`` mask that does not broadcast, or broadcasts wrongly because
        ``B == T_t``, an inverted mask and a causal mask are named.
    TypeError
        If ``fn`` is not a function, e.g. a mask it returned.

    Shapes
    ------
    Letters: see attn_course.shapes.
    src : (B, T_s)
    mask : (B, 1, 1, T_s)
    scores : (B, H, T_t, T_s)

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
    H = 2

    def verify(case, mask):
        src, T_t = case.args
        B, T_s = src.shape
        scores_shape = (B, H, T_t, T_s)
        real = src != 0  # (B, T_s)
        expected = real[:, None, None, :].expand(scores_shape)  # -> (B, H, T_t, T_s)
        name = f"{check}: your mask for {case.description}"
        mask = expect_tensor(mask, name)
        if mask.dtype != torch.bool:
            raise AssertionError(
                f"{name}: dtype is {mask.dtype}, not bool. Compare the ids with the "
                "<pad> id, src != 0, which gives bool directly (True = real token = "
                "may attend); a float mask of 0 and 1 would be added to the scores."
            )
        two_d = tuple(mask.shape) == (B, T_s)
        try:
            broadcast = torch.broadcast_shapes(tuple(mask.shape), scores_shape)
        except RuntimeError:
            broadcast = None
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

        def wrong_entry():
            index = first_difference(mask, expected)
            b, _, i, j = index
            should = "a real token" if bool(real[b, j]) else "padding"
            return (
                f"entry {fmt_index(index)} is {bool(mask[index])}, but source "
                f"position {j} of sentence {b} is {should} (for every head and "
                f"target position, e.g. {i})"
            )

        slips = [
            Slip(
                (lambda _: True) if two_d else None,
                f"your mask has shape (B, T_s) = {(B, T_s)}. It broadcasts only "
                f"because B = T_t = {B}, and then query row i gets the padding of "
                "sentence i instead of its own sentence's: a silent bug. Insert the "
                "head and query dimensions: mask[:, None, None, :] -> (B, 1, 1, T_s)",
            ),
            Slip(~expected, INVERTED),
            Slip(
                expected & torch.ones(T_t, T_s, dtype=torch.bool).tril(),
                "your mask is also causal. Cross-attention is never causal: the "
                "source sentence is complete before decoding starts, so every "
                "target position may see every real source token",
            ),
        ]
        expect_mask(
            mask,
            expected,
            slips,
            name,
            otherwise=wrong_entry,
            shown=f"source ids:\n{src}",
        )

    run_cases(
        check,
        fn,
        _cross_mask_cases(),
        verify,
        example="my_cross_mask",
        names=("src", "T_t"),
        fix="change a copy instead, e.g. src = src.clone().",
        success="your mask is correct for 3 padded batches; every target position "
        "of every head may attend to the real source tokens and to no padding.",
    )


_SHAPE_KEYS = ("W_query", "W_key", "W_value", "out_proj", "weights", "output")

# The letters of each predicted shape, for the messages.
_SHAPE_LETTERS = {
    "W_query": ("d_out", "d_in"),
    "W_key": ("d_out", "d_memory"),
    "W_value": ("d_out", "d_memory"),
    "out_proj": ("d_out", "d_out"),
    "weights": ("B", "H", "T_q", "T_k"),
    "output": ("B", "T_q", "d_out"),
}


def _shape_slips(key, right, d_memory, H):
    """The known slips in predicting the shape ``right`` of ``key``."""
    B, H, T_q, T_k = right if key == "weights" else (None, H, None, None)
    if key == "output":
        B, T_q, d_out = right
    linear = key in ("W_query", "W_key", "W_value", "out_proj")
    return [
        Slip(
            right[::-1] if linear else None,
            "nn.Linear(in_features, out_features) stores its weight as "
            "(out_features, in_features), the transpose of the x @ W convention: "
            "it computes x @ weight.T.",
        ),
        Slip(
            (B, H, T_k, T_q) if key == "weights" else None,
            "Rows are queries and columns keys: the T_q target positions ask, the "
            "T_k source tokens answer, so (B, H, T_q, T_k).",
        ),
        Slip(
            (B, T_q, T_k) if key == "weights" else None,
            "Each head has its own weights: keep the head dimension H.",
        ),
        Slip(
            (T_q, T_k) if key == "weights" else None,
            "Each head has its own weights: keep the head dimension H.",
        ),
        Slip(
            (lambda _: True) if key in ("W_key", "W_value") else None,
            "Keys and values are computed from the memory (the encoder output, "
            f"width d_memory = {d_memory}), not from the queries.",
        ),
        Slip(
            (lambda answer: len(answer) == 3 and answer[1] != T_q)
            if key == "output"
            else None,
            "There is one output vector per query: T_q of them. The memory's length "
            "T_k only says how many keys each query reads.",
        ),
        Slip(
            (lambda answer: len(answer) == 4) if key == "output" else None,
            "out_proj works on the heads glued back together: the output has no "
            "head dimension, (B, T_q, d_out).",
        ),
        Slip(
            (B, T_q, d_out // H) if key == "output" else None,
            "That is the width of one head; the heads are glued back together "
            "before out_proj, which gives d_out features.",
        ),
        Slip(
            (B, T_q, d_memory) if key == "output" and d_memory != d_out else None,
            "The output lives in the decoder's width d_out: out_proj maps d_out to "
            "d_out. The memory's width d_memory only enters W_key and W_value.",
        ),
    ]


@exercise_check("answer")
def check_cross_attention_shapes(
    answer, *, d_in, d_memory, d_out, num_heads, batch_size, T_q, T_k
):
    """Check predicted shapes and parameter count of a :class:`CrossAttention`.

    Introduced in Chapter 6. ``answer`` is a dict with the shapes of
    ``W_query.weight``, ``W_key.weight``, ``W_value.weight`` and
    ``out_proj.weight`` of ``CrossAttention(d_in, d_out, num_heads,
    d_memory=d_memory)``, the shapes of its attention ``weights`` and ``output``
    for ``batch_size`` sequences of ``T_q`` queries reading a memory of ``T_k``
    tokens, and its ``num_parameters``. The reference is the real module, built
    and run here.

    Parameters
    ----------
    answer : dict
        Keys ``"W_query"``, ``"W_key"``, ``"W_value"``, ``"out_proj"``,
        ``"weights"``, ``"output"`` (tuples of ints) and ``"num_parameters"`` (int).
    d_in, d_memory, d_out, num_heads, batch_size, T_q, T_k : int
        The sizes of the exercise.

    Returns
    -------
    None
        Prints one line starting with ✅ when all 7 predictions are right.

    Raises
    ------
    AssertionError
        For a missing key or wrong predictions, each listed with the dimensions
        that are off (never the right shape); transposed ``nn.Linear`` weights,
        swapped query and key lengths, a missing head dimension, keys and values
        sized from the queries, an output per key or per head, and a parameter
        count without the biases or without ``d_memory`` are named.
    TypeError, ValueError
        If a size is not a positive int, or ``d_out`` is not divisible by
        ``num_heads`` (a mistake in the call).

    Shapes
    ------
    Letters: see attn_course.shapes.
    x : (B, T_q, d_in)
    memory : (B, T_k, d_memory)
    weights : (B, H, T_q, T_k)
    output : (B, T_q, d_out)

    Examples
    --------
    >>> answer = {
    ...     "W_query": (4, 4), "W_key": (4, 6), "W_value": (4, 6), "out_proj": (4, 4),
    ...     "weights": (1, 2, 3, 5), "output": (1, 3, 4), "num_parameters": 84,
    ... }
    >>> check_cross_attention_shapes(
    ...     answer, d_in=4, d_memory=6, d_out=4, num_heads=2, batch_size=1, T_q=3,
    ...     T_k=5,
    ... )  # doctest: +NORMALIZE_WHITESPACE
    ✅ check_cross_attention_shapes: all 7 predictions are right for
    CrossAttention(d_in=4, d_out=4, num_heads=2, d_memory=6) on 3 queries and 5
    keys.
    """
    from ..modules import CrossAttention

    check = "check_cross_attention_shapes"
    sizes = {
        "d_in": d_in,
        "d_memory": d_memory,
        "d_out": d_out,
        "num_heads": num_heads,
        "batch_size": batch_size,
        "T_q": T_q,
        "T_k": T_k,
    }
    d_in, d_memory, d_out, H, B, T_q, T_k = (
        require_int(n, name) for name, n in sizes.items()
    )
    with seeded(0):
        module = CrossAttention(d_in, d_out, H, d_memory=d_memory)
    answer = expect_dict(answer, check, "{'W_query': (d_out, d_in), ...}")
    missing = [key for key in (*_SHAPE_KEYS, "num_parameters") if key not in answer]
    if missing:
        raise AssertionError(f"{check}: your dict lacks the keys {missing}.")
    x, memory = torch.zeros(B, T_q, d_in), torch.zeros(B, T_k, d_memory)
    with torch.no_grad():
        output, weights = module(x, memory, return_weights=True)
    expected = {
        "W_query": tuple(module.W_query.weight.shape),
        "W_key": tuple(module.W_key.weight.shape),
        "W_value": tuple(module.W_value.weight.shape),
        "out_proj": tuple(module.out_proj.weight.shape),
        "weights": tuple(weights.shape),
        "output": tuple(output.shape),
    }
    wrong = []
    for key in _SHAPE_KEYS:
        received, right = as_shape(answer[key]), expected[key]
        if received is None:
            wrong.append(
                f"  {key!r}: {answer[key]!r} must be a shape such as (2, 3), a tuple "
                "of ints."
            )
        elif received != right:
            why = first_slip(
                received, _shape_slips(key, right, d_memory, H), atol=0, rtol=0
            )
            off = shape_mismatch(received, right, _SHAPE_LETTERS[key])
            wrong.append(
                f"  {key!r}: you predicted {received}, but {off}."
                + (f" {why}" if why else "")
            )
    count = sum(p.numel() for p in module.parameters())
    received = answer["num_parameters"]
    if isinstance(received, torch.Tensor) and received.numel() == 1:
        received = received.item()
    if isinstance(received, bool) or not isinstance(received, (int, float)):
        wrong.append(
            f"  'num_parameters': {received!r} must be a number, the count of "
            "trainable values (an int)."
        )
    elif received != count:
        weights_only = sum(p.numel() for p in module.parameters() if p.dim() == 2)
        slips = [
            Slip(
                weights_only,
                "You counted the weight matrices only: out_proj also has a bias of "
                "d_out numbers (the query, key and value projections have none, "
                "qkv_bias=False).",
            ),
            Slip(
                weights_only + 4 * d_out,
                "Only out_proj has a bias here: qkv_bias=False gives the query, key "
                "and value projections none.",
            ),
            Slip(
                count + 2 * d_out * (d_in - d_memory) if d_in != d_memory else None,
                "W_key and W_value read the memory: each has d_out * d_memory "
                "weights, not d_out * d_in.",
            ),
        ]
        why = first_slip(received, slips, atol=0, rtol=0) or (
            "Add up out_features * in_features for the four nn.Linear weights, and "
            "out_proj's bias of d_out."
        )
        direction = "too high" if received > count else "too low"
        wrong.append(f"  'num_parameters': {received!r} is {direction}. {why}")
    setting = (
        f"CrossAttention(d_in={d_in}, d_out={d_out}, num_heads={H}, "
        f"d_memory={d_memory}) with x of shape {(B, T_q, d_in)} and a memory of "
        f"shape {(B, T_k, d_memory)}"
    )
    if wrong:
        raise AssertionError(
            f"{check}: {len(wrong)} of 7 predictions are wrong for {setting}:\n"
            + "\n".join(wrong)
        )
    passed(
        check,
        f"all 7 predictions are right for CrossAttention(d_in={d_in}, d_out={d_out}, "
        f"num_heads={H}, d_memory={d_memory}) on {T_q} queries and {T_k} keys.",
    )


def _detector_cases():
    """A causal decoder and one without the causal mask, each on two batches of
    ``(src, tgt_in)``; whether the model sees the future as data."""
    from ..seq2seq import Seq2SeqConfig, Seq2SeqTransformer

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
    models = {}
    for causal in (True, False):
        config = Seq2SeqConfig(
            11,
            13,
            d_model=16,
            num_heads=2,
            num_layers=1,
            d_ff=32,
            causal_decoder=causal,
        )
        with seeded(0):
            models[causal] = Seq2SeqTransformer(config).eval()

    def where(causal, tgt_in):
        text = "a causal decoder" if causal else "a decoder without the causal mask"
        return f"{text} and tgt_in of shape {tuple(tgt_in.shape)}"

    cases = []
    for causal in (True, False):
        for src, tgt_in in batches:
            # data: whether it leaks, and the other model on the same batch, to
            # recognise answers given the wrong way round
            twin = Case(where(not causal, tgt_in), (models[not causal], src, tgt_in))
            args = (models[causal], src, tgt_in)
            cases.append(Case(where(causal, tgt_in), args, (not causal, twin)))
    return cases


_NAMES = ("model", "src", "tgt_in")
_FIX = "change a copy instead: changed = tgt_in.clone()."


@exercise_check("fn")
def check_future_detector(fn):
    """Check a function that tells whether a decoder can see future target tokens.

    Introduced in Chapter 6. ``fn(model, src, tgt_in)`` gets a
    :class:`attn_course.Seq2SeqTransformer`, source ids ``(B, T_s)`` and target ids
    ``(B, T_t)``, and must return ``True`` if some logit depends on a *later*
    target token (the decoder sees the future) and ``False`` if not. It is tried on
    a causal decoder and on one built with ``causal_decoder=False``, for two
    batches.

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
        If ``fn`` raises, changes its inputs in place, returns something that is
        not a bool, or gives a wrong answer (with the likely reason: answers the
        wrong way round, positions compared that may change, or a change that
        cannot reach the positions compared).
    TypeError
        If ``fn`` is not a function, e.g. the bool it returned.

    Shapes
    ------
    Letters: see attn_course.shapes.
    src : (B, T_s)
    tgt_in : (B, T_t)

    Examples
    --------
    >>> import torch
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

    def as_bool(answer, where):
        if isinstance(answer, torch.Tensor) and answer.numel() == 1:
            answer = bool(answer)
        if isinstance(answer, bool):
            return answer
        if isinstance(answer, torch.Tensor):
            got = (
                f"a tensor of shape {tuple(answer.shape)}; reduce it to one answer, "
                "e.g. with torch.equal(...) or (...).any().item()"
            )
        elif answer is None:
            got = "None; did the function forget to `return` its answer?"
        else:
            got = f"{type(answer).__name__} {answer!r}"[:200]
        raise AssertionError(f"{check}: expected True or False{where}, got {got}.")

    def verify(case, answer):
        leaks, twin = case.data
        answer = as_bool(answer, case.where)
        if answer == leaks:
            return
        other = as_bool(call(fn, check, twin, names=_NAMES, fix=_FIX), twin.where)
        if other == leaks:  # both answers are wrong: they are swapped
            raise AssertionError(
                f"{check}: your answers are the wrong way round: {answer}{case.where}, "
                f"and {other}{twin.where}. True "
                "must mean that the model sees the future, i.e. that the logits "
                "before the changed token DO change; check a `not` in front of "
                "torch.equal(...)."
            )
        if leaks:
            hint = (
                "it missed a decoder that sees the future. Change a target token "
                "that has positions before it (the last one is a good choice) and "
                "compare the logits at the positions BEFORE it: with the leak, they "
                "change"
            )
        else:
            hint = (
                "it flagged the causal decoder. The logits at the changed position "
                "and after it may change (they see the new token); compare only the "
                "positions before it"
            )
        raise AssertionError(f"{check}: wrong answer {answer}{case.where}: {hint}.")

    run_cases(
        check,
        fn,
        _detector_cases(),
        verify,
        example="sees_the_future",
        names=_NAMES,
        fix=_FIX,
        success="your detector is right on 2 batches: it clears the causal decoder "
        "and catches the one without the causal mask.",
    )
