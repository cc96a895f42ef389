"""Per-chunk values, their t-intervals and Holm-corrected tests, as the e2e experiments store
them in their JSON (:mod:`specproof.stats.intervals` does the statistics).

A tau comparison stores each chunk's (emitted tokens, request-rounds) per drafter, the pooled
difference (ratio of totals), and the 95 % t-interval and two-sided paired t-test of the mean
per-chunk tau difference. A speed comparison stores each chunk's ratio and the 95 % t-interval
of the mean per-chunk log ratio, exponentiated (a geometric-mean ratio), with its t-test. Holm's
correction runs over a family the experiment names (every test of one kind in that run).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from specproof.stats.intervals import (
    Alternative,
    holm,
    paired_t_interval,
    paired_t_p_value,
    t_interval,
    t_p_value,
)

LEVEL = 0.95
ALPHA = 0.05
TAU_INTERVAL = (
    "95 % Student t-interval of the mean over chunks of the per-chunk tau difference "
    "(paired: both drafters decode the same chunk)"
)
RATIO_INTERVAL = (
    "95 % Student t-interval of the mean over chunks of the per-chunk log speed ratio, "
    "exponentiated (an interval of the geometric-mean ratio)"
)


def chunk_tau(rows: np.ndarray) -> np.ndarray:
    """Per-chunk tau from [chunks, 2] rows of (emitted, request-rounds)."""
    if rows.ndim != 2 or rows.shape[1] != 2:
        raise ValueError(f"need [chunks, 2] rows of (emitted, rounds), got shape {rows.shape}")
    if np.any(rows[:, 1] <= 0):
        raise ValueError("every chunk needs at least one request-round")
    return rows[:, 0] / rows[:, 1]


def paired_tau_difference(first: np.ndarray, second: np.ndarray) -> dict[str, Any]:
    """tau(first) - tau(second): pooled (ratio of totals over all chunks), and the t-interval
    and two-sided paired t-test of the mean per-chunk difference; each argument is
    [chunks >= 2, 2] of (emitted, rounds), one row per chunk, the same chunks in both."""
    if first.shape != second.shape or first.ndim != 2 or len(first) < 2:
        raise ValueError("need matching [chunks >= 2, 2] arrays of (emitted, rounds)")
    (emitted_first, rounds_first), (emitted_second, rounds_second) = first.sum(0), second.sum(0)
    first_tau, second_tau = chunk_tau(first), chunk_tau(second)
    interval = paired_t_interval(first_tau, second_tau, LEVEL)
    return {
        "difference": float(emitted_first / rounds_first - emitted_second / rounds_second),
        "mean_chunk_difference": interval.estimate,
        "interval_95": [interval.low, interval.high],
        "interval": TAU_INTERVAL,
        "p_value_two_sided": paired_t_p_value(first_tau, second_tau, "two-sided"),
        "chunks": len(first),
    }


def chunk_rows(rows: np.ndarray) -> list[list[int]]:
    """[chunks, 2] (emitted, rounds) as JSON integers."""
    return [[int(e), int(r)] for e, r in rows]


def log_ratio_summary(ratios: Sequence[float], alternative: Alternative) -> dict[str, Any]:
    """The geometric-mean ratio over chunks with its exponentiated t-interval, and the t-test
    of "the mean log ratio is 0" against ``alternative`` ("greater": the numerator faster)."""
    logs = [math.log(r) for r in ratios]
    interval = t_interval(logs, LEVEL)
    return {
        "geometric_mean": math.exp(interval.estimate),
        "interval_95": [math.exp(interval.low), math.exp(interval.high)],
        "interval": RATIO_INTERVAL,
        "alternative": alternative,
        "p_value": t_p_value(logs, alternative),
        "chunks": len(logs),
    }


def holm_family(p_values: Mapping[str, float], family: str) -> dict[str, Any]:
    """Holm's correction at :data:`ALPHA` over the named family, as stored in JSON."""
    return holm(p_values, family, ALPHA).as_dict()
