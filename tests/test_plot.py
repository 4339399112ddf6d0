"""``attn_course.plot``: figures are inspected as objects, never shown."""

import ast
import sys
from pathlib import Path

import matplotlib
import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

import attn_course
from attn_course import plot
from attn_course.data import hello_shiny_sun, your_journey
from attn_course.walkthrough import query_attention


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
    # the scale runs to the largest weight, so that close weights differ in colour
    assert ax.images[0].get_clim() == (0.0, weights.max().item())


@pytest.mark.parametrize("cmap", ["Blues", "RdBu_r", "viridis", "Greens", "Oranges"])
def test_every_annotation_meets_wcag_contrast(cmap):
    values = torch.linspace(-1, 1, 401).reshape(1, -1)
    ax = plot.attention_heatmap(values, annotate=True, cmap=cmap).axes[0]
    image = ax.images[0]
    for text, value in zip(ax.texts, values.ravel().tolist(), strict=True):
        cell = image.cmap(image.norm(value))
        assert plot.contrast_ratio(text.get_color(), cell) >= 4.5, (cmap, value)


def test_contrast_ratio_follows_wcag():
    assert plot.contrast_ratio("black", "white") == pytest.approx(21.0)
    assert plot.contrast_ratio("#777777", "white") == pytest.approx(4.48, abs=0.01)
    assert plot.contrast_ratio("red", "red") == 1.0


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
    # widened beyond 0..1, and symmetric about 0 because some values are negative
    assert ax.images[0].get_clim() == (-2.0, 2.0)
    assert [t.get_text() for t in ax.texts] == ["2.00", "-inf", "-1.00", "0.50"]


# --- heatmap_grid ------------------------------------------------------------------


def test_grid_shares_one_colour_scale_and_one_colorbar():
    generator = torch.Generator().manual_seed(0)
    weights = torch.softmax(torch.randn(6, 4, 4, generator=generator) * 3, dim=-1)
    titles = [f"head {h}" for h in range(6)]
    fig = plot.heatmap_grid(weights, titles, ["a", "b", "c", "d"], suptitle="heads")
    assert len(fig.axes) == 7  # 6 panels + 1 colorbar; empty slots removed
    panels = fig.axes[:6]
    assert [ax.get_title() for ax in panels] == titles
    assert {ax.images[0].get_clim() for ax in panels} == {(0.0, weights.max().item())}
    assert fig.get_suptitle() == "heads"
    # 3 columns: the first column carries the query labels, the others do not.
    assert tick_texts(panels[0].get_yticklabels()) == ["a", "b", "c", "d"]
    assert tick_texts(panels[3].get_yticklabels()) == ["a", "b", "c", "d"]
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
    assert [ax.get_title() for ax in panels] == [f"weights[{i}]" for i in range(3)]
    assert [len(ax.texts) for ax in panels] == [4, 6, 4]
    assert tick_texts(panels[1].get_xticklabels()) == ["0", "1", "2"]


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


def test_weight_bars_accepts_one_row():
    tokens, x = hello_shiny_sun()
    weights = self_attention_weights(x)
    ax = plot.weight_bars(weights[1:2], tokens).axes[0]  # (1, T) is one query
    assert len(ax.containers[0]) == 3


# --- temperature_panel -------------------------------------------------------------


def test_temperature_panel_one_panel_per_temperature():
    tokens, x = hello_shiny_sun()
    temperatures = (0.01, 1.0, 100.0)
    fig = plot.temperature_panel(tokens, x, 1, temperatures)
    assert len(fig.axes) == 3
    titles = ["temperature 0.01", "temperature 1", "temperature 100"]
    assert [ax.get_title() for ax in fig.axes] == titles
    assert "shiny" in fig.get_suptitle()
    heights = [
        np.array([bar.get_height() for bar in ax.containers[0]]) for ax in fig.axes
    ]
    for temperature, drawn in zip(temperatures, heights, strict=True):
        np.testing.assert_allclose(
            drawn, query_attention(tokens, x, 1, temperature).weights
        )
    assert heights[0].max() > 0.99  # low temperature: nearly one-hot
    assert heights[2].max() - heights[2].min() < 0.01  # high: nearly uniform


