"""Self-checks for Chapter 9: one step of online softmax, the largest batch whose KV
caches fit a budget, and a dilated sliding-window mask."""

from __future__ import annotations

import torch

from ..gpt import GPTConfig
from ._common import INVERTED
from ._kit import Case
from .table import Exercise, Slip, count_is, count_wrong, pair_wrong, slips

__all__ = ["check_dilated_mask_fn", "check_largest_batch_fn", "check_online_step_fn"]

_STEP = (
    "    m_new = torch.maximum(m, block.amax(dim=-1))\n"
    '    safe = torch.where(m_new == float("-inf"), 0.0, m_new)  # exp(-inf - 0) = 0\n'
    "    terms = torch.exp(block - safe[:, None]).sum(dim=-1)\n"
    "    s_new = s * torch.exp(m - safe) + terms\n"
    "    return m_new, s_new\n"
)


def _online_cases():
    """``(m, s, block)``, float32, never as many rows as scores; in the first case
    every row's maximum grows, which tells the slips apart."""
    g, inf = torch.Generator().manual_seed(0), float("-inf")
    x = [
        2 * torch.randn(size, generator=g) for size in [(3, 5), (4, 3), (2, 4), (3, 4)]
    ]
    s = [1 + 3 * torch.rand(len(block), generator=g) for block in x]
    m = [x[0].amax(-1) - 1 - torch.rand(3, generator=g), x[1].amax(-1) + 0.5]
    m += [torch.full((2,), inf), torch.tensor([inf, inf, 0.3])]
    s[2], s[3][:2], x[3][0], x[3][2, :2] = torch.zeros(2), 0.0, inf, inf
    texts = [
        "a block whose maximum is above m in every row",
        "a block whose maximum is below m in every row",
        "the first block: m = -inf, s = 0",
        "row 0 with every score masked so far: m = -inf, s = 0, a block of -inf",
    ]
    return [
        Case(f"{text} ({len(b)} rows, {b.shape[1]} scores)", (m[i], s[i], b))
        for i, (text, b) in enumerate(zip(texts, x, strict=True))
    ]


def _masked(m, s, block):
    """The rows where every score so far is -inf: ``"row 0"``, ``"rows 0, 2"``."""
    rows = torch.isneginf(torch.maximum(m, block.amax(-1))).nonzero().flatten()
    return ("row " if len(rows) == 1 else "rows ") + ", ".join(map(str, rows.tolist()))


_STEP_SLIPS = """
no-rescale: s * torch.exp(m - safe) -> s -- s is not rescaled by exp(m - m_new)
inverse-rescale: m - safe -> safe - m -- s is rescaled by exp(m_new - m), the inverse
    of exp(m - m_new)
block-not-shifted: block - safe[:, None] -> block -- the block's exponentials do not
    subtract m_new
block-shifted-by-old-m: safe[:, None] -> m[:, None] -- the block's exponentials
    subtract the old m, not m_new
rescaled-twice: s * torch.exp(m - safe) + terms -> (s + terms) * torch.exp(m - safe)
    -- the block's terms are rescaled too: only s needs exp(m - m_new)
sum-dropped: s * torch.exp(m - safe) + terms -> terms -- the old sum s is dropped
block-maximum: torch.maximum(m, block.amax(dim=-1)) -> block.amax(dim=-1) -- m_new
    is the block's maximum, but the running maximum never goes down
old-maximum: torch.maximum(m, block.amax(dim=-1)) -> m -- m_new is the old m
unguarded: torch.where(m_new == float("-inf"), 0.0, m_new) -> m_new -- s_new is NaN
    in {masked}, where every score so far is -inf: m_new = -inf there, and
    exp(-inf - (-inf)) is NaN. In the exponentials only, subtract a finite stand-in
    for m_new there, torch.where(m_new == -inf, 0.0, m_new): exp(-inf - 0) = 0
finite-maximum: return m_new -> return safe | dim=-1)) -> dim=-1)).clamp(min=-1e9)
    -- m_new is finite in {masked}, where every score so far is -inf: return -inf
    there, the maximum of nothing, and keep the stand-in inside the exponentials. A
    running maximum of 0 would lose later scores far below it: exp(-200 - 0) is 0
masked-as-finite: block.amax -> block.clamp(min=-1e9).amax; exp(block ->
    exp(block.clamp(min=-1e9) -- in {masked}, where every score is masked, the -inf
    scores count as finite ones: s_new is {n}, not 0. Keep them -inf: exp(-inf) = 0
swapped: m_new, s_new -> s_new, m_new -- m_new and s_new are swapped
keepdim: sum(dim=-1) -> sum(dim=-1, keepdim=True) -- s_new is a square: the block's
    terms are summed with keepdim=True, (R, 1), and added to s, (R,)
"""

