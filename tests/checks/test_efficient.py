"""Tests of the Chapter 9 self-checks (attn_course.checks.efficient): right answers
pass, wrong ones are explained."""

import itertools
import math

import numpy as np
import pytest
import torch

from attn_course import (
    GPT,
    GPTConfig,
    KVCache,
    checks,
    online_softmax,
    sliding_window_mask,
)
from attn_course.checks._kit import first_slip
from attn_course.checks.efficient import (
    _BATCH_CASES,
    DILATED,
    _batch_cases,
    _batch_slips,
    _cache_bytes,
    _cache_mistakes,
    _cache_slip_table,
    _configs,
    _explain_mistakes,
    _fold_rows,
    _online_cases,
    _step,
    _sum_slips,
)

from .answers import (
    dilated_window_mask,
    failure,
    largest_batch,
    online_softmax_step,
    unguarded_step,
    wrong_call_test,
)

MINUS_INF = float("-inf")

# --- check_online_step_fn ------------------------------------------------------------


def _fold_reference(rows, block):
    m = torch.full((rows.size(0),), MINUS_INF, dtype=torch.float64)
    s = torch.zeros(rows.size(0), dtype=torch.float64)
    for part in rows.split(block, dim=-1):
        m, s = _step(m, s, part)
    return m, s


def test_the_reference_step_folds_into_softmax_s_normaliser():
    rows = _fold_rows()
    m, s = _fold_reference(rows, 8)
    assert torch.allclose(m + s.log(), torch.logsumexp(rows.double(), dim=-1))
    weights = torch.exp(rows.double() - m[:, None]) / s[:, None]
    assert torch.allclose(weights, online_softmax(rows.double(), block_size=8))


def test_the_reference_step_gives_minus_inf_and_zero_for_a_fully_masked_row():
    m, s = _fold_reference(torch.full((2, 6), MINUS_INF), 3)
    assert torch.equal(m, torch.full((2,), MINUS_INF, dtype=torch.float64))
    assert torch.equal(s, torch.zeros(2, dtype=torch.float64))


def test_the_online_cases_cover_what_the_exercise_promises():
    cases = _online_cases()
    seen = set()
    for case in cases:
        m, s, block = case.args
        R, n = block.shape
        assert m.shape == s.shape == (R,) and R != n  # a sum over rows is caught
        assert m.dtype == s.dtype == block.dtype == torch.float32
        m_new, s_new = _step(m, s, block)
        assert torch.isfinite(s_new).all()
        finite = torch.isfinite(m)
        if not finite.any():
            seen.add("first block")
        if (m_new > m)[finite].all() and finite.all():
            seen.add("larger maximum")
        if torch.equal(m_new, m.double()) and finite.all():
            seen.add("smaller maximum")
        if torch.isneginf(block).any() and finite.any():
            seen.add("masked keys")
        if torch.isneginf(m_new).any():
            seen.add("fully masked row")
            assert (s_new[torch.isneginf(m_new)] == 0).all()
    assert seen == {
        "first block",
        "larger maximum",
        "smaller maximum",
        "masked keys",
        "fully masked row",
    }
    assert "larger" in cases[0].description  # where every slip of the sum shows


def test_the_first_online_case_tells_the_slips_of_the_sum_apart():
    m, s, block = _online_cases()[0].args
    m_new, right = _step(m, s, block)
    values = [right] + [slip.gives for slip in _sum_slips(m, s, block, m_new)]
    for a, b in itertools.combinations(values, 2):
        assert not torch.allclose(a, b, atol=1e-3, rtol=1e-3)


def test_the_unguarded_step_is_nan_only_on_the_fully_masked_row():
    case = _online_cases()[-1]
    m_new, s_new = unguarded_step(*case.args)
    assert torch.isnan(s_new).tolist() == [True, False, False]
    assert torch.isneginf(m_new)[0]


def test_check_online_step_fn_accepts_right_functions(capsys):
    def with_nan_to_num(m, s, block):
        m_new, s_new = unguarded_step(m, s, block)
        return m_new, torch.nan_to_num(s_new, nan=0.0)

    def with_where(m, s, block):
        m_new = torch.maximum(m, block.max(dim=-1).values)
        s_new = s * torch.exp(m - m_new) + torch.exp(block - m_new[:, None]).sum(-1)
        return m_new, torch.where(torch.isneginf(m_new), 0.0, s_new)

    def in_float64_as_a_list(m, s, block):
        m_new, s_new = online_softmax_step(m.double(), s.double(), block.double())
        return [m_new, s_new]

    for fn in (online_softmax_step, with_nan_to_num, with_where, in_float64_as_a_list):
        checks.check_online_step_fn(fn)
    out = capsys.readouterr().out
    assert out.count("✅ check_online_step_fn:") == 4
    assert "folded over 4 blocks of 8 scores" in out and "within 1e-5" in out


def step(*, rescale="right", terms="right", maximum="right", guard=True):
    """An online softmax step with a slip in one of its parts."""

    def online_step(m, s, block):
        if maximum == "block":
            m_new = block.amax(dim=-1)
        elif maximum == "old":
            m_new = m
        else:
            m_new = torch.maximum(m, block.amax(dim=-1))
        if maximum == "finite":
            m_new = m_new.clamp(min=-1e9)
        safe = torch.where(m_new == MINUS_INF, 0.0, m_new) if guard else m_new
        factor = {
            "right": torch.exp(m - safe),
            "none": torch.ones_like(m),
            "wrong way": torch.exp(safe - m),
        }.get(rescale)
        shift = {"right": safe, "none": torch.zeros_like(m), "old": m}[terms]
        new = torch.exp(block - shift[:, None]).sum(dim=-1)
        if rescale == "drop":
            return m_new, new
        if rescale == "both":
            return m_new, (s + new) * torch.exp(m - safe)
        return m_new, s * factor + new

    return online_step


