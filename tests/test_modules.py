"""``attn_course.modules`` against the seeds' algorithm, and its behaviour.

The seeds (the LLMs-from-scratch chapter-3 classes) are rewritten below as compact
reference classes: the same parameters created in the same order, a stored upper
triangular mask filled with -inf *before* the scores are divided by
sqrt(keys.shape[-1]), and ``nn.Dropout`` applied to the weights. After the same
``torch.manual_seed`` the package modules must give the same outputs.
"""

import pytest
import torch
from torch import nn

from attn_course import (
    CausalAttention,
    CrossAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SelfAttentionV1,
    SelfAttentionV2,
    ShapeTracer,
    your_journey,
)

# The package scales the scores by multiplying with 1 / sqrt(d) and masks after
# scaling; the seeds mask first and divide by sqrt(d). The two differ by at most a
# float32 rounding of the scores (about 1e-7 relative), so the outputs, of order 1,
# agree to well within 1e-6.
SEED_TOL = {"atol": 1e-6, "rtol": 1e-6}


@pytest.fixture(autouse=True)
def _keep_global_rng():
    """Tests call torch.manual_seed like the seeds do; restore the RNG afterwards."""
    with torch.random.fork_rng():
        yield


def journey_batch():
    """The seeds' batch: two copies of "Your journey starts with one step"."""
    inputs = your_journey().embeddings  # (T=6, d_in=3)
    return torch.stack((inputs, inputs), dim=0)  # (B=2, T=6, d_in=3)


# --------------------------------------------------------------------------------------
# Reference classes: the seeds' algorithm, in our own words
# --------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------
# Seed-for-seed parity with the seeds
# --------------------------------------------------------------------------------------


def test_self_attention_v1_matches_the_seeds():
    ref, ours = build_pair(RefSelfAttentionV1, SelfAttentionV1, 123, 3, 2)
    assert_same_parameters(ref, ours)
    inputs = your_journey().embeddings
    torch.testing.assert_close(ours(inputs), ref(inputs), **SEED_TOL)


@pytest.mark.parametrize("qkv_bias", [False, True])
def test_self_attention_v2_matches_the_seeds(qkv_bias):
    ref, ours = build_pair(RefSelfAttentionV2, SelfAttentionV2, 789, 3, 2, qkv_bias)
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


def test_dropout_in_the_seed_comparison_really_drops():
    """The dropout=0.5 cases above compare outputs that dropout changed."""
    ref_cls, our_cls, seed, args = SEEDED_MODULES["mha_head_dim_2"]
    _, ours = build_pair(ref_cls, our_cls, seed, *args, 0.5, num_heads=2)
    batch = journey_batch()
    torch.manual_seed(0)
    dropped = ours(batch)
    ours.eval()
    assert not torch.allclose(dropped, ours(batch))


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


# --------------------------------------------------------------------------------------
# V1 and V2
# --------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------
# Causality
# --------------------------------------------------------------------------------------


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


def test_bidirectional_mha_does_use_the_future():
    torch.manual_seed(0)
    module = MultiHeadAttention(4, 6, 8, 0.0, 3, causal=False)
    x = torch.randn(2, 7, 4)
    future = x.clone()
    future[:, -1] = torch.randn(2, 4)
    changed = (module(future)[:, 0] - module(x)[:, 0]).abs().amax(dim=-1)
    assert (changed > 1e-4).all()


@pytest.mark.parametrize("name", list(causal_modules()))
def test_inputs_shorter_than_context_length(name):
    """Causal: a prefix gives the prefix of the outputs; any T <= context_length."""
    module = causal_modules()[name]
    x = torch.randn(2, 8, 4, generator=torch.Generator().manual_seed(2))
    full = module(x)
    for T in (1, 3, 8):
        torch.testing.assert_close(module(x[:, :T]), full[:, :T])


@pytest.mark.parametrize("name", ["CausalAttention", "MultiHeadAttentionWrapper"])
def test_two_dimensional_input_is_one_sequence(name):
    module = causal_modules()[name]
    x = torch.randn(5, 4, generator=torch.Generator().manual_seed(3))
    out, weights = module(x, return_weights=True)
    batched, batched_weights = module(x[None], return_weights=True)
    torch.testing.assert_close(out, batched[0])
    torch.testing.assert_close(weights, batched_weights[0])


