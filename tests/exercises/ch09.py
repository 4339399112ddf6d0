"""Answers to the exercises of Chapter 9 (see tests/exercises/__init__.py)."""

from attn_course.checks.efficient import DILATED
from tests.exercises import Answers, wrong

NOTEBOOK = "09_efficient.ipynb"

# The first case of each check, the one its messages quote for these answers; the
# numbers the messages name are worked out from them here.
# Online softmax: a block whose maximum is larger than m, 3 rows of 5 scores; the
# fully masked row of the last case is row 0.
ROWS, SCORES, MASKED_ROW = 3, 5, 0
# The largest batch: Llama 2 70B (80 layers, 64 query heads and 8 key-value heads of
# width 128), sequences of 3072 tokens in float32, a budget of 121 GiB, no window.
# The window cases: Mistral 7B with its window of 4096.
LAYERS, HEADS, KV_HEADS, HEAD_DIM = 80, 64, 8, 128
TOKENS, FLOAT32 = 3072, 4
GIB = 2**30
BUDGET = 121 * GIB
MISTRAL_WINDOW = 4096
LONG, SHORT = 8192, 2048  # the window cases' sequences, longer and shorter
PER_SEQUENCE = 2 * LAYERS * KV_HEADS * HEAD_DIM * TOKENS * FLOAT32
BATCH = BUDGET // PER_SEQUENCE
# The dilated window: its table's first case, and the facts its messages name.
FACTS = DILATED._facts(DILATED.cases[0])

FIRST_STEP = f"larger than m in every row ({ROWS} rows, {SCORES} scores)"
FIRST_BATCH = (
    f"Llama 2 70B, sequences of {TOKENS} tokens in float32, a budget of "
    f"{BUDGET / GIB:g} GiB, your function returned"
)
FIRST_MASK = DILATED.describe(*DILATED.cases[0])


def step(body):
    """The answer cell of ch09-ex-online-step with the function body ``body``."""
    return (
        "# Your answer: the pair (m_new, s_new) after one more block of scores.\n"
        "# m and s: (R,), the running maximum and the running sum of exp(x - m);\n"
        "# block: (R, n). A row whose scores so far are all -inf gives m_new = -inf\n"
        "# and s_new = 0, without NaN. Leave m and s unchanged.\n"
        f"def online_softmax_step(m, s, block):\n{body}"
    )


M_NEW = "    m_new = torch.maximum(m, block.amax(dim=-1))\n"
SAFE = '    safe = torch.where(m_new == float("-inf"), 0.0, m_new)\n'
TERMS = "    terms = torch.exp(block - safe[:, None]).sum(dim=-1)\n"


def batch(body):
    """The answer cell of ch09-ex-largest-batch with the function body ``body``."""
    return (
        "# Your answer: how many sequences of `tokens` tokens can keep their KV "
        "caches\n"
        "# in `budget_bytes` bytes at once (0 if not even one fits), each number "
        "taking\n"
        "# `bytes_per_number` bytes; with a window, each layer keeps only the last\n"
        "# `window` tokens.\n"
        "def largest_batch(\n"
        "    config, tokens, budget_bytes, bytes_per_number=2, window=None\n"
        "):\n"
        f"{body}"
    )


KEPT = "    kept = tokens if window is None else min(tokens, window)\n"
HEAD = KEPT + "    head_dim = config.d_model // config.num_heads\n"
RIGHT_SIZE = (
    "2",
    "config.num_layers",
    "config.num_kv_heads",
    "head_dim",
    "kept",
    "bytes_per_number",
)


def per_sequence(*factors, divide="//"):
    """A body of largest_batch: the budget divided by the product of ``factors``."""
    return (
        HEAD
        + "    per_sequence = "
        + " * ".join(factors)
        + f"\n    return budget_bytes {divide} per_sequence\n"
    )


def without(factor, *, instead=None):
    """The right body with ``factor`` left out, or replaced by ``instead``."""
    return per_sequence(
        *(
            instead if f == factor else f
            for f in RIGHT_SIZE
            if f != factor or instead is not None
        )
    )


def dilated(body):
    """The answer cell of ch09-ex-dilated with the function body ``body``."""
    return (
        "# Your answer: a bool (T, T) mask, True where query i may attend to key j:\n"
        "# the `window` keys i, i - dilation, ..., i - (window - 1) * dilation that\n"
        "# are >= 0, nothing after the query.\n"
        f"def dilated_window_mask(T, window, dilation):\n{body}"
    )


