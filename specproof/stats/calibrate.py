"""Measure the test's error rates instead of assuming them.

:func:`measure` runs :func:`~specproof.stats.goodness_of_fit` many times with independent seeds
(a) on a correct sampler, giving the observed false-fail rate beside alpha, and (b) on a biased
sampler at a known TV, giving the observed power beside 1 - beta. It uses alpha = beta = 0.05
(not the suite's 1e-6) so that rates are measurable with a few thousand runs; the bounds are
conservative, so the observed false-fail rate sits below alpha. The samplers measured by
``nox -s calibration`` (the reference decoder and the audit's example verifier among them) are
run by :mod:`specproof.runners.calibrate`, which sits above both packages.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

from .bounds import required_samples
from .gof import Mass, exact_tv, goodness_of_fit

ALPHA = 0.05
BETA = 0.05

Law = dict[Hashable, Mass]
Draw = Callable[[int, int], Counter[Hashable]]
"""(n, seed) -> counts of n independent draws."""


@dataclass(frozen=True)
class Measurement:
    sampler: str
    kind: str  # "false-fail" (correct sampler) or "power" (biased sampler)
    exact_tv: float
    delta: float
    n: int
    runs: int
    rejections: int
    rate: float
    interval: tuple[float, float]  # 95 % Clopper-Pearson interval of the rate
    nominal: float  # alpha for false-fail rows, 1 - beta for power rows
    seconds: float

    @property
    def consistent(self) -> bool:
        """Observed false-fail <= alpha, or observed power >= 1 - beta, within the interval."""
        if self.kind == "false-fail":
            return self.interval[0] <= self.nominal
        return self.interval[1] >= self.nominal


def clopper_pearson(successes: int, trials: int, level: float = 0.95) -> tuple[float, float]:
    tail = (1 - level) / 2
    low = 0.0 if successes == 0 else scipy_stats.beta.ppf(tail, successes, trials - successes + 1)
    high = (
        1.0
        if successes == trials
        else scipy_stats.beta.ppf(1 - tail, successes + 1, trials - successes)
    )
    return float(low), float(high)


def measure(
    sampler: str,
    kind: str,
    draw: Draw,
    truth: Law,
    null: Law,
    delta: float,
    runs: int,
    progress: Callable[[str], None],
    tolerance: float = 0.0,
) -> Measurement:
    cells = sum(1 for m in null.values() if m > 0) + (1 if tolerance > 0 else 0)
    n = required_samples(delta, ALPHA, BETA, cells, tolerance)
    start = time.perf_counter()
    rejections = 0
    for run in range(runs):
        fit = goodness_of_fit(
            draw(n, run), null, alpha=ALPHA, beta=BETA, delta=delta, tolerance=tolerance
        )
        rejections += fit.rejected
        if (run + 1) % max(1, runs // 5) == 0:
            progress(f"{sampler} [{kind}]: {run + 1}/{runs} runs, {rejections} rejections")
    nominal = ALPHA if kind == "false-fail" else 1 - BETA
    return Measurement(
        sampler,
        kind,
        exact_tv(truth, null),
        delta,
        n,
        runs,
        rejections,
        rejections / runs,
        clopper_pearson(rejections, runs),
        nominal,
        time.perf_counter() - start,
    )


# Samplers ----------------------------------------------------------------------------------


def multinomial(law: Law) -> Draw:
    keys = list(law)
    masses = np.array([float(law[k]) for k in keys])

    def draw(n: int, seed: int) -> Counter[Hashable]:
        counts = np.random.default_rng([seed, 7]).multinomial(n, masses / masses.sum())
        return Counter({k: int(c) for k, c in zip(keys, counts, strict=True) if c})

    return draw


def shifted(law: Law, delta: float) -> Law:
    """Add ``delta`` to the lightest cell, scaling the others down: a law at TV exactly delta."""
    floats = {k: float(m) for k, m in law.items()}
    light = min(floats, key=lambda k: floats[k])
    scale = (1 - floats[light] - delta) / (1 - floats[light])
    out: Law = {k: m * scale for k, m in floats.items()}
    out[light] = floats[light] + delta
    return out


def markdown(results: list[Measurement], seconds: float) -> str:
    lines = [
        "# Calibration of specproof.stats",
        "",
        f"Each row runs `goodness_of_fit` on independent seeds at alpha = {ALPHA} and "
        f"beta = {BETA} (the suite uses alpha = 1e-6; these larger rates make the observed "
        "frequencies measurable). n is `required_samples(delta, alpha, beta, cells)`. "
        "False-fail rows sample a correct sampler (its observed rate should be <= alpha); power "
        "rows sample a biased one at the stated exact TV (observed power should be >= 1 - beta). "
        "Intervals are 95 % Clopper-Pearson.",
        "",
        "| sampler | kind | exact TV | delta | n | runs | observed | 95 % interval | nominal "
        "| ok |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        nominal = (
            f"alpha = {r.nominal:g}" if r.kind == "false-fail" else f"1 - beta = {r.nominal:g}"
        )
        lines.append(
            f"| {r.sampler} | {r.kind} | {r.exact_tv:.4g} | {r.delta:g} | {r.n} | {r.runs} | "
            f"{r.rate:.4f} | [{r.interval[0]:.4f}, {r.interval[1]:.4f}] | {nominal} | "
            f"{'yes' if r.consistent else 'NO'} |"
        )
    lines += ["", f"Total time {seconds:.0f} s.", ""]
    return "\n".join(lines)
