"""``attn_course.data``: the toy sentences (hello_shiny_sun's are in its doctest)."""

import torch

from attn_course.data import hello_shiny_sun, your_journey


def test_your_journey_tokens_and_values():
    tokens, embeddings = your_journey()
    assert tokens == ("Your", "journey", "starts", "with", "one", "step")
    expected = torch.tensor(
        [
            [0.43, 0.15, 0.89],
            [0.55, 0.87, 0.66],
            [0.57, 0.85, 0.64],
            [0.22, 0.58, 0.33],
            [0.77, 0.25, 0.10],
            [0.05, 0.80, 0.55],
        ]
    )
    torch.testing.assert_close(embeddings, expected, rtol=0, atol=0)
    assert embeddings.dtype == torch.float32
    assert not embeddings.requires_grad


def test_each_call_returns_a_fresh_tensor():
    for make in (hello_shiny_sun, your_journey):
        first, second = make().embeddings, make().embeddings
        assert first.data_ptr() != second.data_ptr()
        first.mul_(0.0)
        assert make().embeddings.abs().sum() > 0
        assert second.abs().sum() > 0
