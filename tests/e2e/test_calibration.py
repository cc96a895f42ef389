"""ECE and Sequential Temperature Scaling on synthetic confidences with a known truth."""

from __future__ import annotations

import numpy as np

from specproof.e2e.evaluation.calibration import (
    cumulative_confidence,
    cumulative_ece,
    ece_change_by_position,
    expected_calibration_error,
    fit_sts,
    reliability_bins,
)


def test_ece_of_a_calibrated_predictor_is_small() -> None:
    rng = np.random.default_rng(0)
    p = rng.uniform(size=20_000)
    assert expected_calibration_error(p, rng.uniform(size=p.size) < p) < 0.02
    assert abs(expected_calibration_error(np.full(100, 0.9), np.zeros(100)) - 0.9) < 1e-12


def synthetic_blocks(rng: np.random.Generator, n: int, gamma: int) -> tuple[np.ndarray, np.ndarray]:
    """True per-position acceptance sigmoid(z); the head reports 3 z (overconfident)."""
    z = rng.normal(1.0, 1.0, size=(n, gamma))
    survive = rng.uniform(size=(n, gamma)) < 1 / (1 + np.exp(-z))
    accepted = np.where(survive.all(1), gamma, np.argmin(survive, axis=1))
    return 3 * z, accepted


def test_sts_recovers_calibration_and_keeps_order() -> None:
    rng = np.random.default_rng(1)
    logits, accepted = synthetic_blocks(rng, 8000, 4)
    temperatures = fit_sts(logits, accepted)
    assert all(2.0 < t < 4.5 for t in temperatures)
    test_logits, test_accepted = synthetic_blocks(rng, 8000, 4)
    before, _ = cumulative_ece(test_logits, test_accepted)
    after, per_position = cumulative_ece(test_logits, test_accepted, np.asarray(temperatures))
    assert after < before / 2 and max(per_position) < 0.03
    scaled = cumulative_confidence(test_logits, np.asarray(temperatures))
    assert np.all(np.diff(scaled, axis=1) <= 0)
    order = np.argsort(test_logits[:, 0])
    assert np.all(np.diff(scaled[order, 0]) >= 0)


def test_reliability_bins_reproduce_the_ece() -> None:
    rng = np.random.default_rng(2)
    logits, accepted = synthetic_blocks(rng, 3000, 4)
    temperatures = np.asarray([2.0, 3.0, 3.0, 4.0])
    for temps in (None, temperatures):
        pooled, per_position = cumulative_ece(logits, accepted, temps)
        bins = reliability_bins(logits, accepted, temps)
        assert len(bins) == 4
        for k, b in enumerate(bins):
            n = sum(b["count"])
            assert n == len(accepted)
            ece = sum(
                c / n * abs(x - y)
                for c, x, y in zip(b["count"], b["confidence"], b["survival"], strict=True)
                if c
            )
            assert abs(ece - per_position[k]) < 1e-12
            survived = sum(c * y for c, y in zip(b["count"], b["survival"], strict=True) if c)
            assert round(survived) == int((accepted >= k + 1).sum())
        # the pooled ECE from the per-position bins
        total = sum(sum(b["count"]) for b in bins)
        ece = 0.0
        for j in range(10):
            count = sum(b["count"][j] for b in bins)
            if count:
                conf = sum(b["count"][j] * b["confidence"][j] for b in bins if b["count"][j])
                surv = sum(b["count"][j] * b["survival"][j] for b in bins if b["count"][j])
                ece += abs(conf - surv) / total
        assert abs(ece - pooled) < 1e-12


def test_held_out_change_is_shown_negative_where_sts_fixes_overconfidence() -> None:
    """Overconfident head (true logit z, reported 3 z): fitted on one sample, STS lowers the
    ECE of a_k on a second sample at every position, each bootstrap interval below 0."""
    rng = np.random.default_rng(2)
    logits, accepted = synthetic_blocks(rng, 4000, 4)
    temperatures = fit_sts(logits, accepted)
    held_logits, held_accepted = synthetic_blocks(rng, 4000, 4)
    rows = ece_change_by_position(held_logits, held_accepted, temperatures, resamples=200)
    assert [r["position"] for r in rows] == [1, 2, 3, 4]
    for r in rows:
        assert abs(r["change"] - (r["ece_after"] - r["ece_before"])) < 1e-12
        assert r["change_low"] <= r["change_high"] < 0


def test_held_out_change_is_zero_at_unit_temperatures() -> None:
    rng = np.random.default_rng(3)
    logits, accepted = synthetic_blocks(rng, 500, 3)
    rows = ece_change_by_position(logits, accepted, [1.0, 1.0, 1.0], resamples=50)
    assert all(r["change"] == r["change_low"] == r["change_high"] == 0.0 for r in rows)
