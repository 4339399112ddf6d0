"""``attn_course.efficient``: online softmax, tiled attention and sliding-window
masks, each against the plain computation it replaces."""

import math
import random
import re
from functools import partial
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import attn_course
from attn_course import (
    causal_mask,
    efficient,
    key_padding_to_attn_mask,
    online_softmax,
    padding_mask,
    scaled_dot_product_attention,
    sliding_window_mask,
    tiled_attention,
)

NEG_INF = float("-inf")

# --- online_softmax


@pytest.mark.parametrize("seed", range(40))
def test_online_softmax_equals_torch_softmax(seed):
    """Random shapes, dims and block sizes; the odd seeds in float64."""
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    dtype, tol = [(torch.float32, 1e-6), (torch.float64, 1e-14)][seed % 2]
    shape = [rng.randint(1, 9) for _ in range(rng.randint(1, 4))]
    dim = rng.randrange(-len(shape), len(shape))
    n = shape[dim]
    block_size = rng.choice([1, max(n - 1, 1), n, n + 3, rng.randint(1, n)])
    x = torch.randn(shape, generator=gen, dtype=dtype) * rng.choice([0.1, 1.0, 30.0])
    expected = torch.softmax(x, dim=dim)
    torch.testing.assert_close(
        online_softmax(x, block_size, dim=dim), expected, atol=tol, rtol=10 * tol
    )


def test_online_softmax_rescales_when_a_later_block_has_a_larger_maximum():
    """Huge entries after small ones: the running sum must be rescaled."""
    x = torch.tensor([[0.0, 1.0, 2.0, 500.0, 3.0, 1000.0]])
    expected = torch.softmax(x, dim=-1)
    for block_size in (1, 2, 4):
        result = online_softmax(x, block_size)
        assert torch.isfinite(result).all()
        torch.testing.assert_close(result, expected, atol=0, rtol=0)


def test_a_row_of_only_minus_infinity_gives_zeros_like_our_attention():
    scores = torch.randn(3, 6, generator=torch.Generator().manual_seed(0))
    scores[1] = NEG_INF  # a query that may attend to no key
    result = online_softmax(scores, block_size=4)
    assert not result.isnan().any()
    assert (result[1] == 0).all()
    torch.testing.assert_close(result[[0, 2]], torch.softmax(scores[[0, 2]], -1))
    # The same choice as scaled_dot_product_attention for a fully masked query.
    allowed = ~torch.isneginf(scores)
    key = torch.eye(6)
    _, weights = scaled_dot_product_attention(
        scores, key, key, attn_mask=allowed, scale=1.0, return_weights=True
    )
    torch.testing.assert_close(result, weights, atol=1e-7, rtol=1e-6)


@pytest.mark.parametrize("block_size", [1, 2, 3, 4])
def test_whole_blocks_of_minus_infinity_give_no_nan(block_size):
    """-inf blocks first (running maximum -inf), in the middle and at the end."""
    x = torch.tensor(
        [
            [NEG_INF, NEG_INF, NEG_INF, NEG_INF, 1.0, 2.0, 0.5, -3.0],
            [0.0, 1.0, NEG_INF, NEG_INF, NEG_INF, NEG_INF, 2.0, NEG_INF],
            [5.0, NEG_INF, NEG_INF, NEG_INF, NEG_INF, NEG_INF, NEG_INF, NEG_INF],
        ]
    )
    result = online_softmax(x, block_size)
    assert not result.isnan().any()
    assert (result[torch.isneginf(x)] == 0).all()
    torch.testing.assert_close(result, torch.softmax(x, -1), atol=1e-7, rtol=1e-6)


def test_online_softmax_has_gradients_like_softmax():
    x = torch.randn(3, 10, generator=torch.Generator().manual_seed(3))
    weight = torch.randn(3, 10, generator=torch.Generator().manual_seed(4))
    grads = []
    for fn in (lambda t: online_softmax(t, 4), lambda t: torch.softmax(t, -1)):
        leaf = x.clone().requires_grad_()
        (fn(leaf) * weight).sum().backward()
        grads.append(leaf.grad)
    torch.testing.assert_close(grads[0], grads[1])


# --- tiled_attention

N_TILED = 80


