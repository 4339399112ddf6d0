"""Attention without the full score matrix: online softmax, tiled attention and
sliding-window masks.

Plain attention builds a ``(T_q, T_k)`` score matrix per head, memory that grows
with the square of the length. :func:`online_softmax` and :func:`tiled_attention`
compute the same result one block at a time, keeping a *running maximum* and a
*running sum* per row; :func:`sliding_window_mask` lets a query see only the most
recent keys. :func:`stored_benchmark`, :func:`print_timings`,
:func:`print_stored_timings` and :func:`operations_run` report timings and the
operations a call runs. Introduced in Chapter 9, where each function is first
written by hand. Chapter 11 gives :func:`tiled_attention` a backward pass that
recomputes the tiles, and measures with :func:`saved_tensor_bytes` what autograd
keeps for it.
"""

import json
import math
import os
from importlib import resources

import torch
from torch.autograd.function import once_differentiable

from ._validate import kind_of, require_floating, require_int, require_tensor
from .functional import _check_inputs
from .masks import causal_mask, to_additive_mask

__all__ = [
    "operations_run",
    "online_softmax",
    "print_stored_timings",
    "print_timings",
    "saved_tensor_bytes",
    "sliding_window_mask",
    "stored_benchmark",
    "tiled_attention",
]

_LOG2_E = math.log2(math.e)
_LN_2 = math.log(2.0)

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
    recompute=True,
):
    """Attention computed one tile of scores at a time, with an online softmax.

    The result of :func:`attn_course.scaled_dot_product_attention` without the whole
    score matrix: for each block of ``block_size`` queries, the keys and values are
    read one block at a time; per query the loop keeps a running maximum ``m`` of the
    scaled scores, a running sum ``s`` and a running weighted sum of the values, both
    multiplied by ``exp(m_old - m_new)`` when ``m`` rises. The output is the weighted
    sum divided by ``s``. As in PyTorch's kernels, the running values are float32
    whatever the input dtype. For speed, tiles are updated in place and ``exp2`` of
    scores times ``log2(e)`` replaces ``exp``.

    In training it saves memory too. When autograd needs the gradients of ``query``,
    ``key`` or ``value``, the loop runs without recording and keeps only the inputs,
    the output and each query's log-sum-exp ``L = m + ln s``; the backward pass
    recomputes each tile's probabilities ``exp(scaled score - L)`` from them
    (FlashAttention-2, Dao 2023, arXiv:2307.08691): memory that grows like ``T``,
    not ``T**2``. ``recompute=False`` lets autograd record the loop instead, keeping
    every tile, as Chapter 9's version did. The mask gets no gradient from the
    recomputing backward: a float ``attn_mask`` that requires grad needs
    ``recompute=False``.

    A tile that ``is_causal`` or ``attn_mask`` blocks entirely is skipped, in both
    passes; ``return_tiles`` also returns a bool ``(query blocks, key blocks)`` tensor
    of the tiles computed. A query with all keys masked gets zeros, and so do its
    gradients. The causal triangle is aligned at the top-left corner.
    Introduced in Chapter 9; the recomputing backward pass in Chapter 11.

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

    Saved for the backward pass at T = 256, recomputing or recording every tile:

    >>> q, k, v = (torch.randn(1, 256, 8, requires_grad=True) for _ in range(3))
    >>> saved_tensor_bytes(tiled_attention, q, k, v, block_size=64)
    33792
    >>> saved_tensor_bytes(tiled_attention, q, k, v, block_size=64, recompute=False)
    299264
    """
    scores_shape, _, scale = _check_inputs(
        query, key, value, attn_mask, 0.0, is_causal, scale
    )
    block_size = require_int(block_size, "block_size", hint=_BLOCK_HINT)
    *batch, T_q, T_k = scores_shape
    # The leading dimensions (batch, heads, ...) never mix: view them as one,
    # N, so that every product below is one torch.bmm of 3-D tensors. (A view,
    # not a copy, unless a leading dimension is broadcast, or the dtype changes
    # to the float32 that the loop works in.)
    N, d_k, d_v = math.prod(batch), query.size(-1), value.size(-1)
    work = torch.promote_types(query.dtype, torch.float32)
    queries = query.expand(*batch, T_q, d_k).reshape(N, T_q, d_k).to(work)
    keys = key.expand(*batch, T_k, d_k).reshape(N, T_k, d_k).to(work)
    values = value.expand(*batch, T_k, d_v).reshape(N, T_k, d_v).to(work)
    tiling = _Tiling(batch, T_q, T_k, block_size, is_causal, scale, attn_mask, work)
    needs_grad = torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (query, key, value, attn_mask)
    )
    if recompute and needs_grad:
        if attn_mask is not None and attn_mask.requires_grad:
            raise ValueError(
                "attn_mask requires grad, but the recomputing backward pass of "
                "tiled_attention gives the mask no gradient; pass "
                "attn_mask.detach(), or recompute=False to let autograd record "
                "every tile (and give the mask its gradient)"
            )
        output, tiles = _RecomputingAttention.apply(queries, keys, values, tiling)
    else:
        output, _, tiles = _tiled_forward(queries, keys, values, tiling)
    output = output.reshape(*batch, T_q, d_v).to(query.dtype)
    if return_tiles:
        return output, tiles
    return output


