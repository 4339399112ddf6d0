"""Tests of the Chapter 8 self-checks (attn_course.checks.gpt): right answers pass,
wrong ones are explained."""

import numpy as np
import pytest
import torch

from attn_course import checks
from attn_course.checks.gpt import (
    _CONFIGS,
    _COUNT_SLIPS,
    TOP_K,
    _count,
    _count_slips,
    _make_example_cases,
    _model_parameters,
)

from .answers import (
    failure,
    gpt_parameters,
    make_example,
    top_k_logits,
    wrong_call_test,
)

# --- check_gpt_parameters_fn ---------------------------------------------------------


@pytest.mark.parametrize("sizes", _CONFIGS, ids=str)
def test_the_reference_counts_are_those_of_the_formula(sizes):
    V, T, D, L, _ = sizes
    right = V * D + T * D + L * (12 * D * D + 10 * D) + 2 * D
    assert _model_parameters(*sizes) == right == _count(V, T, D, L)


def test_the_configurations_include_the_chapter_and_gpt2():
    sizes = {config[:4] for config in _CONFIGS}
    assert {(103, 64, 96, 4), (50257, 1024, 768, 12)} <= sizes
    assert any(L == 1 for *_, L, _ in _CONFIGS)  # and a single block


def test_every_mix_of_up_to_three_slips_fails_on_the_first_configuration():
    V, T, D, L, _ = _CONFIGS[0]
    right = _count(V, T, D, L)
    assert all(slip.gives != right for slip in _count_slips(V, T, D, L))


@pytest.mark.parametrize("sizes", _CONFIGS[:2], ids=["chapter", "gpt2"])
def test_no_two_mixes_of_as_many_slips_give_the_same_count(sizes):
    # A mix of fewer slips comes first and wins: forgetting the feed-forward biases
    # (5 * D per block) is named rather than the per-block LayerNorms (4 * D) and
    # out_proj's bias (D) together.
    V, T, D, L, _ = sizes
    slips = _count_slips(V, T, D, L)
    for bullets in (0, 2):  # one slip (no bullets), two slips (one bullet each)
        counts = [slip.gives for slip in slips if slip.why.count("\n  - ") == bullets]
        assert counts
        assert len(counts) == len(set(counts)), bullets


def test_the_slip_table_names_every_keyword_of_the_count():
    keywords = {key for changes, _ in _COUNT_SLIPS for key in changes}
    assert keywords == set(_count.__kwdefaults__)


def test_check_gpt_parameters_fn_accepts_the_formula(capsys):
    checks.check_gpt_parameters_fn(gpt_parameters)
    checks.check_gpt_parameters_fn(lambda *sizes: float(gpt_parameters(*sizes)))
    checks.check_gpt_parameters_fn(lambda *sizes: torch.tensor(gpt_parameters(*sizes)))
    checks.check_gpt_parameters_fn(lambda *sizes: np.int64(gpt_parameters(*sizes)))
    out = capsys.readouterr().out
    assert out.count("✅ check_gpt_parameters_fn:") == 4
    assert "462,432" in out and "124,412,160" in out and "124,439,808" in out


def counted(**changes):
    """The formula with some parts counted wrongly (see _count)."""
    return lambda V, T, D, L: _count(V, T, D, L, **changes)


def forgets_to_return(V, T, D, L):
    total = gpt_parameters(V, T, D, L)  # noqa: F841 (the slip)


@pytest.mark.parametrize(
    ("fn", "fragments"),
    [
        (
            lambda V, T, D, L: gpt_parameters(V, T, D, L) + V * D,
            ["9,888 too many", "counted on its own (+9,888: V * D)", "weight tying"],
        ),
        (counted(positions=False), ["6,144 too few", "position table is missing"]),
        (counted(block_norms=False), ["LayerNorms of every block are missing (-1,536"]),
        (counted(final_norm=False), ["the final LayerNorm", "(-192: 2 * D"]),
        (counted(norm_vectors=1), ["one vector of D numbers (-864"]),
        (counted(ff_bias=False), ["feed-forward layers are missing (-1,920"]),
        (counted(out_bias=False), ["bias of attention's out_proj is missing (-384"]),
        (counted(qkv_bias=True), ["biases are counted (+1,152", "qkv_bias=False"]),
        (counted(d_ff=2), ["taken as 2 * D (-148,224"]),
        (counted(d_ff=1), ["taken as D (-222,336"]),
        (counted(head_bias=True), ["given a bias (+103: V)"]),
        (counted(blocks=1), ["only one block is counted (-334,656)"]),
        (
            counted(block_norms=False, final_norm=False),
            ["It looks like\n  - the two LayerNorms", "\n  - the final LayerNorm"],
        ),
        (
            counted(ff_bias=False, out_bias=False),
            ["feed-forward layers are missing (-1,920", "out_proj is missing (-384"],
        ),
        (
            counted(tied=False, positions=False, final_norm=False),
            ["(+9,888: V * D)", "(-6,144: T * D)", "(-192: 2 * D"],
        ),
        (lambda *sizes: gpt_parameters(*sizes) + 7, ["7 too many", "Count every part"]),
        (lambda *sizes: "many", ["returned 'many' (str)", "a whole number (an int)"]),
        (lambda *sizes: gpt_parameters(*sizes) + 0.5, ["462432.5"]),
        (lambda *sizes: True, ["returned True (bool)", "a whole number"]),
        (forgets_to_return, ["forget to `return`"]),
        (lambda *sizes: 1 / 0, ["raised ZeroDivisionError"]),
    ],
)
def test_check_gpt_parameters_fn_explains_mistakes(fn, fragments):
    message = failure(checks.check_gpt_parameters_fn, fn)
    assert message.startswith("check_gpt_parameters_fn: ")
    assert "V=103, T=64, D=96, L=4" in message
    for fragment in fragments:
        assert fragment in message


