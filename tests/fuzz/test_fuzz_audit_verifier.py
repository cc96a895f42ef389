"""Fuzzing the function audit's hunt and repeated-call rows with a verifier that answers wrong
once, at a call hypothesis picks: the rows never raise and never pass (the classes found by hand:
fewer rows than requests counted as checked, float ids read as ints, None ending the audit)."""

from __future__ import annotations

from typing import Any

import torch
from hypothesis import given
from hypothesis import strategies as st

from specproof.audit.audit_settings import AuditSettings
from specproof.audit.calls import audit_calls
from specproof.audit.cases import calls_problem
from specproof.audit.hunt import hunt_case, hunt_cases
from specproof.audit.settings import ErrorRates, HuntSettings
from specproof.subjects import examples

FLASHINFER = AuditSettings.of("flashinfer", rates=ErrorRates(alpha=1e-6, beta=1e-4, delta=0.5))
PROBLEM = calls_problem(FLASHINFER.signature)


def wrong_outputs() -> st.SearchStrategy[Any]:
    """What one call returns instead of output_token_ids [B, gamma + 1] (``out``)."""
    return st.sampled_from(
        [
            lambda out: None,
            lambda out: out.float() + 0.4,
            lambda out: out.double(),
            lambda out: out.bool(),
            lambda out: out[:-1],
            lambda out: out[:1],
            lambda out: out[0],
            lambda out: out.tolist()[:-1],
            lambda out: "not a tensor",
            lambda out: torch.cat([out, out]),
            lambda out: torch.zeros((0, out.shape[1]), dtype=out.dtype),
        ]
    )


def once_wrong(bad_call: int, wrong: Any) -> Any:
    calls: list[int] = []

    def verifier(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        out = examples.chain_speculative_sampling(*args, **kwargs)
        out = out[0] if isinstance(out, tuple | list) else out
        return wrong(out) if len(calls) == bad_call else out

    return verifier


@given(bad_call=st.integers(1, 3), wrong=wrong_outputs(), case=st.sampled_from(hunt_cases()))
def test_the_hunt_fails_a_verifier_that_answers_wrong_once(
    bad_call: int, wrong: Any, case: Any
) -> None:
    settings = AuditSettings.of("flashinfer", hunt=HuntSettings(96, batch=32))
    row = hunt_case(once_wrong(bad_call, wrong), case, settings)
    assert row.verdict == "FAIL", row
    assert row.n is not None and row.n <= 32 * (bad_call - 1) + 1


@given(bad_call=st.integers(1, 2), wrong=wrong_outputs())
def test_the_calls_rows_fail_a_verifier_that_answers_wrong_once(bad_call: int, wrong: Any) -> None:
    rows = audit_calls(once_wrong(bad_call, wrong), PROBLEM, FLASHINFER)
    assert rows[0].verdict == "FAIL", rows
