"""Per-position token frequencies against the exact law, with simultaneous intervals.

Each cell's interval is Clopper-Pearson at level ``alpha / cells`` (Bonferroni over every
plotted cell), so a lossless subject has every expected value inside its interval with
probability >= 1 - ``alpha``. The intervals illustrate; the verdict is the audit's rows."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import beta as beta_law

PLOT_ALPHA = 0.01
"""Simultaneous miss rate of the plotted intervals for a lossless subject."""


@dataclass(frozen=True)
class PositionTable:
    """Position ``position`` (1-based) of ``n`` outputs: the count of each token id and the
    exact probability of that id there, with the interval of each frequency."""

    position: int
    n: int
    tokens: tuple[int, ...]
    observed: tuple[int, ...]
    expected: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]

    def outside(self) -> list[int]:
        """Tokens whose exact probability lies outside their frequency's interval."""
        return [
            t
            for t, e, lo, hi in zip(self.tokens, self.expected, self.low, self.high, strict=True)
            if not lo <= e <= hi
        ]


def clopper_pearson(count: int, n: int, alpha: float) -> tuple[float, float]:
    low = 0.0 if count == 0 else float(beta_law.ppf(alpha / 2, count, n - count + 1))
    high = 1.0 if count == n else float(beta_law.ppf(1 - alpha / 2, count + 1, n - count))
    return low, high


def marginals(law: Mapping[tuple[int, ...], float], width: int) -> list[dict[int, float]]:
    """P(token at position j = v) for j < width, from a joint law of token tuples (a shorter
    tuple, ended by EOS, has no token there)."""
    out: list[dict[int, float]] = [{} for _ in range(width)]
    for tokens, mass in law.items():
        for j, token in enumerate(tokens[:width]):
            out[j][token] = out[j].get(token, 0.0) + mass
    return out


def position_tables(
    outputs: Sequence[Sequence[int]],
    law: Mapping[tuple[int, ...], float],
    width: int,
    alpha: float = PLOT_ALPHA,
    tokens_of: Callable[[int], Sequence[int]] | None = None,
) -> list[PositionTable]:
    """One table per position < ``width``: counts of ``outputs`` (token tuples) against the
    marginals of ``law``; the tokens shown are those with exact or observed mass."""
    expected = marginals(law, width)
    counts: list[dict[int, int]] = [{} for _ in range(width)]
    for row in outputs:
        for j, token in enumerate(list(row)[:width]):
            counts[j][int(token)] = counts[j].get(int(token), 0) + 1
    n = len(outputs)
    shown = [
        sorted(set(expected[j]) | set(counts[j])) if tokens_of is None else list(tokens_of(j))
        for j in range(width)
    ]
    cells = max(sum(len(s) for s in shown), 1)
    tables = []
    for j in range(width):
        observed = [counts[j].get(t, 0) for t in shown[j]]
        bounds = [clopper_pearson(c, n, alpha / cells) for c in observed]
        tables.append(
            PositionTable(
                j + 1,
                n,
                tuple(shown[j]),
                tuple(observed),
                tuple(expected[j].get(t, 0.0) for t in shown[j]),
                tuple(b[0] for b in bounds),
                tuple(b[1] for b in bounds),
            )
        )
    return tables


def as_rows(outputs: np.ndarray) -> list[tuple[int, ...]]:
    return [tuple(int(v) for v in row) for row in outputs]
