"""Grouped-query attention and the KV cache (Chapter 9) and the paged KV cache
(Chapter 11): each equal to the plain computation it replaces."""

import math

import pytest
import torch
import torch.nn.functional as F

import attn_course
from attn_course import (
    GPT,
    GPTConfig,
    GroupedQueryAttention,
    KVCache,
    LayerCache,
    MultiHeadAttention,
    PagedKVCache,
    generate,
    kv_cache_numbers,
    paged_vs_preallocated,
)


def _gpt(num_kv_heads=None, positions="learned", context_length=24, seed=0):
    torch.manual_seed(seed)
    config = GPTConfig(
        vocab_size=17,
        context_length=context_length,
        d_model=16,
        num_heads=4,
        num_layers=2,
        positions=positions,
        num_kv_heads=num_kv_heads,
    )
    return GPT(config).eval()


# --- Grouped-query attention


def test_as_many_key_value_heads_as_query_heads_is_multi_head_attention():
    torch.manual_seed(3)
    mha = MultiHeadAttention(8, 8, 6, 0.0, 4)
    torch.manual_seed(3)
    gqa = GroupedQueryAttention(8, 8, 6, 0.0, 4, num_kv_heads=4)
    x = torch.randn(2, 6, 8)
    torch.testing.assert_close(gqa(x), mha(x), rtol=0, atol=0)


@pytest.mark.parametrize("num_kv_heads", [1, 2, 4])
@pytest.mark.parametrize("causal", [True, False])
def test_grouped_query_attention_equals_pytorchs_enable_gqa(num_kv_heads, causal):
    torch.manual_seed(num_kv_heads)
    module = GroupedQueryAttention(
        8, 16, 7, 0.0, 4, num_kv_heads=num_kv_heads, causal=causal
    )
    x = torch.randn(3, 7, 8)
    q = module.W_query(x).view(3, 7, 4, 4).transpose(1, 2)  # (B, H, T, d)
    k = module.W_key(x).view(3, 7, num_kv_heads, 4).transpose(1, 2)
    v = module.W_value(x).view(3, 7, num_kv_heads, 4).transpose(1, 2)
    expected = F.scaled_dot_product_attention(
        q, k, v, is_causal=causal, enable_gqa=True
    )
    expected = module.out_proj(expected.transpose(1, 2).reshape(3, 7, 16))
    torch.testing.assert_close(module(x), expected, rtol=1e-5, atol=1e-6)


def test_grouped_query_attention_has_narrower_key_and_value_projections():
    module = GroupedQueryAttention(32, 32, 8, 0.0, 8, num_kv_heads=2)
    assert module.W_key.weight.shape == (2 * 4, 32)
    assert module.W_value.weight.shape == (2 * 4, 32)
    assert "num_kv_heads=2" in repr(module)
    full = MultiHeadAttention(32, 32, 8, 0.0, 8)
    saved = sum(p.numel() for p in full.parameters()) - sum(
        p.numel() for p in module.parameters()
    )
    assert saved == 2 * 32 * (32 - 8)  # the weights of W_key and W_value


def test_a_key_value_head_count_that_does_not_divide_the_heads_is_refused():
    with pytest.raises(ValueError, match=r"num_kv_heads=3 does not divide num_heads=4"):
        GroupedQueryAttention(8, 8, 6, 0.0, 4, num_kv_heads=3)
    with pytest.raises(ValueError, match=r"\{1, 2, 4\}"):
        GroupedQueryAttention(8, 8, 6, 0.0, 4, num_kv_heads=3)
    with pytest.raises(TypeError, match="num_kv_heads"):
        GroupedQueryAttention(8, 8, 6, 0.0, 4, num_kv_heads=2.0)
    with pytest.raises(ValueError, match="num_kv_heads=3 does not divide"):
        GPTConfig(vocab_size=5, context_length=4, num_heads=4, num_kv_heads=3)


