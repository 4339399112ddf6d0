"""``attn_course.order_task``: the previous-token task, its training loop and its
accuracy by position."""

from functools import partial

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attn_course.order_task import (
    IGNORE,
    accuracy_by_position,
    first_token_batch,
    previous_token_batch,
    train,
)


def test_the_target_is_the_token_one_position_back():
    ids, targets = previous_token_batch(3, 7, 5, generator=torch.Generator())
    assert ids.shape == targets.shape == (3, 7)
    assert ids.dtype == targets.dtype == torch.int64
    assert bool((targets[:, 0] == IGNORE).all())
    for b in range(3):
        for t in range(1, 7):
            assert targets[b, t] == ids[b, t - 1]
    assert 0 <= int(ids.min()) and int(ids.max()) < 5


class Oracle(nn.Module):
    """Knows the task: logits that put all weight on the previous token."""

    def __init__(self, vocab_size, wrong_at=()):
        super().__init__()
        self.vocab_size, self.wrong_at = vocab_size, wrong_at

    def forward(self, ids):
        previous = torch.roll(ids, 1, dims=1)
        for t in self.wrong_at:  # a wrong guess at these positions
            previous[:, t] = (previous[:, t] + 1) % self.vocab_size
        return F.one_hot(previous, self.vocab_size).float()


def test_accuracy_by_position_counts_right_guesses_at_each_position():
    ids, targets = previous_token_batch(8, 5, 4, generator=torch.Generator())
    accuracy = accuracy_by_position(Oracle(4, wrong_at=(2,)), ids, targets)
    assert accuracy.shape == (5,)
    assert torch.isnan(accuracy[0])  # position 0 has no target
    torch.testing.assert_close(accuracy[1:], torch.tensor([1.0, 0.0, 1.0, 1.0]))


def test_accuracy_by_position_restores_the_mode_and_leaves_no_gradient():
    model = nn.Sequential(nn.Embedding(4, 8), nn.Dropout(0.5), nn.Linear(8, 4))
    ids, targets = previous_token_batch(2, 5, 4, generator=torch.Generator())
    accuracy_by_position(model, ids, targets)
    assert model.training
    assert all(p.grad is None for p in model.parameters())
    model.eval()
    accuracy_by_position(model, ids, targets)
    assert not model.training


def test_training_learns_the_task_when_the_model_can_see_the_previous_token():
    class PreviousToken(nn.Module):  # reads the previous token directly
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(6, 6)

        def forward(self, ids):
            return self.embedding(torch.roll(ids, 1, dims=1))

    torch.manual_seed(0)
    model = PreviousToken()
    losses = train(
        model, steps=60, batch_size=16, length=6, vocab_size=6, lr=0.1, seed=0
    )
    assert len(losses) == 60 and losses[-1] < 0.1 < losses[0]
    ids, targets = previous_token_batch(32, 6, 6, generator=torch.Generator())
    assert bool((accuracy_by_position(model, ids, targets)[1:] == 1).all())


def test_training_is_seeded():
    def run():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Embedding(5, 4), nn.Linear(4, 5))
        return train(
            model, steps=5, batch_size=4, length=4, vocab_size=5, lr=0.01, seed=1
        )

    assert run() == run()


def test_the_first_token_task_targets_position_0_everywhere():
    ids, targets = first_token_batch(
        3, 9, 7, generator=torch.Generator().manual_seed(4)
    )
    same, _ = previous_token_batch(3, 9, 7, generator=torch.Generator().manual_seed(4))
    assert torch.equal(ids, same)  # the same tokens as the previous-token task
    assert bool((targets[:, 0] == IGNORE).all())
    for b in range(3):
        for t in range(1, 9):
            assert targets[b, t] == ids[b, 0]


def test_train_draws_its_batches_from_the_task_it_is_given():
    drawn = []

    def task(batch_size, length, vocab_size, *, generator):
        drawn.append((batch_size, length, vocab_size))
        return first_token_batch(batch_size, length, vocab_size, generator=generator)

    model = nn.Sequential(nn.Embedding(4, 8), nn.Linear(8, 4))
    train(
        model, steps=2, batch_size=3, length=5, vocab_size=4, lr=0.01, seed=0, task=task
    )
    assert drawn == [(3, 5, 4), (3, 5, 4)]


SETTINGS = dict(steps=1, batch_size=1, length=3, vocab_size=3, lr=0.1, seed=0)
GEN = torch.Generator()
IDS = torch.zeros(2, 3, dtype=torch.long)


@pytest.mark.parametrize(
    "call, error, fragment",
    [
        (partial(previous_token_batch, 2, 1, 5, generator=GEN), ValueError, "length"),
        (
            partial(previous_token_batch, 2, 4, 1, generator=GEN),
            ValueError,
            "vocab_size",
        ),
        (partial(previous_token_batch, 2, 4, 5, generator=0), TypeError, "Generator"),
        (partial(train, "model", **SETTINGS), TypeError, "torch.nn.Module"),
        (
            partial(train, nn.Embedding(3, 3), **SETTINGS | {"lr": -1.0}),
            ValueError,
            "lr",
        ),
        (
            partial(train, nn.Embedding(3, 4), **SETTINGS),
            ValueError,
            "(B, T, vocab_size)",
        ),
        (
            partial(train, nn.Embedding(3, 3), **SETTINGS, task="first"),
            TypeError,
            "task must draw a batch",
        ),
        (
            partial(accuracy_by_position, nn.Embedding(3, 3), IDS, torch.zeros(3)),
            ValueError,
            "both have shape",
        ),
        (
            partial(accuracy_by_position, nn.Embedding(3, 3), [0, 1], torch.zeros(2)),
            TypeError,
            "ids",
        ),
    ],
)
def test_bad_input_is_told_clearly(call, error, fragment, raises_teaching):
    raises_teaching(call, error, [fragment])
