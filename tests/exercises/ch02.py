"""Answers to the exercises of Chapter 2 (see tests/exercises/__init__.py)."""

from tests.exercises import Answers, wrong

NOTEBOOK = "02_trainable_weights.ipynb"

_W_Q = "W_q = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])\n"
_W_K = "W_k = torch.tensor([[0.0, 1.0], [1.0, 0.0], [0.0, 0.0]])\n"
_W_V = "W_v = torch.tensor([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]])\n"


def _journey(
    scores="keys_j @ q_j / math.sqrt(2)", mix="X @ W_v", *, W_q=_W_Q, W_k=_W_K
):
    """A journey answer with the given scores and mixed vectors."""
    return (
        W_q
        + W_k
        + _W_V
        + "q_j, keys_j = X[1] @ W_q, X @ W_k\n"
        + f"weights_j = torch.softmax({scores}, dim=0)\n"
        + f"context_journey = weights_j @ ({mix})\n"
    )


def _v1(copy="weight.T", *, roles='("W_query", "W_key", "W_value")', no_grad=True):
    """A v1_from_v2 answer that copies ``copy`` of each of ``roles`` in turn."""
    block = "    with torch.no_grad():\n" if no_grad else "    if True:\n"
    return f"""
def v1_from_v2(sa_v2):
    sa_v1 = SelfAttentionV1(sa_v2.d_in, sa_v2.d_out)
{block}        for name, role in zip(("W_query", "W_key", "W_value"), {roles}):
            weight = getattr(sa_v2, role).weight
            getattr(sa_v1, name).copy_({copy})
    return sa_v1
"""


def _scaled(scores, weights="torch.softmax(scores / math.sqrt(d_k), dim=-1)"):
    """A scaled_attention answer with the given scores and weights."""
    return f"""
def scaled_attention(queries, keys, values):
    d_k = keys.shape[-1]
    scores = {scores}
    weights = {weights}
    return weights, weights @ values
"""


_RIGHT_SCORES = "queries @ keys.transpose(-2, -1)"

ANSWERS = {
    "ch02-ex-journey": Answers(
        right=_journey(),
        wrong=(
            wrong(
                "typo-W_q",
                _journey(
                    W_q="W_q = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])\n"
                ),
                "your W_q differs from the W_q the exercise gives",
                "entry [2, 1]",
            ),
            wrong(
                "typo-W_k",
                _journey(
                    W_k="W_k = torch.tensor([[0.0, 1.0], [0.0, 1.0], [0.0, 0.0]])\n"
                ),
                "your W_k differs",
                "entry [1, 0]",
            ),
            wrong(
                "no-scale",
                _journey("keys_j @ q_j"),
                "matches no scaling",
                "sqrt(d_k)",
            ),
            wrong(
                "by-d_k",
                _journey("keys_j @ q_j / 2"),
                "divided by d_k = 2 instead of by sqrt(d_k)",
            ),
            wrong(
                "mixes-keys",
                _journey(mix="keys_j"),
                "mixes the keys",
            ),
        ),
    ),
    "ch02-ex-v1-from-v2": Answers(
        right=_v1(),
        wrong=(
            wrong(
                "no-transpose",
                _v1("weight"),
                "raised RuntimeError",
                "nn.Linear stores its weight as (d_out, d_in)",
                "copy weight.T",
            ),
            wrong(
                "no-no_grad",
                _v1(no_grad=False),
                "in-place change",
                "with torch.no_grad():",
            ),
            wrong(
                "swapped-roles",
                _v1(roles='("W_key", "W_query", "W_value")'),
                "your W_query",
                "It holds V2's W_key instead",
            ),
            wrong(
                "assigns-tensor",
                """
def v1_from_v2(sa_v2):
    sa_v1 = SelfAttentionV1(sa_v2.d_in, sa_v2.d_out)
    sa_v1.W_query = sa_v2.W_query.weight.T
    sa_v1.W_key = sa_v2.W_key.weight.T
    sa_v1.W_value = sa_v2.W_value.weight.T
    return sa_v1
""",
                "raised TypeError",
                "can only be replaced by an nn.Parameter",
            ),
            wrong(
                "returns-v2",
                "def v1_from_v2(sa_v2):\n    return sa_v2\n",
                "returned the SelfAttentionV2 it was given",
            ),
        ),
    ),
    "ch02-ex-variance": Answers(
        right="predicted_variance = 64 * 0.5**2 * 0.5**2\nscale = 0.5",
        wrong=(
            wrong(
                "unit-entries",
                "predicted_variance = 64.0\nscale = 1 / math.sqrt(64)",
                "predicted_variance 64 is off",
                "the variance for entries of variance 1",
            ),
            wrong(
                "one-factor",
                "predicted_variance = 64 * 0.5**2\nscale = 0.25",
                "one factor std**2",
            ),
            wrong(
                "std-not-var",
                "predicted_variance = 2.0\nscale = 0.5",
                "the standard deviation of q . k",
            ),
            wrong(
                "sqrt-d_k-scale",
                "predicted_variance = 4.0\nscale = 1 / math.sqrt(64)",
                "your scale 0.125 is off",
                "1 / sqrt(d_k)",
            ),
            wrong(
                "divides-by-var",
                "predicted_variance = 4.0\nscale = 1 / 4.0",
                "divides by the variance",
            ),
        ),
    ),
    "ch02-ex-scaled": Answers(
        right=_scaled(_RIGHT_SCORES),
        wrong=(
            wrong(
                "after-softmax",
                _scaled(
                    _RIGHT_SCORES,
                    "torch.softmax(scores, dim=-1) / math.sqrt(d_k)",
                ),
                "You scaled after the softmax",
            ),
            wrong(
                "no-transpose",
                _scaled("queries @ keys"),
                "raised RuntimeError",
                "a forgotten transpose?",
            ),
            wrong(
                "keys.T",
                _scaled("queries @ keys.T"),
                "on a batch",
                "keys.T on a batch reverses every dimension",
                "keys.transpose(-2, -1)",
            ),
            wrong(
                "sqrt-d_v",
                _scaled(
                    _RIGHT_SCORES,
                    "torch.softmax(scores / math.sqrt(values.shape[-1]), dim=-1)",
                ),
                "sqrt(d_v) = sqrt(3)",
            ),
            wrong(
                "swapped",
                """
def scaled_attention(queries, keys, values):
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[-1])
    weights = torch.softmax(scores, dim=-1)
    return weights @ values, weights
""",
                "the pair in the wrong order",
            ),
        ),
    ),
}
