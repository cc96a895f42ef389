"""The bounds behind specproof.stats, checked exactly on small problems.

Here "exactly" means by enumerating every count vector of a multinomial: the probability that
the test rejects is computed, not estimated, so these checks have no false-fail rate at all.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from specproof.stats import (
    EXACT_CELLS,
    hoeffding_threshold,
    p_value_bound,
    power_lower_bound,
    rejection_threshold,
    required_samples,
    worst_case_power,
)


def count_vectors(n: int, cells: int) -> list[tuple[int, ...]]:
    """Every way to put n draws in ``cells`` cells."""
    out = []
    for cuts in itertools.combinations(range(n + cells - 1), cells - 1):
        edges = (-1, *cuts, n + cells - 1)
        out.append(tuple(edges[i + 1] - edges[i] - 1 for i in range(cells)))
    return out


def rejection_probability(
    n: int, null: list[float], truth: list[float], alpha: float, tolerance: float = 0.0
) -> float:
    """P(p_value_bound <= alpha) when the draws follow ``truth``, by full enumeration."""
    cells = [*null, 0.0] if tolerance > 0 else list(null)
    truth = list(truth) + [0.0] * (len(cells) - len(truth))
    total = 0.0
    for counts in count_vectors(n, len(cells)):
        tv = sum(max(c / n - m, 0.0) for c, m in zip(counts, cells, strict=True))
        outside = any(c and m == 0 for c, m in zip(counts, cells, strict=True))
        p = 0.0 if outside and tolerance == 0 else p_value_bound(tv, n, cells, tolerance)
        if p <= alpha:
            total += scipy_stats.multinomial.pmf(counts, n, truth)
    return float(total)


@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.2])
@pytest.mark.parametrize("null", [[0.5, 0.3, 0.2], [0.9, 0.05, 0.05], [0.25] * 4])
def test_the_false_fail_rate_is_at_most_alpha_exactly(null: list[float], alpha: float) -> None:
    """Exact: P(reject | samples drawn from the null) <= alpha at n = 25 (no sampling here)."""
    rate = rejection_probability(25, null, null, alpha)
    assert rate <= alpha, f"false-fail rate {rate:.4g} exceeds alpha = {alpha}"


def test_the_false_fail_rate_holds_within_the_tolerance() -> None:
    """Exact: a sampler at TV 0.02 from the null, tested with tolerance 0.02, is rejected with
    probability <= alpha = 0.05 (the outside cell gets mass too)."""
    null = [0.5, 0.3, 0.2]
    shifted = [0.48, 0.3, 0.2, 0.02]
    rate = rejection_probability(20, null, shifted, 0.05, tolerance=0.02)
    assert rate <= 0.05, f"false-fail rate {rate:.4g} exceeds alpha = 0.05 within tolerance"


def test_the_hoeffding_form_holds_beyond_the_exact_cells() -> None:
    """Exact, 11 cells (the Hoeffding branch): false-fail rate <= alpha = 0.2 at n = 7."""
    cells = EXACT_CELLS + 1
    null = [1 / cells] * cells
    rate = rejection_probability(7, null, null, 0.2)
    assert rate <= 0.2


def test_the_power_bounds_hold_exactly() -> None:
    """Exact: against a law at TV 0.3, the rejection probability at n = 30 is at least the
    stated lower bounds (the specific one and the distribution-free one)."""
    null, alternative = [0.5, 0.3, 0.2], [0.2, 0.3, 0.5]
    n, alpha = 30, 0.05
    actual = rejection_probability(n, null, alternative, alpha)
    specific = power_lower_bound(n, null, 0.2, 0.5, alpha)
    generic = worst_case_power(n, 0.3, alpha, len(null))
    assert actual >= specific >= generic, (actual, specific, generic)
    assert specific > 0.5, "the specific bound should be informative at this n"


def test_exact_tails_never_exceed_the_hoeffding_bound() -> None:
    for n, masses in [(100, [0.5, 0.5]), (2000, [0.7, 0.2, 0.1]), (500, [0.1] * 10)]:
        exact = rejection_threshold(n, masses, 1e-6)
        assert exact <= hoeffding_threshold(n, len(masses), 1e-6) + 1e-12
        assert p_value_bound(exact, n, masses) <= 1e-6


@pytest.mark.parametrize("cells", [1, 2, 4, 10, 64])
@pytest.mark.parametrize("delta", [0.05, 0.2])
def test_required_samples_reach_the_stated_power(cells: int, delta: float) -> None:
    alpha, beta = 1e-6, 1e-4
    n = required_samples(delta, alpha, beta, cells)
    assert worst_case_power(n, delta, alpha, cells) >= 1 - beta
    assert worst_case_power(max(1, int(0.9 * n)), delta, alpha, cells) < 1 - beta


def test_required_samples_match_the_closed_form() -> None:
    """n = (sqrt(ln((2^k - 2)/alpha)) + sqrt(ln(1/beta)))^2 / (2 delta^2)."""
    k, alpha, beta, delta = 8, 1e-6, 1e-4, 0.1
    root = math.sqrt(math.log((2**k - 2) / alpha)) + math.sqrt(math.log(1 / beta))
    assert required_samples(delta, alpha, beta, k) == math.ceil(root**2 / (2 * delta**2))


def test_invalid_arguments_are_refused() -> None:
    with pytest.raises(ValueError):
        required_samples(0.0, 1e-6, 1e-4, 4)
    with pytest.raises(ValueError):
        required_samples(0.1, 0.0, 1e-4, 4)
    with pytest.raises(ValueError):
        rejection_threshold(10, [0.5, 0.5], 1.5)


def test_binomial_tail_sum_is_what_the_doc_says() -> None:
    """p_value_bound at k = 2 is the sum of the two one-sided binomial tails."""
    n, t, q = 50, 0.2, np.array([0.6, 0.4])
    expected = sum(scipy_stats.binom.sf(math.ceil(n * (m + t) - 1e-9) - 1, n, m) for m in q)
    assert p_value_bound(t, n, list(q)) == pytest.approx(expected, rel=1e-12)


# goodness_of_fit refuses what would make its stated alpha meaningless (issue 12, item 9) ----


@pytest.mark.parametrize(
    ("law", "what"),
    [
        ({0: 1.2, 1: -0.2}, "negative"),
        ({0: float("nan"), 1: 1.0}, "NaN"),
        ({0: 0.5, 1: float("inf")}, "inf"),
    ],
)
def test_regression_gof_refuses_a_law_with_negative_or_nan_mass(
    law: dict[int, float], what: str
) -> None:
    from specproof.stats import goodness_of_fit

    with pytest.raises(ValueError, match="law"):
        goodness_of_fit([0, 1, 0], law, alpha=1e-3)


def test_regression_gof_refuses_a_negative_tolerance() -> None:
    from specproof.stats import goodness_of_fit

    with pytest.raises(ValueError, match="tolerance"):
        goodness_of_fit([0, 1], {0: 0.5, 1: 0.5}, alpha=1e-3, tolerance=-0.1)


@pytest.mark.parametrize("count", [-3, 2.5, float("nan")])
def test_regression_gof_refuses_negative_or_fractional_counts(count: float) -> None:
    from specproof.stats import goodness_of_fit

    with pytest.raises(ValueError, match="count"):
        goodness_of_fit({0: 10, 1: count}, {0: 0.5, 1: 0.5}, alpha=1e-3)  # type: ignore[dict-item]


def test_gof_still_accepts_integer_like_counts() -> None:
    from specproof.stats import goodness_of_fit

    fit = goodness_of_fit({0: np.int64(50), 1: 50}, {0: 0.5, 1: 0.5}, alpha=1e-3)
    assert fit.n == 100 and not fit.rejected
