"""Answers to the exercises of Chapter 10 (see tests/exercises/__init__.py)."""

import math

from tests.exercises import Answers, wrong

NOTEBOOK = "10_history.ipynb"

# The first case of each kind in check_path_length_fn, the one its messages quote
# for these answers: a recurrent layer over 7 positions, a convolution of width 3
# over 13, attention over 64; the numbers the messages name are worked out here.
RNN_DISTANCE = 7
CNN_DISTANCE, KERNEL = 13, 3
ATTENTION_DISTANCE = 64
REACH = KERNEL - 1  # positions one convolution layer moves the information
FIRST_RNN = f'path_length("rnn", {RNN_DISTANCE})'
FIRST_CNN = f'path_length("cnn", {CNN_DISTANCE}, {KERNEL})'
FIRST_ATTENTION = f'path_length("attention", {ATTENTION_DISTANCE})'
AT_ZERO = 'path_length("attention", 0)'
# Additive scores: B = 3 sentences, T_s = 5 keys, d_q = 4, d_k = 6, d_a = 8.
B, T_S, D_Q, D_K, D_A = 3, 5, 4, 6, 8
FIRST_SCORES = f"B = {B}, T_s = {T_S} keys, d_q = {D_Q}, d_k = {D_K}, d_a = {D_A}"
# The parameters of three scores: d_q = 6, d_k = 10, d_a = 8 first, then the first
# case with d_q = d_k, 32.
Q, K, A = 6, 10, 8
EQUAL = 32
FIRST_COUNTS = f"for d_q = {Q}, d_k = {K}, d_a = {A}, your"


def path(body):
    """The answer cell of ch10-ex-path with the function body ``body``."""
    return (
        '# Your answer: the fewest sequential steps (kind="rnn") or layers ("cnn",\n'
        '# "attention") between two tokens `distance` positions apart, as an int.\n'
        '# kernel_size: the width of the causal convolution, used by "cnn" only.\n'
        f"def path_length(kind, distance, kernel_size=None):\n{body}"
    )


def rules(
    *,
    rnn="distance",
    cnn="math.ceil(distance / (kernel_size - 1))",
    attention="1",
    attention_first=False,
):
    """A body of path_length: 0 at distance 0, then one return per kind (the
    attention's before the distance-0 rule when ``attention_first``)."""
    zero = "    if distance == 0:\n        return 0\n"
    first = f'    if kind == "attention":\n        return {attention}\n'
    rest = (
        f'    if kind == "rnn":\n        return {rnn}\n'
        f'    if kind == "cnn":\n        return {cnn}\n'
    )
    if attention_first:
        return (
            first
            + zero
            + f'    if kind == "rnn":\n        return {rnn}\n'
            + (f"    return {cnn}\n")
        )
    return zero + rest + f"    return {attention}\n"


def scores(body):
    """The answer cell of ch10-ex-additive with the function body ``body``."""
    return (
        "# Your answer: the additive scores, shape (B, T_s), before any softmax.\n"
        "# query: (B, d_q), keys: (B, T_s, d_k), W_query: (d_q, d_a), W_key: "
        "(d_k, d_a),\n"
        "# v: (d_a,).\n"
        f"def additive_scores(query, keys, W_query, W_key, v):\n{body}"
    )


Q_TERM = "    q = (query @ W_query)[:, None, :]  # (B, 1, d_a)\n"
K_TERM = "    k = keys @ W_key  # (B, T_s, d_a)\n"


def counts(body):
    """The answer cell of ch10-ex-params with the function body ``body``."""
    return (
        "# Your answer: a dict with the learned parameters of three scores of a "
        "query of\n"
        '# d_q numbers against a key of d_k numbers: "additive" (a hidden layer of '
        "d_a\n"
        '# units), "general" (q^T W k) and "dot" (None when d_q != d_k). No biases.\n'
        f"def scoring_parameters(d_q, d_k, d_a):\n{body}"
    )


def entries(
    additive="d_a * (d_q + d_k + 1)",
    general="d_q * d_k",
    dot="0 if d_q == d_k else None",
):
    """A body of scoring_parameters returning these three counts (a count of None
    leaves its key out)."""
    items = {"additive": additive, "general": general, "dot": dot}
    lines = "".join(
        f'        "{key}": {value},\n' for key, value in items.items() if value
    )
    return f"    return {{\n{lines}    }}\n"