def test_the_gpt_uses_grouped_query_attention_only_when_asked():
    assert type(_gpt().blocks[0].self_attn) is MultiHeadAttention
    assert type(_gpt(num_kv_heads=4).blocks[0].self_attn) is MultiHeadAttention
    attention = _gpt(num_kv_heads=1).blocks[0].self_attn
    assert isinstance(attention, GroupedQueryAttention)
    assert attention.num_kv_heads == 1


def test_the_trace_names_the_key_value_heads():
    module = GroupedQueryAttention(8, 8, 6, 0.0, 4, num_kv_heads=2)
    tracer = attn_course.ShapeTracer()
    module(torch.randn(1, 6, 8), trace=tracer)
    text = str(tracer)
    assert "keys.transpose     (1, 2, 6, 2)  (B, H_kv, T, d)" in text
    assert "queries.transpose  (1, 4, 6, 2)  (B, H, T, d)" in text


# --- The cache


@pytest.mark.parametrize("num_kv_heads", [4, 2, 1])
@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])
def test_feeding_the_tokens_in_pieces_through_a_cache_gives_the_same_logits(
    num_kv_heads, positions
):
    model = _gpt(num_kv_heads, positions)
    idx = torch.randint(0, 17, (3, 20), generator=torch.Generator().manual_seed(1))
    full, full_weights = model(idx, return_weights=True)
    cache = KVCache(2)
    pieces, start = [], 0
    for size in (5, 1, 1, 7, 1, 5):  # a prompt, single tokens, longer pieces
        logits, weights = model(
            idx[:, start : start + size], cache=cache, return_weights=True
        )
        pieces.append(logits)
        # The new tokens' rows of the whole attention matrix, up to themselves.
        expected = full_weights[0][:, :, start : start + size, : start + size]
        torch.testing.assert_close(weights[0], expected, rtol=1e-5, atol=1e-6)
        start += size
    assert len(cache) == 20
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("num_kv_heads", [4, 1])
@pytest.mark.parametrize(
    "sampling",
    [dict(temperature=0), dict(temperature=1.0), dict(temperature=0.8, top_k=5)],
    ids=["greedy", "sampled", "top-k"],
)
def test_cached_generation_gives_the_tokens_of_uncached_generation(
    num_kv_heads, sampling
):
    model = _gpt(num_kv_heads)
    prompt = torch.tensor([[1, 2, 3], [4, 5, 6]])
    # 40 new tokens: past context_length=24, where the window starts to slide.
    runs = [
        generate(
            model,
            prompt,
            40,
            generator=torch.Generator().manual_seed(7),
            use_cache=use_cache,
            **sampling,
        )
        for use_cache in (False, True)
    ]
    assert runs[0].shape == (2, 43)
    assert torch.equal(runs[0], runs[1])


def test_a_prompt_longer_than_the_context_is_cut_with_and_without_the_cache():
    model = _gpt()
    prompt = torch.randint(0, 17, (1, 30), generator=torch.Generator().manual_seed(2))
    plain = generate(model, prompt, 5, temperature=0)
    cached = generate(model, prompt, 5, temperature=0, use_cache=True)
    assert torch.equal(plain, cached)


def test_the_cache_holds_what_the_formula_says():
    model = _gpt(num_kv_heads=2)
    cache = KVCache(2)
    model(torch.randint(0, 17, (3, 11)), cache=cache)
    numbers = kv_cache_numbers(
        num_layers=2, num_kv_heads=2, head_dim=4, tokens=11, batch=3
    )
    assert cache.numbers() == numbers == 2 * 2 * 3 * 2 * 11 * 4
    assert cache.nbytes() == 4 * numbers
    layer = cache.layers[1]
    assert layer.keys.shape == layer.values.shape == (3, 2, 11, 4)
    assert "tokens=11" in repr(cache)


def test_a_full_cache_says_how_many_tokens_it_holds_and_what_to_do():
    model = _gpt(context_length=8)
    cache = KVCache(2)
    model(torch.zeros(1, 6, dtype=torch.long), cache=cache)
    with pytest.raises(
        ValueError,
        match=r"holds 6 tokens and idx adds 3: 9 is more than context_length=8",
    ):
        model(torch.zeros(1, 3, dtype=torch.long), cache=cache)
    assert len(cache) == 6  # the refused call stored nothing