# --------------------------------------------------------------------------------------
# Wrapper and fused multi-head attention
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("qkv_bias", [False, True])
@pytest.mark.parametrize("num_heads, d_head", [(1, 3), (2, 2), (3, 1), (4, 3)])
def test_wrapper_equals_mha_with_weights_arranged_to_match(num_heads, d_head, qkv_bias):
    """How to arrange the weights so the two modules compute the same map.

    The wrapper has ``num_heads`` heads, each with ``d_out = d_head`` (per head). The
    fused module gets ``d_out = num_heads * d_head`` (total). Head ``h`` of the fused
    module uses rows ``h * d_head ... (h + 1) * d_head`` of each projection's output,
    so its W_query weight is the wrapper heads' W_query weights stacked along the
    output dimension (dim 0 of an nn.Linear weight, which is (out, in)); the same for
    W_key and W_value, and for the biases. The wrapper has no output projection, so
    out_proj is set to the identity with zero bias.
    """
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


def test_mha_attributes():
    module = MultiHeadAttention(3, 8, 6, 0.1, 4, causal=False)
    assert (module.d_out, module.num_heads, module.head_dim) == (8, 4, 2)
    assert (module.context_length, module.causal) == (6, False)
    assert module.dropout.p == 0.1
    assert module.out_proj.bias is not None and module.W_query.bias is None


# --------------------------------------------------------------------------------------
# ShapeTracer
# --------------------------------------------------------------------------------------

MHA_STEPS = [
    ("x", (2, 5, 3)),
    ("queries", (2, 5, 4)),
    ("keys", (2, 5, 4)),
    ("values", (2, 5, 4)),
    ("queries.view", (2, 5, 2, 2)),
    ("queries.transpose", (2, 2, 5, 2)),
    ("keys.view", (2, 5, 2, 2)),
    ("keys.transpose", (2, 2, 5, 2)),
    ("values.view", (2, 5, 2, 2)),
    ("values.transpose", (2, 2, 5, 2)),
    ("weights", (2, 2, 5, 5)),
    ("context", (2, 2, 5, 2)),
    ("context.transpose", (2, 5, 2, 2)),
    ("context.view", (2, 5, 4)),
    ("out_proj", (2, 5, 4)),
]
MHA_NOTES = [
    "(B, T, d_in)",
    "(B, T, D)",
    "(B, T, D)",
    "(B, T, D)",
    "(B, T, H, d)",
    "(B, H, T, d)",
    "(B, T, H, d)",
    "(B, H, T, d)",
    "(B, T, H, d)",
    "(B, H, T, d)",
    "(B, H, T, T)",
    "(B, H, T, d)",
    "(B, T, H, d)",
    "(B, T, D)",
    "(B, T, D)",
]


def test_shape_tracer_records_every_step_of_mha():
    torch.manual_seed(0)
    mha = MultiHeadAttention(3, 4, 6, 0.0, num_heads=2)
    x = torch.randn(2, 5, 3)
    tracer = ShapeTracer()
    out = mha(x, trace=tracer)
    assert tracer.steps == MHA_STEPS
    assert tracer.notes == MHA_NOTES
    assert len(tracer) == len(MHA_STEPS)
    torch.testing.assert_close(out, mha(x))  # tracing changes nothing
    lines = str(tracer).splitlines()
    assert lines[0].split() == ["step", "shape", "note"]
    assert lines[5] == "queries.view       (2, 5, 2, 2)  (B, T, H, d)"
    assert repr(tracer) == str(tracer)
    # A plain callable gets the same (name, tensor) calls.
    seen = []
    mha(x, trace=lambda name, tensor: seen.append((name, tuple(tensor.shape))))
    assert seen == MHA_STEPS
    # A tracer accumulates until cleared.
    mha(x, trace=tracer)
    assert len(tracer) == 2 * len(MHA_STEPS)
    tracer.clear()
    assert tracer.steps == [] and str(tracer) == "step  shape  note"


def test_shape_tracer_on_cross_attention_uses_t_q_and_t_k():
    torch.manual_seed(0)
    xattn = CrossAttention(3, 4, 2, d_context=5)
    tracer = ShapeTracer()
    xattn(torch.randn(2, 3, 3), torch.randn(2, 7, 5), trace=tracer)
    assert tracer.steps[:2] == [("x", (2, 3, 3)), ("context (input)", (2, 7, 5))]
    assert [name for name, _ in tracer.steps[2:]] == [n for n, _ in MHA_STEPS[1:]]
    notes = dict(zip([name for name, _ in tracer.steps], tracer.notes, strict=True))
    assert notes["keys.transpose"] == "(B, H, T_k, d)"
    assert notes["weights"] == "(B, H, T_q, T_k)"
    assert dict(tracer.steps)["weights"] == (2, 2, 3, 7)
    assert dict(tracer.steps)["out_proj"] == (2, 3, 4)
