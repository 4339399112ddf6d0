"""Answers to the exercises of Chapter 3 (see tests/exercises/__init__.py)."""

from tests.exercises import Answers, wrong

NOTEBOOK = "03_causal_mask.ipynb"

# causal_attention with one line changed: {scores}, {mask} and {weights} are the
# lines that compute the scores, block the future and normalise.
_ATTENTION = """
def causal_attention(queries, keys, values):
    T = queries.shape[-2]
    scores = {scores}
    scores = {mask}
    {weights}
    return weights, weights @ values
"""
_SCORES = "queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5"
_MASK = 'scores.masked_fill(~attn_course.causal_mask(T), float("-inf"))'
_SOFTMAX = "weights = torch.softmax(scores, dim=-1)"


def _attention(scores=_SCORES, mask=_MASK, weights=_SOFTMAX):
    return _ATTENTION.format(scores=scores, mask=mask, weights=weights)


ANSWERS = {
    "ch03-ex-causal-mask": Answers(
        right="""
def my_causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool).tril()
""",
        wrong=(
            wrong(
                "upper",
                "def my_causal_mask(T):\n"
                "    return torch.ones(T, T, dtype=torch.bool).triu()",
                "this is the upper triangle",
            ),
            wrong(
                "no-diagonal",
                "def my_causal_mask(T):\n"
                "    return torch.ones(T, T, dtype=torch.bool).tril(diagonal=-1)",
                "the diagonal is False",
                "a token may attend to itself",
            ),
            wrong(
                "j-less-than-i",
                "def my_causal_mask(T):\n"
                "    i = torch.arange(T)[:, None]\n"
                "    j = torch.arange(T)[None, :]\n"
                "    return j < i",
                "the diagonal is False",
            ),
            wrong(
                "inverted",
                "def my_causal_mask(T):\n"
                "    return torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)",
                "your mask is inverted",
                "True must mean may attend",
            ),
            wrong(
                "float",
                "def my_causal_mask(T):\n    return torch.ones(T, T).tril()",
                "dtype is torch.float32, not bool",
            ),
        ),
    ),
    "ch03-ex-additive": Answers(
        right="""
def additive_causal_mask(T):
    future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
    return torch.zeros(T, T).masked_fill(future, float("-inf"))
""",
        wrong=(
            wrong(
                "times-inf",
                "def additive_causal_mask(T):\n"
                '    return torch.triu(torch.ones(T, T), diagonal=1) * float("-inf")',
                "it contains NaN",
                "0 * -inf = nan",
            ),
            wrong(
                "zero-one",
                "def additive_causal_mask(T):\n"
                "    return torch.triu(torch.ones(T, T), diagonal=1)",
                "it holds only 0 and 1",
            ),
            wrong(
                "inverted",
                "def additive_causal_mask(T):\n"
                "    allowed = torch.ones(T, T, dtype=torch.bool).tril()\n"
                '    return torch.zeros(T, T).masked_fill(allowed, float("-inf"))',
                "your mask is inverted",
            ),
            wrong(
                "diagonal-blocked",
                "def additive_causal_mask(T):\n"
                "    blocked = torch.ones(T, T, dtype=torch.bool).triu()\n"
                '    return torch.zeros(T, T).masked_fill(blocked, float("-inf"))',
                "the diagonal is blocked",
                "a token may attend to itself",
            ),
            wrong(
                "bool",
                "def additive_causal_mask(T):\n"
                "    return torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)",
                "dtype is torch.bool",
            ),
        ),
    ),
    "ch03-ex-bug": Answers(
        right=_attention(),
        wrong=(
            wrong(
                "buggy",
                "causal_attention = buggy_causal_attention",
                "your mask is inverted",
            ),
            wrong(
                "no-diagonal",
                _attention(
                    mask="scores.masked_fill(torch.ones(T, T, dtype=torch.bool)"
                    '.triu(), float("-inf"))'
                ),
                "your mask blocks the diagonal too",
                "A token may attend to itself",
            ),
            wrong(
                "j-less-than-i",
                _attention(
                    mask="scores.masked_fill(~(torch.arange(T)[None, :] < "
                    "torch.arange(T)[:, None]), -1e9)"
                ),
                "your mask blocks the diagonal too",
            ),
            wrong(
                "no-keepdim",
                _attention(weights="weights = scores.exp() / scores.exp().sum(dim=-1)"),
                "without keepdim=True",
            ),
            wrong(
                "no-keepdim-max",
                _attention(
                    weights="weights = torch.softmax("
                    "scores - scores.max(dim=-1).values, dim=-1)"
                ),
                "without keepdim=True",
            ),
            wrong(
                "no-transpose",
                _attention(scores="queries @ keys / keys.shape[-1] ** 0.5"),
                "raised RuntimeError",
                "a forgotten transpose?",
            ),
            wrong(
                "keys-T",
                _attention(scores="queries @ keys.T / keys.shape[-1] ** 0.5"),
                "raised RuntimeError on a batch",
                ".T on a tensor with a batch dimension",
            ),
            wrong(
                "no-scale",
                _attention(scores="queries @ keys.transpose(-2, -1)"),
                "no scaling",
            ),
            wrong(
                "times-inf",
                _attention(
                    mask='scores + torch.ones(T, T).triu(diagonal=1) * float("-inf")'
                ),
                "they contain NaN",
                "0 * -inf = nan",
            ),
        ),
    ),
}
