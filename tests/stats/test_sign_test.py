"""The exact sign test over paired per-chunk ratios, against scipy's binomial law."""

from __future__ import annotations

import pytest
from scipy import stats

from specproof.stats.sign_test import binomial_tail, sign_test_slower


@pytest.mark.parametrize("n", [1, 5, 12, 20])
def test_binomial_tail_matches_scipy(n: int) -> None:
    for k in range(n + 2):
        for p in (0.5, 0.9):
            assert binomial_tail(n, k, p) == pytest.approx(stats.binom.sf(k - 1, n, p), abs=1e-12)


@pytest.mark.parametrize("n", [6, 12, 24])
def test_critical_value_is_the_smallest_with_tail_at_most_alpha(n: int) -> None:
    test = sign_test_slower([0.9] * n, alpha=0.05, slower_share=0.9)
    assert test.critical is not None
    assert binomial_tail(n, test.critical, 0.5) <= 0.05 < binomial_tail(n, test.critical - 1, 0.5)
    assert test.power == pytest.approx(stats.binom.sf(test.critical - 1, n, 0.9), abs=1e-12)
    assert test.rejected and test.p_value == pytest.approx(0.5**n)


def test_ties_are_dropped_and_faster_chunks_do_not_reject() -> None:
    test = sign_test_slower([1.0, 1.0, 1.2, 1.1, 0.95, 1.3], alpha=0.05)
    assert (test.n, test.slower) == (4, 1)
    assert not test.rejected
    assert test.p_value == pytest.approx(stats.binom.sf(0, 4, 0.5))
    assert test.median_ratio == pytest.approx(1.05)


def test_too_few_chunks_can_never_reject() -> None:
    test = sign_test_slower([0.5, 0.5, 0.5, 0.5], alpha=0.05)
    assert test.critical is None and test.power == 0.0 and not test.rejected
