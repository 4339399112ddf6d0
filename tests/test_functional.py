"""``attn_course.scaled_dot_product_attention`` against PyTorch's fused version."""

import random

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attn_course import scaled_dot_product_attention

N_CONFIGS = 120
# float32: the fused kernel sums in another order; 1e-6 is a few ulps at order 1.
TOLERANCES = {
    torch.float32: {"atol": 1e-6, "rtol": 1e-6},
    torch.float64: {"atol": 1e-12, "rtol": 1e-12},
}


def random_config(seed, dtype):
    """Random inputs for one comparison: shapes, broadcasting, scale and mask."""
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    batch = [rng.randint(1, 3) for _ in range(seed % 3)]  # 2-D to 4-D inputs
    T_q, T_k = rng.randint(1, 6), rng.randint(1, 6)
    E, Ev = rng.randint(1, 8), rng.randint(1, 8)

    def leading_dims():
        # Drop some leading dimensions or set some to 1: they must still broadcast.
        start = 0 if rng.random() < 0.7 else rng.randint(0, len(batch))
        return [1 if rng.random() < 0.3 else size for size in batch[start:]]

    def randn(*shape):
        return torch.randn(*shape, generator=gen, dtype=dtype)

    query = randn(*leading_dims(), T_q, E)
    key = randn(*leading_dims(), T_k, E)
    value = randn(*leading_dims(), T_k, Ev)
    scores_batch = torch.broadcast_shapes(query.shape[:-2], key.shape[:-2])
    kwargs = {"scale": rng.choice([None, rng.uniform(0.05, 2.0)])}

    kind = ["none", "causal", "bool", "float"][seed // 3 % 4]  # with every rank
    if kind == "causal":
        kwargs["is_causal"] = True
    elif kind in ("bool", "float"):
        # Rank 2 up to the scores' rank, with size 1 in some dimensions.
        start = 0 if rng.random() < 0.5 else rng.randint(0, len(scores_batch))
        mask_batch = [1 if rng.random() < 0.3 else n for n in scores_batch[start:]]
        rows = 1 if rng.random() < 0.2 else T_q
        allowed = torch.rand(*mask_batch, rows, T_k, generator=gen) < 0.7
        if rng.random() < 0.5:  # a query that may attend to no key at all
            allowed[..., rng.randrange(rows), :] = False
        if kind == "bool":
            kwargs["attn_mask"] = allowed
        else:
            bias = randn(*allowed.shape)
            kwargs["attn_mask"] = bias.masked_fill(~allowed, float("-inf"))
    return query, key, value, kwargs


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("seed", range(N_CONFIGS))
def test_matches_torch_on_random_configs(seed, dtype):
    query, key, value, kwargs = random_config(seed, dtype)
    expected = F.scaled_dot_product_attention(query, key, value, **kwargs)
    output, weights = scaled_dot_product_attention(
        query, key, value, **kwargs, return_weights=True
    )
    torch.testing.assert_close(output, expected, **TOLERANCES[dtype])
    assert torch.equal(output, weights @ value)
    # Each row of weights sums to 1, or is all 0 for a query that may attend nowhere.
    row_sums = weights.sum(dim=-1)
    assert (torch.isclose(row_sums, torch.ones_like(row_sums)) | (row_sums == 0)).all()


def fully_masked_inputs():
    """Inputs where query 1 of every batch entry may attend to no key."""
    gen = torch.Generator().manual_seed(0)
    query = torch.randn(2, 3, 4, generator=gen)
    key = torch.randn(2, 5, 4, generator=gen)
    value = torch.randn(2, 5, 2, generator=gen)
    allowed = torch.rand(3, 5, generator=gen) < 0.7
    allowed[0] = True
    allowed[1] = False
    return query, key, value, allowed


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_fully_masked_row_gives_zero_weights_and_output_like_torch(kind):
    query, key, value, allowed = fully_masked_inputs()
    if kind == "bool":
        mask = allowed
    else:
        mask = torch.zeros(3, 5).masked_fill(~allowed, float("-inf"))
    output, weights = scaled_dot_product_attention(
        query, key, value, attn_mask=mask, return_weights=True
    )
    assert (weights[:, 1] == 0).all()
    assert (output[:, 1] == 0).all()
    expected = F.scaled_dot_product_attention(query, key, value, attn_mask=mask)
    torch.testing.assert_close(output, expected, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("kind", ["bool", "float", "causal"])
def test_gradients_match_torch_and_have_no_nan(kind):
    query, key, value, allowed = fully_masked_inputs()
    kwargs = {
        "bool": {"attn_mask": allowed},
        "float": {"attn_mask": torch.zeros(3, 5).masked_fill(~allowed, -torch.inf)},
        "causal": {"is_causal": True},
    }[kind]
    grads = {}
    for name, fn in [
        ("ours", scaled_dot_product_attention),
        ("torch", F.scaled_dot_product_attention),
    ]:
        inputs = [t.clone().requires_grad_() for t in (query, key, value)]
        fn(*inputs, **kwargs).pow(2).sum().backward()
        grads[name] = [t.grad for t in inputs]
    for ours, expected in zip(grads["ours"], grads["torch"], strict=True):
        assert not ours.isnan().any()
        torch.testing.assert_close(ours, expected, atol=1e-5, rtol=1e-5)
    if kind != "causal":
        assert (grads["ours"][0][:, 1] == 0).all()  # the masked query learns nothing


def dropout_inputs():
    gen = torch.Generator().manual_seed(0)
    query = torch.randn(2, 3, 4, generator=gen)
    key = torch.randn(2, 4, 4, generator=gen)
    value = torch.randn(2, 4, 5, generator=gen)
    return query, key, value


def test_no_dropout_when_not_training():
    query, key, value = dropout_inputs()
    no_dropout = scaled_dot_product_attention(query, key, value)
    eval_mode = scaled_dot_product_attention(
        query, key, value, dropout_p=0.5, training=False
    )
    assert torch.equal(eval_mode, no_dropout)


def test_dropout_zeroes_weights_rescales_the_kept_ones_and_follows_the_generator():
    query, key, value = dropout_inputs()
    p = 0.25
    _, weights = scaled_dot_product_attention(query, key, value, return_weights=True)

    def run(seed):
        gen = torch.Generator().manual_seed(seed)
        return scaled_dot_product_attention(
            query, key, value, dropout_p=p, generator=gen, return_weights=True
        )

    output, dropped = run(0)
    kept = dropped != 0
    assert kept.any() and not kept.all()
    assert torch.equal(dropped[kept], weights[kept] / (1 - p))
    assert torch.equal(output, dropped @ value)
    assert torch.equal(run(0)[0], output) and not torch.equal(run(1)[1], dropped)


def test_dropout_keeps_the_weights_right_on_average():
    query, key, value = dropout_inputs()
    p, n_draws = 0.25, 10_000
    _, weights = scaled_dot_product_attention(query, key, value, return_weights=True)
    # A new batch dimension of n_draws copies: each copy gets its own dropout mask.
    query = query.expand(n_draws, *query.shape)  # (B, T_q, E) -> (N, B, T_q, E)
    gen = torch.Generator().manual_seed(0)
    _, dropped = scaled_dot_product_attention(
        query, key, value, dropout_p=p, generator=gen, return_weights=True
    )
    # The mean of 10,000 draws of w / (1 - p) or 0 has standard deviation <= 0.0058.
    torch.testing.assert_close(dropped.mean(dim=0), weights, atol=0.03, rtol=0)
    fraction_dropped = (dropped == 0).float().mean().item()
    assert abs(fraction_dropped - p) < 0.01


def test_dropout_without_a_generator_draws_like_nn_dropout():
    """After the same manual_seed, the same mask as nn.Dropout on the weights."""
    query, key, value = dropout_inputs()
    _, weights = scaled_dot_product_attention(query, key, value, return_weights=True)
    with torch.random.fork_rng():
        torch.manual_seed(7)
        expected = torch.nn.Dropout(0.3)(weights)  # a new module is in training mode
        torch.manual_seed(7)
        output, dropped = scaled_dot_product_attention(
            query, key, value, dropout_p=0.3, return_weights=True
        )
    assert torch.equal(dropped, expected)
    assert (dropped == 0).any()
    assert torch.equal(output, dropped @ value)


def test_a_one_element_tensor_is_a_number_for_scale_and_dropout_p():
    """As in PyTorch, scale and dropout_p may be 0-d tensors."""
    query, key, value = dropout_inputs()
    as_number = scaled_dot_product_attention(query, key, value, scale=0.5)
    as_tensor = scaled_dot_product_attention(query, key, value, scale=torch.tensor(0.5))
    assert torch.equal(as_tensor, as_number)
    expected = F.scaled_dot_product_attention(
        query, key, value, scale=torch.tensor(0.5)
    )
    torch.testing.assert_close(as_tensor, expected, atol=1e-6, rtol=1e-6)
    off = scaled_dot_product_attention(query, key, value, dropout_p=torch.tensor(0.0))
    assert torch.equal(off, scaled_dot_product_attention(query, key, value))


# --- Errors: each names what it received and how to fix it


def qkv(q_shape=(2, 3, 4), k_shape=(2, 5, 4), v_shape=(2, 5, 6)):
    gen = torch.Generator().manual_seed(0)
    return [torch.randn(shape, generator=gen) for shape in (q_shape, k_shape, v_shape)]


def sdpa(*args, **kwargs):
    """Call scaled_dot_product_attention on the default inputs, replacing some."""
    query, key, value = qkv()
    inputs = {"query": query, "key": key, "value": value, **kwargs}
    return scaled_dot_product_attention(*args, **inputs)


# "same mistake" rows use the words test_masks.py and test_modules.py expect there.
ERRORS = {
    "query not a tensor (same mistake)": (
        lambda: sdpa(query=[[1.0, 2.0]]),
        TypeError,
        [
            "query must be a torch.Tensor, got list; convert it first",
            "torch.tensor(query)",
        ],
    ),
    "numpy query": (
        lambda: sdpa(query=np.ones((2, 3, 4), dtype=np.float32)),
        TypeError,
        ["query must be a torch.Tensor, got numpy.ndarray", "torch.from_numpy(query)"],
    ),
    "integer key (same mistake)": (
        lambda: sdpa(key=torch.ones(2, 5, 4, dtype=torch.int64)),
        TypeError,
        [
            "key must be floating point, got dtype torch.int64; convert it first",
            "key.float()",
        ],
    ),
    "mixed dtypes": (
        lambda: sdpa(value=torch.ones(2, 5, 6, dtype=torch.float64)),
        TypeError,
        [
            "query torch.float32, key torch.float32, value torch.float64",
            "key = key.to(query.dtype)",
        ],
    ),
    "1-D query": (
        lambda: sdpa(query=torch.ones(4)),
        ValueError,
        ["at least 2 dimensions", "got shape (4,)", "query.unsqueeze(0)", "(1, 4)"],
    ),
    "query and key widths differ": (
        lambda: sdpa(key=torch.ones(2, 5, 3)),
        ValueError,
        [
            "query (2, 3, 4) with d_k=4 and key (2, 5, 3) with d_k=3",
            "project both to the same width",
        ],
    ),
    "key and value lengths differ": (
        lambda: sdpa(value=torch.ones(2, 6, 6)),
        ValueError,
        [
            "key (2, 5, 4) with T_k=5 and value (2, 6, 6) with T_k=6",
            "same tokens as keys and values",
        ],
    ),
    "batch dimensions do not broadcast": (
        lambda: sdpa(key=torch.ones(3, 5, 4), value=torch.ones(3, 5, 6)),
        ValueError,
        ["got query (2,), key (3,) and value (3,)", "equal, or 1 where"],
    ),
    "mask not a tensor (same mistake)": (
        lambda: sdpa(attn_mask=[[True] * 5] * 3),
        TypeError,
        ["attn_mask must be a torch.Tensor, got list", "dtype=torch.bool"],
    ),
    "integer mask (same mistake)": (
        lambda: sdpa(attn_mask=torch.ones(3, 5, dtype=torch.int64)),
        TypeError,
        [
            "attn_mask must be bool (True = may attend",
            "got dtype torch.int64; if 1 marks the positions that may be attended "
            "to, use attn_mask.bool()",
        ],
    ),
    "mask of the wrong size": (
        lambda: sdpa(attn_mask=torch.ones(3, 4, dtype=torch.bool)),
        ValueError,
        [
            "attn_mask of shape (3, 4) does not broadcast to the scores shape "
            "(2, 3, 5)",
            "give it the shape (T_q, T_k), (B, T_q, T_k) or (B, H, T_q, T_k)",
        ],
    ),
    "mask larger than the scores": (
        lambda: sdpa(attn_mask=torch.ones(4, 2, 3, 5, dtype=torch.bool)),
        ValueError,
        [
            "attn_mask of shape (4, 2, 3, 5) does not broadcast to the scores shape "
            "(2, 3, 5)",
            "give it the shape",
        ],
    ),
    "(B, T_k) padding mask against 4-D scores": (
        lambda: scaled_dot_product_attention(
            *qkv((2, 4, 3, 8), (2, 4, 5, 8), (2, 4, 5, 8)),
            attn_mask=torch.ones(2, 5, dtype=torch.bool),
        ),
        ValueError,
        [
            "attn_mask of shape (2, 5) does not broadcast to the scores shape "
            "(2, 4, 3, 5)",
            "attn_course.key_padding_to_attn_mask(attn_mask)",
        ],
    ),
    "(B, T_k) padding mask against 3-D scores": (
        lambda: sdpa(attn_mask=torch.ones(2, 5, dtype=torch.bool)),
        ValueError,
        ["attn_mask of shape (2, 5)", "(B, 1, T_k) with attn_mask[:, None, :]"],
    ),
    "mask and is_causal together": (
        lambda: sdpa(attn_mask=torch.ones(3, 5, dtype=torch.bool), is_causal=True),
        ValueError,
        ["both attn_mask and is_causal=True", "mask & causal_mask(T_q, T_k)"],
    ),
    "dropout_p = 1": (
        lambda: sdpa(dropout_p=1.0),
        ValueError,
        ["dropout_p must be in [0, 1), got dropout_p=1.0", "use e.g. 0.1"],
    ),
    "negative dropout_p": (
        lambda: sdpa(dropout_p=-0.1),
        ValueError,
        ["got dropout_p=-0.1", "0.0 for no dropout"],
    ),
    "dropout_p not a number (same mistake)": (
        lambda: sdpa(dropout_p="0.1"),
        TypeError,
        [
            "dropout_p must be a number, got str '0.1'; it is the probability of "
            "dropping an attention weight",
            "use e.g. 0.1",
        ],
    ),
    "dropout_p a bool": (
        lambda: sdpa(dropout_p=True),
        TypeError,
        ["dropout_p must be a number, got bool True"],
    ),
    "zero scale": (
        lambda: sdpa(scale=0.0),
        ValueError,
        ["positive finite number, got scale=0.0", "scale=None for 1/sqrt(d_k) = 0.5"],
    ),
    "negative scale": (
        lambda: sdpa(scale=-2),
        ValueError,
        ["got scale=-2", "scale=1.0 for plain dot products"],
    ),
    "infinite scale": (
        lambda: sdpa(scale=float("inf")),
        ValueError,
        ["got scale=inf", "scale=None"],
    ),
    "scale not a number": (
        lambda: sdpa(scale=torch.tensor([0.5, 0.5])),
        TypeError,
        ["scale must be a number, got torch.Tensor", "scale=None"],
    ),
}


# --- Grouped-query attention (enable_gqa=True): key and value with fewer heads

N_GQA = 60


def gqa_config(seed):
    """Random grouped-query inputs with a mask, the causal mask or none."""
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    batch = [rng.randint(1, 3) for _ in range(seed % 2)]
    H_kv = rng.randint(1, 4)
    H_q = H_kv * (seed // 2 % 3 + 1)  # H_q == H_kv a third of the time
    # PyTorch repeats key and value separately: value may have its own head count.
    H_v = (
        H_kv
        if rng.random() < 0.8
        else rng.choice([n for n in (1, 2, 3, 4) if H_q % n == 0])
    )
    T_q, T_k = rng.randint(1, 6), rng.randint(1, 6)
    d_k, d_v = rng.randint(1, 8), rng.randint(1, 8)

    def randn(*shape):
        return torch.randn(*shape, generator=gen)

    query = randn(*batch, H_q, T_q, d_k)
    key = randn(*batch, H_kv, T_k, d_k)
    value = randn(*batch, H_v, T_k, d_v)
    kwargs = {"scale": rng.choice([None, rng.uniform(0.1, 2.0)])}
    kind = ["none", "causal", "bool", "float"][seed // 6 % 4]
    if kind == "causal":
        kwargs["is_causal"] = True
    elif kind != "none":
        # A mask over the query heads (H_q), or one shared by all heads.
        heads = rng.choice([H_q, 1])
        allowed = torch.rand(heads, T_q, T_k, generator=gen) < 0.7
        allowed[..., 0] = True
        kwargs["attn_mask"] = (
            allowed
            if kind == "bool"
            else randn(*allowed.shape).masked_fill(~allowed, -torch.inf)
        )
    return query, key, value, kwargs


@pytest.mark.parametrize("seed", range(N_GQA))
def test_gqa_matches_torch(seed):
    query, key, value, kwargs = gqa_config(seed)
    expected = F.scaled_dot_product_attention(
        query, key, value, **kwargs, enable_gqa=True
    )
    output, weights = scaled_dot_product_attention(
        query, key, value, **kwargs, enable_gqa=True, return_weights=True
    )
    torch.testing.assert_close(output, expected, atol=1e-6, rtol=1e-6)
    # One row of weights per *query* head.
    assert weights.shape == (*query.shape[:-1], key.size(-2))


def test_gqa_query_head_h_reads_key_value_head_h_over_group():
    """6 query heads, 2 key/value heads: heads 0-2 read 0, heads 3-5 read 1."""
    query, key, value = qkv((2, 6, 3, 4), (2, 2, 5, 4), (2, 2, 5, 3))
    output, weights = scaled_dot_product_attention(
        query, key, value, is_causal=True, enable_gqa=True, return_weights=True
    )
    assert weights.shape == (2, 6, 3, 5)
    for h in range(6):
        alone, alone_weights = scaled_dot_product_attention(
            query[:, h],
            key[:, h // 3],
            value[:, h // 3],
            is_causal=True,
            return_weights=True,
        )
        torch.testing.assert_close(output[:, h], alone, atol=0, rtol=0)
        torch.testing.assert_close(weights[:, h], alone_weights, atol=0, rtol=0)


ERRORS |= {
    "heads that do not divide": (
        lambda: scaled_dot_product_attention(
            *qkv((2, 6, 3, 4), (2, 4, 5, 4), (2, 4, 5, 3)), enable_gqa=True
        ),
        ValueError,
        [
            "query (2, 6, 3, 4) with H_q=6 heads and key (2, 4, 5, 4) with H_kv=4 "
            "heads",
            "one of [1, 2, 3, 6]",
        ],
    ),
    "value heads that do not divide": (
        lambda: scaled_dot_product_attention(
            *qkv((2, 6, 3, 4), (2, 2, 5, 4), (2, 4, 5, 3)), enable_gqa=True
        ),
        ValueError,
        ["H_q=6 heads and value (2, 4, 5, 3) with H_kv=4 heads"],
    ),
    "no head dimension": (
        lambda: scaled_dot_product_attention(
            *qkv((3, 4), (5, 4), (5, 3)), enable_gqa=True
        ),
        ValueError,
        [
            "enable_gqa=True needs a head dimension: query must have at least 3",
            "got shape (3, 4)",
            "leave enable_gqa=False",
        ],
    ),
    "enable_gqa not a bool": (
        lambda: sdpa(enable_gqa="yes"),
        TypeError,
        ["enable_gqa must be True or False, got str 'yes'"],
    ),
    "fewer key heads without enable_gqa": (
        lambda: scaled_dot_product_attention(
            *qkv((2, 6, 3, 4), (2, 2, 5, 4), (2, 2, 5, 3))
        ),
        ValueError,
        [
            "the batch dimensions (all but the last two) of query, key and value "
            "must broadcast, got query (2, 6), key (2, 2) and value (2, 2)",
            "H_kv=2 against H_q=6",
            "pass enable_gqa=True",
        ],
    ),
}


@pytest.mark.parametrize("call, error, fragments", ERRORS.values(), ids=list(ERRORS))
def test_error_names_the_values_and_the_fix(call, error, fragments, raises_teaching):
    raises_teaching(call, error, fragments)
