"""``attn_course.modules``: parity with the seeds (rewritten below), behaviour,
PyTorch's attention, errors."""

import random
import re
from functools import partial

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attn_course import (
    CausalAttention,
    CrossAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SelfAttentionV1,
    SelfAttentionV2,
    ShapeTracer,
    causal_mask,
    padding_mask,
    your_journey,
)

# The seeds mask, then divide by sqrt(d); we scale, then mask: float32 rounding apart.
SEED_TOL = {"atol": 1e-6, "rtol": 1e-6}


@pytest.fixture(autouse=True)
def _keep_global_rng():
    """Tests seed the global RNG as the seeds do; restore it afterwards."""
    with torch.random.fork_rng():
        yield


def journey_batch():
    """The seeds' batch: two copies of "Your journey starts with one step"."""
    inputs = your_journey().embeddings  # (T=6, d_in=3)
    return torch.stack((inputs, inputs), dim=0)  # (B=2, T=6, d_in=3)


# --- Reference classes: the seeds' algorithm, in our own words


class RefSelfAttentionV1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = x @ self.W_query, x @ self.W_key, x @ self.W_value
        w = torch.softmax((q @ k.T) / k.shape[-1] ** 0.5, dim=-1)
        return w @ v


class RefSelfAttentionV2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        k, q, v = self.W_key(x), self.W_query(x), self.W_value(x)
        w = torch.softmax((q @ k.T) / k.shape[-1] ** 0.5, dim=-1)
        return w @ v


class RefCausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        ones = torch.ones(context_length, context_length)
        self.register_buffer("mask", torch.triu(ones, diagonal=1))

    def forward(self, x):
        n = x.shape[1]
        k, q, v = self.W_key(x), self.W_query(x), self.W_value(x)
        scores = q @ k.transpose(1, 2)
        scores.masked_fill_(self.mask.bool()[:n, :n], -torch.inf)
        w = self.dropout(torch.softmax(scores / k.shape[-1] ** 0.5, dim=-1))
        return w @ v


class RefWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            RefCausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
            for _ in range(num_heads)
        )

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class RefMultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.d_out, self.num_heads = d_out, num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        ones = torch.ones(context_length, context_length)
        self.register_buffer("mask", torch.triu(ones, diagonal=1))

    def forward(self, x):
        b, n, _ = x.shape
        shape = (b, n, self.num_heads, self.head_dim)
        k = self.W_key(x).view(shape).transpose(1, 2)
        q = self.W_query(x).view(shape).transpose(1, 2)
        v = self.W_value(x).view(shape).transpose(1, 2)
        scores = q @ k.transpose(2, 3)
        scores.masked_fill_(self.mask.bool()[:n, :n], -torch.inf)
        w = self.dropout(torch.softmax(scores / k.shape[-1] ** 0.5, dim=-1))
        context = (w @ v).transpose(1, 2).contiguous().view(b, n, self.d_out)
        return self.out_proj(context)


def build_pair(ref_cls, our_cls, seed, *args, **kwargs):
    """Build the reference and the package module after the same manual_seed."""
    torch.manual_seed(seed)
    ref = ref_cls(*args, **kwargs)
    torch.manual_seed(seed)
    ours = our_cls(*args, **kwargs)
    return ref, ours


def assert_same_parameters(ref, ours):
    """Same names, in the same creation order, with equal values."""
    ref_params = list(ref.named_parameters())
    our_params = list(ours.named_parameters())
    assert [name for name, _ in our_params] == [name for name, _ in ref_params]
    for (name, ref_p), (_, our_p) in zip(ref_params, our_params, strict=True):
        assert torch.equal(our_p, ref_p), name


# --- Seed-for-seed parity with the seeds


@pytest.mark.parametrize(
    "ref_cls, our_cls, seed, args",
    [
        (RefSelfAttentionV1, SelfAttentionV1, 123, (3, 2)),
        (RefSelfAttentionV2, SelfAttentionV2, 789, (3, 2, False)),
        (RefSelfAttentionV2, SelfAttentionV2, 789, (3, 2, True)),
    ],
)
def test_self_attention_matches_the_seeds(ref_cls, our_cls, seed, args):
    ref, ours = build_pair(ref_cls, our_cls, seed, *args)
    assert_same_parameters(ref, ours)
    inputs = your_journey().embeddings
    torch.testing.assert_close(ours(inputs), ref(inputs), **SEED_TOL)


