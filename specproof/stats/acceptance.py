"""A two-sided test of a count of accepted drafts against the exact acceptance probabilities.

Setting. Proposals i = 1, 2, ... are tested one after another; I_i is 1 when proposal i is
accepted. With F_{i-1} everything that happened before proposal i's draft token is drawn (the
prefix it is drafted at included), a correct engine has P(I_i = 1 | F_{i-1}) = a_i, where
a_i = sum_x min(p(x), q(x)) over the target's and drafter's processed laws at that prefix (the
draft token X ~ q is accepted with probability min(1, p(X) / q(X)); averaging over X gives a_i).
In a chain draft the j-th token of a round is only tested when the earlier ones were accepted,
and its prefix holds them: a_i depends on earlier outcomes, so the I_i are not independent and
the number of proposals is itself random. A Poisson-binomial test needs the a_i fixed before
the outcomes and is not valid here; what holds is that D_i = I_i - a_i is a martingale
difference sequence, and that is all the test below uses.

Test. For every real lambda, E[exp(lambda I_i) | F_{i-1}] = 1 + a_i (e^lambda - 1), so

    M_t(lambda) = exp(lambda S_t - sum_{i <= t} log(1 + a_i (e^lambda - 1))),   S_t = sum I_i,

is a nonnegative martingale of mean 1 (the exact Bernoulli moment generating function, no
Hoeffding or Bernstein relaxation). So is the average of M_t over a grid of lambda values fixed
in advance (:data:`GRID`), and by Ville's inequality that average reaches 2 / alpha at any time,
in particular at the (random, bounded) number of proposals observed, with probability at most
alpha / 2. The test rejects "too many accepted" when the average over lambda > 0 reaches 2 /
alpha and "too few" when the one over lambda < 0 does: false-fail rate <= alpha, whatever n
and however the a_i were chosen by the past. Given the a_i the averages increase (decrease) in
S, so the test is two count thresholds (:attr:`AcceptanceTest.low`, :attr:`AcceptanceTest.high`).

Totals only. When only the count n and the mean a_bar of the a_i are at hand, log(1 + a (e^lambda
- 1)) is concave in a, so sum_i log(1 + a_i (e^lambda - 1)) <= n log(1 + a_bar (e^lambda - 1))
(Jensen): the statistic built from a_bar alone is at most M_t(lambda), and the same thresholds
keep false-fail rate <= alpha. a_bar must be the mean over the proposals counted (for rows that
do not depend on the context, such as a verifier test on fixed p and q, that is sum min(p, q)).

Power is computed, not bounded: against acceptance probabilities shifted by ``shift`` at the
same proposals (a_i + shift, clipped to [0, 1], for "too many"; a_i - shift for "too few"),
held fixed, the count is Poisson-binomial and its exact tail beyond the threshold is the power
(:func:`poisson_binomial_pmf`, an O(n^2) recursion up to :data:`EXACT_POWER_MAX` proposals, the
Hoeffding bound 1 - exp(-2 g^2 / n) at a gap g beyond that).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

GRID = tuple(2.0**j for j in range(-12, 7))
"""|lambda| values of the mixture, 2^-12 .. 2^6: the lambda that detects a shift g of the count
at variance v is about g / v, so this covers variances from a fraction of one to ~10^7; the
largest lets the rejection of a proposal with a_i = 1 (impossible for a correct engine) weigh
e^64, enough to fail at any alpha in use."""
EXACT_POWER_MAX = 50_000
"""Up to this many proposals the power is the exact Poisson-binomial tail."""
DEFAULT_SHIFT = 0.05
"""The shift of every acceptance probability the stated power is against."""


@dataclass(frozen=True)
class AcceptanceTest:
    """The verdict on ``accepted`` of ``proposed`` drafts against ``expected`` = sum a_i."""

    accepted: int
    proposed: int
    expected: float
    low: int
    """The test rejects "too few" at accepted <= low (-1: it cannot)."""
    high: int
    """The test rejects "too many" at accepted >= high (proposed + 1: it cannot)."""
    alpha: float
    shift: float
    power: float
    """The smaller of the two sides' power against every a_i shifted by ``shift`` (a side
    no a_i can move towards, all of them 1 or all 0, left out)."""
    power_method: str
    """"exact" (Poisson-binomial) or "Hoeffding bound"."""

    @property
    def rejected(self) -> bool:
        return self.accepted <= self.low or self.accepted >= self.high

    @property
    def direction(self) -> str:
        """ "too many", "too few" or "" (not rejected)."""
        if self.accepted >= self.high:
            return "too many"
        return "too few" if self.accepted <= self.low else ""

    @property
    def observed_rate(self) -> float:
        return self.accepted / self.proposed if self.proposed else 0.0

    @property
    def expected_rate(self) -> float:
        return self.expected / self.proposed if self.proposed else 0.0

    def describe(self) -> str:
        verdict = f"FAIL ({self.direction})" if self.rejected else "pass"
        return (
            f"{self.accepted} of {self.proposed} drafts accepted (rate {self.observed_rate:.4f}), "
            f"expected {self.expected:.1f} (rate {self.expected_rate:.4f}); two-sided test at "
            f"alpha {self.alpha:g} rejects at <= {self.low} or >= {self.high}: {verdict}; power "
            f"{self.power:.4f} against a shift of {self.shift:g} in every acceptance probability "
            f"({self.power_method})"
        )


def checked_probabilities(probabilities: Sequence[float] | np.ndarray) -> np.ndarray:
    out = np.asarray(probabilities, dtype=np.float64).reshape(-1)
    if not np.isfinite(out).all() or (out < 0).any() or (out > 1).any():
        raise ValueError("acceptance probabilities must be finite and in [0, 1]")
    return out


def _log_mgf(probabilities: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """sum_i log(1 - a_i + a_i e^lambda) for each lambda, as a log-sum of the two terms (exact
    at a_i = 0 or 1, where 1 + a_i (e^lambda - 1) would round to 0 for lambda << 0)."""
    with np.errstate(divide="ignore"):
        stay, move = np.log1p(-probabilities), np.log(probabilities)
    terms = np.logaddexp(stay[None, :], move[None, :] + lam[:, None])
    return np.asarray(terms.sum(axis=1))


COUNTS_PER_PASS = 1 << 16
"""Counts whose statistic one vectorised pass evaluates (memory: this x len(GRID) floats)."""


def _first_true(flags: np.ndarray) -> int:
    return int(np.argmax(flags)) if flags.any() else len(flags)


def thresholds(probabilities: np.ndarray, alpha: float) -> tuple[int, int]:
    """(low, high): the largest count the test calls too few (-1: none) and the smallest it
    calls too many (n + 1: none), for the a_i ``probabilities``."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    n = len(probabilities)
    bar = math.log(2 / alpha) + math.log(len(GRID))  # the mixture's mean is 1 / len(GRID) x sum
    grid = np.asarray(GRID)
    low, high = -1, n + 1
    for lam in (grid, -grid):
        log_mgf = _log_mgf(probabilities, lam)
        for start in range(0, n + 1, COUNTS_PER_PASS):
            counts = np.arange(start, min(start + COUNTS_PER_PASS, n + 1))
            terms = lam[:, None] * counts[None, :] - log_mgf[:, None]
            peak = terms.max(axis=0)
            mixture = peak + np.log(np.exp(terms - peak).sum(axis=0))
            rejects = mixture >= bar
            if lam[0] > 0 and rejects.any():
                high = min(high, int(counts[_first_true(rejects)]))
            if lam[0] < 0 and rejects.any():
                low = max(low, int(counts[rejects][-1]))
    return low, high