def test_a_cache_that_does_not_fit_the_model_is_refused():
    model = _gpt()
    idx = torch.zeros(1, 3, dtype=torch.long)
    with pytest.raises(TypeError, match=r"cache must be a KVCache, got list"):
        model(idx, cache=[])
    with pytest.raises(ValueError, match=r"the cache has 3 layers but the model has 2"):
        model(idx, cache=KVCache(3))
    with pytest.raises(TypeError, match="use_cache must be True or False"):
        generate(model, idx, 2, use_cache="yes")
    module = MultiHeadAttention(8, 8, 6, 0.0, 2)
    with pytest.raises(
        TypeError, match=r"cache must be a LayerCache, got attn_course.KVCache"
    ):
        module(torch.randn(1, 3, 8), cache=KVCache(1))
    with pytest.raises(ValueError, match="key_padding_mask cannot be combined"):
        module(
            torch.randn(1, 3, 8),
            cache=LayerCache(),
            key_padding_mask=torch.ones(1, 3, dtype=torch.bool),
        )


def test_the_layer_cache_refuses_keys_of_another_shape():
    layer = LayerCache()
    assert len(layer) == 0 and layer.numbers() == 0 and layer.nbytes() == 0
    layer.append(torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 3, 4))
    with pytest.raises(ValueError, match=r"differ in B, H_kv or d"):
        layer.append(torch.zeros(1, 4, 1, 4), torch.zeros(1, 4, 1, 4))
    with pytest.raises(ValueError, match=r"must have the same shape"):
        layer.append(torch.zeros(1, 2, 1, 4), torch.zeros(1, 2, 2, 4))
    with pytest.raises(ValueError, match=r"\(B, H_kv, T_new, d\), got \(2, 4\)"):
        layer.append(torch.zeros(2, 4), torch.zeros(2, 4))
    assert len(layer) == 3


def test_the_cache_size_formula_checks_its_arguments():
    assert kv_cache_numbers(12, 12, 64, 1024) == 2 * 12 * 12 * 1024 * 64
    with pytest.raises(TypeError, match=r"tokens must be an int, got float 2.5"):
        kv_cache_numbers(1, 1, 1, 2.5)
    with pytest.raises(ValueError, match=r"batch must be at least 0, got batch=-1"):
        kv_cache_numbers(1, 1, 1, 1, batch=-1)


# --- The storage: reserved once, written in place


def test_appending_within_the_capacity_writes_into_the_same_storage():
    """Eight tokens into room for eight: one storage, holding what cat would."""
    gen = torch.Generator().manual_seed(0)
    layer = LayerCache(capacity=8)
    pieces = [torch.randn(2, 3, 1, 4, generator=gen) for _ in range(8)]
    addresses = []
    for piece in pieces:
        keys, values = layer.append(piece, -piece)
        addresses.append((keys.data_ptr(), values.data_ptr()))
    assert len(set(addresses)) == 1
    assert layer.capacity == 8 and len(layer) == 8
    assert torch.equal(layer.keys, torch.cat(pieces, dim=2))
    assert torch.equal(layer.values, -torch.cat(pieces, dim=2))


def test_a_full_cache_doubles_so_that_only_a_few_appends_reallocate():
    """100 tokens without a capacity: the storage doubles, moving 7 times."""
    layer = LayerCache()
    token = torch.ones(1, 2, 1, 4)
    addresses, capacities = [], []
    for _ in range(100):
        layer.append(token, token)
        addresses.append(layer.keys.data_ptr())
        capacities.append(layer.capacity)
    moved = [t for t in range(1, 100) if addresses[t] != addresses[t - 1]]
    assert moved == [1, 2, 4, 8, 16, 32, 64]  # when token t + 1 found no room
    assert sorted(set(capacities)) == [2**n for n in range(8)]
    assert layer.numbers() == 2 * 100 * 2 * 4  # the tokens stored, not the room


