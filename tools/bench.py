"""Time attention three ways side by side, and measure the memory each needs.

``make bench`` runs ``python -m tools.bench``. For a batch of 4 sequences, 12 heads
of width 64 and T = 256, 512, 1024, 2048 and 4096 tokens, each with a causal mask
and without a mask, it runs the forward pass of

- ``plain``: ``softmax(Q K^T * scale) V`` in a few lines (:func:`plain_attention`),
  which holds the whole ``(B, H, T, T)`` matrix of scores, then of weights;
- ``tiled``: ``attn_course.tiled_attention`` with its default block size, which
  holds one tile of scores at a time;
- ``sdpa``: ``torch.nn.functional.scaled_dot_product_attention``, PyTorch's fused
  kernel.

A second section runs ``tiled_attention`` at T = 1024 with a causal mask for
several block sizes, next to ``plain`` and ``sdpa``: the measurement behind the
default block size. The results are printed as a table (time in ms and as a
multiple of ``sdpa``'s, peak memory in MiB and as a fraction of ``plain``'s).

Generation is measured apart, with and without a KV cache
(``attn_course.generate(..., use_cache=...)``), on a GPT of Chapter 8's sizes
(V = 103, D = 96, 4 heads, 4 layers; its weights are random, which changes nothing
in the time) with a context long enough for every length: the time of one step
of generation at several lengths already written, and the time to write 64, 128
and 256 tokens after a prompt of 16, greedy, for one sequence and for a batch of 8.
Its table gives each time and the speed-up, uncached time divided by cached time.

Everything is written as JSON, with the machine, the torch version and the date, to
``attn_course/measured/bench-cpu.json`` (``bench-cuda.json`` on a machine with
CUDA, which adds the same rows on the GPU): the files travel with the package, and
the Chapter 9 notebook reads them with ``attn_course.efficient.stored_benchmark()``,
wherever it runs. ``--quick`` measures two short lengths with few repeats,
to check that the command works, and writes to ``_build/bench/`` unless ``--out``
is given.

Time
    Every call runs under ``torch.inference_mode()``. After ``--warmup`` calls of
    each method, ``--repeats`` rounds call each method once in turn (so that a
    busy moment of the machine slows all three alike), timed with
    ``time.perf_counter`` (after ``torch.cuda.synchronize()`` on a GPU); the table
    shows the median.

Peak memory on the CPU
    The most resident memory (RSS) the process holds during one call, minus what
    it held just before: what the call needs beyond its inputs (its output
    included, the same for every method). Linux keeps that high-water mark as
    ``VmHWM`` in ``/proc/self/status`` and resets it to the current RSS when ``5``
    is written to ``/proc/self/clear_refs``. Memory freed by earlier calls stays
    in the C allocator's free lists, where a new allocation could reuse it without
    the RSS growing; so before each measured call the free memory is handed back
    to the system (``gc.collect()``, then glibc's ``malloc_trim(0)``), and every
    page the call touches is counted. It is the memory the process really holds:
    a freed block that the allocator keeps but cannot reuse for the next request
    counts too. ``tests/test_bench.py`` checks the method on tensors of known
    size. Elsewhere than Linux with glibc the peak columns are
    empty (``null``) and the command says so.

Peak memory on a GPU
    ``torch.cuda.max_memory_allocated()`` during the call minus
    ``torch.cuda.memory_allocated()`` before it.

Sections
    Each section of attention rows is a function that returns rows (dicts);
    :data:`SECTIONS` lists them in order. A new comparison of attention functions
    is a new function added there; printing, ratios and the file need no change.
    Generation rows (:func:`generation_rows`) have fields of their own and go to
    the file's ``generation`` list.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import gc
import inspect
import json
import os
import platform
import re
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from attn_course import GPT, GPTConfig, KVCache, causal_mask, generate, tiled_attention

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "attn_course" / "measured"
QUICK_DIR = ROOT / "_build" / "bench"
MIB = 2**20
DEFAULT_BLOCK = inspect.signature(tiled_attention).parameters["block_size"].default


@dataclass(frozen=True)
class Settings:
    """What one run measures; stored in the file next to the results."""

    batch: int = 4
    heads: int = 12
    head_width: int = 64
    lengths: tuple[int, ...] = (256, 512, 1024, 2048, 4096)
    block_length: int = 1024  # the length of the block-size section
    block_sizes: tuple[int, ...] = (32, 64, 128, 256, 512)
    warmup: int = 1
    repeats: int = 5
    dtype: str = "float32"
    prompt: int = 16  # generation: the prompt's length
    new_tokens: tuple[int, ...] = (64, 128, 256)  # generation: tokens written
    step_lengths: tuple[int, ...] = (16, 64, 128, 256)  # one step after so many
    generation_batches: tuple[int, ...] = (1, 8)  # sequences generated together
    generation_repeats: int = 3


QUICK = Settings(
    lengths=(32, 64),
    block_length=64,
    block_sizes=(16, 64),
    repeats=2,
    prompt=4,
    new_tokens=(8, 16),
    step_lengths=(4, 16),
    generation_batches=(1, 2),
    generation_repeats=3,  # a median, not one call that a busy moment can slow
)
"""``--quick``: short lengths and few repeats, to check that the command works."""


def significant(value, digits=4):
    """``value`` rounded to ``digits`` significant digits: a time of 0.0123 ms keeps
    its precision as well as one of 123 ms.

    >>> significant(0.00123456), significant(1234.56)
    (0.001235, 1235.0)
    """
    return float(f"{value:.{digits}g}")


def plain_attention(query, key, value, is_causal=False):
    """``softmax(Q K^T / sqrt(d)) V`` with the whole score matrix at once."""
    T_q, T_k = query.size(-2), key.size(-2)
    scores = query @ key.transpose(-2, -1) * query.size(-1) ** -0.5
    if is_causal:
        allowed = causal_mask(T_q, T_k, device=scores.device)
        scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.softmax(scores, dim=-1) @ value


def sdpa(query, key, value, is_causal=False):
    """PyTorch's fused kernel."""
    return F.scaled_dot_product_attention(query, key, value, is_causal=is_causal)


