"""Each public bug class of ``specproof.audit.bugclasses`` is caught by the row docs/audit.md names,
on the case the default command runs with its defaults (alpha = 1e-6 per row, power 1 - 1e-4
against TV >= 0.05; fidelity rows against TV >= 0.025; exact rows alpha = 0); the correct
counterparts pass the same cases; that page's table is what the module prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from specproof.audit import bugclasses, examples
from specproof.audit.bugclasses import CLASSES, BugClass, catching_rows

DEFAULT_SESSION = {
    "uniform_grid_le",
    "bf16_draft",
    "always_greedy",
    "mixed_generator_noise",
    "nan_target_emits_vocab_size",
}
"""One class per kind of catching row (hunt, fidelity, round, support, nonfinite) runs in the
default session; every class runs in `nox -s thorough` (about 4 minutes on 2 busy cores)."""


@pytest.mark.parametrize(
    "bug",
    [
        pytest.param(b, marks=() if b.model in DEFAULT_SESSION else pytest.mark.slow)
        for b in CLASSES
    ],
    ids=lambda b: b.model,
)
def test_bug_class_is_caught(bug: BugClass) -> None:
    rows = catching_rows(bug)
    failed = [r for r in rows if not r.passed]
    assert any(r.check.startswith(bug.check) for r in failed), [
        (r.case, r.check, r.result()) for r in rows
    ]


def test_the_audit_page_table_is_the_modules() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "audit.md").read_text()
    assert bugclasses.markdown() in page


def test_the_models_are_importable_by_the_command() -> None:
    from specproof.audit import load_callable

    for bug in CLASSES:
        assert callable(load_callable(f"specproof.audit.bugclasses:{bug.model}"))
    assert bugclasses.command(CLASSES[0]).startswith("specproof audit specproof.audit.bugclasses:")


@pytest.mark.slow
def test_correct_counterparts_pass_the_catching_cases() -> None:
    """The same cases, the correct verifiers: vLLM (probabilities and raw logits, filters in
    vLLM's order and, for an engine that samples jointly, in the joint order) and FlashInfer;
    delta = 0.2 keeps it short (passing has probability >= 1 - rows x 1e-6)."""
    from specproof.audit import audit_verifier
    from specproof.audit.cases import verifier_problems

    problems = {p.name: p for p in verifier_problems(0, 64)}
    joint = {p.name: p for p in verifier_problems(0, 64, filter_order="joint")}
    for fn, signature, names, cases in (
        (examples.rejection_sample, "vllm", ("requests", "greedy", "long"), problems),
        (
            examples.rejection_sample_logits,
            "vllm-logits",
            ("requests", "filters-order", "filters-min-p"),
            problems,
        ),
        (examples.rejection_sample_logits_joint, "vllm-logits", ("filters-order",), joint),
        (examples.chain_speculative_sampling, "flashinfer", ("small-vocab",), problems),
    ):
        report = audit_verifier(
            fn,
            signature,
            problems=[cases[n] for n in names],
            delta=0.2,  # type: ignore[arg-type]
        )
        assert report.passed, report.table()