def in_place(m, s, block):
    m_new = torch.maximum(m, block.amax(dim=-1))
    s.mul_(torch.exp(m - m_new)).add_(torch.exp(block - m_new[:, None]).sum(-1))
    return m_new, s


@pytest.mark.parametrize(
    ("fn", "fragments"),
    [
        (step(rescale="none"), ["your s_new", "old sum is not rescaled"]),
        (step(rescale="wrong way"), ["rescaled the wrong way, by exp(m_new - m)"]),
        (step(terms="none"), ["without subtracting the maximum"]),
        (step(terms="old"), ["subtract the OLD maximum m"]),
        (
            step(rescale="none", terms="old"),
            ["stays relative to the old maximum m", "no longer fits together"],
        ),
        (step(rescale="both"), ["applied to the block's terms too"]),
        (step(rescale="drop"), ["The old sum is dropped"]),
        (step(maximum="old"), ["your m_new", "the old m, unchanged"]),
        (lambda m, s, b: online_softmax_step(m, s, b)[1], ["returned only s_new"]),
        (lambda m, s, b: online_softmax_step(m, s, b)[0], ["returned only m_new"]),
        (lambda m, s, b: online_softmax_step(m, s, b)[::-1], ["in the wrong order"]),
        (
            lambda m, s, b: torch.stack(online_softmax_step(m, s, b)),
            ["should return a pair (m_new, s_new)", "shape (2, 3)"],
        ),
        (in_place, ["changed its input s", "in place", "s.mul_(...)"]),
        (
            lambda m, s, b: (
                online_softmax_step(m, s, b)[0],
                online_softmax_step(m, s, b)[1][:, None],
            ),
            ["your s_new", "wrong shape (3, 1)", "dimensions of size 1"],
        ),
        (
            lambda m, s, b: (
                online_softmax_step(m, s, b)[0],
                s * torch.exp(m - b.amax(-1)).clamp(max=1)
                + torch.exp(b - b.amax(-1, keepdim=True)).sum(-1, keepdim=True),
            ),
            ["wrong shape (3, 3)", "without keepdim=True"],
        ),
        (
            lambda m, s, b: (torch.maximum(m, b.max(dim=-1)), s),
            ["raised TypeError", "take its .values, or use block.amax(dim=-1)"],
        ),
        (
            lambda m, s, b: (max(m, b.amax(dim=-1)), s),
            ["raised RuntimeError", "torch.maximum(a, b)"],
        ),
        (
            lambda m, s, b: (m, s * torch.exp(m - b.amax(-1)) + torch.exp(b - m).sum()),
            ["raised RuntimeError", "subtract m_new[:, None]"],
        ),
        (
            lambda m, s, b: tuple(t.long() for t in online_softmax_step(m, s, b)),
            ["dtype torch.int64", "holds real numbers"],
        ),
        (
            lambda m, s, b: (online_softmax_step(m, s, b)[0], s.tolist()),
            ["your s_new", "expected a torch.Tensor, got list"],
        ),
        (lambda m, s, b: 1 / 0, ["online_softmax_step raised ZeroDivisionError"]),
    ],
)
def test_check_online_step_fn_explains_mistakes(fn, fragments):
    message = failure(checks.check_online_step_fn, fn)
    assert message.startswith("check_online_step_fn: ")
    assert "larger than m in every row (3 rows, 5 scores)" in message
    for fragment in fragments:
        assert fragment in message


@pytest.mark.parametrize(
    ("fn", "fragments"),
    [
        (
            step(maximum="block"),
            ["smaller than m", "the block's own maximum", "never goes down"],
        ),
        (
            unguarded_step,
            [
                "row 0 with every key masked so far",
                "your s_new",
                "found NaN",
                "every score so far is -inf in row 0",
                "a finite stand-in for m_new",
                "Two ways to get it wrong",
            ],
        ),
        (
            step(maximum="finite"),
            [
                "your m_new",
                "a large finite number in row 0",
                "keep m_new = -inf",
                "Two ways to get it wrong",
            ],
        ),
    ],
)
def test_check_online_step_fn_explains_mistakes_that_show_in_a_later_case(
    fn, fragments
):
    message = failure(checks.check_online_step_fn, fn)
    for fragment in fragments:
        assert fragment in message


def test_check_online_step_fn_explains_nan_after_a_masked_start():
    def wrong_way_unless_growing(m, s, block):  # right where m is finite
        m_new, s_new = online_softmax_step(m, s, block)
        if torch.isneginf(m).all():
            s_new = s * torch.exp(m_new - m) + s_new
        return m_new, s_new

    message = failure(checks.check_online_step_fn, wrong_way_unless_growing)
    assert "the first block, with m = -inf" in message
    assert "m is -inf in row 0" in message and "0 * inf" in message


