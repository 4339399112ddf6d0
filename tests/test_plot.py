"""Tests for attn_course.plot: figures are inspected as objects, never shown."""

import ast
from pathlib import Path

import matplotlib
import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

import attn_course
from attn_course import plot
from attn_course.data import hello_shiny_sun, your_journey
from attn_course.explorer import explore


def tick_texts(labels):
    return [label.get_text() for label in labels]


def self_attention_weights(embeddings):
    return torch.softmax(embeddings @ embeddings.T, dim=-1)  # (T, T)


# --- attention_heatmap -------------------------------------------------------------


def test_heatmap_labels_values_colorbar_and_title():
    tokens, x = hello_shiny_sun()
    weights = self_attention_weights(x)
    fig = plot.attention_heatmap(weights, tokens, title="Hello shiny sun!")
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 2  # the heatmap and its colorbar
    ax = fig.axes[0]
    assert tick_texts(ax.get_xticklabels()) == list(tokens)
    assert tick_texts(ax.get_yticklabels()) == list(tokens)
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("key", "query")
    assert ax.get_title() == "Hello shiny sun!"
    expected = [f"{v:.2f}" for v in weights.reshape(-1).tolist()]
    assert [t.get_text() for t in ax.texts] == expected
    assert ax.images[0].get_clim() == (0.0, 1.0)


def test_heatmap_text_colour_contrasts_with_the_cell():
    weights = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    ax = plot.attention_heatmap(weights).axes[0]
    colours = [t.get_color() for t in ax.texts]
    assert colours == ["white", "black", "black", "white"]  # dark cells: white text


def test_heatmap_rotates_long_key_labels_only():
    tokens, x = your_journey()
    ax = plot.attention_heatmap(self_attention_weights(x), tokens).axes[0]
    assert all(label.get_rotation() == 45 for label in ax.get_xticklabels())
    tokens, x = hello_shiny_sun()
    ax = plot.attention_heatmap(self_attention_weights(x), tokens).axes[0]
    assert all(label.get_rotation() == 0 for label in ax.get_xticklabels())


def test_heatmap_accepts_grad_tensors_numpy_and_custom_labels():
    tokens, x = hello_shiny_sun()
    x.requires_grad_(True)
    weights = self_attention_weights(x)
    assert weights.requires_grad
    fig = plot.attention_heatmap(weights, tokens, xlabel="keys", ylabel="queries")
    assert (fig.axes[0].get_xlabel(), fig.axes[0].get_ylabel()) == ("keys", "queries")
    array = weights.detach().numpy()
    ax = plot.attention_heatmap(array, annotate=False).axes[0]
    assert len(ax.texts) == 0
    assert tick_texts(ax.get_xticklabels()) == ["0", "1", "2"]


def test_heatmap_cross_attention_uses_separate_token_lists():
    weights = torch.full((2, 3), 1 / 3)
    ax = plot.attention_heatmap(weights, ["a", "b"], ["x", "y", "z"], fmt="{:.1f}")
    ax = ax.axes[0]
    assert tick_texts(ax.get_yticklabels()) == ["a", "b"]
    assert tick_texts(ax.get_xticklabels()) == ["x", "y", "z"]
    assert {t.get_text() for t in ax.texts} == {"0.3"}


def test_heatmap_draws_into_a_given_axes():
    fig = Figure()
    axes = fig.subplots(1, 2)
    returned = plot.attention_heatmap(torch.eye(3), ax=axes[1], title="identity")
    assert returned is fig
    assert axes[1].get_title() == "identity"
    assert len(axes[1].texts) == 9 and len(axes[0].texts) == 0


def test_heatmap_scores_and_masked_cells():
    scores = torch.tensor([[2.0, float("-inf")], [-1.0, 0.5]])
    ax = plot.attention_heatmap(scores).axes[0]
    assert ax.images[0].get_clim() == (-1.0, 2.0)  # widened beyond 0..1
    assert [t.get_text() for t in ax.texts] == ["2.00", "-inf", "-1.00", "0.50"]


