"""The e2e experiments' per-chunk statistics, against values computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specproof.e2e.evaluation.chunk_intervals import (
    RATIO_INTERVAL,
    TAU_INTERVAL,
    chunk_tau,
    holm_family,
    log_ratio_summary,
    paired_tau_difference,
)

T_1_975 = 12.706204736174696  # t quantile, 1 degree of freedom, 0.975 (tables)


def test_paired_tau_difference_by_hand() -> None:
    first = np.array([[10.0, 2.0], [6.0, 2.0]])  # chunk tau 5, 3; pooled 16 / 4 = 4
    second = np.array([[4.0, 2.0], [4.0, 2.0]])  # chunk tau 2, 2; pooled 2
    result = paired_tau_difference(first, second)
    # Differences 3, 1: mean 2, sd sqrt(2), standard error 1; t = 2 on 1 degree of freedom
    # (a Cauchy law): two-sided p = 1 - (2 / pi) atan(2).
    assert result["difference"] == 2.0
    assert result["mean_chunk_difference"] == 2.0
    assert result["interval_95"] == pytest.approx([2 - T_1_975, 2 + T_1_975], rel=1e-12)
    assert result["p_value_two_sided"] == pytest.approx(1 - 2 / math.pi * math.atan(2.0))
    assert (result["interval"], result["chunks"]) == (TAU_INTERVAL, 2)


def test_paired_tau_difference_refuses_one_chunk_or_unpaired_arrays() -> None:
    with pytest.raises(ValueError):
        paired_tau_difference(np.ones((1, 2)), np.ones((1, 2)))
    with pytest.raises(ValueError):
        paired_tau_difference(np.ones((3, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="request-round"):
        chunk_tau(np.array([[1.0, 0.0], [1.0, 1.0]]))


def test_log_ratio_summary_by_hand() -> None:
    # log ratios a, 3a with a = log 2: mean 2a (geometric mean 4), standard error a.
    a = math.log(2.0)
    result = log_ratio_summary([2.0, 8.0], "greater")
    assert result["geometric_mean"] == pytest.approx(4.0)
    assert result["interval_95"] == pytest.approx(
        [math.exp(2 * a - T_1_975 * a), math.exp(2 * a + T_1_975 * a)], rel=1e-12
    )
    assert result["p_value"] == pytest.approx(0.5 - math.atan(2.0) / math.pi)
    assert result["interval"] == RATIO_INTERVAL


def test_holm_family_is_named_and_adjusts() -> None:
    result = holm_family({"x": 0.01, "y": 0.04}, "two tests")
    assert result["family"] == "two tests"
    assert result["adjusted"] == pytest.approx({"x": 0.02, "y": 0.04})
    assert result["rejected"] == {"x": True, "y": True}