SEEDED_MODULES = {
    # name: (reference class, package class, seed, constructor arguments)
    "causal": (RefCausalAttention, CausalAttention, 123, (3, 2, 6)),
    "wrapper": (RefWrapper, MultiHeadAttentionWrapper, 123, (3, 2, 6)),
    "mha": (RefMultiHeadAttention, MultiHeadAttention, 123, (3, 2, 6)),
    "mha_head_dim_2": (RefMultiHeadAttention, MultiHeadAttention, 123, (3, 4, 6)),
}
HEADS = {"causal": {}, "wrapper": {"num_heads": 2}}


@pytest.mark.parametrize("qkv_bias", [False, True])
@pytest.mark.parametrize("dropout", [0.0, 0.5])
@pytest.mark.parametrize("kind", list(SEEDED_MODULES))
def test_modules_match_the_seeds_seed_for_seed(kind, dropout, qkv_bias):
    ref_cls, our_cls, seed, args = SEEDED_MODULES[kind]
    kwargs = {"qkv_bias": qkv_bias, **HEADS.get(kind, {"num_heads": 2})}
    ref, ours = build_pair(ref_cls, our_cls, seed, *args, dropout, **kwargs)
    assert_same_parameters(ref, ours)
    batch = journey_batch()
    for forward_seed in (0, 1):  # training mode: dropout draws differ per seed
        torch.manual_seed(forward_seed)
        expected = ref(batch)
        torch.manual_seed(forward_seed)
        torch.testing.assert_close(ours(batch), expected, **SEED_TOL)
    # Shorter inputs too: the seeds slice their stored mask, we build it per call.
    torch.manual_seed(2)
    expected = ref(batch[:, :4])
    torch.manual_seed(2)
    torch.testing.assert_close(ours(batch[:, :4]), expected, **SEED_TOL)


def test_the_books_printed_numbers():
    """First rows printed in the book for these seeds (4 decimals)."""
    inputs, batch = your_journey().embeddings, journey_batch()
    torch.manual_seed(789)
    v2 = SelfAttentionV2(3, 2)(inputs)
    torch.manual_seed(123)
    causal = CausalAttention(3, 2, 6, 0.0)(batch)
    torch.manual_seed(123)
    mha = MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)(batch)
    close = {"atol": 1e-4, "rtol": 0}
    torch.testing.assert_close(v2[0], torch.tensor([-0.0739, 0.0713]), **close)
    torch.testing.assert_close(causal[0, 0], torch.tensor([-0.4519, 0.2216]), **close)
    torch.testing.assert_close(mha[0, 0], torch.tensor([0.3190, 0.4858]), **close)


# --- V1 and V2


