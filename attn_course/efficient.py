"""Attention without the full score matrix: online softmax, tiled attention and
sliding-window masks.

Plain attention builds every score of a sequence at once, a ``(T_q, T_k)`` matrix
per head, so its memory grows with the square of the length. The functions here
compute the same result one block at a time:

- :func:`online_softmax` computes a softmax one block of entries at a time. It keeps
  two numbers per row while it walks along: the largest entry seen so far (the
  *running maximum*) and the sum of ``exp(entry - running maximum)`` so far (the
  *running sum*). When a block brings a larger maximum, the sum collected so far is
  multiplied by ``exp(old maximum - new maximum)``, which is exactly what it would
  have been had the new maximum been used from the start.
- :func:`tiled_attention` uses the same running maximum and running sum for
  attention, one tile of ``block_size`` queries by ``block_size`` keys at a time:
  the weighted sum of the values is rescaled along with the running sum. The
  scores are computed one tile at a time, never as the whole matrix, and a tile
  that a causal mask or an ``attn_mask`` blocks completely is not computed at all.
- :func:`sliding_window_mask` lets each query see only the most recent keys.
- :func:`stored_benchmark` reads the results of ``make bench`` that come with the
  package, :func:`print_timings` prints what a notebook cell timed,
  :func:`print_stored_timings` the stored measurements of the same thing beside
  it, and :func:`operations_run` lists the PyTorch operations a call runs (from
  the profiler).

Shape letters are those of :mod:`attn_course.shapes`. Introduced in Chapter 9,
where each function is first written by hand and compared with the one here.
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

    Gives the same numbers as ``torch.softmax(x, dim)``, but reads the entries in
    blocks and never needs the maximum of a whole row in advance. The first pass
    walks over the blocks and keeps, for every row, a running maximum ``m`` and a
    running sum ``s`` of ``exp(entry - m)``. A new block with a larger maximum
    ``m_new`` makes every term of ``s`` too large by the factor
    ``exp(m_new - m)``, so ``s`` is multiplied by ``exp(m - m_new)`` before the
    block's own terms are added. The second pass turns each block into
    probabilities with the final ``m`` and ``s``. Introduced in Chapter 9.

    A row whose entries are *all* ``-inf`` (every key masked) gives zeros, the
    same as :func:`attn_course.scaled_dot_product_attention` gives for a fully
    masked query; ``torch.softmax`` gives NaN there. Whole blocks of ``-inf``
    in a row that has finite entries elsewhere change nothing: they add 0 to the
    running sum.

    Parameters
    ----------
    x : torch.Tensor
        Floating-point scores, with at least one dimension.
    block_size : int
        How many entries along ``dim`` are handled together, at least 1. The last
        block is shorter when the length is not a multiple of ``block_size``.
    dim : int, default -1
        The dimension the softmax normalises over.

    Returns
    -------
    torch.Tensor
        Probabilities: each slice along ``dim`` sums to 1, or is all 0 where every
        entry was ``-inf``.

    Shapes
    ------
    x : (...)
    output : (...)

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[1.0, 3.0, 2.0, 0.0, -1.0]])
    >>> online_softmax(x, block_size=2)  # blocks [1, 3], [2, 0], [-1]
    tensor([[0.0861, 0.6364, 0.2341, 0.0317, 0.0117]])
    >>> torch.allclose(online_softmax(x, block_size=2), torch.softmax(x, dim=-1))
    True

    A row with every entry ``-inf`` gives zeros, not NaN:

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
    """The value subtracted from the entries before ``exp``: the running maximum.

    Where the maximum is ``-inf`` every entry seen so far is ``-inf`` too, and
    ``-inf - (-inf)`` would be NaN. Any finite reference point gives the exact
    answer there, ``exp(-inf - 0) = 0``, so 0 is used; the ``-inf`` entries stay
    ``-inf`` and contribute nothing.
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

    The same result as :func:`attn_course.scaled_dot_product_attention` (and
    ``torch.nn.functional.scaled_dot_product_attention``) without ever holding
    the whole ``(T_q, T_k)`` score matrix. The queries are split into blocks of
    ``block_size`` rows; for each query block the keys and values are read one
    block at a time, giving one ``(block_size, block_size)`` tile of scores. For
    every query the loop keeps a running maximum ``m`` of its scores, a running
    sum ``s`` of ``exp(score - m)`` and a running weighted sum of the values;
    when a tile raises ``m``, both sums are multiplied by ``exp(m_old - m_new)``
    (as in :func:`online_softmax`). At the end, the weighted sum divided by ``s``
    is the output. The scale is applied to the scores *before* the running
    maximum is taken, so the maximum is the one of the scores the softmax sees.
    As in PyTorch's fused kernels, the scores, ``m``, ``s`` and the weighted sum
    are kept in float32 (float64 stays float64) whatever the input dtype, and
    only the output is rounded to it: in bfloat16 the running sums would lose a
    rounding at every tile.

    Two details are there for speed: it updates each tile and each running sum
    in place instead of allocating new tensors, and it uses powers of 2 instead
    of powers of e (the scores are multiplied by ``log2(e)`` as well, and
    ``2 ** (x * log2(e)) == exp(x)``, so the result is the same). On some CPUs
    ``torch.exp2`` is cheaper than ``torch.exp``; on others it costs as much or
    more (``make bench`` times both).

    It saves memory at inference only: under autograd every tile's weights are
    kept for the backward pass, together about as much as the whole score matrix.
    FlashAttention's backward pass recomputes the tiles instead (Dao et al. 2022).

    A tile whose scores are all masked is skipped (never computed): with
    ``is_causal=True`` those above the diagonal, with ``attn_mask`` those where
    the mask blocks every query of the block from every key of the block. A
    query whose keys are *all* masked gets an output of zeros, as from
    :func:`attn_course.scaled_dot_product_attention`. As in PyTorch, the causal
    triangle is aligned at the top-left corner when ``T_q != T_k``: query ``i``
    sees keys ``0..i``. Introduced in Chapter 9.

    Parameters
    ----------
    query : torch.Tensor
        Queries, one row of width ``d_k`` per query.
    key : torch.Tensor
        Keys, one row of width ``d_k`` per key.
    value : torch.Tensor
        Values, one row of width ``d_v`` per key.
    attn_mask : torch.Tensor, optional
        As in :func:`attn_course.scaled_dot_product_attention`: broadcastable to
        ``(..., T_q, T_k)``; **bool** ``True`` = *may attend*, or **float**, added
        to the scores. Cannot be combined with ``is_causal``.
    block_size : int, default 128
        Queries per query block and keys per key block, at least 1. The last
        block is shorter when a length is not a multiple of it; a block size
        larger than the sequence gives a single tile (plain attention). Blocks
        of 64 and 128 were the fastest of 32 to 512 at T = 1024 on the course's
        CPU, within 10 % of each other (``make bench`` measures them).
    is_causal : bool, default False
        Let query ``i`` attend only to keys ``0..i``.
    scale : float, optional
        Factor the scores are multiplied by; ``None`` means ``1 / sqrt(d_k)``.
    return_tiles : bool, default False
        Also return which tiles were computed.

    Returns
    -------
    output : torch.Tensor
        The weighted sums of the values, in the dtype of the inputs.
    tiles : torch.Tensor
        Only if ``return_tiles=True``: a bool tensor with one row per query
        block and one column per key block, ``True`` where that tile of scores
        was computed (set by the loop when it computes the tile).

    Shapes
    ------
    query : (..., T_q, d_k)
    key : (..., T_k, d_k)
    value : (..., T_k, d_v)
    attn_mask : (..., T_q, T_k)
    output : (..., T_q, d_v)

    Examples
    --------
    Ten tokens in tiles of 4: three query blocks and three key blocks. With the
    causal mask the three tiles above the diagonal are skipped:

    >>> import torch
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

    A sliding window of 3 keys skips the tiles it leaves empty as well:

    >>> window = sliding_window_mask(10, window=3)
    >>> out, tiles = tiled_attention(
    ...     q, k, v, attn_mask=window, block_size=4, return_tiles=True
    ... )
    >>> tiles
    tensor([[ True, False, False],
            [ True,  True, False],
            [False,  True,  True]])
    >>> expected = scaled_dot_product_attention(q, k, v, attn_mask=window)
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

    Key ``j`` may be seen by query ``i`` when ``i - window < j <= i``: the query
    itself and at most ``window - 1`` keys before it, never a key after it. It is
    the causal mask of :func:`attn_course.causal_mask` with the keys ``window`` or
    more steps back removed, so for ``window >= T`` it *is* the causal mask.
    ``True`` means *may attend* (the convention of PyTorch's
    ``scaled_dot_product_attention``). Introduced in Chapter 9.

    Parameters
    ----------
    T : int
        Sequence length, at least 1.
    window : int
        How many keys each query sees at most, itself included; at least 1.
    device : torch.device or str, optional
        Where to create the mask.

    Returns
    -------
    torch.Tensor
        Bool mask, ``True`` where query ``i`` may attend to key ``j``.

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
    """The results of ``make bench`` stored with the package, as a dict.

    ``make bench`` (``python -m tools.bench``) times plain attention,
    :func:`tiled_attention` and PyTorch's kernel, measures their peak memory and
    times generation with and without a KV cache, all in one run, and writes the
    results into the package. The dict holds ``date``, ``machine``, ``torch``,
    ``settings``, ``rows`` (one per attention measurement) and ``generation``.
    Introduced in Chapter 9.

    Parameters
    ----------
    device : {"cpu", "cuda"}, default "cpu"
        Which run: on the CPU, or on a GPU (stored only once a machine with one
        has run ``make bench``).

    Examples
    --------
    >>> results = stored_benchmark()
    >>> sorted(results["machine"])
    ['cores', 'cpu', 'gpu', 'platform', 'torch_threads']
    """
    return load_measured("bench", device, "a benchmark", "make bench")


