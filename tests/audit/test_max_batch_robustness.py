"""``--max-batch`` caps every call of the verifier, the non-finite robustness rows included
(they built batches of 12 or 16 requests of their own). Every row here is exact (alpha = 0)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from specproof.audit import audit_verifier
from specproof.audit.audit_settings import AuditSettings
from specproof.audit.nonfinite import nonfinite_rows
from specproof.audit.settings import CallLimits
from specproof.subjects import examples

CAP = 5
FRAGILE_ABOVE = 8


def counting(fn: Any, size_of: Any, sizes: list[int]) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        sizes.append(size_of(args))
        if sizes[-1] > FRAGILE_ABOVE:  # a verifier that runs out of memory above 8 requests
            raise MemoryError(f"{sizes[-1]} requests")
        return fn(*args, **kwargs)

    return call


SIGNATURES = {
    "vllm": (examples.rejection_sample, lambda args: len(args[1])),
    "vllm-logits": (examples.rejection_sample_logits, lambda args: len(args[1])),
    "flashinfer": (examples.chain_speculative_sampling, lambda args: args[0].shape[0]),
}


@pytest.mark.parametrize("signature", sorted(SIGNATURES))
def test_the_nonfinite_rows_keep_the_cap(signature: str) -> None:
    """Before, a call of 12 or 16 requests reached the verifier whatever --max-batch said, and
    this verifier's robustness rows stopped at an out-of-memory limit."""
    fn, size_of = SIGNATURES[signature]
    sizes: list[int] = []
    settings = AuditSettings.of(signature, limits=CallLimits(max_batch=CAP))
    rows = nonfinite_rows(counting(fn, size_of, sizes), settings)
    assert sizes and max(sizes) <= CAP, sizes
    assert all(r.passed for r in rows), [r.summary for r in rows]


def test_the_audit_passes_its_cap_to_the_robustness_rows() -> None:
    sizes: list[int] = []
    fn = counting(examples.rejection_sample, lambda args: len(args[1]), sizes)
    report = audit_verifier(fn, "vllm", problems=[], calls=False, max_batch=CAP)
    assert report.robustness and all(r.passed for r in report.robustness), report.table()
    assert max(sizes) <= CAP, sizes


def test_a_part_returning_the_wrong_rows_fails_the_row() -> None:
    """Split calls are checked one by one: a part answering with one row too few is a layout
    failure of the robustness row, not a shape error of the harness."""

    def drops_a_row(*args: Any) -> torch.Tensor:
        return torch.zeros((len(args[1]) - 1, 4), dtype=torch.int64)

    rows = nonfinite_rows(drops_a_row, AuditSettings.of("vllm", max_batch=CAP))
    assert all(r.verdict == "FAIL" for r in rows), [r.summary for r in rows]
    assert all("expected [" in r.summary for r in rows), [r.summary for r in rows]


def test_a_drafter_audit_keeps_the_cap_on_the_drafter() -> None:
    """The drafter is the subject of a drafter audit: its calls were the rounds' chunks (up to
    2^16 rows). A correct drafter fails no row: each statistical row false-fails with
    probability <= alpha = 1e-6 (fixed seed)."""
    from specproof.audit.cases import verifier_problems

    small = next(p for p in verifier_problems(0, 64) if p.name == "small-vocab")
    sizes: list[int] = []

    def draft(logits: torch.Tensor, temperature: float) -> Any:
        sizes.append(logits.shape[0])
        return examples.sample_draft(logits, temperature)

    report = audit_verifier(
        examples.rejection_sample,
        "vllm",
        drafter=draft,
        problems=[small],
        delta=0.3,
        calls=False,
        max_batch=64,
    )
    assert sizes and max(sizes) <= 64, max(sizes)
    assert not report.failed, report.table()


def test_a_capped_drafter_answers_as_the_drafter_does() -> None:
    from specproof.audit.run import capped_drafter

    logits = torch.randn(10, 7, generator=torch.Generator().manual_seed(0))
    tokens, probs = capped_drafter(examples.greedy_draft, CallLimits(max_batch=3))(logits, 0.7)
    whole_tokens, whole_probs = examples.greedy_draft(logits, 0.7)
    assert torch.equal(tokens, whole_tokens) and torch.equal(probs, whole_probs)
