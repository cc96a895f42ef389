"""Calls the size engines make: no verifier call carries more than ``max_batch`` requests
(default 1024), and a verifier that runs out of memory is reported as a limit of the run
(never a pass, never a finding about its law)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from specproof.audit import audit_verifier
from specproof.audit.audit_settings import AuditSettings
from specproof.audit.cases import verifier_problems
from specproof.audit.errors import out_of_memory
from specproof.audit.hunt import hunt_case, hunt_cases
from specproof.audit.report import LIMIT
from specproof.audit.settings import CallLimits, HuntSettings
from specproof.commands.audit import main
from specproof.subjects import examples

LIMIT_REQUESTS = 1024
SMALL = next(p for p in verifier_problems(0, 64) if p.name == "small-vocab")
REQUESTS = next(p for p in verifier_problems(0, 64) if p.name == "requests")
ZERO_TARGET = next(c for c in hunt_cases() if c.name == "zero-target-draft")


def fragile(*args: Any) -> torch.Tensor:
    """A correct vLLM-signature verifier that, like a pure-PyTorch fallback building a mask of
    tokens x requests, runs out of memory on a call of more than 1024 requests."""
    requests = len(args[1])
    if requests > LIMIT_REQUESTS:
        raise MemoryError(f"a {sum(args[1])} x {requests} mask")
    return examples.rejection_sample(*args)


def fragile_torch(*args: Any) -> torch.Tensor:
    """The same with torch's own CPU allocator error (a real allocation that cannot succeed)."""
    if len(args[1]) > LIMIT_REQUESTS:
        torch.empty(2**50, dtype=torch.uint8)
    return examples.rejection_sample(*args)


def test_the_hunt_calls_engine_sized_batches() -> None:
    """Regression: the hunt sent 2^18 requests in one call, and this verifier's row errored."""
    row = hunt_case(fragile, ZERO_TARGET, AuditSettings.of("vllm", hunt=HuntSettings(1 << 14)))
    assert row.passed and row.n == 1 << 14, row


def test_the_battery_and_the_calls_rows_call_engine_sized_batches() -> None:
    """Regression: the battery sent up to 2^16 requests per call (small-vocab: 1555 rounds at
    delta = 0.2 in one call), the calls rows thousands. A correct verifier: each statistical
    row fails with probability <= alpha = 1e-6 (the
    default; the seed is fixed, so the outcome is reproducible), so the pass asserted here is
    false-failed with probability <= 1e-6 per row."""
    report = audit_verifier(fragile, "vllm", problems=[SMALL, REQUESTS], delta=0.2)
    assert report.passed, report.table()
    assert any(r.case == "calls" for r in report.results)


@pytest.mark.parametrize("fn", [fragile, fragile_torch], ids=["MemoryError", "torch-allocator"])
def test_running_out_of_memory_is_a_limit_not_a_pass(fn: Any) -> None:
    settings = AuditSettings.of("vllm", max_batch=4096, hunt=HuntSettings(1 << 14))
    row = hunt_case(fn, ZERO_TARGET, settings)
    assert row.verdict == LIMIT and not row.passed, row
    assert "4096 requests" in row.summary and "--max-batch" in row.detail, row
    report = audit_verifier(fn, "vllm", problems=[SMALL], delta=0.2, max_batch=4096)
    assert not report.passed
    limits = [r for r in report.results if r.verdict == LIMIT]
    assert limits and all(r.case in ("small-vocab", "calls") for r in limits), report.table()
    assert "harness-side limit" in report.table()


def test_the_option_splits_calls_and_keeps_rows() -> None:
    """The hunt's rows are exact (alpha = 0); the battery's pass is false-failed with
    probability <= 1e-6 per statistical row (alpha, the default; fixed seed)."""
    sizes: list[int] = []

    def counting(*args: Any) -> torch.Tensor:
        sizes.append(len(args[1]))
        return examples.rejection_sample(*args)

    settings = AuditSettings.of("vllm", limits=CallLimits(max_batch=300), hunt=HuntSettings(1000))
    row = hunt_case(counting, ZERO_TARGET, settings)
    assert row.passed and row.n == 1000
    assert max(sizes) == 300 and len(sizes) == 4
    sizes.clear()
    report = audit_verifier(counting, "vllm", problems=[SMALL], delta=0.2, max_batch=100)
    assert report.passed and max(sizes) <= 100, report.table()


def test_out_of_memory_errors_are_recognised() -> None:
    assert out_of_memory(MemoryError())
    assert out_of_memory(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 28 GiB"))
    assert out_of_memory(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried"))
    assert not out_of_memory(RuntimeError("shape mismatch"))
    assert not out_of_memory(ValueError("out of memory"))


def test_the_command_refuses_a_batch_below_one(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_status:
        main(
            [
                "specproof.subjects.examples:rejection_sample",
                "--signature",
                "vllm",
                "--max-batch",
                "0",
            ]
        )
    assert exit_status.value.code == 2
    assert "--max-batch" in capsys.readouterr().err