def poisson_binomial_pmf(probabilities: np.ndarray) -> np.ndarray:
    """The law of the sum of independent Bernoulli(a_i), by the exact O(n^2) recursion."""
    pmf = np.zeros(len(probabilities) + 1)
    pmf[0] = 1.0
    for i, a in enumerate(probabilities):
        pmf[1 : i + 2] = pmf[1 : i + 2] * (1 - a) + pmf[: i + 1] * a
        pmf[0] *= 1 - a
    return pmf


def tail_power(probabilities: np.ndarray, low: int, high: int) -> tuple[float, str]:
    """P(count <= low or count >= high) when the count is Poisson-binomial(probabilities)."""
    n = len(probabilities)
    if n <= EXACT_POWER_MAX:
        if np.all(probabilities == probabilities[0]) if n else True:
            rate = float(probabilities[0]) if n else 0.0
            above = float(scipy_stats.binom.sf(high - 1, n, rate)) if high <= n else 0.0
            below = float(scipy_stats.binom.cdf(low, n, rate)) if low >= 0 else 0.0
            return min(1.0, above + below), "exact"
        pmf = poisson_binomial_pmf(probabilities)
        above = float(pmf[high:].sum()) if high <= n else 0.0
        below = float(pmf[: low + 1].sum()) if low >= 0 else 0.0
        return min(1.0, above + below), "exact"
    mean = float(probabilities.sum())
    gaps = [mean - high + 1 if high <= n else -1.0, low - mean if low >= 0 else -1.0]
    gap = max(gaps)
    return (1 - math.exp(-2 * gap * gap / n) if gap > 0 else 0.0), "Hoeffding bound"


def acceptance_test(
    accepted: int,
    probabilities: Sequence[float] | np.ndarray,
    alpha: float,
    shift: float = DEFAULT_SHIFT,
) -> AcceptanceTest:
    """Test ``accepted`` against the acceptance probabilities of the proposals counted (one
    per proposal, in the order tested; see the module docstring for why any order is valid)."""
    a = checked_probabilities(probabilities)
    n = len(a)
    if not 0 <= accepted <= n:
        raise ValueError(f"accepted must be in 0..{n} (the proposals counted), got {accepted}")
    if not 0 < shift < 1:
        raise ValueError(f"shift must be in (0, 1), got {shift}")
    low, high = thresholds(a, alpha)
    # A side no proposal can move towards (every a_i already 1, or 0) has no alternative.
    sides = [
        tail_power(moved, low, high)
        for moved in (np.minimum(a + shift, 1.0), np.maximum(a - shift, 0.0))
        if n and not np.array_equal(moved, a)
    ]
    power, method = min(sides) if sides else (0.0, "exact")
    return AcceptanceTest(
        accepted=accepted,
        proposed=n,
        expected=float(a.sum()),
        low=low,
        high=high,
        alpha=alpha,
        shift=shift,
        power=power,
        power_method=method,
    )


def rate_test(
    accepted: int, proposed: int, expected_rate: float, alpha: float, shift: float = DEFAULT_SHIFT
) -> AcceptanceTest:
    """The same test from totals: ``expected_rate`` the mean acceptance probability over the
    ``proposed`` drafts counted (valid by the concavity argument of the module docstring)."""
    if proposed < 0 or int(proposed) != proposed:
        raise ValueError(f"proposed must be a whole number >= 0, got {proposed}")
    if not (math.isfinite(expected_rate) and 0 <= expected_rate <= 1):
        raise ValueError(f"expected_rate must be in [0, 1], got {expected_rate}")
    return acceptance_test(accepted, np.full(int(proposed), float(expected_rate)), alpha, shift)
