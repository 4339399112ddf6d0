"""Answers to the exercises of Chapter 8 (see tests/exercises/__init__.py)."""

from tests.exercises import Answers, wrong

NOTEBOOK = "08_gpt.ipynb"

# The chapter's model, the configuration each check's message quotes first; the
# amounts the messages name are worked out from it here.
V, T, D, L = 103, 64, 96, 4
D_FF = 4 * D


def params(body):
    """The answer cell of ch08-ex-params with the function body ``body``."""
    return (
        "# Your answer: the number of parameters of GPT(GPTConfig(vocab_size=V,\n"
        "# context_length=T, d_model=D, num_layers=L)), all other settings default.\n"
        f"def gpt_parameters(V, T, D, L):\n{body}"
    )


def example(inputs, targets):
    """The answer cell of ch08-ex-shift with these two expressions."""
    return (
        "# Your answer: the window of T ids that starts at position `start` of `ids`\n"
        "# (a 1-D tensor), and the id the model must predict at each of its "
        "positions.\n"
        "def make_example(ids, start, T):\n"
        f"    inputs = {inputs}\n"
        f"    targets = {targets}\n"
        "    return inputs, targets\n"
    )


def top_k(body):
    """The answer cell of ch08-ex-topk with the function body ``body``."""
    return (
        "# Your answer: logits (B, V) -> the same logits with every entry outside "
        "the k\n"
        "# largest of its row set to -inf. Leave the logits you were given "
        "unchanged.\n"
        f"def top_k_logits(logits, k):\n{body}"
    )


KTH = "    kth = torch.topk(logits, k, dim=-1).values[:, -1:]  # (B, 1)\n"

ANSWERS = {
    "ch08-ex-params": Answers(
        right=params(
            "    block = 4 * D * D + D + 8 * D * D + 5 * D + 4 * D\n"
            "    return V * D + T * D + L * block + 2 * D\n"
        ),
        wrong=(
            wrong(
                "untied-output",
                params(
                    "    block = 12 * D * D + 10 * D\n"
                    "    return V * D + T * D + L * block + 2 * D + D * V\n"
                ),
                f"the output layer is counted on its own (+{V * D:,}: V * D)",
                "weight tying",
            ),
            wrong(
                "no-positions",
                params("    return V * D + L * (12 * D * D + 10 * D) + 2 * D\n"),
                f"the position table is missing (-{T * D:,}: T * D)",
            ),
            wrong(
                "no-layer-norms",
                params("    return V * D + T * D + L * (12 * D * D + 6 * D)\n"),
                f"the two LayerNorms of every block are missing (-{L * 2 * 2 * D:,}",
                f"the final LayerNorm, after the last block, is missing (-{2 * D:,}",
            ),
            wrong(
                "no-feed-forward-biases",
                params(
                    "    attention = 4 * D * D + D\n"
                    "    feed_forward = 2 * D * 4 * D\n"
                    "    return V * D + T * D + L * (attention + feed_forward + 4 * D)"
                    " + 2 * D\n"
                ),
                "the biases of the two feed-forward layers are missing "
                f"(-{L * (D_FF + D):,}",
            ),
            wrong(
                "qkv-biases",
                params(
                    "    attention = 4 * D * D + 4 * D\n"
                    "    feed_forward = 8 * D * D + 5 * D\n"
                    "    return V * D + T * D + L * (attention + feed_forward + 4 * D)"
                    " + 2 * D\n"
                ),
                f"query, key and value biases are counted (+{L * 3 * D:,}",
                "qkv_bias=False",
            ),
            wrong(
                "d-ff-2D",
                params(
                    "    d_ff = 2 * D\n"
                    "    feed_forward = 2 * D * d_ff + d_ff + D\n"
                    "    block = 4 * D * D + D + feed_forward + 4 * D\n"
                    "    return V * D + T * D + L * block + 2 * D\n"
                ),
                f"taken as 2 * D (-{L * (2 * D + 1) * (D_FF - 2 * D):,}",
                "d_ff = 4 * D",
            ),
        ),
    ),
    "ch08-ex-shift": Answers(
        right=example("ids[start:start + T]", "ids[start + 1:start + T + 1]"),
        wrong=(
            wrong(
                "no-shift",
                example("ids[start:start + T]", "ids[start:start + T]"),
                "your targets",
                "the inputs themselves, with no shift",
            ),
            wrong(
                "shifted-back",
                example("ids[start:start + T]", "ids[start - 1:start + T - 1]"),
                "shifted the wrong way",
            ),
            wrong(
                "window-too-long",
                example("ids[start:start + T + 1]", "ids[start + 1:start + T + 2]"),
                "your inputs",
                "one too many",
                "the end index is not included",
            ),
            wrong(
                "last-id-only",
                example("ids[start:start + T]", "ids[start + T]"),
                "a single id",
                "not only the id after the window",
            ),
            wrong(
                "int32-targets",
                example("ids[start:start + T]", "ids[start + 1:start + T + 1].int()"),
                "your targets",
                "dtype torch.int32",
                "F.cross_entropy",
            ),
            wrong(
                "one-tensor",
                "# Your answer: the window of T ids that starts at position `start` "
                "of `ids`\n"
                "# (a 1-D tensor), and the id the model must predict at each of its "
                "positions.\n"
                "def make_example(ids, start, T):\n"
                "    inputs = ids[start:start + T]\n"
                "    targets = ids[start + 1:start + T + 1]\n"
                "    return torch.stack([inputs, targets])\n",
                "should return a pair (inputs, targets)",
                "a tensor of shape (2, 6)",
            ),
        ),
    ),
    "ch08-ex-topk": Answers(
        right=top_k(
            KTH + '    return logits.masked_fill(logits < kth, float("-inf"))\n'
        ),
        wrong=(
            wrong(
                "smallest",
                top_k(
                    "    kth = torch.topk(logits, k, dim=-1, largest=False)"
                    ".values[:, -1:]\n"
                    '    return logits.masked_fill(logits > kth, float("-inf"))\n'
                ),
                "k SMALLEST",
            ),
            wrong(
                "fill-zero",
                top_k(KTH + "    return logits.masked_fill(logits < kth, 0.0)\n"),
                "0 is a normal logit",
                "exactly 0",
            ),
            wrong(
                "fill-large-negative",
                top_k(KTH + "    return logits.masked_fill(logits < kth, -1e9)\n"),
                "large negative number instead of -inf",
            ),
            wrong(
                "whole-batch",
                top_k(
                    "    kth = torch.topk(logits.flatten(), k).values[-1]\n"
                    '    return logits.masked_fill(logits < kth, float("-inf"))\n'
                ),
                "whole BATCH",
            ),
            wrong(
                "in-place",
                top_k(
                    KTH
                    + '    return logits.masked_fill_(logits < kth, float("-inf"))\n'
                ),
                "changed its input logits",
                "in place",
            ),
            wrong(
                "no-keepdim",
                top_k(
                    "    kth = torch.topk(logits, k, dim=-1).values[:, -1]\n"
                    '    return logits.masked_fill(logits < kth, float("-inf"))\n'
                ),
                "top_k_logits raised RuntimeError",
                ".values[:, -1:] of shape (B, 1)",
            ),
        ),
    ),
}
