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
    _DILATED_CASES,
    _batch_cases,
    _batch_slips,
    _cache_bytes,
    _cache_mistakes,
    _cache_slip_table,
    _configs,
    _dilated,
    _dilated_cases,
    _dilated_slips,
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


def cache_bytes(config, tokens, bytes_per_number):
    """The bytes of one sequence's KV cache, written out."""
    head_dim = config.d_model // config.num_heads
    numbers = 2 * config.num_layers * config.num_kv_heads * head_dim * tokens
    return numbers * bytes_per_number


def bytes_per_number_of(case):
    return case.args[3] if len(case.args) == 4 else 2


def test_the_reference_batch_is_the_formula():
    for case in _batch_cases():
        config, tokens, budget = case.args[:3]
        size = bytes_per_number_of(case)
        expected, per_sequence, sizes = case.data
        assert per_sequence == cache_bytes(config, tokens, size)
        assert per_sequence == _cache_bytes(config, tokens, size)
        assert expected == budget // per_sequence == largest_batch(*case.args)
        assert expected * per_sequence <= budget < (expected + 1) * per_sequence
        assert sizes == {"bytes": size, "tokens": tokens}


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
    assert len(cases) == len(_BATCH_CASES) == 6
    assert any(len(case.args) == 3 for case in cases)  # the default of 2 bytes
    assert {case.args[3] for case in cases if len(case.args) == 4} == {2, 4}
    rights = [case.data[0] for case in cases]
    exact = [c.args[2] % c.data[1] == 0 and c.data[0] > 0 for c in cases]
    assert exact.count(True) == 1 and exact[1]  # Llama 2 70B in 40 GiB
    assert 0 in rights  # a budget that fits no sequence
    assert len(set(rights)) == len(rights)
    grouped = [c.args[0].num_kv_heads < c.args[0].num_heads for c in cases]
    assert grouped[0] and grouped[1]
    assert any(c.args[0].num_kv_heads == 1 for c in cases)  # multi-query
    first, per_sequence = cases[0], cases[0].data[1]
    budget = first.args[2]
    assert budget % per_sequence != 0 and budget // per_sequence > 1  # floor != ceil
    assert first.args[1] < first.args[0].context_length
    assert bytes_per_number_of(first) == 4