ANSWERS = {
    "ch10-ex-path": Answers(
        right=path(rules()),
        wrong=(
            wrong(
                "rnn-plus-one",
                path(rules(rnn="distance + 1")),
                f"{FIRST_RNN} returned {RNN_DISTANCE + 1}, too high",
                "This is distance + 1",
            ),
            wrong(
                "divided-by-the-kernel",
                path(rules(cnn="math.ceil(distance / kernel_size)")),
                f"{FIRST_CNN} returned {math.ceil(CNN_DISTANCE / KERNEL)}, too low",
                "share a position",
                f"kernel_size - 1 = {REACH} positions",
            ),
            wrong(
                "rounded-down",
                path(rules(cnn="distance // (kernel_size - 1)")),
                f"{FIRST_CNN} returned {CNN_DISTANCE // REACH}, too low",
                "This rounds down",
            ),
            wrong(
                "dilated",
                path(rules(cnn="math.ceil(math.log(distance, kernel_size))")),
                f"{FIRST_CNN} returned {math.ceil(math.log(CNN_DISTANCE, KERNEL))}",
                "DILATED",
                f"ceil(d / {REACH}) layers",
            ),
            wrong(
                "attention-zero",
                path(rules(attention="0")),
                f"{FIRST_ATTENTION} returned 0, too low",
                "Attention returned 0 for distance > 0",
            ),
            wrong(
                "attention-one-at-zero",
                path(rules(attention="1", attention_first=True)),
                f"{AT_ZERO} returned 1, too high",
                "Attention returned 1 at distance 0",
            ),
            wrong(
                "a-float",
                path(
                    rules(cnn="torch.ceil(torch.tensor(distance / (kernel_size - 1)))")
                ),
                f"{FIRST_CNN} returned {float(math.ceil(CNN_DISTANCE / REACH))}, "
                "the right number as a float",
                "return an int",
            ),
        ),
    ),
    "ch10-ex-additive": Answers(
        right=scores(Q_TERM + K_TERM + "    return torch.tanh(q + k) @ v\n"),
        wrong=(
            wrong(
                "no-tanh",
                scores(Q_TERM + K_TERM + "    return (q + k) @ v\n"),
                FIRST_SCORES,
                "tanh is missing",
            ),
            wrong(
                "v-before-tanh",
                scores(Q_TERM + K_TERM + "    return torch.tanh((q + k) @ v)\n"),
                FIRST_SCORES,
                "v is applied before tanh",
            ),
            wrong(
                "not-broadcast",
                scores("    return torch.tanh(query @ W_query + keys @ W_key) @ v\n"),
                "additive_scores raised RuntimeError",
                f"query @ W_query has shape ({B}, {D_A})",
                "the query is not broadcast over the keys",
            ),
            wrong(
                "multiplied",
                scores(Q_TERM + K_TERM + "    return torch.tanh(q * k) @ v\n"),
                "are multiplied, as in a dot product",
            ),
            wrong(
                "softmax",
                scores(
                    Q_TERM + K_TERM + "    return torch.softmax(torch.tanh(q + k) @ v, "
                    "dim=-1)\n"
                ),
                "These are the attention weights",
            ),
            wrong(
                "w-query-for-the-keys",
                scores(Q_TERM + "    return torch.tanh(q + keys @ W_query) @ v\n"),
                f"W_query ({D_Q}, {D_A}) is used on the keys",
                f"d_k = {D_K}",
            ),
            wrong(
                "not-squeezed",
                scores(Q_TERM + K_TERM + "    return torch.tanh(q + k) @ v[:, None]\n"),
                f"wrong shape ({B}, {T_S}, 1)",
                ".squeeze(-1)",
            ),
        ),
    ),
    "ch10-ex-params": Answers(
        right=counts(entries()),
        wrong=(
            wrong(
                "no-v",
                counts(entries(additive="d_a * (d_q + d_k)")),
                f"{FIRST_COUNTS} 'additive' is {A * (Q + K)}, too low",
                "v is missing",
            ),
            wrong(
                "biases",
                counts(entries(additive="d_a * (d_q + d_k + 1) + 2 * d_a + 1")),
                f"'additive' is {A * (Q + K + 1) + 2 * A + 1}, too high",
                "Biases are counted",
            ),
            wrong(
                "twice",
                counts(entries(additive="d_a * (d_q + d_k) * 2")),
                f"'additive' is {A * (Q + K) * 2}, too high",
                "Each matrix is counted twice",
            ),
            wrong(
                "dot-as-general",
                counts(entries(dot="d_q * d_k")),
                f"{FIRST_COUNTS} 'dot' is {Q * K}",
                "the general score's matrix",
            ),
            wrong(
                "dot-always-zero",
                counts(entries(dot="0")),
                f"{FIRST_COUNTS} 'dot' is 0",
                f"With d_q = {Q} and d_k = {K} there is no dot product",
            ),
            wrong(
                "dot-always-none",
                counts(entries(dot="None")),
                f"for d_q = d_k = {EQUAL}",
                "the dot product exists",
            ),
            wrong(
                "missing-key",
                counts(entries(dot="")),
                "your dict has no key 'dot'",
            ),
        ),
    ),
}
