"""Attention without the full score matrix: online softmax, tiled attention and
sliding-window masks.

Plain attention builds a ``(T_q, T_k)`` score matrix per head, memory that grows
with the square of the length. :func:`online_softmax` and :func:`tiled_attention`
compute the same result one block at a time, keeping a *running maximum* and a
*running sum* per row; :func:`sliding_window_mask` lets a query see only the most
recent keys. :func:`stored_benchmark`, :func:`print_timings`,
:func:`print_stored_timings` and :func:`operations_run` report timings and the
operations a call runs. Introduced in Chapter 9, where each function is first
written by hand.
"""

import json
import math
import os
from importlib import resources

import torch

from ._validate import kind_of, require_floating, require_int, require_tensor
from .functional import _check_inputs
from .masks import causal_mask, to_additive_mask

__all__ = [
    "operations_run",
    "online_softmax",
    "print_stored_timings",
    "print_timings",
    "sliding_window_mask",
    "stored_benchmark",
    "tiled_attention",
]

_LOG2_E = math.log2(math.e)

_BLOCK_HINT = "it counts the entries handled together, e.g. block_size=64"


def online_softmax(x, block_size, dim=-1):
    """Softmax along ``dim``, computed ``block_size`` entries at a time.

    The first pass keeps, per row, a running maximum ``m`` and a running sum ``s`` of
    ``exp(entry - m)``; a block with a larger maximum ``m_new`` first multiplies ``s``
    by ``exp(m - m_new)``. The second pass turns each block into probabilities. A row
    of all ``-inf`` gives zeros (as a fully masked query does in
    :func:`attn_course.scaled_dot_product_attention`), not NaN. Introduced in Chapter 9.

    Shapes
    ------
    x : (...)
    output : (...)

    Examples
    --------
    >>> x = torch.tensor([[1.0, 3.0, 2.0, 0.0, -1.0]])
    >>> online_softmax(x, block_size=2)  # blocks [1, 3], [2, 0], [-1]
    tensor([[0.0861, 0.6364, 0.2341, 0.0317, 0.0117]])
    >>> online_softmax(torch.full((1, 3), float("-inf")), block_size=2)
    tensor([[0., 0., 0.]])
    """
    require_floating(require_tensor(x, "x"), "x")
    block_size = require_int(block_size, "block_size", hint=_BLOCK_HINT)
    dim = _check_dim(x, dim)
    rows = x.movedim(dim, -1)  # the softmax runs along the last dimension
    blocks = rows.split(block_size, dim=-1)

    # Pass 1: the running maximum m and running sum s, block by block.
    # (..., block) -> (..., 1)
    m = torch.full((*rows.shape[:-1], 1), float("-inf"), dtype=x.dtype, device=x.device)
    s = torch.zeros_like(m)
    for block in blocks:
        m_new = torch.maximum(m, block.amax(dim=-1, keepdim=True))
        shift = _reference_point(m_new)
        # Rescale the old sum to the new maximum, then add this block's terms.
        s = s * torch.exp(m - shift) + torch.exp(block - shift).sum(-1, keepdim=True)
        m = m_new

    # Pass 2: every entry as a probability, with the final maximum and sum.
    # A row of -inf only has s == 0 and numerators of exactly 0: divide by 1
    # there, so that its probabilities are 0 (not 0 / 0 = NaN).
    shift = _reference_point(m)
    total = torch.where(s > 0, s, 1.0)
    probabilities = [torch.exp(block - shift) / total for block in blocks]
    return torch.cat(probabilities, dim=-1).movedim(-1, dim)


def _reference_point(maximum):
    """The value subtracted before ``exp``: the running maximum, or 0 where it is
    ``-inf`` (``-inf - (-inf)`` would be NaN; the ``-inf`` entries still give 0).
    """
    return maximum.masked_fill(torch.isneginf(maximum), 0.0)


def _check_dim(x, dim):
    """``dim`` as a non-negative index into ``x``'s dimensions, or a teaching error."""
    if x.dim() == 0:
        raise ValueError(
            "x must have at least 1 dimension to take a softmax along, got a 0-d "
            f"tensor {x!r}; use x.reshape(1)"
        )
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"dim must be an int, got {kind_of(dim)} {dim!r}; e.g. dim=-1")
    if not -x.dim() <= dim < x.dim():
        raise ValueError(
            f"dim={dim} is out of range for x of shape {tuple(x.shape)}; choose "
            f"0 to {x.dim() - 1}, or -1 for the last dimension"
        )
    if x.size(dim) == 0:
        raise ValueError(
            f"x has no entries along dim={dim} (shape {tuple(x.shape)}); a softmax "
            "needs at least one"
        )
    return dim % x.dim()


