"""The release's per-position threshold against the paper's product threshold."""

from __future__ import annotations

from fractions import Fraction

from specproof.reference.schedulers import StaticThreshold

from specproof.e2e.decoding.schedules import PerPositionThreshold


def test_per_position_cut_stops_at_the_first_low_confidence() -> None:
    rows = [[0.7, 0.7, 0.7], [0.9, 0.4, 0.95], [0.3, 0.9, 0.9], [0.5, 0.5, 0.5]]
    half = Fraction(1, 2)
    assert PerPositionThreshold(half)(rows, None) == [3, 1, 0, 3]
    # The product a_k falls below 1/2 after 0.7 * 0.7 = 0.49: the two rules differ.
    assert StaticThreshold(half)(rows, None) == [1, 1, 0, 1]