def test_check_gpt_parameters_fn_finds_a_formula_wrong_on_a_later_configuration():
    def only_for_the_chapter(V, T, D, L):
        return 462_432 if (V, T, D, L) == (103, 64, 96, 4) else V * D

    message = failure(checks.check_gpt_parameters_fn, only_for_the_chapter)
    assert "for V=50257, T=1024, D=768, L=12" in message


# --- check_make_example_fn -----------------------------------------------------------


def test_the_example_cases_start_at_zero_and_at_the_last_valid_start():
    starts = [(int(start), ids.numel() - T - 1) for ids, start, T in _cases_args()]
    assert any(start == 0 for start, _ in starts)
    assert any(start == last for start, last in starts)
    for ids, start, T in _cases_args():
        assert ids.dtype == torch.long and ids.dim() == 1
        assert ids.unique().numel() == ids.numel()  # every shift gives other ids
        assert 0 <= start <= ids.numel() - T - 1


def _cases_args():
    return [case.args for case in _make_example_cases()]


def test_check_make_example_fn_accepts_right_functions(capsys):
    checks.check_make_example_fn(make_example)
    checks.check_make_example_fn(
        lambda ids, start, T: (
            ids.narrow(0, start, T).clone(),
            ids.narrow(0, start + 1, T).clone(),
        )
    )
    checks.check_make_example_fn(
        lambda ids, start, T: [ids[start : start + T], ids[start + 1 :][:T]]
    )
    assert capsys.readouterr().out.count("✅ check_make_example_fn:") == 3


def writes_into_ids(ids, start, T):
    inputs = ids[start : start + T]
    inputs[0] = 0
    return inputs, ids[start + 1 : start + T + 1]


@pytest.mark.parametrize(
    ("fn", "fragments"),
    [
        (lambda ids, s, T: (ids[s : s + T], ids[s : s + T]), ["inputs themselves"]),
        (
            lambda ids, s, T: (ids[s : s + T], ids[s - 1 : s + T - 1]),
            ["your targets", "shifted the wrong way"],
        ),
        (
            lambda ids, s, T: (ids[s : s + T], ids[s + 2 : s + T + 2]),
            ["shifted by two"],
        ),
        (
            lambda ids, s, T: (ids[s : s + T + 1], ids[s + 1 : s + T + 2]),
            ["your inputs", "T + 1 = 7 ids, one too many"],
        ),
        (
            lambda ids, s, T: (ids[s : s + T - 1], ids[s + 1 : s + T]),
            ["your inputs", "T - 1 = 5 ids, one too few"],
        ),
        (
            lambda ids, s, T: (ids[s : s + T], ids[s + 1 : s + T]),
            ["your targets", "one too few"],
        ),
        (lambda ids, s, T: (ids[s : s + T], ids[s + T]), ["a single id (shape ())"]),
        (
            lambda ids, s, T: (ids[s : s + T], ids[s + T : s + T + 1]),
            ["target of the LAST position only"],
        ),
        (
            lambda ids, s, T: (ids[s + 1 : s + T + 1], ids[s : s + T]),
            ["inputs and targets are swapped"],
        ),
        (
            lambda ids, s, T: (ids[s + 1 : s + T + 1], ids[s + 2 : s + T + 2]),
            ["your inputs", "start one position late"],
        ),
        (
            lambda ids, s, T: (ids[s - 1 : s + T - 1], ids[s : s + T]),
            ["your inputs", "start one position early"],
        ),
        (
            lambda ids, s, T: torch.stack([ids[s : s + T], ids[s + 1 : s + T + 1]]),
            ["return a pair (inputs, targets)", "a tensor of shape (2, 6)"],
        ),
        (
            lambda ids, s, T: (ids[s : s + T].float(), ids[s + 1 : s + T + 1].float()),
            ["dtype torch.float32", "token ids are integers"],
        ),
        (
            lambda ids, s, T: (ids[s : s + T], ids[s + 1 : s + T + 1].int()),
            [
                "your targets",
                "dtype torch.int32",
                "torch.long (int64)",
                "cross_entropy",
            ],
        ),
        (
            lambda ids, s, T: (
                ids[s : s + T].to(torch.int16),
                ids[s + 1 : s + T + 1].to(torch.int16),
            ),
            ["your inputs", "dtype torch.int16", "drop the conversion"],
        ),
        (
            lambda ids, s, T: (ids[s : s + T].tolist(), ids[s + 1 : s + T + 1]),
            ["expected a torch.Tensor, got list"],
        ),
        (writes_into_ids, ["changed its input ids", "in place", ".clone()"]),
        (
            lambda ids, s, T: (ids[s : s + T], ids[s + 1 : s + T + 1] % 7),
            ["of 6 ids are not the right ones", "the id that follows it in ids"],
        ),
        (lambda ids, s, T: 1 / 0, ["make_example raised ZeroDivisionError"]),
    ],
)
def test_check_make_example_fn_explains_mistakes(fn, fragments):
    message = failure(checks.check_make_example_fn, fn)
    assert "20 random ids with start=5 and T=6" in message
    for fragment in fragments:
        assert fragment in message


