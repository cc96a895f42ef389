"""``specproof audit`` against a verifier that never returns from a call: the case fails as
timed out at ``--timeout``, the rows already run are printed and written, the exit status is 1,
and the command ends (the hung call cannot be stopped, so the process exits around it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from specproof.audit.audit_settings import AuditSettings
from specproof.audit.cases import verifier_problems
from specproof.audit.hunt import hunt_case, hunt_cases
from specproof.audit.run import audit_verifier
from specproof.audit.settings import CallLimits, HuntSettings
from specproof.subjects import examples

ROW_FAILED = 1
WALL_LIMIT = 240  # seconds: the child is killed past this, so the test itself cannot hang

HANGING = '''
import threading

from specproof.subjects.examples import chain_speculative_sampling


def verifier(draft_probs, draft_ids, target_probs, *args, **kwargs):
    """Correct on 4-token vocabularies (small-vocab, the first case); hangs on any other."""
    if target_probs.shape[-1] != 4:
        threading.Event().wait()
    return chain_speculative_sampling(draft_probs, draft_ids, target_probs, *args, **kwargs)
'''


@pytest.mark.slow  # a child process: torch's import and the first case take seconds
def test_a_verifier_hanging_inside_a_call_fails_its_case_at_timeout(tmp_path: Path) -> None:
    """It used to never return: --timeout was checked only between calls."""
    (tmp_path / "hanging.py").write_text(HANGING)
    out = tmp_path / "report.json"
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(tmp_path)])}
    argv = ["hanging:verifier", "--signature", "flashinfer", "--quick", "--no-hunt"]
    argv += ["--large-vocab", "8", "--long-vocab", "8", "--timeout", "3", "--json", str(out)]
    result = subprocess.run(
        [sys.executable, "-m", "specproof.commands.cli", "audit", *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=WALL_LIMIT,
    )
    assert result.returncode == ROW_FAILED, result.stderr[-2000:]
    rows = [(r["case"], r["check"], r["verdict"]) for r in json.loads(out.read_text())["results"]]
    assert ("small-vocab", "round", "pass") in rows
    assert ("large-vocab", "timeout", "FAIL") in rows
    assert "large-vocab" in result.stdout and "still running" in result.stdout


def hangs_until(release: threading.Event) -> Any:
    """The flashinfer example, waiting on ``release`` for any vocabulary but 4."""

    def verifier(draft_probs: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if draft_probs.shape[-1] != 4:
            release.wait()
        return examples.chain_speculative_sampling(draft_probs, *args, **kwargs)

    return verifier


def test_a_hung_call_fails_its_case_keeps_the_rows_before_and_stops_the_audit() -> None:
    release = threading.Event()
    problems = verifier_problems(0, 8, 8)[:3]  # small-vocab, large-vocab (V = 8), one more
    start = time.monotonic()
    try:
        report = audit_verifier(
            hangs_until(release), "flashinfer", problems=problems, delta=0.2, timeout=1.0
        )
    finally:
        release.set()
    assert time.monotonic() - start < 60
    rows = [(r.case, r.check, r.verdict) for r in report.results]
    assert ("small-vocab", "round", "pass") in rows
    assert rows[-1] == ("large-vocab", "timeout", "FAIL")
    assert not report.passed
    assert any(f"not run: {problems[2].name}, calls, nonfinite" in n for n in report.notes)


def test_a_hung_call_in_the_hunt_is_a_timeout_row_counting_the_rounds_before() -> None:
    release = threading.Event()
    calls = []

    def verifier(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 3:
            release.wait()
        return examples.chain_speculative_sampling(*args, **kwargs)

    try:
        settings = AuditSettings.of(
            "flashinfer", limits=CallLimits(timeout=1.0), hunt=HuntSettings(10_000, batch=100)
        )
        row = hunt_case(verifier, hunt_cases()[0], settings)
    finally:
        release.set()
    assert (row.check, row.verdict, row.n) == ("timeout", "FAIL", 200)
    assert "still running" in row.summary
