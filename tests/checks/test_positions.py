"""What the tables of Chapter 7 (tests/test_tables.py) leave out: the reference of
the swap exercise, checked on a real attention head, and wrong calls."""

import pytest
import torch

from attn_course import apply_rope, causal_mask, checks
from attn_course.checks.positions import ROWS


def head(x, *, causal, rope):
    """One attention head with fixed random weights on the tokens x, (T, D)."""
    generator = torch.Generator().manual_seed(7)
    W_query, W_key, W_value = torch.randn(3, 8, 8, generator=generator).double()
    queries, keys = x @ W_query, x @ W_key
    if rope:
        queries, keys = apply_rope(queries), apply_rope(keys)
    scores = queries @ keys.T / 8**0.5
    if causal:
        scores = scores.masked_fill(~causal_mask(len(x)), float("-inf"))
    return torch.softmax(scores, dim=-1) @ (x @ W_value)


@pytest.mark.parametrize(("T", "swap"), [(5, (1, 3)), (6, (0, 5)), (4, (2, 1))])
def test_the_rows_of_the_table_are_those_that_change(T, swap):
    x = torch.randn(T, 8, generator=torch.Generator().manual_seed(0)).double()
    order = list(range(T))
    order[swap[0]], order[swap[1]] = swap[1], swap[0]
    right = ROWS.define(ROWS.right)
    for key in ("no positions", "causal mask", "rope"):
        kind = {"causal": key == "causal mask", "rope": key == "rope"}
        before, after = head(x, **kind), head(x[order], **kind)
        same = torch.isclose(before, after, rtol=0, atol=1e-12).all(dim=-1)
        changed = {t for t in range(T) if not same[t]}
        assert right(key, T, swap) == changed, key


def test_a_wrong_call_or_answer_is_explained():
    with pytest.raises(ValueError, match="two different positions below 5"):
        checks.check_changed_rows({}, swap=(2, 2))
    with pytest.raises(AssertionError, match="12 heads need 12 numbers"):
        checks.check_alibi_slopes([0.5] * 8, num_heads=12)
