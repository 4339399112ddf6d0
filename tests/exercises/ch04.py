"""Answers to the exercises of Chapter 4 (see tests/exercises/__init__.py)."""

from tests.exercises import Answers, wrong

NOTEBOOK = "04_dropout.ipynb"

ANSWERS = {
    "ch04-ex-dropout": Answers(
        right="""
def my_dropout(weights, p, generator):
    keep = torch.rand(weights.shape, generator=generator) >= p
    return torch.where(keep, weights / (1 - p), 0.0)
""",
        wrong=(
            wrong(
                "unscaled",
                "def my_dropout(weights, p, generator):\n"
                "    keep = torch.rand(weights.shape, generator=generator) >= p\n"
                "    return weights * keep",
                "the kept weights are not rescaled",
            ),
            wrong(
                "divided-by-p",
                "def my_dropout(weights, p, generator):\n"
                "    keep = torch.rand(weights.shape, generator=generator) >= p\n"
                "    return weights * keep / p",
                "the kept weights are divided by p",
            ),
            wrong(
                "bernoulli-p",
                "def my_dropout(weights, p, generator):\n"
                "    probs = torch.full_like(weights, p)\n"
                "    keep = torch.bernoulli(probs, generator=generator)\n"
                "    return weights * keep / (1 - p)",
                "you dropped a weight with probability 1 - p",
            ),
            wrong(
                "global-generator",
                "def my_dropout(weights, p, generator):\n"
                "    return F.dropout(weights, p, training=True)",
                "used the global random generator",
            ),
            wrong(
                "in-place",
                "def my_dropout(weights, p, generator):\n"
                "    keep = torch.rand(weights.shape, generator=generator) >= p\n"
                "    weights[~keep] = 0.0\n"
                "    return weights.div_(1 - p)",
                "changed its input weights",
                "in place",
            ),
        ),
    ),
    "ch04-ex-all-dropped": Answers(
        right="""
def prob_all_dropped(weights, p):
    return p ** (weights > 0).sum(dim=-1)
""",
        wrong=(
            wrong(
                "all-kept",
                "def prob_all_dropped(weights, p):\n"
                "    return (1 - p) ** (weights > 0).sum(dim=-1)",
                "every weight is KEPT",
                "only for p = 0.5",
            ),
            wrong(
                "at-least-one",
                "def prob_all_dropped(weights, p):\n"
                "    return 1 - (1 - p) ** (weights > 0).sum(dim=-1)",
                "AT LEAST ONE weight is dropped",
            ),
            wrong(
                "masked-counted",
                "def prob_all_dropped(weights, p):\n"
                "    return torch.full(weights.shape[:-1], p ** weights.shape[-1])",
                "the masked keys were counted too",
            ),
            wrong(
                "sum-of-weights",
                "def prob_all_dropped(weights, p):\n"
                "    return p ** weights.sum(dim=-1)",
                "computed k as weights.sum(dim=-1)",
            ),
            wrong(
                "columns",
                "def prob_all_dropped(weights, p):\n"
                "    return p ** (weights > 0).sum(dim=0)",
                "counted down the columns",
            ),
            wrong(
                "added",
                "def prob_all_dropped(weights, p):\n"
                "    return p * (weights > 0).sum(dim=-1)",
                "rather than add",
            ),
        ),
    ),
    "ch04-ex-eval": Answers(
        right="""
def eval_forward(module, x):
    was_training = module.training
    module.eval()
    try:
        return module(x)
    finally:
        module.train(was_training)
""",
        wrong=(
            wrong(
                "no-grad-only",
                "def eval_forward(module, x):\n"
                "    with torch.no_grad():\n"
                "        return module(x)",
                "dropout is still on",
                "torch.no_grad() only stops gradient tracking",
            ),
            wrong(
                "never-restores",
                "def eval_forward(module, x):\n    module.eval()\n    return module(x)",
                "was in training mode before your function",
                "module.train(was_training)",
            ),
            wrong(
                "back-to-training",
                "def eval_forward(module, x):\n"
                "    module.eval()\n"
                "    output = module(x)\n"
                "    module.train()\n"
                "    return output",
                "was in eval mode before your function",
            ),
            wrong(
                "with-weights",
                "def eval_forward(module, x):\n"
                "    was_training = module.training\n"
                "    module.eval()\n"
                "    output = module(x, return_weights=True)\n"
                "    module.train(was_training)\n"
                "    return output",
                "expected a torch.Tensor, got tuple",
            ),
        ),
    ),
}
