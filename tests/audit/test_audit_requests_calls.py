"""Request parameters, repeated calls and drafters at real settings.

Exact checks are hand-computed; statistical ones state alpha and power (delta) in place."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from specproof.audit import audit_verifier
from specproof.audit.audit_settings import AuditSettings
from specproof.audit.calls import audit_calls, collision_probability, rows_needed
from specproof.audit.cases import calls_problem, verifier_problems
from specproof.audit.drafting import Drafts
from specproof.audit.hunt import excluded_rate, hunt_case, hunt_cases
from specproof.audit.requests import (
    RequestParams,
    apply_request,
    check_margins,
    raw_logits,
    request_kinds,
)
from specproof.audit.settings import ErrorRates, HuntSettings
from specproof.commands.audit import main
from specproof.subjects import examples

PROBLEMS = {p.name: p for p in verifier_problems(0, 64)}


def test_top_p_keeps_the_smallest_nucleus_holding_p() -> None:
    """probs (0.5, 0.3, 0.15, 0.05): top-p 0.79 keeps {0, 1} (0.8 >= 0.79), top-p 0.81 keeps
    {0, 1, 2}; top-k 1 keeps the argmax; temperature 1/2 squares and renormalises."""
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]], dtype=torch.float64))
    kept = apply_request(logits, 1.0, None, 0.79)[0]
    assert torch.allclose(kept, torch.tensor([0.625, 0.375, 0, 0], dtype=torch.float64))
    assert int((apply_request(logits, 1.0, None, 0.81)[0] > 0).sum()) == 3
    assert apply_request(logits, 1.0, 1, None)[0].tolist() == [1.0, 0.0, 0.0, 0.0]
    squared = torch.tensor([0.25, 0.09, 0.0225, 0.0025], dtype=torch.float64)
    assert torch.allclose(apply_request(logits, 0.5, None, None)[0], squared / squared.sum())


def test_raw_logits_process_into_the_cases_rows_for_every_request() -> None:
    """The request case's raw logits, processed with each request's temperature and filters,
    give its rows back (float32 rounding aside); with no filter the zeros stay exact."""
    problem = PROBLEMS["requests"]
    rows = problem.target32.reshape(-1, problem.vocab)
    for params in problem.requests:
        n = rows.shape[0]
        logits = raw_logits(
            rows, torch.full((n,), params.temperature), torch.full((n,), params.dropped_mass())
        )
        processed = apply_request(logits, params.temperature, params.top_k, params.top_p)
        assert bool(((processed > 0) == (rows > 0)).all()), params
        assert float((processed - rows.double()).abs().max()) < 1e-5, params
        if params.filters:  # the filters remove real mass: without them the zeros get some
            unfiltered = apply_request(logits, params.temperature, None, None)
            assert float(unfiltered[rows == 0].min()) > 0.01


def test_rows_the_filters_would_cut_differently_are_refused() -> None:
    rows = torch.tensor([[0.5, 0.46, 0.04, 0.0, 0.0]])  # 0.04 would fall in the top-p tail
    with pytest.raises(ValueError, match="top_p"):
        check_margins(rows, RequestParams(1.0, top_p=0.9))
    with pytest.raises(ValueError, match="outrank"):
        check_margins(torch.tensor([[0.5, 0.49, 0.01, 0.0]]), RequestParams(1.0, top_k=3))
    with pytest.raises(ValueError, match="top_k"):
        check_margins(rows, RequestParams(1.0, top_k=2))
    check_margins(torch.tensor([[0.4, 0.3, 0.3, 0.0]]), request_kinds(3)[2])


def _one_row(p: list[list[float]], q: list[list[float]], token: int) -> Drafts:
    return Drafts(
        torch.tensor([[token]]),
        torch.tensor([q], dtype=torch.float32),
        torch.tensor([p], dtype=torch.float32),
        torch.tensor([1]),
        torch.tensor([False]),
    )


def test_collision_probability_by_hand() -> None:
    """p = (1/2, 1/2), q = (0.8, 0.2), draft 0: accepted w.p. 0.625, else token 1 (residual
    (0, 0.3)). Bonus given: 0.375^2 + 0.625^2; bonus drawn from (1/2, 1/2): 0.375^2 +
    0.625^2 / 2."""
    drafts = _one_row([[0.5, 0.5], [0.5, 0.5]], [[0.8, 0.2]], 0)
    assert math.isclose(float(collision_probability(drafts, True)[0]), 0.53125, rel_tol=1e-6)
    assert math.isclose(float(collision_probability(drafts, False)[0]), 0.3359375, rel_tol=1e-6)


def test_rows_needed_gives_the_stated_power() -> None:
    n = rows_needed(ErrorRates(alpha=1e-6, beta=1e-4, delta=0.05))
    bound = math.sqrt(math.log(2 / 1e-6) / (2 * n))
    assert math.exp(-2 * n * (0.05 - bound) ** 2) <= 1e-4
    assert math.exp(-2 * (n - 1) * (0.05 - math.sqrt(math.log(2e6) / (2 * (n - 1)))) ** 2) > 1e-4


def _without_generators(*args: Any) -> torch.Tensor:
    *rest, metadata = args
    metadata.generators = {}
    return examples.rejection_sample(*rest, metadata)


def test_the_calls_rows() -> None:
    """alpha = 1e-6 per row, power 1 - 1e-4 against a gap of 0.2 in the identical-row rate:
    the correct verifier passes; one that restarts its stream fails `unseeded` (identical rate
    1 against about 0.6); one that ignores per-request generators fails `repeat` (exact)."""
    from specproof.subjects.bugs import identical_streams

    rates = ErrorRates(alpha=1e-6, beta=1e-4, delta=0.2)
    vllm = AuditSettings.of("vllm", rates=rates, seed=0)
    problem = calls_problem(vllm.signature)
    good = audit_calls(examples.rejection_sample, problem, vllm)
    assert all(r.passed for r in good)
    assert {r.check for r in good} == {"unseeded", "repeat", "seeds", "inputs"}
    restarts = audit_calls(identical_streams, problem, vllm)
    assert {r.check for r in restarts if not r.passed} == {"unseeded"}
    ignores = audit_calls(_without_generators, problem, vllm)
    assert [r.check for r in ignores if not r.passed] == ["repeat"]
    flashinfer = AuditSettings.of("flashinfer", rates=rates, seed=0)
    fi = audit_calls(
        examples.chain_speculative_sampling, calls_problem(flashinfer.signature), flashinfer
    )
    assert all(r.passed for r in fi) and "repeat" in {r.check for r in fi}


def test_a_verifier_reading_only_todays_greedy_marker_passes_and_the_old_marker_fails_it() -> None:
    """A current-vLLM-style verifier (greedy iff temperature == 0) has no false alarm on the
    mixed case by default; sent the older marker -1 it verifies greedy rows randomly."""

    def todays_marker(*args: Any) -> torch.Tensor:
        *rest, metadata = args
        metadata.temperature = torch.where(metadata.temperature == 0, -1.0, 1.0)  # greedy iff 0
        return examples.rejection_sample(*rest, metadata)

    mixed = [PROBLEMS["mixed"]]
    assert audit_verifier(todays_marker, "vllm", problems=mixed, delta=0.2, calls=False).passed
    old = audit_verifier(todays_marker, "vllm", problems=mixed, delta=0.2, calls=False, marker=-1.0)
    assert not old.passed


def test_the_hunt_on_a_time_budget_states_what_it_excludes() -> None:
    case = next(c for c in hunt_cases() if c.name == "p-equals-q")
    assert case.draft.shape[0] >= 3
    hunt = HuntSettings(2**40, budget=0.5, batch=1 << 12)
    row = hunt_case(examples.rejection_sample, case, AuditSettings.of("vllm", hunt=hunt))
    assert row.passed and row.n is not None and 0 < row.n < 2**40
    assert f"rate < {excluded_rate(row.n):.3g}" in row.detail


def test_hunt_options_are_checked(capsys: pytest.CaptureFixture[str]) -> None:
    target = "specproof.subjects.examples:rejection_sample"
    assert main([target, "--signature", "vllm", "--hunt", "10", "--no-hunt"]) == 2
    assert "exclude each other" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([target, "--signature", "vllm", "--greedy-marker", "1"])


def test_drafter_fidelity_rows_pass_a_faithful_drafter_at_t07() -> None:
    """alpha = 1e-6 per row, power 1 - 1e-4 against TV >= 0.025 (the bf16 class has exact TV
    0.045 and 0.027 on these rows at T = 0.7; its failure is test_bug_classes')."""
    from specproof.audit.drafters import (
        DEFAULT_FIDELITY_DELTA,
        bf16_tv,
        fidelity_rates,
        fidelity_rows,
    )

    assert min(bf16_tv(0.7)) > DEFAULT_FIDELITY_DELTA
    rates = fidelity_rates(ErrorRates(alpha=1e-6, beta=1e-4))
    rows = fidelity_rows(examples.sample_draft, rates=rates, temperatures=(0.7,))
    assert len(rows) == 2 and all(r.passed and r.delta == DEFAULT_FIDELITY_DELTA for r in rows)