def tiled(block_size):
    """``("tiled", block_size, function)``: tiled_attention with this block size."""

    def run(query, key, value, is_causal=False):
        return tiled_attention(
            query, key, value, block_size=block_size, is_causal=is_causal
        )

    return ("tiled", block_size, run)


PLAIN = ("plain", None, plain_attention)
SDPA = ("sdpa", None, sdpa)


# --- measuring ----------------------------------------------------------------


def _synchronize(device):
    if device == "cuda":
        torch.cuda.synchronize()


def median_ms(calls, device, settings):
    """{key: median time in ms} of each zero-argument call in ``calls``.

    The calls take turns, one call each per round, so that a busy moment of the
    machine slows every method alike.
    """
    for call in calls.values():
        for _ in range(settings.warmup):
            call()
    times = {name: [] for name in calls}
    for _ in range(settings.repeats):
        for name, call in calls.items():
            _synchronize(device)
            start = time.perf_counter()
            call()
            _synchronize(device)
            times[name].append((time.perf_counter() - start) * 1000)
    return {name: statistics.median(values) for name, values in times.items()}


_LIBC = ctypes.CDLL(None) if sys.platform.startswith("linux") else None


def cpu_memory_problem():
    """Why the CPU peak memory cannot be measured here, or "" when it can."""
    if _LIBC is None or not hasattr(_LIBC, "malloc_trim"):
        return "peak memory on the CPU needs Linux with glibc (malloc_trim)"
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError as error:
        return f"cannot reset the RSS high-water mark: {error}"
    return ""


def _status_mib(field):
    """A memory field of ``/proc/self/status`` (``VmRSS``, ``VmHWM``) in MiB."""
    status = Path("/proc/self/status").read_text()
    kib = re.search(rf"^{field}:\s+(\d+) kB$", status, flags=re.M).group(1)
    return int(kib) / 1024


def cpu_peak_mib(call):
    """How many MiB of resident memory ``call()`` needs beyond what is held before."""
    gc.collect()
    _LIBC.malloc_trim(0)  # give freed memory back, so that reusing it counts
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    before = _status_mib("VmRSS")
    call()
    return _status_mib("VmHWM") - before


def cuda_peak_mib(call):
    """How many MiB of GPU memory ``call()`` allocates beyond what is held before."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    call()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - before) / MIB


def measure(methods, T, is_causal, device, settings, memory):
    """One row per method: its median time and peak memory on random inputs.

    ``methods`` holds ``(name, block size or None, function)`` triples; ``memory``
    is :func:`cpu_peak_mib`, :func:`cuda_peak_mib` or None (not measured).
    """
    gen = torch.Generator(device=device).manual_seed(T)
    shape = (settings.batch, settings.heads, T, settings.head_width)
    dtype = getattr(torch, settings.dtype)
    query, key, value = (
        torch.randn(shape, generator=gen, device=device, dtype=dtype) for _ in range(3)
    )
    calls = {
        (name, block): (lambda f=f: f(query, key, value, is_causal=is_causal))
        for name, block, f in methods
    }
    with torch.inference_mode():
        times = median_ms(calls, device, settings)
        peaks = {
            method: None if memory is None else memory(call)
            for method, call in calls.items()
        }
    return [
        {
            "device": device,
            "T": T,
            "mask": "causal" if is_causal else "none",
            "method": name,
            "block_size": block,
            "time_ms": significant(times[name, block]),
            "peak_mib": None
            if peaks[name, block] is None
            else round(peaks[name, block], 2),
        }
        for name, block in calls
    ]


# --- sections: each returns rows ------------------------------------------------


def attention_rows(device, settings, memory):
    """plain, tiled (default block size) and sdpa at every length, with and without
    the causal mask."""
    methods = [PLAIN, tiled(DEFAULT_BLOCK), SDPA]
    rows = []
    for T in settings.lengths:
        for is_causal in (True, False):
            rows += measure(methods, T, is_causal, device, settings, memory)
    return rows


def block_size_rows(device, settings, memory):
    """tiled_attention at one length with a causal mask, for several block sizes."""
    methods = [PLAIN, SDPA] + [tiled(size) for size in settings.block_sizes]
    return measure(methods, settings.block_length, True, device, settings, memory)


SECTIONS = {"attention": attention_rows, "block size": block_size_rows}
"""Each section's name and the function that measures its rows, in order."""


