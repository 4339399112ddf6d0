"""Chapter 9's checks beyond their tables (tests/test_tables.py): the right answers
agree with the package, and in-place edits are caught."""

import torch

from attn_course import checks, kv_cache_numbers, sliding_window_mask
from attn_course.checks.efficient import DILATED, LARGEST_BATCH, ONLINE_STEP

from .answers import failure, online_softmax_step

INF = float("-inf")


def test_the_right_step_folds_into_logsumexp_even_on_a_row_masked_at_first():
    rows = 3 * torch.randn(4, 32, generator=torch.Generator().manual_seed(1))
    rows[0, :8] = rows[2, 5:11] = INF
    step = ONLINE_STEP.define(ONLINE_STEP.right)
    m, s = torch.full((4,), INF), torch.zeros(4)
    for block in rows.split(8, dim=-1):
        m, s = step(m, s, block)
    torch.testing.assert_close(m + s.log(), torch.logsumexp(rows, dim=-1))
    m, s = step(torch.full((1,), INF), torch.zeros(1), torch.full((1, 3), INF))
    assert m.item() == INF and s.item() == 0.0


def test_the_right_batch_counts_the_cache_as_the_package_does():
    right = LARGEST_BATCH.define(LARGEST_BATCH.right)
    for case in LARGEST_BATCH.all_cases():
        config, tokens, budget, size, window = case.args
        kept = tokens if window is None else min(tokens, window)
        head_dim = config.d_model // config.num_heads
        numbers = kv_cache_numbers(
            config.num_layers, config.num_kv_heads, head_dim, kept
        )
        assert right(*case.args) == budget // (numbers * size)


def test_a_dilation_of_1_is_the_sliding_window():
    mask = DILATED.define(DILATED.right)
    for T, window in [(8, 3), (5, 7), (1, 2)]:
        assert torch.equal(mask(T, window, 1), sliding_window_mask(T, window))


def test_changing_s_in_place_is_caught():
    def in_place(m, s, block):
        m_new, s_new = online_softmax_step(m, s, block)
        return m_new, s.copy_(s_new)

    message = failure(checks.check_online_step_fn, in_place)
    assert "changed its input s" in message and "instead of changing m or s" in message
