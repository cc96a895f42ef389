"""Row-level helpers of the torch backend, mirroring :mod:`specproof.optimized.kernels.rows`."""

from __future__ import annotations

import threading

import torch

from .fused_gather import RowStats, gather_with_stats

_workspaces = threading.local()


def workspace(name: str, rows: int, vocab: int, device: torch.device) -> torch.Tensor:
    """A reusable float32 [rows, vocab] scratch tensor, one per (thread, device, name).

    Fresh multi-megabyte allocations cost page faults on every call (on this CPU more than
    the copy itself); the buffer is kept and grown, never shrunk.
    """
    cache: dict[tuple[str, torch.device], torch.Tensor] = _workspaces.__dict__.setdefault(
        "buffers", {}
    )
    key = (name, device)
    buffer = cache.get(key)
    if buffer is None or buffer.numel() < rows * vocab:
        buffer = torch.empty(rows * vocab, dtype=torch.float32, device=device)
        cache[key] = buffer
    return buffer[: rows * vocab].view(rows, vocab)


def threshold_below(u: torch.Tensor, total: torch.Tensor) -> torch.Tensor:
    """The largest float32 t <= u * total (product exact in float64); see the Triton twin."""
    exact = u.to(torch.float64) * total.to(torch.float64)
    nearest = exact.to(torch.float32)
    lowered = torch.nextafter(nearest, torch.zeros_like(nearest))
    return torch.where((nearest.to(torch.float64) > exact) & (nearest > 0), lowered, nearest)