# --- generation with and without a KV cache ----------------------------------------

GENERATION_MODEL = dict(vocab_size=103, d_model=96, num_heads=4, num_layers=4)
"""Chapter 8's tiny GPT, less its context length (the run sets one that fits)."""


def generation_model(settings, device):
    """A GPT of Chapter 8's sizes whose context holds the longest run."""
    longest = max(
        settings.prompt + max(settings.new_tokens), max(settings.step_lengths)
    )
    torch.manual_seed(0)
    config = GPTConfig(context_length=longest, **GENERATION_MODEL)
    return GPT(config).to(device).eval()


def generation_rows(device, settings):
    """Rows of generation with (``cached``) and without (``uncached``) a cache.

    ``kind="step"``: one step of generation once ``tokens`` tokens are written,
    i.e. the model on all ``tokens`` tokens, or on the newest one with a cache
    holding the ``tokens - 1`` before it. ``kind="generate"``: writing ``tokens``
    new tokens after the prompt, from start to end. Each for every batch size of
    ``settings.generation_batches``. ``speedup`` is the uncached time over the
    cached time of the same kind, device, batch and length.
    """
    model = generation_model(settings, device)
    gen = torch.Generator(device="cpu").manual_seed(1)
    V = GENERATION_MODEL["vocab_size"]
    timing = _generation_settings(settings)
    rows = []
    with torch.inference_mode():
        for batch in settings.generation_batches:
            for tokens in settings.step_lengths:
                idx = torch.randint(0, V, (batch, tokens), generator=gen).to(device)
                cache = KVCache(model.config.num_layers)
                if tokens > 1:
                    model(idx[:, :-1], cache=cache)  # the tokens before the newest

                def cached_step(idx=idx, cache=cache, tokens=tokens):
                    logits = model(idx[:, -1:], cache=cache)
                    cache.truncate(tokens - 1)  # every repeat sees one cache
                    return logits

                calls = {"uncached": lambda idx=idx: model(idx), "cached": cached_step}
                times = median_ms(calls, device, timing)
                rows += _generation_pair(device, "step", batch, tokens, times, 1)
            shape = (batch, settings.prompt)
            prompt = torch.randint(0, V, shape, generator=gen).to(device)
            for tokens in settings.new_tokens:
                calls = {
                    method: (
                        lambda use_cache=use_cache, tokens=tokens, prompt=prompt: (
                            generate(
                                model,
                                prompt,
                                tokens,
                                temperature=0,
                                use_cache=use_cache,
                            )
                        )
                    )
                    for method, use_cache in (("uncached", False), ("cached", True))
                }
                times = median_ms(calls, device, timing)
                rows += _generation_pair(
                    device, "generate", batch, tokens, times, tokens
                )
    return rows


def _generation_settings(settings):
    return Settings(warmup=1, repeats=settings.generation_repeats)


def _generation_pair(device, kind, batch, tokens, times, per_token):
    speedup = significant(times["uncached"] / times["cached"])
    return [
        {
            "device": device,
            "kind": kind,
            "batch": batch,
            "tokens": tokens,
            "method": method,
            "time_ms": significant(times[method]),
            "ms_per_token": significant(times[method] / per_token),
            "speedup": speedup,
        }
        for method in ("uncached", "cached")
    ]


def add_ratios(rows):
    """Add ``time_vs_sdpa`` and ``peak_vs_plain``: each row against the ``sdpa``
    and ``plain`` rows of the same section, device, length and mask."""

    def group(row):
        return (row["section"], row["device"], row["T"], row["mask"])

    reference = {(group(row), row["method"]): row for row in rows}
    for row in rows:
        sdpa_row = reference[group(row), "sdpa"]
        plain_row = reference[group(row), "plain"]
        row["time_vs_sdpa"] = round(row["time_ms"] / sdpa_row["time_ms"], 4)
        peaks = (row["peak_mib"], plain_row["peak_mib"])
        row["peak_vs_plain"] = None if None in peaks else round(peaks[0] / peaks[1], 4)
    return rows