def tiled_config(seed):
    """Random shapes, block size, causal mask and scale for one comparison."""
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    batch = [rng.randint(1, 3) for _ in range(seed % 3)]  # 2-D to 4-D
    T_q = rng.randint(1, 40)
    T_k = T_q if seed & 2 else rng.randint(1, 40)  # T_q == T_k: self-attention
    d_k, d_v = rng.randint(1, 16), rng.randint(1, 16)
    T = max(T_q, T_k)
    block_size = rng.choice([1, max(T - 1, 1), T, T + rng.randint(1, 5)])
    block_size = rng.choice([block_size, rng.randint(1, T)])
    query = torch.randn(*batch, T_q, d_k, generator=gen)
    key_batch = [1 if rng.random() < 0.3 else n for n in batch]  # broadcast
    key = torch.randn(*key_batch, T_k, d_k, generator=gen)
    value = torch.randn(*key_batch, T_k, d_v, generator=gen)
    kwargs = {
        "block_size": block_size,
        "is_causal": bool(seed & 1),
        "scale": None if seed & 4 else rng.uniform(0.05, 3.0),
    }
    return query, key, value, kwargs


@pytest.mark.parametrize("seed", range(N_TILED))
def test_tiled_attention_equals_pytorch(seed):
    query, key, value, kwargs = tiled_config(seed)
    expected = F.scaled_dot_product_attention(
        query, key, value, is_causal=kwargs["is_causal"], scale=kwargs["scale"]
    )
    output = tiled_attention(query, key, value, **kwargs)
    assert output.shape == expected.shape
    torch.testing.assert_close(output, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("block_size", [1, 16, 17, 18, 64])
@pytest.mark.parametrize("is_causal", [False, True])
def test_every_block_size_on_one_sequence(block_size, is_causal):
    """T = 17 in float64: block sizes 1, T - 1, T and above T, causal or not."""
    gen = torch.Generator().manual_seed(block_size)
    query, key, value = (
        torch.randn(2, 3, 17, 8, generator=gen, dtype=torch.float64) for _ in range(3)
    )
    expected = F.scaled_dot_product_attention(query, key, value, is_causal=is_causal)
    output = tiled_attention(
        query, key, value, block_size=block_size, is_causal=is_causal
    )
    torch.testing.assert_close(output, expected, atol=1e-12, rtol=1e-12)


def test_the_scale_is_applied_before_the_running_maximum():
    """Scores of 1e5 scaled by 1e-4: a maximum of unscaled scores would give NaN."""
    gen = torch.Generator().manual_seed(0)
    query = 300 * torch.randn(1, 2, 12, 4, generator=gen)
    key = 300 * torch.randn(1, 2, 12, 4, generator=gen)
    value = torch.randn(1, 2, 12, 3, generator=gen)
    scale = 1e-4
    for is_causal in (False, True):
        expected = F.scaled_dot_product_attention(
            query, key, value, is_causal=is_causal, scale=scale
        )
        output = tiled_attention(
            query, key, value, block_size=5, is_causal=is_causal, scale=scale
        )
        assert torch.isfinite(output).all()
        torch.testing.assert_close(output, expected, atol=1e-5, rtol=1e-5)


def test_a_large_scale_does_not_overflow():
    """Scores times 50: the running maximum keeps every exp at most 1."""
    gen = torch.Generator().manual_seed(1)
    query, key, value = (torch.randn(2, 20, 8, generator=gen) for _ in range(3))
    expected = F.scaled_dot_product_attention(query, key, value, scale=50.0)
    output = tiled_attention(query, key, value, block_size=3, scale=50.0)
    torch.testing.assert_close(output, expected, atol=1e-5, rtol=1e-5)


def expected_tiles(T_q, T_k, block_size, is_causal):
    """Which tiles hold at least one score a query may use."""
    rows = math.ceil(T_q / block_size)
    cols = math.ceil(T_k / block_size)
    tiles = torch.ones(rows, cols, dtype=torch.bool)
    if is_causal:
        for i in range(rows):
            last_query = min((i + 1) * block_size, T_q) - 1
            for j in range(cols):
                tiles[i, j] = j * block_size <= last_query
    return tiles


@pytest.mark.parametrize(
    "T_q, T_k, block_size",
    [
        (16, 16, 4),
        (17, 17, 4),
        (10, 10, 1),
        (10, 10, 10),
        (10, 10, 32),
        (9, 20, 4),
        (20, 9, 4),
    ],
)
@pytest.mark.parametrize("is_causal", [False, True])
def test_tiles_above_the_diagonal_are_skipped(T_q, T_k, block_size, is_causal):
    gen = torch.Generator().manual_seed(0)
    query = torch.randn(2, T_q, 4, generator=gen)
    key, value = (torch.randn(2, T_k, 4, generator=gen) for _ in range(2))
    output, tiles = tiled_attention(
        query,
        key,
        value,
        block_size=block_size,
        is_causal=is_causal,
        return_tiles=True,
    )
    assert torch.equal(tiles, expected_tiles(T_q, T_k, block_size, is_causal))
    torch.testing.assert_close(
        output, F.scaled_dot_product_attention(query, key, value, is_causal=is_causal)
    )


# The kernels that multiply matrices (torch.matmul runs one of these).
MATRIX_PRODUCTS = {"aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm"}


def count_matrix_products(call):
    """How many matrix products ``call()`` runs, read from PyTorch's profiler."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=activities) as prof:
        call()
    return sum(
        event.count
        for event in prof.key_averages()
        if event.key.rstrip("_") in MATRIX_PRODUCTS
    )


def test_the_skipped_tiles_are_really_not_computed():
    """The profiler counts two matrix products per computed tile, no more."""
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 24, 4, generator=gen) for _ in range(3))
    for is_causal, n_tiles in ((False, 36), (True, 21)):
        _, tiles = tiled_attention(
            q, k, v, block_size=4, is_causal=is_causal, return_tiles=True
        )
        assert tiles.sum() == n_tiles
        products = count_matrix_products(
            lambda c=is_causal: tiled_attention(q, k, v, block_size=4, is_causal=c)
        )
        assert products == 2 * n_tiles


def test_tiled_attention_has_the_gradients_of_attention():
    gen = torch.Generator().manual_seed(5)
    inputs = [torch.randn(2, 11, 6, generator=gen) for _ in range(3)]
    weight = torch.randn(2, 11, 6, generator=gen)
    grads = []
    for fn in (
        lambda q, k, v: tiled_attention(q, k, v, block_size=4, is_causal=True),
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
    ):
        leaves = [t.clone().requires_grad_() for t in inputs]
        (fn(*leaves) * weight).sum().backward()
        grads.append([leaf.grad for leaf in leaves])
    for ours, expected in zip(*grads, strict=True):
        torch.testing.assert_close(ours, expected, atol=1e-5, rtol=1e-5)


# Masks: each forces a query that sees no key (zeros) and a fully blocked tile.

N_MASKED = 60
MASK_KINDS = ("bool", "additive", "padding", "window")


def masked_config(seed):
    """Random inputs, one mask of each kind in turn, and a block size."""
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    kind = MASK_KINDS[seed % len(MASK_KINDS)]
    B, H = rng.randint(1, 3), rng.randint(1, 3)
    T_q = rng.randint(4, 40)
    T_k = T_q if kind == "window" else rng.randint(4, 40)
    d_k, d_v = rng.randint(1, 16), rng.randint(1, 16)
    block_size = rng.choice([1, 3, 4, 5, 8, 16, max(T_q, T_k) + 1])
    query = torch.randn(B, H, T_q, d_k, generator=gen)
    key = torch.randn(B, H, T_k, d_k, generator=gen)
    value = torch.randn(B, H, T_k, d_v, generator=gen)
    if kind == "padding":  # (B, 1, 1, T_k); the last sequence is padding only
        lengths = [rng.randint(1, T_k) for _ in range(B - 1)] + [0]
        mask = key_padding_to_attn_mask(padding_mask(lengths, max_len=T_k))
    elif kind == "window":  # (T, T)
        mask = sliding_window_mask(T_q, rng.randint(1, T_q))
    else:  # (B, 1, T_q, T_k) or (T_q, T_k), shared by the heads
        shape = rng.choice([(B, 1, T_q, T_k), (T_q, T_k)])
        mask = torch.rand(shape, generator=gen) < rng.choice([0.3, 0.7, 1.0])
        mask[..., rng.randrange(T_q), :] = False  # a query that sees no key
        mask[..., :block_size, -block_size:] = False  # a tile with no visible key
        if kind == "additive":  # 0 or -inf, plus a finite bias on the visible keys
            bias = torch.randn(shape, generator=gen)
            mask = bias.masked_fill(~mask, NEG_INF)
    scale = rng.choice([None, rng.uniform(0.2, 2.0)])
    return query, key, value, mask, block_size, scale


def blocked_queries(mask, scores_shape):
    """(..., T_q, 1): True for each query that may see no key at all."""
    visible = mask if mask.dtype == torch.bool else ~torch.isneginf(mask)
    return ~visible.expand(scores_shape).any(dim=-1, keepdim=True)


@pytest.mark.parametrize("seed", range(N_MASKED))
def test_tiled_attention_with_a_mask_equals_pytorch(seed):
    """float32: rounding differs by at most 1.7e-6 here, well inside 1e-5."""
    query, key, value, mask, block_size, scale = masked_config(seed)
    output = tiled_attention(
        query, key, value, attn_mask=mask, block_size=block_size, scale=scale
    )
    ours = scaled_dot_product_attention(query, key, value, mask, scale=scale)
    theirs = F.scaled_dot_product_attention(query, key, value, mask, scale=scale)
    # A query with no visible key gives zeros; where PyTorch gives NaN, ours only.
    blocked = blocked_queries(mask, (*query.shape[:-1], key.size(-2)))
    assert (output.masked_select(blocked) == 0).all()
    torch.testing.assert_close(output, ours, atol=1e-5, rtol=1e-5)
    agrees = ~theirs.isnan().any(dim=-1, keepdim=True)
    torch.testing.assert_close(
        output.masked_fill(~agrees, 0),
        theirs.masked_fill(~agrees, 0),
        atol=1e-5,
        rtol=1e-5,
    )


def mask_tiles(mask, T_q, T_k, block_size):
    """Which tiles hold at least one score that the mask lets through."""
    visible = mask if mask.dtype == torch.bool else ~torch.isneginf(mask)
    visible = visible.expand(*visible.shape[:-2], T_q, T_k)
    starts_q, starts_k = range(0, T_q, block_size), range(0, T_k, block_size)
    return torch.tensor(
        [
            [
                bool(visible[..., i : i + block_size, j : j + block_size].any())
                for j in starts_k
            ]
            for i in starts_q
        ]
    )


@pytest.mark.parametrize("block_size", [1, 4, 5, 16, 17, 64])
@pytest.mark.parametrize("kind", ["window", "padding", "additive"])
def test_masks_at_every_block_size_on_one_sequence(block_size, kind):
    """T = 17 in float64: a window, padding only, and a band with ALiBi-like bias."""
    gen = torch.Generator().manual_seed(block_size)
    query, key, value = (
        torch.randn(2, 3, 17, 8, generator=gen, dtype=torch.float64) for _ in range(3)
    )
    window = sliding_window_mask(17, 4)
    if kind == "window":
        mask = window
    elif kind == "padding":
        mask = key_padding_to_attn_mask(padding_mask([11, 0], max_len=17))
    else:
        distance = torch.arange(17.0)[:, None] - torch.arange(17.0)[None, :]
        mask = (-0.5 * distance).masked_fill(~window, NEG_INF).double()
    expected = scaled_dot_product_attention(query, key, value, attn_mask=mask)
    output = tiled_attention(query, key, value, attn_mask=mask, block_size=block_size)
    torch.testing.assert_close(output, expected, atol=1e-12, rtol=1e-12)


def test_tiles_the_mask_blocks_are_really_not_computed():
    """A window of 4 over 24 tokens in blocks of 4: 11 of 36 tiles computed."""
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 24, 4, generator=gen) for _ in range(3))
    window = sliding_window_mask(24, 4)
    additive = torch.zeros(24, 24).masked_fill(~window, NEG_INF)
    for mask in (window, additive):
        _, tiles = tiled_attention(
            q, k, v, attn_mask=mask, block_size=4, return_tiles=True
        )
        assert torch.equal(tiles, mask_tiles(mask, 24, 24, 4))
        assert tiles.sum() == 11
        products = count_matrix_products(
            lambda m=mask: tiled_attention(q, k, v, attn_mask=m, block_size=4)
        )
        assert products == 2 * 11


def test_a_query_with_no_visible_key_has_zero_output_and_zero_gradients():
    """Queries that see no key: zero output, gradients as the course's attention."""
    gen = torch.Generator().manual_seed(6)
    inputs = [torch.randn(2, 2, 9, 4, generator=gen) for _ in range(3)]
    mask = torch.rand(2, 1, 9, 9, generator=gen) < 0.6
    mask[0, :, :5] = False
    weight = torch.randn(2, 2, 9, 4, generator=gen)
    runs = []
    for fn in (
        lambda q, k, v: tiled_attention(q, k, v, attn_mask=mask, block_size=4),
        lambda q, k, v: scaled_dot_product_attention(q, k, v, attn_mask=mask),
    ):
        leaves = [t.clone().requires_grad_() for t in inputs]
        output = fn(*leaves)
        (output * weight).sum().backward()
        runs.append([output, *(leaf.grad for leaf in leaves)])
    assert (runs[0][0][0, :, :5] == 0).all()  # the output
    assert (runs[0][1][0, :, :5] == 0).all()  # the gradient of those queries
    for ours, expected in zip(*runs, strict=True):
        assert not ours.isnan().any()
        torch.testing.assert_close(ours, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("is_causal", [False, True])
def test_half_precision_is_as_accurate_as_pytorchs_kernel(dtype, is_causal):
    """T = 1024 in half precision: within rounding plus float32 loop error."""
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 4, 1024, 64, generator=gen).to(dtype) for _ in range(3))
    exact = F.scaled_dot_product_attention(
        q.double(), k.double(), v.double(), is_causal=is_causal
    )

    def error(output):
        return (output.double() - exact).abs().max().item()

    output = tiled_attention(q, k, v, is_causal=is_causal)
    assert output.dtype == dtype
    ours = error(output)
    pytorch = error(F.scaled_dot_product_attention(q, k, v, is_causal=is_causal))
    rounding = error(exact.to(dtype))  # the least error possible
    in_float32 = error(
        tiled_attention(q.float(), k.float(), v.float(), is_causal=is_causal)
    )
    assert rounding <= pytorch
    assert ours <= rounding + 2 * in_float32
    assert ours <= pytorch + 2 * in_float32