def tiled_attention(
    query,
    key,
    value,
    *,
    attn_mask=None,
    block_size=128,
    is_causal=False,
    scale=None,
    return_tiles=False,
):
    """Attention computed one tile of scores at a time, with an online softmax.

    The result of :func:`attn_course.scaled_dot_product_attention` without the whole
    score matrix: for each block of ``block_size`` queries, the keys and values are
    read one block at a time; per query the loop keeps a running maximum ``m`` of the
    scaled scores, a running sum ``s`` and a running weighted sum of the values, both
    multiplied by ``exp(m_old - m_new)`` when ``m`` rises. The output is the weighted
    sum divided by ``s``. As in PyTorch's kernels, the running values are float32
    whatever the input dtype. For speed, tiles are updated in place and ``exp2`` of
    scores times ``log2(e)`` replaces ``exp``. It saves memory at inference only:
    autograd keeps every tile for the backward pass.

    A tile that ``is_causal`` or ``attn_mask`` blocks entirely is skipped;
    ``return_tiles`` also returns a bool ``(query blocks, key blocks)`` tensor of the
    tiles computed. A query with all keys masked gets zeros. The causal triangle is
    aligned at the top-left corner. Introduced in Chapter 9.

    Shapes
    ------
    query : (..., T_q, d_k)
    key : (..., T_k, d_k)
    value : (..., T_k, d_v)
    attn_mask : (..., T_q, T_k)
    output : (..., T_q, d_v)

    Examples
    --------
    Ten tokens in tiles of 4; the causal mask skips the three tiles above the diagonal:

    >>> from attn_course import scaled_dot_product_attention
    >>> gen = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(2, 3, 10, 8, generator=gen) for _ in range(3))
    >>> out, tiles = tiled_attention(
    ...     q, k, v, block_size=4, is_causal=True, return_tiles=True
    ... )
    >>> tiles
    tensor([[ True, False, False],
            [ True,  True, False],
            [ True,  True,  True]])
    >>> expected = scaled_dot_product_attention(q, k, v, is_causal=True)
    >>> torch.allclose(out, expected, atol=1e-6)
    True
    """
    scores_shape, _, scale = _check_inputs(
        query, key, value, attn_mask, 0.0, is_causal, scale
    )
    block_size = require_int(block_size, "block_size", hint=_BLOCK_HINT)
    *batch, T_q, T_k = scores_shape
    tiles = torch.zeros(
        math.ceil(T_q / block_size), math.ceil(T_k / block_size), dtype=torch.bool
    )
    # The leading dimensions (batch, heads, ...) never mix: view them as one,
    # N, so that every product below is one torch.bmm of 3-D tensors. (A view,
    # not a copy, unless a leading dimension is broadcast, or the dtype changes
    # to the float32 that the loop works in.)
    N, d_k, d_v = math.prod(batch), query.size(-1), value.size(-1)
    work = torch.promote_types(query.dtype, torch.float32)
    queries = query.expand(*batch, T_q, d_k).reshape(N, T_q, d_k).to(work)
    keys = key.expand(*batch, T_k, d_k).reshape(N, T_k, d_k).to(work)
    values = value.expand(*batch, T_k, d_v).reshape(N, T_k, d_v).to(work)
    output = values.new_empty((N, T_q, d_v))
    if attn_mask is not None:
        # True where a query may see a key (a float mask hides one with -inf).
        visible = attn_mask if attn_mask.dtype == torch.bool else attn_mask > -math.inf
        attn_mask, visible = (_full_rows(t, T_q, T_k) for t in (attn_mask, visible))

    for q_index, q_start in enumerate(range(0, T_q, block_size)):
        q_end = min(q_start + block_size, T_q)
        # Scaling the queries scales every score of the block: the scores are
        # scaled before the running maximum is taken, as the softmax needs. The
        # extra factor log2(e) lets the loop use 2**x, cheaper than exp(x) on
        # some CPUs: 2**(x * log2(e)) == exp(x).
        q_block = queries[:, q_start:q_end] * (scale * _LOG2_E)  # (N, block, d_k)
        # Per query of the block: running maximum m, running sum s of
        # 2**(score - m), and the running weighted sum of the values.
        m = q_block.new_full((N, q_end - q_start, 1), float("-inf"))  # (N, block, 1)
        s = torch.zeros_like(m)  # (N, block, 1)
        weighted_sum = values.new_zeros((N, q_end - q_start, d_v))

        for k_index, k_start in enumerate(range(0, T_k, block_size)):
            if is_causal and k_start > q_end - 1:
                # Every key from here on comes after every query of the block:
                # the rest of this row of tiles is above the diagonal. Skip it.
                break
            k_end = min(k_start + block_size, T_k)
            if attn_mask is not None:
                tile_mask = attn_mask[..., q_start:q_end, k_start:k_end]
                if not visible[..., q_start:q_end, k_start:k_end].any():
                    continue  # the mask blocks every score of this tile: skip it
            tiles[q_index, k_index] = True
            # (N, block, d_k) @ (N, d_k, block) -> (N, block, block)
            scores = torch.bmm(q_block, keys[:, k_start:k_end].mT)
            if is_causal and k_end - 1 > q_start:
                # The diagonal crosses this tile: add a mask that removes the keys
                # after each query (0 keeps a score, -inf removes it).
                rows = torch.arange(q_start, q_end, device=scores.device)[:, None]
                cols = torch.arange(k_start, k_end, device=scores.device)[None, :]
                scores += to_additive_mask(cols <= rows, dtype=scores.dtype)
            elif attn_mask is not None:
                # A view of the scores that the tile of the mask broadcasts to:
                # (N, block, block) -> (..., block, block)
                tile = scores.view(*batch, *scores.shape[1:])
                if tile_mask.dtype == torch.bool:
                    tile.masked_fill_(~tile_mask, float("-inf"))
                else:  # the scores are in units of log2 (times log2(e)): the mask too
                    tile += tile_mask.to(work) * _LOG2_E
            # The new running maximum. It is only a reference point that keeps
            # every power at most 1: the output does not depend on it, so no
            # gradient has to flow through it (detach), and the lines below may
            # work in place. Where a query has seen no visible key yet, m_new is
            # still -inf, and 0 stands in for it (as in online_softmax), so that
            # no -inf - (-inf) = NaN appears: its terms, 2**-inf, are all 0.
            m_new = torch.maximum(m, scores.detach().amax(dim=-1, keepdim=True))
            shift = _reference_point(m_new)
            rescale = torch.exp2(m - shift)  # (N, block, 1); 1 where m is unchanged
            # The three updates, each written out in its comment, are computed in
            # place: a new tile for every step would cost more time than the
            # arithmetic does.
            # weights = 2**(scores - shift): unnormalised, each at most 1
            weights = scores.sub_(shift).exp2_()
            # s = s * rescale + (the sum of each row of weights)
            s.mul_(rescale).add_(weights.sum(dim=-1, keepdim=True))
            # weighted_sum = weighted_sum * rescale + weights @ value_block
            # (N, block, block) @ (N, block, d_v) -> (N, block, d_v)
            weighted_sum.mul_(rescale).baddbmm_(weights, values[:, k_start:k_end])
            m = m_new

        # A query whose keys are all masked has s = 0 and a weighted sum of 0:
        # divide by 1 there, so that its output is 0 (not 0 / 0 = NaN).
        output[:, q_start:q_end] = weighted_sum / torch.where(s > 0, s, 1.0)

    output = output.reshape(*batch, T_q, d_v).to(query.dtype)
    if return_tiles:
        return output, tiles
    return output


