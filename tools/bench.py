"""Time attention three ways side by side, and measure the memory each needs.

``make bench`` runs ``python -m tools.bench``. For a batch of 4 sequences, 12 heads
of width 64 and T = 256, 512, 1024, 2048 and 4096 tokens, each with a causal mask
and without a mask, it runs the forward pass of

- ``plain``: ``softmax((Q * scale) K^T) V`` in a few lines (:func:`plain_attention`),
  which holds the whole ``(B, H, T, T)`` matrix of scores, then of weights; like
  ``tiled``, it scales the queries before the product, not the scores after it (a
  pass over every score less);
- ``tiled``: ``attn_course.tiled_attention`` with its default block size, which
  holds one tile of scores at a time;
- ``sdpa``: ``torch.nn.functional.scaled_dot_product_attention``, PyTorch's fused
  kernel.

A second section runs ``tiled_attention`` at T = 1024 with a causal mask for
several block sizes, next to ``plain`` and ``sdpa``: the measurement behind the
default block size. A third gives a sliding window of 128 keys at T = 2048 to
``sdpa`` and to ``tiled_attention`` as a mask, and to ``banded``
(:func:`banded_attention`), which computes only the band of scores the window
reaches. A fourth runs the first again, in a second Python process whose C
allocator keeps freed memory for the next call (:data:`REUSE_MEMORY`). The
results are printed as a table (time in ms and as a multiple of ``sdpa``'s, peak
memory in MiB and as a fraction of ``plain``'s, page faults per call).

``exp`` times ``torch.exp`` and ``torch.exp2`` on one tile of scores (batch x heads
x block x block numbers), 64 times over: the powers of e that ``plain``'s softmax
computes against the powers of 2 of ``tiled_attention``, in ns per number.

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
    shows the median. On a shared machine the times of one run move together, so
    the ratios between methods hold better than the times themselves.

Page faults on the CPU
    The median number of minor page faults of one call (``ru_minflt`` of
    ``resource.getrusage``): pages the kernel had to map, and fill with zeros, the
    first time the call touched them. glibc's ``malloc``, which PyTorch's CPU tensors
    use, maps a block larger than its *mmap threshold* straight from the kernel and
    hands it back to the kernel when it is freed. The threshold starts at 128 KiB and
    rises to the size of each such block freed, up to 32 MiB on a 64-bit machine
    (``man mallopt``): a block of more than 32 MiB is mapped afresh every time, so
    every call that needs such a tensor touches fresh pages, where smaller blocks are
    soon reused from the heap. The section ``attention, memory reused`` shows what the
    same calls take without that.

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
import math
import multiprocessing
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F

from attn_course import (
    GPT,
    GPTConfig,
    KVCache,
    causal_mask,
    generate,
    sliding_window_mask,
    tiled_attention,
)
from tools.reproducible import PINNED

try:
    import resource  # page faults (Unix only)
except ImportError:
    resource = None

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
    window_length: int = 2048  # the length of the sliding-window section
    window: int = 128  # keys a query sees there, itself included
    warmup: int = 2
    repeats: int = 5
    dtype: str = "float32"
    prompt: int = 16  # generation: the prompt's length
    new_tokens: tuple[int, ...] = (64, 128, 256)  # generation: tokens written
    step_lengths: tuple[int, ...] = (16, 64, 128, 256)  # one step after so many
    generation_batches: tuple[int, ...] = (1, 8)  # sequences generated together
    generation_repeats: int = 3  # writing tokens: long calls, a few suffice
    step_repeats: int = 9  # one step: a few ms, which a busy moment can double


QUICK = Settings(
    lengths=(32, 64),
    block_length=64,
    block_sizes=(16, 64),
    window_length=64,
    window=16,
    repeats=2,
    prompt=4,
    new_tokens=(8, 16),
    step_lengths=(4, 16),
    generation_batches=(1, 2),
    generation_repeats=3,  # a median, not one call that a busy moment can slow
    step_repeats=3,
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
    """``softmax(Q K^T / sqrt(d)) V`` with the whole score matrix at once.

    The queries are scaled before the product, as in ``tiled_attention``: scaling
    the ``(..., T_q, T_k)`` scores after it would cost one more pass over them.
    """
    T_q, T_k = query.size(-2), key.size(-2)
    scores = (query * query.size(-1) ** -0.5) @ key.transpose(-2, -1)
    if is_causal:
        allowed = causal_mask(T_q, T_k, device=scores.device)
        scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.softmax(scores, dim=-1) @ value


def banded_attention(query, key, value, window, block_size):
    """Sliding-window attention that computes only the band of scores: for each
    block of queries, ``sdpa`` on the keys its window reaches (query ``i`` sees keys
    ``i - window + 1 .. i``), as Chapter 9's ``windowed_attention``."""
    T = query.size(-2)
    out = torch.empty_like(query)
    for start in range(0, T, block_size):
        end = min(start + block_size, T)
        first = max(0, start - window + 1)  # the first key the block's first query sees
        query_at = torch.arange(start, end, device=query.device)[:, None]
        key_at = torch.arange(first, end, device=query.device)[None, :]
        allowed = (key_at <= query_at) & (key_at > query_at - window)
        out[..., start:end, :] = F.scaled_dot_product_attention(
            query[..., start:end, :],
            key[..., first:end, :],
            value[..., first:end, :],
            attn_mask=allowed,
        )
    return out


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


