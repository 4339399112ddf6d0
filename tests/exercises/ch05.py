"""Answers to the exercises of Chapter 5 (see tests/exercises/__init__.py)."""

from tests.exercises import Answers, wrong

NOTEBOOK = "05_multi_head.ipynb"

SPLIT = """
def split_heads(x, num_heads):
    B, T, D = x.shape
    return x.view(B, T, num_heads, D // num_heads).transpose(1, 2)
"""

MERGE = """
def merge_heads(x):
    B, H, T, d = x.shape
    return x.transpose(1, 2).contiguous().view(B, T, H * d)
"""

PREDICTED = {
    "wrapper output": (2, 5, 36),
    "wrapper weights": (2, 3, 5, 5),
    "fused output": (2, 5, 12),
    "fused weights": (2, 3, 5, 5),
    "queries.view": (2, 5, 3, 4),
    "queries.transpose": (2, 3, 5, 4),
    "context.transpose": (2, 5, 3, 4),
}


def predicted(**changes):
    """The answer cell of ch05-ex-shapes with some predictions changed."""
    shapes = {**PREDICTED, **changes}
    return f"predicted = {shapes!r}\n"


def counting(body):
    """The answer cell of ch05-ex-params with the formula ``body``."""
    return f"def count_parameters(d_in, d_out, num_heads, qkv_bias):\n{body}"


def heads(body):
    """The answer cell of ch05-ex-heads with the function body ``body``."""
    return f"def valid_head_counts(d_out):\n{body}"


