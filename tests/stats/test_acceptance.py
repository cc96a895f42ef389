"""The acceptance test's false-fail rate and power, measured by simulation.

False-fail rate: 2000 simulated runs of a correct chain process whose acceptance probability
depends on the previous outcome (the dependence a chain draft has), at alpha = 0.05; the test
fails if the rejections exceed the binomial(2000, 0.05) quantile 1 - 1e-6, so a test whose
rate is <= alpha fails this check with probability <= 1e-6 (seeds are fixed: deterministic);
a test rejecting at one standard deviation, on the same runs, must exceed that quantile.
Power: the computed power (exact Poisson-binomial tail) against a shift of 0.05 must agree with
the rejection frequency of 2000 simulated shifted runs within the binomial 1e-6 two-sided
interval around it.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from specproof.stats.acceptance import (
    acceptance_test,
    poisson_binomial_pmf,
    rate_test,
    thresholds,
)

SIMULATIONS = 2000
ALPHA = 0.05
CHECK_ALPHA = 1e-6
PROPOSALS = 200
AFTER_ACCEPT, AFTER_REJECT = 0.8, 0.3
"""A chain's acceptance probability after an accepted draft, and after a rejection."""


def chain_runs(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """[SIMULATIONS, PROPOSALS] outcomes and their conditional probabilities, each probability
    set by the outcome before it (the first from a coin)."""
    outcomes = np.zeros((SIMULATIONS, PROPOSALS), dtype=bool)
    probabilities = np.zeros((SIMULATIONS, PROPOSALS))
    current = np.where(rng.random(SIMULATIONS) < 0.5, AFTER_ACCEPT, AFTER_REJECT)
    for i in range(PROPOSALS):
        probabilities[:, i] = current
        outcomes[:, i] = rng.random(SIMULATIONS) < current
        current = np.where(outcomes[:, i], AFTER_ACCEPT, AFTER_REJECT)
    return outcomes, probabilities


def most_rejections() -> int:
    """The binomial(SIMULATIONS, ALPHA) quantile 1 - CHECK_ALPHA."""
    return int(scipy_stats.binom.ppf(1 - CHECK_ALPHA, SIMULATIONS, ALPHA))


def test_false_fail_rate_under_sequential_dependence() -> None:
    outcomes, probabilities = chain_runs(np.random.default_rng(0))
    per_proposal = totals = 0
    for accepted, a in zip(outcomes.sum(axis=1), probabilities, strict=True):
        low, high = thresholds(a, ALPHA)
        per_proposal += accepted <= low or accepted >= high
        # The totals form: the same count against n and the mean of these a_i.
        low, high = thresholds(np.full(PROPOSALS, a.mean()), ALPHA)
        totals += accepted <= low or accepted >= high
    # The check's teeth: a test that rejects at one standard deviation of the martingale
    # (false-fail rate about 0.3, not 0.05) on the same runs must exceed the bound.
    gap = outcomes.sum(axis=1) - probabilities.sum(axis=1)
    spread = np.sqrt((probabilities * (1 - probabilities)).sum(axis=1))
    too_eager = int((np.abs(gap) >= spread).sum())
    print(
        f"rejections of {SIMULATIONS} correct runs: {per_proposal} per proposal, {totals} totals "
        f"(bound {most_rejections()}; a one-sigma test: {too_eager})"
    )
    assert per_proposal <= most_rejections()
    assert totals <= most_rejections()
    assert too_eager > most_rejections()


def test_thresholds_agree_with_the_verdict() -> None:
    a = np.linspace(0.1, 0.9, 50)
    low, high = thresholds(a, ALPHA)
    assert 0 <= low < a.sum() < high <= len(a)
    assert not acceptance_test(low + 1, a, ALPHA).rejected
    assert not acceptance_test(high - 1, a, ALPHA).rejected
    assert acceptance_test(low, a, ALPHA).direction == "too few"
    assert acceptance_test(high, a, ALPHA).direction == "too many"


@pytest.mark.parametrize("direction", [1, -1], ids=["too-many", "too-few"])
def test_power_matches_simulation(direction: int) -> None:
    rng = np.random.default_rng(1)
    a = rng.uniform(0.2, 0.8, 1000)
    shift = 0.05
    stated = acceptance_test(round(float(a.sum())), a, ALPHA, shift)
    moved = np.clip(a + direction * shift, 0, 1)
    counts = (rng.random((SIMULATIONS, len(a))) < moved).sum(axis=1)
    hits = int(((counts <= stated.low) | (counts >= stated.high)).sum())
    side_power = float(
        poisson_binomial_pmf(moved)[stated.high :].sum()
        + poisson_binomial_pmf(moved)[: stated.low + 1].sum()
    )
    lo, hi = scipy_stats.binom.interval(1 - CHECK_ALPHA, SIMULATIONS, side_power)
    print(f"power against shift {direction * shift}: computed {side_power:.4f}, simulated "
          f"{hits / SIMULATIONS:.4f}; stated (smaller side) {stated.power:.4f}")  # fmt: skip
    assert lo <= hits <= hi
    assert stated.power <= side_power + 1e-12


def test_poisson_binomial_pmf_matches_enumeration() -> None:
    a = np.array([0.1, 0.5, 0.7, 0.95, 0.0, 1.0])
    law = np.zeros(len(a) + 1)
    for bits in itertools.product((0, 1), repeat=len(a)):
        law[sum(bits)] += math.prod(p if b else 1 - p for p, b in zip(a, bits, strict=True))
    np.testing.assert_allclose(poisson_binomial_pmf(a), law, atol=1e-15)


def test_a_verifier_accepting_almost_everything_fails_too_many() -> None:
    """A verifier accepting 99.95 % of drafts where a correct one accepts 17.6 %."""
    test = rate_test(9995, 10000, 0.176, alpha=1e-6)
    assert test.rejected and test.direction == "too many"
    assert not rate_test(1760, 10000, 0.176, alpha=1e-6).rejected


def test_certain_acceptance_fails_on_one_rejection() -> None:
    assert not acceptance_test(10, [1.0] * 10, ALPHA).rejected
    assert acceptance_test(9, [1.0] * 10, ALPHA).direction == "too few"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: rate_test(5, 4, 0.5, ALPHA), "accepted must be in 0..4"),
        (lambda: rate_test(1, 4, 1.5, ALPHA), "expected_rate must be in"),
        (lambda: acceptance_test(1, [0.5, float("nan")], ALPHA), "finite and in"),
        (lambda: acceptance_test(1, [0.5], 0.0), "alpha must be in"),
        (lambda: acceptance_test(1, [0.5], ALPHA, shift=0.0), "shift must be in"),
    ],
)
def test_bad_input_is_refused(call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message):
        call()
