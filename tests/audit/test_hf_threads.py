"""The hf signature's per-row calls run with one torch intra-op thread (a batch-1 call's ops are
a few rows; a second thread only adds its hand-off), and the caller's setting is restored."""

from __future__ import annotations

from typing import Any

import torch

from specproof.audit.audit_settings import AuditSettings
from specproof.audit.cases import verifier_problems
from specproof.audit.drafting import draft_rounds
from specproof.audit.hunt import hunt_case, hunt_cases
from specproof.audit.settings import HuntSettings
from specproof.audit.signatures import call_hf
from specproof.subjects import examples


def recording(seen: list[int]) -> Any:
    def verifier(*args: Any, **kwargs: Any) -> torch.Tensor:
        seen.append(torch.get_num_threads())
        return examples.speculative_sampling(*args, **kwargs)

    return verifier


def test_call_hf_runs_rows_on_one_thread_and_restores_the_setting() -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        problem = verifier_problems(0)[0]
        generator = torch.Generator().manual_seed(0)
        seen: list[int] = []
        call_hf(recording(seen), draft_rounds(problem, 20, generator), problem, generator)
        assert seen == [1] * 20
        assert torch.get_num_threads() == 2
        seen.clear()
        settings = AuditSettings.of("hf", timeout=60.0, hunt=HuntSettings(64))
        row = hunt_case(recording(seen), hunt_cases()[0], settings)
        assert row.verdict == "pass" and seen == [1] * 64
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
