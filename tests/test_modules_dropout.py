"""Dropout on the attention weights in the modules: off in eval mode, and in training
mode each kept weight is scaled by 1 / (1 - p) so the expected weights are unchanged."""

import pytest
import torch

from attn_course import (
    CausalAttention,
    CrossAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
)


@pytest.fixture(autouse=True)
def _keep_global_rng():
    """Dropout draws from the global RNG; restore it after each test."""
    with torch.random.fork_rng():
        yield


class SelfAttending:
    """Call a module on x alone, or on (x, x) for cross-attention."""

    def __init__(self, module):
        self.module = module

    def __call__(self, x, **kwargs):
        if isinstance(self.module, CrossAttention):
            return self.module(x, x, **kwargs)
        return self.module(x, **kwargs)


def build(name, dropout):
    """A module with dropout, weights fixed by the seed whatever the dropout."""
    torch.manual_seed(0)
    if name == "CausalAttention":
        return CausalAttention(3, 4, 6, dropout)
    if name == "MultiHeadAttentionWrapper":
        return MultiHeadAttentionWrapper(3, 2, 6, dropout, 2)
    if name == "MultiHeadAttention":
        return MultiHeadAttention(3, 4, 6, dropout, 2)
    return CrossAttention(3, 4, 2, dropout)


NAMES = [
    "CausalAttention",
    "MultiHeadAttentionWrapper",
    "MultiHeadAttention",
    "CrossAttention",
]


def inputs():
    return torch.rand(2, 6, 3, generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("name", NAMES)
def test_eval_mode_is_deterministic_and_equals_no_dropout(name):
    x = inputs()
    reference = SelfAttending(build(name, 0.0))(x, return_weights=True)
    module = build(name, 0.5).eval()
    torch.manual_seed(1)
    first = SelfAttending(module)(x, return_weights=True)
    torch.manual_seed(2)
    again = SelfAttending(module)(x, return_weights=True)
    for ours, expected, repeated in zip(first, reference, again, strict=True):
        assert torch.equal(ours, expected)
        assert torch.equal(ours, repeated)


@pytest.mark.parametrize("name", NAMES)
def test_training_mode_drops_weights_and_rescales_the_kept_ones(name):
    x, p = inputs(), 0.4
    _, weights = SelfAttending(build(name, 0.0))(x, return_weights=True)
    module = build(name, p)
    assert module.training  # a new module is in training mode
    torch.manual_seed(3)
    _, dropped = SelfAttending(module)(x, return_weights=True)
    kept = dropped != 0
    assert kept.any() and (~kept & (weights > 0)).any()  # some kept, some dropped
    torch.testing.assert_close(dropped[kept], weights[kept] / (1 - p))
    # Dropout never creates weight where there was none (e.g. future tokens).
    assert (dropped[weights == 0] == 0).all()
    # The same seed gives the same dropout mask.
    torch.manual_seed(3)
    assert torch.equal(SelfAttending(module)(x, return_weights=True)[1], dropped)


@pytest.mark.parametrize("name", ["CausalAttention", "MultiHeadAttention"])
def test_dropout_keeps_the_weights_right_on_average(name):
    p, n_copies = 0.2, 10_000
    x = inputs()[:1]  # (1, T=6, d_in=3)
    _, weights = build(name, 0.0)(x, return_weights=True)
    module = build(name, p)
    torch.manual_seed(4)
    # One batch of n_copies copies: every copy gets its own dropout mask.
    _, dropped = module(x.expand(n_copies, 6, 3), return_weights=True)
    # Each dropped weight is w / (1 - p) with probability 1 - p, else 0: its mean is
    # w, its standard deviation w * sqrt(p / (1 - p)) = 0.5 w. The mean over 10,000
    # copies then has standard deviation 0.005 w <= 0.005, so atol=0.03 is 6 standard
    # deviations; with the seed fixed the outcome is the same on every run.
    torch.testing.assert_close(dropped.mean(dim=0), weights[0], atol=0.03, rtol=0)
    # The fraction of dropped weights among the positive ones: over >= 210,000
    # weights its standard deviation is sqrt(p (1 - p) / 210,000) < 0.001.
    positive = (weights > 0).expand_as(dropped)
    fraction_dropped = (dropped[positive] == 0).float().mean().item()
    assert abs(fraction_dropped - p) < 0.01
