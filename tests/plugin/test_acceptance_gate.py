"""``acceptance_gate`` / ``assert_acceptance``: an engine's acceptance-length gate with a
stated false-fail rate, through the package and the ``specproof`` fixture.

The statistical guarantees (false-fail rate <= alpha under sequential dependence, power
against a shift of 0.05) are measured by simulation in ``tests/stats/test_acceptance.py``;
here each call's verdict is checked on counts far from the thresholds (the correct counts sit
at their expectation, the wrong ones dozens of standard deviations away).
"""

from __future__ import annotations

import numpy as np
import pytest

from specproof.testing import acceptance_gate, assert_acceptance

OVERLAP = 0.176
"""An expected acceptance rate (sum min(p, q) of a verifier test's fixed rows)."""


def test_totals_form_passes_the_expected_count_and_fails_a_verifier_accepting_all() -> None:
    good = acceptance_gate(1760, proposed=10_000, expected_rate=OVERLAP)
    assert not good.rejected and good.alpha == 1e-6
    assert good.power > 0.99  # against a shift of 0.05 at n = 10,000, computed exactly
    bad = acceptance_gate(9995, proposed=10_000, expected_rate=OVERLAP)
    assert bad.rejected and bad.direction == "too many"


def test_per_proposal_form_fails_too_few() -> None:
    a = np.full(2000, 0.6)
    assert not acceptance_gate(1200, probabilities=a).rejected
    assert acceptance_gate(600, probabilities=a).direction == "too few"


def test_assert_acceptance_raises_with_the_verdict_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert_acceptance(1760, proposed=10_000, expected_rate=OVERLAP)
    assert "two-sided test at alpha 1e-06" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="FAIL \\(too many\\)"):
        assert_acceptance(9995, proposed=10_000, expected_rate=OVERLAP)


def test_the_fixture_offers_the_gate(specproof) -> None:  # type: ignore[no-untyped-def]
    specproof.assert_acceptance(1760, proposed=10_000, expected_rate=OVERLAP, alpha=1e-3)
    with pytest.raises(AssertionError):
        specproof.assert_acceptance(5000, proposed=10_000, expected_rate=OVERLAP)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "give probabilities, or both proposed and expected_rate"),
        ({"proposed": 10}, "give probabilities, or both"),
        ({"probabilities": [0.5], "proposed": 1}, "not both"),
        ({"proposed": 10, "expected_rate": 0.5, "alpha": 2.0}, "alpha must be in"),
    ],
)
def test_bad_arguments_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        acceptance_gate(1, **kwargs)


def test_accepted_must_be_a_whole_number() -> None:
    with pytest.raises(ValueError, match="accepted must be a whole number"):
        acceptance_gate(1.5, proposed=10, expected_rate=0.5)
