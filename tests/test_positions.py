"""``attn_course.positions``: sinusoidal vectors, RoPE and ALiBi against the papers'
definitions written out again here."""

import cmath
import itertools
import math
from functools import partial

import pytest
import torch

import attn_course
from attn_course import causal_mask, seq2seq
from attn_course.positions import (
    alibi_bias,
    alibi_slopes,
    apply_rope,
    rope_frequencies,
    rope_permutation,
    sinusoidal_positions,
    yarn_attention_factor,
)

# --- sinusoidal positions ---------------------------------------------------------


@pytest.mark.parametrize("T, D", [(1, 2), (10, 8), (37, 64), (5, 6)])
def test_sinusoidal_positions_follow_the_formula(T, D):
    pe = sinusoidal_positions(T, D)
    assert pe.shape == (T, D) and pe.dtype == torch.float32
    expected = torch.empty(T, D)
    for t in range(T):
        for i in range(D // 2):
            angle = t / 10_000 ** (2 * i / D)
            expected[t, 2 * i] = math.sin(angle)
            expected[t, 2 * i + 1] = math.cos(angle)
    torch.testing.assert_close(pe, expected)


def test_there_is_one_copy_of_sinusoidal_positions():
    assert seq2seq.sinusoidal_positions is sinusoidal_positions
    assert attn_course.sinusoidal_positions is sinusoidal_positions
    assert sinusoidal_positions.__module__ == "attn_course.positions"


# --- RoPE: the definition ---------------------------------------------------------


def rope_by_rotation_matrices(x, positions, base, interleaved):
    """RoPE one token and pair at a time, with explicit 2x2 rotations, in float64."""
    x = x.double()
    d = x.shape[-1]
    out = x.clone()
    lead = x.shape[:-2]
    for index in itertools.product(*map(range, lead)):
        for t, m in enumerate(positions):
            for i in range(d // 2):
                a, b = (2 * i, 2 * i + 1) if interleaved else (i, i + d // 2)
                theta = m * base ** (-2 * i / d)
                rotation = torch.tensor(
                    [
                        [math.cos(theta), -math.sin(theta)],
                        [math.sin(theta), math.cos(theta)],
                    ],
                    dtype=torch.float64,
                )
                pair = torch.stack([x[index + (t, a)], x[index + (t, b)]])
                turned = rotation @ pair
                out[index + (t, a)] = turned[0]
                out[index + (t, b)] = turned[1]
    return out


def rope_by_complex_numbers(x, positions, base):
    """Interleaved RoPE as LLaMA's code: pairs as complex numbers times e^(i theta)."""
    rows = []
    d = x.shape[-1]
    for t, m in enumerate(positions):
        row = []
        for i in range(d // 2):
            z = complex(x[t, 2 * i].item(), x[t, 2 * i + 1].item())
            z *= cmath.exp(1j * m * base ** (-2 * i / d))
            row += [z.real, z.imag]
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float64)


SHAPES = [(5, 4), (3, 6, 8), (2, 3, 4, 6)]


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("shape", SHAPES, ids=[str(s) for s in SHAPES])
def test_rope_matches_rotation_matrices(shape, interleaved):
    generator = torch.Generator().manual_seed(sum(shape))
    x = torch.randn(shape, generator=generator)
    T = shape[-2]
    positions = torch.randint(0, 5000, (T,), generator=generator)
    for base in (10_000.0, 500_000.0):
        got = apply_rope(x, positions, base=base, interleaved=interleaved)
        expected = rope_by_rotation_matrices(x, positions.tolist(), base, interleaved)
        assert got.shape == x.shape and got.dtype == x.dtype
        torch.testing.assert_close(got, expected.float(), atol=1e-5, rtol=1e-5)


def test_interleaved_rope_matches_complex_multiplication():
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(6, 16, generator=generator)
    positions = [0, 1, 2, 500, 4096, 100_000]
    got = apply_rope(x, torch.tensor(positions), interleaved=True)
    expected = rope_by_complex_numbers(x, positions, 10_000.0)
    torch.testing.assert_close(got, expected.float(), atol=1e-5, rtol=1e-5)


def test_rope_positions_default_to_arange():
    x = torch.randn(2, 7, 8)
    torch.testing.assert_close(apply_rope(x), apply_rope(x, torch.arange(7)))


@pytest.mark.parametrize("interleaved", [False, True])
def test_rope_keeps_lengths_and_returns_a_new_tensor(interleaved):
    x = torch.randn(2, 5, 8)
    before = x.clone()
    out = apply_rope(x, torch.arange(100, 105), interleaved=interleaved)
    assert out.data_ptr() != x.data_ptr()
    assert torch.equal(x, before)
    torch.testing.assert_close(out.norm(dim=-1), x.norm(dim=-1))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_rope_returns_the_dtype_it_was_given(dtype):
    x = torch.randn(2, 3, 8).to(dtype)
    out = apply_rope(x, torch.arange(1000, 1003))
    assert out.dtype == dtype
    expected = rope_by_rotation_matrices(x, [1000, 1001, 1002], 10_000.0, False)
    tolerance = {torch.float64: 1e-12, torch.float16: 2e-3, torch.bfloat16: 2e-2}
    torch.testing.assert_close(
        out.double(), expected, atol=tolerance[dtype] * 4, rtol=tolerance[dtype]
    )


# --- RoPE: what it is for ---------------------------------------------------------


@pytest.mark.parametrize("interleaved", [False, True])
def test_rope_scores_depend_on_the_distance_only(interleaved):
    """q_m . k_n == q_(m+s) . k_(n+s), far from position 0 too."""
    generator = torch.Generator().manual_seed(7)
    for _ in range(5):
        q, k = torch.randn(2, 64, generator=generator)
        m, n = torch.randint(0, 200, (2,), generator=generator).tolist()
        scores = []
        for shift in (0, 1000, 5000, 50_000):
            qm = apply_rope(q[None], torch.tensor([m + shift]), interleaved=interleaved)
            kn = apply_rope(k[None], torch.tensor([n + shift]), interleaved=interleaved)
            scores.append((qm @ kn.T).item())
        assert scores == pytest.approx([scores[0]] * 4, abs=1e-4, rel=1e-5)


# --- RoPE: the two layouts ----------------------------------------------------------


@pytest.mark.parametrize("d", [2, 4, 8, 64])
def test_rope_permutation_puts_even_features_first(d):
    expected = list(range(0, d, 2)) + list(range(1, d, 2))
    perm = rope_permutation(d)
    assert perm.tolist() == expected and perm.dtype == torch.int64


@pytest.mark.parametrize("shape", SHAPES, ids=[str(s) for s in SHAPES])
def test_the_layouts_agree_after_the_permutation(shape):
    x = torch.randn(shape)
    d, T = shape[-1], shape[-2]
    # Written out: place i of the half layout holds feature 2i of the interleaved
    # one, place i + d/2 holds feature 2i + 1.
    perm = [0] * d
    for i in range(d // 2):
        perm[i], perm[i + d // 2] = 2 * i, 2 * i + 1
    positions = torch.arange(1000, 1000 + T)
    half = apply_rope(x[..., perm], positions)
    interleaved = apply_rope(x, positions, interleaved=True)[..., perm]
    torch.testing.assert_close(half, interleaved)
    back = torch.argsort(rope_permutation(d))
    torch.testing.assert_close(
        half[..., back], apply_rope(x, positions, interleaved=True)
    )


def test_a_layout_mismatch_is_right_on_the_diagonal_only():
    """Rotated in the other layout: distance-0 scores right, every other wrong."""
    generator = torch.Generator().manual_seed(3)
    q, k, v = torch.randn(3, 20, 16, generator=generator)
    meant = apply_rope(q, interleaved=True) @ apply_rope(k, interleaved=True).T
    mismatched = apply_rope(q) @ apply_rope(k).T
    torch.testing.assert_close(mismatched.diagonal(), meant.diagonal())
    off = ~torch.eye(20, dtype=torch.bool)
    assert ((mismatched - meant)[off].abs() > 1e-3).float().mean() > 0.9
    causal = torch.ones(20, 20, dtype=torch.bool).tril()
    right = meant.masked_fill(~causal, float("-inf")).softmax(-1) @ v
    wrong = mismatched.masked_fill(~causal, float("-inf")).softmax(-1) @ v
    torch.testing.assert_close(wrong[0], right[0])
    assert (wrong - right)[10:].norm(dim=-1).mean() > 0.5


# --- ALiBi ----------------------------------------------------------------------------


def test_eight_heads_get_the_papers_slopes():
    assert alibi_slopes(8).tolist() == [1 / 2**h for h in range(1, 9)]


def papers_slopes(n):
    """The ALiBi paper's get_slopes, written out again."""

    def power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + papers_slopes(2 * closest)[0::2][: n - closest]


@pytest.mark.parametrize("H", range(1, 41))
def test_slopes_match_the_papers_code_for_every_head_count(H):
    torch.testing.assert_close(alibi_slopes(H), torch.tensor(papers_slopes(H)))
    assert alibi_slopes(H).dtype == torch.float32


def alibi_by_loops(H, T_q, T_k, offset):
    slopes = papers_slopes(H)
    bias = torch.empty(H, T_q, T_k, dtype=torch.float64)
    for h in range(H):
        for i in range(T_q):
            p = offset + i  # where query i sits among the keys
            for j in range(T_k):
                bias[h, i, j] = -slopes[h] * abs(p - j)
    return bias


@pytest.mark.parametrize(
    "H, T_q, T_k, offset",
    [
        (1, 1, 1, 0),
        (8, 5, 5, 0),
        (6, 3, 9, 0),
        (6, 3, 9, 4),
        (6, 3, 9, 6),
        (12, 1, 7, 6),
    ],
)
def test_alibi_bias_follows_the_definition(H, T_q, T_k, offset):
    bias = alibi_bias(H, T_q, T_k, offset=offset)
    assert bias.shape == (H, T_q, T_k) and bias.dtype == torch.float32
    torch.testing.assert_close(bias, alibi_by_loops(H, T_q, T_k, offset).float())
    if T_q == T_k:  # the default T_k is T_q
        assert torch.equal(alibi_bias(H, T_q), bias)


def test_alibi_bias_is_plus_zero_on_the_diagonal():
    assert not torch.signbit(alibi_bias(2, 5).diagonal(dim1=-2, dim2=-1)).any()


@pytest.mark.parametrize("T_q, T_k", [(1, 6), (3, 7), (2, 5), (5, 5)])
def test_alibi_bias_and_causal_mask_agree_for_any_lengths(T_q, T_k):
    """Bias and causal mask agree, top-left and with a cache's offset."""
    H, past = 4, T_k - T_q
    slopes = alibi_slopes(H)[:, None, None]  # (H, 1, 1)
    i, j = torch.arange(T_q)[:, None], torch.arange(T_k)[None, :]  # (T_q, 1), (1, T_k)
    mask = causal_mask(T_q, T_k)
    assert torch.equal(mask, j <= i)
    bias = alibi_bias(H, T_q, T_k)
    expected = (-slopes * (i - j)).expand(H, T_q, T_k)
    torch.testing.assert_close(bias[:, mask], expected[:, mask])

    full_mask, full_bias = causal_mask(T_k), alibi_bias(H, T_k)  # all T_k tokens
    mask = causal_mask(T_q, T_k, offset=past)
    bias = alibi_bias(H, T_q, T_k, offset=past)
    assert torch.equal(mask, full_mask[past:])
    assert torch.equal(bias, full_bias[:, past:])
    torch.testing.assert_close(bias[:, mask], (-slopes * (past + i - j))[:, mask])

    def attention(q, k, v, mask, bias):  # ALiBi on top of a causal mask
        blocked = torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))
        return attn_course.scaled_dot_product_attention(
            q, k, v, attn_mask=bias + blocked
        )

    q, k, v = torch.randn(3, H, T_k, 8, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(
        attention(q[:, past:], k, v, mask, bias),  # the new queries only
        attention(q, k, v, full_mask, full_bias)[:, past:],
    )


def test_future_entries_do_not_matter_under_a_causal_mask():
    """The paper's slope * j bias gives the same weights under a causal mask."""
    H, T = 4, 6
    scores = torch.randn(H, T, T)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    slopes = alibi_slopes(H)
    papers = slopes[:, None, None] * torch.arange(T)[None, None, :]  # (H, 1, T)
    ours = (scores + alibi_bias(H, T)).masked_fill(~causal, float("-inf"))
    theirs = (scores + papers).masked_fill(~causal, float("-inf"))
    torch.testing.assert_close(ours.softmax(-1), theirs.softmax(-1))


# --- errors -------------------------------------------------------------------------

X = torch.randn(2, 3, 8)
ERRORS = [
    (
        lambda: apply_rope([[1.0, 2.0]]),
        TypeError,
        ["x must be a torch.Tensor", "got list"],
    ),
    (
        lambda: apply_rope(torch.ones(3, 4, dtype=torch.long)),
        TypeError,
        ["x must be floating point", "torch.int64", "x.float()"],
    ),
    (
        lambda: apply_rope(torch.ones(8)),
        ValueError,
        ["at least 2 dimensions", "(8,)", "unsqueeze"],
    ),
    (
        lambda: apply_rope(torch.ones(3, 5)),
        ValueError,
        ["x.shape[-1]=5 must be even", "(3, 5)"],
    ),
    (
        lambda: apply_rope(X, torch.arange(4)),
        ValueError,
        ["positions has 4 entries", "T=3", "torch.arange(start, start + 3)"],
    ),
    (
        lambda: apply_rope(X, torch.tensor([0.0, 1.0, 2.0])),
        TypeError,
        ["positions must hold integers", "torch.float32", "positions.long()"],
    ),
    (
        lambda: apply_rope(X, torch.tensor([True, False, True])),
        TypeError,
        ["positions must hold integers", "torch.bool"],
    ),
    (
        lambda: apply_rope(X, torch.arange(6).reshape(2, 3)),
        ValueError,
        ["positions must be 1-D", "(2, 3)", "positions[0]"],
    ),
    (
        lambda: apply_rope(X, [0, 1, 2]),
        TypeError,
        ["positions must be a torch.Tensor", "got list", "torch.arange(T)"],
    ),
    (
        lambda: apply_rope(X, base=0),
        ValueError,
        ["base must be a positive finite number", "base=0", "base=10000.0"],
    ),
    (
        lambda: apply_rope(X, base="10000"),
        TypeError,
        ["base must be a number", "str '10000'"],
    ),
    (
        lambda: apply_rope(X, interleaved="yes"),
        TypeError,
        ["interleaved must be True or False", "str 'yes'"],
    ),
    (lambda: rope_permutation(7), ValueError, ["d=7 must be even"]),
    (lambda: rope_permutation(0), ValueError, ["d must be at least 2", "d=0"]),
    (lambda: rope_permutation(8.0), TypeError, ["d must be an int", "float 8.0"]),
    (
        lambda: alibi_slopes(0),
        ValueError,
        ["num_heads must be at least 1", "num_heads=0"],
    ),
    (
        lambda: alibi_slopes(-4),
        ValueError,
        ["num_heads must be at least 1", "num_heads=-4"],
    ),
    (lambda: alibi_slopes(8.0), TypeError, ["num_heads must be an int", "float 8.0"]),
    (
        lambda: alibi_bias(0, 4),
        ValueError,
        ["num_heads must be at least 1", "num_heads=0"],
    ),
    (
        lambda: alibi_bias(4, 5, 3),
        ValueError,
        [
            "offset=0 and T_q=5 put the last query at position 4, past the last of "
            "T_k=3 keys",
            "T_k >= offset + T_q (e.g. T_k=5)",
        ],
    ),
    (
        lambda: alibi_bias(4, 3, 10, offset=8),
        ValueError,
        ["offset=8 and T_q=3 put the last query at position 10", "e.g. T_k=11"],
    ),
    (
        lambda: alibi_bias(4, 3, 10, offset=-7),
        ValueError,
        ["offset must be at least 0, got offset=-7", "T_k - T_q"],
    ),
    (lambda: alibi_bias(4, 2.5), TypeError, ["T_q must be an int", "float 2.5"]),
    (lambda: alibi_bias(4, 3, 0), ValueError, ["T_k must be at least 1", "T_k=0"]),
    (lambda: sinusoidal_positions(4, 5), ValueError, ["d_model=5 must be even"]),
    (
        lambda: sinusoidal_positions(4.0, 6),
        TypeError,
        ["context_length must be an int", "float 4.0"],
    ),
    *[
        (partial(rope_frequencies, 8, scaling=scaling), error, [words])
        for scaling, error, words in [
            ({"type": "ntk", "factor": 2.0}, ValueError, "type 'pi' or 'yarn'"),
            ("pi", ValueError, "type 'pi' or 'yarn'"),
            ({"type": "pi", "factor": 0.0}, ValueError, "factor"),
            ({"type": "yarn", "factor": 2.0}, TypeError, "original_length"),
            ({"type": "pi", "factor": 2.0, "length": 16}, ValueError, "unknown keys"),
            (
                {"type": "yarn", "factor": 2.0, "original_length": 16, "alpha": 40.0},
                ValueError,
                "alpha < beta",
            ),
        ]
    ],
]


@pytest.mark.parametrize("call, error, fragments", ERRORS)
def test_errors_teach(call, error, fragments, raises_teaching):
    raises_teaching(call, error, fragments)


# --- RoPE for longer sequences: position interpolation and YaRN ------------------


def yarn_theta_from_the_paper(d, base, s, L, alpha, beta):
    """YaRN's NTK-by-parts frequencies (Peng et al. 2023, eq. 15-18), pair by pair."""
    out = []
    for i in range(d // 2):
        theta = base ** (-2 * i / d)
        r = L / (2 * math.pi / theta)
        if r < alpha:
            gamma = 0.0
        elif r > beta:
            gamma = 1.0
        else:
            gamma = (r - alpha) / (beta - alpha)
        out.append((1 - gamma) * theta / s + gamma * theta)
    return torch.tensor(out, dtype=torch.float64)


@pytest.mark.parametrize(
    "d, base, s, L, alpha, beta",
    [
        (8, 10_000.0, 4.0, 16, 1.0, 32.0),
        (64, 10_000.0, 8.0, 2048, 1.0, 32.0),
        (128, 500_000.0, 2.5, 4096, 2.0, 16.0),
    ],
)
def test_yarn_frequencies_follow_the_paper(d, base, s, L, alpha, beta):
    scaling = {"type": "yarn", "factor": s, "original_length": L}
    if (alpha, beta) != (1.0, 32.0):
        scaling |= {"alpha": alpha, "beta": beta}
    got = rope_frequencies(d, base, scaling=scaling)
    expected = yarn_theta_from_the_paper(d, base, s, L, alpha, beta)
    torch.testing.assert_close(got, expected)
    theta = rope_frequencies(d, base)
    assert bool((got <= theta).all()) and bool((got >= theta / s - 1e-15).all())


def test_yarn_keeps_fast_pairs_and_interpolates_slow_ones():
    scaling = {"type": "yarn", "factor": 8.0, "original_length": 2048}
    got, theta = rope_frequencies(64, scaling=scaling), rope_frequencies(64)
    assert got[0] == theta[0]  # 326 turns in 2048 tokens: more than beta
    torch.testing.assert_close(got[-1], theta[-1] / 8)  # under one turn: PI


def test_position_interpolation_is_positions_scaled_down():
    generator = torch.Generator().manual_seed(5)
    x = torch.randn(2, 7, 8, generator=generator)
    positions = torch.arange(40, 47)
    for interleaved in (False, True):
        got = apply_rope(
            x, positions, interleaved=interleaved, scaling={"type": "pi", "factor": 4.0}
        )
        scaled = [m / 4 for m in positions.tolist()]  # fractional positions
        expected = rope_by_rotation_matrices(x, scaled, 10_000.0, interleaved)
        torch.testing.assert_close(got, expected.float(), atol=1e-5, rtol=1e-5)


def test_yarn_rope_scales_queries_and_keys_by_its_attention_factor():
    generator = torch.Generator().manual_seed(6)
    x = torch.randn(5, 8, generator=generator)
    scaling = {"type": "yarn", "factor": 4.0, "original_length": 16}
    got = apply_rope(x, scaling=scaling)
    assert yarn_attention_factor(4.0) == pytest.approx(0.1 * math.log(4.0) + 1)
    torch.testing.assert_close(
        got.norm(dim=-1), x.norm(dim=-1) * (0.1 * math.log(4.0) + 1)
    )
    torch.testing.assert_close(apply_rope(x, scaling=None), apply_rope(x))