def _page_faults():
    """Minor page faults of this process so far, or None where they are not counted."""
    if resource is None:
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def timed(calls, device, settings):
    """``({key: median ms}, {key: median page faults})`` of each zero-argument call
    in ``calls`` (faults None on a GPU, or where they are not counted).

    The calls take turns, one call each per round, so that a busy moment of the
    machine slows every method alike.
    """
    for call in calls.values():
        for _ in range(settings.warmup):
            call()
    times = {name: [] for name in calls}
    faults = {name: [] for name in calls}
    for _ in range(settings.repeats):
        for name, call in calls.items():
            _synchronize(device)
            faults_before = _page_faults()
            start = time.perf_counter()
            call()
            _synchronize(device)
            times[name].append((time.perf_counter() - start) * 1000)
            if faults_before is not None:
                faults[name].append(_page_faults() - faults_before)
    return (
        {name: statistics.median(values) for name, values in times.items()},
        {
            name: None
            if device != "cpu" or not values
            else int(statistics.median(values))
            for name, values in faults.items()
        },
    )


def median_ms(calls, device, settings):
    """{key: median time in ms} of each zero-argument call in ``calls``, taking
    turns (see :func:`timed`)."""
    return timed(calls, device, settings)[0]


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


def measure(methods, T, device, settings, memory):
    """One row per method: its median time, page faults and peak memory on random
    inputs, all methods taking turns in each round.

    ``methods`` holds ``(name, block size or None, mask, function of query, key
    and value)``, where ``mask`` names the mask the function applies
    (``"causal"``, ``"none"`` or ``"window"``); ``memory`` is :func:`cpu_peak_mib`,
    :func:`cuda_peak_mib` or None (not measured).
    """
    gen = torch.Generator(device=device).manual_seed(T)
    shape = (settings.batch, settings.heads, T, settings.head_width)
    dtype = getattr(torch, settings.dtype)
    query, key, value = (
        torch.randn(shape, generator=gen, device=device, dtype=dtype) for _ in range(3)
    )
    calls = {
        (name, block, mask): (lambda f=f: f(query, key, value))
        for name, block, mask, f in methods
    }
    with torch.inference_mode():
        times, faults = timed(calls, device, settings)
        peaks = {
            method: None if memory is None else memory(call)
            for method, call in calls.items()
        }
    return [
        {
            "device": device,
            "T": T,
            "mask": mask,
            "method": name,
            "block_size": block,
            "time_ms": significant(times[name, block, mask]),
            "faults": faults[name, block, mask],
            "peak_mib": None
            if peaks[name, block, mask] is None
            else round(peaks[name, block, mask], 2),
        }
        for name, block, mask in calls
    ]


