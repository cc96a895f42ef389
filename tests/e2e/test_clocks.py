"""The step clocks' arithmetic, the re-timing of recorded rounds, and Algorithm 1 given each
clock's SPS (values worked by hand in the comments)."""

from __future__ import annotations

import numpy as np
import pytest
from specproof.reference.schedulers import Algorithm1, FixedGamma

from specproof.e2e.decoding.rounds import DecodeResult, RoundLog
from specproof.e2e.evaluation.clocks import (
    MeasuredClock,
    RooflineClock,
    line_from_profile,
    retime,
    round_cost,
    verified_tokens,
)
from specproof.e2e.evaluation.measurements import fit_steps_per_second

ROOFLINE = RooflineClock(requests=4, knee=16, dspark_gamma=7, dspark_share=0.2, eagle_share=0.25)


def test_roofline_is_flat_to_the_knee_then_linear() -> None:
    assert [ROOFLINE.pass_cost(1.0, b) for b in (1, 8, 16, 24, 32)] == [1, 1, 1, 1.5, 2]
    # DSpark: its block pass covers 4 * 8 = 32 positions at 0.2 of the weights: 0.2 * 2 = 0.4.
    assert ROOFLINE.round_seconds("dspark", 8, 0) == pytest.approx(1.4)
    assert ROOFLINE.round_seconds("dspark", 32, 0) == pytest.approx(2.4)
    # EAGLE-3 at gamma 3: three passes over 4 positions at 0.25 each; 20 tokens: 20 / 16.
    assert ROOFLINE.round_seconds("eagle", 20, 3) == pytest.approx(1.25 + 0.75)
    assert ROOFLINE.target_seconds() == 1.0
    assert ROOFLINE.sps(32) == pytest.approx(1 / 2.4)


def test_measured_clock_adds_eagle_drafting_to_dspark_line() -> None:
    clock = MeasuredClock(
        requests=4, intercept=0.010, slope=0.001, target_step=0.004, eagle_extra={2: 0.003}
    )
    assert clock.round_seconds("dspark", 10, 0) == pytest.approx(0.020)
    assert clock.round_seconds("eagle", 10, 2) == pytest.approx(0.023)
    assert clock.sps(10) == pytest.approx(50.0)
    assert clock.target_seconds() == 0.004
    with pytest.raises(ValueError, match="gamma=5"):
        clock.round_seconds("eagle", 10, 5)


def test_line_from_profile_recovers_the_fitted_round_time() -> None:
    rng = np.random.default_rng(0)
    sizes = list(range(4, 33))
    times = [0.012 + 0.0004 * b + rng.normal(0, 1e-4) for b in sizes]
    intercept, slope = line_from_profile(sizes, fit_steps_per_second(sizes, times))
    fitted_slope, fitted_intercept = np.polyfit(sizes, times, 1)
    assert slope == pytest.approx(fitted_slope, rel=1e-9)
    assert intercept == pytest.approx(fitted_intercept, rel=1e-9)


def test_retime_charges_each_round_at_its_verified_tokens() -> None:
    rounds = [
        RoundLog(scheduled=[3, 1], accepted=[3, 0], confidence_logits=None),  # B = 6, full
        RoundLog(scheduled=[2, 2], accepted=[1, 2], confidence_logits=None),  # B = 6, full
        RoundLog(scheduled=[4], accepted=[4], confidence_logits=None),  # B = 5, one left
    ]
    result = DecodeResult(tokens=[[0] * 9, [0] * 9], rounds=rounds, seconds=99.0)
    assert [verified_tokens(r.scheduled) for r in rounds] == [6, 6, 5]
    timed = retime(result, lambda b: 0.5 + 0.25 * b, requests=2, new_tokens=9)
    # 2.0 + 2.0 + 1.75 seconds; full rounds emit (4 + 1) + (2 + 3) = 10 tokens in 4.0 s.
    assert timed.seconds == pytest.approx(5.75)
    assert timed.rate == pytest.approx(18 / 5.75)
    assert (timed.full_tokens, timed.full_seconds) == (10, pytest.approx(4.0))


def test_retime_charges_the_target_one_step_per_new_token() -> None:
    result = DecodeResult(tokens=[[0] * 9, [0] * 9], rounds=[], seconds=99.0)
    timed = retime(result, round_cost(ROOFLINE, None, 0), requests=2, new_tokens=9)
    assert timed.seconds == pytest.approx(9.0) and timed.rate == pytest.approx(2.0)


def test_algorithm1_given_a_flat_clock_verifies_every_draft_and_past_the_knee_fewer() -> None:
    confidences = [[0.9, 0.5, 0.3, 0.2, 0.1, 0.1, 0.1]] * 4
    everything = FixedGamma()(confidences, None)
    flat = RooflineClock(requests=4, knee=1000, dspark_gamma=7, dspark_share=0.2, eagle_share=0.2)
    assert Algorithm1()(confidences, flat.sps) == everything
    # Knee at 4 tokens: every verified token costs 1/4 of a step, so a candidate pays its
    # way only while its survival a_{r,j} beats tau / B at that point of the walk.
    steep = RooflineClock(requests=4, knee=4, dspark_gamma=7, dspark_share=0.2, eagle_share=0.2)
    lengths = Algorithm1()(confidences, steep.sps)
    assert sum(lengths) < sum(everything) and min(lengths) >= 1
