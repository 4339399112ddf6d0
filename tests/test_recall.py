"""Tests of attn_course.recall: the associative-recall task, the models and the
stored sweep."""

import json
from dataclasses import asdict

import pytest
import torch

from attn_course.recall import (
    MIXERS,
    RecallModel,
    RecallTask,
    numbers_per_token,
    recall_batch,
    recall_run,
    stored_recall_runs,
)

TASK = RecallTask(num_pairs=6, num_queries=5, num_keys=10, num_values=7)


def test_targets_are_the_values_of_the_queried_keys():
    inputs, targets = recall_batch(TASK, 8, seed=3)
    N = TASK.num_pairs
    for b in range(8):
        pairs = inputs[b, :N].tolist()
        keys = [k for k, _ in pairs]
        assert len(set(keys)) == N  # distinct keys
        lookup = dict(pairs)
        for t in range(N, TASK.length):
            key, value = inputs[b, t].tolist()
            assert value == TASK.num_values  # the "no value" token
            assert targets[b, t].item() == lookup[key]
    assert (targets[:, :N] == -100).all()
    assert (inputs[..., 0] < TASK.num_keys).all()


def test_batches_are_seeded():
    first, second = recall_batch(TASK, 4, seed=1), recall_batch(TASK, 4, seed=1)
    other = recall_batch(TASK, 4, seed=2)
    assert all(torch.equal(a, b) for a, b in zip(first, second, strict=True))
    assert not torch.equal(first[0], other[0])


@pytest.mark.parametrize("mixer", MIXERS)
def test_each_mixer_is_causal(mixer):
    torch.manual_seed(0)
    model = RecallModel(mixer, TASK, d_model=16).double()
    inputs, _ = recall_batch(TASK, 2, seed=0)
    changed = inputs.clone()
    changed[:, 7:] = torch.tensor([9, 0])  # another key and value from position 7 on
    before, after = model(inputs), model(changed)
    assert before.shape == (2, TASK.length, TASK.num_values)
    # Positions before 7 see the same tokens in the same order: float64 rounding at
    # most (the chunked delta rule groups sums by chunk, the same in both calls).
    torch.testing.assert_close(after[:, :7], before[:, :7], atol=1e-12, rtol=0)
    assert not torch.allclose(after[:, 7:], before[:, 7:])


def test_numbers_per_token_count_each_layer():
    d = 8
    for mixer, growing, fixed in [
        ("softmax", 2 * 2 * d, 0),
        ("linear", 0, 2 * d * d),
        ("gru", 0, 2 * d),
        ("hybrid", 2 * d, d * d),
    ]:
        model = RecallModel(mixer, TASK, d_model=d, num_layers=2)
        assert numbers_per_token(model) == (growing, fixed)


def test_recall_run_returns_its_measures():
    found = recall_run("linear", 4, seed=0, steps=2)
    assert set(found) == {
        "accuracy",
        "final_loss",
        "parameters",
        "growing_per_token",
        "fixed_state",
    }
    assert 0 <= found["accuracy"] <= 1


def test_stored_runs_cover_the_sweep():
    from tools import bench_recall

    stored = stored_recall_runs()
    assert {"date", "machine", "torch", "settings", "tuning", "rows"} <= set(stored)
    settings = bench_recall.Settings()
    # JSON keeps tuples as lists.
    chosen = stored["settings"].pop("lr")
    assert stored["settings"] == json.loads(json.dumps(asdict(settings)))
    tuned = {(r["mixer"], r["num_pairs"], r["seed"], r["lr"]) for r in stored["tuning"]}
    assert tuned == {
        (m, settings.tune_pairs, settings.tune_seed, lr)
        for m in MIXERS
        for lr in settings.lr_grid
    }
    assert chosen == bench_recall.best_rates(stored["tuning"])
    expected = {
        (m, n, s, chosen[m])
        for m in MIXERS
        for n in settings.num_pairs
        for s in settings.seeds
    }
    rows = stored["rows"]
    assert {(r["mixer"], r["num_pairs"], r["seed"], r["lr"]) for r in rows} == expected
    assert len(rows) == len(expected)
    for row in rows:
        assert 0 <= row["accuracy"] <= 1


def test_best_rates_breaks_a_tie_by_the_final_loss():
    from tools.bench_recall import best_rates

    tuning = [
        {"mixer": "gru", "lr": 0.03, "accuracy": 1.0, "final_loss": 0.002},
        {"mixer": "gru", "lr": 0.01, "accuracy": 1.0, "final_loss": 0.005},
        {"mixer": "gru", "lr": 0.003, "accuracy": 0.2, "final_loss": 0.001},
        {"mixer": "linear", "lr": 0.01, "accuracy": 0.4, "final_loss": 1.0},
        {"mixer": "linear", "lr": 0.03, "accuracy": 0.9, "final_loss": 2.0},
    ]
    assert best_rates(tuning) == {"gru": 0.03, "linear": 0.03}


def test_errors():
    with pytest.raises(ValueError, match="num_keys=4"):
        RecallTask(num_pairs=5, num_keys=4)
    with pytest.raises(ValueError, match="mixer='lstm'"):
        RecallModel("lstm", TASK)
    with pytest.raises(ValueError, match="num_layers"):
        RecallModel("hybrid", TASK, num_layers=1)
    with pytest.raises(TypeError, match="RecallTask"):
        recall_batch((6, 5), 2, seed=0)
    with pytest.raises(ValueError, match=r"\(B, T, 2\)"):
        RecallModel("gru", TASK)(torch.zeros(2, 5, dtype=torch.long))
    with pytest.raises(FileNotFoundError, match="make bench-recall"):
        stored_recall_runs("cuda")