ONLINE_STEP = Exercise(
    label="ch09-ex-online-step",
    check="check_online_step_fn",
    function="online_softmax_step(m, s, block)",
    output="(m_new, s_new)",
    right=_STEP,
    cases=_online_cases,
    facts=lambda m, s, block: {"masked": _masked(m, s, block), "n": block.shape[1]},
    rule="m_new is the larger of m and the block's maximum, s_new = s * exp(m - m_new) "
    "+ the block's exp(x - m_new); m_new = -inf, s_new = 0 where all scores are -inf",
    tolerance=1e-5,
    otherwise=pair_wrong("m_new, s_new", 1e-5),
    fix="compute new tensors, m_new = torch.maximum(...) and s_new = s * ... + ..., "
    "instead of changing m or s with s *= ..., s.mul_(...) or m.copy_(...).",
    slips=slips(_STEP, _STEP_SLIPS),
)
check_online_step_fn = ONLINE_STEP.make_check()

_BATCH = (
    "    kept = tokens if window is None else min(tokens, window)\n"
    "    head_dim = config.d_model // config.num_heads\n"
    "    per_token = 2 * config.num_layers * config.num_kv_heads * head_dim\n"
    "    size = per_token * kept * bytes_per_number  # the bytes of one cache\n"
    "    return budget_bytes // size\n"
)


def _batch_case(name, L, D, H, kv, T_max, tokens, gib, b, w=None):
    """A case: a model's sizes, the tokens, a budget in GiB, bytes, a window."""
    text = f"{name}, {tokens} tokens, {b} byte{'s' * (b > 1)} a number, {gib} GiB"
    config = GPTConfig(32000, T_max, D, H, L, num_kv_heads=kv)
    return Case(
        text + f", window={w}" * bool(w), (config, tokens, int(gib * 2**30), b, w)
    )


def _batch_facts(config, tokens, budget_bytes, bytes_per_number, window):
    """What the messages name: the bytes of one cache, the batch, and sizes."""
    kept = tokens if window is None else min(tokens, window)
    d = config.d_model // config.num_heads
    size = 2 * config.num_layers * config.num_kv_heads * d * kept * bytes_per_number
    batch, b = budget_bytes // size, bytes_per_number
    return {"size": size, "batch": batch, "kept": kept, "d": d, "w": window, "b": b}


_BATCH_SLIPS = """
true-division: // size -> / size -- this is not a whole number: round down with //
rounded-up: budget_bytes // size -> math.ceil(budget_bytes / size) -- this is
    rounded up, but {batch} + 1 caches take more than the budget: round down, //
at-least-one: budget_bytes // size -> max(1, budget_bytes // size) -- not even one
    sequence fits here: return 0, not at least 1
one-too-few: budget_bytes // -> (budget_bytes - 1) // -- one sequence too few:
    {batch} caches fill the budget exactly, and that fits
keys-only: 2 * -> -- only the keys (or only the values) are counted: the factor 2
all-heads: config.num_kv_heads -> config.num_heads | config.num_kv_heads * head_dim
    -> config.d_model -- every query head is counted: the cache keeps the
    num_kv_heads key-value heads only
groups: config.num_kv_heads -> (config.num_heads // config.num_kv_heads) --
    num_heads // num_kv_heads (the query heads per key-value head) is counted
head-dim-is-d-model: config.d_model // config.num_heads -> config.d_model --
    head_dim is taken as d_model: a head has d_model // num_heads = {d} numbers
no-layers: config.num_layers * -> -- the layers are missing: each has its own cache
no-tokens: * kept -> -- the tokens are missing: each of the {kept} adds its own
no-window: tokens if window is None else min(tokens, window) -> tokens -- the window
    is left out: each layer keeps the last {w} tokens only, min(tokens, window)
window-always: min(tokens, window) -> window -- the cache is counted for window =
    {w} tokens, but this sequence has only {tokens}: min(tokens, window)
context-length: kept = tokens -> kept = config.context_length -- the cache is
    counted for config.context_length tokens, not for the sequence's
numbers-not-bytes: * bytes_per_number -> -- the cache is counted in numbers, not
    bytes: multiply by bytes_per_number
two-bytes: bytes_per_number -> 2 -- each number is counted as 2 bytes, where
    bytes_per_number is {b}
"""

