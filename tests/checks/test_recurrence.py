"""Chapter 12's checks beyond their tables (tests/test_tables.py): the right answers
agree with plain loops over the numbers."""

import torch

from attn_course.checks.recurrence import DELTA_STEP, LINEAR_STEP, NUMBERS_KEPT


def test_the_right_linear_step_adds_v_times_k_entry_by_entry():
    linear_step = LINEAR_STEP.define(LINEAR_STEP.right)
    for case in LINEAR_STEP.all_cases():
        state, k, v = (a.double() for a in case.args)
        expected = state.clone()
        for i in range(v.numel()):
            for j in range(k.numel()):
                expected[i, j] += v[i] * k[j]
        # float64, one product and one sum an entry: rounding only
        torch.testing.assert_close(
            linear_step(state, k, v), expected, atol=1e-12, rtol=1e-12
        )


def test_the_right_delta_step_is_the_erase_then_write_form():
    delta_step = DELTA_STEP.define(DELTA_STEP.right)
    for case in DELTA_STEP.all_cases():
        state, k, v = (a.double() for a in case.args[:3])
        beta = case.args[3]
        erase = torch.eye(k.numel(), dtype=torch.double) - beta * torch.outer(k, k)
        expected = state @ erase + beta * torch.outer(v, k)  # S (I - b k kᵀ) + b v kᵀ
        # float64, the same sum in another order: rounding only
        torch.testing.assert_close(
            delta_step(state, k, v, beta), expected, atol=1e-12, rtol=1e-12
        )


def test_the_right_count_adds_up_layer_by_layer_and_token_by_token():
    numbers_kept = NUMBERS_KEPT.define(NUMBERS_KEPT.right)
    for case in NUMBERS_KEPT.all_cases():
        tokens, attention, linear, per_token, state = case.args
        count = linear * state
        for _ in range(attention):
            for _ in range(tokens):
                count += per_token
        assert numbers_kept(*case.args) == count