# --- The recomputing backward pass of tiled_attention (Chapter 11)


BLOCK = 5


def backward_case(name):
    """float64 inputs ``(B, H, T, d)``, keyword arguments of attention, and whether a
    query sees no key (where PyTorch's kernel gives NaN and ours zeros). Blocks of
    5 (``BLOCK``) divide neither length."""
    gen = torch.Generator().manual_seed(len(name))
    T_q, T_k = {"causal": (23, 23), "uneven": (13, 29)}.get(name, (19, 26))
    query = torch.randn(2, 3, T_q, 6, generator=gen, dtype=torch.float64)
    key_batch = (1, 3) if name == "broadcast keys" else (2, 3)
    key, value = (
        torch.randn(*key_batch, T_k, width, generator=gen, dtype=torch.float64)
        for width in (6, 5)
    )
    kwargs = {"scale": 0.7}
    if name == "causal":
        kwargs["is_causal"] = True
    elif name in ("bool mask", "float mask"):
        allowed = torch.rand(2, 1, T_q, T_k, generator=gen) < 0.5
        allowed[1, :, 4] = False  # a query that sees no key
        allowed[..., :BLOCK, -BLOCK:] = False  # a tile that the mask blocks entirely
        if name == "float mask":  # a finite bias where a key is seen
            bias = torch.randn(T_q, T_k, generator=gen, dtype=torch.float64)
            allowed = bias.masked_fill(~allowed, NEG_INF)
        kwargs["attn_mask"] = allowed
    return (query, key, value), kwargs, name in ("bool mask", "float mask")


