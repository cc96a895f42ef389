"""Exact checks (alpha = 0): impossible outcomes and layout violations fail whatever the
tolerance, named with the offending round; the hunt finds a rare bug and states what a clean
run excludes."""

from __future__ import annotations

import math
from typing import Any

import torch

from specproof.audit import audit_verifier
from specproof.audit.audit_settings import AuditSettings
from specproof.audit.cases import verifier_problems
from specproof.audit.hunt import excluded_rate, hunt_case, hunt_cases, hunt_verifier, rounds_to_find
from specproof.audit.settings import HuntSettings
from specproof.subjects import examples
from specproof.subjects.mutants import make_verifier

PROBLEMS = {p.name: p for p in verifier_problems(0, 64)}


def test_an_impossible_token_fails_at_once_even_with_a_huge_tolerance() -> None:
    """A token with target probability 0, in one round: the statistical rows (at
    tolerance 0.3) cannot see it, the support row does, with its round."""
    calls = {"n": 0}

    def rare_zero_token(*args: Any) -> torch.Tensor:
        out = examples.rejection_sample(*args)
        calls["n"] += 1
        if calls["n"] == 1:
            out[5, 0] = 0  # the zeros case gives token 0 mass 0 at position 1 (prompt state 0)
            out[5, 1:] = -1
        return out

    zeros = PROBLEMS["zeros"]
    assert float(zeros.p64()[0, 0, 0]) == 0.0
    report = audit_verifier(
        rare_zero_token, "vllm", problems=[zeros], tolerance=0.3, delta=0.5, calls=False
    )
    support = next(r for r in report.results if r.check == "support")
    assert support.verdict == "FAIL" and support.alpha == 0 and support.round is not None
    assert "impossible outcome in round" in support.detail
    assert all(r.passed for r in report.results if r.check in ("round", "tokens", "length"))


def test_a_token_outside_the_vocabulary_is_a_layout_failure_with_its_round() -> None:
    def out_of_range(*args: Any) -> torch.Tensor:
        out = examples.rejection_sample(*args)
        out[7, 0] = 10**6
        return out

    report = audit_verifier(out_of_range, "vllm", problems=[PROBLEMS["small-vocab"]], calls=False)
    (row,) = [r for r in report.results if r.check == "layout" and r.case == "small-vocab"]
    assert row.verdict == "FAIL" and row.round == 7 and "vocabulary" in row.detail


def test_the_hunt_catches_a_bf16_uniform_and_passes_the_correct_verifier() -> None:
    """P(bf16(u) == 1.0) is about 2^-9: with p == q that is a rejection, an impossible output."""
    case = next(c for c in hunt_cases() if c.name == "p-equals-q")
    hunt = HuntSettings(10**6, batch=1 << 14)
    caught = hunt_case(make_verifier("uniform-bf16"), case, AuditSettings.of("vllm", hunt=hunt))
    assert caught.verdict == "FAIL" and caught.round is not None and caught.round < 10**6
    hunt = HuntSettings(1 << 16, batch=1 << 14)
    clean = hunt_verifier(make_verifier(None), AuditSettings.of("vllm", hunt=hunt))
    assert clean.passed
    assert all("rate <" in r.detail and "rate <" in r.result() for r in clean.results)


def test_hunt_arithmetic() -> None:
    assert math.isclose(excluded_rate(10**6), -math.log(0.05) / 10**6)
    n = rounds_to_find(2.0**-24)
    assert (1 - 2.0**-24) ** n <= 0.05 < (1 - 2.0**-24) ** (n - 1)


def test_a_case_past_its_deadline_stops_and_names_the_case() -> None:
    import time

    import pytest

    from specproof.audit.errors import CaseTimeout
    from specproof.audit.rounds import sample_rounds, verifier_round

    problem = PROBLEMS["ragged"]
    round_fn = verifier_round(examples.rejection_sample, AuditSettings.of("vllm"))
    with pytest.raises(CaseTimeout, match="ragged: stopped after 64 of 1000 rounds"):
        sample_rounds(problem, round_fn, 1000, 0, chunk=64, deadline=time.monotonic() - 1)
