"""``attn_course.explorer``: the widget apps of Chapters 1 and 3, without a browser."""

import base64
import math
import re
import struct

import ipywidgets as widgets
import nbformat
import numpy as np
import pytest
import torch

from attn_course.data import hello_shiny_sun, your_journey
from attn_course.explorer import (
    AttentionExplorer,
    MaskExplorer,
    attention_explorer,
    mask_explorer,
)
from attn_course.walkthrough import MASK_CONVENTIONS, query_attention
from tools.notebooks import WIDGET_VIEW
from tools.toc import chapter_notebooks

# --- the query explorer (Chapter 1) ---------------------------------------------------


def test_attention_explorer_builds_the_widgets():
    tokens, x = hello_shiny_sun()
    app = attention_explorer(tokens, x, query_index=1, temperature=1.0)
    assert isinstance(app.slider, widgets.FloatLogSlider)
    assert app.dropdown.options == (("0: Hello", 0), ("1: shiny", 1), ("2: sun!", 2))
    assert (app.slider.min, app.slider.max, app.slider.base) == (-2.0, 2.0, 10.0)
    assert app.output in app.children


def test_initial_state_and_output_show_the_chosen_query():
    tokens, x = hello_shiny_sun()
    app = attention_explorer(tokens, x, query_index=1)
    expected = query_attention(tokens, x, 1, 1.0)
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
    torch.testing.assert_close(
        app.state.weights, query_attention(tokens, x, 4, 1.0).weights
    )
    assert app.figure.axes[0].get_title() == 'query "one", temperature 1.00'
    assert app.output.outputs[1]["text"].startswith('context vector of "one": [')

    app.slider.value = 0.1
    torch.testing.assert_close(
        app.state.weights, query_attention(tokens, x, 4, 0.1).weights
    )
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
        state.weights,
        query_attention(tokens, hello_shiny_sun().embeddings, 0, 0.5).weights,
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


# --- the mask explorer (Chapter 3) ----------------------------------------------------


def test_mask_explorer_builds_the_widgets(projected):
    tokens, q, k, _ = projected
    app = mask_explorer(tokens, q, k)
    assert app.checkbox.value
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
    with pytest.raises(TypeError, match="one token per query and key"):
        mask_explorer(None, q, k)
    with pytest.raises(ValueError, match="6 queries and 5 keys"):
        mask_explorer(tokens, q, k[:5])
    with pytest.raises(ValueError, match="5 tokens"):
        mask_explorer(tokens[:5], q, k)
    with pytest.raises(ValueError, match="is not one of"):
        mask_explorer(tokens, q, k, convention="mha")


# --- without ipywidgets (an optional extra) -------------------------------------------


@pytest.fixture
def explorer_without_widgets(monkeypatch):
    """``attn_course.explorer`` imported afresh where ``import ipywidgets`` fails."""
    import importlib
    import sys

    import attn_course

    monkeypatch.setattr(attn_course, "explorer", attn_course.explorer)
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # import raises ImportError
    monkeypatch.delitem(sys.modules, "attn_course.explorer")
    return importlib.import_module("attn_course.explorer")


def test_without_ipywidgets_the_module_imports_and_building_an_explorer_says_why(
    explorer_without_widgets, raises_teaching
):
    module = explorer_without_widgets
    assert module.widgets is None
    tokens, x = hello_shiny_sun()
    fragments = ["need ipywidgets", "pip install ipywidgets", "attn-course[explorers]"]
    raises_teaching(
        lambda: module.attention_explorer(tokens, x), ImportError, fragments
    )
    raises_teaching(lambda: module.mask_explorer(tokens, x, x), ImportError, fragments)
    with pytest.raises(ImportError) as info:
        module.AttentionExplorer(tokens, x)
    assert info.value.name == "ipywidgets"


# --- the still: what a page that cannot run the widget shows --------------------------


def _texts(figure):
    return [text.get_text() for ax in figure.axes for text in ax.texts]


def test_the_still_draws_the_controls_the_chart_and_the_line_as_they_stand():
    tokens, x = hello_shiny_sun()
    app = attention_explorer(tokens, x, query_index=1)
    still = app.still()
    controls, chart, line = still.axes
    assert still.get_figwidth() == pytest.approx(6.4)
    shown = ["query", "1: shiny", "\u25be", "temperature", "1.00"]
    assert [t.get_text() for t in controls.texts] == shown
    assert chart.get_title() == 'query "shiny", temperature 1.00'
    heights = [bar.get_height() for bar in chart.containers[0]]
    np.testing.assert_allclose(heights, app.state.weights.numpy(), rtol=1e-6)
    assert line.texts[0].get_text() == app.output.outputs[1]["text"].strip()
    # the knob sits where the value is: 1 is the middle of 10^-2 .. 10^2
    knob = controls.lines[2]
    assert float(knob.get_xdata()[0]) == pytest.approx(0.24 + 0.5 * 0.5)

    app.dropdown.value = 0
    app.slider.value = 0.1
    again = _texts(app.still())
    assert "0: Hello" in again and "0.10" in again
    assert 'context vector of "Hello": [' in again[-1]


def test_the_still_of_the_mask_explorer_greys_out_the_disabled_dropdown(projected):
    tokens, q, k, _ = projected
    app = mask_explorer(tokens, q, k)
    on = app.still().axes[0]
    assert [t.get_text() for t in on.texts][:3] == ["causal mask", "\u2713", "on"]
    app.checkbox.value = False
    controls, chart, line, _colorbar = app.still().axes
    texts = {t.get_text(): t.get_color() for t in controls.texts}
    assert texts["off"] == "black" and "\u2713" not in [
        t.get_text() for t in controls.texts if t.get_text()
    ]
    assert texts["passed as"] == texts[app.dropdown.label] != "black"
    assert chart.get_title() == "no mask"
    assert line.texts[0].get_text().startswith("weight on future keys")


def test_the_display_bundle_holds_the_widget_and_its_still():
    tokens, x = hello_shiny_sun()
    app = attention_explorer(tokens, x, query_index=1)
    data, metadata = app._repr_mimebundle_()
    view = data["application/vnd.jupyter.widget-view+json"]
    assert view["model_id"] == app.model_id
    assert data["text/plain"] == repr(app)
    png = base64.b64decode(data["image/png"])
    assert png.startswith(b"\x89PNG")
    assert png == app.still()._repr_png_()[0]  # the same picture, drawn again
    assert metadata["image/png"]["width"] == struct.unpack(">I", png[16:20])[0] // 2


EXPLORER_CALL = re.compile(
    r"^(attention_explorer|mask_explorer|AttentionExplorer|MaskExplorer)\("
)


def test_every_chapter_cell_that_shows_an_explorer_is_tagged_with_its_still():
    """A cell showing an explorer is tagged, with caption, name, alt text, still."""
    shown = 0
    for path in chapter_notebooks():
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code":
                continue
            last = cell.source.strip().splitlines()[-1] if cell.source.strip() else ""
            tagged = "explorer" in cell.metadata.get("tags", [])
            assert bool(EXPLORER_CALL.match(last)) == tagged, (path.name, cell.source)
            if not tagged:
                continue
            shown += 1
            where = f"{path.name}: {last}"
            figure = cell.metadata.get("mystnb", {})
            assert figure["figure"]["caption"] and figure["figure"]["name"], where
            assert len(figure["image"]["alt"]) > 40, where
            assert "remove-output" not in cell.metadata["tags"], where
            (output,) = cell.outputs
            assert {"image/png", WIDGET_VIEW} <= output.data.keys(), where
    assert shown == 2