def inverse_cdf(mass: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Per row: the smallest v with mass > 0 and u * total < cumsum(mass)[v]; the last
    positive token when rounding leaves none. ``mass`` is [R, V] non-negative float32."""
    total = mass.sum(dim=-1)
    threshold = threshold_below(u, total)
    positive = mass > 0
    hit = positive & (mass.cumsum(dim=-1) > threshold[:, None])
    vocab = mass.shape[-1]
    columns = torch.arange(vocab, device=mass.device)
    first_hit = torch.where(hit, columns, vocab).amin(dim=-1)
    last_positive = torch.where(positive, columns, -1).amax(dim=-1)
    return torch.where(first_hit < vocab, first_hit, last_positive)


def gather_rows(
    rows: torch.Tensor, batch_index: torch.Tensor, position: torch.Tensor, into: str | None = None
) -> torch.Tensor:
    """Rows ``rows[batch_index[i], position[i]]`` of a [B, P, V] tensor as a contiguous float32
    [R, V] tensor, written into the workspace ``into`` when given (index_select on a flat
    view: advanced indexing with two index tensors is several times slower on CPU)."""
    batch, positions, vocab = rows.shape
    flat_layout = rows.stride(2) == 1 and rows.stride(0) == positions * rows.stride(1)
    if not flat_layout or rows.dtype != torch.float32:
        picked = rows[batch_index, position].to(torch.float32)
        if into is None:
            return picked
        return workspace(into, len(batch_index), vocab, rows.device).copy_(picked)
    flat = rows.as_strided((batch * positions, vocab), (rows.stride(1), 1))
    index = batch_index * positions + position
    if into is None:
        return flat.index_select(0, index)
    out = workspace(into, len(batch_index), vocab, rows.device)
    return torch.index_select(flat, 0, index, out=out)


def gather_rows_with_stats(
    rows: torch.Tensor,
    batch_index: torch.Tensor,
    position: torch.Tensor,
    into: str | None,
    bounds: tuple[float, float] | None = None,
) -> tuple[torch.Tensor, RowStats | None]:
    """:func:`gather_rows` (into the workspace ``into`` when given), plus each row's float32
    sum and minimum (and, with ``bounds``, its verdict) from the copy itself
    (:mod:`.fused_gather`) where it can; (rows, None) otherwise."""
    batch, positions, vocab = rows.shape
    flat_layout = rows.stride(2) == 1 and rows.stride(0) == positions * rows.stride(1)
    if flat_layout and rows.dtype == torch.float32 and rows.device.type == "cpu":
        flat = rows.as_strided((batch * positions, vocab), (rows.stride(1), 1))
        count = len(batch_index)
        out = (
            torch.empty(count, vocab, dtype=torch.float32)
            if into is None
            else workspace(into, count, vocab, rows.device)
        )
        stats = gather_with_stats(flat, batch_index * positions + position, out, bounds)
        if stats is not None:
            return out, stats
    return gather_rows(rows, batch_index, position, into), None


def softmax_rows_(logits: torch.Tensor, temperature: torch.Tensor | None) -> torch.Tensor:
    """softmax((l - max l) / T) of float32 [R, V] rows, overwriting ``logits``.

    ``temperature`` None means T = 1 for every row (no scaling pass). Dividing after the max
    is subtracted means no T > 0 overflows: the largest entry is exactly 0, so a row always
    keeps its argmax tokens (T -> 0 gives the one-hot limit, ties split evenly).
    """
    if temperature is not None:
        logits.sub_(logits.amax(dim=-1, keepdim=True)).div_(temperature[:, None])
    return torch.softmax(logits, dim=-1, out=logits)


TILE = 4096
"""Vocabulary tile of the inverse CDF; a vocabulary smaller than this is one tile of its own
width (the search then reads V columns per row, not 4096)."""


def sample_tiled(mass: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Inverse CDF of non-negative float32 [R, V] rows, tile by tile as the Triton kernel
    searches. Returns (token, total).

    The cumulative sum at the end of tile j is E_j (a running sum of tile sums; total is the
    last). The token is in the first tile with E_j > t, t = :func:`threshold_below` (u, total):
    the first v there with mass > 0 and E_{j-1} + cumsum-within-tile[v] > t, or, when rounding
    inside the tile leaves none, its last positive token. Such a tile exists whenever
    total > 0 and u < 1; rows with total <= 0 get an unspecified in-range token (the caller
    redraws them from another row). One read of the rows (the tile sums) plus one tile per
    row, instead of a full cumulative sum: torch's CPU cumsum is a scalar loop.
    """
    if mass.shape[1] <= TILE:
        return sample_one_tile(mass, u)
    return sample_in_tiles(mass, u)


def sample_in_tiles(mass: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`sample_tiled` at any vocabulary: the tile sums, then the search in one tile."""
    rows, vocab = mass.shape
    width = min(TILE, vocab)  # the searched tile: V columns when V < TILE (one tile)
    whole = vocab // TILE * TILE
    parts = []
    if whole:
        parts.append(mass[:, :whole].reshape(rows, -1, TILE).sum(dim=-1))
    if whole < vocab:
        parts.append(mass[:, whole:].sum(dim=-1, keepdim=True))
    ends = torch.cat(parts, dim=1).cumsum(dim=-1)
    total = ends[:, -1]
    threshold = threshold_below(u, total)
    tile = torch.searchsorted(ends, threshold[:, None], right=True)[:, 0]
    tile = tile.clamp_(max=ends.shape[1] - 1)
    carry = torch.where(tile > 0, ends.gather(1, (tile - 1).clamp(min=0)[:, None])[:, 0], 0.0)
    columns = tile[:, None] * TILE + torch.arange(width, device=mass.device)
    piece = mass.gather(1, columns.clamp_(max=vocab - 1))
    # The running sums are non-decreasing (mass >= 0), so the columns past the threshold are a
    # suffix: its first column is the first hit. That column has mass > 0 (its sum grew past
    # the threshold, which the previous one and the carry did not), so no mask pass is needed;
    # a hit past the vocabulary (clamped columns) is none.
    running = piece.cumsum(dim=-1).add_(carry[:, None])
    first = torch.searchsorted(running, threshold[:, None], right=True)[:, 0]
    found = (first < width) & (tile * TILE + first < vocab)
    chosen = first.clamp_(max=width - 1)
    missed = (~found).nonzero().squeeze(1)
    if missed.numel():  # rounding left no hit: the last positive token of the tile
        order = torch.arange(1, width + 1, device=mass.device)
        positive = (piece[missed] > 0) & (columns[missed] < vocab)
        chosen[missed] = (positive * order).argmax(dim=-1)
    return (tile * TILE + chosen).clamp_(max=vocab - 1), total


def sample_one_tile(mass: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`sample_tiled` of rows of at most :data:`TILE` entries, one tile: its search
    without the tile arithmetic (tile 0, carry 0), the same tokens and totals."""
    total = mass.sum(dim=-1)
    threshold = threshold_below(u, total)
    running = mass.cumsum(dim=-1)
    chosen = torch.searchsorted(running, threshold[:, None], right=True)[:, 0]
    missed = (chosen >= mass.shape[1]).nonzero().squeeze(1)
    if missed.numel():  # rounding left no hit: the last positive token
        order = torch.arange(1, mass.shape[1] + 1, device=mass.device)
        chosen[missed] = ((mass[missed] > 0) * order).argmax(dim=-1)
    return chosen, total