def load_measured(stem, device, what, command):
    """The results stored as ``attn_course/measured/{stem}-{device}.json``.

    ``what`` (e.g. ``"a benchmark"``) and ``command`` (``"make bench"``) say in
    the error what is missing and how to make it.
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
    """Print the lines of a timing measured in a notebook cell, as it runs.

    Times differ from run to run and from machine to machine, so the stored
    outputs of the course do not keep them: while ``make outputs`` stores a
    notebook (the environment variable ``ATTN_COURSE_STORING_OUTPUTS`` is set),
    one fixed line saying so is printed instead, and re-running the notebook
    leaves its file unchanged. Run the cell yourself to see your machine's times.
    Introduced in Chapter 9.

    Parameters
    ----------
    lines : iterable of str

    Examples
    --------
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
    """Print the stored ``make bench`` times whose rows have the given ``fields``,
    with when, where and with what they were measured.

    A cell that times something on the reader's machine (:func:`print_timings`)
    calls this beside it: the stored pages of the course do not keep the reader's
    times, but they keep these. A row of attention has the fields ``section``,
    ``mask``, ``method``, ``block_size`` and ``T``; a row of generation ``kind``,
    ``batch``, ``tokens`` and ``method``. A tuple or list of values matches any of
    them. Introduced in Chapter 9.

    Examples
    --------
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
    """The names of the PyTorch operations that ``call()`` runs, sorted.

    Read from PyTorch's profiler (``torch.profiler.profile`` on the CPU). The
    profiler's own start and stop messages, which it writes to the process's
    error stream with a time stamp, are kept out of the notebook.

    Introduced in Chapter 9.

    Examples
    --------
    >>> import torch
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