# --- sections: each returns rows ------------------------------------------------


def _with_mask(methods, is_causal):
    """The methods, each called with ``is_causal``, and the name of their mask."""
    mask = "causal" if is_causal else "none"
    return [
        (name, block, mask, partial(f, is_causal=is_causal))
        for name, block, f in methods
    ]


def attention_rows(device, settings, memory, masks=(True, False)):
    """plain, tiled (default block size) and sdpa at every length, with and without
    the causal mask (``masks``: the values of ``is_causal``), the two masks taking
    turns in the same rounds."""
    methods = [PLAIN, tiled(DEFAULT_BLOCK), SDPA]
    both = [method for is_causal in masks for method in _with_mask(methods, is_causal)]
    rows = []
    for T in settings.lengths:
        rows += measure(both, T, device, settings, memory)
    return rows


def block_size_rows(device, settings, memory):
    """tiled_attention at one length with a causal mask, for several block sizes."""
    methods = [PLAIN, SDPA] + [tiled(size) for size in settings.block_sizes]
    methods = _with_mask(methods, True)
    return measure(methods, settings.block_length, device, settings, memory)


def window_rows(device, settings, memory):
    """A sliding window at one length: sdpa and tiled_attention given it as a mask,
    and the banded loop, all with the default block size."""
    T, window = settings.window_length, settings.window
    allowed = sliding_window_mask(T, window, device=device)
    methods = [
        (
            "sdpa",
            None,
            "window",
            partial(F.scaled_dot_product_attention, attn_mask=allowed),
        ),
        (
            "tiled",
            DEFAULT_BLOCK,
            "window",
            partial(tiled_attention, attn_mask=allowed, block_size=DEFAULT_BLOCK),
        ),
        (
            "banded",
            DEFAULT_BLOCK,
            "window",
            partial(banded_attention, window=window, block_size=DEFAULT_BLOCK),
        ),
    ]
    return measure(methods, T, device, settings, memory)


REUSE_MEMORY = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "100000000000"}
"""glibc's settings, read when a process starts, that keep freed memory for the next
allocation: no block of its own from the kernel (``mmap``) however large, and no
memory handed back from the top of the heap below 10^11 bytes. (The threshold must
be written out in digits: glibc does not read ``1e11`` as 10^11, and goes on handing
memory back.)"""

_CHILD_OPTION = "--attention-rows-for-parent"


def reused_memory_rows(device, settings, memory):
    """The attention section again, in a second Python process started with
    :data:`REUSE_MEMORY` and torch's thread count of this one. On the CPU with
    glibc only; elsewhere no rows."""
    if device != "cpu" or memory is None:
        return []
    child = subprocess.run(
        [sys.executable, "-m", "tools.bench", _CHILD_OPTION],
        input=json.dumps({**asdict(settings), "threads": torch.get_num_threads()}),
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, **REUSE_MEMORY},
    )
    return json.loads(child.stdout)


def _attention_rows_for_parent():
    """The child of :func:`reused_memory_rows`: settings in on stdin, rows out."""
    given = json.loads(sys.stdin.read())
    torch.set_num_threads(given.pop("threads"))
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in given.items()}
    rows = attention_rows("cpu", Settings(**fields), cpu_peak_mib)
    print(json.dumps(rows))
    return 0


SECTIONS = {
    "attention": attention_rows,
    "block size": block_size_rows,
    "window": window_rows,
    "attention, memory reused": reused_memory_rows,
}
"""Each section's name and the function that measures its rows, in order."""


