"""Tests for attn_course.explorer: the computation and the widget, without a browser."""

import math

import ipywidgets as widgets
import numpy as np
import pytest
import torch

from attn_course.data import hello_shiny_sun, your_journey
from attn_course.explorer import (
    AttentionExplorer,
    ExplorerState,
    attention_explorer,
    explore,
)

# --- explore -----------------------------------------------------------------------


def test_explore_matches_a_hand_computation():
    tokens, x = hello_shiny_sun()
    state = explore(tokens, x, query_index=1)
    assert isinstance(state, ExplorerState)
    # "shiny" . "Hello" = 0.53*0.34 + 0.34*0.22 + 0.98*0.54 = 0.7842
    assert math.isclose(float(state.scores[0]), 0.7842, abs_tol=1e-4)
    scores = x @ x[1]  # (T,)
    weights = torch.softmax(scores, dim=0)  # (T,)
    torch.testing.assert_close(state.scores, scores)
    torch.testing.assert_close(state.weights, weights)
    torch.testing.assert_close(state.context, weights @ x)
    assert state.scores.shape == (3,) and state.context.shape == (3,)


@pytest.mark.parametrize("temperature", [0.1, 0.5, 2.0, 7.0])
def test_explore_divides_the_scores_by_the_temperature(temperature):
    tokens, x = your_journey()
    state = explore(tokens, x, 4, temperature)
    torch.testing.assert_close(state.scores, x @ x[4])  # scores ignore temperature
    weights = torch.softmax(x @ x[4] / temperature, dim=0)
    torch.testing.assert_close(state.weights, weights)
    torch.testing.assert_close(state.context, weights @ x)


def test_temperature_extremes_give_one_hot_and_uniform_weights():
    tokens, x = hello_shiny_sun()
    cold = explore(tokens, x, 1, temperature=1e-3).weights
    torch.testing.assert_close(cold, torch.tensor([0.0, 1.0, 0.0]))
    assert int(cold.argmax()) == int((x @ x[1]).argmax())
    hot = explore(tokens, x, 1, temperature=1e4).weights
    torch.testing.assert_close(hot, torch.full((3,), 1 / 3), atol=1e-4, rtol=0)


def test_explore_is_pure_and_accepts_numpy_and_negative_indices():
    tokens, x = your_journey()
    before = x.clone()
    last = explore(tokens, x, -1, 0.7)
    assert torch.equal(x, before)
    torch.testing.assert_close(last.weights, explore(tokens, x, 5, 0.7).weights)
    from_numpy = explore(list(tokens), x.numpy().astype(np.float64), 5, 0.7)
    torch.testing.assert_close(from_numpy.weights.float(), last.weights)
    whole_numbers = explore(None, torch.tensor([[1, 0], [0, 1]]), 0)
    torch.testing.assert_close(whole_numbers.weights, torch.softmax(torch.eye(2)[0], 0))


def test_explore_teaching_errors():
    tokens, x = hello_shiny_sun()
    with pytest.raises(ValueError, match=r"query_index=3 is out of range.*0 to 2"):
        explore(tokens, x, 3)
    with pytest.raises(TypeError, match=r"tokens.index\('shiny'\)"):
        explore(tokens, x, "shiny")
    with pytest.raises(TypeError, match="int position"):
        explore(tokens, x, True)
    with pytest.raises(TypeError, match="int position"):
        explore(tokens, x, 1.0)
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="positive finite"):
            explore(tokens, x, 1, bad)
    with pytest.raises(ValueError, match="too small"):
        explore(tokens, x, 1, 1e-320)
    with pytest.raises(ValueError, match="2 tokens.*3 embedding rows"):
        explore(tokens[:2], x, 1)
    with pytest.raises(ValueError, match=r"shape \(T, D\).*\(1, 3, 3\)"):
        explore(tokens, x[None], 1)
    with pytest.raises(TypeError, match="torch.tensor"):
        explore(tokens, x.tolist(), 1)


# --- the widget --------------------------------------------------------------------


