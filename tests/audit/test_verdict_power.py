"""The verdict says what was shown: a run whose rows fall short of the power the report states
as its goal (too few runs or rounds, a case skipped, a row stopped at a limit of the run) is
INCONCLUSIVE with exit status 4, never PASS, and the verdict line gives the power reached; a
failed row stays a FAIL (exit 1) at any power.

Statistical facts: the correct verifier's rows each false-fail with probability <= alpha = 1e-6
(fixed seeds, so the outcome is reproducible); the rows asserted inconclusive have power 0
against TV >= delta at their n, computed by :func:`specproof.stats.worst_case_power` and read
back from the rows. Everything else here is exact."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest
import torch

from specproof.audit import audit_verifier
from specproof.audit.audit_settings import AuditSettings
from specproof.audit.cases import verifier_problems
from specproof.audit.filters import FilterProblem
from specproof.audit.report import AuditReport, exact_row, limit_row, publish
from specproof.audit.rounds import verifier_round
from specproof.audit.run import audit_problem
from specproof.audit.settings import ErrorRates
from specproof.commands.audit_engine import main as engine_main
from specproof.commands.command_rules import (
    EXIT_STATUS_HELP,
    INCONCLUSIVE,
    INTERNAL_ERROR,
    PASSED,
    ROW_FAILED,
    USAGE_ERROR,
)
from specproof.subjects import examples

SUBJECT = """
import numpy as np
import torch

TABLE = torch.tensor([[0.5, 0.3, 0.2, 0.0], [0.1, 0.6, 0.2, 0.1],
                      [0.25, 0.25, 0.25, 0.25], [0.4, 0.0, 0.3, 0.3]])

def target_probs(sequences):
    return TABLE[sequences]

def generate(prompt, num_new_tokens, seed):
    rng = np.random.default_rng(seed)
    out, last = [], prompt[-1]
    for _ in range(num_new_tokens):
        row = TABLE[last].double().numpy()
        last = int(rng.choice(4, p=row / row.sum()))
        out.append(last)
    return out

def ignores_seed(prompt, num_new_tokens, seed):
    return generate(prompt, num_new_tokens, 0)

def impossible(prompt, num_new_tokens, seed):
    return [0, 3, 0, 0][:num_new_tokens]  # token 3 after 0 has target mass 0
"""

SMALL = next(p for p in verifier_problems(0, 64) if p.name == "small-vocab")


@pytest.fixture
def subject(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    (tmp_path / "verdict_subject.py").write_text(SUBJECT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module("verdict_subject")


def engine_command(generate: str, *extra: str) -> list[str]:
    return [
        "--generate",
        f"verdict_subject:{generate}",
        "--target-probs",
        "verdict_subject:target_probs",
        "--quiet",
        *extra,
    ]


def test_the_exit_rule_has_a_status_of_its_own_for_inconclusive() -> None:
    statuses = [PASSED, ROW_FAILED, USAGE_ERROR, INTERNAL_ERROR, INCONCLUSIVE]
    assert INCONCLUSIVE == 4 and len(set(statuses)) == len(statuses)
    assert "4 inconclusive" in EXIT_STATUS_HELP


def test_an_engine_ignoring_its_seed_at_three_runs_is_inconclusive_not_a_pass(
    subject: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression: three identical runs passed every row "with power 0.0000 at TV 0.1", and
    the verdict was PASS, exit 0."""
    out = tmp_path / "report.json"
    code = engine_main(engine_command("ignores_seed", "--runs", "3", "--json", str(out)))
    printed = capsys.readouterr().out
    assert code == INCONCLUSIVE, printed
    verdict = printed.strip().splitlines()[-2]  # the last line says where the JSON went
    assert "INCONCLUSIVE, power reached 0.0000 against TV >= 0.1 (goal 0.9999)" in verdict
    report = json.loads(out.read_text())
    assert report["verdict"] == "INCONCLUSIVE" and report["passed"] is False
    assert report["power"] == 0.0 and report["shortfalls"]
    statistical = [r for r in report["results"] if r["alpha"] > 0]
    assert statistical and all(r["power"] < 1 - r["beta"] for r in statistical)


def test_a_failed_row_stays_a_failure_at_any_power(
    subject: object, capsys: pytest.CaptureFixture[str]
) -> None:
    """An impossible token is evidence (the support row is exact), however few the runs."""
    code = engine_main(engine_command("impossible", "--runs", "3"))
    printed = capsys.readouterr().out
    assert code == ROW_FAILED, printed
    assert printed.strip().splitlines()[-1].endswith(")") and ": FAIL (" in printed


def test_a_correct_verifier_at_the_stated_n_passes_with_the_power_on_the_verdict_line() -> None:
    """The n each row needs (``rounds_needed``) reaches the goal: no false INCONCLUSIVE."""
    report = audit_verifier(
        examples.rejection_sample,
        "vllm",
        problems=[SMALL],
        delta=0.2,
        calls=False,
        robustness=False,
    )
    assert report.verdict == "PASS", report.table()
    statistical = [r for r in report.results if not r.exact]
    assert statistical and all(r.power is not None and r.power >= 1 - 1e-4 for r in statistical)
    assert "PASS, power reached 0.99" in report.table().splitlines()[-1]


def test_too_few_rounds_are_inconclusive() -> None:
    rows = audit_problem(
        SMALL,
        verifier_round(examples.rejection_sample, AuditSettings.of("vllm")),
        rates=ErrorRates(alpha=1e-6, beta=1e-4, delta=0.2, tolerance=1e-4),
        seed=0,
        rounds=50,
    )
    report = AuditReport("rejection_sample", "vllm verifier", results=rows)
    assert not report.failed and report.verdict == "INCONCLUSIVE", report.table()
    assert "rows below their goal power" in report.table()


def test_a_row_stopped_at_a_limit_is_inconclusive_exit_4(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Regression: a limit row (the verifier ran out of memory) made the verdict FAIL, exit 1,
    a finding the rows never showed."""
    report = AuditReport(
        "subject",
        "vllm verifier",
        results=[
            exact_row("case", "layout", 10, "pass", "every row well formed"),
            limit_row("case", "runs", 10, 1024, MemoryError("mask")),
        ],
    )
    assert publish("specproof audit", report, None) == INCONCLUSIVE
    assert "INCONCLUSIVE" in capsys.readouterr().out


def _plain_hf(
    draft_tokens: torch.Tensor,
    draft_logits: torch.Tensor,
    target_logits: torch.Tensor,
    temperature: float,
) -> Any:
    """An hf verifier without the filter keywords: the binding filter cases cannot reach it."""
    return examples.speculative_sampling(draft_tokens, draft_logits, target_logits, temperature)


def test_a_case_the_verifier_cannot_receive_makes_the_audit_inconclusive() -> None:
    """Regression: the skipped filter case was a note under a PASS."""
    binding = next(p for p in verifier_problems(0, 64) if isinstance(p, FilterProblem))
    report = audit_verifier(
        _plain_hf, "hf", problems=[SMALL, binding], delta=0.3, calls=False, robustness=False
    )
    assert not report.failed and report.verdict == "INCONCLUSIVE", report.table()
    assert report.skipped == [binding.name]
    assert f"not audited: {binding.name}" in report.table()
