"""How many paired chunks a sign test needs, the distribution-free interval of a median, and
the non-inferiority form of the sign test.

All three rest on one fact: over n paired chunks with no ties, the number of chunks on which
one decoder is the faster is Binomial(n, 1/2) when neither is favoured, whatever the
distribution of the per-chunk ratios.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .sign_test import SignTest, binomial_tail, sign_test_slower


def critical_count(n: int, alpha: float) -> int | None:
    """The smallest k with P(Binomial(n, 1/2) >= k) <= alpha (None: no k rejects at n)."""
    return next((k for k in range(n + 1) if binomial_tail(n, k, 0.5) <= alpha), None)


def sign_test_power(n: int, alpha: float, share: float) -> float:
    """Power of the one-sided exact sign test over ``n`` untied chunks at level ``alpha``
    against "the tested direction holds on a chunk with probability ``share``"."""
    critical = critical_count(n, alpha)
    return 0.0 if critical is None else binomial_tail(n, critical, share)


def chunks_for_power(alpha: float, share: float, power: float, most: int = 2000) -> int:
    """The smallest number of untied chunks at which the one-sided sign test at level
    ``alpha`` has at least ``power`` against ``share``.

    The test is discrete, so its power is not monotone in n (it drops each time the critical
    count steps up); a few more chunks can have less power than this n, which is reported as
    measured, with the power at the n actually used.
    """
    if not 0 < alpha < 1 or not 0.5 < share < 1 or not 0 < power < 1:
        raise ValueError("need 0 < alpha < 1, 1/2 < share < 1 and 0 < power < 1")
    for n in range(1, most + 1):
        if sign_test_power(n, alpha, share) >= power:
            return n
    raise ValueError(f"no n <= {most} reaches power {power} against share {share}")


def median_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """Distribution-free interval for the median: order statistics (x_(k), x_(n+1-k)) with
    the largest k such that P(Binomial(n, 1/2) <= k - 1) <= (1 - level) / 2, so the coverage
    is at least ``level`` for any continuous law. (-inf, inf) when n is too small."""
    if not 0 < level < 1:
        raise ValueError("level must be in (0, 1)")
    ordered = sorted(values)
    n = len(ordered)
    tail = (1 - level) / 2
    k = 0
    while k + 1 <= n and 1.0 - binomial_tail(n, k + 1, 0.5) <= tail:
        k += 1
    if k == 0:
        return (-math.inf, math.inf)
    return (ordered[k - 1], ordered[n - k])


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        return math.nan
    middle = n // 2
    return ordered[middle] if n % 2 else 0.5 * (ordered[middle - 1] + ordered[middle])


def sign_test_faster(ratios: Sequence[float], alpha: float, share: float) -> SignTest:
    """ "A is faster than B" from per-chunk ratios speed(A) / speed(B): the slower-test on the
    inverse ratios (its ``slower`` field counts the chunks on which A is the faster, and
    ``median_ratio`` is the median of B / A)."""
    return sign_test_slower([1.0 / r for r in ratios], alpha, share)


def sign_test_non_inferior(
    ratios: Sequence[float], margin: float, alpha: float, share: float
) -> SignTest:
    """ "A is not slower than (1 - margin) times B": rejects when enough chunks have
    speed(A) / speed(B) above 1 - margin (the slower-test on (1 - margin) / ratio). Its
    false-alarm rate is at most ``alpha`` whenever A reaches (1 - margin) * B on at most half
    of the chunks."""
    if not 0 <= margin < 1:
        raise ValueError("margin must be in [0, 1)")
    return sign_test_slower([(1.0 - margin) / r for r in ratios], alpha, share)


def finite_interval(values: Sequence[float], level: float = 0.95) -> list[float | None]:
    """:func:`median_interval` for JSON: an unbounded end (too few chunks) is None."""
    return [x if math.isfinite(x) else None for x in median_interval(values, level)]
