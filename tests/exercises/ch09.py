"""Answers to the exercises of Chapter 9 (see tests/exercises/__init__.py)."""

from tests.exercises import Answers, wrong

NOTEBOOK = "09_efficient.ipynb"

# The first case of each check, the one its messages quote for these answers; the
# numbers the messages name are worked out from them here.
# Online softmax: a block whose maximum is larger than m, 3 rows of 5 scores; the
# fully masked row of the last case is row 0.
ROWS, SCORES, MASKED_ROW = 3, 5, 0
# The KV cache: Mistral 7B (32 layers, 32 query heads and 8 key-value heads of
# width 128, a context of 8192 tokens), 3 sequences of 4096 tokens in float32.
LAYERS, HEADS, KV_HEADS, HEAD_DIM, CONTEXT = 32, 32, 8, 128, 8192
D_MODEL = HEADS * HEAD_DIM
BATCH, TOKENS, FLOAT32 = 3, 4096, 4
FIRST_BYTES = 2 * LAYERS * BATCH * KV_HEADS * HEAD_DIM * TOKENS * FLOAT32
GIB = 2**30
# The sliding window: T = 6 tokens, a window of 3.
T, WINDOW = 6, 3

FIRST_STEP = f"larger than m in every row ({ROWS} rows, {SCORES} scores)"
FIRST_CACHE = f"Mistral 7B, {BATCH} sequences of {TOKENS} tokens in float32"
FIRST_MASK = f"T = {T}, window = {WINDOW}"


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


def cache(body):
    """The answer cell of ch09-ex-kv-bytes with the function body ``body``."""
    return (
        "# Your answer: the bytes of the keys and values of every layer, for `tokens`\n"
        "# tokens of each of `batch` sequences, each number taking "
        "`bytes_per_number` bytes.\n"
        f"def kv_cache_bytes(config, tokens, batch=1, bytes_per_number=2):\n{body}"
    )


HEAD = "    head_dim = config.d_model // config.num_heads\n"


def sizes(*factors):
    """A body of kv_cache_bytes: the product of ``factors``."""
    return HEAD + "    return " + " * ".join(factors) + "\n"


RIGHT_SIZE = (
    "2",
    "config.num_layers",
    "batch",
    "config.num_kv_heads",
    "head_dim",
    "tokens",
    "bytes_per_number",
)


def without(factor, *, instead=None):
    """The right product with ``factor`` left out, or replaced by ``instead``."""
    return sizes(
        *(
            instead if f == factor else f
            for f in RIGHT_SIZE
            if f != factor or instead is not None
        )
    )


def window(body):
    """The answer cell of ch09-ex-window with the function body ``body``."""
    return (
        "# Your answer: a bool (T, T) mask, True where query i may attend to key j,\n"
        "# for itself and the window - 1 keys before it, nothing after it.\n"
        f"def window_mask(T, window):\n{body}"
    )


POSITIONS = (
    "    i = torch.arange(T)[:, None]  # (T, 1): queries\n"
    "    j = torch.arange(T)[None, :]  # (1, T): keys\n"
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
    "ch09-ex-kv-bytes": Answers(
        right=cache(sizes(*RIGHT_SIZE)),
        wrong=(
            wrong(
                "keys-only",
                cache(without("2")),
                FIRST_CACHE,
                "1/2 of the right size",
                "a key AND a value",
            ),
            wrong(
                "all-heads",
                cache(without("config.num_kv_heads", instead="config.num_heads")),
                f"{HEADS // KV_HEADS} times the right size",
                f"num_heads ({HEADS}) is used where num_kv_heads ({KV_HEADS}) belongs",
            ),
            wrong(
                "d-model-wide",
                cache(
                    "    return 2 * config.num_layers * batch * config.d_model * tokens"
                    " * bytes_per_number\n"
                ),
                f"d_model ({D_MODEL}) where num_kv_heads * head_dim "
                f"({KV_HEADS * HEAD_DIM}) belongs",
            ),
            wrong(
                "one-layer",
                cache(without("config.num_layers")),
                f"1/{LAYERS} of the right size",
                f"the layers are missing (a factor of {LAYERS})",
            ),
            wrong(
                "no-batch",
                cache(without("batch")),
                f"the batch is missing (a factor of {BATCH})",
            ),
            wrong(
                "numbers-not-bytes",
                cache(without("bytes_per_number")),
                "this counts numbers, not bytes",
                f"bytes_per_number ({FLOAT32} here)",
            ),
            wrong(
                "in-gib",
                cache(sizes(*RIGHT_SIZE, "1 / 2**30")),
                f"returned {FIRST_BYTES // GIB}, ",
                "this is the size in GiB",
            ),
            wrong(
                "context-length",
                cache(without("tokens", instead="config.context_length")),
                f"config.context_length ({CONTEXT}) is used instead of tokens "
                f"({TOKENS})",
            ),
        ),
    ),
    "ch09-ex-window": Answers(
        right=window(POSITIONS + "    return (j <= i) & (j > i - window)\n"),
        wrong=(
            wrong(
                "one-key-too-many",
                window(POSITIONS + "    return (j <= i) & (j >= i - window)\n"),
                FIRST_MASK,
                f"window + 1 = {WINDOW + 1} keys, one too many",
            ),
            wrong(
                "one-key-too-few",
                window(POSITIONS + "    return (j <= i) & (j > i - window + 1)\n"),
                f"window - 1 = {WINDOW - 1} keys, one too few",
            ),
            wrong(
                "band",
                window(POSITIONS + "    return (i - j).abs() < window\n"),
                FIRST_MASK,
                "the window reaches forward too",
            ),
            wrong(
                "inverted",
                window(POSITIONS + "    return ~((j <= i) & (j > i - window))\n"),
                "your mask is inverted",
            ),
            wrong(
                "additive",
                window(
                    POSITIONS + "    allowed = (j <= i) & (j > i - window)\n"
                    "    return torch.zeros(T, T).masked_fill(~allowed, "
                    'float("-inf"))\n'
                ),
                "not bool",
                "additive float mask (0 / -inf)",
            ),
            wrong(
                "diagonal",
                window("    return torch.eye(T, dtype=torch.bool)\n"),
                "only the diagonal is True",
            ),
            wrong(
                "from-the-start",
                window(POSITIONS + "    return (j <= i) & (j < window)\n"),
                "aligned at the start of the sequence",
            ),
        ),
    ),
}
