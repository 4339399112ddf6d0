"""Answers to the exercises of Chapter 6 (see tests/exercises/__init__.py)."""

from tests.exercises import Answers, wrong

NOTEBOOK = "06_encoder_decoder.ipynb"

SHAPES = {
    "W_query": (64, 64),
    "W_key": (64, 96),
    "W_value": (64, 96),
    "out_proj": (64, 64),
    "weights": (3, 4, 5, 7),
    "output": (3, 5, 64),
    "num_parameters": 64 * 64 + 2 * 64 * 96 + 64 * 64 + 64,
}


def cross_shapes(**changes):
    """The answer cell of ch06-ex-shapes with some predictions changed."""
    return f"cross_shapes = { ({**SHAPES, **changes})!r}\n"


def mask(body):
    """The answer cell of ch06-ex-cross-mask with the function body ``body``."""
    return f"def cross_attention_mask(src, T_t):\n{body}"


CHANGE_LAST = """
def sees_the_future(model, src, tgt_in):
    changed = tgt_in.clone()
    changed[:, -1] = (changed[:, -1] - 2) % 10 + 3  # another real token
    with torch.no_grad():
        before, after = model(src, tgt_in), model(src, changed)
"""

ANSWERS = {
    "ch06-ex-cross-mask": Answers(
        right=mask("    return (src != 0)[:, None, None, :]\n"),
        wrong=(
            wrong(
                "two-d",
                mask("    return src != 0\n"),
                "does not broadcast to the scores shape",
                "mask[:, None, None, :]",
            ),
            wrong(
                "inverted",
                mask("    return (src == 0)[:, None, None, :]\n"),
                "your mask is inverted",
            ),
            wrong(
                "float",
                mask("    return (src != 0).float()[:, None, None, :]\n"),
                "not bool",
            ),
            wrong(
                "no-return",
                mask("    real = (src != 0)[:, None, None, :]\n"),
                "got None",
                "forget a `return`",
            ),
        ),
    ),
    "ch06-ex-shapes": Answers(
        right=cross_shapes(),
        wrong=(
            wrong(
                "linear-transposed",
                cross_shapes(W_key=(96, 64), W_value=(96, 64)),
                "2 of 7 predictions are wrong",
                "'W_key': you predicted (96, 64)",
                "(out_features, in_features)",
            ),
            wrong(
                "keys-from-queries",
                cross_shapes(W_key=(64, 64), W_value=(64, 64), num_parameters=16448),
                "dimension 1 (d_memory) is too low",
                "computed from the memory",
                "'num_parameters': 16448 is too low",
                "d_out * d_memory weights",
            ),
            wrong(
                "keys-by-queries",
                cross_shapes(weights=(3, 4, 7, 5), output=(3, 7, 64)),
                "Rows are queries",
                "one output vector per query",
            ),
            wrong(
                "no-bias",
                cross_shapes(num_parameters=64 * 64 + 2 * 64 * 96 + 64 * 64),
                "1 of 7 predictions are wrong",
                "weight matrices only",
            ),
        ),
    ),
    "ch06-ex-leak": Answers(
        right=CHANGE_LAST
        + "    return not torch.equal(before[:, :-1], after[:, :-1])\n",
        wrong=(
            wrong(
                "all-positions",
                CHANGE_LAST + "    return not torch.equal(before, after)\n",
                "it flagged the causal decoder",
                "compare only the positions before it",
            ),
            wrong(
                "inverted",
                CHANGE_LAST + "    return torch.equal(before[:, :-1], after[:, :-1])\n",
                "your answers are the wrong way round",
            ),
            wrong(
                "in-place",
                """
def sees_the_future(model, src, tgt_in):
    before = model(src, tgt_in)
    tgt_in[:, -1] = (tgt_in[:, -1] - 2) % 10 + 3
    return not torch.equal(before[:, :-1], model(src, tgt_in)[:, :-1])
""",
                "changed its input tgt_in",
                "in place",
            ),
            wrong(
                "first-token",
                """
def sees_the_future(model, src, tgt_in):
    changed = tgt_in.clone()
    changed[:, 0] = (changed[:, 0] - 2) % 10 + 3
    before, after = model(src, tgt_in), model(src, changed)
    return not torch.equal(before[:, :0], after[:, :0])
""",
                "missed a decoder that sees the future",
            ),
        ),
    ),
}
