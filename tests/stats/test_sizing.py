"""Chunk counts from the sign test's power, the median's order-statistic interval and the
non-inferiority test, each against scipy's binomial law (an independent computation)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from specproof.stats.sizing import (
    chunks_for_power,
    finite_interval,
    median_interval,
    sign_test_non_inferior,
    sign_test_power,
)


def scipy_power(n: int, alpha: float, share: float) -> float:
    """Power of the exact one-sided sign test, from scipy: reject at k successes when
    P(Binomial(n, 1/2) >= k) <= alpha."""
    ks = np.arange(n + 1)
    rejecting = ks[stats.binom.sf(ks - 1, n, 0.5) <= alpha]
    return 0.0 if rejecting.size == 0 else float(stats.binom.sf(rejecting.min() - 1, n, share))


@pytest.mark.parametrize(("share", "power"), [(0.7, 0.8), (0.7, 0.9), (0.9, 0.9)])
def test_chunks_for_power_is_the_smallest_count_reaching_the_power(
    share: float, power: float
) -> None:
    n = chunks_for_power(0.05, share, power)
    assert scipy_power(n, 0.05, share) >= power
    assert all(scipy_power(m, 0.05, share) < power for m in range(1, n))
    assert sign_test_power(n, 0.05, share) == pytest.approx(scipy_power(n, 0.05, share))


def test_about_forty_chunks_detect_a_seventy_percent_win_rate() -> None:
    # The "about 40 chunks" for a 70 % win rate, at alpha 0.05 and power 0.8.
    assert 30 <= chunks_for_power(0.05, 0.7, 0.8) <= 45


@pytest.mark.parametrize("bad", [(0.0, 0.7, 0.8), (0.05, 0.5, 0.8), (0.05, 0.7, 1.0)])
def test_chunks_for_power_refuses_impossible_requests(bad: tuple[float, float, float]) -> None:
    with pytest.raises(ValueError):
        chunks_for_power(*bad)


@pytest.mark.parametrize("n", [6, 10, 37, 40, 100])
def test_median_interval_takes_the_binomial_order_statistics(n: int) -> None:
    values = list(np.random.default_rng(n).permutation(n).astype(float))
    low, high = median_interval(values, 0.95)
    k = int(low) + 1  # values are 0..n-1, so x_(k) = k - 1
    assert high == n - k  # symmetric: x_(n + 1 - k)
    assert stats.binom.cdf(k - 1, n, 0.5) <= 0.025 < stats.binom.cdf(k, n, 0.5)


def test_median_interval_covers_the_median_at_its_level() -> None:
    rng = np.random.default_rng(3)
    trials, n, covered = 2000, 20, 0
    for _ in range(trials):
        low, high = median_interval(list(rng.lognormal(0.0, 1.0, n)), 0.95)
        covered += low <= 1.0 <= high  # the lognormal(0, 1) median is 1
    # Exact coverage at n = 20 is 0.9586; 2000 trials put 4.5 standard errors at 0.02.
    assert covered / trials > 0.93


def test_too_few_values_give_an_unbounded_interval() -> None:
    assert median_interval([1.0, 2.0, 3.0], 0.95) == (-np.inf, np.inf)
    assert finite_interval([1.0, 2.0, 3.0]) == [None, None]


def test_non_inferiority_counts_chunks_above_one_minus_the_margin() -> None:
    # 12 chunks at 0.97 of the reference: above 0.95 on every one, so shown non-inferior at
    # margin 0.05 (p = 2^-12), and not at margin 0.02.
    within = sign_test_non_inferior([0.97] * 12, 0.05, 0.05, 0.7)
    assert within.rejected and within.p_value == pytest.approx(0.5**12)
    assert not sign_test_non_inferior([0.97] * 12, 0.02, 0.05, 0.7).rejected
    # Half the chunks below the margin: no evidence either way.
    mixed = sign_test_non_inferior([0.9] * 6 + [1.0] * 6, 0.05, 0.05, 0.7)
    assert not mixed.rejected
    assert mixed.p_value == pytest.approx(stats.binom.sf(5, 12, 0.5))
