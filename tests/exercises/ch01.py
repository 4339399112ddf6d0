"""Answers to the exercises of Chapter 1 (see tests/exercises/__init__.py)."""

from tests.exercises import Answers, wrong

NOTEBOOK = "01_toy_attention.ipynb"

_STABLE = """
def stable_softmax(x):
    shifted = x - x.max(dim=-1, keepdim=True).values
    return torch.exp(shifted) / torch.exp(shifted).sum(dim=-1, keepdim=True)
"""


def _softmax(shift, total="exps.sum(dim=-1, keepdim=True)"):
    """A softmax answer that subtracts ``shift`` and divides by ``total``."""
    return f"""
def stable_softmax(x):
    exps = torch.exp(x - {shift})
    return exps / {total}
"""


_ATTENTION = """
def attention(inputs):
    weights = torch.softmax(inputs @ inputs.T, dim=-1)
    return weights, weights @ inputs
"""

ANSWERS = {
    "ch01-ex-sun": Answers(
        right="""
E = attn_course.hello_shiny_sun().embeddings
context_sun = torch.softmax(E @ E[2], dim=-1) @ E
""",
        wrong=(
            wrong(
                "no-softmax",
                "E = attn_course.hello_shiny_sun().embeddings\n"
                "context_sun = (E @ E[2]) @ E",
                "values are off",
                "raw scores",
                "torch.softmax(scores, dim=-1)",
            ),
            wrong(
                "query-1",
                "E = attn_course.hello_shiny_sun().embeddings\n"
                "context_sun = torch.softmax(E @ E[1], dim=-1) @ E",
                "context vector of query 1",
                "Python counts from 0",
            ),
            wrong(
                "weights-only",
                "E = attn_course.hello_shiny_sun().embeddings\n"
                "context_sun = torch.softmax(E @ E[2], dim=-1)",
                "is the attention weights, not the context vector",
            ),
            wrong(
                "sum-normalised",
                "E = attn_course.hello_shiny_sun().embeddings\n"
                "s = E @ E[2]\n"
                "context_sun = (s / s.sum()) @ E",
                "scores divided by their sum",
            ),
            wrong(
                "scaled",
                "E = attn_course.hello_shiny_sun().embeddings\n"
                "context_sun = torch.softmax(E @ E[2] / math.sqrt(3), dim=-1) @ E",
                "*scaled* attention",
            ),
        ),
    ),
    "ch01-ex-softmax": Answers(
        right=_STABLE,
        wrong=(
            wrong(
                "row-min",
                _softmax("x.min(dim=-1, keepdim=True).values"),
                "spread over [0, 100]",
                "subtracting each row's minimum",
            ),
            wrong(
                "global-max",
                _softmax("x.max()"),
                "rows differ in magnitude",
                "maximum of the whole tensor",
            ),
            wrong(
                "no-keepdim",
                _softmax("x.max(dim=-1).values"),
                "raised RuntimeError",
                "without keepdim=True",
            ),
            wrong(
                "naive",
                _softmax("0.0"),
                "large scores",
                "overflows",
            ),
            wrong(
                "whole-sum",
                _softmax("x.max(dim=-1, keepdim=True).values", "exps.sum()"),
                "sum over the whole tensor",
            ),
        ),
    ),
    "ch01-ex-attention": Answers(
        right=_ATTENTION,
        wrong=(
            wrong(
                "swapped",
                """
def attention(inputs):
    weights = torch.softmax(inputs @ inputs.T, dim=-1)
    return weights @ inputs, weights
""",
                "the pair in the wrong order",
                "return weights, context",
            ),
            wrong(
                "dim-0",
                """
def attention(inputs):
    weights = torch.softmax(inputs @ inputs.T, dim=0)
    return weights, weights @ inputs
""",
                "columns sum to 1",
                "dim=-1",
            ),
            wrong(
                "scaled",
                """
def attention(inputs):
    scores = inputs @ inputs.T / math.sqrt(inputs.shape[-1])
    weights = torch.softmax(scores, dim=-1)
    return weights, weights @ inputs
""",
                "*scaled* attention",
            ),
            wrong(
                "context-only",
                """
def attention(inputs):
    weights = torch.softmax(inputs @ inputs.T, dim=-1)
    return weights @ inputs
""",
                "should return a pair (weights, context)",
            ),
        ),
    ),
    "ch01-ex-temperature": Answers(
        right="""
X_doubled = 2 * X
weights_doubled = torch.softmax(X_doubled @ X_doubled[1], dim=-1)
tau_same = 0.25
""",
        wrong=(
            wrong(
                "not-doubled",
                "weights_doubled = torch.softmax(X @ X[1], dim=-1)\ntau_same = 0.25",
                "weights of the original embeddings",
            ),
            wrong(
                "query-only",
                "weights_doubled = torch.softmax(X @ (2 * X[1]), dim=-1)\n"
                "tau_same = 0.5",
                "scaled only the query or only the keys",
            ),
            wrong(
                "tau-half",
                """
X_doubled = 2 * X
weights_doubled = torch.softmax(X_doubled @ X_doubled[1], dim=-1)
tau_same = 0.5
""",
                "tau_same = 0.5 is off",
                "each score gets 2 twice",
            ),
            wrong(
                "tau-four",
                """
X_doubled = 2 * X
weights_doubled = torch.softmax(X_doubled @ X_doubled[1], dim=-1)
tau_same = 4
""",
                "tau_same = 4 is off",
                "divided by the temperature",
            ),
            wrong(
                "context",
                """
X_doubled = 2 * X
weights_doubled = torch.softmax(X_doubled @ X_doubled[1], dim=-1) @ X
tau_same = 0.25
""",
                "not the context vector",
            ),
        ),
    ),
}
