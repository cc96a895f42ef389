"""The law of the first N tokens at a vocabulary too large to enumerate, binned exactly.

Where V^N passes the exact row's cell budget, the cells are the target's most probable first
tokens (and, for N = 2, their most probable second tokens) plus one bin for every other first
token and, after each kept first token, one bin for every other second token. Every mass is
exact from the target's law: one teacher-forced pass gives the first token's row, one more
(one batch) the second-token rows after the kept first tokens, and each "other" bin holds the
exact sum of the row's remaining masses. A run that ends at EOS within the first N tokens is
the cell of its tokens up to that EOS, as in :func:`.laws.first_tokens_law`.

What the binning hides is only a rearrangement inside an "other" bin that keeps its mass: the
TV of the unbinned law is at most the binned TV plus the null mass of the "other" bins
(:attr:`BinnedLaw.rest_mass`), which the report states.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .laws import next_token_rows
from .subject import TargetProbs

OTHER = "other"
"""The bin of every token not kept at its position."""
BINNED_TOKENS = 2
"""N of the binned row (fewer when a run has fewer tokens)."""
MIN_CELL_MASS = 1e-3
"""The least null mass a kept token's cell may have.

Every cell costs the test the same (about ln 2 in the exponent of its threshold, so more runs
for the same power), but a cell buys resolution only in proportion to its mass: splitting a
cell of mass m out of an "other" bin lowers what the binning can hide (the bins' mass) by m.
Below 1e-3 a cell lowers it by under 1% of the default delta and, at the few thousand runs of
a default audit, expects only a handful of draws, so the budget goes to cells that hold mass
and the rest stays in the bins."""


@dataclass(frozen=True)
class BinnedLaw:
    """The binned law of the first ``tokens`` tokens: ``kept`` maps each kept first token to
    its kept second tokens (empty for N = 1 or an EOS first token), ``law`` each cell (a tuple
    of token ids, :data:`OTHER` standing for a bin) to its exact positive mass."""

    tokens: int
    kept: dict[int, frozenset[int]]
    law: dict[tuple[int | str, ...], float]

    @property
    def cells(self) -> int:
        return len(self.law)

    @property
    def bins(self) -> int:
        """Cells that are "other" bins."""
        return sum(cell[-1] == OTHER for cell in self.law)

    @property
    def rest_mass(self) -> float:
        """The null mass of the "other" bins: the most TV a rearrangement inside them hides."""
        return math.fsum(mass for cell, mass in self.law.items() if cell[-1] == OTHER)

    @property
    def check(self) -> str:
        """The row's name."""
        return f"exact-binned(N={self.tokens}: {self.cells} cells)"

    def cell(self, head: tuple[int, ...]) -> tuple[int | str, ...]:
        """The cell of a run's first tokens ``head`` (up to N, cut after an EOS)."""
        first = head[0]
        if first not in self.kept:
            return (OTHER,)
        if len(head) == 1:
            return (first,)
        second = head[1]
        return (first, second if second in self.kept[first] else OTHER)


def most_probable(row: np.ndarray, count: int, floor: float) -> list[int]:
    """Up to ``count`` tokens of ``row`` with mass >= ``floor``, most probable first (the lower
    id first at a tie)."""
    order = np.argsort(-row, kind="stable")[:count]
    return [int(t) for t in order if row[t] >= floor]


def rest_of(row: np.ndarray, kept: Sequence[int]) -> float:
    """The exact (correctly rounded) sum of ``row`` outside ``kept``."""
    rest = row.copy()
    rest[list(kept)] = 0.0
    return math.fsum(rest)


def binned_law(
    target_probs: TargetProbs,
    prompt: Sequence[int],
    tokens: int,
    eos: frozenset[int],
    cells: int,
    floor: float = MIN_CELL_MASS,
) -> BinnedLaw:
    """The binned law of the first ``tokens`` (1 or 2) tokens in at most ``cells`` cells: the
    cells of largest null mass (at least ``floor`` each) first, each kept second token after a
    kept first token, one "other" bin per kept first token and one for the rest."""
    if tokens not in (1, 2):
        raise ValueError(f"the binned row covers 1 or 2 tokens, not {tokens}")
    if cells < 2:
        raise ValueError(f"the binned row needs at least 2 cells, not {cells}")
    first = next_token_rows(target_probs, prompt, [()])[0, 0]
    candidates = most_probable(first, cells - 1, floor)
    rows: dict[int, np.ndarray] = {}
    opened = [a for a in candidates if a not in eos] if tokens == 2 else []
    if opened:
        second = next_token_rows(target_probs, prompt, [(a,) for a in opened])[:, 1]
        rows = dict(zip(opened, second, strict=True))
    # Largest mass first; a first token before its continuations (its mass is at least
    # theirs, and at a tie it sorts first), so a continuation is kept only after its parent.
    offers: list[tuple[float, int, int, int]] = [(float(first[a]), 0, a, -1) for a in candidates]
    for a, row in rows.items():
        for b in most_probable(row, cells, floor / float(first[a])):
            offers.append((float(first[a]) * float(row[b]), 1, a, b))
    offers.sort(key=lambda o: (-o[0], o[1], o[2], o[3]))
    kept: dict[int, list[int]] = {}
    used = 1  # the bin of every other first token
    for _, kind, a, b in offers:
        if used == cells:
            break
        if kind == 0:
            kept[a] = []
            used += 1
        elif a in kept:
            kept[a].append(b)
            used += 1
    law: dict[tuple[int | str, ...], float] = {}
    for a, seconds in kept.items():
        if a not in rows:
            law[(a,)] = float(first[a])
            continue
        for b in seconds:
            law[(a, b)] = float(first[a]) * float(rows[a][b])
        law[(a, OTHER)] = float(first[a]) * rest_of(rows[a], seconds)
    law[(OTHER,)] = rest_of(first, list(kept))
    positive = {cell: mass for cell, mass in law.items() if mass > 0}
    return BinnedLaw(tokens, {a: frozenset(s) for a, s in kept.items()}, positive)