def exp_rows(device, settings):
    """``torch.exp`` and ``torch.exp2`` on one tile of scores of the default block
    size, once for each tile of a ``block_length`` sequence without a mask; each
    writes into a tensor kept for it. Rows: the time and the ns per number."""
    gen = torch.Generator(device=device).manual_seed(0)
    shape = (settings.batch, settings.heads, DEFAULT_BLOCK, DEFAULT_BLOCK)
    tile = torch.randn(shape, generator=gen, device=device)
    out = torch.empty_like(tile)
    tiles = math.ceil(settings.block_length / DEFAULT_BLOCK) ** 2

    def call(function):
        for _ in range(tiles):
            function(tile, out=out)

    calls = {name: partial(call, getattr(torch, name)) for name in ("exp", "exp2")}
    times = median_ms(calls, device, settings)
    numbers = tiles * tile.numel()
    return [
        {
            "device": device,
            "function": name,
            "numbers": numbers,
            "time_ms": significant(ms),
            "ns_per_number": significant(ms * 1e6 / numbers),
        }
        for name, ms in times.items()
    ]


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
    step_timing = Settings(warmup=2, repeats=settings.step_repeats)
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
                times = median_ms(calls, device, step_timing)
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
    and ``plain`` rows of the same section, device, length and mask (None where
    the section has no such row)."""

    def group(row):
        return (row["section"], row["device"], row["T"], row["mask"])

    reference = {(group(row), row["method"]): row for row in rows}
    for row in rows:
        sdpa_row = reference[group(row), "sdpa"]
        plain_row = reference.get((group(row), "plain"), {"peak_mib": None})
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
    exp = [row for device in devices for row in exp_rows(device, settings)]
    return {
        **provenance(),
        "settings": {**asdict(settings), "default_block_size": DEFAULT_BLOCK},
        "memory_note": problem or "CPU: growth of the RSS high-water mark (VmHWM)",
        "reused_memory_env": REUSE_MEMORY,
        "rows": add_ratios(rows),
        "generation": generation,
        "exp": exp,
    }


def _number(value, digits):
    return "-" if value is None else f"{value:.{digits}f}"


def table(results):
    """The results as a text table, one block per section."""
    lines = []
    header = (
        f"{'device':6} {'T':>5} {'mask':6} {'method':6} {'block':>5} "
        f"{'time ms':>9} {'x sdpa':>7} {'peak MiB':>9} {'x plain':>8} {'faults':>7}"
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
                f"{_number(row['peak_vs_plain'], 3):>8} {_number(row['faults'], 0):>7}"
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
    lines += ["", "exp and exp2 on tiles of scores:"]
    for row in results["exp"]:
        lines.append(
            f"{row['device']:6} {row['function']:5} {row['numbers']:>11,} numbers "
            f"{row['time_ms']:>9.1f} ms {row['ns_per_number']:>7.3f} ns/number"
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


def training_arguments(argv, doc, module):
    """The options of a benchmark of seeded training runs (``tools.bench_modern``,
    ``tools.bench_recall``): parsed, or ``None`` after saying how to run ``module``
    when the pinned numeric environment is not set and ``--quick`` is not given."""
    args = arguments(
        argv,
        doc,
        quick_help="a few steps and one seed, to check that the command works",
        threads_help="ignored: each run uses one thread",
    )
    unpinned = sorted(k for k, v in PINNED.items() if os.environ.get(k) != v)
    if unpinned and not args.quick:
        print(
            f"not in the pinned numeric environment ({', '.join(unpinned)} not set): "
            f"run python -m tools.reproducible run -- python -m {module}"
        )
        return None
    return args


def in_two_processes(function, runs, settings):
    """``function(*run, settings)`` for each of ``runs``, in order, in two spawned
    processes (each run sets one torch thread)."""
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=spawn) as pool:
        return list(
            pool.map(function, *zip(*runs, strict=True), [settings] * len(runs))
        )


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
    if (sys.argv[1:] if argv is None else argv) == [_CHILD_OPTION]:
        return _attention_rows_for_parent()
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