# --- the run ----------------------------------------------------------------------


def machine():
    """The CPU model, core count, torch's thread count and the GPU, if any."""
    cpu = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        found = re.search(r"^model name\s*:\s*(.+)$", cpuinfo.read_text(), re.M)
        cpu = found.group(1).strip() if found else cpu
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "platform": platform.platform(),
    }


def provenance():
    """When, where and with what a run was measured: the first fields of its file."""
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"
        ),
        "machine": machine(),
        "torch": torch.__version__,
        "python": platform.python_version(),
    }


def run(settings):
    """Every section on the CPU, and on the GPU when there is one: the results."""
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    problem = cpu_memory_problem()
    memory = {"cpu": None if problem else cpu_peak_mib, "cuda": cuda_peak_mib}
    rows = []
    for section, measure_section in SECTIONS.items():
        for device in devices:
            for row in measure_section(device, settings, memory[device]):
                rows.append({"section": section, **row})
    generation = [
        row for device in devices for row in generation_rows(device, settings)
    ]
    return {
        **provenance(),
        "settings": {**asdict(settings), "default_block_size": DEFAULT_BLOCK},
        "memory_note": problem or "CPU: growth of the RSS high-water mark (VmHWM)",
        "rows": add_ratios(rows),
        "generation": generation,
    }


def _number(value, digits):
    return "-" if value is None else f"{value:.{digits}f}"


def table(results):
    """The results as a text table, one block per section."""
    lines = []
    header = (
        f"{'device':6} {'T':>5} {'mask':6} {'method':6} {'block':>5} "
        f"{'time ms':>9} {'x sdpa':>7} {'peak MiB':>9} {'x plain':>8}"
    )
    for section in dict.fromkeys(row["section"] for row in results["rows"]):
        lines += ["", f"{section}:", header]
        for row in results["rows"]:
            if row["section"] != section:
                continue
            block = "" if row["block_size"] is None else row["block_size"]
            lines.append(
                f"{row['device']:6} {row['T']:>5} {row['mask']:6} {row['method']:6} "
                f"{block:>5} {row['time_ms']:>9.1f} {row['time_vs_sdpa']:>7.2f} "
                f"{_number(row['peak_mib'], 1):>9} "
                f"{_number(row['peak_vs_plain'], 3):>8}"
            )
    lines += [
        "",
        "generation (one step after `tokens` tokens; or writing `tokens` new ones):",
        f"{'device':6} {'kind':8} {'batch':>5} {'tokens':>6} {'method':8} "
        f"{'time ms':>9} {'ms/token':>8} {'speed-up':>8}",
    ]
    for row in results["generation"]:
        lines.append(
            f"{row['device']:6} {row['kind']:8} {row['batch']:>5} {row['tokens']:>6} "
            f"{row['method']:8} {row['time_ms']:>9.1f} {row['ms_per_token']:>8.2f} "
            f"{row['speedup']:>8.2f}"
        )
    return "\n".join(lines)


def default_out(quick, has_cuda, stem="bench"):
    """Where results go without ``--out``: the chapter's data, or ``_build/bench/``
    for a quick run (so that it never replaces a full run's file)."""
    name = f"{stem}-cuda.json" if has_cuda else f"{stem}-cpu.json"
    return (QUICK_DIR if quick else DATA) / name


def arguments(argv, doc, *, quick_help, threads_default=None, threads_help):
    """The options of a benchmark command, parsed; sets torch's thread count."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--out", type=Path, help="where to write the JSON results")
    parser.add_argument(
        "--threads", type=int, default=threads_default, help=threads_help
    )
    args = parser.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    return args


def report(results, out, lines):
    """Print the machine, then ``lines``; write ``results`` as JSON to ``out``."""
    header = results["machine"]
    print(
        f"{header['cpu']}, {header['cores']} cores, {header['torch_threads']} torch "
        f"threads, torch {results['torch']}, {results['date']}"
    )
    for line in lines:
        print(line)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"\nwritten to {out}")


def main(argv: list[str] | None = None) -> int:
    args = arguments(
        argv,
        __doc__,
        quick_help="two short lengths and few repeats, to check that the command works",
        threads_help="torch's CPU threads (default: torch's own)",
    )
    settings = QUICK if args.quick else Settings()
    out = args.out or default_out(args.quick, torch.cuda.is_available())
    results = run(settings)
    report(results, out, [f"peak memory: {results['memory_note']}", table(results)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
