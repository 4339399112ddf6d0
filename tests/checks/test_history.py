"""Tests of the Chapter 10 self-checks (attn_course.checks.history): right answers
pass, wrong ones are explained."""

import itertools
import math

import numpy as np
import pytest
import torch
from torch import nn

from attn_course import checks
from attn_course.checks.history import (
    _BAHDANAU_ALIGN,
    _BAHDANAU_N,
    _PATH_CASES,
    _additive_cases,
    _additive_slips,
    _gru_width,
    _module_scores,
    _parameter_cases,
    _path,
    _path_slips,
)
from attn_course.rnn import AdditiveAttention, GRUSeq2Seq

from .answers import (
    additive_scores,
    failure,
    path_length,
    scoring_parameters,
    wrong_call_test,
)

# --- check_path_length_fn ------------------------------------------------------------


def test_the_reference_path_lengths_follow_the_rules_of_each_layer():
    for distance in range(40):
        assert _path("rnn", distance) == distance
        assert _path("attention", distance) == min(distance, 1)
        for k in (2, 3, 5):
            layers = _path("cnn", distance, k)
            assert layers * (k - 1) >= distance  # the layers reach that far
            assert distance == 0 or (layers - 1) * (k - 1) < distance  # no fewer do


def test_the_path_cases_cover_what_the_exercise_promises():
    kernels = {k for kind, _, k in _PATH_CASES if kind == "cnn"}
    assert kernels == {2, 3, 5}
    for k in kernels:  # distances k - 1 and k for every kernel
        distances = {d for kind, d, kk in _PATH_CASES if kind == "cnn" and kk == k}
        assert {k - 1, k} <= distances
    for kind in ("rnn", "cnn", "attention"):  # 0, 1 and a large distance
        distances = {d for kk, d, _ in _PATH_CASES if kk == kind}
        assert {0, 1} <= distances and max(distances) >= 500
    assert [kind for kind, _, _ in _PATH_CASES[:3]] == ["rnn", "cnn", "attention"]


@pytest.mark.parametrize("index", [0, 1, 2])
def test_the_first_case_of_each_kind_tells_its_slips_apart(index):
    kind, distance, kernel_size = _PATH_CASES[index]
    right = _path(kind, distance, kernel_size)
    named = [
        (slip.gives, slip.why)
        for slip in _path_slips(kind, distance, kernel_size)
        if slip.gives is not None and not callable(slip.gives)
    ]
    assert len(named) >= 2
    assert all(not math.isclose(value, right) for value, _ in named)
    # Two slips may give the same value only if they say the same thing.
    for (a, why_a), (b, why_b) in itertools.combinations(named, 2):
        assert not math.isclose(a, b) or why_a == why_b


def path(**rules):
    """path_length with one of its rules replaced."""

    def wrong(kind, distance, kernel_size=None):
        if kind in rules:
            return rules[kind](distance, kernel_size)
        return path_length(kind, distance, kernel_size)

    return wrong


def test_check_path_length_fn_accepts_right_functions(capsys):
    def with_integer_division(kind, distance, kernel_size=None):
        if kind == "cnn":
            return (distance + kernel_size - 2) // (kernel_size - 1)
        return {"rnn": distance, "attention": int(distance > 0)}[kind]

    def as_numpy_and_tensor_ints(kind, distance, kernel_size=None):
        value = path_length(kind, distance, kernel_size)
        return np.int64(value) if kind == "rnn" else torch.tensor(value)

    for fn in (path_length, with_integer_division, as_numpy_and_tensor_ints):
        checks.check_path_length_fn(fn)
    out = capsys.readouterr().out
    assert out.count("✅ check_path_length_fn:") == 3
    assert "T = 8: rnn 7, cnn (kernel 3) 4, attention 1" in out
    assert "T = 512: rnn 511, cnn 256, attention 1." in out