def test_heatmap_teaching_errors():
    tokens, x = your_journey()
    weights = self_attention_weights(x)
    with pytest.raises(ValueError, match=r"got shape \(6,\).*weight_bars"):
        plot.attention_heatmap(weights[0], tokens)
    with pytest.raises(ValueError, match=r"\(2, 6, 6\).*heatmap_grid"):
        plot.attention_heatmap(torch.stack([weights, weights]), tokens)
    with pytest.raises(ValueError, match=r"3 tokens.*shape \(6, 6\).*6 rows"):
        plot.attention_heatmap(weights, hello_shiny_sun().tokens)
    with pytest.raises(ValueError, match=r"key_tokens has 2 tokens.*3 columns"):
        plot.attention_heatmap(torch.ones(2, 3) / 3, ["a", "b"], ["x", "y"])
    with pytest.raises(TypeError, match=r"split\(\)"):
        plot.attention_heatmap(weights, "Your journey starts with one step")
    with pytest.raises(TypeError, match="str"):
        plot.attention_heatmap("not a matrix")
    with pytest.raises(ValueError, match="fmt"):
        plot.attention_heatmap(weights, fmt="{:.2q}")


# --- heatmap_grid ------------------------------------------------------------------


def test_grid_shares_one_colour_scale_and_one_colorbar():
    generator = torch.Generator().manual_seed(0)
    weights = torch.softmax(torch.randn(6, 4, 4, generator=generator) * 3, dim=-1)
    titles = [f"head {h}" for h in range(6)]
    fig = plot.heatmap_grid(weights, titles, ["a", "b", "c", "d"], suptitle="heads")
    assert len(fig.axes) == 7  # 6 panels + 1 colorbar; empty slots removed
    panels = fig.axes[:6]
    assert [ax.get_title() for ax in panels] == titles
    assert {ax.images[0].get_clim() for ax in panels} == {(0.0, 1.0)}
    assert fig.get_suptitle() == "heads"
    # 4 columns: the first column carries the query labels, the others do not.
    assert tick_texts(panels[0].get_yticklabels()) == ["a", "b", "c", "d"]
    assert tick_texts(panels[4].get_yticklabels()) == ["a", "b", "c", "d"]
    assert tick_texts(panels[1].get_yticklabels()) == ["", "", "", ""]
    # Key labels on the lowest panel of each column.
    assert tick_texts(panels[5].get_xticklabels()) == ["a", "b", "c", "d"]
    assert tick_texts(panels[3].get_xticklabels()) == ["a", "b", "c", "d"]
    assert tick_texts(panels[0].get_xticklabels()) == ["", "", "", ""]
    assert all(len(ax.texts) == 0 for ax in panels)  # annotate=False by default


def test_grid_accepts_a_list_of_matrices_and_ncols():
    matrices = [np.eye(2), torch.full((2, 3), 1 / 3), torch.eye(2)]
    fig = plot.heatmap_grid(matrices, ncols=1, annotate=True)
    panels = fig.axes[:3]
    assert len(fig.axes) == 4
    assert [ax.get_title() for ax in panels] == [
        "weights[0]",
        "weights[1]",
        "weights[2]",
    ]
    assert [len(ax.texts) for ax in panels] == [4, 6, 4]
    assert tick_texts(panels[1].get_xticklabels()) == ["0", "1", "2"]


def test_grid_teaching_errors():
    weights = torch.full((2, 3, 4, 4), 0.25)
    with pytest.raises(ValueError, match=r"\(2, 3, 4, 4\).*weights\[0\].*3 heads"):
        plot.heatmap_grid(weights)
    with pytest.raises(ValueError, match="got 1 titles for 3 matrices"):
        plot.heatmap_grid(weights[0], titles=["only one"])
    with pytest.raises(ValueError, match=r"query_tokens has 2 tokens.*weights\[0\]"):
        plot.heatmap_grid(weights[0], query_tokens=["a", "b"])
    with pytest.raises(ValueError, match="ncols"):
        plot.heatmap_grid(weights[0], ncols=0)
    with pytest.raises(ValueError, match="at least one"):
        plot.heatmap_grid([])