def test_v1_with_v2_weights_transposed_computes_the_same_map():
    torch.manual_seed(0)
    v2 = SelfAttentionV2(5, 4)
    v1 = SelfAttentionV1(5, 4)
    with torch.no_grad():
        # nn.Linear computes x @ weight.T, V1 computes x @ W: so W = weight.T.
        v1.W_query.copy_(v2.W_query.weight.T)
        v1.W_key.copy_(v2.W_key.weight.T)
        v1.W_value.copy_(v2.W_value.weight.T)
    x = torch.randn(3, 7, 5)
    out1, weights1 = v1(x, return_weights=True)
    out2, weights2 = v2(x, return_weights=True)
    torch.testing.assert_close(out1, out2, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(weights1, weights2, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("cls", [SelfAttentionV1, SelfAttentionV2])
def test_self_attention_weights_and_batches(cls):
    torch.manual_seed(0)
    module = cls(3, 2)
    x = torch.randn(4, 6, 3)
    out, weights = module(x, return_weights=True)
    assert out.shape == (4, 6, 2) and weights.shape == (4, 6, 6)
    torch.testing.assert_close(weights.sum(-1), torch.ones(4, 6))
    assert (weights > 0).all()  # no mask: every token sees every token
    # Each sequence of a batch gives what it gives on its own.
    torch.testing.assert_close(module(x[2]), out[2], atol=1e-6, rtol=1e-6)


# --- Causality


def causal_modules():
    torch.manual_seed(0)
    return {
        "CausalAttention": CausalAttention(4, 3, 8, 0.0, qkv_bias=True),
        "MultiHeadAttentionWrapper": MultiHeadAttentionWrapper(4, 3, 8, 0.0, 2),
        "MultiHeadAttention": MultiHeadAttention(4, 6, 8, 0.0, 3, qkv_bias=True),
    }


@pytest.mark.parametrize("name", list(causal_modules()))
def test_causal_modules_ignore_the_future_and_use_the_past(name):
    module = causal_modules()[name]
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(2, 7, 4, generator=gen)
    out = module(x)
    for t in range(7):
        future = x.clone()
        future[:, t + 1 :] = torch.randn(2, 6 - t, 4, generator=gen)
        # Changing tokens after t leaves every output at positions <= t unchanged.
        torch.testing.assert_close(module(future)[:, : t + 1], out[:, : t + 1])
        for s in range(t + 1):
            past = x.clone()
            past[:, s] = torch.randn(2, 4, generator=gen)
            # Changing a token at or before t changes the output at t.
            changed = (module(past)[:, t] - out[:, t]).abs().amax(dim=-1)
            assert (changed > 1e-4).all(), (t, s)


@pytest.mark.parametrize("name", ["CausalAttention", "MultiHeadAttentionWrapper"])
def test_two_dimensional_input_is_one_sequence(name):
    module = causal_modules()[name]
    x = torch.randn(5, 4, generator=torch.Generator().manual_seed(3))
    out, weights = module(x, return_weights=True)
    batched, batched_weights = module(x[None], return_weights=True)
    torch.testing.assert_close(out, batched[0])
    torch.testing.assert_close(weights, batched_weights[0])


# --- Wrapper and fused multi-head attention


@pytest.mark.parametrize("qkv_bias", [False, True])
@pytest.mark.parametrize("num_heads, d_head", [(1, 3), (2, 2), (3, 1), (4, 3)])
def test_wrapper_equals_mha_with_weights_arranged_to_match(num_heads, d_head, qkv_bias):
    """The heads' projections stacked along dim 0 (outputs), out_proj the identity."""
    torch.manual_seed(num_heads)
    d_in, context_length = 5, 7
    wrapper = MultiHeadAttentionWrapper(
        d_in, d_head, context_length, 0.0, num_heads, qkv_bias=qkv_bias
    )
    mha = MultiHeadAttention(
        d_in, num_heads * d_head, context_length, 0.0, num_heads, qkv_bias=qkv_bias
    )
    with torch.no_grad():
        for name in ("W_query", "W_key", "W_value"):
            layers = [getattr(head, name) for head in wrapper.heads]
            getattr(mha, name).weight.copy_(torch.cat([lin.weight for lin in layers]))
            if qkv_bias:
                getattr(mha, name).bias.copy_(torch.cat([lin.bias for lin in layers]))
        mha.out_proj.weight.copy_(torch.eye(num_heads * d_head))
        mha.out_proj.bias.zero_()
    x = torch.randn(3, context_length, d_in)
    wrapped, wrapped_weights = wrapper(x, return_weights=True)
    fused, fused_weights = mha(x, return_weights=True)
    assert wrapped.shape == (3, context_length, num_heads * d_head)
    torch.testing.assert_close(fused, wrapped, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(fused_weights, wrapped_weights, atol=1e-6, rtol=1e-6)


# --- Dropout on the weights: off in eval mode, kept weights scaled by 1 / (1 - p)


DROPOUT_MODULES = {
    "CausalAttention": lambda p: CausalAttention(3, 4, 6, p),
    "MultiHeadAttentionWrapper": lambda p: MultiHeadAttentionWrapper(3, 2, 6, p, 2),
    "MultiHeadAttention": lambda p: MultiHeadAttention(3, 4, 6, p, 2),
    "CrossAttention": lambda p: CrossAttention(3, 4, 2, p),
}


def dropped(name, p):
    """Module ``name`` with dropout ``p``, its weights fixed by seed 0."""
    torch.manual_seed(0)
    return DROPOUT_MODULES[name](p)


def attend(module):
    x = torch.rand(2, 6, 3, generator=torch.Generator().manual_seed(1))
    inputs = (x, x) if isinstance(module, CrossAttention) else (x,)
    return module(*inputs, return_weights=True)


@pytest.mark.parametrize("name", DROPOUT_MODULES)
def test_eval_mode_is_deterministic_and_equals_no_dropout(name):
    reference = attend(dropped(name, 0.0))
    module = dropped(name, 0.5).eval()
    torch.manual_seed(1)
    first = attend(module)
    torch.manual_seed(2)
    again = attend(module)
    for ours, expected, repeated in zip(first, reference, again, strict=True):
        assert torch.equal(ours, expected) and torch.equal(ours, repeated)


@pytest.mark.parametrize("name", DROPOUT_MODULES)
def test_training_mode_drops_weights_and_rescales_the_kept_ones(name):
    p = 0.4
    _, weights = attend(dropped(name, 0.0))
    module = dropped(name, p)
    assert module.training  # a new module is in training mode
    torch.manual_seed(3)
    _, after = attend(module)
    kept = after != 0
    assert kept.any() and (~kept & (weights > 0)).any()  # some kept, some dropped
    torch.testing.assert_close(after[kept], weights[kept] / (1 - p))
    assert (after[weights == 0] == 0).all()  # no weight where there was none
    torch.manual_seed(3)
    assert torch.equal(attend(module)[1], after)  # the same seed, the same mask


# --- Against PyTorch's nn.MultiheadAttention and fused attention

N_TORCH_CONFIGS = 20
# float32 sums of at most 16 terms in another order than PyTorch's: a few ulps.
TOL = {"atol": 1e-5, "rtol": 1e-5}


def random_torch_config(seed):
    """Sizes, head count, bias, batch size, causality and padding for one case."""
    rng = random.Random(seed)
    num_heads = seed % 4 + 1  # every head count, batch size and flag combination
    config = {
        "num_heads": num_heads,
        "d_out": num_heads * rng.randint(1, 4),
        "T": rng.randint(2, 7),
        "B": seed % 3 + 1,
        "qkv_bias": bool(seed & 1),
        "causal": bool(seed & 2),
        "padded": bool(seed & 4),
    }
    # Key 0 always real: no query without a key (PyTorch's module gives NaN there).
    config["lengths"] = [rng.randint(1, config["T"]) for _ in range(config["B"])]
    return config


def torch_mha_like(ours, kdim=None):
    """An nn.MultiheadAttention holding the same weights as ``ours``."""
    embed_dim = ours.d_out
    torch_mha = nn.MultiheadAttention(
        embed_dim, ours.num_heads, bias=True, batch_first=True, kdim=kdim, vdim=kdim
    )
    projections = (ours.W_query, ours.W_key, ours.W_value)
    with torch.no_grad():
        if torch_mha._qkv_same_embed_dim:
            weight = torch.cat([lin.weight for lin in projections])  # (3 D, D)
            torch_mha.in_proj_weight.copy_(weight)
        else:  # keys and values of another width: three separate matrices
            torch_mha.q_proj_weight.copy_(ours.W_query.weight)
            torch_mha.k_proj_weight.copy_(ours.W_key.weight)
            torch_mha.v_proj_weight.copy_(ours.W_value.weight)
        if ours.W_query.bias is None:
            torch_mha.in_proj_bias.zero_()
        else:
            torch_mha.in_proj_bias.copy_(torch.cat([lin.bias for lin in projections]))
        torch_mha.out_proj.weight.copy_(ours.out_proj.weight)
        torch_mha.out_proj.bias.copy_(ours.out_proj.bias)
    return torch_mha


@pytest.mark.parametrize("seed", range(N_TORCH_CONFIGS))
def test_mha_matches_torch_multihead_attention(seed):
    c = random_torch_config(seed)
    torch.manual_seed(seed)
    D, H = c["d_out"], c["num_heads"]  # nn.MultiheadAttention needs d_in == d_out
    ours = MultiHeadAttention(D, D, 8, 0.0, H, c["qkv_bias"], causal=c["causal"])
    torch_mha = torch_mha_like(ours)
    x = torch.randn(c["B"], c["T"], c["d_out"])
    kpm = padding_mask(c["lengths"], max_len=c["T"]) if c["padded"] else None

    out, weights = ours(x, key_padding_mask=kpm, return_weights=True)
    # PyTorch's convention: True = blocked, so both masks are inverted.
    torch_kwargs = {
        "attn_mask": ~causal_mask(c["T"]) if c["causal"] else None,
        "key_padding_mask": None if kpm is None else ~kpm,
    }
    expected, expected_weights = torch_mha(
        x, x, x, need_weights=True, average_attn_weights=False, **torch_kwargs
    )
    torch.testing.assert_close(out, expected, **TOL)
    torch.testing.assert_close(weights, expected_weights, **TOL)  # (B, H, T, T)
    _, averaged = torch_mha(x, x, x, average_attn_weights=True, **torch_kwargs)
    torch.testing.assert_close(weights.mean(dim=1), averaged, **TOL)  # (B, T, T)


@pytest.mark.parametrize("seed", range(10))
def test_causal_mha_matches_torch_fused_scaled_dot_product_attention(seed):
    c = random_torch_config(seed)
    torch.manual_seed(seed)
    d_in, H = c["d_out"] + 1, c["num_heads"]
    ours = MultiHeadAttention(d_in, c["d_out"], 8, 0.0, H, c["qkv_bias"])
    x = torch.randn(c["B"], c["T"], d_in)
    B, T, D, d = c["B"], c["T"], c["d_out"], ours.head_dim

    def heads(t):
        return t.view(B, T, H, d).transpose(1, 2)  # (B, T, D) -> (B, H, T, d)

    q, k, v = (heads(lin(x)) for lin in (ours.W_query, ours.W_key, ours.W_value))
    context = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, T, d)
    context = context.transpose(1, 2).reshape(B, T, D)  # (B, H, T, d) -> (B, T, D)
    torch.testing.assert_close(ours(x), ours.out_proj(context), **TOL)


@pytest.mark.parametrize("seed", range(8))
def test_cross_attention_matches_torch_multihead_attention(seed):
    rng = random.Random(1000 + seed)
    H = rng.randint(1, 3)
    D = H * rng.randint(1, 3)
    # Half the cases: memory of another width (kdim/vdim), else the same width.
    d_memory = D if seed % 2 == 0 else D + rng.randint(1, 3)
    B, T_q = rng.randint(1, 3), rng.randint(1, 4)
    T_k = T_q + rng.randint(1, 3)  # T_q != T_k
    lengths = [rng.randint(1, T_k) for _ in range(B)]
    lengths[0] = T_k - 1  # at least one sequence with padding
    torch.manual_seed(seed)
    ours = CrossAttention(D, D, H, qkv_bias=seed % 4 < 2, d_memory=d_memory)
    torch_mha = torch_mha_like(ours, kdim=None if d_memory == D else d_memory)
    x = torch.randn(B, T_q, D)
    memory = torch.randn(B, T_k, d_memory)
    kpm = padding_mask(lengths, max_len=T_k)  # True = real token

    out, weights = ours(x, memory, key_padding_mask=kpm, return_weights=True)
    expected, expected_weights = torch_mha(
        x, memory, memory, key_padding_mask=~kpm, average_attn_weights=False
    )
    assert out.shape == (B, T_q, D) and weights.shape == (B, H, T_q, T_k)
    torch.testing.assert_close(out, expected, **TOL)
    torch.testing.assert_close(weights, expected_weights, **TOL)
    # Without a mask, too.
    expected = torch_mha(x, memory, memory, need_weights=False)[0]
    torch.testing.assert_close(ours(x, memory), expected, **TOL)


def test_cross_attention_query_with_only_padding_keys_gets_zeros():
    torch.manual_seed(0)
    ours = CrossAttention(4, 4, 2)
    x, memory = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    kpm = padding_mask([5, 0], max_len=5)  # second memory: padding only
    out, weights = ours(x, memory, key_padding_mask=kpm, return_weights=True)
    assert not out.isnan().any()
    assert (weights[1] == 0).all()
    # The context vectors are 0, so out_proj leaves only its bias.
    torch.testing.assert_close(out[1], ours.out_proj.bias.expand(3, 4))


@pytest.mark.parametrize("causal", [True, False])
def test_mha_padding_changes_nothing_for_the_real_tokens(causal):
    """Each padded sequence gives, at its real tokens, what it gives unpadded."""
    torch.manual_seed(0)
    ours = MultiHeadAttention(3, 4, 6, 0.0, 2, qkv_bias=True, causal=causal)
    lengths = [6, 2, 4]
    x = torch.randn(3, 6, 3) * 5  # the padding positions hold large garbage
    kpm = padding_mask(lengths)
    out, weights = ours(x, key_padding_mask=kpm, return_weights=True)
    for b, n in enumerate(lengths):
        alone, alone_weights = ours(x[b : b + 1, :n], return_weights=True)
        torch.testing.assert_close(out[b : b + 1, :n], alone, atol=1e-6, rtol=1e-6)
        torch.testing.assert_close(
            weights[b : b + 1, :, :n, :n], alone_weights, atol=1e-6, rtol=1e-6
        )
        assert (weights[b, :, :, n:] == 0).all()  # no weight on padding keys


# --- ShapeTracer


def traced_mha():
    torch.manual_seed(0)
    mha, x = MultiHeadAttention(3, 4, 6, 0.0, num_heads=2), torch.randn(2, 5, 3)
    tracer = ShapeTracer()
    return mha, x, tracer, mha(x, trace=tracer)


def test_shape_tracer_changes_nothing_accumulates_and_clears():
    """The steps and notes are those the doctest of MultiHeadAttention prints."""
    mha, x, tracer, out = traced_mha()
    torch.testing.assert_close(out, mha(x))
    assert len(tracer) == 15 and repr(tracer) == str(tracer)
    seen = []
    mha(x, trace=lambda name, tensor: seen.append((name, tuple(tensor.shape))))
    assert seen == tracer.steps
    mha(x, trace=tracer)
    assert len(tracer) == 30
    tracer.clear()
    assert tracer.steps == [] and str(tracer) == "step  shape  note"


def test_shape_tracer_on_cross_attention_uses_t_q_and_t_k():
    torch.manual_seed(0)
    xattn = CrossAttention(3, 4, 2, d_memory=5)
    tracer = ShapeTracer()
    xattn(torch.randn(2, 3, 3), torch.randn(2, 7, 5), trace=tracer)
    mha_names = [name for name, _ in traced_mha()[2].steps]
    assert tracer.steps[:2] == [("x", (2, 3, 3)), ("memory", (2, 7, 5))]
    assert [name for name, _ in tracer.steps[2:]] == mha_names[1:]
    notes = dict(zip([name for name, _ in tracer.steps], tracer.notes, strict=True))
    assert notes["keys.transpose"] == "(B, H, T_k, d)"
    assert notes["weights"] == "(B, H, T_q, T_k)"
    assert dict(tracer.steps)["weights"] == (2, 2, 3, 7)
    assert dict(tracer.steps)["out_proj"] == (2, 3, 4)


# --- Errors: each names what it received and how to fix it

CONSTRUCTORS = {
    "SelfAttentionV1": (SelfAttentionV1, {"d_in": 3, "d_out": 2}),
    "SelfAttentionV2": (SelfAttentionV2, {"d_in": 3, "d_out": 2}),
    "CausalAttention": (
        CausalAttention,
        {"d_in": 3, "d_out": 2, "context_length": 6, "dropout": 0.0},
    ),
    "MultiHeadAttentionWrapper": (
        MultiHeadAttentionWrapper,
        {"d_in": 3, "d_out": 2, "context_length": 6, "dropout": 0.0, "num_heads": 2},
    ),
    "MultiHeadAttention": (
        MultiHeadAttention,
        {"d_in": 3, "d_out": 2, "context_length": 6, "dropout": 0.0, "num_heads": 2},
    ),
    "CrossAttention": (
        CrossAttention,
        {"d_in": 3, "d_out": 2, "num_heads": 2, "d_memory": 4},
    ),
}


def built(name):
    torch.manual_seed(0)
    cls, kwargs = CONSTRUCTORS[name]
    return cls(**kwargs)


def call(name, x, **kwargs):
    """Build the module ``name`` and call it on x (and on a memory, for cross)."""
    module = built(name)
    if isinstance(module, CrossAttention):
        return module(x, kwargs.pop("memory", torch.zeros(2, 5, 4)), **kwargs)
    return module(x, **kwargs)


def construct(name, **changes):
    cls, kwargs = CONSTRUCTORS[name]
    return partial(cls, **{**kwargs, **changes})


def _constructor_errors():
    """Sizes 0, negative or not an int, and bad dropouts, for every argument."""
    rows = {}
    for name, (_, kwargs) in CONSTRUCTORS.items():
        for arg in kwargs:
            if arg == "dropout":
                for bad in (-0.1, 1.0, 1.5):
                    rows[f"{name} dropout={bad!r}"] = (
                        construct(name, dropout=bad),
                        ValueError,
                        [f"dropout must be in [0, 1), got dropout={bad!r}", "e.g. 0.1"],
                    )
                for bad, kind in ((True, "bool"), ("0.1", "str")):
                    rows[f"{name} dropout={bad!r}"] = (
                        construct(name, dropout=bad),
                        TypeError,
                        [
                            f"dropout must be a number, got {kind} {bad!r}",
                            f"called as {name}(",
                        ],
                    )
                continue
            for bad in (0, -1):
                rows[f"{name} {arg}={bad}"] = (
                    construct(name, **{arg: bad}),
                    ValueError,
                    [
                        f"{arg} must be at least 1, got {arg}={bad}",
                        f"(called as {name}(",
                        "check the values and their order",
                    ],
                )
            rows[f"{name} {arg}=2.0 (same mistake)"] = (
                construct(name, **{arg: 2.0}),
                TypeError,
                [
                    f"{arg} must be an int, got float 2.0; e.g. {arg}=2",
                    f"(called as {name}(",
                ],
            )
    return rows


def _input_errors():
    """Inputs of the wrong kind, rank or width, for every module."""
    rows = {}
    for name in CONSTRUCTORS:
        rows[f"{name}: x of width 4"] = (
            partial(call, name, torch.zeros(2, 5, 4)),
            ValueError,
            ["x has width 4 but the module was built with d_in=3"],
        )
        rows[f"{name}: 4-D x"] = (
            partial(call, name, torch.zeros(1, 2, 5, 3)),
            ValueError,
            [
                re.compile(r"^expected x of shape \(B, T, d_in\)"),
                "got (1, 2, 5, 3); merge the extra dimensions into the batch, e.g. ",
                re.compile(r"x\.reshape\(-1, 5, 3\)$"),
            ],
        )
        rows[f"{name}: integer x (same mistake)"] = (
            partial(call, name, torch.zeros(2, 5, 3, dtype=torch.long)),
            TypeError,
            ["x must be floating point, got dtype torch.int64; convert it first"],
        )
        rows[f"{name}: x a list (same mistake)"] = (
            partial(call, name, [[1.0, 2.0, 3.0]]),
            TypeError,
            ["x must be a torch.Tensor, got list; convert it first"],
        )
    for name in ("MultiHeadAttention", "CrossAttention"):
        rows[f"{name}: 2-D x"] = (
            partial(call, name, torch.zeros(5, 3)),
            ValueError,
            ["got (5, 3); for one sequence use x.unsqueeze(0)"],
        )
    for name in ("CausalAttention", "MultiHeadAttentionWrapper", "MultiHeadAttention"):
        rows[f"{name}: x longer than context_length"] = (
            partial(call, name, torch.zeros(2, 9, 3)),
            ValueError,
            [
                "input has T=9 tokens but context_length=6; build the module with "
                "context_length >= 9 or feed at most 6 tokens"
            ],
        )
    return rows


def bidirectional_mha():
    torch.manual_seed(0)
    return MultiHeadAttention(3, 4, 6, 0.0, 2, causal=False)


def mha_with(**kwargs):
    return partial(call, "MultiHeadAttention", torch.zeros(2, 5, 3), **kwargs)


def cross_with(**kwargs):
    return partial(call, "CrossAttention", torch.zeros(2, 3, 3), **kwargs)


ERRORS = {
    **_constructor_errors(),
    **_input_errors(),
    **{
        f"{name}: d_out=8 with num_heads=3": (
            construct(name, d_out=8, num_heads=3),
            ValueError,
            [
                "d_out=8 is not divisible by num_heads=3",
                "choose num_heads in {1, 2, 4, 8}",
            ],
        )
        for name in ("MultiHeadAttention", "CrossAttention")
    },
    # num_heads=12 was meant for another argument: the message says so, with both.
    "swapped num_heads names both values": (
        lambda: MultiHeadAttention(3, 8, 6, 0.1, 12),
        ValueError,
        [
            "d_out=8 is not divisible by num_heads=12",
            "MultiHeadAttention(d_in=3, d_out=8, context_length=6, dropout=0.1, ",
            "swapped",
        ],
    ),
    "num_heads swapped with dropout names both values": (
        lambda: MultiHeadAttention(3, 8, 6, 2, 0.1),
        TypeError,
        ["num_heads must be an int, got float 0.1", "dropout=2, num_heads=0.1"],
    ),
    "bidirectional MultiHeadAttention also bounds the length": (
        lambda: bidirectional_mha()(torch.zeros(1, 7, 3)),
        ValueError,
        ["input has T=7 tokens"],
    ),
    "key_padding_mask of the wrong shape (same mistake)": (
        mha_with(key_padding_mask=padding_mask([5, 3])[:, None, None, :]),
        ValueError,
        [
            "key_padding_mask must be a (B, T) padding mask of shape (2, 5), got "
            "shape (2, 1, 1, 5)",
            "padding_mask(lengths, max_len=5)",
        ],
    ),
    "key_padding_mask of the wrong dtype (same mistake)": (
        mha_with(key_padding_mask=padding_mask([5, 3]).long()),
        TypeError,
        [
            "key_padding_mask must be bool (True = real token), got dtype torch.int64",
            "if 1 marks the positions that may be attended to, use "
            "key_padding_mask.bool()",
        ],
    ),
    "key_padding_mask a list (same mistake)": (
        mha_with(key_padding_mask=[[True] * 5] * 2),
        TypeError,
        [
            "key_padding_mask must be a torch.Tensor, got list; build it with "
            "attn_course.padding_mask(lengths)"
        ],
    ),
    "CrossAttention: key_padding_mask follows the memory": (
        cross_with(key_padding_mask=padding_mask([3, 3])),
        ValueError,
        [
            "key_padding_mask must be a (B, T_k) padding mask of shape (2, 5), got "
            "shape (2, 3)"
        ],
    ),
    "CrossAttention: memory of the wrong width": (
        cross_with(memory=torch.zeros(2, 5, 5)),
        ValueError,
        ["memory has width 5 but the module was built with d_memory=4"],
    ),
    "CrossAttention: memory of another batch size": (
        cross_with(memory=torch.zeros(1, 5, 4)),
        ValueError,
        ["x and memory must have the same batch size B, got x (2, 3, 3) and "],
    ),
    "CrossAttention: memory a list": (
        cross_with(memory=[[0.0] * 4]),
        TypeError,
        ["memory must be a torch.Tensor, got list; convert it first"],
    ),
}


@pytest.mark.parametrize("call, error, fragments", ERRORS.values(), ids=list(ERRORS))
def test_error_names_the_values_and_the_fix(call, error, fragments, raises_teaching):
    raises_teaching(call, error, fragments)