def test_a_cache_with_room_for_the_context_never_reallocates_while_generating():
    model = _gpt()  # context_length=24
    prompt = torch.tensor([[1, 2, 3]])
    cache = KVCache(2, capacity=24)
    idx = prompt
    with torch.no_grad():
        logits = model(idx, cache=cache)
        storage = [
            (layer.keys.data_ptr(), layer.values.data_ptr()) for layer in cache.layers
        ]
        for _ in range(21):  # greedy decoding up to the 24 tokens of the context
            next_id = logits[:, -1].argmax(dim=-1, keepdim=True)  # (1, 1)
            idx = torch.cat([idx, next_id], dim=1)
            logits = model(next_id, cache=cache)
            now = [
                (layer.keys.data_ptr(), layer.values.data_ptr())
                for layer in cache.layers
            ]
            assert now == storage
    assert len(cache) == 24 and all(layer.capacity == 24 for layer in cache.layers)
    assert torch.equal(idx, generate(model, prompt, 21, temperature=0))


def test_truncate_forgets_the_newest_tokens_and_keeps_the_storage():
    layer = LayerCache()
    a, b, c = (torch.full((1, 1, 1, 2), float(n)) for n in (1, 2, 3))
    layer.append(a, a)
    layer.append(b, b)
    address = layer.keys.data_ptr()
    layer.truncate(len(layer) - 1)  # drop the newest token, b
    assert len(layer) == 1 and torch.equal(layer.keys, a)
    layer.append(c, -c)  # written where b was
    assert torch.equal(layer.keys, torch.cat([a, c], dim=2))
    assert torch.equal(layer.values, torch.cat([a, -c], dim=2))
    assert layer.keys.data_ptr() == address
    with pytest.raises(
        ValueError, match=r"cannot keep length=3 tokens: the cache holds 2"
    ):
        layer.truncate(3)
    with pytest.raises(ValueError, match=r"length must be at least 0, got length=-1"):
        layer.truncate(-1)
    with pytest.raises(TypeError, match=r"capacity must be an int, got float 8.0"):
        LayerCache(capacity=8.0)