# --- weight_bars -------------------------------------------------------------------


def test_weight_bars_heights_labels_and_axis():
    tokens, x = your_journey()
    weights = self_attention_weights(x)[1]
    fig = plot.weight_bars(weights, tokens, title='query "journey"')
    assert len(fig.axes) == 1
    ax = fig.axes[0]
    heights = [bar.get_height() for bar in ax.containers[0]]
    np.testing.assert_allclose(heights, weights.numpy(), rtol=1e-6)
    assert [t.get_text() for t in ax.texts] == [f"{v:.2f}" for v in weights.tolist()]
    assert tick_texts(ax.get_xticklabels()) == list(tokens)
    low, high = ax.get_ylim()
    assert low == 0.0 and high >= 1.0
    assert max(ax.get_yticks()) == 1.0
    assert ax.get_title() == 'query "journey"'


def test_weight_bars_accepts_one_row_and_rejects_matrices():
    tokens, x = hello_shiny_sun()
    weights = self_attention_weights(x)
    ax = plot.weight_bars(weights[1:2], tokens).axes[0]  # (1, T) is one query
    assert len(ax.containers[0]) == 3
    with pytest.raises(ValueError, match=r"shape \(3, 3\).*weights\[1\]"):
        plot.weight_bars(weights, tokens)
    with pytest.raises(ValueError, match="tokens has 2 tokens"):
        plot.weight_bars(weights[0], tokens[:2])


# --- temperature_panel -------------------------------------------------------------


def test_temperature_panel_one_panel_per_temperature():
    tokens, x = hello_shiny_sun()
    temperatures = (0.01, 1.0, 100.0)
    fig = plot.temperature_panel(tokens, x, 1, temperatures)
    assert len(fig.axes) == 3
    assert [ax.get_title() for ax in fig.axes] == [
        "temperature 0.01",
        "temperature 1",
        "temperature 100",
    ]
    assert "shiny" in fig.get_suptitle()
    heights = [
        np.array([bar.get_height() for bar in ax.containers[0]]) for ax in fig.axes
    ]
    for temperature, drawn in zip(temperatures, heights, strict=True):
        np.testing.assert_allclose(drawn, explore(tokens, x, 1, temperature).weights)
    assert heights[0].max() > 0.99  # low temperature: nearly one-hot
    assert heights[2].max() - heights[2].min() < 0.01  # high: nearly uniform


def test_temperature_panel_default_titles_and_errors():
    tokens, x = your_journey()
    fig = plot.temperature_panel(tokens, x, query_index=0)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["temperature 0.25", "temperature 1", "temperature 4"]
    with pytest.raises(ValueError, match="temperature"):
        plot.temperature_panel(tokens, x, 0, (1.0, 0.0))
    with pytest.raises(ValueError, match="non-empty"):
        plot.temperature_panel(tokens, x, 0, ())
    with pytest.raises(ValueError, match="out of range"):
        plot.temperature_panel(tokens, x, 6)


# --- notebook behaviour and global state -------------------------------------------


def test_figures_render_as_png_and_repr_as_figure():
    fig = plot.attention_heatmap(torch.eye(2))
    assert repr(fig).startswith("<Figure size ")
    assert fig._repr_png_().startswith(b"\x89PNG")


def test_plotting_leaves_rcparams_unchanged():
    before = dict(matplotlib.rcParams)
    tokens, x = hello_shiny_sun()
    plot.attention_heatmap(self_attention_weights(x), tokens)
    plot.heatmap_grid(torch.stack([torch.eye(3)] * 2))
    plot.temperature_panel(tokens, x, 1)
    assert dict(matplotlib.rcParams) == before


def test_the_package_never_imports_pyplot():
    # Read the source rather than importing in a fresh interpreter: other tests in
    # the same session may import pyplot themselves, and a new process is slow.
    package = Path(attn_course.__file__).parent
    for path in sorted(package.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                names = [module] + [f"{module}.{a.name}" for a in node.names]
            else:
                continue
            assert not any("pyplot" in name for name in names), path.name
        assert "rcParams[" not in path.read_text(encoding="utf-8"), path.name