ANSWERS = {
    "ch05-ex-split": Answers(
        right=SPLIT + MERGE,
        wrong=(
            wrong(
                "no-contiguous",
                SPLIT
                + """
def merge_heads(x):
    B, H, T, d = x.shape
    return x.transpose(1, 2).view(B, T, H * d)
""",
                "merge_heads raised RuntimeError",
                "call .contiguous() before .view(...)",
            ),
            wrong(
                "no-transpose",
                """
def split_heads(x, num_heads):
    B, T, D = x.shape
    return x.reshape(B, num_heads, T, D // num_heads)
"""
                + MERGE,
                "split_heads's output",
                "reshaped straight to (B, H, T, d) without a transpose",
                "cuts the SEQUENCE",
            ),
            wrong(
                "heads-last",
                """
def split_heads(x, num_heads):
    B, T, D = x.shape
    return x.view(B, T, num_heads, D // num_heads)
"""
                + MERGE,
                "(B, T, H, d)",
                "add .transpose(1, 2) after the view",
            ),
            wrong(
                "glued",
                SPLIT
                + """
def merge_heads(x):
    B, H, T, d = x.shape
    return x.reshape(B, T, H * d)
""",
                "merge_heads's output",
                "glued (B, H, T, d) straight into (B, T, D)",
                "Transpose back first",
            ),
            wrong(
                "strided",
                """
def split_heads(x, num_heads):
    B, T, D = x.shape
    return x.view(B, T, D // num_heads, num_heads).permute(0, 3, 1, 2)
"""
                + MERGE,
                "every H-th feature",
            ),
            wrong(
                "two-heads",
                """
def split_heads(x, num_heads):
    B, T, D = x.shape
    return x.view(B, T, 2, D // 2).transpose(1, 2)
"""
                + MERGE,
                "num_heads = 4",
                "not a fixed number",
            ),
        ),
    ),
    "ch05-ex-shapes": Answers(
        right=predicted(),
        wrong=(
            wrong(
                "per-head-width",
                predicted(**{"wrapper output": (2, 5, 12)}),
                "1 of 7 shapes are wrong",
                "'wrapper output': you predicted (2, 5, 12)",
                "dimension 2 (H * d_out) is too low",
                "width of EACH head",
            ),
            wrong(
                "fused-36",
                predicted(**{"fused output": (2, 5, 36)}),
                "'fused output'",
                "dimension 2 (D) is too high",
                "TOTAL width",
            ),
            wrong(
                "no-head-dim",
                predicted(**{"fused weights": (2, 5, 5), "wrapper weights": (2, 5, 5)}),
                "2 of 7 shapes are wrong",
                "3 dimensions where the result has 4, (B, H, T, T)",
            ),
            wrong(
                "no-swap",
                predicted(**{"queries.transpose": (2, 5, 3, 4)}),
                "dimension 1 (H) is too high, dimension 2 (T) is too low",
                "swaps T and H",
            ),
            wrong(
                "missing",
                'predicted = {"wrapper output": (2, 5, 36), '
                '"fused output": (2, 5, 12)}',
                "lacks the keys ['wrapper weights', 'fused weights'",
            ),
        ),
    ),
    "ch05-ex-params": Answers(
        right=counting(
            "    qkv = 3 * (d_in * d_out + (d_out if qkv_bias else 0))\n"
            "    return qkv + d_out * d_out + d_out\n"
        ),
        wrong=(
            wrong(
                "no-out-bias",
                counting(
                    "    return 3 * (d_in * d_out + (d_out if qkv_bias else 0)) "
                    "+ d_out * d_out\n"
                ),
                "the bias of out_proj (d_out numbers) is missing",
            ),
            wrong(
                "bias-always",
                counting(
                    "    return 3 * (d_in * d_out + d_out) + d_out * d_out + d_out\n"
                ),
                "three qkv biases are counted, but qkv_bias=False",
            ),
            wrong(
                "square",
                counting(
                    "    qkv = 3 * (d_out * d_out + (d_out if qkv_bias else 0))\n"
                    "    return qkv + d_out * d_out + d_out\n"
                ),
                "counted as d_out * d_out each",
            ),
            wrong(
                "per-head",
                counting(
                    "    qkv = 3 * (d_in * d_out + (d_out if qkv_bias else 0))\n"
                    "    return num_heads * qkv + d_out * d_out + d_out\n"
                ),
                "counted once per head",
            ),
            wrong(
                "no-return",
                counting(
                    "    qkv = 3 * (d_in * d_out + (d_out if qkv_bias else 0))\n"
                    "    total = qkv + d_out * d_out + d_out\n"
                ),
                "returned None",
                "forget to `return`",
            ),
        ),
    ),
    "ch05-ex-heads": Answers(
        right=heads("    return [h for h in range(1, d_out + 1) if d_out % h == 0]\n"),
        wrong=(
            wrong(
                "no-ends",
                heads("    return [h for h in range(2, d_out) if d_out % h == 0]\n"),
                "it misses [1, 8]",
                "1 and d_out itself are valid too",
            ),
            wrong(
                "non-divisors",
                heads("    return [h for h in range(1, d_out + 1) if d_out % h]\n"),
                "num_heads=3 does not divide d_out=8",
            ),
            wrong(
                "widths",
                heads(
                    "    counts = [h for h in range(1, d_out + 1) if d_out % h == 0]\n"
                    "    return [d_out // h for h in counts]  # the head widths\n"
                ),
                "list each once, in increasing order",
            ),
            wrong(
                "powers-of-two",
                heads("    return [2**i for i in range(d_out) if d_out % 2**i == 0]\n"),
                "for d_out=12",
                "it misses [3, 6, 12]",
            ),
            wrong(
                "up-to-16",
                heads("    return [h for h in range(1, 17) if d_out % h == 0]\n"),
                "for d_out=768",
                "it misses [24, 32",
            ),
        ),
    ),
    "ch05-ex-mha-mask": Answers(
        right="""
def to_mha_mask(mask):
    return ~mask
""",
        wrong=(
            wrong(
                "unchanged",
                "def to_mha_mask(mask):\n    return mask",
                "it is the input unchanged",
                "True as blocked",
            ),
            wrong(
                "in-place",
                "def to_mha_mask(mask):\n    return mask.logical_not_()",
                "changed its input mask",
                "in place",
            ),
            wrong(
                "additive",
                "def to_mha_mask(mask):\n"
                '    return torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))',
                "this exercise asks for a bool mask",
            ),
            wrong(
                "always-causal",
                "def to_mha_mask(mask):\n"
                "    return torch.ones_like(mask).triu(diagonal=1)",
                "on a random (5, 5) mask",
                "True must block exactly the keys the original mask forbids",
            ),
        ),
    ),
}