def test_check_make_example_fn_explains_the_wrong_shift_at_start_zero():
    def back_unless_first(ids, start, T):  # right on the first case only
        if start == 5:
            return make_example(ids, start, T)
        return ids[start : start + T], ids[start - 1 : start + T - 1]

    message = failure(checks.check_make_example_fn, back_unless_first)
    assert "start=0" in message
    assert "shape (0,)" in message and "starts at -1, the LAST id" in message


def test_check_make_example_fn_never_shows_the_right_targets():
    ids, start, T = _make_example_cases()[0].args
    message = failure(
        checks.check_make_example_fn, lambda i, s, t: (i[s : s + t], i[s : s + t])
    )
    right = ", ".join(str(int(i)) for i in ids[start + 1 : start + T + 1])
    assert right not in message


# --- check_top_k_fn: the table's cases and what no slip explains (its slips are
# tested with every table's, in tests/test_tables.py) -------------------------------


def test_the_top_k_cases_cover_the_sizes_without_ties():
    cases = [case.args for case in TOP_K.all_cases()]
    sizes = {(logits.shape[0], logits.shape[1], k) for logits, k in cases}
    assert {B for B, _, _ in sizes} == {1, 3}
    assert {V for _, V, _ in sizes} == {5, 10}
    assert {k if k < V else "V" for _, V, k in sizes} == {1, 2, "V"}
    for logits, _ in cases:
        for row in logits:
            assert row.unique().numel() == row.numel()


def test_check_top_k_fn_accepts_right_functions(capsys):
    def with_sort(logits, k):
        values, order = torch.sort(logits, dim=-1, descending=True)
        out = torch.full_like(logits, float("-inf"))
        return out.scatter(-1, order[:, :k], values[:, :k])

    def with_where(logits, k):
        kth = torch.topk(logits, k).values[..., [-1]]
        return torch.where(logits >= kth, logits, -torch.inf)

    for fn in (top_k_logits, with_sort, with_where):
        checks.check_top_k_fn(fn)
    assert capsys.readouterr().out.count("✅ check_top_k_fn:") == 3


def in_place(logits, k):
    kth = torch.topk(logits, k, dim=-1).values[:, -1:]
    return logits.masked_fill_(logits < kth, float("-inf"))


@pytest.mark.parametrize(
    ("fn", "fragments"),
    [
        (in_place, ["changed its input logits", "in place", "no underscore"]),
        (lambda x, k: x, ["24 entries outside the k largest are not -inf"]),
        (lambda x, k: top_k_logits(x, k) + 1, ["6 entries among the k largest are"]),
        (
            lambda x, k: x.masked_fill(
                x < torch.topk(x, k, dim=-1).values[:, -1], float("-inf")
            ),
            ["raised RuntimeError", "keep a dimension"],
        ),
        (lambda x, k: top_k_logits(x, k).tolist(), ["expected a torch.Tensor"]),
        (lambda x, k: top_k_logits(x, k)[:, :5], ["wrong shape (3, 5)"]),
    ],
)
def test_check_top_k_fn_explains_what_no_slip_gives(fn, fragments):
    message = failure(checks.check_top_k_fn, fn)
    assert "random logits of shape (3, 10) with k=2" in message
    for fragment in fragments:
        assert fragment in message


# --- a wrong call of a check ---------------------------------------------------------

IDS = torch.arange(10)

CALL_ERRORS = [
    pytest.param(
        lambda: checks.check_gpt_parameters_fn(gpt_parameters(103, 64, 96, 4)),
        TypeError,
        ["got int", "check_gpt_parameters_fn(gpt_parameters), not"],
        id="count-result",
    ),
    pytest.param(
        lambda: checks.check_make_example_fn(make_example(IDS, 0, 3)),
        TypeError,
        ["got tuple", "check_make_example_fn(make_example), not"],
        id="pair-result",
    ),
    pytest.param(
        lambda: checks.check_top_k_fn(top_k_logits(torch.ones(2, 3), 1)),
        TypeError,
        ["got torch.Tensor", "check_top_k_fn(top_k_logits), not"],
        id="logits-result",
    ),
    pytest.param(
        lambda: checks.check_top_k_fn(torch.nn.Linear(2, 2)),
        TypeError,
        ["got a Linear module"],
        id="module",
    ),
]

test_a_wrong_call_is_a_type_or_value_error = wrong_call_test(CALL_ERRORS)
