"""attn_course.plot.heatmap_panels: matrices of different shapes side by side."""

import pytest
import torch
from matplotlib.figure import Figure

from attn_course import plot

SOURCE = ["because", "the", "dog", "sees", "the", "cat"]
TARGET = ["weil", "der", "Hund", "die", "Katze", "sieht"]


def texts(labels):
    return [label.get_text() for label in labels]


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


def test_each_panel_gets_its_own_tokens_labels_and_title():
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
    assert texts(encoder.get_yticklabels()) == SOURCE
    assert texts(decoder.get_xticklabels()) == TARGET
    assert texts(cross.get_yticklabels()) == TARGET[:5]
    assert texts(cross.get_xticklabels()) == SOURCE
    assert [ax.get_title() for ax in fig.axes[:3]] == ["encoder", "decoder", "cross"]
    assert (cross.get_xlabel(), cross.get_ylabel()) == ("source", "target")
    assert fig._suptitle.get_text() == "three kinds of attention"
    assert cross.images[0].get_array().shape == (5, 6)


def test_defaults_share_labels_and_number_the_tokens():
    fig = plot.heatmap_panels([torch.eye(2), torch.full((3, 2), 0.5)], annotate=True)
    first, second, _ = fig.axes
    assert (first.get_xlabel(), first.get_ylabel()) == ("key", "query")
    assert texts(second.get_yticklabels()) == ["0", "1", "2"]
    assert [ax.get_title() for ax in (first, second)] == ["weights[0]", "weights[1]"]
    assert [t.get_text() for t in second.texts] == ["0.50"] * 6


def test_panels_share_one_colour_scale():
    fig = plot.heatmap_panels([torch.full((2, 2), 0.2), torch.full((2, 3), 0.9)])
    limits = {ax.images[0].get_clim() for ax in fig.axes[:2]}
    assert limits == {(0.0, 1.0)}


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(weights=torch.ones(2, 3, 3)), TypeError, "list of 2-D matrices"),
        (dict(weights=[]), ValueError, "at least one"),
        (dict(weights=[torch.ones(1, 2, 3, 3)]), ValueError, "mean\\(dim=0\\)"),
        (dict(weights=[torch.ones(2, 2)], titles=["a", "b"]), ValueError, "2 entries"),
        (dict(weights=[torch.ones(2, 2)], titles="a"), TypeError, "one entry per"),
        (
            dict(weights=[torch.ones(2, 3)], key_tokens=[["a", "b"]]),
            ValueError,
            "3 columns",
        ),
        (dict(weights=[torch.ones(2, 2)], fmt="{:q}"), ValueError, "format string"),
    ],
)
def test_errors_teach(kwargs, error, message):
    with pytest.raises(error, match=message):
        plot.heatmap_panels(**kwargs)


def test_the_helper_leaves_pyplot_alone():
    import sys

    before = "matplotlib.pyplot" in sys.modules
    plot.heatmap_panels([torch.eye(3)])
    assert ("matplotlib.pyplot" in sys.modules) == before