def test_check_online_step_fn_runs_the_fold_and_reports_its_blocks():
    def wrong_on_long_rows(m, s, block):  # right except on the fold's 8 columns
        m_new, s_new = online_softmax_step(m, s, block)
        return m_new, s_new + (block.size(-1) == 8)

    message = failure(checks.check_online_step_fn, wrong_on_long_rows)
    assert "block 1 of 4 of the folded rows (row 0 padded on the left)" in message


def test_check_online_step_fn_never_shows_the_right_sums():
    m, s, block = _online_cases()[0].args
    _, right = _step(m, s, block)
    message = failure(checks.check_online_step_fn, step(rescale="none"))
    for value in right:
        assert f"{float(value):.4f}" not in message


# --- check_largest_batch_fn ----------------------------------------------------------


def test_the_configurations_are_the_published_ones():
    configs = _configs()
    head = {key: c.d_model // c.num_heads for key, c in configs.items()}
    assert head == {
        "tiny": 24,
        "tiny-mqa": 24,
        "gpt2": 64,
        "llama2-70b": 128,
        "mistral-7b": 128,
    }
    llama, mistral = configs["llama2-70b"], configs["mistral-7b"]
    assert (llama.num_layers, llama.num_heads, llama.num_kv_heads) == (80, 64, 8)
    assert (mistral.num_layers, mistral.num_heads, mistral.num_kv_heads) == (32, 32, 8)
    assert (llama.context_length, mistral.context_length) == (4096, 8192)
    assert (llama.d_model, mistral.d_model) == (8192, 4096)
    gpt2 = configs["gpt2"]
    assert (gpt2.num_layers, gpt2.num_heads, gpt2.d_model) == (12, 12, 768)
    assert configs["tiny-mqa"].num_kv_heads == 1
    assert configs["tiny"].num_kv_heads == configs["tiny"].num_heads == 4


def cache_bytes(config, tokens, bytes_per_number=2, window=None):
    """The bytes of one sequence's KV cache, written out: with a window, each
    layer keeps min(tokens, window) tokens."""
    kept = tokens if window is None else min(tokens, window)
    head_dim = config.d_model // config.num_heads
    numbers = 2 * config.num_layers * config.num_kv_heads * head_dim * kept
    return numbers * bytes_per_number


def bytes_per_number_of(case):
    return case.args[3] if len(case.args) >= 4 else 2


def window_of(case):
    return case.args[4] if len(case.args) == 5 else None


def test_the_reference_batch_is_the_formula():
    for case in _batch_cases():
        config, tokens, budget = case.args[:3]
        size, window = bytes_per_number_of(case), window_of(case)
        expected, per_sequence, sizes = case.data
        assert per_sequence == cache_bytes(config, tokens, size, window)
        assert per_sequence == _cache_bytes(config, tokens, size, window)
        assert expected == budget // per_sequence == largest_batch(*case.args)
        assert expected * per_sequence <= budget < (expected + 1) * per_sequence
        assert sizes == {"bytes": size, "tokens": tokens, "window": window}


def test_a_window_caps_the_tokens_each_layer_keeps():
    mistral = _configs()["mistral-7b"]
    assert _cache_bytes(mistral, 2048) == _cache_bytes(mistral, 2048, 2, None)
    assert _cache_bytes(mistral, 4096) == 2**29  # 512 MiB: 128 KiB per token
    assert _cache_bytes(mistral, 8192, 2, 4096) == _cache_bytes(mistral, 4096)
    assert _cache_bytes(mistral, 4096, 2, 4096) == _cache_bytes(mistral, 4096)
    assert _cache_bytes(mistral, 2048, 2, 4096) == _cache_bytes(mistral, 2048)
    assert _cache_bytes(mistral, 8192, 4, 4096) == 2 * _cache_bytes(mistral, 4096)


@pytest.mark.parametrize("key", ["tiny", "tiny-mqa"])
def test_a_real_cache_of_the_tiny_models_holds_the_reference_size(key):
    config = _configs()[key]
    torch.manual_seed(0)
    model = GPT(config).eval()
    cache = KVCache(config.num_layers)
    with torch.no_grad():
        model(torch.zeros(2, 64, dtype=torch.long), cache=cache)  # 2 sequences
    assert cache.nbytes() == 2 * _cache_bytes(config, 64, 4)  # float32 weights
    assert cache.numbers() == 2 * _cache_bytes(config, 64, 1)


def test_the_batch_cases_cover_what_the_exercise_promises():
    cases = _batch_cases()
    assert len(cases) == len(_BATCH_CASES) == 8
    assert [len(case.args) for case in cases] == [4, 3, 4, 4, 4, 4, 5, 5]
    assert "defaults" in cases[1].description  # bytes_per_number=2, window=None
    assert {case.args[3] for case in cases if len(case.args) >= 4} == {2, 4}
    rights = [case.data[0] for case in cases]
    exact = [c.args[2] % c.data[1] == 0 and c.data[0] > 0 for c in cases]
    assert exact[1]  # Llama 2 70B in 40 GiB: 32 caches fill it exactly
    assert rights.count(0) == 1 and rights[4] == 0  # a budget that fits no sequence
    grouped = [c.args[0].num_kv_heads < c.args[0].num_heads for c in cases]
    assert grouped[0] and grouped[1] and grouped[6] and grouped[7]
    assert not all(grouped)  # one key-value head per query head too
    assert any(c.args[0].num_kv_heads == 1 for c in cases)  # multi-query
    first, per_sequence = cases[0], cases[0].data[1]
    config, tokens, budget = first.args[:3]
    assert budget % per_sequence != 0 and budget // per_sequence > 1  # floor != ceil
    assert tokens < config.context_length
    assert bytes_per_number_of(first) == 4 and window_of(first) is None


def test_the_window_matters_in_both_cases_that_have_one():
    windowed = [case for case in _batch_cases() if window_of(case) is not None]
    assert len(windowed) == 2
    longer, shorter = windowed
    mistral = _configs()["mistral-7b"]
    assert longer.args[0] is shorter.args[0] is mistral
    assert longer.args[1] > window_of(longer) == 4096 == window_of(shorter)
    assert shorter.args[1] < window_of(shorter) < mistral.context_length
    config, tokens, budget, size, window = longer.args
    assert longer.data[0] == 32  # 8192 tokens, each layer keeps 4096
    assert budget // cache_bytes(config, tokens, size) == 16  # the window left out
    config, tokens, budget, size, window = shorter.args
    assert shorter.data[0] == 40  # 2048 tokens, all kept
    assert budget // cache_bytes(config, window, size) == 20  # counted for 4096


def slip_table(case):
    """The known mistakes in the size of one cache for ``case``."""
    return _cache_slip_table(case.args[0], case.data[2])


def first_case_table():
    case = _batch_cases()[0]
    right, per_sequence, _ = case.data
    budget = case.args[2]
    batches = {
        text: int(budget // (per_sequence * factor))
        for _, factor, text in slip_table(case)
    }
    return case, right, batches


def test_every_single_mistake_of_the_first_batch_case_gives_its_own_batch():
    case, right, batches = first_case_table()
    keys = [key for key, _, _ in slip_table(case)]
    assert keys == ["pair", "heads", "head_dim", "layers", "tokens", "tokens", "bytes"]
    config = case.args[0]
    assert config.num_heads // config.num_kv_heads == config.num_kv_heads == 8
    assert not any(text.startswith("num_heads // num_kv_heads") for text in batches)
    assert not any("window" in text for text in batches)
    given = list(batches.values())
    assert len(set(given)) == len(given)
    assert right not in given and 0 not in given
    budget, per_sequence = case.args[2], case.data[1]
    rounding = [budget / per_sequence, right + 1]
    assert not set(rounding) & {right, *given}


@pytest.mark.parametrize(
    "key",
    [
        "pair",
        "heads",
        "head_dim",
        "layers",
        "tokens",
        "bytes",
    ],
)
def test_each_single_mistake_is_named_in_the_first_batch_case(key):
    case = _batch_cases()[0]
    right, per_sequence, sizes = case.data
    config, _, budget = case.args[:3]
    slips = _batch_slips(budget, per_sequence, config, sizes)
    texts = [text for k, _, text in slip_table(case) if k == key]
    assert texts
    for slip_key, factor, text in slip_table(case):
        if slip_key != key:
            continue
        batch = budget // (per_sequence * factor)
        assert batch not in (0, right)
        assert first_slip(batch, slips, atol=0, rtol=1e-9) == f"It looks like {text}."


def test_no_mix_of_two_mistakes_in_the_first_batch_case_gives_a_single_s_batch():
    case, right, batches = first_case_table()
    _, per_sequence, sizes = case.data
    config, _, budget = case.args[:3]
    slips = _batch_slips(budget, per_sequence, config, sizes)
    singles = set(batches.values())
    pairs = [(p, f) for p, f in _cache_mistakes(config, sizes) if len(p) == 2]
    assert len(pairs) == 20  # 7 mistakes, 2 of them exclusive
    seen = set()
    for parts, factor in pairs:
        batch = int(budget // (per_sequence * factor))
        assert batch != right and batch not in singles
        if batch == 0:  # head_dim as d_model with num_heads or context_length
            continue
        assert batch not in seen  # no two mixes of two alike
        seen.add(batch)
        why = first_slip(batch, slips, atol=0, rtol=1e-9)
        assert why.startswith("It looks like\n  - ")
        assert all(f"  - {text}" in why for text in parts)


def fewest_mixes(case):
    """Each wrong, nonzero batch that mixes of up to three mistakes give in
    ``case``, with the mixes of as few mistakes as possible that give it."""
    right, per_sequence, sizes = case.data
    config, _, budget = case.args[:3]
    by_batch = {}
    for parts, factor in _cache_mistakes(config, sizes):
        by_batch.setdefault(int(budget // (per_sequence * factor)), []).append(parts)
    fewest = {}
    for batch, mixes in by_batch.items():
        if batch not in (0, right):
            least = min(len(parts) for parts in mixes)
            fewest[batch] = [parts for parts in mixes if len(parts) == least]
    return fewest


def named_mistakes(case):
    """The batches that _batch_slips explains by mistakes in the cache's size."""
    right, per_sequence, sizes = case.data
    config, _, budget = case.args[:3]
    slips = _batch_slips(budget, per_sequence, config, sizes)
    return {s.gives: s.why for s in slips if s.why.startswith("It looks like")}


@pytest.mark.parametrize("index", range(len(_BATCH_CASES)))
def test_a_wrong_size_is_named_only_when_its_fewest_mistakes_are_clear(index):
    case = _batch_cases()[index]
    named = named_mistakes(case)
    unnamed = 0
    for batch, mixes in fewest_mixes(case).items():
        singles = all(len(parts) == 1 for parts in mixes)
        if len(mixes) == 1 or (len(mixes) == 2 and singles):
            why = named.pop(batch)
            assert all(text in why for parts in mixes for text in parts)
            alternatives = why.startswith("It looks like one of two slips")
            assert alternatives == (len(mixes) == 2)
        else:
            assert batch not in named
            unnamed += 1
    assert not named  # every named batch comes from its fewest mistakes
    assert unnamed > 0  # rounding down makes some batches ambiguous in every case


def test_two_single_mistakes_with_the_same_batch_are_both_named():
    gpt2 = _batch_cases()[3]
    assert gpt2.description.startswith("GPT-2 small")
    named = named_mistakes(gpt2)
    # 12 query heads, each its own key-value head: num_heads // num_kv_heads is 1,
    # a factor 1/12 like the missing layers
    assert named[341].startswith("It looks like one of two slips")
    assert "num_heads // num_kv_heads (1), the query heads" in named[341]
    assert "the layers are missing (a factor of 12)" in named[341]
    assert "only the keys (or only the values)" in named[56]
    assert "counted in numbers, not bytes" in named[56]


def test_three_single_mistakes_with_the_same_batch_are_left_unnamed():
    longer = _batch_cases()[6]
    assert window_of(longer) == 4096 and bytes_per_number_of(longer) == 2
    # the factor 2 of keys and values forgotten, num_heads // num_kv_heads = 4 used
    # for the 8 key-value heads, and numbers for bytes in float16 all halve the size
    mixes = _cache_mistakes(longer.args[0], longer.data[2])
    singles = [(parts, factor) for parts, factor in mixes if len(parts) == 1]
    halving = [parts for parts, factor in singles if factor == 0.5]
    assert len(halving) == 3
    assert "num_heads // num_kv_heads (4)" in halving[1][0]
    assert fewest_mixes(longer)[64] == halving
    assert 64 not in named_mistakes(longer)


def test_the_group_slip_is_listed_only_where_it_differs_from_num_kv_heads():
    listed = []
    for case in _batch_cases():
        config = case.args[0]
        group = config.num_heads // config.num_kv_heads
        found = [
            (factor, text)
            for _, factor, text in slip_table(case)
            if text.startswith("num_heads // num_kv_heads")
        ]
        if group == config.num_kv_heads:  # Llama 2 70B: 64 // 8 == 8
            assert found == []
            continue
        ((factor, text),) = found
        assert factor == group / config.num_kv_heads
        assert f"({group})" in text and f"num_kv_heads ({config.num_kv_heads})" in text
        listed.append(case.description)
    assert len(listed) == 5  # every case but the three of Llama 2 70B


def test_the_window_slips_are_listed_for_the_cases_with_a_window():
    cases = _batch_cases()
    for case in cases:
        texts = [text for key, _, text in slip_table(case) if key == "tokens"]
        window = window_of(case)
        in_window = [text for text in texts if "window" in text]
        context = [text for text in texts if text.startswith("config.context")]
        if window is None:
            assert in_window == []
            assert len(context) == (case.args[1] != case.args[0].context_length)
        else:
            assert len(in_window) == 1 and context == []
    longer, shorter = cases[6], cases[7]
    factors = {text: f for key, f, text in slip_table(longer) if key == "tokens"}
    assert factors == {
        "the tokens are missing (a factor of 4096): every token a layer keeps adds "
        "its keys and values": 1 / 4096,
        "the window is left out: with window=4096, each layer keeps the keys and "
        "values of the last 4096 tokens only, min(tokens, window), not all 8192": 2,
    }
    factors = {text: f for key, f, text in slip_table(shorter) if key == "tokens"}
    assert factors == {
        "the tokens are missing (a factor of 2048): every token a layer keeps adds "
        "its keys and values": 1 / 2048,
        "the cache is counted for window=4096 tokens, but a sequence of 2048 tokens "
        "has only 2048 to keep: min(tokens, window)": 2,
    }


def test_explain_mistakes_names_one_mix_or_two_single_slips():
    assert _explain_mistakes([["a", "b"]]) == "It looks like\n  - a;\n  - b."
    assert _explain_mistakes([["a"], ["b"]]).endswith(":\n  - a;\n  - b.")
    assert _explain_mistakes([["a"], ["b"], ["c"]]) is None
    assert _explain_mistakes([["a", "b"], ["c", "d"]]) is None


def test_no_slip_of_a_batch_case_gives_the_right_batch():
    for case in _batch_cases():
        right, per_sequence, sizes = case.data
        config, _, budget = case.args[:3]
        slips = _batch_slips(budget, per_sequence, config, sizes)
        assert slips  # every case names some slips
        for slip in slips:
            assert slip.gives is None or not math.isclose(slip.gives, right)


def test_no_two_named_slips_of_a_batch_case_give_the_same_batch():
    for case in _batch_cases():
        right, per_sequence, sizes = case.data
        config, _, budget = case.args[:3]
        slips = _batch_slips(budget, per_sequence, config, sizes)
        given = [slip.gives for slip in slips if slip.gives is not None]
        if right == 0:
            # at least 1 comes first; rounded up, and the factor 2 forgotten or
            # numbers for bytes (1.6 caches), give 1 too
            assert given.count(1) == 3 and slips[0].gives == 1
            given = [batch for batch in given if batch != 1]
        assert len(set(given)) == len(given), case.description
        assert 0 not in given


def test_check_largest_batch_fn_accepts_right_functions(capsys):
    def with_the_package(config, tokens, budget_bytes, bytes_per_number=2, window=None):
        from attn_course import kv_cache_numbers

        kept = tokens if window is None else min(tokens, window)
        d = config.d_model // config.num_heads
        n = kv_cache_numbers(config.num_layers, config.num_kv_heads, d, kept)
        return budget_bytes // (n * bytes_per_number)

    def with_an_if(config, tokens, budget_bytes, bytes_per_number=2, window=None):
        if window is not None and window < tokens:
            tokens = window  # each layer keeps the last `window` tokens
        return largest_batch(config, tokens, budget_bytes, bytes_per_number)

    def by_counting(config, tokens, budget_bytes, bytes_per_number=2, window=None):
        one = cache_bytes(config, tokens, bytes_per_number, window)
        batch = 0
        while (batch + 1) * one <= budget_bytes:
            batch += 1
        return batch

    right_functions = (
        largest_batch,
        with_the_package,
        with_an_if,
        by_counting,
        lambda *a: float(largest_batch(*a)),
        lambda *a: torch.tensor(largest_batch(*a)),
        lambda *a: np.int64(largest_batch(*a)),
    )
    for fn in right_functions:
        checks.check_largest_batch_fn(fn)
    out = capsys.readouterr().out
    assert out.count("✅ check_largest_batch_fn:") == len(right_functions)
    assert "right on 8 cases" in out
    assert "32 sequences of 4096 tokens of Llama 2 70B in 40 GiB (1.25 GiB" in out
    assert "64 key-value heads, one per query head, would fit 4;" in out
    assert (
        "32 sequences of 8192 tokens of Mistral 7B in 16 GiB, where without its "
        "window 16 would fit" in out
    )
    assert "and 0 where not even one sequence fits" in out


def batch_with(
    *,
    pair=2,
    heads="num_kv_heads",
    head_dim="right",
    layers=True,
    tokens_="tokens",
    window_="min",
    numbers=False,
    default_bytes=2,
):
    """largest_batch with some mistakes in the size of one sequence's cache.

    ``heads`` is the count of key-value heads: "num_kv_heads" (right),
    "num_heads" or "group" (num_heads // num_kv_heads); ``window_`` is what a
    window does to the tokens: "min" (right), "ignored", "always" (the window
    even for a shorter sequence) or "max"."""

    def batch(
        config, tokens, budget_bytes, bytes_per_number=default_bytes, window=None
    ):
        if head_dim == "d_model":
            d = config.d_model
        else:
            d = config.d_model // config.num_heads
        if heads == "group":
            size = pair * (config.num_heads // config.num_kv_heads) * d
        else:
            size = pair * getattr(config, heads) * d
        size *= config.num_layers if layers else 1
        kept = {"tokens": tokens, "none": 1, "context": config.context_length}[tokens_]
        if window is not None:
            kept = {
                "min": min(kept, window),
                "ignored": kept,
                "always": window,
                "max": max(kept, window),
            }[window_]
        size *= kept
        size *= 1 if numbers else bytes_per_number
        return budget_bytes // size

    return batch


def d_model_for_width(config, tokens, budget_bytes, bytes_per_number=2, window=None):
    kept = tokens if window is None else min(tokens, window)
    per_token = 2 * config.num_layers * config.d_model  # every query head's width
    return budget_bytes // (per_token * kept * bytes_per_number)


def rounded_up(config, tokens, budget_bytes, bytes_per_number=2, window=None):
    one = cache_bytes(config, tokens, bytes_per_number, window)
    return math.ceil(budget_bytes / one)


def strictly_below(config, tokens, budget_bytes, bytes_per_number=2, window=None):
    one, batch = cache_bytes(config, tokens, bytes_per_number, window), 0
    while (batch + 1) * one < budget_bytes:
        batch += 1
    return batch


def without_a_window(config, tokens, budget_bytes, bytes_per_number=2):
    return largest_batch(config, tokens, budget_bytes, bytes_per_number)


FIRST = "Llama 2 70B, sequences of 3072 tokens in float32, a budget of 121 GiB"
EXACT = (
    "Llama 2 70B, sequences of 4096 tokens, a budget of 40 GiB, with the defaults "
    "bytes_per_number=2 and window=None"
)
TINY_CASE = (
    "the chapter's tiny GPT, sequences of 64 tokens in float32, a budget of "
    "1,000,000 bytes"
)
NONE_FITS = "Llama 2 70B, sequences of 4096 tokens in float16, a budget of 1 GiB"
LONGER = (
    "Mistral 7B with its window of 4096, sequences of 8192 tokens in float16, a "
    "budget of 16 GiB"
)
SHORTER = (
    "Mistral 7B with its window of 4096, sequences of 2048 tokens (shorter than "
    "the window) in float16, a budget of 10 GiB"
)
PER_SEQUENCE = {  # the bytes of one sequence's cache, as the messages show them
    FIRST: "2,013,265,920",
    EXACT: "1,342,177,280",
    TINY_CASE: "196,608",
    NONE_FITS: "1,342,177,280",
    LONGER: "536,870,912",
    SHORTER: "268,435,456",
}


@pytest.mark.parametrize(
    ("fn", "where", "fragments"),
    [
        (
            lambda c, t, b, n=2, w=None: b / cache_bytes(c, t, n, w),
            FIRST,
            ["returned 64.5333, but the right batch is 64", "not a whole number"],
        ),
        (
            rounded_up,
            FIRST,
            ["returned 65,", "rounded up: a batch of 65 needs 130,862,284,800 bytes"],
        ),
        (
            lambda *a: largest_batch(*a) + 0.5,
            FIRST,
            ["returned 64.5,", "Return a whole number of sequences (an int)"],
        ),
        (
            lambda *a: max(1, largest_batch(*a)),
            NONE_FITS,
            ["returned 1, but the right batch is 0", "not at least 1"],
        ),
        (
            strictly_below,
            EXACT,
            ["returned 31,", "32 caches fill the budget exactly", "strict comparison"],
        ),
        (
            batch_with(pair=1),
            FIRST,
            [
                "returned 129,",
                "only the keys (or only the values)",
                "a key AND a value",
            ],
        ),
        (
            batch_with(heads="num_heads"),
            FIRST,
            [
                "returned 8,",
                "num_heads (64) is used where num_kv_heads (8) belongs",
                "shared by num_heads // num_kv_heads = 8 query heads",
            ],
        ),
        (
            d_model_for_width,
            FIRST,
            ["returned 8,", "d_model (8192) where num_kv_heads * head_dim (1024)"],
        ),
        (
            batch_with(head_dim="d_model"),
            FIRST,
            ["returned 1,", "head_dim is taken as d_model (8192)", "= 128 numbers"],
        ),
        (
            batch_with(layers=False),
            FIRST,
            ["returned 5,162,", "the layers are missing (a factor of 80)"],
        ),
        (
            batch_with(tokens_="none"),
            FIRST,
            ["returned 198,246,", "the tokens are missing (a factor of 3072)"],
        ),
        (
            batch_with(tokens_="context"),
            FIRST,
            ["returned 48,", "context_length (4096) is used instead of tokens (3072)"],
        ),
        (
            batch_with(numbers=True),
            FIRST,
            ["returned 258,", "counted in numbers, not bytes", "(4 here)"],
        ),
        (
            batch_with(pair=1, layers=False),
            FIRST,
            [
                "returned 10,325,",
                "It looks like\n  - only the keys",
                "\n  - the layers",
            ],
        ),
        (
            batch_with(pair=1, numbers=True),
            FIRST,
            ["returned 516,", "\n  - only the keys", "\n  - the cache is counted in"],
        ),
        (
            batch_with(pair=1, layers=False, tokens_="none"),
            FIRST,
            [
                "returned 31,719,424,",
                "\n  - only the keys",
                "\n  - the layers are",
                "\n  - the tokens are",
            ],
        ),
        (
            batch_with(default_bytes=1),
            EXACT,
            [
                "returned 64,",
                "It looks like one of two slips, which give the same batch here:",
                "\n  - only the keys (or only the values)",
                "\n  - the cache is counted in numbers, not bytes",
                "bytes_per_number (2 here)",
            ],
        ),
        (
            batch_with(window_="ignored"),
            LONGER,
            [
                "returned 16, but the right batch is 32",
                "the window is left out: with window=4096",
                "min(tokens, window), not all 8192",
            ],
        ),
        (
            batch_with(window_="max"),
            LONGER,
            ["returned 16,", "the window is left out", "min(tokens, window)"],
        ),
        (
            batch_with(window_="always"),
            SHORTER,
            [
                "returned 20, but the right batch is 40",
                "counted for window=4096 tokens, but a sequence of 2048 tokens has "
                "only 2048 to keep",
            ],
        ),
        (
            lambda *a: 0,
            FIRST,
            ["returned 0, but the right batch is 64", "says no sequence fits"],
        ),
        (lambda *a: "many", FIRST, ["returned 'many' (str)", "whole number (an int)"]),
        (lambda *a: [largest_batch(*a)], FIRST, ["returned [64] (list)"]),
        (
            lambda c, t, b, n, w=None: largest_batch(c, t, b, n, w),
            EXACT,
            ["raised TypeError", "missing 1 required positional argument"],
        ),
        (
            without_a_window,
            LONGER,
            [
                "your function raised TypeError on Mistral 7B with its window",
                "takes from 3 to 4 positional arguments but 5 were given",
            ],
        ),
        (lambda *a: 1 / 0, FIRST, ["your function raised ZeroDivisionError"]),
    ],
)
def test_check_largest_batch_fn_explains_mistakes(fn, where, fragments):
    message = failure(checks.check_largest_batch_fn, fn)
    assert message.startswith("check_largest_batch_fn: ")
    assert where in message
    if "but the right batch is" in message:  # then it shows one cache's bytes
        shown = f"(one sequence's cache takes {PER_SEQUENCE[where]} bytes)"
        assert shown in message
    for fragment in fragments:
        assert fragment in message


def test_an_ambiguous_mix_gets_general_advice():
    keys_context_and_numbers = batch_with(pair=1, tokens_="context", numbers=True)
    every_head_at_full_width = batch_with(
        heads="num_heads", head_dim="d_model", tokens_="none"
    )
    case = _batch_cases()[0]
    fns = (keys_context_and_numbers, every_head_at_full_width)
    assert [fn(*case.args) for fn in fns] == [387, 387]  # both 1/6 of the size
    assert len(fewest_mixes(case)[387]) == 2
    for fn in fns:
        message = failure(checks.check_largest_batch_fn, fn)
        assert FIRST in message and "returned 387," in message
        assert "It looks like" not in message
        assert "head_dim = d_model // num_heads numbers for every layer" in message


def test_the_group_slip_alone_is_caught_on_the_tiny_gpt_without_a_name():
    group_for_kv_heads = batch_with(heads="group")
    for case in _batch_cases()[:2]:  # Llama 2 70B: 64 // 8 is 8, right by chance
        assert group_for_kv_heads(*case.args) == case.data[0]
    message = failure(checks.check_largest_batch_fn, group_for_kv_heads)
    assert TINY_CASE in message
    assert "returned 20, but the right batch is 5" in message
    # 4 // 4 = 1 key-value head for 4, the 4 layers missing and numbers for the 4
    # bytes of float32 all give 20: not told apart, so none is named
    assert len(fewest_mixes(_batch_cases()[2])[20]) == 3
    assert "It looks like" not in message
    assert "Count the bytes of one sequence's cache" in message


# --- check_dilated_mask_fn: the table's reference and its cases (its slips are
# tested with every table's, in tests/test_tables.py) -------------------------------


def loop_mask(T, window, dilation):
    """The dilated window, one query and one key at a time."""
    mask = torch.zeros(T, T, dtype=torch.bool)
    for i in range(T):
        for k in range(window):
            j = i - k * dilation
            if j >= 0:
                mask[i, j] = True
    return mask


def test_the_dilated_cases_cover_the_edges():
    triples = DILATED.cases
    assert {d for _, _, d in triples} == {1, 2, 3}
    assert any(w == 1 for _, w, _ in triples)
    assert any(w > T for T, w, _ in triples)
    assert any(T == 1 for T, _, _ in triples)
    assert any(T > 1 and (w - 1) * d >= T for T, w, d in triples)  # past the start
    T, w, d = triples[0]
    assert w > 1 and d > 1 and w * d < T  # the first case shows every slip


def test_the_dilated_reference_is_the_rule_of_the_exercise():
    reference = DILATED.define(DILATED.right)
    for T, w, d in itertools.product(range(1, 8), range(1, 5), range(1, 5)):
        assert torch.equal(reference(T, w, d), loop_mask(T, w, d))
    for T, w in itertools.product(range(1, 9), range(1, 11)):
        assert torch.equal(reference(T, w, 1), sliding_window_mask(T, w))


def test_check_dilated_mask_fn_accepts_right_functions(capsys):
    def from_the_sliding_window(T, window, dilation):
        i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
        reach = (window - 1) * dilation + 1  # positions from the oldest key to i
        return sliding_window_mask(T, reach) & ((i - j) % dilation == 0)

    def from_diagonals(T, window, dilation):
        mask = torch.zeros(T, T, dtype=torch.bool)
        for k in range(window):
            if k * dilation < T:
                ones = torch.ones(T - k * dilation, dtype=torch.bool)
                mask |= torch.diag(ones, -k * dilation)
        return mask

    right_functions = (loop_mask, from_the_sliding_window, from_diagonals)
    for fn in right_functions:
        checks.check_dilated_mask_fn(fn)
    out = capsys.readouterr().out
    assert out.count("✅ check_dilated_mask_fn:") == len(right_functions)


def test_check_dilated_mask_fn_finds_a_mask_wrong_in_a_later_case():
    def clipped(T, window, dilation):  # wrong only when the window exceeds T - 1
        if dilation == 1:
            return sliding_window_mask(T, min(window, T - 1))
        return loop_mask(T, window, dilation)

    message = failure(checks.check_dilated_mask_fn, clipped)
    assert "T = 5, window = 7, dilation = 1 (dilation 1: the sliding window)" in message
    assert "entry [4, 0] is False, where True is right" in message


# --- a wrong call of a check ---------------------------------------------------------

TINY = GPTConfig(vocab_size=103, context_length=64, d_model=96, num_heads=4)

CALL_ERRORS = [
    pytest.param(
        lambda: checks.check_online_step_fn(
            online_softmax_step(torch.zeros(2), torch.ones(2), torch.ones(2, 3))
        ),
        TypeError,
        ["got tuple", "check_online_step_fn(online_softmax_step), not"],
        id="pair-result",
    ),
    pytest.param(
        lambda: checks.check_largest_batch_fn(largest_batch(TINY, 64, 10**6)),
        TypeError,
        ["got int", "check_largest_batch_fn(largest_batch), not"],
        id="batch-result",
    ),
    pytest.param(
        lambda: checks.check_dilated_mask_fn(dilated_window_mask(5, 2, 2)),
        TypeError,
        ["got torch.Tensor", "check_dilated_mask_fn(dilated_window_mask), not"],
        id="mask-result",
    ),
    pytest.param(
        lambda: checks.check_dilated_mask_fn(torch.nn.Linear(2, 2)),
        TypeError,
        ["got a Linear module"],
        id="module",
    ),
]

test_a_wrong_call_is_a_type_error = wrong_call_test(CALL_ERRORS)


def test_the_checks_wait_for_an_answer(capsys):
    def online_softmax_step(m, s, block): ...

    def largest_batch(
        config, tokens, budget_bytes, bytes_per_number=2, window=None
    ): ...

    def dilated_window_mask(T, window, dilation): ...

    checks.check_online_step_fn(online_softmax_step)
    checks.check_largest_batch_fn(largest_batch)
    checks.check_dilated_mask_fn(dilated_window_mask)
    out = capsys.readouterr().out
    assert out.count("⏳") == 3 and "✅" not in out
