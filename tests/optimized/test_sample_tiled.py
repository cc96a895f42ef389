"""The tiled inverse CDF's search inside a tile (``torch_backend.rows.sample_tiled``) against
its definition scanned column by column: the first column with mass > 0 whose running sum
(carry + sum within the tile) exceeds the threshold, else the tile's last positive column."""

from __future__ import annotations

import pytest
import torch
from specproof.optimized.torch_backend.rows import (
    TILE,
    sample_in_tiles,
    sample_one_tile,
    sample_tiled,
    threshold_below,
)


def scanned_token(mass: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Per row, the tile and column by the definition, one column test at a time."""
    rows, vocab = mass.shape
    tokens = []
    for r in range(rows):
        tiles = [mass[r, start : start + TILE] for start in range(0, vocab, TILE)]
        ends = torch.stack([tile.sum() for tile in tiles]).cumsum(0)
        t = threshold_below(u[r : r + 1], ends[-1:])[0]
        tile = min(int((ends <= t).sum()), len(tiles) - 1)
        carry = ends[tile - 1] if tile else torch.tensor(0.0)
        running = tiles[tile].cumsum(0) + carry
        hits = [v for v in range(len(running)) if tiles[tile][v] > 0 and running[v] > t]
        positive = [v for v in range(len(running)) if tiles[tile][v] > 0]
        column = hits[0] if hits else (positive[-1] if positive else 0)
        tokens.append(tile * TILE + column)
    return torch.tensor(tokens)


def rows_of_every_kind(vocab: int, rows: int):
    """(kind, mass, u): dense, sparse, tiny (sums that round), half-empty, very sparse rows
    and rows without mass; u at 0 and just below 1 in the first two rows."""
    generator = torch.Generator().manual_seed(vocab)
    for kind in range(6):
        mass = torch.rand(rows, vocab, generator=generator)
        if kind == 1:
            mass *= torch.rand(rows, vocab, generator=generator) < 0.01
        elif kind == 2:
            mass = mass**40
        elif kind == 3:
            mass[:, : vocab // 2] = 0
        elif kind == 4:
            mass *= torch.rand(rows, vocab, generator=generator) < 2 / vocab
        elif kind == 5:
            mass[: rows // 2] = 0
        u = torch.rand(rows, generator=generator)
        u[0], u[1] = 0.0, 1 - 2**-24
        yield kind, mass, u


@pytest.mark.parametrize("vocab", [3, 100, 4095, TILE, 4097, 9000])
def test_the_searched_tile_gives_the_scanned_token(vocab: int) -> None:
    """Every kind of row: every token equal where the row has mass."""
    for kind, mass, u in rows_of_every_kind(vocab, 6):
        positive = mass.sum(dim=1) > 0  # a row without mass has an unspecified token
        token, _ = sample_tiled(mass, u)
        assert torch.equal(token[positive], scanned_token(mass, u)[positive]), kind


@pytest.mark.parametrize("vocab", [1, 2, 8, 100, TILE])
def test_one_tile_is_the_tiled_search_with_one_tile(vocab: int) -> None:
    """At most TILE columns, the shortcut and the general search give the same tokens and
    totals bit for bit, rows without mass included (whose token is then unspecified but
    still the same)."""
    for kind, mass, u in rows_of_every_kind(vocab, 8):
        token, total = sample_one_tile(mass.clone(), u)
        want_token, want_total = sample_in_tiles(mass.clone(), u)
        assert torch.equal(token, want_token), kind
        assert torch.equal(total, want_total), kind
