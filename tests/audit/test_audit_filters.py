"""Binding request filters: top-k and top-p in a declared order, and min-p.

Exact checks are hand-computed. Statistical audits run at alpha = 1e-6 per row and delta = 0.2
(power >= 1 - 1e-4 against TV >= 0.2); each failing verifier's exact TV from the audited law is
asserted above 0.2 first (order: 0.250; min-p skipped: 0.088, caught by the exact support row,
alpha = 0, which needs no TV)."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction as F
from typing import Any

import pytest
import torch
from specproof.reference.filters import filtered

from specproof.audit import audit_verifier
from specproof.audit.filters import (
    MIN_P_REQUEST,
    ORDER_REQUEST,
    FilterProblem,
    filter_problems,
    order_tv,
    variant_tv,
)
from specproof.audit.report import AuditReport
from specproof.audit.requests import apply_request, vllm_metadata
from specproof.audit.signatures import Signature
from specproof.commands.audit import main
from specproof.subjects import examples
from specproof.subjects.bugs import min_p_skipped

DELTA = 0.2
SEQUENTIAL = {p.name: p for p in filter_problems(0, "sequential")}
JOINT = {p.name: p for p in filter_problems(0, "joint")}


def test_the_two_orders_by_hand() -> None:
    """(0.36, 0.28, 0.14, 0.10, 0.07, 0.05), top-k 4 then top-p 0.7: the top-4 hold 0.88;
    renormalised, the first two hold 0.64 / 0.88 = 0.727 >= 0.7, so sequential keeps 2 tokens;
    on the full law 0.64 < 0.7, so joint keeps 3. min-p 0.2 cuts below 0.072."""
    probs = [F(36, 100), F(28, 100), F(14, 100), F(10, 100), F(7, 100), F(5, 100)]
    sequential = filtered(probs, top_k=4, top_p=F(7, 10), order="sequential")
    joint = filtered(probs, top_k=4, top_p=F(7, 10), order="joint")
    assert sequential == (F(9, 16), F(7, 16), 0, 0, 0, 0)
    assert joint == (F(36, 78), F(28, 78), F(14, 78), 0, 0, 0)
    assert filtered(probs, min_p=F(1, 5)) == (*(v / F(88, 100) for v in probs[:4]), 0, 0)
    assert filtered(probs, top_k=2, min_p=F(1, 5)) == filtered(probs, top_k=2)
    with pytest.raises(ValueError, match="sum to exactly 1"):
        filtered(probs[:5])
    with pytest.raises(ValueError, match="filter order"):
        filtered(probs, order="reverse")  # type: ignore[arg-type]


@pytest.mark.parametrize("order", ["sequential", "joint"])
def test_float_filters_match_the_reference_on_the_cases_rows(order: str) -> None:
    """What a verifier computes from the float32 logits it is sent (softmax at T, filters in
    float64) keeps exactly the tokens the exact rows keep, with masses within 1e-6."""
    cases = SEQUENTIAL if order == "sequential" else JOINT
    for problem in cases.values():
        params = problem.requests[0]
        raw = torch.from_numpy(problem.raw.reshape(-1, problem.vocab)).float()
        logits = (torch.log(raw.double()) * params.temperature).float()
        ours = apply_request(
            logits, params.temperature, params.top_k, params.top_p, params.min_p, order
        )
        exact = problem.target32.reshape(-1, problem.vocab).double()
        assert bool(((ours > 0) == (exact > 0)).all()), problem.name
        assert float((ours - exact).abs().max()) < 1e-6


def test_the_filters_bind_on_tokens_with_mass() -> None:
    """filters-order: top-k removes two tokens with raw mass >= 0.03, and the orders keep
    different tokens in every row; filters-min-p: min-p removes a token top-k keeps."""
    order, min_p = SEQUENTIAL["filters-order"], SEQUENTIAL["filters-min-p"]
    raw = order.raw.reshape(-1, 6)
    assert (raw > 0.03).all()
    seq = order.target32.reshape(-1, 6) > 0
    joint = JOINT["filters-order"].target32.reshape(-1, 6) > 0
    assert (seq.sum(1) == 2).all() and (joint.sum(1) == 3).all()
    kept_by_top_k = torch.from_numpy(min_p.raw.reshape(-1, 6)).argsort(1, descending=True)[:, :5]
    processed = min_p.target32.reshape(-1, 6)
    assert ((processed.gather(1, kept_by_top_k) == 0).sum(1) == 1).all()
    assert order_tv(order) > DELTA
    assert variant_tv(min_p, replace(MIN_P_REQUEST, min_p=None)) > 0.05


def test_metadata_carries_min_p_as_vllm_does() -> None:
    plain = vllm_metadata(2)
    assert plain.min_p is None
    mixed = vllm_metadata(2, params=[MIN_P_REQUEST, ORDER_REQUEST])
    assert mixed.min_p.tolist() == pytest.approx([0.2, 0.0])
    assert mixed.top_k.tolist() == [5, 4]


def _audit(fn: Any, signature: Signature, problems: list[FilterProblem]) -> AuditReport:
    return audit_verifier(fn, signature, problems=problems, delta=DELTA, calls=False)


@pytest.mark.parametrize(
    ("order", "verifier", "passes"),
    [
        ("sequential", examples.rejection_sample_logits, True),
        ("sequential", examples.rejection_sample_logits_joint, False),
        ("joint", examples.rejection_sample_logits_joint, True),
        ("joint", examples.rejection_sample_logits, False),
    ],
    ids=["seq-seq", "seq-joint", "joint-joint", "joint-seq"],
)
def test_a_verifier_passes_in_the_declared_order_only(
    order: str, verifier: Any, passes: bool
) -> None:
    problem = (SEQUENTIAL if order == "sequential" else JOINT)["filters-order"]
    report = _audit(verifier, "vllm-logits", [problem])
    assert report.passed is passes, report.table()
    if not passes:
        failed = {r.check for r in report.results if not r.passed}
        assert "round" in failed, report.table()


def test_skipping_min_p_fails_the_support_row() -> None:
    problem = SEQUENTIAL["filters-min-p"]
    assert _audit(examples.rejection_sample_logits, "vllm-logits", [problem]).passed
    report = _audit(min_p_skipped, "vllm-logits", [problem])
    failed = {r.check for r in report.results if not r.passed}
    assert "support" in failed, report.table()


def test_the_probability_signature_gets_processed_rows_and_min_p_metadata() -> None:
    report = _audit(examples.rejection_sample, "vllm", list(SEQUENTIAL.values()))
    assert report.passed, report.table()
    assert {r.case for r in report.results} == set(SEQUENTIAL)


def test_an_hf_verifier_without_the_filter_keywords_is_not_audited_on_them() -> None:
    report = _audit(examples.biased_speculative_sampling, "hf", list(SEQUENTIAL.values()))
    assert not report.results and "filters-order, filters-min-p" in report.notes[0]


@pytest.mark.slow
def test_hf_verifiers_with_the_filter_keywords() -> None:
    """The hf signature is called once per round (batch 1, about a minute here): the correct
    verifier passes both cases, the joint one fails the order case, the one that skips min-p
    fails the min-p case's support row."""
    problems = list(SEQUENTIAL.values())
    report = _audit(examples.speculative_sampling, "hf", problems)
    assert report.passed, report.table()
    joint = _audit(examples.speculative_sampling_joint, "hf", problems[:1])
    assert "round" in {r.check for r in joint.results if not r.passed}, joint.table()
    skipped = _audit(examples.speculative_sampling_min_p_skipped, "hf", problems[1:])
    assert "support" in {r.check for r in skipped.results if not r.passed}, skipped.table()


def test_cli_filter_order_is_checked(capsys: pytest.CaptureFixture[str]) -> None:
    target = "specproof.subjects.examples:rejection_sample_logits"
    with pytest.raises(SystemExit) as raised:
        main([target, "--signature", "vllm-logits", "--filter-order", "reverse"])
    assert raised.value.code == 2
    assert "--filter-order" in capsys.readouterr().err
