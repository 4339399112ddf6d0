"""Tests for the Chapter 3 mask explorer: the computation and the widget, no browser."""

import ipywidgets as widgets
import pytest
import torch
import torch.nn.functional as F

from attn_course import CausalAttention, causal_mask
from attn_course.data import your_journey
from attn_course.explorer import (
    MASK_CONVENTIONS,
    MaskExplorer,
    MaskState,
    mask_explore,
    mask_explorer,
)


@pytest.fixture
def projected():
    """The journey sentence projected by the seeds' CausalAttention (seed 123)."""
    tokens, x = your_journey()
    torch.manual_seed(123)
    ca = CausalAttention(3, 2, 6, 0.0)
    with torch.no_grad():
        return tokens, ca.W_query(x), ca.W_key(x), ca


# --- mask_explore --------------------------------------------------------------------


@pytest.mark.parametrize("convention", ["bool", "additive", "is_causal"])
def test_the_three_correct_conventions_give_pytorchs_causal_weights(
    projected, convention
):
    tokens, q, k, ca = projected
    state = mask_explore(q, k, causal=True, convention=convention)
    assert isinstance(state, MaskState)
    reference = torch.softmax(
        (q @ k.T / 2**0.5).masked_fill(~causal_mask(6), -torch.inf), dim=-1
    )
    torch.testing.assert_close(state.weights, reference)
    # and the same as the module and as PyTorch's own function
    _, module_weights = ca(your_journey().embeddings, return_weights=True)
    torch.testing.assert_close(state.weights, module_weights.detach())
    v = torch.eye(6)  # values = one-hot rows, so the output IS the weight matrix
    torch.testing.assert_close(
        state.weights, F.scaled_dot_product_attention(q, k, v, is_causal=True)
    )
    assert state.future_weight == 0.0 and state.empty_rows == ()
    assert torch.equal(state.allowed, causal_mask(6))


def test_no_mask_lets_the_future_in(projected):
    _, q, k, _ = projected
    state = mask_explore(q, k, causal=False, convention="inverted")  # ignored
    torch.testing.assert_close(state.weights, torch.softmax(q @ k.T / 2**0.5, -1))
    future = state.weights.triu(diagonal=1).sum()
    assert state.future_weight == pytest.approx(float(future)) and future > 1.0
    assert bool(state.allowed.all())


def test_the_inverted_mask_sees_only_the_future_and_empties_the_last_row(projected):
    _, q, k, _ = projected
    state = mask_explore(q, k, causal=True, convention="inverted")
    assert torch.equal(state.allowed, ~causal_mask(6))
    assert state.empty_rows == (5,)
    assert torch.equal(state.weights[5], torch.zeros(6))  # a row of zeros, no NaN
    assert bool((state.weights.tril() == 0).all())  # nothing from past or itself
    assert state.future_weight == pytest.approx(5.0)  # rows 0..4 sum to 1 each


def test_mask_explore_teaching_errors(projected):
    _, q, k, _ = projected
    with pytest.raises(ValueError, match="convention='sdpa' is not one of"):
        mask_explore(q, k, convention="sdpa")
    with pytest.raises(ValueError, match="same width d"):
        mask_explore(q, torch.ones(6, 3))
    with pytest.raises(ValueError, match=r"shape \(T, d\)"):
        mask_explore(q[None], k)
    with pytest.raises(TypeError, match="torch.Tensor"):
        mask_explore(q.tolist(), k)


# --- the widget ----------------------------------------------------------------------


def test_mask_explorer_builds_the_widgets(projected):
    tokens, q, k, _ = projected
    app = mask_explorer(tokens, q, k)
    assert isinstance(app, MaskExplorer) and isinstance(app, widgets.VBox)
    assert isinstance(app.checkbox, widgets.Checkbox) and app.checkbox.value
    assert isinstance(app.dropdown, widgets.Dropdown)
    assert [key for _, key in app.dropdown.options] == list(MASK_CONVENTIONS)
    assert app.output in app.children
    image, text = app.output.outputs
    assert image["data"]["text/plain"].startswith("<Figure size")
    assert len(image["data"]["image/png"]) > 1000
    assert text["text"] == (
        "weight on future keys (summed over queries): 0.0000; "
        "queries that see no key: none\n"
    )
    assert app.figure.axes[0].get_title() == f"causal: {MASK_CONVENTIONS['bool']}"


def test_toggling_the_mask_and_the_convention_updates_everything(projected):
    tokens, q, k, _ = projected
    app = mask_explorer(tokens, q, k)
    causal = app.state

    app.checkbox.value = False  # observers fire synchronously
    assert app.dropdown.disabled
    assert app.state.future_weight > 1.0
    assert app.figure.axes[0].get_title() == "no mask"
    assert not torch.equal(app.state.weights, causal.weights)

    app.checkbox.value = True
    assert not app.dropdown.disabled
    torch.testing.assert_close(app.state.weights, causal.weights)

    app.dropdown.value = "inverted"
    assert app.state.empty_rows == (5,)
    assert app.output.outputs[1]["text"].endswith("queries that see no key: step\n")
    assert "True = blocked" in app.figure.axes[0].get_title()

    app.dropdown.value = "additive"
    torch.testing.assert_close(app.state.weights, causal.weights)
    assert len(app.output.outputs) == 2  # replaced, not appended


def test_update_returns_the_state_and_the_explorer_owns_its_data(projected):
    tokens, q, k, _ = projected
    app = MaskExplorer(tokens, q, k, causal=False)
    before = app.state.weights.clone()
    q.mul_(0.0)  # the learner edits their tensor afterwards
    state = app.update()
    assert state is app.state
    torch.testing.assert_close(state.weights, before)
    assert repr(app) == (
        "MaskExplorer(tokens=('Your', 'journey', 'starts', 'with', 'one', 'step'), "
        "causal=False, convention='bool')"
    )


def test_mask_explorer_validates_its_arguments(projected):
    tokens, q, k, _ = projected
    with pytest.raises(TypeError, match="one token per query and key row"):
        mask_explorer(None, q, k)
    with pytest.raises(TypeError, match="6 queries and 5 keys"):
        mask_explorer(tokens, q, k[:5])
    with pytest.raises(ValueError, match="5 tokens"):
        mask_explorer(tokens[:5], q, k)
    with pytest.raises(ValueError, match="is not one of"):
        mask_explorer(tokens, q, k, convention="mha")