def gradients(attention, inputs, weight):
    """The output of ``attention`` and the gradients of ``(output * weight).sum()``
    with respect to query, key and value."""
    leaves = [t.clone().requires_grad_() for t in inputs]
    output = attention(*leaves)
    (output * weight).sum().backward()
    return [output.detach(), *(leaf.grad for leaf in leaves)]


BACKWARD_CASES = ["causal", "bool mask", "float mask", "uneven", "broadcast keys"]


@pytest.mark.parametrize("name", BACKWARD_CASES)
def test_the_recomputing_backward_gives_the_gradients_of_autograd(name):
    """Against autograd through the course's attention and PyTorch's. float64:
    rounding of a few hundred operations stays below 1e-13, where a missed tile or
    a wrong term of the gradient would be of order 0.1."""
    inputs, kwargs, sees_no_key = backward_case(name)
    weight = torch.randn(
        2, 3, inputs[0].size(-2), 5, generator=torch.Generator().manual_seed(9)
    ).double()
    references = [partial(scaled_dot_product_attention, **kwargs)]
    if not sees_no_key:  # PyTorch's kernel gives NaN for a query that sees no key
        references.append(partial(F.scaled_dot_product_attention, **kwargs))
    ours = gradients(
        partial(tiled_attention, block_size=BLOCK, **kwargs), inputs, weight
    )
    for reference in references:
        expected = gradients(reference, inputs, weight)
        for got, want in zip(ours, expected, strict=True):
            torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-12)
    recorded = gradients(
        partial(tiled_attention, recompute=False, **kwargs), inputs, weight
    )
    for got, want in zip(ours, recorded, strict=True):
        torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-12)


