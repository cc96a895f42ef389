"""report.md: the verdict first, then how to reproduce it, the rows and the positions."""

from __future__ import annotations

import platform
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from specproof.audit.report import AuditReport
from specproof.testing.lossless import Outcome

from .positions import PLOT_ALPHA, PositionTable


@dataclass
class Section:
    """The per-position tables of one case (and the PNG names drawn from them)."""

    case: str
    note: str
    tables: list[PositionTable]
    plots: list[str] = field(default_factory=list)


def source_commit(where: Path) -> str:
    """The git commit of the specproof source in use ("+ changes" when its tree differs), or ""
    outside a clone."""
    try:
        head = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        changes = subprocess.run(
            ["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return f"{head} + changes" if changes else head


def versions() -> list[tuple[str, str]]:
    import specproof

    where = Path(specproof.__file__).resolve().parent
    out = [
        ("python", sys.version.split()[0]),
        ("platform", platform.platform()),
        ("specproof", f"{specproof.__version__} (from {where})"),
    ]
    commit = source_commit(where)
    if commit:
        out.append(("specproof commit", commit))
    for package in ("torch", "numpy", "scipy", "matplotlib"):
        try:
            out.append((package, metadata.version(package)))
        except metadata.PackageNotFoundError:
            out.append((package, "not installed"))
    return out


def verdict_line(outcome: Outcome) -> str:
    report = outcome.report
    level = outcome.level
    broken = outcome.twin_broken
    if report.passed and broken is not None:
        return (
            f"# ERROR: {report.subject}: its must-fail twin could not run ({broken.result()}), "
            "so this report cannot tell a wrong law apart"
        )
    if report.passed and outcome.twin_escaped:
        return (
            f"# ERROR: {report.subject}: its must-fail twin passed too, so this report "
            "cannot tell a wrong law apart"
        )
    if report.passed:
        return (
            f"# PASS: {report.subject} matches the exact law (power >= {level.power:g} against "
            f"TV >= {level.delta:g} in every row)"
        )
    if not report.failed:
        return f"# INCONCLUSIVE: {report.subject}: {'; '.join(report.shortfalls())}"
    failed = [r for r in report.results if r.verdict == "FAIL"]
    return f"# FAIL: {report.subject}: {len(failed)} of {len(report.results)} rows failed"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def row_table(report: AuditReport) -> list[str]:
    lines = ["| case | check | n | result | verdict |", "|---|---|---|---|---|"]
    for r in [*report.results, *report.robustness]:
        n = "exact" if r.n is None else str(r.n)
        verdict = f"**{r.verdict}**" if not r.passed else r.verdict
        lines.append(f"| {r.case} | {r.check} | {n} | {_cell(r.result())} | {verdict} |")
    details = [r.detail for r in report.results if not r.passed and r.detail]
    if details:
        lines += ["", "Failed rows:", ""] + [f"- {_cell(d)}" for d in details]
    return lines


def position_lines(section: Section) -> list[str]:
    lines = [f"### {section.case}", "", section.note, ""]
    plots = dict(zip([t.position for t in section.tables], section.plots, strict=False))
    for table in section.tables:
        lines.append(f"Position {table.position} (n = {table.n}):")
        lines.append("")
        if table.position in plots:
            lines += [f"![{section.case} position {table.position}]({plots[table.position]})", ""]
        lines += [
            "| token | count | frequency | interval | exact | inside |",
            "|---|---|---|---|---|---|",
        ]
        for t, c, e, lo, hi in zip(
            table.tokens, table.observed, table.expected, table.low, table.high, strict=True
        ):
            inside = "yes" if lo <= e <= hi else "**no**"
            lines.append(
                f"| {t} | {c} | {c / max(table.n, 1):.4f} | [{lo:.4f}, {hi:.4f}] | {e:.4f} "
                f"| {inside} |"
            )
        lines.append("")
    return lines


def render(
    outcome: Outcome,
    *,
    command: str,
    seed: int,
    twin_line: str,
    sections: Sequence[Section],
    notes: Sequence[str] = (),
) -> str:
    level = outcome.level
    rows = outcome.statistical_rows
    lines = [
        verdict_line(outcome),
        "",
        f"{outcome.report.kind} `{outcome.report.subject}`, written by `specproof parity-report` "
        f"in {outcome.report.seconds:.1f} s.",
        "",
        "## Reproduce",
        "",
        "```",
        command,
        "```",
        "",
        "## Settings",
        "",
        "| setting | value |",
        "|---|---|",
        f"| level | {level.name} |",
        f"| seed | {seed} (twin: {seed + 1}) |",
        f"| alpha (false-fail rate per statistical row) | {level.alpha:g} |",
        f"| statistical rows | {rows}: false-fail rate of the report <= {rows * level.alpha:.2g} |",
        f"| power | >= {level.power:g} against TV >= {level.delta:g} in every row's law |",
        f"| position intervals | Clopper-Pearson, simultaneous miss rate <= {PLOT_ALPHA:g} |",
        f"| must-fail twin | {_cell(twin_line)} |",
        "",
        "## Versions",
        "",
        "| package | version |",
        "|---|---|",
        *[f"| {name} | {_cell(value)} |" for name, value in versions()],
        "",
        "## Rows",
        "",
        *row_table(outcome.report),
        "",
    ]
    if outcome.report.notes or notes:
        lines += ["Notes:", ""] + [f"- {n}" for n in [*outcome.report.notes, *notes]] + [""]
    lines += ["## Token frequencies per position", ""]
    for section in sections:
        lines += position_lines(section)
    return "\n".join(lines).rstrip() + "\n"
