"""Non-asymptotic bounds for the total-variation distance of an empirical law from an exact one.

Setting: ``n`` i.i.d. draws from a law P on cells 1..k; Q is the law P should equal; the
statistic is T = TV(P_n, Q) = max over subsets A of (P_n(A) - Q(A)).

Null, P = Q. For t > 0, {T >= t} is the union over the 2^k - 2 proper non-empty subsets A of
{n P_n(A) >= n (Q(A) + t)}, and n P_n(A) ~ Binomial(n, Q(A)). So

    P(T >= t) <= sum_A P(Binomial(n, Q(A)) >= n (Q(A) + t))            (exact binomial tails)
              <= (2^k - 2) exp(-2 n t^2)                               (Hoeffding per subset)

The second line is the Bretagnolle-Huber-Carol inequality (with 2^k - 2 instead of 2^k); the
first is never larger and is computed for k <= ``EXACT_CELLS``. Evaluated at the observed T it
is a valid p-value: P(p <= alpha) <= alpha under the null, for every n and k.

Null up to a tolerance, TV(P, Q) <= tol (a float sampler's rounding). T <= TV(P_n, P) + tol,
and for |P(A) - Q(A)| <= tol the tail P(Bin(n, P(A)) >= n (P(A) + s)) is at most
P(Bin(n, Q(A) + tol) >= n (Q(A) - tol + s)); so the same sums hold at s = t - tol.

Power. If TV(P, Q) >= delta, the set A* = {P > Q} has P(A*) - Q(A*) >= delta and T >= P_n(A*) -
Q(A*); the test (rejecting at T >= t_alpha) accepts only if P_n(A*) - P(A*) < t_alpha - delta,
probability at most exp(-2 n (delta - t_alpha)^2) (one Hoeffding bound, no union). Since
t_alpha <= tol + sqrt(ln((2^k - 2)/alpha) / (2 n)), power >= 1 - beta as soon as

    n >= (sqrt(ln((2^k - 2) / alpha)) + sqrt(ln(1 / beta)))^2 / (2 (delta - tol)^2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats as scipy_stats

EXACT_CELLS = 10
"""Up to this many cells, the union bound sums exact binomial tails over all 2^k - 2 subsets."""

_SLACK = 1e-9
"""Counts thresholds are lowered by this much before rounding up, so float error only ever
makes a p-value larger (more conservative)."""


def _log_subsets(cells: int) -> float:
    """ln(2^k - 2), the number of proper non-empty subsets of k >= 2 cells."""
    return cells * math.log(2.0) + math.log1p(-(2.0 ** (1 - cells)))


def _subset_masses(masses: Sequence[float]) -> np.ndarray:
    """Q(A) for every proper non-empty subset A of the cells."""
    q = np.asarray(masses, dtype=np.float64)
    k = len(q)
    index = np.arange(1, 2**k - 1, dtype=np.int64)
    bits = (index[:, None] >> np.arange(k, dtype=np.int64)) & 1
    return np.asarray(bits @ q, dtype=np.float64)


def hoeffding_threshold(n: int, cells: int, alpha: float, tolerance: float = 0.0) -> float:
    """sqrt(ln((2^k - 2)/alpha) / (2n)) + tol: the Bretagnolle-Huber-Carol rejection bound."""
    _check_alpha(alpha)
    if cells < 2:
        return tolerance
    return tolerance + math.sqrt((_log_subsets(cells) - math.log(alpha)) / (2 * n))


def p_value_bound(
    statistic: float, n: int, masses: Sequence[float], tolerance: float = 0.0
) -> float:
    """An upper bound on P(TV(P_n, Q) >= statistic) when TV(P, Q) <= tolerance.

    ``masses`` are Q's positive cell masses. Exact binomial tails for at most ``EXACT_CELLS``
    cells, the Hoeffding form beyond.
    """
    cells = len(masses)
    excess = statistic - tolerance
    if cells < 2 or excess <= 0:
        return 1.0
    if cells > EXACT_CELLS:
        return min(1.0, math.exp(_log_subsets(cells) - 2 * n * excess * excess))
    subset = _subset_masses(masses)
    counts = np.ceil(n * (subset - tolerance + excess) - _SLACK)
    success = np.minimum(subset + tolerance, 1.0)
    tails = scipy_stats.binom.sf(counts - 1, n, success)
    return float(min(1.0, tails.sum()))


def rejection_threshold(
    n: int, masses: Sequence[float], alpha: float, tolerance: float = 0.0
) -> float:
    """The smallest TV estimate (to 1e-7) at which :func:`p_value_bound` falls to ``alpha``."""
    _check_alpha(alpha)
    cells = len(masses)
    high = hoeffding_threshold(n, cells, alpha, tolerance)
    if cells < 2 or cells > EXACT_CELLS:
        return high
    low = tolerance
    while high - low > 1e-7:
        middle = (low + high) / 2
        if p_value_bound(middle, n, masses, tolerance) <= alpha:
            high = middle
        else:
            low = middle
    return high


def required_samples(
    delta: float, alpha: float, beta: float, support: int, tolerance: float = 0.0
) -> int:
    """The n at which the test detects any law at TV >= ``delta`` with probability >= 1 - beta.

    ``support`` is the number of cells with positive null mass; the guarantee holds for every
    alternative, whatever its shape (see the module docstring). With a single cell the test
    rejects on any draw outside it, which a law at TV >= delta misses with (1 - delta)^n.
    """
    _check_alpha(alpha)
    _check_alpha(beta, "beta")
    margin = delta - tolerance
    if not 0 < margin <= 1:
        raise ValueError(f"need 0 < delta - tolerance <= 1, got delta={delta}, tol={tolerance}")
    if support < 1:
        raise ValueError(f"support must have at least one cell, got {support}")
    if support == 1:
        return 1 if margin >= 1 else math.ceil(math.log(beta) / math.log1p(-margin))
    root = math.sqrt(_log_subsets(support) - math.log(alpha)) + math.sqrt(-math.log(beta))
    return math.ceil(root * root / (2 * margin * margin))


def worst_case_power(
    n: int, delta: float, alpha: float, support: int, tolerance: float = 0.0
) -> float:
    """A lower bound on the power against every law at TV >= ``delta`` (distribution-free)."""
    if support == 1:
        return 1 - (1 - (delta - tolerance)) ** n
    gap = delta - hoeffding_threshold(n, support, alpha, tolerance)
    return 0.0 if gap <= 0 else 1 - math.exp(-2 * n * gap * gap)


def power_lower_bound(
    n: int,
    null_masses: Sequence[float],
    excess_null: float,
    excess_alternative: float,
    alpha: float,
    tolerance: float = 0.0,
) -> float:
    """A lower bound on the power against one known alternative law P.

    ``excess_null`` is Q(A*) and ``excess_alternative`` is P(A*) for A* = {x : P(x) > Q(x)}
    (cells outside Q's support included). The test rejects whenever n P_n(A*) reaches
    n (Q(A*) + t_alpha); that count is Binomial(n, P(A*)).
    """
    threshold = rejection_threshold(n, null_masses, alpha, tolerance)
    if len(null_masses) == 1:
        # Any draw outside the single cell rejects; A* is exactly the outside.
        return 1 - (1 - excess_alternative) ** n
    count = math.ceil(n * (excess_null + threshold) + _SLACK)
    return float(scipy_stats.binom.sf(count - 1, n, excess_alternative))


def _check_alpha(value: float, name: str = "alpha") -> None:
    if not 0 < value < 1:
        raise ValueError(f"{name} must be in (0, 1), got {value}")