def _full_rows(mask, T_q, T_k):
    """``mask`` as a view with sizes ``(T_q, T_k)`` in its last two dimensions (a
    stride of 0 where it broadcasts), so that a tile can be cut out of it."""
    mask = torch.atleast_2d(mask)
    return mask.expand(*mask.shape[:-2], T_q, T_k)


def sliding_window_mask(T, window, *, device=None):
    """Bool mask letting query ``i`` attend only to the last ``window`` keys.

    Key ``j`` is ``True`` (*may attend*) when ``i - window < j <= i``: the causal mask
    without the keys ``window`` or more steps back. Introduced in Chapter 9.

    Shapes
    ------
    output : (T, T)

    Examples
    --------
    >>> sliding_window_mask(5, window=2)
    tensor([[ True, False, False, False, False],
            [ True,  True, False, False, False],
            [False,  True,  True, False, False],
            [False, False,  True,  True, False],
            [False, False, False,  True,  True]])
    >>> torch.equal(sliding_window_mask(5, window=5), causal_mask(5))
    True
    """
    T = require_int(T, "T", hint="it counts tokens, e.g. the sequence length")
    window = require_int(
        window, "window", hint="it counts the keys a query sees, itself included"
    )
    allowed = causal_mask(T, device=device)  # j <= i
    too_far_back = allowed.tril(-window)  # j <= i - window
    return allowed & ~too_far_back


def stored_benchmark(device="cpu"):
    """The results of ``make bench`` (``python -m tools.bench``) stored with the
    package: ``date``, ``machine``, ``torch``, ``settings``, ``rows`` (one per attention
    measurement) and ``generation``; ``device="cuda"`` once a GPU machine has run it.
    Introduced in Chapter 9.

    >>> sorted(stored_benchmark()["machine"])
    ['cores', 'cpu', 'gpu', 'platform', 'torch_threads']
    """
    return load_measured("bench", device, "a benchmark", "make bench")