class _Tiling:
    """Which tiles of scores the loop computes, and each tile's masked scores: one
    copy for the forward and the backward pass, which must skip and mask alike."""

    def __init__(self, batch, T_q, T_k, block_size, is_causal, scale, attn_mask, work):
        self.batch, self.T_q, self.T_k = batch, T_q, T_k
        self.block_size, self.is_causal, self.scale = block_size, is_causal, scale
        self.work, self.attn_mask = work, attn_mask
        if attn_mask is not None:
            # True where a query may see a key (a float mask hides one with -inf).
            visible = (
                attn_mask if attn_mask.dtype == torch.bool else attn_mask > -math.inf
            )
            self.attn_mask, self.visible = (
                _full_rows(t, T_q, T_k) for t in (attn_mask, visible)
            )

    def query_blocks(self):
        """``(index, start, end)`` of each block of queries."""
        for q_index, q_start in enumerate(range(0, self.T_q, self.block_size)):
            yield q_index, q_start, min(q_start + self.block_size, self.T_q)

    def key_blocks(self, q_start, q_end):
        """``(index, start, end)`` of each block of keys that the queries
        ``q_start`` to ``q_end - 1`` may see at least one key of."""
        for k_index, k_start in enumerate(range(0, self.T_k, self.block_size)):
            if self.is_causal and k_start > q_end - 1:
                # Every key from here on comes after every query of the block:
                # the rest of this row of tiles is above the diagonal. Skip it.
                break
            k_end = min(k_start + self.block_size, self.T_k)
            if (
                self.attn_mask is not None
                and not self.visible[..., q_start:q_end, k_start:k_end].any()
            ):
                continue  # the mask blocks every score of this tile: skip it
            yield k_index, k_start, k_end

    def scores(self, q_block, k_block, q_start, q_end, k_start, k_end):
        """The tile ``q_block @ k_block^T`` with the mask applied, in log2 units:
        ``q_block`` holds the queries times ``scale * log2(e)``."""
        # (N, block, d_k) @ (N, d_k, block) -> (N, block, block)
        scores = torch.bmm(q_block, k_block.mT)
        if self.is_causal and k_end - 1 > q_start:
            # The diagonal crosses this tile: add a mask that removes the keys
            # after each query (0 keeps a score, -inf removes it).
            rows = torch.arange(q_start, q_end, device=scores.device)[:, None]
            cols = torch.arange(k_start, k_end, device=scores.device)[None, :]
            scores += to_additive_mask(cols <= rows, dtype=scores.dtype)
        elif self.attn_mask is not None:
            tile_mask = self.attn_mask[..., q_start:q_end, k_start:k_end]
            # A view of the scores that the tile of the mask broadcasts to:
            # (N, block, block) -> (..., block, block)
            tile = scores.view(*self.batch, *scores.shape[1:])
            if tile_mask.dtype == torch.bool:
                tile.masked_fill_(~tile_mask, float("-inf"))
            else:  # the scores are in units of log2 (times log2(e)): the mask too
                tile += tile_mask.to(self.work) * _LOG2_E
        return scores


def _tiled_forward(queries, keys, values, tiling, *, log_sum_exp=False):
    """The loop of :func:`tiled_attention` on ``(N, T, d)`` tensors: the output,
    each query's log-sum-exp ``(N, T_q)`` in natural-log units (or ``None`` unless
    ``log_sum_exp``), and the tiles computed."""
    N, T_q, d_v = queries.size(0), queries.size(1), values.size(-1)
    block_size = tiling.block_size
    tiles = torch.zeros(
        math.ceil(T_q / block_size),
        math.ceil(tiling.T_k / block_size),
        dtype=torch.bool,
    )
    output = values.new_empty((N, T_q, d_v))
    lse = values.new_empty((N, T_q)) if log_sum_exp else None

    for q_index, q_start, q_end in tiling.query_blocks():
        # Scaling the queries scales every score of the block: the scores are
        # scaled before the running maximum is taken, as the softmax needs. The
        # extra factor log2(e) lets the loop use 2**x, cheaper than exp(x) on
        # some CPUs: 2**(x * log2(e)) == exp(x).
        q_block = queries[:, q_start:q_end] * (tiling.scale * _LOG2_E)
        # Per query of the block: running maximum m, running sum s of
        # 2**(score - m), and the running weighted sum of the values.
        m = q_block.new_full((N, q_end - q_start, 1), float("-inf"))  # (N, block, 1)
        s = torch.zeros_like(m)  # (N, block, 1)
        weighted_sum = values.new_zeros((N, q_end - q_start, d_v))

        for k_index, k_start, k_end in tiling.key_blocks(q_start, q_end):
            tiles[q_index, k_index] = True
            scores = tiling.scores(
                q_block, keys[:, k_start:k_end], q_start, q_end, k_start, k_end
            )
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
        total = torch.where(s > 0, s, 1.0)
        output[:, q_start:q_end] = weighted_sum / total
        if lse is not None:
            # L = m + ln s, from log2 units: (m' + log2 s) * ln 2. A query that
            # sees no key gets L = 0 (m' = 0, s = 1 above), not ln 0 = -inf: its
            # recomputed probabilities exp(-inf - 0) are 0, where exp(-inf + inf)
            # would be NaN.
            lse[:, q_start:q_end] = (
                (_reference_point(m) + torch.log2(total)) * _LN_2
            ).squeeze(-1)
    return output, lse, tiles


