"""The coverage row: which draft lengths and accepted counts the runs exercised.

A pass says nothing about a path that was never taken (HF's default
``assistant_confidence_threshold`` can cut every burst to one draft with a weak assistant), so
the row lists the histograms and warns about each untaken path; it never fails the audit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ..report import WARN, CaseResult, exact_row
from .subject import Emission

__all__ = ["WARN", "coverage_row", "untaken_paths"]


def _histogram(counter: Counter[int]) -> str:
    return " ".join(f"{key}:{counter[key]}" for key in sorted(counter))


def untaken_paths(rounds: Sequence[tuple[int, int]], max_draft: int | None) -> list[str]:
    drafted = Counter(d for d, _ in rounds)
    warnings = []
    longest = max(drafted, default=0)
    if max_draft is not None and longest < max_draft:
        warnings.append(f"no draft of the configured length {max_draft} (longest {longest})")
    if longest < 2:
        warnings.append("no round drafted more than one token")
    if not any(a == d and d >= 2 for d, a in rounds):
        warnings.append("no draft of two or more tokens was accepted in full")
    if not any(a < d for d, a in rounds):
        warnings.append("no draft was rejected (the correction path never ran)")
    if not any(0 < a < d for d, a in rounds):
        warnings.append("no draft was rejected after an accepted token")
    return warnings


def coverage_row(case: str, runs: Sequence[Emission], max_draft: int | None) -> CaseResult:
    rounds = [r for run in runs for r in run.rounds]
    if not rounds:
        summary = "no round trace: coverage unknown"
        return exact_row(case, "coverage", len(runs), WARN, summary, summary)
    drafted = Counter(d for d, _ in rounds)
    accepted = Counter(a for _, a in rounds)
    summary = (
        f"{len(rounds)} rounds; drafted {_histogram(drafted)}; accepted {_histogram(accepted)}"
    )
    warnings = untaken_paths(rounds, max_draft)
    if not warnings:
        return exact_row(case, "coverage", len(runs), "pass", summary, summary)
    return exact_row(
        case, "coverage", len(runs), WARN, summary, f"{case}/coverage: " + "; ".join(warnings)
    )
