"""How much an engine audit runs travels as one value: checked when made, and handing
``audit_engine`` only what the command set."""

from __future__ import annotations

import pytest

from specproof.adapters.run_plan import RunPlan


def test_the_plan_hands_the_audit_only_what_was_set() -> None:
    assert RunPlan().audit_options() == {}
    assert RunPlan(runs=300, binned_cells=0).audit_options() == {"runs": 300, "binned_cells": 0}
    assert RunPlan(delta=0.2).audit_options() == {"delta": 0.2}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"runs": 0}, "runs must be positive"),
        ({"delta": 1.0}, "delta must be in"),
        ({"delta": 0.0}, "delta must be in"),
        ({"binned_cells": 1}, "binned_cells must be 0 or at least 2"),
        ({"binned_cells": -3}, "binned_cells must be 0 or at least 2"),
    ],
)
def test_a_plan_the_audit_cannot_run_is_refused(fields: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RunPlan(**fields)  # type: ignore[arg-type]