ANSWERS = {
    "ch09-ex-online-step": Answers(
        right=step(
            M_NEW + SAFE + TERMS + "    return m_new, s * torch.exp(m - safe) + terms\n"
        ),
        wrong=(
            wrong(
                "no-rescale",
                step(M_NEW + SAFE + TERMS + "    return m_new, s + terms\n"),
                FIRST_STEP,
                "your s_new",
                "The old sum is not rescaled",
            ),
            wrong(
                "rescaled-the-wrong-way",
                step(
                    M_NEW + SAFE + TERMS + "    return m_new, s * torch.exp(safe - m) "
                    "+ terms\n"
                ),
                FIRST_STEP,
                "rescaled the wrong way, by exp(m_new - m)",
            ),
            wrong(
                "old-maximum-in-the-block",
                step(
                    M_NEW
                    + SAFE
                    + "    terms = torch.exp(block - m[:, None]).sum(dim=-1)\n"
                    "    return m_new, s * torch.exp(m - safe) + terms\n"
                ),
                FIRST_STEP,
                "subtract the OLD maximum m",
            ),
            wrong(
                "unguarded",
                step(
                    M_NEW
                    + "    terms = torch.exp(block - m_new[:, None]).sum(dim=-1)\n"
                    "    return m_new, s * torch.exp(m - m_new) + terms\n"
                ),
                f"row {MASKED_ROW} with every key masked so far",
                "found NaN",
                f"every score so far is -inf in row {MASKED_ROW}",
                "a finite stand-in for m_new",
                "Two ways to get it wrong",
            ),
            wrong(
                "only-the-sum",
                step(
                    M_NEW + SAFE + TERMS + "    return s * torch.exp(m - safe) "
                    "+ terms\n"
                ),
                FIRST_STEP,
                "returned only s_new",
                "`return m_new, s_new`",
            ),
            wrong(
                "in-place",
                step(
                    M_NEW + SAFE + TERMS + "    s *= torch.exp(m - safe)\n"
                    "    s += terms\n"
                    "    return m_new, s\n"
                ),
                "changed its input s",
                "in place",
            ),
            wrong(
                "swapped",
                step(
                    M_NEW + SAFE + TERMS + "    return s * torch.exp(m - safe) + "
                    "terms, m_new\n"
                ),
                "in the wrong order",
            ),
        ),
    ),
    "ch09-ex-largest-batch": Answers(
        right=batch(per_sequence(*RIGHT_SIZE)),
        wrong=(
            wrong(
                "not-rounded-down",
                batch(per_sequence(*RIGHT_SIZE, divide="/")),
                FIRST_BATCH,
                f"returned {BUDGET / PER_SEQUENCE:g}, but the right batch is {BATCH}",
                "round down with floor division",
            ),
            wrong(
                "keys-only",
                batch(without("2")),
                FIRST_BATCH,
                f"returned {BUDGET // (PER_SEQUENCE // 2)}",
                "a key AND a value",
            ),
            wrong(
                "all-heads",
                batch(without("config.num_kv_heads", instead="config.num_heads")),
                f"returned {BUDGET // (PER_SEQUENCE * HEADS // KV_HEADS)}",
                f"num_heads ({HEADS}) is used where num_kv_heads ({KV_HEADS}) belongs",
            ),
            wrong(
                "numbers-not-bytes",
                batch(without("bytes_per_number")),
                f"returned {BUDGET // (PER_SEQUENCE // FLOAT32)}",
                "counted in numbers, not bytes",
                f"bytes_per_number ({FLOAT32} here)",
            ),
            wrong(
                "at-least-one",
                batch(
                    HEAD + "    per_sequence = " + " * ".join(RIGHT_SIZE) + "\n"
                    "    return max(1, budget_bytes // per_sequence)\n"
                ),
                "Llama 2 70B, sequences of 4096 tokens in float16, a budget of 1 GiB",
                "Not even one sequence fits here",
                "not at least 1",
            ),
            wrong(
                "strict-comparison",
                batch(
                    HEAD + "    per_sequence = " + " * ".join(RIGHT_SIZE) + "\n"
                    "    count = 0\n"
                    "    while (count + 1) * per_sequence < budget_bytes:\n"
                    "        count += 1\n"
                    "    return count\n"
                ),
                "a budget of 40 GiB",
                "One sequence too few",
                "fill the budget exactly",
            ),
            wrong(
                "window-left-out",
                batch(
                    per_sequence(*RIGHT_SIZE).replace(
                        KEPT, "    kept = tokens  # every token\n"
                    )
                ),
                f"Mistral 7B with its window of {MISTRAL_WINDOW}, sequences of "
                f"{LONG} tokens",
                "the window is left out",
                "min(tokens, window)",
            ),
            wrong(
                "window-for-a-short-sequence",
                batch(
                    per_sequence(*RIGHT_SIZE).replace(
                        KEPT, "    kept = tokens if window is None else window\n"
                    )
                ),
                f"sequences of {SHORT} tokens (shorter than the window)",
                f"the cache is counted for window={MISTRAL_WINDOW} tokens",
                "min(tokens, window)",
            ),
        ),
    ),
    "ch09-ex-dilated": Answers(
        right=dilated(DILATED.right),
        wrong=tuple(
            wrong(slip.name, dilated(slip.body), FIRST_MASK, slip.says.format(**FACTS))
            for slip in DILATED.slips[:3]
        ),
    ),
}
