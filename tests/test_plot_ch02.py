"""Tests for attn_course.plot.line_panels (Chapter 2): figures inspected as objects."""

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

from attn_course import plot


def test_one_axes_per_panel_with_titles_labels_and_legends():
    d_k = [2, 4, 8, 16]
    fig = plot.line_panels(
        d_k,
        {
            "variance": {"measured": [2.0, 4.1, 7.9, 16.2], "theory": d_k},
            "max weight": {"unscaled": torch.tensor([0.3, 0.4, 0.6, 0.7])},
        },
        xlabel="d_k",
        ylabels=["var", "weight"],
        log_x=2,
        log_y=[True, False],
        suptitle="scaling",
    )
    assert isinstance(fig, Figure)
    assert [ax.get_title() for ax in fig.axes] == ["variance", "max weight"]
    assert [ax.get_ylabel() for ax in fig.axes] == ["var", "weight"]
    assert all(ax.get_xlabel() == "d_k" for ax in fig.axes)
    assert [ax.get_xscale() for ax in fig.axes] == ["log", "log"]
    assert [ax.get_yscale() for ax in fig.axes] == ["log", "linear"]
    lines = fig.axes[0].get_lines()
    assert [line.get_label() for line in lines] == ["measured", "theory"]
    np.testing.assert_allclose(lines[0].get_ydata(), [2.0, 4.1, 7.9, 16.2])
    np.testing.assert_allclose(lines[0].get_xdata(), d_k)
    assert fig.axes[0].get_legend() is not None
    assert fig.get_suptitle() == "scaling"


def test_a_single_number_is_a_reference_line_with_its_own_dashes():
    fig = plot.line_panels(
        range(5),
        {"loss": {"train": [3, 2, 1.5, 1.2, 1.0], "floor": 0.95, "guess": 2.08}},
    )
    train, floor, guess = fig.axes[0].get_lines()
    assert train.get_linestyle() == "-"
    assert floor.get_label() == "floor"
    assert set(floor.get_ydata()) == {0.95}
    assert (floor.get_linestyle(), guess.get_linestyle()) == ("--", ":")


def test_panels_wrap_into_rows_and_leave_no_empty_axes():
    panels = {f"p{i}": {"y": [i, i + 1]} for i in range(4)}
    fig = plot.line_panels([0, 1], panels, ncols=3)
    assert len(fig.axes) == 4  # 2 rows of 3 slots, the 2 empty ones removed
    assert fig.axes[0].get_xscale() == "linear"


def test_line_panels_teaching_errors():
    with pytest.raises(ValueError, match=r"curve 'b' of panel 'p' has shape \(2,\)"):
        plot.line_panels([1, 2, 3], {"p": {"a": [1, 2, 3], "b": [1, 2]}})
    with pytest.raises(TypeError, match="panels must be a dict"):
        plot.line_panels([1, 2], [[1, 2]])
    with pytest.raises(ValueError, match="at least one panel"):
        plot.line_panels([1, 2], {})
    with pytest.raises(ValueError, match="no curves"):
        plot.line_panels([1, 2], {"p": {}})
    with pytest.raises(TypeError, match="panel 'p' must be a dict"):
        plot.line_panels([1, 2], {"p": [1, 2]})
    with pytest.raises(ValueError, match="got 1 ylabels for 2 panels"):
        plot.line_panels([1], {"a": {"y": [1]}, "b": {"y": [2]}}, ylabels=["only"])
    with pytest.raises(ValueError, match="got 3 log_y flags for 1 panels"):
        plot.line_panels([1], {"a": {"y": [1]}}, log_y=[True, False, True])
    with pytest.raises(ValueError, match="ncols must be a positive int"):
        plot.line_panels([1], {"a": {"y": [1]}}, ncols=0)
    with pytest.raises(ValueError, match="x must be a non-empty 1-D"):
        plot.line_panels([], {"a": {"y": []}})


def test_line_panels_leaves_global_state_alone():
    import matplotlib

    before = dict(matplotlib.rcParams)
    plot.line_panels([1, 2], {"a": {"y": [1, 2]}})
    assert dict(matplotlib.rcParams) == before