def first_case_table():
    case = _batch_cases()[0]
    right, per_sequence, sizes = case.data
    config, _, budget = case.args[:3]
    table = _cache_slip_table(config, sizes)
    batches = {
        text: int(budget // (per_sequence * factor)) for _, factor, text in table
    }
    return case, right, batches


def test_every_single_mistake_of_the_first_batch_case_gives_its_own_batch():
    case, right, batches = first_case_table()
    config, sizes = case.args[0], case.data[2]
    keys = [key for key, _, _ in _cache_slip_table(config, sizes)]
    assert keys == ["pair", "heads", "head_dim", "layers", "tokens", "tokens", "bytes"]
    given = list(batches.values())
    assert len(set(given)) == len(given)
    assert right not in given
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
    for slip_key, factor, text in _cache_slip_table(config, sizes):
        if slip_key != key:
            continue
        batch = budget // (per_sequence * factor)
        assert batch not in (0, right)
        assert first_slip(batch, slips, atol=0, rtol=1e-9) == f"It looks like {text}."


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
        if right == 0:  # at least 1 and rounded up are both 1: at least 1 is first
            assert given.count(1) == 2 and slips[0].gives == 1
            given.remove(1)
        assert len(set(given)) == len(given), case.description
        assert 0 not in given


def test_mixes_that_give_the_same_batch_are_left_unnamed():
    case = _batch_cases()[0]
    right, per_sequence, sizes = case.data
    config, _, budget = case.args[:3]
    named = {s.gives for s in _batch_slips(budget, per_sequence, config, sizes)}
    by_batch = {}
    for count, factor, _ in _cache_mistakes(config, sizes):
        by_batch.setdefault(int(budget // (per_sequence * factor)), []).append(count)
    ambiguous = [
        batch
        for batch, counts in by_batch.items()
        if batch not in (0, right) and counts.count(min(counts)) > 1
    ]
    assert 266 in ambiguous  # the keys only and numbers, or num_heads and no layers
    for batch in ambiguous:
        assert batch not in named


def test_check_largest_batch_fn_accepts_right_functions(capsys):
    def with_the_package(config, tokens, budget_bytes, bytes_per_number=2):
        from attn_course import kv_cache_numbers

        d = config.d_model // config.num_heads
        n = kv_cache_numbers(config.num_layers, config.num_kv_heads, d, tokens)
        return budget_bytes // (n * bytes_per_number)

    def by_counting(config, tokens, budget_bytes, bytes_per_number=2):
        one = cache_bytes(config, tokens, bytes_per_number)
        batch = 0
        while (batch + 1) * one <= budget_bytes:
            batch += 1
        return batch

    right_functions = (
        largest_batch,
        with_the_package,
        by_counting,
        lambda *a: float(largest_batch(*a)),
        lambda *a: torch.tensor(largest_batch(*a)),
        lambda *a: np.int64(largest_batch(*a)),
    )
    for fn in right_functions:
        checks.check_largest_batch_fn(fn)
    out = capsys.readouterr().out
    assert out.count("✅ check_largest_batch_fn:") == len(right_functions)
    assert "right on 6 cases" in out and "32 sequences" in out
    assert "1.25 GiB" in out and "would fit 4" in out


def batch_with(
    *,
    pair=2,
    heads="num_kv_heads",
    head_dim="right",
    layers=True,
    tokens_="tokens",
    numbers=False,
):
    """largest_batch with some mistakes in the size of one sequence's cache."""

    def batch(config, tokens, budget_bytes, bytes_per_number=2):
        if head_dim == "d_model":
            d = config.d_model
        else:
            d = config.d_model // config.num_heads
        size = pair * getattr(config, heads) * d
        size *= config.num_layers if layers else 1
        size *= {"tokens": tokens, "none": 1, "context": config.context_length}[tokens_]
        size *= 1 if numbers else bytes_per_number
        return budget_bytes // size

    return batch


def d_model_for_width(config, tokens, budget_bytes, bytes_per_number=2):
    return budget_bytes // (2 * config.num_layers * config.d_model * tokens * 4)


def rounded_up(config, tokens, budget_bytes, bytes_per_number=2):
    return math.ceil(budget_bytes / cache_bytes(config, tokens, bytes_per_number))


def strictly_below(config, tokens, budget_bytes, bytes_per_number=2):
    one, batch = cache_bytes(config, tokens, bytes_per_number), 0
    while (batch + 1) * one < budget_bytes:
        batch += 1
    return batch


FIRST = "Mistral 7B, sequences of 3072 tokens in float32, a budget of 25 GiB"
EXACT = (
    "Llama 2 70B, sequences of 4096 tokens, a budget of 40 GiB, with the default "
    "bytes_per_number=2"
)
NONE_FITS = "Llama 2 70B, sequences of 4096 tokens in float16, a budget of 1 GiB"


@pytest.mark.parametrize(
    ("fn", "where", "fragments"),
    [
        (
            lambda c, t, b, n=2: b / cache_bytes(c, t, n),
            FIRST,
            ["returned 33.3333, but the right batch is 33", "not a whole number"],
        ),
        (
            rounded_up,
            FIRST,
            ["returned 34,", "rounded up: a batch of 34 needs 27,380,416,512 bytes"],
        ),
        (
            lambda *a: largest_batch(*a) + 0.5,
            FIRST,
            ["returned 33.5,", "Return a whole number of sequences (an int)"],
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
            ["returned 66,", "only the keys (or only the values)", "a key AND a value"],
        ),
        (
            batch_with(heads="num_heads"),
            FIRST,
            ["returned 8,", "num_heads (32) is used where num_kv_heads (8) belongs"],
        ),
        (
            d_model_for_width,
            FIRST,
            ["returned 8,", "d_model (4096) where num_kv_heads * head_dim (1024)"],
        ),
        (
            batch_with(head_dim="d_model"),
            FIRST,
            ["returned 1,", "head_dim is taken as d_model (4096)"],
        ),
        (
            batch_with(layers=False),
            FIRST,
            ["returned 1,066,", "the layers are missing (a factor of 32)"],
        ),
        (
            batch_with(tokens_="none"),
            FIRST,
            ["returned 102,400,", "the tokens are missing (a factor of 3072)"],
        ),
        (
            batch_with(tokens_="context"),
            FIRST,
            ["returned 12,", "context_length (8192) is used instead of tokens (3072)"],
        ),
        (
            batch_with(numbers=True),
            FIRST,
            ["returned 133,", "counted in numbers, not bytes", "(4 here)"],
        ),
        (
            batch_with(pair=1, layers=False),
            FIRST,
            ["returned 2,133,", "It looks like\n  - only the keys", "\n  - the layers"],
        ),
        (
            batch_with(pair=1, layers=False, tokens_="none"),
            FIRST,
            ["returned 6,553,600,", "\n  - only the keys", "\n  - the tokens are"],
        ),
        (
            batch_with(pair=1, numbers=True),
            FIRST,
            ["returned 266,", "Count the bytes of one sequence's cache: a key"],
        ),
        (
            lambda *a: 0,
            FIRST,
            ["returned 0, but the right batch is 33", "says no sequence fits"],
        ),
        (lambda *a: "many", FIRST, ["returned 'many' (str)", "whole number (an int)"]),
        (lambda *a: [largest_batch(*a)], FIRST, ["returned [33] (list)"]),
        (
            lambda c, t, b, n: largest_batch(c, t, b, n),
            EXACT,
            ["raised TypeError", "missing 1 required positional argument"],
        ),
        (lambda *a: 1 / 0, FIRST, ["your function raised ZeroDivisionError"]),
    ],
)
def test_check_largest_batch_fn_explains_mistakes(fn, where, fragments):
    message = failure(checks.check_largest_batch_fn, fn)
    assert message.startswith("check_largest_batch_fn: ")
    assert where in message
    if "but the right batch is" in message:  # then it shows one cache's bytes
        per_sequence = "805,306,368" if where == FIRST else "1,342,177,280"
        assert f"(one sequence's cache takes {per_sequence} bytes)" in message
    for fragment in fragments:
        assert fragment in message


def test_an_ambiguous_mix_gets_general_advice():
    keys_and_numbers = batch_with(pair=1, numbers=True)
    heads_and_no_layers = batch_with(heads="num_heads", layers=False)
    case = _batch_cases()[0]
    assert keys_and_numbers(*case.args) == heads_and_no_layers(*case.args) == 266
    for fn in (keys_and_numbers, heads_and_no_layers):
        message = failure(checks.check_largest_batch_fn, fn)
        assert "It looks like" not in message
        assert "head_dim = d_model // num_heads numbers for every layer" in message


# --- check_dilated_mask_fn -----------------------------------------------------------


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
    triples = [case.args for case in _dilated_cases()]
    assert triples == list(_DILATED_CASES)
    assert {d for _, _, d in triples} == {1, 2, 3}
    assert any(w == 1 for _, w, _ in triples)
    assert any(w > T for T, w, _ in triples)
    assert any(T == 1 for T, _, _ in triples)
    assert any(T > 1 and (w - 1) * d >= T for T, w, d in triples)  # past the start
    T, w, d = triples[0]
    assert w > 1 and d > 1 and w * d < T  # the first case shows every slip


def test_the_reference_is_the_sliding_window_at_dilation_1():
    for case in _dilated_cases():
        T, w, d = case.args
        if d == 1:
            assert torch.equal(_dilated(T, w, d), sliding_window_mask(T, w))
    for T, w in itertools.product(range(1, 9), range(1, 11)):
        assert torch.equal(_dilated(T, w, 1), sliding_window_mask(T, w))


def test_the_reference_is_the_rule_of_the_exercise():
    for case in _dilated_cases():
        T, w, d = case.args
        expected = loop_mask(T, w, d)
        assert torch.equal(_dilated(T, w, d), expected)
        assert torch.equal(dilated_window_mask(T, w, d), expected)
        assert expected.dtype == torch.bool and expected.shape == (T, T)
    for T, w, d in itertools.product(range(1, 8), range(1, 5), range(1, 5)):
        assert torch.equal(_dilated(T, w, d), loop_mask(T, w, d))


def test_the_first_dilated_case_tells_the_slips_apart():
    T, w, d = _dilated_cases()[0].args
    expected = _dilated(T, w, d)
    masks = [slip.gives for slip in _dilated_slips(T, w, d, expected)]
    assert len(masks) == 8
    assert all(m is not None and m.shape == (T, T) for m in masks)
    assert all(m.dtype == torch.bool for m in masks)
    for a, b in itertools.combinations([expected, *masks], 2):
        assert not torch.equal(a, b)


def test_check_dilated_mask_fn_accepts_right_functions(capsys):
    def from_the_sliding_window(T, window, dilation):
        i, j = positions(T)
        reach = (window - 1) * dilation + 1  # positions from the oldest key to i
        return sliding_window_mask(T, reach) & ((i - j) % dilation == 0)

    def from_diagonals(T, window, dilation):
        mask = torch.zeros(T, T, dtype=torch.bool)
        for k in range(window):
            if k * dilation < T:
                ones = torch.ones(T - k * dilation, dtype=torch.bool)
                mask |= torch.diag(ones, -k * dilation)
        return mask

    right_functions = (
        dilated_window_mask,
        loop_mask,
        from_the_sliding_window,
        from_diagonals,
    )
    for fn in right_functions:
        checks.check_dilated_mask_fn(fn)
    out = capsys.readouterr().out
    assert out.count("✅ check_dilated_mask_fn:") == len(right_functions)
    assert "right on 7 cases (T from 1 to 10, window from 1 to 7, dilation" in out
    assert "dilation from 1 to 3" in out and "equals sliding_window_mask" in out


def positions(T):
    return torch.arange(T)[:, None], torch.arange(T)[None, :]


def behind(T):
    """How far key j lies behind query i, (T, T)."""
    i, j = positions(T)
    return i - j


@pytest.mark.parametrize(
    ("fn", "fragments"),
    [
        (
            lambda T, w, d: ~dilated_window_mask(T, w, d),
            ["your mask is inverted", "True means blocked"],
        ),
        (
            lambda T, w, d: (behind(T) % d == 0) & (behind(T).abs() < w * d),
            ["reaches into the future", "Keep j <= i"],
        ),
        (
            lambda T, w, d: (behind(T) >= 0) & (behind(T) % d == 0) & (behind(T) < w),
            ["ends 2 positions back", "window counts keys, not positions"],
        ),
        (
            lambda T, w, d: dilated_window_mask(T, w + 1, d),
            ["window + 1 = 4 keys, one too many", "i - 6"],
        ),
        (
            lambda T, w, d: (
                (behind(T) >= 0) & (positions(T)[1] % d == 0) & (behind(T) < w * d)
            ),
            ["multiples of the dilation (j % dilation == 0)"],
        ),
        (
            lambda T, w, d: (behind(T) >= 0) & (behind(T) < w * d),
            ["there are no gaps", "last 6 positions", "must be 2 apart"],
        ),
        (
            lambda T, w, d: sliding_window_mask(T, w),
            ["the sliding window of 3 without the dilation"],
        ),
        (
            lambda T, w, d: dilated_window_mask(T, w, d).T,
            ["the mask transposed", "row i is query i"],
        ),
        (
            lambda T, w, d: torch.zeros(T, T).masked_fill(
                ~dilated_window_mask(T, w, d), float("-inf")
            ),
            ["dtype is torch.float32, not bool", "additive float mask (0 / -inf)"],
        ),
        (
            lambda T, w, d: dilated_window_mask(T, w, d).long(),
            ["dtype is torch.int64, not bool", "right but are numbers (1 and 0)"],
        ),
        (
            lambda T, w, d: dilated_window_mask(T, w, d).long() * 2,
            ["dtype is torch.int64", "build it from comparisons"],
        ),
        (
            lambda T, w, d: torch.eye(T, dtype=torch.bool),
            ["entry [2, 0] is False, but query 2 may attend to key 0"],
        ),
        (
            lambda T, w, d: dilated_window_mask(T, w, d)[None],
            ["wrong shape (1, 10, 10); the expected shape is (10, 10)"],
        ),
        (
            lambda T, w, d: dilated_window_mask(T, w, d).tolist(),
            ["expected a torch.Tensor, got list"],
        ),
        (
            lambda T, w, d: dilated_window_mask(T, w, d).numpy(),
            ["expected a torch.Tensor", "torch.from_numpy(...)"],
        ),
        (lambda T, w, d: 1 / 0, ["your function raised ZeroDivisionError on T = 10"]),
    ],
)
def test_check_dilated_mask_fn_explains_mistakes(fn, fragments):
    message = failure(checks.check_dilated_mask_fn, fn)
    assert message.startswith("check_dilated_mask_fn: ")
    assert "T = 10, window = 3, dilation = 2" in message
    for fragment in fragments:
        assert fragment in message


def test_check_dilated_mask_fn_finds_a_mask_wrong_in_a_later_case():
    def clipped(T, window, dilation):  # wrong only when the window exceeds T - 1
        if dilation == 1:
            return sliding_window_mask(T, min(window, T - 1))
        return dilated_window_mask(T, window, dilation)

    message = failure(checks.check_dilated_mask_fn, clipped)
    assert "T = 5, window = 7, dilation = 1 (dilation 1: the sliding window)" in message
    assert "entry [4, 0] is False, but query 4 may attend to key 0" in message


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

    def largest_batch(config, tokens, budget_bytes, bytes_per_number=2): ...

    def dilated_window_mask(T, window, dilation): ...

    checks.check_online_step_fn(online_softmax_step)
    checks.check_largest_batch_fn(largest_batch)
    checks.check_dilated_mask_fn(dilated_window_mask)
    out = capsys.readouterr().out
    assert out.count("⏳") == 3 and "✅" not in out
