"""specproof.audit: passes the correct torch verifiers and the causal schedulers, fails the biased
verifiers and the lookahead scheduler; the command's exit status and JSON.

Statistical rows use alpha = 1e-6 per row and n for power 1 - 1e-4 against TV >= 0.2; the
audit of a correct verifier therefore fails with probability <= (rows) x 1e-6 over seeds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from specproof.reference import Algorithm1, GlobalSearch, StaleCapacity, TokenGated

from specproof.audit import audit, audit_scheduler, audit_verifier, load_callable
from specproof.audit.cases import verifier_problems
from specproof.commands.audit import main
from specproof.subjects import examples

ALPHA = 1e-6
BETA = 1e-4
DELTA = 0.2
PROBLEMS = verifier_problems(seed=0, large_vocab=256)
OPTIONS = {"alpha": ALPHA, "beta": BETA, "delta": DELTA, "problems": PROBLEMS}
HF_PROBLEMS = [p for p in PROBLEMS if p.name in ("small-vocab", "ragged", "p-equals-q")]
"""The hf signature is called once per round (batch 1): three cases keep it short."""


def options_for(signature: str) -> dict[str, object]:
    return {**OPTIONS, "problems": HF_PROBLEMS} if signature == "hf" else OPTIONS


@pytest.mark.parametrize(
    ("fn", "signature"),
    [
        (examples.chain_speculative_sampling, "flashinfer"),
        (examples.rejection_sample, "vllm"),
        (examples.speculative_sampling, "hf"),
    ],
)
def test_correct_verifiers_pass(fn: object, signature: str) -> None:
    report = audit_verifier(fn, signature, **options_for(signature))  # type: ignore[arg-type]
    assert report.passed, report.table()
    statistical = [r for r in report.results if r.check in ("round", "tokens", "length")]
    assert statistical and all(r.alpha == ALPHA and r.beta == BETA for r in statistical)
    assert all(r.alpha == 0 for r in report.results if r.check in ("layout", "support"))
    names = {r.case for r in report.results}
    if signature != "hf":
        assert {"small-vocab", "large-vocab", "one-hot-draft", "p-equals-q", "zeros"} <= names
    assert "ragged" in names
    assert ({"greedy", "mixed"} <= names) == (signature == "vllm")


@pytest.mark.parametrize(
    ("fn", "signature"),
    [
        (examples.biased_chain_speculative_sampling, "flashinfer"),
        (examples.biased_rejection_sample, "vllm"),
        (examples.biased_speculative_sampling, "hf"),
    ],
)
def test_biased_verifiers_fail(fn: object, signature: str) -> None:
    """The residual drawn from p: on the small-vocab case its exact round TV is 0.33 (the
    residual-from-p row of the mutation table), above delta = 0.2, so power >= 1 - 1e-4."""
    report = audit_verifier(fn, signature, **options_for(signature))  # type: ignore[arg-type]
    assert not report.passed, report.table()
    failed = {r.case for r in report.results if not r.passed}
    assert "small-vocab" in failed, report.table()


def test_structural_breaks_are_reported() -> None:
    def pads_in_the_middle(*args: object, **kwargs: object) -> object:
        out, accepted, emitted = examples.chain_speculative_sampling(*args, **kwargs)  # type: ignore[arg-type]
        out[:, 0] = -1
        return out, accepted, emitted

    report = audit_verifier(pads_in_the_middle, "flashinfer", **OPTIONS)
    assert not report.passed
    assert any(r.check == "layout" and not r.passed for r in report.results)


def test_schedulers_exact_verdicts() -> None:
    assert audit_scheduler(Algorithm1()).passed
    assert audit_scheduler(StaleCapacity()).passed
    for lossy in (GlobalSearch(), TokenGated("1/2")):
        report = audit_scheduler(lossy)  # type: ignore[arg-type]
        assert not report.passed
        assert any(r.case == "previous-token" and r.tv_estimate > 0 for r in report.results)


def test_a_user_callable_scheduler_with_the_public_signature() -> None:
    def verify_everything(confidences: list[list[object]], sps: object) -> list[int]:
        return [len(row) for row in confidences]

    assert audit_scheduler(verify_everything).passed


def test_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "audit.json"
    lossy = "specproof.subjects.examples:global_search_schedule"
    assert main([lossy, "--scheduler", "--json", str(out), "--quiet"]) == 1
    assert json.loads(out.read_text())["passed"] is False
    assert main(["specproof.subjects.examples:algorithm1_schedule", "--scheduler", "--quiet"]) == 0
    assert main(["not-a-path", "--scheduler"]) == 2
    assert "previous-token" in capsys.readouterr().out


def test_the_command_passes_and_fails_verifiers(tmp_path: Path) -> None:
    out = tmp_path / "v.json"
    common = [
        "--signature",
        "vllm",
        "--delta",
        "0.3",
        "--large-vocab",
        "256",
        "--quiet",
        "--hunt",
        "65536",
        "--json",
        str(out),
    ]
    assert main(["specproof.subjects.examples:rejection_sample", *common]) == 0
    assert json.loads(out.read_text())["passed"] is True
    assert main(["specproof.subjects.examples:biased_rejection_sample", *common]) == 1


def test_load_callable_and_audit_argument_checks() -> None:
    assert (
        load_callable("specproof.subjects.examples:rejection_sample") is examples.rejection_sample
    )
    with pytest.raises(ValueError):
        load_callable("specproof.subjects.examples")
    with pytest.raises(ValueError):
        audit("specproof.subjects.examples:rejection_sample")


def test_a_drafter_is_audited_against_the_q_it_reports() -> None:
    """Greedy drafting while reporting the softmax (exact tokens TV 0.84 in the mutation
    table) fails; drafting from the reported softmax passes."""
    small = [p for p in PROBLEMS if p.name in ("small-vocab", "p-equals-q")]
    options = {**OPTIONS, "problems": small}
    good = audit_verifier(
        examples.rejection_sample, "vllm", drafter=examples.sample_draft, calls=False, **options
    )
    assert good.passed, good.table()
    assert {r.check for r in good.results} == {"layout", "tokens"}
    bad = audit_verifier(
        examples.rejection_sample, "vllm", drafter=examples.greedy_draft, calls=False, **options
    )
    assert not bad.passed, bad.table()


@pytest.mark.slow
def test_a_drafter_audit_adds_fidelity_and_call_rows() -> None:
    """The drafter audit's own rows: fidelity at T = 0.6, 0.7, 1 on two LLM-scale rows each
    (alpha = 1e-6, power 1 - 1e-4 against TV >= 0.025) and repeated calls."""
    options = {**OPTIONS, "problems": []}
    report = audit_verifier(
        examples.rejection_sample, "vllm", drafter=examples.sample_draft, **options
    )
    assert report.passed, report.table()
    cases = {r.case for r in report.results}
    assert cases == {"fidelity-T0.6", "fidelity-T0.7", "fidelity-T1", "drafter-calls"}