LARGEST_BATCH = Exercise(
    label="ch09-ex-largest-batch",
    check="check_largest_batch_fn",
    function="largest_batch(config, tokens, budget_bytes, bytes_per_number=2, "
    "window=None)",
    output="batch",
    right=_BATCH,
    # Published sizes (layers, d_model, heads, key-value heads, context). The first
    # case tells most slips apart (with 1 byte a number, 2 is a slip of its own); then
    # float32, a budget filled exactly, one too small, windows of 4096 long and short.
    cases=lambda: (
        _batch_case("Llama 2 70B", 80, 8192, 64, 8, 4096, 3072, 41.3, 1),
        _batch_case("GPT-2 small", 12, 768, 12, 12, 1024, 1000, 1.01, 4),
        _batch_case("Llama 2 70B", 80, 8192, 64, 8, 4096, 4096, 40, 2),
        _batch_case("Llama 2 70B", 80, 8192, 64, 8, 4096, 4096, 0.5, 2),
        _batch_case("Mistral 7B", 32, 4096, 32, 8, 8192, 8192, 16, 2, 4096),
        _batch_case("Mistral 7B", 32, 4096, 32, 8, 8192, 2048, 10, 2, 4096),
    ),
    facts=_batch_facts,
    rule="one sequence's cache, a key and a value for each layer, key-value head and "
    "token a layer keeps, takes {size:,} bytes here, and {batch:,} of them fit",
    same=count_is,
    otherwise=count_wrong,
    slips=slips(_BATCH, _BATCH_SLIPS),
)
check_largest_batch_fn = LARGEST_BATCH.make_check()

_DILATED = (
    "    i = torch.arange(T)[:, None]  # (T, 1): queries\n"
    "    j = torch.arange(T)[None, :]  # (1, T): keys\n"
    "    back = i - j  # how far back key j lies from query i\n"
    "    mask = (back >= 0) & (back % dilation == 0) & (back < window * dilation)\n"
    "    return mask\n"
)

_DILATED_SLIPS = """
into-the-future: (back >= 0) & -> ; back < -> back.abs() < -- the window reaches
    into the future: query i sees keys after it. Keep j <= i
no-lower-bound: (back >= 0) & -> -- nothing keeps i - j >= 0: a key after the query
    passes when i - j is a negative multiple of {dilation}. Keep j <= i
positions-not-keys: window * dilation -> window -- the window ends window - 1
    positions back, not (window - 1) * dilation = {oldest}: window counts keys
one-key-too-many: < window -> <= window -- each query sees window + 1 keys
multiples-of-dilation: back % dilation -> j % dilation -- your keys are multiples of
    the dilation, the same for every query: count back from each, (i - j) % dilation
no-gaps: & (back % dilation == 0) -> -- there are no gaps: the keys must be
    {dilation} apart, (i - j) % dilation == 0
sliding-window: & (back % dilation == 0) -> ; window * dilation -> window -- this is
    the sliding window of {window} without the dilation: the keys are {dilation} apart
transposed: return mask -> return mask.T -- this is the mask transposed: row i is
    query i, column j key j
"""

DILATED = Exercise(
    label="ch09-ex-dilated",
    check="check_dilated_mask_fn",
    function="dilated_window_mask(T, window, dilation)",
    output="mask",
    right=_DILATED,
    # The first case tells the slips apart; then dilations of 3 and 1 (the sliding
    # window), a window past the start, a window of 1, one token.
    cases=((10, 3, 2), (9, 2, 3), (8, 3, 1), (6, 4, 2), (5, 1, 3), (1, 2, 2)),
    describe="T = {}, window = {}, dilation = {}".format,
    facts=lambda T, window, dilation: {"oldest": (window - 1) * dilation},
    rule="query i sees the {window} keys i, i - {dilation}, ..., i - {oldest} "
    "(i - (window - 1) * dilation) that are >= 0",
    slips=(Slip("inverted", _DILATED.replace("n mask", "n ~mask"), INVERTED),)
    + slips(_DILATED, _DILATED_SLIPS),
)
check_dilated_mask_fn = DILATED.make_check()
