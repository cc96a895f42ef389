"""Rows of an audit and the table the command prints."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

from specproof.exit_status import INCONCLUSIVE, PASSED, ROW_FAILED, write_report

from .guard import abandoned_calls


@dataclass(frozen=True)
class CaseResult:
    """One row of the audit table.

    Statistical rows (``n`` set, ``alpha`` > 0) test a sampled law against an exact one: the
    false-fail rate is at most ``alpha`` and the power at least 1 - ``beta`` against TV >=
    ``delta``. Exact rows (``alpha`` = 0) cannot fail a correct subject: an impossible outcome,
    a layout violation, or an exact TV computed by the reference.
    """

    case: str
    check: str
    n: int | None
    tv_estimate: float | None
    bound: float | None
    alpha: float
    beta: float | None
    delta: float | None
    verdict: str
    detail: str = ""
    exact_tv: str | None = None
    round: int | None = None
    """The first offending round, for exact failures found while sampling."""
    summary: str = ""
    """A short result for the table (the detail is printed below it)."""
    power: float | None = None
    """For statistical rows: the power this row's n reaches against TV >= ``delta`` (the goal
    is 1 - ``beta``); None for exact rows."""

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def short_of_power(self) -> bool:
        """A statistical row whose n does not reach its goal power 1 - beta against delta."""
        if self.exact or self.power is None or self.beta is None:
            return False
        return self.power < (1 - self.beta) - POWER_SLACK

    @property
    def exact(self) -> bool:
        return self.alpha == 0

    def result(self) -> str:
        if self.summary:
            return self.summary
        if self.exact_tv is not None:
            return f"exact TV = {self.exact_tv}"
        if not self.exact and self.tv_estimate is not None and self.bound is not None:
            relation = "<" if self.passed else ">="
            return f"TV estimate {self.tv_estimate:.4f} {relation} bound {self.bound:.4f}"
        return self.detail


def exact_row(
    case: str, check: str, n: int | None, verdict: str, summary: str, detail: str = ""
) -> CaseResult:
    """A row that cannot fail a correct subject (alpha = 0): no estimate, bound or power."""
    return CaseResult(
        case=case,
        check=check,
        n=n,
        tv_estimate=None,
        bound=None,
        alpha=0.0,
        beta=None,
        delta=None,
        verdict=verdict,
        detail=detail or summary,
        summary=summary,
    )


LIMIT = "LIMIT"
"""Verdict of a row the run could not complete for a limit of its own (never a pass)."""
WARN = "warn"
"""Verdict of a coverage warning: it neither passes nor fails the audit."""
INFO = "info"
"""Verdict of an informational row (a fact about the subject that is not a finding): it
neither passes nor fails the audit."""
INFORMATIONAL = (WARN, INFO)
POWER_SLACK = 1e-9
"""Float rounding between the n a goal needs and the power recomputed at that n."""
PASS, FAIL, UNDECIDED = "PASS", "FAIL", "INCONCLUSIVE"


def limit_row(
    case: str, check: str, n: int | None, requests: int, error: BaseException
) -> CaseResult:
    """A row stopped because the verifier ran out of memory on a call of ``requests`` requests:
    a limit of this run, not a finding about the verifier, and never a pass."""
    message = str(error).splitlines()[0] if str(error) else ""
    summary = f"out of memory on a call of {requests} requests ({type(error).__name__})"
    detail = (
        f"{case}/{check}: harness-side limit, not a verdict on the verifier: it raised "
        f"{type(error).__name__}: {message[:160]} on a call of {requests} requests; rerun with "
        f"a smaller --max-batch (requests per call) or with more memory"
    )
    return exact_row(case, check, n, LIMIT, summary, detail)


@dataclass
class AuditReport:
    subject: str
    kind: str
    results: list[CaseResult] = field(default_factory=list)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    robustness: list[CaseResult] = field(default_factory=list)
    """Rows on input no law is defined for (non-finite rows): never a losslessness verdict."""
    skipped: list[str] = field(default_factory=list)
    """Cases or sections the run did not audit (the subject cannot receive their inputs, or
    the run stopped before them): the verdict cannot be a pass."""

    def _rows(self) -> list[CaseResult]:
        return [r for r in [*self.results, *self.robustness] if r.verdict not in INFORMATIONAL]

    @property
    def failed(self) -> bool:
        """A row failed: evidence against the subject, whatever the power of the others."""
        return any(r.verdict == "FAIL" for r in self._rows())

    def shortfalls(self) -> list[str]:
        """Why the rows do not show what the report states as its goal (empty: they do)."""
        reasons = []
        if not [r for r in self.results if r.verdict not in INFORMATIONAL]:
            reasons.append("no row was run")
        weak = [r for r in self._rows() if r.short_of_power]
        if weak:
            names = ", ".join(
                f"{r.check if r.case == self.subject else f'{r.case}/{r.check}'} {r.power:.4f}"
                for r in weak[:4]
            )
            more = f", ... {len(weak)} rows" if len(weak) > 4 else ""
            reasons.append(f"rows below their goal power: {names}{more}")
        limits = [r for r in self._rows() if r.verdict == LIMIT]
        if limits:
            reasons.append(f"{len(limits)} row(s) stopped at a limit of the run")
        if self.skipped:
            reasons.append(f"not audited: {', '.join(self.skipped)}")
        return reasons

    @property
    def verdict(self) -> str:
        """FAIL (a row failed), INCONCLUSIVE (none failed, but the rows fall short of the
        stated power or some were not run) or PASS."""
        if self.failed:
            return FAIL
        return UNDECIDED if self.shortfalls() else PASS

    @property
    def passed(self) -> bool:
        return self.verdict == PASS

    def power_reached(self) -> CaseResult | None:
        """The statistical row of least power (what the whole run shows), or None."""
        rows = [r for r in self._rows() if not r.exact and r.power is not None]
        return min(rows, key=lambda r: r.power or 0.0, default=None)

    def verdict_line(self) -> str:
        verdict = self.verdict
        weakest = self.power_reached()
        if verdict != FAIL and weakest is not None and weakest.beta is not None:
            verdict += (
                f", power reached {weakest.power:.4f} against TV >= {weakest.delta:g} (goal "
                f"{1 - weakest.beta:g})"
            )
        if self.robustness:
            checked = [r for r in self.results if r.verdict not in INFORMATIONAL]
            law = "pass" if checked and all(r.passed for r in checked) else "FAIL"
            if not self.failed and law == "FAIL":
                law = "not shown"
            sound = "pass" if all(r.passed for r in self.robustness) else "FAIL"
            verdict += f" (law rows: {law}; robustness rows: {sound})"
        return f"{self.kind} {self.subject}: {verdict} ({self.seconds:.1f} s)"

    def table(self) -> str:
        header = ("case", "check", "n", "result", "verdict")
        rows = [
            (r.case, r.check, "exact" if r.n is None else str(r.n), r.result(), r.verdict)
            for r in [*self.results, *self.robustness]
        ]
        widths = [max([len(h), *(len(row[i]) for row in rows)]) for i, h in enumerate(header)]
        lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
        cells = [
            "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
        ]
        lines += cells[: len(self.results)]
        if self.robustness:
            lines.append(
                "robustness (non-finite input; not a losslessness verdict: a verifier passes "
                "by refusing the call or by emitting valid ids):"
            )
            lines += cells[len(self.results) :]
        rows_of_note = [*self.results, *self.robustness]
        notes = [f"  {r.detail}" for r in rows_of_note if not r.passed and r.detail]
        footer = list(self.notes)
        statistical = [r for r in self.results if not r.exact and r.beta is not None]
        settings = sorted({(r.alpha, r.beta or 0.0, r.delta or 0.0) for r in statistical})
        short = any(r.short_of_power for r in statistical)
        for alpha, beta, delta in sorted(settings, key=lambda s: -s[2]):
            held = [r for r in statistical if r.delta == delta]
            which = "" if len(settings) == 1 else f" ({_cases(held)})"
            gives = "goal (not reached by every row)" if short else "n gives"
            footer.append(
                f"statistical rows{which}: false-fail rate <= alpha = {alpha:g} each; {gives} "
                f"power >= 1 - beta = {1 - beta:g} against TV >= delta = {delta:g}"
            )
        if any(r.exact for r in self.results):
            footer.append("exact rows: no false-fail risk (alpha = 0)")
        limits = [r for r in rows_of_note if r.verdict == LIMIT]
        if limits:
            footer.append(
                f"{len(limits)} row(s) stopped at a harness-side limit (out of memory): not "
                "verdicts on the subject, and not passes; rerun with a smaller --max-batch"
            )
        if self.verdict == UNDECIDED:
            footer.append(
                "inconclusive, not a pass: " + "; ".join(self.shortfalls()) + " (more runs or "
                "rounds reach the goal)"
            )
        footer.append(self.verdict_line())
        return "\n".join(lines + notes + footer)

    def as_dict(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "kind": self.kind,
            "passed": self.passed,
            "verdict": self.verdict,
            "power": None if (weakest := self.power_reached()) is None else weakest.power,
            "shortfalls": self.shortfalls(),
            "seconds": self.seconds,
            "notes": self.notes,
            "results": [{**asdict(r), "passed": r.passed} for r in self.results],
            "robustness": [{**asdict(r), "passed": r.passed} for r in self.robustness],
        }


def _cases(rows: list[CaseResult]) -> str:
    names = sorted({r.case for r in rows})
    return ", ".join(names) if len(names) <= 3 else f"{names[0]}, ... {len(names)} cases"


def publish(prog: str, report: AuditReport, json_path: str | None) -> int:
    """Print ``report``, write it to ``json_path`` if given, and return the exit status (the
    command rule: 1 a row failed, 4 inconclusive; a report that could not be written is
    specproof's own failure). After an abandoned call the process exits here: a hung call
    cannot be stopped and would keep the interpreter from exiting."""
    print(report.table())
    code = {PASS: PASSED, FAIL: ROW_FAILED, UNDECIDED: INCONCLUSIVE}[report.verdict]
    if json_path:
        failed = write_report(prog, json_path, json.dumps(report.as_dict(), indent=2) + "\n")
        if failed is None:
            print(f"wrote {json_path}")
        code = failed or code
    if abandoned_calls():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code
