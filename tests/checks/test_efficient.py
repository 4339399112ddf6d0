"""Tests of the Chapter 9 self-checks (attn_course.checks.efficient): right answers
pass, wrong ones are explained."""

import itertools
import math

import numpy as np
import pytest
import torch

from attn_course import GPTConfig, checks, online_softmax, sliding_window_mask
from attn_course.checks.efficient import (
    _UNITS,
    _configs,
    _fold_rows,
    _kv_cases,
    _kv_slip_table,
    _kv_slips,
    _online_cases,
    _step,
    _sum_slips,
    _window_cases,
    _window_slips,
)

from .answers import (
    failure,
    kv_cache_bytes,
    online_softmax_step,
    unguarded_step,
    window_mask,
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


# --- check_kv_bytes_fn ---------------------------------------------------------------


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
    assert configs["tiny-mqa"].num_kv_heads == 1
    assert configs["tiny"].num_kv_heads == configs["tiny"].num_heads == 4


def test_the_reference_sizes_are_those_of_the_formula():
    for case in _kv_cases():
        config, tokens, *rest = case.args
        batch, size = rest or (1, 2)
        d = config.d_model // config.num_heads
        formula = 2 * config.num_layers * batch * config.num_kv_heads * d * tokens
        assert case.data[0] == formula * size


def test_the_kv_cases_cover_the_defaults_and_both_sizes_of_a_number():
    cases = _kv_cases()
    assert any(len(case.args) == 2 for case in cases)  # the defaults
    assert {case.args[3] for case in cases if len(case.args) == 4} == {2, 4}
    assert any(len(case.args) == 4 and case.args[2] > 1 for case in cases)


def test_every_single_slip_of_the_first_kv_case_gives_its_own_size():
    case = _kv_cases()[0]
    expected, sizes = case.data
    config = case.args[0]
    table = _kv_slip_table(config, sizes)
    assert {key for key, _, _ in table} == {
        "pair",
        "heads",
        "head_dim",
        "layers",
        "batch",
        "tokens",
        "bytes",
        "unit",
    }
    sizes_given = [expected * factor for _, factor, _ in table]
    assert len(set(sizes_given)) == len(sizes_given)
    assert expected not in sizes_given


def test_no_mix_of_kv_slips_gives_the_right_size():
    for case in _kv_cases():
        expected, sizes = case.data
        for slip in _kv_slips(expected, case.args[0], sizes):
            assert not math.isclose(slip.gives, expected)


def test_check_kv_bytes_fn_accepts_right_functions(capsys):
    def with_the_package(config, tokens, batch=1, bytes_per_number=2):
        from attn_course import kv_cache_numbers

        d = config.d_model // config.num_heads
        n = kv_cache_numbers(config.num_layers, config.num_kv_heads, d, tokens, batch)
        return n * bytes_per_number

    checks.check_kv_bytes_fn(kv_cache_bytes)
    checks.check_kv_bytes_fn(with_the_package)
    checks.check_kv_bytes_fn(lambda *a: float(kv_cache_bytes(*a)))
    checks.check_kv_bytes_fn(lambda *a: torch.tensor(kv_cache_bytes(*a)))
    checks.check_kv_bytes_fn(lambda *a: np.int64(kv_cache_bytes(*a)))
    out = capsys.readouterr().out
    assert out.count("✅ check_kv_bytes_fn:") == 5
    assert "196,608 bytes for the chapter's tiny GPT" in out
    assert "1.25 GiB" in out and "10.00 GiB with 64" in out


def bytes_with(
    *,
    pair=2,
    kv="num_kv_heads",
    head_dim="right",
    layers=True,
    batch_=True,
    tokens_="tokens",
    numbers=False,
    unit=1,
):
    """kv_cache_bytes with some slips."""

    def size(config, tokens, batch=1, bytes_per_number=2):
        d = (
            config.d_model
            if head_dim == "d_model"
            else config.d_model // config.num_heads
        )
        heads = getattr(config, kv)
        count = pair * heads * d
        count *= config.num_layers if layers else 1
        count *= batch if batch_ else 1
        count *= tokens if tokens_ == "tokens" else config.context_length
        count *= 1 if numbers else bytes_per_number
        return count / unit if unit != 1 else count

    return size


def d_model_for_width(config, tokens, batch=1, bytes_per_number=2):
    return 2 * config.num_layers * batch * config.d_model * tokens * bytes_per_number


FIRST = "for Mistral 7B, 3 sequences of 4096 tokens in float32"


@pytest.mark.parametrize(
    ("fn", "fragments"),
    [
        (bytes_with(pair=1), ["1/2 of the right size", "a key AND a value"]),
        (
            bytes_with(kv="num_heads"),
            ["4 times the right size", "num_heads (32) is used where num_kv_heads (8)"],
        ),
        (d_model_for_width, ["d_model (4096) where num_kv_heads * head_dim (1024)"]),
        (bytes_with(head_dim="d_model"), ["head_dim is taken as d_model (4096)"]),
        (bytes_with(layers=False), ["1/32 of", "the layers are missing"]),
        (bytes_with(batch_=False), ["1/3 of", "the batch is missing (a factor of 3)"]),
        (bytes_with(numbers=True), ["counts numbers, not bytes", "(4 here)"]),
        (
            bytes_with(tokens_="context"),
            ["config.context_length (8192) is used instead of tokens (4096)"],
        ),
        (bytes_with(unit=2**20), ["returned 3,072", "this is the size in MiB"]),
        (bytes_with(unit=2**30), ["returned 3, ", "this is the size in GiB"]),
        (bytes_with(unit=10**9), ["returned 3.22123", "the size in GB"]),
        (
            bytes_with(pair=1, batch_=False),
            ["1/6 of", "It looks like\n  - only the keys", "\n  - the batch"],
        ),
        (
            bytes_with(pair=1, batch_=False, numbers=True),
            ["1/24 of", "\n  - only the keys", "\n  - the batch", "\n  - this counts"],
        ),
        (lambda *a: kv_cache_bytes(*a) + 1, ["1 byte too many", "Count every number"]),
        (lambda *a: kv_cache_bytes(*a) / 7, ["1/7 of the right", "a whole number"]),
        (lambda *a: "a lot", ["returned 'a lot'", "a whole number (an int)"]),
        (lambda *a: [kv_cache_bytes(*a)], ["a whole number (an int)"]),
        (lambda *a: 0, ["not a positive size"]),
        (lambda config, tokens: 1, ["raised TypeError", "positional argument"]),
        (lambda *a: 1 / 0, ["your function raised ZeroDivisionError"]),
    ],
)
def test_check_kv_bytes_fn_explains_mistakes(fn, fragments):
    message = failure(checks.check_kv_bytes_fn, fn)
    assert message.startswith(f"check_kv_bytes_fn: {FIRST}") or (
        message.startswith("check_kv_bytes_fn: your function raised")
        and "on Mistral 7B, 3 sequences" in message
    )
    for fragment in fragments:
        assert fragment in message


def test_check_kv_bytes_fn_names_a_slip_that_shows_only_in_a_later_case():
    def heads_unless_mistral(config, tokens, batch=1, bytes_per_number=2):
        right = kv_cache_bytes(config, tokens, batch, bytes_per_number)
        if config.num_heads == 64:  # Llama 2 70B
            return right * config.num_heads // config.num_kv_heads
        return right

    message = failure(checks.check_kv_bytes_fn, heads_unless_mistral)
    assert "for Llama 2 70B, 1 sequence of 4096 tokens in float16" in message
    assert "8 times the right size" in message and "num_heads (64)" in message


def test_check_kv_bytes_fn_tries_the_defaults():
    def no_defaults(config, tokens, batch, bytes_per_number):
        return kv_cache_bytes(config, tokens, batch, bytes_per_number)

    message = failure(checks.check_kv_bytes_fn, no_defaults)
    assert "with the defaults batch=1 and bytes_per_number=2" in message
    assert "missing 2 required positional arguments" in message


def test_the_units_are_named_for_a_tiny_cache_too():
    names = [unit for unit, _ in _UNITS]
    assert names == ["KiB", "MiB", "GiB", "kB", "MB", "GB"]
    case = _kv_cases()[1]  # the tiny GPT: 196,608 bytes = 192 KiB
    expected, sizes = case.data
    slips = _kv_slips(expected, case.args[0], sizes)
    assert any(s.gives == 192 and "in KiB" in s.why for s in slips)


# --- check_window_mask_fn ------------------------------------------------------------


def test_the_window_cases_cover_the_edges():
    pairs = [case.args for case in _window_cases()]
    assert any(w == 1 for _, w in pairs)
    assert any(w == T > 1 for T, w in pairs)
    assert any(w > T for T, w in pairs)
    assert any(T == 1 for T, _ in pairs)
    T, w = pairs[0]
    assert 1 < w < T - 1  # the first case shows every slip


def test_the_reference_is_the_rule_of_the_exercise():
    for case in _window_cases():
        T, w = case.args
        assert torch.equal(sliding_window_mask(T, w), window_mask(T, w))


def test_the_first_window_case_tells_the_slips_apart():
    T, w = _window_cases()[0].args
    expected = sliding_window_mask(T, w)
    masks = [slip.gives for slip in _window_slips(T, w, expected)]
    assert all(mask is not None and mask.shape == (T, T) for mask in masks)
    for a, b in itertools.combinations([expected, *masks], 2):
        assert not torch.equal(a, b)


def test_check_window_mask_fn_accepts_right_functions(capsys):
    def with_tril(T, window):
        ones = torch.ones(T, T, dtype=torch.bool)
        return ones.tril() & ~ones.tril(-window)

    def with_triu(T, window):
        ones = torch.ones(T, T, dtype=torch.bool)
        return torch.triu(ones, diagonal=1 - window) & torch.tril(ones)

    for fn in (window_mask, with_tril, with_triu, sliding_window_mask):
        checks.check_window_mask_fn(fn)
    out = capsys.readouterr().out
    assert out.count("✅ check_window_mask_fn:") == 4
    assert "7 cases" in out and "i - window < j <= i" in out


def positions(T):
    return torch.arange(T)[:, None], torch.arange(T)[None, :]


@pytest.mark.parametrize(
    ("fn", "fragments"),
    [
        (
            lambda T, w: sliding_window_mask(T, w + 1),
            ["window + 1 = 4 keys, one too many", "j > i - window"],
        ),
        (
            lambda T, w: sliding_window_mask(T, w - 1) if w > 1 else None,
            ["window - 1 = 2 keys, one too few", "counts the query itself"],
        ),
        (
            lambda T, w: (lambda i, j: (i - j).abs() < w)(*positions(T)),
            ["reaches forward too", "The window is causal"],
        ),
        (
            lambda T, w: (lambda i, j: (i - j).abs() <= w)(*positions(T)),
            ["reaches forward too"],
        ),
        (lambda T, w: ~window_mask(T, w), ["inverted", "True means blocked"]),
        (
            lambda T, w: torch.zeros(T, T).masked_fill(
                ~window_mask(T, w), float("-inf")
            ),
            ["dtype is torch.float32, not bool", "additive float mask (0 / -inf)"],
        ),
        (
            lambda T, w: window_mask(T, w).float(),
            ["not bool", "right but are numbers (1 and 0)", ".bool()"],
        ),
        (lambda T, w: window_mask(T, w).long() * 2, ["dtype is torch.int64"]),
        (
            lambda T, w: torch.eye(T, dtype=torch.bool),
            ["only the diagonal is True", "window = 3"],
        ),
        (
            lambda T, w: (lambda i, j: (j < w) & (j <= i))(*positions(T)),
            ["aligned at the start of the sequence (keys j < window)"],
        ),
        (
            lambda T, w: (lambda i, j: (j < w).expand(T, T))(*positions(T)),
            ["aligned at the start of the sequence"],
        ),
        (
            lambda T, w: torch.ones(T, T, dtype=torch.bool).tril(),
            ["this is the causal mask: the window is missing"],
        ),
        (lambda T, w: window_mask(T, w).T, ["the window transposed"]),
        (
            lambda T, w: window_mask(T, w) ^ (torch.eye(T, dtype=torch.bool)[0]),
            ["entry [0, 0] is False, but query 0 may attend to key 0"],
        ),
        (lambda T, w: window_mask(T, w)[None], ["wrong shape (1, 6, 6)"]),
        (lambda T, w: window_mask(T, w).tolist(), ["expected a torch.Tensor"]),
        (lambda T, w: 1 / 0, ["raised ZeroDivisionError on T = 6, window = 3"]),
    ],
)
def test_check_window_mask_fn_explains_mistakes(fn, fragments):
    message = failure(checks.check_window_mask_fn, fn)
    assert "T = 6, window = 3" in message
    for fragment in fragments:
        assert fragment in message


def test_check_window_mask_fn_finds_a_mask_wrong_for_a_long_window():
    def clipped(T, window):  # right while the window is shorter than T
        return window_mask(T, min(window, T - 1))

    message = failure(checks.check_window_mask_fn, clipped)
    assert "T = 4, window = 4 (window >= T: the causal mask)" in message


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
        lambda: checks.check_kv_bytes_fn(kv_cache_bytes(TINY, 64)),
        TypeError,
        ["got int", "check_kv_bytes_fn(kv_cache_bytes), not"],
        id="size-result",
    ),
    pytest.param(
        lambda: checks.check_window_mask_fn(window_mask(5, 2)),
        TypeError,
        ["got torch.Tensor", "check_window_mask_fn(window_mask), not"],
        id="mask-result",
    ),
    pytest.param(
        lambda: checks.check_window_mask_fn(torch.nn.Linear(2, 2)),
        TypeError,
        ["got a Linear module"],
        id="module",
    ),
]

test_a_wrong_call_is_a_type_error = wrong_call_test(CALL_ERRORS)


def test_the_checks_wait_for_an_answer(capsys):
    def online_softmax_step(m, s, block): ...

    def kv_cache_bytes(config, tokens, batch=1, bytes_per_number=2): ...

    def window_mask(T, window): ...

    checks.check_online_step_fn(online_softmax_step)
    checks.check_kv_bytes_fn(kv_cache_bytes)
    checks.check_window_mask_fn(window_mask)
    out = capsys.readouterr().out
    assert out.count("⏳") == 3 and "✅" not in out