def test_the_whole_cache_truncates_every_layer():
    model = _gpt()
    cache = KVCache(2)
    idx = torch.randint(0, 17, (2, 6), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        model(idx[:, :5], cache=cache)
        first = model(idx[:, 5:], cache=cache)
        cache.truncate(5)  # the step is taken back in every layer
        assert [len(layer) for layer in cache.layers] == [5, 5]
        again = model(idx[:, 5:], cache=cache)
    torch.testing.assert_close(again, first, rtol=0, atol=0)
    assert len(cache) == 6


# --- The paged KV cache (Chapter 11): equal to LayerCache token for token, exactly
# (both only copy numbers, no arithmetic)

H_KV, D = 2, 3


def tokens(count, gen):
    """Keys and values of ``count`` new tokens of one sequence, ``(H_kv, T, d)``."""
    return torch.randn(H_KV, count, D, generator=gen), torch.randn(
        H_KV, count, D, generator=gen
    )


def feed(paged, contiguous, seq, count, gen):
    """Append the same ``count`` tokens to ``paged``'s ``seq`` and to ``contiguous``,
    a LayerCache of a batch of one."""
    keys, values = tokens(count, gen)
    paged.append(seq, keys, values)
    contiguous.append(keys[None], values[None])


def assert_same(paged, seq, contiguous):
    """``seq``'s tokens in ``paged`` equal those of ``contiguous``, exactly."""
    assert paged.length(seq) == len(contiguous)
    if not len(contiguous):  # an empty LayerCache holds no tensor yet
        assert paged.keys(seq).shape == paged.values(seq).shape == (H_KV, 0, D)
        return
    assert torch.equal(paged.keys(seq), contiguous.keys[0])
    assert torch.equal(paged.values(seq), contiguous.values[0])


def test_interleaved_sequences_equal_their_contiguous_caches():
    """Three sequences appended in turn, one to six tokens at a time, in blocks of
    4: each equal to its own LayerCache after every append."""
    gen = torch.Generator().manual_seed(0)
    paged = PagedKVCache(16, 4, H_KV, D)
    contiguous = {seq: LayerCache() for seq in ("a", "b", "c")}
    for seq in contiguous:
        paged.add_sequence(seq)
    for step in range(12):
        seq = "abc"[step % 3]
        count = int(torch.randint(1, 7, (1,), generator=gen))
        feed(paged, contiguous[seq], seq, count, gen)
        for other, layer in contiguous.items():
            assert_same(paged, other, layer)
    lengths = [len(layer) for layer in contiguous.values()]
    assert paged.blocks_in_use == sum(math.ceil(n / 4) for n in lengths)
    assert paged.wasted_slots == sum(-n % 4 for n in lengths)
    tables = [paged.block_table(seq) for seq in contiguous]
    used = [block for table in tables for block in table]
    assert len(set(used)) == len(used)  # no block in two sequences


@pytest.mark.parametrize("prefix_length", [None, 8, 6, 0])
def test_sequences_sharing_a_prompt_share_its_full_blocks_only(prefix_length):
    """A prompt of 10 tokens in blocks of 4: its full blocks are shared, the rest
    copied; appending to either sequence leaves the other unchanged."""
    gen = torch.Generator().manual_seed(1)
    paged = PagedKVCache(12, 4, H_KV, D)
    prompt = LayerCache()
    paged.add_sequence("prompt")
    feed(paged, prompt, "prompt", 10, gen)
    paged.add_sequence("reply", parent="prompt", prefix_length=prefix_length)
    shared = 10 if prefix_length is None else prefix_length
    reply = LayerCache()
    if shared:
        reply.append(prompt.keys[:, :, :shared], prompt.values[:, :, :shared])
    assert_same(paged, "reply", reply)
    full, partial = shared // 4, shared % 4 > 0
    tables = paged.block_table("prompt"), paged.block_table("reply")
    assert tables[1][:full] == tables[0][:full]  # the same blocks, not copies
    assert not set(tables[1][full:]) & set(tables[0])
    # Shared blocks count once: the prompt's 3 blocks and the reply's copied one
    assert paged.blocks_in_use == math.ceil(10 / 4) + partial
    for seq, layer, count in (("reply", reply, 5), ("prompt", prompt, 3)):
        feed(paged, layer, seq, count, gen)
        assert_same(paged, "reply", reply)
        assert_same(paged, "prompt", prompt)


def test_freeing_returns_a_shared_block_when_its_last_user_goes():
    gen = torch.Generator().manual_seed(2)
    paged = PagedKVCache(8, 4, H_KV, D)
    prompt, reply = LayerCache(), LayerCache()
    paged.add_sequence("prompt")
    feed(paged, prompt, "prompt", 8, gen)  # two full blocks
    paged.add_sequence("reply", parent="prompt")
    reply.append(prompt.keys, prompt.values)
    feed(paged, reply, "reply", 3, gen)
    assert paged.blocks_in_use == 3
    paged.free("prompt")
    assert paged.blocks_in_use == 3  # the reply still holds all three
    assert_same(paged, "reply", reply)
    paged.add_sequence("other")  # takes no shared block, though some are free
    feed(paged, LayerCache(), "other", 20, gen)
    assert_same(paged, "reply", reply)
    paged.free("reply")
    paged.free("other")
    assert paged.blocks_in_use == 0 and paged.wasted_slots == 0
    paged.add_sequence("all")  # every block is free again
    paged.append("all", *tokens(8 * 4, gen))
    assert paged.blocks_in_use == 8


def test_an_exhausted_pool_names_the_numbers_and_changes_nothing():
    gen = torch.Generator().manual_seed(3)
    paged = PagedKVCache(3, 4, H_KV, D)
    paged.add_sequence("a")
    paged.append("a", *tokens(5, gen))  # 2 blocks
    with pytest.raises(
        ValueError,
        match=r"exhausted: sequence 'a' needs 2 more blocks of 4 tokens to hold 13 "
        r"tokens, but 1 of 3 blocks is free; free a finished sequence",
    ):
        paged.append("a", *tokens(8, gen))
    assert paged.length("a") == 5 and paged.blocks_in_use == 2
    paged.add_sequence("b")
    paged.append("b", *tokens(4, gen))  # the last free block
    with pytest.raises(ValueError, match=r"needs 1 more block of 4 tokens to hold 5"):
        paged.add_sequence("c", parent="a")  # a's partial block needs a copy
    assert paged.blocks_in_use == 3
    with pytest.raises(ValueError, match=r"0 of 3 blocks are free"):
        paged.append("b", *tokens(1, gen))
    with pytest.raises(ValueError, match=r"holds no sequence 'c'"):
        paged.length("c")


@pytest.mark.parametrize("block_size", [1, 4, 16])
def test_paged_memory_against_a_preallocated_cache(block_size):
    """A mixed batch: the paged cache's slots are its blocks in use, the
    preallocated cache's those of a LayerCache with room for the longest."""
    gen = torch.Generator().manual_seed(4)
    lengths, max_length = [5, 64, 1, 13, 30], 64
    paged = PagedKVCache(sum(lengths), block_size, H_KV, D)  # enough for blocks of 1
    for seq, n in enumerate(lengths):
        paged.add_sequence(seq)
        paged.append(seq, *tokens(n, gen))
    paged_slots, preallocated = paged_vs_preallocated(lengths, max_length, block_size)
    assert paged_slots == paged.blocks_in_use * block_size
    assert paged.wasted_slots == paged_slots - sum(lengths)
    assert paged.wasted_slots == sum(-n % block_size for n in lengths)
    contiguous = LayerCache(capacity=max_length)
    batch = torch.zeros(len(lengths), H_KV, 1, D)  # one token of each sequence
    contiguous.append(batch, batch)
    assert preallocated == len(lengths) * contiguous.capacity


PAGED_ERRORS = {
    "unknown sequence": (
        lambda cache: cache.keys("z"),
        ValueError,
        ["holds no sequence 'z' (it holds ['a'])", "add_sequence('z')"],
    ),
    "a name taken": (
        lambda cache: cache.add_sequence("a"),
        ValueError,
        ["already holds a sequence 'a'", "free('a')"],
    ),
    "a prefix longer than the parent": (
        lambda cache: cache.add_sequence("b", parent="a", prefix_length=9),
        ValueError,
        ["prefix_length=9 is longer than the parent 'a', which holds 5 tokens"],
    ),
    "keys of a batch": (
        lambda cache: cache.append("a", torch.ones(1, H_KV, 2, D), torch.ones(1)),
        ValueError,
        ["expected keys of shape (H_kv=2, T_new, d=3), got (1, 2, 2, 3)", "keys[b]"],
    ),
    "keys and values differ": (
        lambda cache: cache.append("a", torch.ones(H_KV, 2, D), torch.ones(H_KV, 1, D)),
        ValueError,
        ["keys (2, 2, 3) and values (2, 1, 3) must have the same shape"],
    ),
    "another dtype": (
        lambda cache: cache.append("a", *(torch.ones(H_KV, 1, D).double(),) * 2),
        TypeError,
        ["keys have dtype torch.float64, the cache holds torch.float32"],
    ),
    "not a dtype": (
        lambda cache: PagedKVCache(4, 4, 2, 3, dtype="float32"),
        TypeError,
        ["dtype must be a floating-point torch.dtype, got 'float32'"],
    ),
    "no blocks": (
        lambda cache: PagedKVCache(0, 4, 2, 3),
        ValueError,
        ["num_blocks must be at least 1, got num_blocks=0"],
    ),
    "a length beyond the maximum": (
        lambda cache: paged_vs_preallocated([3, 70], max_length=64, block_size=16),
        ValueError,
        ["lengths [70] exceed max_length=64", "at least 70"],
    ),
}


@pytest.mark.parametrize(
    "call, error, fragments", PAGED_ERRORS.values(), ids=list(PAGED_ERRORS)
)
def test_paged_cache_errors_name_the_values_and_the_fix(
    call, error, fragments, raises_teaching
):
    cache = PagedKVCache(4, 4, H_KV, D)
    cache.add_sequence("a")
    cache.append("a", torch.zeros(H_KV, 5, D), torch.zeros(H_KV, 5, D))
    raises_teaching(lambda: call(cache), error, fragments)