def test_temperature_panel_default_titles():
    tokens, x = your_journey()
    fig = plot.temperature_panel(tokens, x, query_index=0)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["temperature 0.25", "temperature 1", "temperature 4"]


# --- line_panels -------------------------------------------------------------------


def test_line_panels_one_axes_per_panel_with_titles_labels_and_legends():
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


def test_line_panels_wrap_into_rows_and_leave_no_empty_axes():
    panels = {f"p{i}": {"y": [i, i + 1]} for i in range(4)}
    fig = plot.line_panels([0, 1], panels, ncols=3)
    assert len(fig.axes) == 4  # 2 rows of 3 slots, the 2 empty ones removed
    assert fig.axes[0].get_xscale() == "linear"


def test_line_panels_share_one_ylabel_or_take_one_per_panel():
    panels = {"a": {"y": [1, 2]}, "b": {"y": [2, 1]}}
    fig = plot.line_panels([0, 1], panels, ylabels="loss", log_y=True)
    assert [ax.get_ylabel() for ax in fig.axes] == ["loss", "loss"]
    assert [ax.get_yscale() for ax in fig.axes] == ["log", "log"]


# --- heatmap_panels ----------------------------------------------------------------

SOURCE = ["because", "the", "dog", "sees", "the", "cat"]
TARGET = ["weil", "der", "Hund", "die", "Katze", "sieht"]


def three_maps():
    gen = torch.Generator().manual_seed(0)
    encoder = torch.softmax(torch.randn(6, 6, generator=gen), dim=-1)
    decoder = torch.softmax(
        torch.randn(6, 6, generator=gen).masked_fill(
            ~torch.ones(6, 6, dtype=torch.bool).tril(), float("-inf")
        ),
        dim=-1,
    )
    cross = torch.softmax(torch.randn(6, 6, generator=gen)[:5], dim=-1)  # (5, 6)
    return [encoder, decoder, cross]


def test_heatmap_panels_give_each_panel_its_own_tokens_labels_and_title():
    fig = plot.heatmap_panels(
        three_maps(),
        query_tokens=[SOURCE, TARGET, TARGET[:5]],
        key_tokens=[SOURCE, TARGET, SOURCE],
        titles=["encoder", "decoder", "cross"],
        xlabels=["source", "target", "source"],
        ylabels=["source", "target", "target"],
        suptitle="three kinds of attention",
    )
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 4  # three panels and one shared colorbar
    encoder, decoder, cross, _ = fig.axes
    assert tick_texts(encoder.get_yticklabels()) == SOURCE
    assert tick_texts(decoder.get_xticklabels()) == TARGET
    assert tick_texts(cross.get_yticklabels()) == TARGET[:5]
    assert tick_texts(cross.get_xticklabels()) == SOURCE
    assert [ax.get_title() for ax in fig.axes[:3]] == ["encoder", "decoder", "cross"]
    assert (cross.get_xlabel(), cross.get_ylabel()) == ("source", "target")
    assert fig._suptitle.get_text() == "three kinds of attention"
    assert cross.images[0].get_array().shape == (5, 6)


def test_heatmap_panels_defaults_share_labels_scale_and_number_the_tokens():
    fig = plot.heatmap_panels([torch.eye(2), torch.full((3, 2), 0.5)], annotate=True)
    first, second, _ = fig.axes
    assert {ax.images[0].get_clim() for ax in (first, second)} == {(0.0, 1.0)}
    assert (first.get_xlabel(), first.get_ylabel()) == ("key", "query")
    assert tick_texts(second.get_yticklabels()) == ["0", "1", "2"]
    assert [ax.get_title() for ax in (first, second)] == ["weights[0]", "weights[1]"]
    assert [t.get_text() for t in second.texts] == ["0.50"] * 6


# --- notebook behaviour and global state -------------------------------------------


