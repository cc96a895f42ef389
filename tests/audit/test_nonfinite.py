"""The robustness rows for non-finite input (exact, alpha = 0; never a losslessness verdict):
the two public mutants fail them, a refusing verifier passes them, specproof's own verifiers
pass them, and the report keeps them apart from the law rows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from specproof.optimized import compat

from specproof.audit import audit_verifier
from specproof.audit.audit_settings import AuditSettings
from specproof.audit.cases import verifier_problems
from specproof.audit.nonfinite import VOCAB, nonfinite_cases, nonfinite_rows
from specproof.subjects import bugs, examples


def _by_check(rows: list[Any]) -> dict[str, Any]:
    return {r.check: r for r in rows}


def test_all_nan_target_row_emitting_vocab_size_fails() -> None:
    rows = _by_check(nonfinite_rows(bugs.nan_target_emits_vocab_size, AuditSettings.of("vllm")))
    row = rows["target-all-nan"]
    assert row.verdict == "FAIL", row
    assert "outside the vocabulary" in row.summary, row.summary
    assert f"emitted [{VOCAB}]" in row.summary or f", {VOCAB}]" in row.summary, row.summary


def test_all_nan_draft_row_recovering_the_rejected_draft_fails() -> None:
    rows = _by_check(nonfinite_rows(bugs.nan_draft_recovers_rejected, AuditSettings.of("vllm")))
    row = rows["draft-all-nan"]
    assert row.verdict == "FAIL", row
    assert "just rejected" in row.summary, row.summary


def test_every_case_is_one_exact_row() -> None:
    rows = nonfinite_rows(examples.rejection_sample, AuditSettings.of("vllm"))
    assert [r.check for r in rows] == [c.check for c in nonfinite_cases()]
    assert all(r.alpha == 0 and r.case == "nonfinite" for r in rows)


def test_a_verifier_that_refuses_passes() -> None:
    def refuses(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("non-finite probabilities")

    for signature in ("flashinfer", "vllm", "vllm-logits", "hf"):
        rows = nonfinite_rows(refuses, AuditSettings.of(signature))
        assert all(r.passed and r.summary.startswith("refused: ValueError") for r in rows), rows


def test_a_verifier_emitting_padding_everywhere_fails() -> None:
    """A row with no token is not a refusal: the layout rule still holds."""

    def empty(draft_probs: torch.Tensor, tokens: torch.Tensor, *rest: Any, **kw: Any) -> Any:
        return torch.full((tokens.shape[0], tokens.shape[1] + 1), -1, dtype=torch.int32)

    rows = nonfinite_rows(empty, AuditSettings.of("flashinfer"))
    assert all(not r.passed and "no token" in r.summary for r in rows), rows


SUBJECTS: list[tuple[str, Callable[..., Any], str]] = [
    ("examples flashinfer", examples.chain_speculative_sampling, "flashinfer"),
    ("examples vllm", examples.rejection_sample, "vllm"),
    ("examples vllm-logits", examples.rejection_sample_logits, "vllm-logits"),
    ("examples hf", examples.speculative_sampling, "hf"),
    ("optimized flashinfer", compat.chain_speculative_sampling, "flashinfer"),
    ("optimized vllm", compat.rejection_sample, "vllm"),
]


@pytest.mark.parametrize(
    ("fn", "signature"), [s[1:] for s in SUBJECTS], ids=[s[0] for s in SUBJECTS]
)
def test_specproof_verifiers_pass(fn: Callable[..., Any], signature: Any) -> None:
    """Regression: before they refused non-finite rows, the example verifiers drew the token
    after a NaN rejection as the argmax of an all-NaN residual (token 0), which is the rejected
    draft whenever that draft was 0."""
    for seed in range(3):
        rows = nonfinite_rows(fn, AuditSettings.of(signature, seed=seed))
        assert all(r.passed for r in rows), [(r.check, r.summary) for r in rows]


def test_robustness_is_reported_apart_from_the_law_rows() -> None:
    problem = next(p for p in verifier_problems(0, 64) if p.name == "small-vocab")
    report = audit_verifier(
        bugs.nan_target_emits_vocab_size,
        "vllm",
        problems=[problem],
        calls=False,
        delta=0.2,
    )
    assert report.results and all(r.passed for r in report.results), report.table()
    assert any(not r.passed for r in report.robustness)
    assert not report.passed
    table = report.table()
    assert "robustness" in table and "not a losslessness verdict" in table
    assert "law rows: pass" in table
    assert {r["check"] for r in report.as_dict()["robustness"]} >= {"target-all-nan"}


def test_a_refusing_verifier_is_not_called_lossy() -> None:
    problem = next(p for p in verifier_problems(0, 64) if p.name == "small-vocab")
    report = audit_verifier(
        examples.rejection_sample, "vllm", problems=[problem], calls=False, delta=0.2
    )
    assert report.passed, report.table()
    assert all(r.summary.startswith("refused") for r in report.robustness)