def test_attention_explorer_builds_the_widgets():
    tokens, x = hello_shiny_sun()
    app = attention_explorer(tokens, x, query_index=1, temperature=1.0)
    assert isinstance(app, widgets.VBox) and isinstance(app, AttentionExplorer)
    assert isinstance(app.dropdown, widgets.Dropdown)
    assert isinstance(app.slider, widgets.FloatLogSlider)
    assert isinstance(app.output, widgets.Output)
    assert app.dropdown.options == (("0: Hello", 0), ("1: shiny", 1), ("2: sun!", 2))
    assert (app.slider.min, app.slider.max, app.slider.base) == (-2.0, 2.0, 10.0)
    assert app.output in app.children


def test_initial_state_and_output_show_the_chosen_query():
    tokens, x = hello_shiny_sun()
    app = attention_explorer(tokens, x, query_index=1)
    expected = explore(tokens, x, 1, 1.0)
    torch.testing.assert_close(app.state.weights, expected.weights)
    torch.testing.assert_close(app.state.context, expected.context)
    image, text = app.output.outputs
    assert image["output_type"] == "display_data"
    assert image["data"]["text/plain"].startswith("<Figure size")
    assert len(image["data"]["image/png"]) > 1000  # a base64-encoded picture
    context = ", ".join(f"{v:.4f}" for v in expected.context.tolist())
    assert text["text"] == f'context vector of "shiny": [{context}]\n'
    bars = app.figure.axes[0].containers[0]
    heights = [bar.get_height() for bar in bars]
    np.testing.assert_allclose(heights, expected.weights.numpy(), rtol=1e-6)


def test_changing_the_dropdown_and_the_slider_updates_the_state():
    tokens, x = your_journey()
    app = attention_explorer(tokens, x, query_index=1)
    first = app.state

    app.dropdown.value = 4  # query "one"; observers fire synchronously
    assert app.state is not first
    torch.testing.assert_close(app.state.weights, explore(tokens, x, 4, 1.0).weights)
    assert app.figure.axes[0].get_title() == 'query "one", temperature 1.00'
    assert app.output.outputs[1]["text"].startswith('context vector of "one": [')

    app.slider.value = 0.1
    torch.testing.assert_close(app.state.weights, explore(tokens, x, 4, 0.1).weights)
    assert app.figure.axes[0].get_title() == 'query "one", temperature 0.10'

    # "one" matches "starts" (0.7154) a little better than itself (0.6654), and
    # "starts" only a hair better than "journey" (0.7070): even at 0.01 the weight
    # is split between those two.
    app.slider.value = 0.01  # the coldest end of the slider
    assert int(app.state.weights.argmax()) == tokens.index("starts")
    assert float(app.state.weights[1:3].sum()) > 0.99
    app.dropdown.value = 0  # "Your" matches itself best, by a wider gap
    assert float(app.state.weights[0]) > 0.98  # cold: nearly one-hot

    app.slider.value = 100.0  # the hottest end
    spread = app.state.weights.max() - app.state.weights.min()
    assert float(spread) < 0.01  # hot: nearly uniform
    assert len(app.output.outputs) == 2  # replaced, not appended


def test_update_returns_the_new_state_and_the_explorer_owns_its_data():
    tokens, x = hello_shiny_sun()
    app = AttentionExplorer(tokens, x, query_index=0, temperature=0.5)
    x.mul_(0.0)  # the learner edits their tensor afterwards
    state = app.update()
    assert state is app.state
    assert float(state.context.abs().sum()) > 0
    torch.testing.assert_close(
        state.weights, explore(tokens, hello_shiny_sun().embeddings, 0, 0.5).weights
    )


def test_explorer_validates_its_arguments_and_widens_the_slider():
    tokens, x = hello_shiny_sun()
    with pytest.raises(ValueError, match="out of range"):
        attention_explorer(tokens, x, query_index=7)
    with pytest.raises(ValueError, match="positive"):
        attention_explorer(tokens, x, temperature=0.0)
    with pytest.raises(TypeError, match="sequence"):
        attention_explorer(None, x)
    app = attention_explorer(tokens, x, temperature=50.0)
    assert app.slider.max == 2.0 and math.isclose(app.slider.value, 50.0)
    app = attention_explorer(tokens, x, temperature=500.0)
    assert app.slider.max == 3.0 and math.isclose(app.slider.value, 500.0)
    app = attention_explorer(tokens, x, query_index=-1)
    assert app.dropdown.value == 2
