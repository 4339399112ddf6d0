"""The stored measurements of Chapter 11: the swaps of the modern block, attention
sinks and local-global layers, in Chapter 8's GPT.

``make bench-modern`` runs ``python -m tools.bench_modern`` in the course's pinned
numeric environment (``python -m tools.reproducible run -- ...``), so that seed 0
gives what the chapter would train live. Every model is trained by
``attn_course.gpt.modern_run`` (``d_model=64``, 4 heads, windows of 64 characters,
16 a step, the same steps for every model) for each seed, two processes of one
thread each. Three parts, one file, ``attn_course/measured/modern-cpu.json``, which
``attn_course.gpt.stored_modern_runs()`` reads; each row has ``part``, ``variant``,
``seed``, ``parameters`` and ``val_loss``:

- ``swaps``: 4 blocks; Chapter 8's block (``baseline``), then one change at a time
  (``rms``, ``swiglu``, ``no_bias``, ``qk_norm``) and the four together (``all``).
- ``sinks``: the baseline models and 4-block models trained with ``sinks=True``,
  scored on the positions from ``sink_window`` on with a sliding window of
  ``sink_window`` keys at evaluation (``window_loss``), with the first
  ``sink_tokens`` tokens kept visible too as StreamingLLM does (Xiao et al. 2023;
  ``streaming_loss``), and with full attention (``full_loss``). For the baseline
  models, ``first_token_share``: per layer, the weight on token 0, averaged over
  heads and over the queries from position ``sink_window`` on.
- ``windows``: 6 blocks trained with a window of ``train_window`` keys: every layer
  global (``all_global``), every 6th global (``5:1``, as Gemma 3) and every 2nd
  (``1:1``, as gpt-oss); ``kv_numbers_per_token``: the numbers a KV cache keeps per
  token of a full 64-token context, keys and values of all layers, a windowed layer
  keeping at most ``train_window`` tokens.

``--quick`` trains for a few steps and one seed, to check that the command works,
and writes to ``_build/bench/`` unless ``--out`` is given.
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F

from attn_course import sliding_window_mask
from attn_course.gpt import modern_run
from attn_course.training import count_parameters, evaluating
from tools import bench


@dataclass(frozen=True)
class Settings:
    """What one run measures; stored in the file next to the results."""

    seeds: tuple[int, ...] = (0, 1, 2)
    steps: int = 400
    num_layers: int = 4
    window_layers: int = 6
    sink_window: int = 8
    sink_tokens: int = 4
    train_window: int = 16


QUICK = Settings(seeds=(0,), steps=3)

SWAPS = {
    "baseline": {},
    "rms": {"norm": "rms"},
    "swiglu": {"feed_forward": "swiglu"},
    "no_bias": {"bias": False},
    "qk_norm": {"qk_norm": True},
    "all": {"norm": "rms", "feed_forward": "swiglu", "bias": False, "qk_norm": True},
}
WINDOWS = {"all_global": None, "5:1": 6, "1:1": 2}


def losses_with_masks(model, val, settings):
    """Mean cross-entropy on the positions from ``sink_window`` on: with a sliding
    window, with the first tokens kept too, and with full attention."""
    W, T = settings.sink_window, model.config.context_length
    window = sliding_window_mask(T, W)
    streaming = window.clone()
    streaming[:, : settings.sink_tokens] = True  # the causal mask still holds
    masks = {"window": window, "streaming": streaming, "full": None}
    found = {}
    with evaluating(model), torch.no_grad():
        for name, mask in masks.items():
            losses = [
                F.cross_entropy(
                    model(x, attn_mask=mask)[:, W:].flatten(0, 1), y[:, W:].flatten()
                ).item()
                for x, y in val
            ]
            found[f"{name}_loss"] = sum(losses) / len(losses)
    return found


def first_token_share(model, val, settings):
    """Per layer, the attention weight on token 0, averaged over the heads and the
    queries from position ``sink_window`` on."""
    with evaluating(model), torch.no_grad():
        _, weights = model(val[0][0], return_weights=True)  # L x (B, H, T, T)
    return [w[:, :, settings.sink_window :, 0].mean().item() for w in weights]


def kv_numbers_per_token(model):
    """Keys and values kept per token of a full context, over all layers."""
    c = model.config
    T, per_token = c.context_length, 2 * c.num_kv_heads * (c.d_model // c.num_heads)
    kept = [
        T if model.is_global(layer) else min(c.window, T)
        for layer in range(c.num_layers)
    ]
    return sum(kept) * per_token / T


def one_run(part, variant, seed, settings):
    """Train one model and measure it: a row of the results."""
    torch.set_num_threads(1)
    if part == "windows":
        every = WINDOWS[variant]
        changes = {"window": settings.train_window, "global_every": every}
        if every is None:
            changes = {}
        layers = settings.window_layers
    else:
        changes = {"sinks": True} if variant == "sinks" else SWAPS[variant]
        layers = settings.num_layers
    model, val, loss = modern_run(
        seed, steps=settings.steps, num_layers=layers, **changes
    )
    row = {
        "part": part,
        "variant": variant,
        "seed": seed,
        "parameters": count_parameters(model),
        "val_loss": loss,
    }
    if part == "windows":
        row["kv_numbers_per_token"] = kv_numbers_per_token(model)
    if variant in ("baseline", "sinks"):
        row.update(losses_with_masks(model, val, settings))
    if variant == "baseline":
        row["first_token_share"] = first_token_share(model, val, settings)
    print(f"{part:>7} {variant:>10} seed {seed}: {loss:.3f}", flush=True)
    return row


def table(rows):
    """Mean and range over the seeds of each variant's losses."""
    groups = {}
    for row in rows:
        groups.setdefault((row["part"], row["variant"]), []).append(row)
    lines = []
    for (part, variant), group in groups.items():
        for key in ("val_loss", "window_loss", "streaming_loss", "full_loss"):
            if key in group[0]:
                values = [row[key] for row in group]
                lines.append(
                    f"{part:>7} {variant:>10} {key:>14}: mean "
                    f"{statistics.mean(values):.3f}, from {min(values):.3f} to "
                    f"{max(values):.3f} ({group[0]['parameters']:,} parameters)"
                )
    return lines


def main(argv: list[str] | None = None) -> int:
    args = bench.training_arguments(argv, __doc__, "tools.bench_modern")
    if args is None:
        return 2
    settings = QUICK if args.quick else Settings()
    runs = [("swaps", v, s) for v in SWAPS for s in settings.seeds]
    runs += [("sinks", "sinks", s) for s in settings.seeds]
    runs += [("windows", v, s) for v in WINDOWS for s in settings.seeds]
    rows = bench.in_two_processes(one_run, runs, settings)
    results = {
        **bench.provenance(),
        "settings": asdict(settings),
        "measures": "validation loss after equal steps; sinks and windows as above",
        "rows": rows,
    }
    out = args.out or bench.default_out(args.quick, False, "modern")
    bench.report(results, out, table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