def test_a_query_that_sees_no_key_gets_zero_gradient_through_the_recomputation():
    (query, key, value), kwargs, _ = backward_case("float mask")
    blocked = blocked_queries(kwargs["attn_mask"], (2, 3, query.size(-2), key.size(-2)))
    assert blocked.any()
    leaves = [t.clone().requires_grad_() for t in (query, key, value)]
    output = tiled_attention(*leaves, block_size=BLOCK, **kwargs)
    output.sum().backward()
    assert output.grad_fn is not None and not leaves[0].grad.isnan().any()
    assert (output.masked_select(blocked) == 0).all()
    assert (leaves[0].grad.masked_select(blocked) == 0).all()


def test_float32_gradients_match_pytorchs_within_rounding():
    """float32 with a causal mask: within 1e-5, as the forward pass."""
    gen = torch.Generator().manual_seed(11)
    inputs = [torch.randn(2, 2, 40, 8, generator=gen) for _ in range(3)]
    weight = torch.randn(2, 2, 40, 8, generator=gen)
    ours = gradients(
        partial(tiled_attention, block_size=16, is_causal=True), inputs, weight
    )
    theirs = gradients(
        partial(F.scaled_dot_product_attention, is_causal=True), inputs, weight
    )
    for got, want in zip(ours, theirs, strict=True):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("mask", ["causal", "bool"])
