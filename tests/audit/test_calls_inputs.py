"""The repeated-call rows hand each call its own copy of the inputs: a verifier that writes into
them, as vLLM's sampler does (``apply_sampling_constraints`` divides the logits by the
temperature in place with ``logits.div_``), is no false alarm, and an informational ``inputs``
row says that it writes into its inputs.

alpha = 1e-6 per statistical row, power 1 - 1e-4 against a gap of 0.2 in the identical-row rate
(:func:`specproof.audit.calls.rows_needed`): a correct verifier passes every row with probability
>= 1 - 3e-6 (the seeds are fixed, so the outcome is reproducible)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import torch
from specproof.optimized.call_shapes import VllmRejectionSample, accepts_call_shape

from specproof.audit.audit_settings import AuditSettings
from specproof.audit.calls import audit_calls
from specproof.audit.cases import calls_problem
from specproof.audit.report import INFO, AuditReport
from specproof.audit.settings import ErrorRates
from specproof.subjects import examples

RATES = ErrorRates(alpha=1e-6, beta=1e-4, delta=0.2)


def settings(signature: str) -> AuditSettings:
    return AuditSettings.of(signature, rates=RATES, seed=0)


def divides_in_place(
    draft_token_ids: torch.Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_logits: torch.Tensor,
    bonus_token_ids: torch.Tensor,
    sampling_metadata: Any,
) -> torch.Tensor:
    """A correct vllm-logits verifier that, as vLLM does, divides each random row's logits by
    its temperature in place, then processes them at temperature 1."""
    temperature = torch.as_tensor(sampling_metadata.temperature).reshape(-1).float()
    random = temperature > 0
    per_row = torch.where(random, temperature, torch.ones_like(temperature))
    per_token = torch.repeat_interleave(per_row, torch.tensor(num_draft_tokens))
    target_logits.div_(per_token.unsqueeze(1))
    at_one = SimpleNamespace(
        **{**vars(sampling_metadata), "temperature": torch.where(random, 1.0, temperature)}
    )
    return examples.rejection_sample_logits(
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        cu_num_draft_tokens,
        draft_probs,
        target_logits,
        bonus_token_ids,
        at_one,
    )


def test_the_subject_has_vllms_call_shape() -> None:
    assert accepts_call_shape(divides_in_place, VllmRejectionSample)


def test_the_calls_case_has_temperatures_other_than_one() -> None:
    """Otherwise dividing in place would change nothing, and the test below nothing."""
    problem = calls_problem(settings("vllm-logits").signature)
    assert any(abs(p.temperature - 1) > 0.1 for p in problem.requests)


def test_a_verifier_dividing_its_logits_in_place_is_no_false_alarm() -> None:
    """Before, the second call got the logits the first had divided: its rows followed another
    law, and the repeat or rate rows failed a correct verifier."""
    rows = audit_calls(
        divides_in_place,
        calls_problem(settings("vllm-logits").signature),
        settings("vllm-logits"),
    )
    verdicts = {r.check: r.verdict for r in rows}
    assert verdicts == {"unseeded": "pass", "repeat": "pass", "seeds": "pass", "inputs": INFO}
    inputs = next(r for r in rows if r.check == "inputs")
    assert "target_logits" in inputs.summary and "own copy" in inputs.summary


def test_the_inputs_row_informs_and_never_fails_the_report() -> None:
    rows = audit_calls(
        divides_in_place,
        calls_problem(settings("vllm-logits").signature),
        settings("vllm-logits"),
    )
    report = AuditReport("divides_in_place", "vllm-logits verifier", results=rows)
    assert not report.failed
    assert "writes into its inputs" in report.table()


def test_a_verifier_that_leaves_its_inputs_alone_gets_a_passing_inputs_row() -> None:
    rows = audit_calls(
        examples.rejection_sample_logits,
        calls_problem(settings("vllm-logits").signature),
        settings("vllm-logits"),
    )
    assert all(r.passed for r in rows), [r.summary for r in rows]
    assert [r.summary for r in rows if r.check == "inputs"] == ["no call wrote into its inputs"]


def test_flashinfer_counts_written_by_contract_are_not_reported() -> None:
    """FlashInfer's verifier fills its accepted and emitted count tensors: outputs, not inputs."""
    rows = audit_calls(
        examples.chain_speculative_sampling,
        calls_problem(settings("flashinfer").signature),
        settings("flashinfer"),
    )
    assert all(r.passed for r in rows), [r.summary for r in rows]
    assert [r.summary for r in rows if r.check == "inputs"] == ["no call wrote into its inputs"]