def load_measured(stem, device, what, command):
    """The results stored as ``attn_course/measured/{stem}-{device}.json``; ``what`` and
    ``command`` word the error.
    """
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    stored = resources.files("attn_course") / "measured" / f"{stem}-{device}.json"
    if not stored.is_file():
        machine = "a GPU" if device == "cuda" else "a CPU"
        raise FileNotFoundError(
            f"no {what} on {device!r} is stored with the package; run `{command}` "
            f"on a machine with {machine} to make it"
        )
    return json.loads(stored.read_text(encoding="utf-8"))


STORING_OUTPUTS = "ATTN_COURSE_STORING_OUTPUTS"
"""Set (to "1") while ``make outputs`` runs a notebook to store its outputs."""


def print_timings(lines):
    """Print the lines of a timing measured in a notebook cell.

    While ``make outputs`` stores a notebook (``ATTN_COURSE_STORING_OUTPUTS`` is set)
    one fixed line is printed instead, so the stored notebook does not change from run
    to run. Introduced in Chapter 9.

    >>> print_timings(["T = 128: 1.2 ms"])
    T = 128: 1.2 ms
    """
    lines = list(lines)
    if not all(isinstance(line, str) for line in lines):
        raise TypeError("print_timings takes lines of text, e.g. [f'{ms:.1f} ms']")
    if os.environ.get(STORING_OUTPUTS):
        count = "1 line" if len(lines) == 1 else f"{len(lines)} lines"
        print(
            f"({count} of timings on this machine: they are not stored "
            "with the course; run this cell to see yours)"
        )
    else:
        print("\n".join(lines))


def print_stored_timings(device="cpu", **fields):
    """Print the stored ``make bench`` times whose rows have the given ``fields``, with
    when, where and with what they were measured; a tuple or list matches any of its
    values. Introduced in Chapter 9.

    >>> print_stored_timings(section="attention", method="plain", mask="none", T=256)
    ... # doctest: +ELLIPSIS
    stored by make bench on ..., torch ...:
    ..., ... cores, ... torch thread...; batch ..., ... heads of width ...
      attention: plain, no mask, T = 256 ... ms
    """
    results = stored_benchmark(device)
    stored = results["rows"] + results["generation"]
    known = set().union(*(row.keys() for row in stored))
    unknown = sorted(set(fields) - known)
    if unknown:
        raise ValueError(
            f"stored rows have no field {', '.join(unknown)}; choose among "
            f"{', '.join(sorted(known))}"
        )
    wanted = {
        name: set(value) if isinstance(value, (tuple, list)) else {value}
        for name, value in fields.items()
    }
    found = [
        row
        for row in stored
        if all(name in row and row[name] in values for name, values in wanted.items())
    ]
    if not found:
        raise ValueError(f"no stored row has {fields}; see stored_benchmark()['rows']")
    machine, settings = results["machine"], results["settings"]
    threads = machine["torch_threads"]
    sizes = (
        f"; batch {settings['batch']}, {settings['heads']} heads of width "
        f"{settings['head_width']}"
        if any("section" in row for row in found)
        else ""
    )
    print(f"stored by make bench on {results['date'][:10]}, torch {results['torch']}:")
    print(
        f"{machine['cpu']}, {machine['cores']} cores, {threads} torch "
        f"thread{'s' * (threads != 1)}{sizes}"
    )
    labels = [_describe(row, settings) for row in found]
    width = max(len(label) for label in labels)
    for label, row in zip(labels, found, strict=True):
        print(f"  {label:<{width}} {row['time_ms']:9.1f} ms")


def _describe(row, settings):
    """What a stored row measured, in a few words."""
    if "kind" in row:  # generation
        tokens = row["tokens"]
        what = (
            f"one step after {tokens} tokens"
            if row["kind"] == "step"
            else (f"writing {tokens} tokens")
        )
        return f"{what}, batch {row['batch']}, {row['method']}"
    mask = {
        "none": "no mask",
        "causal": "causal mask",
        "window": f"window of {settings.get('window')} keys",
    }[row["mask"]]
    block = "" if row["block_size"] is None else f" (block {row['block_size']})"
    return f"{row['section']}: {row['method']}{block}, {mask}, T = {row['T']}"


def operations_run(call):
    """The names of the PyTorch operations that ``call()`` runs, sorted, from the
    profiler (whose own messages are kept out of the notebook). Introduced in Chapter 9.

    >>> "aten::mm" in operations_run(lambda: torch.ones(2, 2) @ torch.ones(2, 2))
    True
    """
    if not callable(call):
        raise TypeError(
            f"call must be a function of no arguments, got {kind_of(call)}; e.g. "
            "operations_run(lambda: torch.softmax(x, dim=-1))"
        )
    from torch.profiler import ProfilerActivity, profile

    saved = os.dup(2)  # the error stream, where the profiler writes its messages
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            with profile(activities=[ProfilerActivity.CPU]) as profiler:
                call()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    return sorted({event.key for event in profiler.key_averages()})