def test_gradcheck_of_the_recomputing_backward(mask):
    """Finite differences in float64, with gradcheck's own tolerances."""
    gen = torch.Generator().manual_seed(1)
    query = torch.randn(2, 5, 3, generator=gen, dtype=torch.float64)
    key = torch.randn(2, 7, 3, generator=gen, dtype=torch.float64)
    value = torch.randn(2, 7, 2, generator=gen, dtype=torch.float64)
    kwargs = {"block_size": 3}
    if mask == "causal":
        kwargs["is_causal"] = True
    else:
        allowed = torch.rand(5, 7, generator=gen) < 0.6
        allowed[2] = False  # a query that sees no key
        kwargs["attn_mask"] = allowed
    inputs = [t.requires_grad_() for t in (query, key, value)]
    assert torch.autograd.gradcheck(partial(tiled_attention, **kwargs), inputs)


def test_the_tiles_computed_are_the_same_with_the_recomputing_backward():
    gen = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(1, 24, 4, generator=gen, requires_grad=True) for _ in "qkv")
    mask = sliding_window_mask(24, 4)
    output, tiles = tiled_attention(
        q, k, v, attn_mask=mask, block_size=4, return_tiles=True
    )
    assert output.grad_fn is not None
    assert torch.equal(tiles, mask_tiles(mask, 24, 24, 4))


def test_no_recomputing_backward_where_no_gradient_is_needed():
    q, k, v = (torch.randn(1, 8, 4, requires_grad=True) for _ in range(3))
    with torch.no_grad():
        assert efficient.saved_tensor_bytes(tiled_attention, q, k, v) == 0
        assert tiled_attention(q, k, v).grad_fn is None


def saved_bytes(T, recompute, d=16, block_size=64):
    gen = torch.Generator().manual_seed(T)
    q, k, v = (torch.randn(2, T, d, generator=gen, requires_grad=True) for _ in "qkv")
    return efficient.saved_tensor_bytes(
        tiled_attention, q, k, v, block_size=block_size, recompute=recompute
    )


def test_memory_saved_for_backward_grows_like_T_only_when_recomputing():
    """At T = 256 and 512 in blocks of 64. Recomputing keeps query, key, value,
    output (T rows each) and the log-sum-exp (T numbers): twice as long, twice the
    bytes. Recording the loop keeps every tile, (T / 64)**2 of 64 x 64 numbers,
    four times as many at twice the length, plus the same T-sized tensors: a ratio
    a little below 4."""
    recomputing = [saved_bytes(T, recompute=True) for T in (256, 512)]
    recording = [saved_bytes(T, recompute=False) for T in (256, 512)]
    assert 1.8 <= recomputing[1] / recomputing[0] <= 2.2
    assert recording[1] / recording[0] > 3.5
    # query, key, value and output of (2, 256, 16), and (2, 256) log-sum-exps
    assert recomputing[0] == (4 * 2 * 256 * 16 + 2 * 256) * 4
    assert recording[0] > 2 * 256 * 256 * 4  # at least one whole score matrix


def test_saved_tensor_bytes_counts_a_shared_storage_once():
    x = torch.randn(100, requires_grad=True)
    # x * x saves x twice; x[:50] * x[50:] saves two views of x's storage
    for fn in (lambda t: t * t, lambda t: t[:50] * t[50:]):
        assert efficient.saved_tensor_bytes(fn, x) == x.nbytes
    y = torch.randn(100, requires_grad=True)
    assert efficient.saved_tensor_bytes(torch.mul, x, y) == x.nbytes + y.nbytes


def test_a_float_mask_that_requires_grad_needs_recompute_false(raises_teaching):
    query, key, value = qkv()
    bias = torch.zeros(6, 6, requires_grad=True)
    query.requires_grad_()
    raises_teaching(
        lambda: tiled_attention(query, key, value, attn_mask=bias),
        ValueError,
        ["attn_mask requires grad", "attn_mask.detach()", "recompute=False"],
    )
    # Recording every tile, the mask gets the gradient of the course's attention.
    grads = []
    tiled_recording = partial(tiled_attention, block_size=4, recompute=False)
    for fn in (tiled_recording, scaled_dot_product_attention):
        mask = bias.detach().clone().requires_grad_()
        fn(query, key, value, attn_mask=mask).sum().backward()
        grads.append(mask.grad)
    torch.testing.assert_close(grads[0], grads[1], atol=1e-6, rtol=1e-5)


# --- sliding_window_mask