@pytest.mark.parametrize(
    ("fn", "fragments"),
    [
        (
            path(rnn=lambda d, k: d + 1),
            ['path_length("rnn", 7) returned 8, too high', "distance + 1"],
        ),
        (
            path(rnn=lambda d, k: max(d - 1, 0)),
            ['path_length("rnn", 7) returned 6', "distance - 1, one step too few"],
        ),
        (
            path(cnn=lambda d, k: math.ceil(d / k)),
            ['path_length("cnn", 13, 3) returned 5', "share a position"],
        ),
        (
            path(cnn=lambda d, k: d / k),
            ["returned 4.33333", "share a position", "return an int"],
        ),
        (path(cnn=lambda d, k: d // (k - 1)), ["returned 6, too low", "rounds down"]),
        (path(cnn=lambda d, k: d / (k - 1)), ["returned 6.5", "without rounding"]),
        (
            path(cnn=lambda d, k: math.ceil(math.log(d, k)) if d > 1 else d),
            ["returned 3", "DILATED", "not dilated"],
        ),
        (path(cnn=lambda d, k: d), ["returned 13", "path of a recurrent layer"]),
        (
            path(attention=lambda d, k: 0),
            ['path_length("attention", 64) returned 0', "0 for distance > 0"],
        ),
        (
            path(attention=lambda d, k: 1),
            ['path_length("attention", 0) returned 1', "1 at distance 0"],
        ),
        (path(attention=lambda d, k: d), ["returned 64", "path of a recurrent layer"]),
        (
            lambda kind, d, k=None: float(path_length(kind, d, k)),
            ["returned 7.0, the right number as a float", "return an int"],
        ),
        (
            path(cnn=lambda d, k: np.ceil(d / (k - 1))),
            ['path_length("cnn", 13, 3) returned 7.0', "as a float"],
        ),
        (
            lambda kind, d, k=None: path_length("cnn" if k else kind, d, k),
            [
                'path_length("rnn", 6, 3) returned 3',
                'kernel_size belongs to kind "cnn"',
            ],
        ),
        (
            path(rnn=lambda d, k: d if d else 1),
            ['path_length("rnn", 0) returned 1', "every kind of layer gives 0"],
        ),
        (
            lambda kind, d, k=None: str(path_length(kind, d, k)),
            ["returned '7' (str)", "a whole number (an int)"],
        ),
        (
            lambda kind, d, k=None: [path_length(kind, d, k)] if d else None,
            ["returned [7] (list)"],
        ),
        (lambda kind, d, k=None: 1 / 0, ["path_length raised ZeroDivisionError"]),
    ],
)
def test_check_path_length_fn_explains_mistakes(fn, fragments):
    message = failure(checks.check_path_length_fn, fn)
    assert message.startswith("check_path_length_fn: ")
    for fragment in fragments:
        assert fragment in message


def test_check_path_length_fn_reports_a_missing_return():
    def forgets(kind, distance, kernel_size=None):
        path_length(kind, distance, kernel_size)

    message = failure(checks.check_path_length_fn, forgets)
    assert "returned None" in message and "forget to `return`" in message


# --- check_additive_scores_fn ------------------------------------------------------


def test_the_reference_scores_are_those_of_the_module_s_forward():
    for case in _additive_cases():
        query, keys, W_query, W_key, v = case.args
        with torch.device("meta"):
            module = AdditiveAttention(*W_query.shape[:1], *W_key.shape)
        module = module.to_empty(device="cpu")
        with torch.no_grad():
            module.W_query.weight.copy_(W_query.T)
            module.W_key.weight.copy_(W_key.T)
            module.v.weight.copy_(v[None])
        context, weights = module(query, keys, return_weights=True)
        assert torch.allclose(weights.double(), torch.softmax(case.data, dim=-1))
        assert torch.allclose(
            context.double(), (weights.double()[:, None] @ keys.double())[:, 0]
        )
        assert torch.allclose(
            _module_scores(module, query, keys).double(), case.data, atol=1e-6
        )
        assert torch.allclose(
            additive_scores(*case.args).double(), case.data, atol=1e-5
        )


def test_the_additive_cases_cover_what_the_exercise_promises():
    shapes = [(case.args[1].shape, case.args[0].shape) for case in _additive_cases()]
    assert {keys[0] for keys, _ in shapes} == {1, 2, 3}
    assert {1, 5} <= {keys[1] for keys, _ in shapes}
    assert all(query[1] != keys[2] for keys, query in shapes)  # d_q != d_k
    first = shapes[0][0]
    assert first[0] != first[1]  # B != T_s: a query not broadcast is an error


def test_the_first_additive_case_tells_the_slips_apart():
    case = _additive_cases()[0]
    values = [case.data] + [
        slip.gives
        for slip in _additive_slips(*case.args, case.data)
        if slip.gives is not None
    ]
    assert len(values) == 7
    for a, b in itertools.combinations(values, 2):
        assert not torch.allclose(a, b, atol=1e-3, rtol=1e-3)


def scores(*, inside="add", tanh=True, v="after", squeeze=None, softmax=False):
    """additive_scores with one slip."""

    def wrong(query, keys, W_query, W_key, v_):
        q = (query @ W_query)[:, None, :]
        k = keys @ W_key
        hidden = q + k if inside == "add" else q * k
        if v == "before":
            result = torch.tanh(hidden @ v_)
        else:
            result = (torch.tanh(hidden) if tanh else hidden) @ v_[:, None]
            result = result.squeeze(-1) if squeeze is None else squeeze(result)
        return torch.softmax(result, dim=-1) if softmax else result

    return wrong


FIRST_ADDITIVE = "B = 3, T_s = 5 keys, d_q = 4, d_k = 6, d_a = 8"


@pytest.mark.parametrize(
    ("fn", "fragments"),
    [
        (scores(tanh=False), ["your scores", FIRST_ADDITIVE, "tanh is missing"]),
        (scores(v="before"), ["v is applied before tanh"]),
        (scores(inside="multiply"), ["are multiplied, as in a dot product", "ADDS"]),
        (scores(softmax=True), ["These are the attention weights"]),
        (
            lambda q, k, Wq, Wk, v: torch.tanh(q @ Wq + k @ Wk) @ v,
            [
                "additive_scores raised RuntimeError",
                FIRST_ADDITIVE,
                "the query is not broadcast over the keys",
                "(query @ W_query)[:, None, :]",
            ],
        ),
        (
            lambda q, k, Wq, Wk, v: torch.tanh((q @ Wq)[:, None] + k @ Wq) @ v,
            ["W_query (4, 8) is used on the keys", "keys @ W_key"],
        ),
        (
            lambda q, k, Wq, Wk, v: torch.tanh((q @ Wk)[:, None] + k @ Wk) @ v,
            ["W_key (6, 8) is used on the query"],
        ),
        (
            lambda q, k, Wq, Wk, v: torch.tanh((q @ Wq.T)[:, None] + k @ Wk) @ v,
            ["A weight is transposed", "need no .T"],
        ),
        (
            scores(squeeze=lambda t: t),
            ["wrong shape (3, 5, 1)", "(B, T_s)", ".squeeze(-1)"],
        ),
        (
            scores(squeeze=torch.squeeze),
            ["B = 1, T_s = 5 keys", "wrong shape (5,)", ".squeeze() without a dim"],
        ),
        (
            lambda q, k, Wq, Wk, v: torch.tanh((q @ Wq)[:, None] + k @ Wk),
            ["wrong shape (3, 5, 8)", "v is not applied"],
        ),
        (
            lambda q, k, Wq, Wk, v: torch.tanh((q @ Wq)[:, None] + k @ Wk).sum(-1),
            ["v is missing"],
        ),
        (
            lambda q, k, Wq, Wk, v: (
                (torch.tanh(q @ Wq)[:, None] + torch.tanh(k @ Wk)) @ v
            ),
            ["tanh is applied to the query's part and the key's part separately"],
        ),
        (
            lambda q, k, Wq, Wk, v: additive_scores(q, k.add_(1.0), Wq, Wk, v),
            ["changed its input keys", "in place"],
        ),
        (
            lambda q, k, Wq, Wk, v: additive_scores(q, k, Wq, Wk, v).tolist(),
            ["expected a torch.Tensor, got list"],
        ),
        (
            lambda q, k, Wq, Wk, v: additive_scores(q, k, Wq, Wk, v) / 0,
            ["found NaN or infinite values"],
        ),
        (lambda q, k, Wq, Wk, v: 1 / 0, ["additive_scores raised ZeroDivisionError"]),
    ],
)
def test_check_additive_scores_fn_explains_mistakes(fn, fragments):
    message = failure(checks.check_additive_scores_fn, fn)
    assert message.startswith("check_additive_scores_fn: ")
    for fragment in fragments:
        assert fragment in message


def test_check_additive_scores_fn_accepts_right_functions(capsys):
    def with_einsum(query, keys, W_query, W_key, v):
        hidden = torch.einsum("bq,qa->ba", query, W_query).unsqueeze(1)
        return torch.einsum("bta,a->bt", torch.tanh(hidden + keys @ W_key), v)

    def in_float64(query, keys, W_query, W_key, v):
        return additive_scores(*(t.double() for t in (query, keys, W_query, W_key, v)))

    for fn in (additive_scores, with_einsum, in_float64):
        checks.check_additive_scores_fn(fn)
    out = capsys.readouterr().out
    assert out.count("✅ check_additive_scores_fn:") == 3
    assert "matches AdditiveAttention's scores on 5 cases" in out


def test_the_same_slips_would_be_named_where_the_sizes_let_them_run():
    # d_q == d_k and B == T_s: W_query on the keys and a query not broadcast give
    # values instead of errors, and the slip table still names them.
    generator = torch.Generator().manual_seed(3)
    query, keys = (
        torch.randn(2, 4, generator=generator),
        torch.randn(2, 2, 4, generator=generator),
    )
    W_query, W_key = (
        torch.randn(4, 3, generator=generator),
        torch.randn(4, 3, generator=generator),
    )
    v = torch.randn(3, generator=generator)
    expected = additive_scores(query, keys, W_query, W_key, v).double()
    slips = _additive_slips(query, keys, W_query, W_key, v, expected)
    texts = [slip.why for slip in slips if slip.gives is not None]
    assert any("W_query is used for the keys too" in text for text in texts)
    assert any("not broadcast over the keys" in text for text in texts)


# --- check_scoring_parameters_fn -----------------------------------------------------


def test_the_expected_counts_come_from_the_modules():
    for case in _parameter_cases():
        d_q, d_k, d_a = case.args
        module = AdditiveAttention(d_q, d_k, d_a)
        assert case.data["additive"] == sum(p.numel() for p in module.parameters())
        assert case.data["general"] == nn.Linear(d_k, d_q, bias=False).weight.numel()
        assert case.data["dot"] == (0 if d_q == d_k else None)
        assert case.data == scoring_parameters(d_q, d_k, d_a)


def test_the_parameter_cases_include_the_chapter_s_gru_and_bahdanau_s_sizes():
    sizes = [case.args for case in _parameter_cases()]
    D = GRUSeq2Seq(5, 5).config.d_model
    assert _gru_width() == D and (D, D, D) in sizes
    assert (_BAHDANAU_N, 2 * _BAHDANAU_N, _BAHDANAU_ALIGN) == sizes[-1]
    assert sizes[-1] == (1000, 2000, 1000)  # Bahdanau et al. (2015), appendix A.2
    assert any(d_q == d_k for d_q, d_k, _ in sizes)
    assert sizes[0][0] != sizes[0][1]


def counts(**changes):
    """scoring_parameters with some of its counts replaced."""

    def wrong(d_q, d_k, d_a):
        right = scoring_parameters(d_q, d_k, d_a)
        return {**right, **{key: f(d_q, d_k, d_a) for key, f in changes.items()}}

    return wrong


FIRST_COUNTS = "for d_q = 6, d_k = 10, d_a = 8, your"


@pytest.mark.parametrize(
    ("fn", "fragments"),
    [
        (
            counts(additive=lambda q, k, a: a * (q + k)),
            [FIRST_COUNTS, "'additive' is 128, too low", "v is missing"],
        ),
        (
            counts(additive=lambda q, k, a: a * (q + k + 1) + 2 * a + 1),
            ["'additive' is 153", "Biases are counted"],
        ),
        (
            counts(additive=lambda q, k, a: a * (q + k + 1) + a),
            ["Biases are counted"],
        ),
        (
            counts(additive=lambda q, k, a: a * (q + k) * 2),
            ["'additive' is 256", "Each matrix is counted twice"],
        ),
        (counts(additive=lambda q, k, a: a * (q + k) + 1), ["v is counted as one"]),
        (
            counts(additive=lambda q, k, a: a * (2 * q + 1)),
            ["W_key is given the query's width"],
        ),
        (counts(general=lambda q, k, a: q * k + 1), ["A bias is counted"]),
        (counts(general=lambda q, k, a: q * q), ["W is square here, d_q x d_q"]),
        (
            counts(dot=lambda q, k, a: q * k),
            [FIRST_COUNTS, "'dot' is 60", "the general score's matrix", "None"],
        ),
        (
            counts(dot=lambda q, k, a: 0),
            ["'dot' is 0", "there is no dot product", "Give None"],
        ),
        (
            counts(dot=lambda q, k, a: q * k if q == k else None),
            ["d_q = d_k = 32", "'dot' is 1,024", "the general score's matrix"],
        ),
        (
            counts(dot=lambda q, k, a: None),
            ["d_q = d_k = 32", "'dot' is None", "the dot product exists"],
        ),
        (
            counts(dot=lambda q, k, a: 1 if q == k else None),
            ["scale 1 / sqrt(d_k)", "fixed number"],
        ),
        (
            lambda q, k, a: {
                key: value
                for key, value in scoring_parameters(q, k, a).items()
                if key != "dot"
            },
            ["your dict has no key 'dot'"],
        ),
        (
            lambda q, k, a: {**scoring_parameters(q, k, a), "concat": 0},
            ["the unknown key 'concat'"],
        ),
        (
            counts(additive=lambda q, k, a: float(a * (q + k + 1))),
            ["'additive' is 136.0, the right number as a float"],
        ),
        (
            lambda q, k, a: tuple(scoring_parameters(q, k, a).values()),
            ["your function returned tuple", "return a dict"],
        ),
        (
            counts(additive=lambda q, k, a: a * (q + k + 3) + 7),
            ["'additive' is 159, too high", "Count again"],
        ),
        (lambda q, k, a: 1 / 0, ["scoring_parameters raised ZeroDivisionError"]),
    ],
)
def test_check_scoring_parameters_fn_explains_mistakes(fn, fragments):
    message = failure(checks.check_scoring_parameters_fn, fn)
    assert message.startswith("check_scoring_parameters_fn: ")
    for fragment in fragments:
        assert fragment in message


def test_check_scoring_parameters_fn_accepts_right_functions(capsys):
    def from_modules(d_q, d_k, d_a):
        additive = AdditiveAttention(d_q, d_k, d_a)
        return {
            "additive": sum(p.numel() for p in additive.parameters()),
            "general": nn.Bilinear(d_q, d_k, 1, bias=False).weight.numel(),
            "dot": 0 if d_q == d_k else None,
        }

    for fn in (scoring_parameters, from_modules):
        checks.check_scoring_parameters_fn(fn)
    out = capsys.readouterr().out
    assert out.count("✅ check_scoring_parameters_fn:") == 2
    assert "additive scoring learns 3,001,000 parameters" in out
    assert "the general score learns 2,000,000" in out


# --- calls that are not answers -------------------------------------------------------

test_a_check_refuses_what_is_not_a_function = wrong_call_test(
    [
        (
            lambda: checks.check_path_length_fn(7),
            TypeError,
            ["check_path_length_fn expects your function itself, got int"],
        ),
        (
            lambda: checks.check_additive_scores_fn(torch.zeros(3, 5)),
            TypeError,
            ["got torch.Tensor", "check_additive_scores_fn(additive_scores)"],
        ),
        (
            lambda: checks.check_additive_scores_fn(AdditiveAttention(4, 6, 8)),
            TypeError,
            ["got a AdditiveAttention module"],
        ),
        (
            lambda: checks.check_scoring_parameters_fn({"additive": 1}),
            TypeError,
            ["got dict", "check_scoring_parameters_fn(scoring_parameters)"],
        ),
    ]
)
