"""Calibration of the cumulative confidence a_k = c_1 ... c_k against prefix survival.

The event a_k predicts is "drafts 1..k all accepted" (accepted count >= k). Sequential
Temperature Scaling (STS): left to right, position k gets the temperature t_k (on the
confidence logit, c_k = sigmoid(z_k / t_k)) from a 1-D grid that minimises the expected
calibration error of a_k, with t_1..t_{k-1} already fixed. Each t_k > 0, so the order of
confidences at a position is preserved.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..decoding.rounds import DecodeResult
from .measurements import confidence_records

DEFAULT_GRID = tuple(float(t) for t in np.geomspace(0.1, 10.0, 81))


def expected_calibration_error(
    confidence: np.ndarray, outcome: np.ndarray, bins: int = 10
) -> float:
    """Equal-width binned ECE: sum over bins of (share of samples) x |mean conf - mean outcome|."""
    confidence = np.asarray(confidence, dtype=np.float64).ravel()
    outcome = np.asarray(outcome, dtype=np.float64).ravel()
    if confidence.size == 0:
        return float("nan")
    index = np.minimum((confidence * bins).astype(np.int64), bins - 1)
    total = 0.0
    for b in range(bins):
        hit = index == b
        if hit.any():
            total += hit.mean() * abs(confidence[hit].mean() - outcome[hit].mean())
    return float(total)


def survival_outcomes(accepted: np.ndarray, gamma: int) -> np.ndarray:
    """[N, gamma] indicators accepted >= k, k = 1..gamma."""
    return (np.asarray(accepted)[:, None] >= np.arange(1, gamma + 1)[None, :]).astype(np.float64)


def cumulative_confidence(logits: np.ndarray, temperatures: np.ndarray | None = None) -> np.ndarray:
    """a_k = prod_{j <= k} sigmoid(z_j / t_j) for [N, gamma] logits."""
    z = np.asarray(logits, dtype=np.float64)
    if temperatures is not None:
        z = z / np.asarray(temperatures, dtype=np.float64)[None, :]
    return np.cumprod(1.0 / (1.0 + np.exp(-z)), axis=1)


def cumulative_ece(
    logits: np.ndarray,
    accepted: np.ndarray,
    temperatures: np.ndarray | None = None,
    bins: int = 10,
) -> tuple[float, list[float]]:
    """(ECE pooled over positions, ECE per position) of a_k against survival."""
    if len(logits) == 0:
        return float("nan"), []
    gamma = logits.shape[1]
    a = cumulative_confidence(logits, temperatures)
    y = survival_outcomes(accepted, gamma)
    per_position = [expected_calibration_error(a[:, k], y[:, k], bins) for k in range(gamma)]
    return expected_calibration_error(a, y, bins), per_position


def reliability_bins(
    logits: np.ndarray,
    accepted: np.ndarray,
    temperatures: np.ndarray | None = None,
    bins: int = 10,
) -> list[dict[str, list[Any]]]:
    """Reliability-diagram data of a_k against survival, per position k = 1..gamma.

    For each position: ``count``, ``confidence`` (mean a_k) and ``survival`` (share of blocks
    with drafts 1..k accepted) in each of ``bins`` equal-width bins of a_k (the bins of
    :func:`expected_calibration_error`; empty bins have count 0 and None means). The per-position
    and pooled ECE follow from these numbers alone.
    """
    if len(logits) == 0:
        return []
    gamma = logits.shape[1]
    a = cumulative_confidence(logits, temperatures)
    y = survival_outcomes(accepted, gamma)
    index = np.minimum((a * bins).astype(np.int64), bins - 1)
    out: list[dict[str, list[Any]]] = []
    for k in range(gamma):
        count = np.bincount(index[:, k], minlength=bins)
        conf = np.bincount(index[:, k], weights=a[:, k], minlength=bins)
        hits = np.bincount(index[:, k], weights=y[:, k], minlength=bins)
        out.append(
            {
                "count": [int(c) for c in count],
                "confidence": [
                    float(s / c) if c else None for s, c in zip(conf, count, strict=True)
                ],
                "survival": [float(s / c) if c else None for s, c in zip(hits, count, strict=True)],
            }
        )
    return out


def fit_sts(
    logits: np.ndarray,
    accepted: np.ndarray,
    grid: tuple[float, ...] = DEFAULT_GRID,
    bins: int = 10,
) -> list[float]:
    """Sequential Temperature Scaling: one temperature per position, left to right."""
    z = np.asarray(logits, dtype=np.float64)
    gamma = z.shape[1]
    y = survival_outcomes(accepted, gamma)
    temperatures: list[float] = []
    prefix = np.ones(len(z))
    for k in range(gamma):
        best_t, best_error = 1.0, float("inf")
        for t in grid:
            a = prefix / (1.0 + np.exp(-z[:, k] / t))
            error = expected_calibration_error(a, y[:, k], bins)
            if error < best_error - 1e-12:
                best_t, best_error = t, error
        temperatures.append(best_t)
        prefix = prefix / (1.0 + np.exp(-z[:, k] / best_t))
    return temperatures


def calibration_entry(
    runs: Sequence[DecodeResult], temperature: float, sts_fits: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """ECE and reliability bins of a_k before STS and after each STS fit, on ``runs``."""
    logits, accepted = confidence_records(runs)
    before, before_k = cumulative_ece(logits, accepted)
    after: dict[str, Any] = {}
    for fit_key, fit in sts_fits.items():
        temps = np.asarray(fit["temperatures"])
        ece, ece_k = cumulative_ece(logits, accepted, temps)
        after[fit_key] = {
            "ece": ece,
            "ece_by_position": ece_k,
            "reliability": reliability_bins(logits, accepted, temps),
        }
    own = f"{temperature:g}"
    return {
        "blocks": len(accepted),
        "temperature": temperature,
        "ece_before": before,
        "ece_before_by_position": before_k,
        "reliability_before": reliability_bins(logits, accepted),
        "ece_after": after[own]["ece"] if own in after else float("nan"),
        "sts_fit_used": own,
        "after": after,
    }


def ece_change_by_position(
    logits: np.ndarray,
    accepted: np.ndarray,
    temperatures: Sequence[float],
    resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    bins: int = 10,
) -> list[dict[str, float]]:
    """Per position k: ECE of a_k before and after STS on the same held-out blocks, their
    difference, and a paired percentile bootstrap interval of the difference (blocks resampled
    with replacement, ``resamples`` times; the interval covers the difference with about
    ``level`` probability, approximately, as any bootstrap interval)."""
    z = np.asarray(logits, dtype=np.float64)
    temps = np.asarray(temperatures, dtype=np.float64)
    gamma = z.shape[1]
    before = cumulative_confidence(z)
    after = cumulative_confidence(z, temps)
    survived = survival_outcomes(accepted, gamma)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(z), size=(resamples, len(z)))
    tail = (1 - level) / 2
    out = []
    for k in range(gamma):
        ece_before = expected_calibration_error(before[:, k], survived[:, k], bins)
        ece_after = expected_calibration_error(after[:, k], survived[:, k], bins)
        changes = np.array(
            [
                expected_calibration_error(after[d, k], survived[d, k], bins)
                - expected_calibration_error(before[d, k], survived[d, k], bins)
                for d in draws
            ]
        )
        low, high = np.quantile(changes, [tail, 1 - tail])
        out.append(
            {
                "position": k + 1,
                "temperature": float(temps[k]),
                "ece_before": ece_before,
                "ece_after": ece_after,
                "change": ece_after - ece_before,
                "change_low": float(low),
                "change_high": float(high),
            }
        )
    return out