@pytest.mark.parametrize(
    "T, window", [(1, 1), (5, 1), (5, 2), (6, 3), (7, 6), (4, 4), (4, 9), (1, 3)]
)
def test_sliding_window_mask_follows_its_definition(T, window):
    mask = sliding_window_mask(T, window)
    assert mask.dtype == torch.bool and mask.shape == (T, T)
    for i in range(T):
        for j in range(T):
            assert mask[i, j] == (i - window < j <= i), (i, j)
    if window >= T:
        assert torch.equal(mask, causal_mask(T))


# --- Errors: each names what it received and how to fix it


def qkv(q_shape=(2, 6, 4), k_shape=(2, 6, 4), v_shape=(2, 6, 3)):
    gen = torch.Generator().manual_seed(0)
    return [torch.randn(shape, generator=gen) for shape in (q_shape, k_shape, v_shape)]


def tiled(**kwargs):
    query, key, value = qkv()
    inputs = {"query": query, "key": key, "value": value, **kwargs}
    return tiled_attention(**inputs)


ERRORS = {
    "online_softmax of a list": (
        lambda: online_softmax([1.0, 2.0], 2),
        TypeError,
        ["x must be a torch.Tensor, got list", "torch.tensor(x)"],
    ),
    "online_softmax of integers": (
        lambda: online_softmax(torch.tensor([1, 2]), 2),
        TypeError,
        ["x must be floating point, got dtype torch.int64", "x.float()"],
    ),
    "online_softmax of a 0-d tensor": (
        lambda: online_softmax(torch.tensor(1.0), 2),
        ValueError,
        ["at least 1 dimension", "x.reshape(1)"],
    ),
    "online_softmax block size 0": (
        lambda: online_softmax(torch.ones(3), 0),
        ValueError,
        ["block_size must be at least 1, got block_size=0", "block_size=64"],
    ),
    "online_softmax float block size": (
        lambda: online_softmax(torch.ones(3), 2.0),
        TypeError,
        ["block_size must be an int, got float 2.0"],
    ),
    "online_softmax dim out of range": (
        lambda: online_softmax(torch.ones(2, 3), 2, dim=2),
        ValueError,
        ["dim=2 is out of range for x of shape (2, 3)", "0 to 1, or -1"],
    ),
    "online_softmax dim not an int": (
        lambda: online_softmax(torch.ones(2, 3), 2, dim="rows"),
        TypeError,
        ["dim must be an int, got str 'rows'"],
    ),
    "online_softmax empty dimension": (
        lambda: online_softmax(torch.ones(2, 0), 2),
        ValueError,
        ["x has no entries along dim=-1 (shape (2, 0))"],
    ),
    "tiled block size 0": (
        lambda: tiled(block_size=0),
        ValueError,
        ["block_size must be at least 1, got block_size=0", "e.g. block_size=64"],
    ),
    "tiled block size a float": (
        lambda: tiled(block_size=32.0),
        TypeError,
        ["block_size must be an int, got float 32.0"],
    ),
    "saved_tensor_bytes of a tensor": (
        partial(efficient.saved_tensor_bytes, torch.ones(2)),
        TypeError,
        ["fn must be a function, got torch.Tensor", "saved_tensor_bytes(tiled_"],
    ),
    "sliding window 0": (
        lambda: sliding_window_mask(5, 0),
        ValueError,
        ["window must be at least 1, got window=0", "itself included"],
    ),
    "sliding window length a float": (
        lambda: sliding_window_mask(5.0, 2),
        TypeError,
        ["T must be an int, got float 5.0"],
    ),
    "stored benchmark of a gpu": (
        partial(efficient.stored_benchmark, "gpu"),
        ValueError,
        ["device must be 'cpu' or 'cuda', got 'gpu'"],
    ),
    "timings not text": (
        partial(efficient.print_timings, [1.5]),
        TypeError,
        ["lines of text"],
    ),
    "stored times of no field": (
        partial(efficient.print_stored_timings, colour="red"),
        ValueError,
        [re.compile("no field colour; choose among .*method")],
    ),
    "stored times of no row": (
        partial(efficient.print_stored_timings, method="magic"),
        ValueError,
        ["no stored row has {'method': 'magic'}"],
    ),
    "operations_run of a tensor": (
        partial(efficient.operations_run, torch.ones(2)),
        TypeError,
        ["call must be a function of no arguments"],
    ),
    "sliding window length 0": (
        lambda: sliding_window_mask(0, 2),
        ValueError,
        ["T must be at least 1, got T=0", "the sequence length"],
    ),
}


@pytest.mark.parametrize("call, error, fragments", ERRORS.values(), ids=list(ERRORS))
def test_error_names_the_values_and_the_fix(call, error, fragments, raises_teaching):
    raises_teaching(call, error, fragments)


