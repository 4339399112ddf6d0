"""Re-running an unchanged notebook leaves its file unchanged: on small notebooks
built here, ``tools.notebooks.normalise_widget_ids`` gives ipywidgets' random model
ids the same value on every run and keeps the saved widget state consistent."""

from __future__ import annotations

import json
import re
import uuid

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from tools.notebooks import (
    WIDGET_STATE,
    WIDGET_VIEW,
    normalise_widget_ids,
    widget_model_id,
)

KEY = "chapters/99_synthetic.ipynb"


def _model(name: str, **state) -> dict:
    return {
        "model_module": "@jupyter-widgets/controls",
        "model_module_version": "2.0.0",
        "model_name": name,
        "state": {"_model_name": name, **state},
    }


def _view(text: str, model_id: str) -> dict:
    view = {"model_id": model_id, "version_major": 2, "version_minor": 0}
    return {"text/plain": text, WIDGET_VIEW: view}


def _widget_notebook(ids: list[str]) -> nbformat.NotebookNode:
    """A VBox (slider, output with a nested button), a label, an orphan style."""
    box, slider, output, nested, label, loose, orphan = ids
    shown = {"output_type": "display_data", "data": _view("go", nested), "metadata": {}}
    state = {
        # in the order a kernel might create them: not the order they are reached
        loose: _model("LayoutModel", width="10px"),
        slider: _model("FloatSliderModel", value=1.0, layout=f"IPY_MODEL_{loose}"),
        nested: _model("ButtonModel", description="go"),
        output: _model("OutputModel", outputs=[shown]),
        box: _model(
            "VBoxModel", children=[f"IPY_MODEL_{slider}", f"IPY_MODEL_{output}"]
        ),
        label: _model("LabelModel", value="done"),
        orphan: _model("DescriptionStyleModel", description_width=""),
    }
    result = new_output("execute_result", data=_view("VBox", box), execution_count=1)
    cells = [
        new_markdown_cell("A box of widgets:"),
        new_code_cell("box", execution_count=1, outputs=[result]),
        new_code_cell(
            "label",
            execution_count=2,
            outputs=[new_output("display_data", data=_view("Label", label))],
        ),
    ]
    for number, cell in enumerate(cells):
        cell.id = f"cell-{number}"
    notebook = new_notebook(cells=cells)
    notebook.metadata["widgets"] = {
        WIDGET_STATE: {"state": state, "version_major": 2, "version_minor": 0}
    }
    return nbformat.from_dict(notebook)


def _random_ids(count: int = 7) -> list[str]:
    return [uuid.uuid4().hex for _ in range(count)]


def _all_ids(notebook) -> set[str]:
    return set(re.findall(r"[0-9a-f]{32}", nbformat.writes(notebook)))


def test_two_runs_with_different_random_ids_write_the_same_file():
    first, second = _widget_notebook(_random_ids()), _widget_notebook(_random_ids())
    assert nbformat.writes(first) != nbformat.writes(second)
    normalise_widget_ids(first, KEY)
    normalise_widget_ids(second, KEY)
    assert nbformat.writes(first) == nbformat.writes(second)


def test_every_reference_is_renamed_and_the_state_stays_consistent():
    ids = _random_ids()
    notebook = _widget_notebook(ids)
    mapping = normalise_widget_ids(notebook, KEY)
    assert set(mapping) == set(ids)
    assert len(set(mapping.values())) == len(ids)
    # no old id is left anywhere, in outputs or state
    assert _all_ids(notebook) == set(mapping.values())
    nbformat.validate(notebook)
    state = notebook.metadata.widgets[WIDGET_STATE]["state"]
    # every reference, in outputs and between models, names a saved model
    text = json.dumps([cell.get("outputs", []) for cell in notebook.cells])
    text += json.dumps(state)
    for model_id in re.findall(r'IPY_MODEL_(\w+)|"model_id": "(\w+)"', text):
        assert "".join(model_id) in state
    box, slider, output, nested, label, loose, orphan = (mapping[old] for old in ids)
    children = [f"IPY_MODEL_{slider}", f"IPY_MODEL_{output}"]
    assert state[box]["state"]["children"] == children
    assert state[slider]["state"]["layout"] == f"IPY_MODEL_{loose}"
    nested_view = state[output]["state"]["outputs"][0]["data"][WIDGET_VIEW]
    assert nested_view["model_id"] == nested
    assert notebook.cells[1].outputs[0].data[WIDGET_VIEW]["model_id"] == box
    assert notebook.cells[2].outputs[0].data[WIDGET_VIEW]["model_id"] == label
    assert state[label]["state"]["value"] == "done"
    assert state[orphan]["model_name"] == "DescriptionStyleModel"


def test_ids_follow_the_order_models_are_reached_and_depend_on_the_path():
    ids = _random_ids()
    mapping = normalise_widget_ids(_widget_notebook(ids), KEY)
    numbers = {old: number for number, old in enumerate(ids)}
    # the displayed widgets cell by cell (box, label), then what the box holds, depth
    # first: the slider and the output widget, the slider's layout, the nested button;
    # last the model that nothing refers to
    reached = list(mapping)  # in the order of the new ids
    assert [numbers[old] for old in reached] == [0, 4, 1, 2, 5, 3, 6]
    assert mapping[ids[0]] == widget_model_id(KEY, 0)
    other = normalise_widget_ids(_widget_notebook(ids), "chapters/98_other.ipynb")
    assert not set(other.values()) & set(mapping.values())


def test_normalising_twice_changes_nothing():
    notebook = _widget_notebook(_random_ids())
    normalise_widget_ids(notebook, KEY)
    once = nbformat.writes(notebook)
    normalise_widget_ids(notebook, KEY)
    assert nbformat.writes(notebook) == once


def test_model_ids_look_like_those_of_ipywidgets():
    model_id = widget_model_id(KEY, 3)
    assert re.fullmatch(r"[0-9a-f]{32}", model_id)
    assert uuid.UUID(hex=model_id).version == 4
    assert widget_model_id(KEY, 3) == model_id != widget_model_id(KEY, 4)


def test_a_notebook_without_widgets_is_left_alone():
    notebook = new_notebook(cells=[new_code_cell("1 + 1", execution_count=1)])
    before = nbformat.writes(notebook)
    assert normalise_widget_ids(notebook, KEY) == {}
    assert nbformat.writes(notebook) == before


@pytest.mark.parametrize(
    "call, fragment",
    [
        (lambda: normalise_widget_ids(new_notebook(), ""), "key must be a non-empty"),
        (lambda: widget_model_id(KEY, -1), "number must be an int >= 0"),
        (lambda: widget_model_id(None, 0), "key must be a non-empty"),
    ],
)
def test_bad_arguments_get_clear_errors(call, fragment, raises_teaching):
    raises_teaching(call, ValueError, [fragment])
