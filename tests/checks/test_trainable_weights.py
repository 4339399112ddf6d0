"""What the tables of Chapter 2 leave out (tests/test_tables.py tries every slip): the
exercise's own matrices, in-place changes, answers no slip gives, wrong calls."""

import torch

from attn_course import SelfAttentionV2, checks
from attn_course.checks.trainable_weights import _GIVEN

from .answers import failure, journey_weights, projected, v1_from_v2, wrong_call_test


def test_check_projected_context_pins_the_exercise_matrices(capsys):
    x, given = journey_weights()[0], [torch.tensor(m).float() for m in _GIVEN.values()]
    typo, pinned = [given[0] + 1, *given[1:]], {"exercise": "ch02-ex-journey"}
    check = checks.check_projected_context
    check(projected(x, *given, 1), x, *given, 1, **pinned)
    check(projected(x, *typo, 1), x, *typo, 1)  # right for its own matrices
    assert capsys.readouterr().out.count("✅") == 2
    message = failure(check, projected(x, *typo, 1), x, *typo, 1, **pinned)
    assert "your W_q is not the exercise's, [[1, 0], [0, 1], [1, 1]]" in message
    check(..., x, ..., ..., ..., 1, **pinned)
    assert "not answered yet" in capsys.readouterr().out


def test_what_no_slip_gives_and_in_place_changes(capsys):
    def zeroes_v2(sa_v2):
        sa_v2.W_value.weight.data.zero_()
        return v1_from_v2(sa_v2)

    def over_queries(q, k, v):
        weights = torch.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-2)
        return weights, weights @ v

    assert "changed the W_value.weight" in failure(checks.check_v1_from_v2, zeroes_v2)
    scaled, variance = checks.check_scaled_attention_fn, checks.check_score_variance
    assert "normalised over the queries" in failure(scaled, over_queries)
    assert "it is a Tensor, not (weights" in failure(scaled, lambda q, k, v: q)
    assert "your scale is off" in failure(variance, 4, 0.3, d_k=64, std=0.5)
    variance(torch.tensor(4.0), torch.tensor(0.5), d_k=64, std=0.5)
    assert "measured on 20000 random pairs: 3.99" in capsys.readouterr().out


def _context(*args, **kwargs):
    checks.check_projected_context(torch.ones(2), *args, **kwargs)


# fmt: off
test_a_wrong_call_is_a_type_or_value_error = wrong_call_test([
    (lambda: checks.check_v1_from_v2(v1_from_v2(SelfAttentionV2(3, 2))), TypeError,
     ["got a SelfAttentionV1 module"]),
    (lambda: _context([[1.0]], *journey_weights()[1:], 1), TypeError,
     ["inputs must be a torch.Tensor, got list"]),
    (lambda: _context(*journey_weights(), 6), ValueError, ["query_index=6 is out of"]),
    (lambda: _context(*journey_weights(), 1, exercise="ch9"), ValueError,
     ["exercise must be 'ch02-ex-journey' or None"]),
    (lambda: checks.check_score_variance(4, 0.5, d_k=64.0, std=0.5), TypeError,
     ["d_k must be an int"]),
    (lambda: checks.check_score_variance(4, 0.5, d_k=64, std=-1), ValueError,
     ["std must be a positive finite number"]),
])
