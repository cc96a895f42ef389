"""Goodness of fit of samples against an exact law, with a guaranteed false-fail rate.

The verdict comes from :func:`specproof.stats.bounds.p_value_bound` (non-asymptotic); the
chi-square and G-test p-values ride along as asymptotic, supplementary evidence.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from scipy import stats as scipy_stats

from .bounds import (
    p_value_bound,
    power_lower_bound,
    rejection_threshold,
    required_samples,
    worst_case_power,
)
from .partition import HashPartition

Mass = Fraction | float
DEFAULT_BETA = 1e-4
DEFAULT_DELTA = 0.1


@dataclass(frozen=True)
class FitResult:
    """One goodness-of-fit test: the samples' TV distance from an exact law, and its verdict.

    ``bound`` is the TV estimate at which the test rejects; ``p_bound`` a non-asymptotic
    p-value (rejected iff p_bound <= alpha). ``required_n`` is the n that detects any law at
    TV >= ``delta`` from the exact one with probability >= 1 - ``beta``.
    """

    name: str
    n: int
    cells: int
    tv_estimate: float
    bound: float
    p_bound: float
    alpha: float
    beta: float
    delta: float
    tolerance: float
    required_n: int
    power: float
    outside: int
    chi2_pvalue: float
    g_pvalue: float

    @property
    def rejected(self) -> bool:
        return self.p_bound <= self.alpha

    @property
    def verdict(self) -> str:
        return "FAIL" if self.rejected else "pass"

    @property
    def powered(self) -> bool:
        """True when n reaches the sample size that guarantees power 1 - beta against delta."""
        return self.n >= self.required_n

    def describe(self) -> str:
        return (
            f"{self.name or 'fit'}: TV estimate {self.tv_estimate:.4f} vs bound {self.bound:.4f} "
            f"at n={self.n} over {self.cells} cells -> {self.verdict} "
            f"(false-fail alpha={self.alpha:g}; power >= {self.power:.6f} against TV >= "
            f"{self.delta:g}, 1 - beta = {1 - self.beta:g}; p_bound={self.p_bound:.3g}, "
            f"chi2 p={self.chi2_pvalue:.3g}, G p={self.g_pvalue:.3g}, outside={self.outside})"
        )

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "verdict": self.verdict, "rejected": self.rejected}


def empirical_counts(samples: Iterable[Hashable] | Mapping[Any, int]) -> Counter[Hashable]:
    if isinstance(samples, Mapping):
        return Counter(dict(samples))
    return Counter(samples)


def tv_from_counts(counts: Mapping[Any, int], law: Mapping[Any, Mass]) -> float:
    """TV(P_n, Q) = sum over cells of max(P_n - Q, 0), over the union of supports."""
    n = sum(counts.values())
    total = 0.0
    for outcome, count in counts.items():
        total += max(count / n - float(law.get(outcome, 0.0)), 0.0)
    return total


def goodness_of_fit(
    samples: Iterable[Hashable] | Mapping[Any, int],
    law: Mapping[Any, Mass],
    *,
    alpha: float,
    beta: float = DEFAULT_BETA,
    delta: float = DEFAULT_DELTA,
    tolerance: float = 0.0,
    partition: HashPartition | None = None,
    name: str = "",
) -> FitResult:
    """Test that ``samples`` (outcomes, or outcome -> count) were drawn i.i.d. from ``law``.

    Rejects with probability at most ``alpha`` when the sampler's law is within ``tolerance``
    of ``law`` in TV. ``partition`` first maps outcomes to hash bins (bin masses pushed forward
    exactly), for outcome spaces too large to test cell by cell.
    """
    _check_inputs(law, tolerance)
    counts = empirical_counts(samples)
    _check_counts(counts)
    if partition is not None:
        counts = partition.counts(counts)
        law = partition.law(law)
    n = sum(counts.values())
    if n <= 0:
        raise ValueError("goodness_of_fit needs at least one sample")
    support = [x for x, m in law.items() if m > 0]
    masses = [float(law[x]) for x in support]
    total = math.fsum(masses)
    if abs(total - 1) > 1e-9:
        raise ValueError(f"the exact law's masses sum to {total}, not 1")
    inside = set(support)
    outside = sum(c for x, c in counts.items() if x not in inside)
    cells = [*masses, 0.0] if tolerance > 0 else masses
    tv = tv_from_counts(counts, law)
    # A draw outside the exact support is impossible under a zero-tolerance null.
    p_bound = 0.0 if outside and tolerance == 0 else p_value_bound(tv, n, cells, tolerance)
    observed = np.array([counts.get(x, 0) for x in support], dtype=np.float64)
    chi2, g = _asymptotic_pvalues(observed, np.asarray(masses), outside)
    return FitResult(
        name=name,
        n=n,
        cells=len(cells),
        tv_estimate=tv,
        bound=rejection_threshold(n, cells, alpha, tolerance),
        p_bound=p_bound,
        alpha=alpha,
        beta=beta,
        delta=delta,
        tolerance=tolerance,
        required_n=required_samples(delta, alpha, beta, len(cells), tolerance),
        power=worst_case_power(n, delta, alpha, len(cells), tolerance),
        outside=outside,
        chi2_pvalue=chi2,
        g_pvalue=g,
    )


def _check_inputs(law: Mapping[Any, Mass], tolerance: float) -> None:
    """The null law must be a law (finite, non-negative masses) and the tolerance a distance."""
    for outcome, mass in law.items():
        value = float(mass)
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"the exact law has mass {mass!r} at {outcome!r}")
    if not (math.isfinite(tolerance) and 0 <= tolerance < 1):
        raise ValueError(f"tolerance must be in [0, 1), got {tolerance}")


def _check_counts(counts: Mapping[Any, Any]) -> None:
    for outcome, count in counts.items():
        if isinstance(count, bool) or not float(count).is_integer() or count < 0:
            raise ValueError(f"count {count!r} at {outcome!r} is not a non-negative integer")


def _asymptotic_pvalues(
    observed: np.ndarray, masses: np.ndarray, outside: int
) -> tuple[float, float]:
    """Pearson chi-square and G-test p-values (asymptotic; 0 when a draw left the support)."""
    if outside or len(masses) < 2:
        return (0.0, 0.0) if outside else (1.0, 1.0)
    expected = masses / masses.sum() * observed.sum()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        chi2 = scipy_stats.power_divergence(observed, expected, lambda_="pearson").pvalue
        g = scipy_stats.power_divergence(observed, expected, lambda_="log-likelihood").pvalue
    return float(chi2), float(g)


def detection_power(
    n: int,
    null: Mapping[Any, Mass],
    alternative: Mapping[Any, Mass],
    *,
    alpha: float,
    tolerance: float = 0.0,
    partition: HashPartition | None = None,
) -> float:
    """A lower bound on the chance that :func:`goodness_of_fit` rejects samples of
    ``alternative`` tested against ``null`` (both exact laws) at this n."""
    if partition is not None:
        null, alternative = partition.law(null), partition.law(alternative)
    masses = [float(m) for m in null.values() if m > 0]
    cells = [*masses, 0.0] if tolerance > 0 else masses
    excess = [x for x in set(null) | set(alternative) if alternative.get(x, 0) > null.get(x, 0)]
    return power_lower_bound(
        n,
        cells,
        math.fsum(float(null.get(x, 0)) for x in excess),
        math.fsum(float(alternative.get(x, 0)) for x in excess),
        alpha,
        tolerance,
    )


def exact_tv(first: Mapping[Any, Mass], second: Mapping[Any, Mass]) -> float:
    """TV between two exact laws (as a float), over the union of their supports."""
    keys = set(first) | set(second)
    return math.fsum(abs(float(first.get(x, 0)) - float(second.get(x, 0))) for x in keys) / 2