class _RecomputingAttention(torch.autograd.Function):
    """:func:`_tiled_forward` with a backward pass that recomputes each tile from
    the saved log-sum-exp: FlashAttention-2's backward pass (Dao 2023, Algorithm 2),
    here in the forward pass's order of tiles (FlashAttention-2 takes key blocks in
    the outer loop, so that a GPU block owns its dK and dV)."""

    @staticmethod
    def forward(ctx, queries, keys, values, tiling):
        output, lse, tiles = _tiled_forward(
            queries, keys, values, tiling, log_sum_exp=True
        )
        # All that the backward pass needs: (N, T, d) and (N, T_q), no tile.
        ctx.save_for_backward(queries, keys, values, output, lse)
        ctx.tiling = tiling  # holds the caller's mask, not a copy of it
        ctx.mark_non_differentiable(tiles)
        return output, tiles

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output, _grad_tiles):
        queries, keys, values, output, lse = ctx.saved_tensors
        tiling, scale = ctx.tiling, ctx.tiling.scale
        grad_q, grad_k, grad_v = (torch.zeros_like(t) for t in (queries, keys, values))
        # D = rowsum(dO * O) = rowsum(dP * P): each query's softmax correction
        D = (grad_output * output).sum(dim=-1, keepdim=True)  # (N, T_q, 1)
        lse_log2 = lse.unsqueeze(-1) * _LOG2_E  # (N, T_q, 1), in the loop's units
        for _, q_start, q_end in tiling.query_blocks():
            q_raw = queries[:, q_start:q_end]
            q_block = q_raw * (scale * _LOG2_E)  # as in the forward pass
            dO = grad_output[:, q_start:q_end]  # (N, block, d_v)
            for _, k_start, k_end in tiling.key_blocks(q_start, q_end):
                k_block, v_block = keys[:, k_start:k_end], values[:, k_start:k_end]
                scores = tiling.scores(q_block, k_block, q_start, q_end, k_start, k_end)
                # P = exp(scaled score - L): the tile's probabilities, recomputed
                P = scores.sub_(lse_log2[:, q_start:q_end]).exp2_()  # (N, bq, bk)
                # dV += P^T dO: (N, bk, bq) @ (N, bq, d_v)
                grad_v[:, k_start:k_end].baddbmm_(P.mT, dO)
                # dP = dO V^T, then dS = P * (dP - D), in place
                dS = torch.bmm(dO, v_block.mT).sub_(D[:, q_start:q_end]).mul_(P)
                # dQ += dS K * scale; dK += dS^T Q * scale
                grad_q[:, q_start:q_end].baddbmm_(dS, k_block, alpha=scale)
                grad_k[:, k_start:k_end].baddbmm_(dS.mT, q_raw, alpha=scale)
        return grad_q, grad_k, grad_v, None


def saved_tensor_bytes(fn, *args, **kwargs):
    """The bytes of the tensors that autograd saves for the backward pass while
    ``fn(*args, **kwargs)`` runs, seen by ``torch.autograd.graph.saved_tensors_hooks``.

    Each storage counts once, whole: several saved tensors can be views of one
    storage (a block of keys is a view of all the keys), and a view keeps all of its
    storage alive. Storages are told apart by ``untyped_storage().data_ptr()``.
    Saved inputs count too. Introduced in Chapter 11.

    >>> x = torch.ones(1000, requires_grad=True)
    >>> saved_tensor_bytes(torch.exp, x)  # exp saves its output: 1000 float32
    4000
    >>> # each output of exp is saved twice (by exp and by *), and counted once
    >>> saved_tensor_bytes(lambda t: t[:500].exp() * t[500:].exp(), x)
    4000
    """
    if not callable(fn):
        raise TypeError(
            f"fn must be a function, got {kind_of(fn)}; e.g. "
            "saved_tensor_bytes(tiled_attention, q, k, v)"
        )
    saved = []  # kept to the end, so that no address is freed and reused meanwhile

    def pack(tensor):
        saved.append(tensor)
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        fn(*args, **kwargs)
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage() for t in saved}
    return sum(storage.nbytes() for storage in storages.values())


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