# Tiled attention reports a mistake with scaled_dot_product_attention's words.
SAME_MISTAKES = {
    "query not a tensor": {"query": [[1.0, 2.0]]},
    "1-D key": {"key": torch.ones(4)},
    "widths differ": {"key": torch.ones(2, 6, 5)},
    "key and value lengths differ": {"value": torch.ones(2, 5, 3)},
    "integer value": {"value": torch.ones(2, 6, 3, dtype=torch.int64)},
    "negative scale": {"scale": -1.0},
    "batch does not broadcast": {
        "key": torch.ones(3, 6, 4),
        "value": torch.ones(3, 6, 3),
    },
    "mask with is_causal": {
        "attn_mask": torch.ones(6, 6, dtype=torch.bool),
        "is_causal": True,
    },
    "padding mask not reshaped": {"attn_mask": torch.ones(2, 6, dtype=torch.bool)},
    "integer mask": {"attn_mask": torch.ones(6, 6, dtype=torch.int64)},
}


@pytest.mark.parametrize("bad", SAME_MISTAKES.values(), ids=list(SAME_MISTAKES))
def test_tiled_attention_reports_a_mistake_as_attention_does(bad):
    query, key, value = qkv()
    inputs = {"query": query, "key": key, "value": value, **bad}
    with pytest.raises((TypeError, ValueError)) as expected:
        scaled_dot_product_attention(**inputs)
    with pytest.raises(expected.type, match=re.escape(str(expected.value))):
        tiled_attention(**inputs)


def test_a_stored_benchmark_not_measured_says_how_to_measure_it(raises_teaching):
    if not (Path(attn_course.__file__).parent / "measured/bench-cuda.json").is_file():
        raises_teaching(
            partial(efficient.stored_benchmark, "cuda"),
            FileNotFoundError,
            ["run `make bench` on a machine"],
        )


def test_timings_are_printed_unless_the_outputs_are_being_stored(monkeypatch, capsys):
    monkeypatch.delenv("ATTN_COURSE_STORING_OUTPUTS", raising=False)
    efficient.print_timings(["T = 128: 1.5 ms", "T = 256: 5.0 ms"])
    assert capsys.readouterr().out == "T = 128: 1.5 ms\nT = 256: 5.0 ms\n"
    monkeypatch.setenv("ATTN_COURSE_STORING_OUTPUTS", "1")
    efficient.print_timings(["T = 128: 1.5 ms", "T = 256: 5.0 ms"])
    stored = capsys.readouterr().out
    assert "ms" not in stored and "2 lines of timings" in stored
    efficient.print_timings(["T = 128: 1.5 ms"])
    assert "(1 line of timings" in capsys.readouterr().out


def test_the_stored_times_are_printed_with_where_and_when_they_were_measured(capsys):
    results = efficient.stored_benchmark()
    lengths = results["settings"]["lengths"][:2]
    efficient.print_stored_timings(
        section="attention", method="plain", mask="none", T=lengths
    )
    when, where, *lines = capsys.readouterr().out.splitlines()
    assert results["date"][:10] in when and results["torch"] in when
    assert results["machine"]["cpu"] in where
    assert f"batch {results['settings']['batch']}," in where
    expected = [
        row
        for row in results["rows"]
        if row["section"] == "attention"
        and (row["method"], row["mask"]) == ("plain", "none")
        and row["T"] in lengths
    ]
    assert len(lines) == len(expected) == 2
    for line, row in zip(lines, expected, strict=True):
        assert f"T = {row['T']} " in line
        assert line.endswith(f"{row['time_ms']:.1f} ms")


def test_stored_generation_times_are_printed_by_kind_batch_and_length(capsys):
    results = efficient.stored_benchmark()
    tokens = results["settings"]["step_lengths"][-1]
    efficient.print_stored_timings(kind="step", batch=1, tokens=tokens)
    when, where, *lines = capsys.readouterr().out.splitlines()
    assert "heads of width" not in where  # the sizes of attention rows only
    times = {
        row["method"]: row["time_ms"]
        for row in results["generation"]
        if (row["kind"], row["batch"], row["tokens"]) == ("step", 1, tokens)
    }
    assert len(lines) == len(times) == 2
    for line in lines:
        method = "uncached" if "uncached" in line else "cached"
        assert f"one step after {tokens} tokens" in line
        assert line.endswith(f"{times[method]:.1f} ms")


def test_the_notebooks_are_stored_with_the_flag_that_hides_timings():
    from tools.notebooks import STORING_ENV

    assert STORING_ENV[efficient.STORING_OUTPUTS] == "1"


def test_operations_run_lists_what_a_call_ran_and_prints_nothing(capfd):
    q = torch.randn(1, 2, 64, 8)
    names = efficient.operations_run(
        lambda: F.scaled_dot_product_attention(q, q, q, is_causal=True)
    )
    assert "aten::scaled_dot_product_attention" in names
    assert names == sorted(names)
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""
