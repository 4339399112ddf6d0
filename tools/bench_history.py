"""Time one training step of a recurrent layer and of an attention layer as T grows.

``make bench-history`` runs ``python -m tools.bench_history``. For a batch of 8
sequences of width 128 and T = 16, 32, ..., 1024 tokens it times one training step,
the forward pass, a loss and the backward pass, of

- ``gru``: ``torch.nn.GRU(128, 128)``, one recurrent layer; its T steps run one
  after the other, each waiting for the hidden state of the step before;
- ``attention``: ``attn_course.MultiHeadAttention`` with 4 heads and no causal
  mask, one self-attention layer of the same width, where every position is
  computed at once.

Each is timed with ``median_ms`` of :mod:`tools.bench` (warm-up calls, then rounds
that call the two in turn, the median of each). PyTorch runs on one CPU thread
unless ``--threads`` says otherwise: the two layers then compare by the work each
does, and a machine busy with other programs disturbs the run less. The thread
count is stored with the machine. The results are printed as a
table and written as JSON, with the machine, the torch version, the date and the
settings, to ``attn_course/measured/history-cpu.json`` (``history-cuda.json`` with
CUDA, where the rows are measured on the GPU too). Chapter 10 reads the file with
``attn_course.history.stored_step_times()``. ``--quick`` measures two short
lengths with one repeat, to check that the command works, and writes to
``_build/bench/`` unless ``--out`` is given.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass

import torch
from torch import nn

from attn_course import MultiHeadAttention
from tools import bench
from tools.bench import median_ms


@dataclass(frozen=True)
class Settings:
    """What one run measures; stored in the file next to the results."""

    batch: int = 8
    width: int = 128
    heads: int = 4
    lengths: tuple[int, ...] = (16, 32, 64, 128, 256, 512, 1024)
    warmup: int = 2
    repeats: int = 7
    dtype: str = "float32"


QUICK = Settings(lengths=(8, 16), warmup=1, repeats=1)
"""``--quick``: two short lengths and one repeat, to check that the command works."""

METHODS = ("gru", "attention")


def layers(settings, T, device):
    """``{method: layer}``, both of width ``settings.width``, seeded."""
    torch.manual_seed(0)
    D = settings.width
    return {
        "gru": nn.GRU(D, D, batch_first=True).to(device),
        "attention": MultiHeadAttention(D, D, T, 0.0, settings.heads, causal=False).to(
            device
        ),
    }


def training_step(layer, x):
    """Forward, a loss (the mean of the output), backward; gradients dropped."""
    out = layer(x)
    if isinstance(out, tuple):  # nn.GRU returns (states, last state)
        out = out[0]
    out.mean().backward()  # (B, T, D) -> a scalar, then gradients
    layer.zero_grad(set_to_none=True)


def rows(settings, device):
    """One row per method and length: the median time of a training step."""
    found = []
    dtype = getattr(torch, settings.dtype)
    for T in settings.lengths:
        gen = torch.Generator(device=device).manual_seed(T)
        shape = (settings.batch, T, settings.width)
        x = torch.randn(shape, generator=gen, device=device, dtype=dtype)
        x.requires_grad_(True)  # as if it came from the layers below
        timed = layers(settings, T, device)
        calls = {
            name: (lambda layer=layer, x=x: training_step(layer, x))
            for name, layer in timed.items()
        }
        times = median_ms(calls, device, settings)
        for name in METHODS:
            found.append(
                {
                    "device": device,
                    "T": T,
                    "method": name,
                    "time_ms": round(times[name], 3),
                    # steps that must run one after the other in the layer
                    "sequential_steps": T if name == "gru" else 1,
                }
            )
    return found


def run(settings):
    """Every length on the CPU, and on the GPU when there is one: the results."""
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    found = [row for device in devices for row in rows(settings, device)]
    return {
        **bench.provenance(),
        "settings": asdict(settings),
        "measures": "median time of one training step (forward, mean, backward)",
        "rows": found,
    }


def table(results):
    """The results as a text table: one line per device and length."""
    lines = [
        f"{'device':6} {'T':>5} {'gru ms':>9} {'attention ms':>13} "
        f"{'gru/attention':>14}"
    ]
    by_key = {(r["device"], r["T"], r["method"]): r["time_ms"] for r in results["rows"]}
    for device, T in dict.fromkeys((r["device"], r["T"]) for r in results["rows"]):
        gru, attention = by_key[device, T, "gru"], by_key[device, T, "attention"]
        lines.append(
            f"{device:6} {T:>5} {gru:>9.2f} {attention:>13.2f} {gru / attention:>14.2f}"
        )
    return "\n".join(lines)


def default_out(quick, has_cuda):
    """Where results go without ``--out``: the package's data, or ``_build/bench/``
    for a quick run (so that it never replaces a full run's file)."""
    return bench.default_out(quick, has_cuda, "history")


def main(argv: list[str] | None = None) -> int:
    args = bench.arguments(
        argv,
        __doc__,
        quick_help="two short lengths and one repeat, to check that the command works",
        threads_default=1,
        threads_help="torch's CPU threads (default 1: see the module's docstring)",
    )
    settings = QUICK if args.quick else Settings()
    out = args.out or default_out(args.quick, torch.cuda.is_available())
    results = run(settings)
    widths = (
        f"batch {settings.batch}, width {settings.width}: {results['measures']}, ms"
    )
    bench.report(results, out, [widths, table(results)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
