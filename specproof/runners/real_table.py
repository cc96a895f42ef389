"""The results file of the real-engine audits (benchmarks/engine_audit_real.json) and the table
rendered from it (benchmarks/engine_audit_real.md, and docs/results/real_engines.md).

Each engine's session replaces its own entries on the model it ran and keeps the others', so
``nox -s audit-vllm`` and ``nox -s audit-llamacpp`` write one file between them. An entry is one
audited configuration of an engine on a model (``model``): an engine run (``kind`` "engine") or
a function-level audit of the engine's own sampler (``kind`` "function"), with every row of its
report.

    python -m specproof.runners.real_table   # rewrite every table from the results file
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from specproof.runners.real_summary import HEADER as SUMMARY_HEADER
from specproof.runners.real_summary import VERDICTS_PATH, engine_shown, load_reasons, summary

JSON_PATH = Path("benchmarks") / "engine_audit_real.json"
MD_PATH = Path("benchmarks") / "engine_audit_real.md"
HEADER = (
    "| engine | model | configuration | control | verdict | n | worst statistical row | power "
    "| coverage | seconds |"
)


def statistical_rows(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [r for r in record["report"]["results"] if r["alpha"] > 0 and r["n"] is not None]


def runs_of(record: Mapping[str, Any]) -> str:
    counts = sorted({int(r["n"]) for r in record["report"]["results"] if r["n"] is not None})
    if not counts:
        return "-"
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"


def worst_row(record: Mapping[str, Any]) -> str:
    """The statistical row nearest its bound (the failing one first), as 'check est/bound'."""
    rows = statistical_rows(record)
    if not rows:
        return "-"
    worst = max(rows, key=lambda r: (not r["passed"], r["tv_estimate"] / r["bound"]))
    relation = ">=" if not worst["passed"] else "<"
    return f"{worst['check']} {worst['tv_estimate']:.3f} {relation} {worst['bound']:.3f}"


def power_of(record: Mapping[str, Any]) -> str:
    """The smallest power its statistical rows reached at their n against their delta (the
    power asked for, 1 - beta, where a row does not record what it reached)."""
    rows = statistical_rows(record)
    if record.get("verdict") == "REFUSED":  # the engine refused the requests: nothing ran
        return "-"
    if not rows:
        return "exact rows"

    def reached(row: Mapping[str, Any]) -> float:
        power = row.get("power")
        return 1 - row["beta"] if power is None else min(power, 1 - row["beta"])

    worst = min(rows, key=reached)
    return f"{reached(worst):.4g} at TV {worst['delta']:g}"


def failed_rows(record: Mapping[str, Any]) -> list[str]:
    """The failed checks, each once in first-failure order, with how many cases failed it
    where more than one did (a function-level audit fails ``support`` in a dozen cases)."""
    checks = [r["check"] for r in record["report"]["results"] if r["verdict"] == "FAIL"]
    counts = Counter(checks)
    return [c if counts[c] == 1 else f"{c} x{counts[c]}" for c in dict.fromkeys(checks)]


def markdown(records: Iterable[Mapping[str, Any]]) -> str:
    lines = [HEADER, "|---|---|---|---|---|---|---|---|---|---|"]
    for record in records:
        verdict = record["verdict"]
        failed = failed_rows(record)
        if failed:
            verdict += f" ({', '.join(failed)})"
        lines.append(
            f"| {engine_shown(record)} | {record['model']} | {record['configuration']} | "
            f"{record['control'] or '-'} | {verdict} | {runs_of(record)} | {worst_row(record)} | "
            f"{power_of(record)} | {record['coverage'] or '-'} | {record['seconds']} |"
        )
    return "\n".join(lines) + "\n"


def load(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    records: list[dict[str, Any]] = json.loads(path.read_text())
    return records


def merge(
    old: list[dict[str, Any]], engine: str, model: str, new: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """``old`` with ``engine``'s entries on ``model`` replaced by ``new`` (in place of the
    first of them; else after the engine's entries on other models; else at the end)."""

    def replaced(record: Mapping[str, Any]) -> bool:
        return record["engine"] == engine and record["model"] == model

    kept = [r for r in old if not replaced(r)]
    first = next((i for i, r in enumerate(old) if replaced(r)), None)
    if first is None:
        same_engine = [i for i, r in enumerate(kept) if r["engine"] == engine]
        position = same_engine[-1] + 1 if same_engine else len(kept)
    else:
        position = sum(1 for r in old[:first] if not replaced(r))
    return kept[:position] + new + kept[position:]


def rendered(records: list[dict[str, Any]], reasons_path: Path) -> str:
    """The results file as benchmarks/engine_audit_real.md shows it: the summary (one line per
    engine and model, its finding links led from benchmarks/), then every configuration."""
    reasons = load_reasons(reasons_path) if reasons_path.exists() else []
    return summary(records, reasons, "../") + "\n" + markdown(records)


def write(
    engine: str,
    model: str,
    new: list[dict[str, Any]],
    json_path: Path,
    md_path: Path,
    reasons_path: Path = VERDICTS_PATH,
) -> str:
    """Merge ``new`` (``engine`` on ``model``) into the results file and rewrite the tables;
    returns them."""
    records = merge(load(json_path), engine, model, new)
    json_path.write_text(json.dumps(records, indent=1) + "\n")
    tables = rendered(records, reasons_path)
    md_path.write_text(tables)
    return tables


ROOT = Path(__file__).resolve().parents[2]
PAGES = (("README.md", ""), ("docs/results/real_engines.md", "../../"))
"""Pages that show the summary, each with the path that leads its links to the repository."""


def replaced_table(text: str, header: str, table: str) -> str:
    """``text`` with the table that starts at ``header`` (up to the next blank line) replaced."""
    start = text.index(header)
    end = text.index("\n\n", start)
    return text[:start] + table.rstrip("\n") + text[end:]


def rerender(root: Path = ROOT) -> int:
    """Rewrite every rendering of the results file from it (after an engine's run, or an edit
    of the reasons): benchmarks/engine_audit_real.md, the summary in README.md and
    docs/results/real_engines.md, and the page's full table; returns the number of entries."""
    records = load(root / JSON_PATH)
    reasons_path = root / VERDICTS_PATH
    reasons = load_reasons(reasons_path)
    (root / MD_PATH).write_text(rendered(records, reasons_path))
    for page, link_base in PAGES:
        path = root / page
        text = replaced_table(
            path.read_text(), SUMMARY_HEADER, summary(records, reasons, link_base)
        )
        if page.startswith("docs/"):
            text = replaced_table(text, HEADER, markdown(records))
        path.write_text(text)
    return len(records)


if __name__ == "__main__":
    print(f"re-rendered {rerender()} entries")
