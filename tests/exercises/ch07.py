"""Answers to the exercises of Chapter 7 (see tests/exercises/__init__.py)."""

from tests.exercises import Answers, wrong

NOTEBOOK = "07_positions.ipynb"


def rotate(body):
    """The answer cell of ch07-ex-rotate with the function body ``body``."""
    return f"def rotate_pair(pair, angle):\n    x, y = pair\n{body}"


def changed(**changes):
    """The answer cell of ch07-ex-swap with some predictions changed."""
    rows = {"no positions": {1, 3}, "causal mask": {1, 2, 3}, "rope": {0, 1, 2, 3, 4}}
    return f"changed = { ({**rows, **changes})!r}\n"


EIGHT = "[2 ** (-8 * h / 8) for h in range(1, 9)]"
SIXTEEN = "[2 ** (-8 * h / 16) for h in range(1, 17)]"

ANSWERS = {
    "ch07-ex-rotate": Answers(
        right=rotate(
            "    c, s = math.cos(angle), math.sin(angle)\n"
            "    return torch.stack([x * c - y * s, x * s + y * c])\n"
        ),
        wrong=(
            wrong(
                "clockwise",
                rotate(
                    "    c, s = math.cos(angle), math.sin(angle)\n"
                    "    return torch.stack([x * c + y * s, -x * s + y * c])\n"
                ),
                "turned the other way",
            ),
            wrong(
                "degrees",
                rotate(
                    "    a = math.radians(angle)\n"
                    "    return torch.stack([x * math.cos(a) - y * math.sin(a),\n"
                    "                        x * math.sin(a) + y * math.cos(a)])\n"
                ),
                "DEGREES",
            ),
            wrong(
                "cos-sin-swapped",
                rotate(
                    "    c, s = math.cos(angle), math.sin(angle)\n"
                    "    return torch.stack([x * s - y * c, x * c + y * s])\n"
                ),
                "swapped cos and sin",
            ),
            wrong(
                "no-mixing",
                rotate(
                    "    c = math.cos(angle)\n    return torch.stack([x * c, y * c])\n"
                ),
                "MIXES the two",
            ),
            wrong(
                "a-list",
                rotate(
                    "    c, s = math.cos(angle), math.sin(angle)\n"
                    "    return [x * c - y * s, x * s + y * c]\n"
                ),
                "expected a torch.Tensor, got list",
            ),
            wrong(
                "in-place",
                "def rotate_pair(pair, angle):\n"
                "    x, y = float(pair[0]), float(pair[1])\n"
                "    c, s = math.cos(angle), math.sin(angle)\n"
                "    pair[0], pair[1] = x * c - y * s, x * s + y * c\n"
                "    return pair\n",
                "changed its input pair",
                "in place",
            ),
        ),
    ),
    "ch07-ex-swap": Answers(
        right=changed(),
        wrong=(
            wrong(
                "nothing-changes",
                changed(**{"no positions": set()}),
                "'no positions'",
                "SET of all tokens",
            ),
            wrong(
                "causal-last-row",
                changed(**{"causal mask": {1, 2, 3, 4}}),
                "'causal mask'",
                "did its own token change",
            ),
            wrong(
                "rope-like-no-positions",
                changed(rope={1, 3}),
                "'rope'",
                "DISTANCE",
            ),
            wrong(
                "missing-key",
                'changed = {"no positions": {1, 3}, "causal mask": {1, 2, 3}}\n',
                "missing: ['rope']",
            ),
            wrong(
                "row-out-of-range",
                changed(rope={1, 2, 3, 4, 5}),
                "the rows are 0 to 4",
            ),
        ),
    ),
    "ch07-ex-slopes": Answers(
        right=f"slopes_12 = {EIGHT} + {SIXTEEN}[0::2][:4]\n",
        wrong=(
            wrong(
                "geometric-12",
                "slopes_12 = [2 ** (-8 * h / 12) for h in range(1, 13)]\n",
                "geometric formula with H = 12",
            ),
            wrong(
                "sorted",
                f"slopes_12 = sorted({EIGHT} + {SIXTEEN}[0::2][:4], reverse=True)\n",
                "You sorted the slopes",
            ),
            wrong(
                "first-four",
                f"slopes_12 = {EIGHT} + {SIXTEEN}[:4]\n",
                "take every other one",
            ),
            wrong(
                "odd-ones",
                f"slopes_12 = {EIGHT} + {SIXTEEN}[1::2][:4]\n",
                "starting with its second",
            ),
            wrong(
                "negative",
                f"slopes_12 = [-s for s in {EIGHT} + {SIXTEEN}[0::2][:4]]\n",
                "negative",
            ),
            wrong(
                "too-few",
                f"slopes_12 = {EIGHT}\n",
                "12 heads need 12 numbers",
            ),
        ),
    ),
}