def test_figures_render_as_png_and_repr_as_figure():
    fig = plot.attention_heatmap(torch.eye(2))
    assert repr(fig).startswith("<Figure size ")
    png, metadata = fig._repr_png_()
    assert png.startswith(b"\x89PNG")
    # drawn at twice the width it is shown at: sharp on high-resolution screens
    pixels = plot._png_width(png)
    assert metadata == {"width": pixels // 2}
    inches = fig.get_size_inches()[0]
    assert 0.8 * inches * 100 <= metadata["width"] <= inches * 100 + 2


@pytest.mark.parametrize("count", [2, 3, 4, 8])
def test_grids_fit_the_text_column(count):
    weights = torch.softmax(torch.randn(count, 8, 8), dim=-1)
    fig = plot.heatmap_grid(weights, annotate=True)
    assert fig.get_size_inches()[0] <= plot.MAX_WIDTH_INCHES
    assert fig._repr_png_()[1]["width"] <= plot.MAX_WIDTH_INCHES * 100


def draw_one_of_each():
    tokens, x = hello_shiny_sun()
    plot.attention_heatmap(self_attention_weights(x), tokens)
    plot.heatmap_grid(torch.stack([torch.eye(3)] * 2))
    plot.temperature_panel(tokens, x, 1)
    plot.weight_bars(torch.tensor([0.5, 0.5]), ["a", "b"])
    plot.line_panels([1, 2], {"a": {"y": [1, 2]}})
    plot.heatmap_panels([torch.eye(3)])


def test_plotting_leaves_rcparams_and_pyplot_alone():
    before = dict(matplotlib.rcParams), "matplotlib.pyplot" in sys.modules
    draw_one_of_each()
    assert (dict(matplotlib.rcParams), "matplotlib.pyplot" in sys.modules) == before


def test_the_package_never_imports_pyplot():
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


# --- errors ------------------------------------------------------------------------

JOURNEY = self_attention_weights(your_journey().embeddings)  # (6, 6)
HELLO = self_attention_weights(hello_shiny_sun().embeddings)  # (3, 3)
STACK = torch.full((2, 3, 4, 4), 0.25)  # (B, H, T_q, T_k)
ONE_PANEL = {"a": {"y": [1]}}
TWO_PANELS = {"a": {"y": [1]}, "b": {"y": [2]}}


def temperatures(*values):
    tokens, x = your_journey()
    return lambda: plot.temperature_panel(tokens, x, *values)


def panels(**kwargs):
    return lambda: plot.heatmap_panels(**kwargs)


heatmap, grid, bars, lines = (
    plot.attention_heatmap,
    plot.heatmap_grid,
    plot.weight_bars,
    plot.line_panels,
)
ERRORS = [
    (
        lambda: heatmap(JOURNEY[0], your_journey().tokens),
        ValueError,
        ["got shape (6,)", "weight_bars"],
    ),
    (
        lambda: heatmap(torch.stack([JOURNEY, JOURNEY])),
        ValueError,
        ["(2, 6, 6)", "heatmap_grid"],
    ),
    (
        lambda: heatmap(JOURNEY, hello_shiny_sun().tokens),
        ValueError,
        ["3 tokens", "shape (6, 6)", "6 rows"],
    ),
    (
        lambda: heatmap(torch.ones(2, 3) / 3, ["a", "b"], ["x", "y"]),
        ValueError,
        ["key_tokens has 2 tokens", "3 columns"],
    ),
    (
        lambda: heatmap(JOURNEY, "Your journey starts with one step"),
        TypeError,
        ["split()"],
    ),
    (lambda: heatmap(HELLO, 3), TypeError, ["sequence of str", "got int"]),
    (lambda: heatmap("not a matrix"), TypeError, ["str"]),
    (lambda: heatmap(JOURNEY, fmt="{:.2q}"), ValueError, ["fmt"]),
    (lambda: heatmap(JOURNEY, fmt=2), TypeError, ["fmt must be a str", "got int"]),
    (lambda: grid(STACK), ValueError, ["(2, 3, 4, 4)", "weights[0]", "3 heads"]),
    (
        lambda: grid(STACK[0], titles=["only one"]),
        ValueError,
        ["got 1 titles for 3 matrices", "head"],
    ),
    (
        lambda: grid(STACK[0], titles="one title"),
        TypeError,
        ["titles must be a sequence", "got str"],
    ),
    (
        lambda: grid(STACK[0], query_tokens=["a", "b"]),
        ValueError,
        ["query_tokens has 2 tokens", "weights[0]"],
    ),
    (lambda: grid(STACK[0], ncols=0), ValueError, ["ncols"]),
    (lambda: grid(STACK[0], ncols=1.5), TypeError, ["ncols must be an int"]),
    (lambda: grid([]), ValueError, ["at least one"]),
    (
        lambda: bars(HELLO, hello_shiny_sun().tokens),
        ValueError,
        ["shape (3, 3)", "weights[1]"],
    ),
    (
        lambda: bars(HELLO[0], hello_shiny_sun().tokens[:2]),
        ValueError,
        ["tokens has 2 tokens"],
    ),
    (temperatures(0, (1.0, 0.0)), ValueError, ["temperature"]),
    (temperatures(0, ()), ValueError, ["non-empty"]),
    (temperatures(0, "hot"), TypeError, ["temperatures must be a sequence", "got str"]),
    (temperatures(6), ValueError, ["out of range"]),
    (
        lambda: lines([1, 2, 3], {"p": {"a": [1, 2, 3], "b": [1, 2]}}),
        ValueError,
        ["curve 'b' of panel 'p' has shape (2,)"],
    ),
    (lambda: lines([1, 2], [[1, 2]]), TypeError, ["panels must be a dict"]),
    (lambda: lines([1, 2], {}), ValueError, ["at least one panel"]),
    (lambda: lines([1, 2], {"p": {}}), ValueError, ["no curves"]),
    (lambda: lines([1, 2], {"p": [1, 2]}), TypeError, ["panel 'p' must be a dict"]),
    (
        lambda: lines([1], TWO_PANELS, ylabels=["only"]),
        ValueError,
        ["got 1 ylabels for 2 panels"],
    ),
    (
        lambda: lines([1], ONE_PANEL, log_y=[True, False, True]),
        ValueError,
        ["got 3 log_y flags for 1 panels"],
    ),
    (
        lambda: lines([1], ONE_PANEL, log_y=1),
        TypeError,
        ["log_y must be a sequence", "got int"],
    ),
    (
        lambda: lines([1], ONE_PANEL, ncols=0),
        ValueError,
        ["ncols must be a positive int"],
    ),
    (lambda: lines([], {"a": {"y": []}}), ValueError, ["x must be a non-empty 1-D"]),
    (panels(weights=torch.ones(2, 3, 3)), TypeError, ["list of 2-D matrices"]),
    (panels(weights=[]), ValueError, ["at least one"]),
    (panels(weights=[torch.ones(1, 2, 3, 3)]), ValueError, ["mean(dim=0)"]),
    (panels(weights=[torch.ones(2, 2)], titles=["a", "b"]), ValueError, ["2 entries"]),
    (panels(weights=[torch.ones(2, 2)], titles="a"), TypeError, ["one entry per"]),
    (
        panels(weights=[torch.ones(2, 3)], key_tokens=[["a", "b"]]),
        ValueError,
        ["3 columns"],
    ),
    (panels(weights=[torch.ones(2, 2)], fmt="{:q}"), ValueError, ["format string"]),
]


@pytest.mark.parametrize("call, error, fragments", ERRORS)
def test_errors_teach(call, error, fragments, raises_teaching):
    raises_teaching(call, error, fragments)


def test_heatmap_grid_can_leave_out_the_colorbar():
    masks = torch.tril(torch.ones(3, 16, 16))
    with_bar = plot.heatmap_grid(masks, ncols=3)
    without = plot.heatmap_grid(masks, ncols=3, colorbar=False)
    assert len(with_bar.axes) == 4 and len(without.axes) == 3
    # three 16-wide panels in a row: too narrow for every position's label
    labels = [t.get_text() for t in without.axes[0].get_xticklabels()]
    shown = [int(label) for label in labels if label]
    assert len(labels) == 16 and shown[0] == 0 and 2 <= len(shown) <= 8
    assert len({b - a for a, b in zip(shown, shown[1:], strict=False)}) == 1
    with pytest.raises(TypeError, match="colorbar must be True or False, got str"):
        plot.heatmap_grid(masks, colorbar="no")


def test_tokens_too_many_for_their_room_are_set_smaller_never_below_6_points():
    torch.manual_seed(0)
    chars = list('fferent␣"__missing__')  # 20 tokens, all kept
    weights = torch.softmax(torch.randn(2, 20, 20), dim=-1)
    fig = plot.heatmap_grid(weights, query_tokens=chars, key_tokens=chars, ncols=2)
    few = plot.attention_heatmap(torch.softmax(torch.randn(3, 3), dim=-1), list("abc"))
    default = few.axes[0].get_yticklabels()[0].get_fontsize()
    y_sizes = {t.get_fontsize() for t in fig.axes[0].get_yticklabels()}
    assert len(y_sizes) == 1 and 6 <= min(y_sizes) < default  # the left panel's
    for ax in fig.axes[:2]:
        x_sizes = {t.get_fontsize() for t in ax.get_xticklabels()}
        assert len(x_sizes) == 1 and 6 <= min(x_sizes) <= default
        assert [t.get_text() for t in ax.get_xticklabels()] == chars
    assert {t.get_fontsize() for t in few.axes[0].get_xticklabels()} == {default}
    # positions are thinned instead, at the size they had
    masks = torch.tril(torch.ones(3, 16, 16))
    grid = plot.heatmap_grid(masks, ncols=3, colorbar=False)
    assert {t.get_fontsize() for t in grid.axes[0].get_xticklabels()} == {default}


# --- seed_spread -------------------------------------------------------------------


def test_seed_spread_draws_a_dot_per_seed_and_the_mean_of_each_setting():
    values = {"baseline": [2.0, 2.2, 2.6], "rms": [1.9, 2.1]}
    fig = plot.seed_spread({"swaps": values, "more": {"all": [1.5]}}, xlabel="loss")
    ax = fig.axes[0]
    assert (
        len(fig.axes) == 2 and ax.get_title() == "swaps" and ax.get_xlabel() == "loss"
    )
    assert tick_texts(ax.get_yticklabels()) == ["baseline", "rms"]
    dots, mean = ax.lines[0], ax.lines[1]  # the baseline row: its seeds, its mean
    assert list(dots.get_xdata()) == values["baseline"]
    assert list(dots.get_ydata()) == [0, 0, 0]
    assert list(mean.get_xdata()) == pytest.approx([sum(values["baseline"]) / 3] * 2)
    assert list(ax.lines[2].get_ydata()) == [1, 1]  # rms on the second row
    assert tick_texts(fig.axes[1].get_yticklabels()) == ["all"]  # other settings


def test_seed_spread_names_shared_settings_once_and_shares_an_x_range():
    values = {"a": [0.2, 0.4], "b": [0.9]}
    fig = plot.seed_spread({"N = 8": values, "N = 64": values}, xlim=(0, 1))
    assert tick_texts(fig.axes[0].get_yticklabels()) == ["a", "b"]
    assert tick_texts(fig.axes[1].get_yticklabels()) == ["", ""]
    assert [ax.get_xlim() for ax in fig.axes] == [(0, 1), (0, 1)]


@pytest.mark.parametrize(
    "panels, error, fragment",
    [
        ({}, TypeError, "non-empty dict"),
        ({"p": {}}, ValueError, "panel 'p'"),
        ({"p": {"a": []}}, ValueError, "one per seed"),
        ({"p": {"a": "2.3"}}, TypeError, "values of 'a'"),
    ],
)
def test_seed_spread_tells_bad_input_clearly(panels, error, fragment, raises_teaching):
    raises_teaching(lambda: plot.seed_spread(panels), error, [fragment])
