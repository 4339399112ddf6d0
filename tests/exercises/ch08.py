"""Answers to the exercises of Chapter 8 (see tests/exercises/__init__.py)."""

from attn_course.checks.gpt import GPT_PARAMETERS, MAKE_EXAMPLE, TOP_K
from tests.exercises import from_table

NOTEBOOK = "08_gpt.ipynb"

ANSWERS = {
    "ch08-ex-params": from_table(
        GPT_PARAMETERS,
        "# Your answer: the number of parameters of GPT(GPTConfig(vocab_size=V,\n"
        "# context_length=T, d_model=D, num_layers=L)), all other settings default.\n",
    ),
    "ch08-ex-shift": from_table(
        MAKE_EXAMPLE,
        "# Your answer: return the pair (inputs, targets): the window of T ids that "
        "starts\n# at position `start` of `ids` (a 1-D tensor), and the id the model "
        "must predict at\n# each of its positions.\n",
    ),
    "ch08-ex-topk": from_table(
        TOP_K,
        "# Your answer: logits (B, V) -> the same logits with every entry outside the "
        "k\n# largest of its row set to -inf. Leave the logits you were given "
        "unchanged.\n",
    ),
}
