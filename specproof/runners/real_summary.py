"""One line per engine, version and model: the verdict of the real-engine audits at a glance,
counted from the results file (benchmarks/engine_audit_real.json) and explained by the one-line
reasons in benchmarks/engine_verdicts.json (what fails and the finding that locates it).

A speculative configuration is one run with a control; a control runs with speculation off; a
must-fail control asks the engine for a mode that is lossy by design (``settings.lossy_by_design``)
and is expected to FAIL. The verdict:

- FAIL: a speculative configuration or a function-level audit fails while its control passes;
- FAIL, control too: every failing speculative configuration's control fails as well (the
  engine's plain path misses the law too: not a loss caused by speculation);
- NO POWER: a must-fail control passed (the audit could not see a known loss);
- PASS, some underpowered: nothing failed, but some configurations are INCONCLUSIVE (a row
  fell short of the power its report states as its goal);
- PASS: everything else that ran passed (REFUSED configurations are counted apart).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VERDICTS_PATH = Path("benchmarks") / "engine_verdicts.json"
HEADER = "| engine | model | verdict | speculative | controls | function-level | why |"
RULE = "|---|---|---|---|---|---|---|"
LISTED_FAILURES = 3


def engine_shown(record: Mapping[str, Any]) -> str:
    """ "ENGINE VERSION", the version after the engine's name where the label goes on ("vLLM
    0.32.0 with specproof's verifier")."""
    name, version = record["engine"], record["version"]
    base, sep, rest = name.partition(" with ")
    return f"{base} {version}{sep}{rest}"


@dataclass(frozen=True)
class Reason:
    """The one-line explanation of an engine's verdict on a model, and where it is shown."""

    engine: str
    model: str
    why: str
    link: str = ""
    """A repository path (a finding page) or ``""``."""


def role(record: Mapping[str, Any]) -> str:
    if record["kind"] == "function":
        return "function"
    if record["settings"].get("lossy_by_design"):
        return "must-fail"
    return "speculative" if record["control"] else "control"


def count(records: Iterable[Mapping[str, Any]]) -> str:
    """'passed/ran PASS', then the runs that neither passed nor failed (INCONCLUSIVE: no row
    failed, the power fell short) and the REFUSED ones ('-' when none)."""
    verdicts = [r["verdict"] for r in records]
    ran = [v for v in verdicts if v != "REFUSED"]
    parts = [f"{ran.count('PASS')}/{len(ran)} PASS"] if ran else []
    for verdict in ("INCONCLUSIVE", "REFUSED"):
        if verdicts.count(verdict):
            parts.append(f"{verdicts.count(verdict)} {verdict}")
    return ", ".join(parts) or "-"


def verdict_of(
    records: list[Mapping[str, Any]], model_controls: Mapping[str, str]
) -> tuple[str, list[str]]:
    """The verdict and the configurations it rests on; ``model_controls``: the verdict of
    each control on the model by name (an engine variant, such as vLLM with specproof's
    verifier, is compared with the shipped engine's controls)."""
    own = {r["configuration"]: r["verdict"] for r in records if role(r) == "control"}
    controls = {**model_controls, **own}
    failing = [r for r in records if r["verdict"] == "FAIL" and role(r) in ("speculative",
               "function")]  # fmt: skip
    lost = [r["configuration"] for r in failing
            if role(r) == "function" or controls.get(r["control"]) == "PASS"]  # fmt: skip
    unseen = [r["configuration"] for r in records
              if role(r) == "must-fail" and r["verdict"] == "PASS"]  # fmt: skip
    if lost:
        return "FAIL", lost
    if failing:
        return "FAIL, control too", [r["configuration"] for r in failing]
    if unseen:
        return "NO POWER", unseen
    failed_controls = [name for name, v in own.items() if v == "FAIL"]
    if failed_controls:
        return "FAIL, control only", failed_controls
    short = [r["configuration"] for r in records if r["verdict"] == "INCONCLUSIVE"]
    return ("PASS, some underpowered" if short else "PASS"), short


def grouped(records: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], list[Mapping[str, Any]]]:
    """Records by (engine as shown, model): engines in the results file's order, each engine's
    models together."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    engines: list[str] = []
    for record in records:
        engine = engine_shown(record)
        engines += [] if engine in engines else [engine]
        groups.setdefault((engine, record["model"]), []).append(record)
    return dict(sorted(groups.items(), key=lambda item: engines.index(item[0][0])))


def load_reasons(path: Path) -> list[Reason]:
    return [Reason(**item) for item in json.loads(path.read_text())]


def reason_text(reason: Reason | None, names: list[str], link_base: str) -> str:
    listed = ", ".join(names[:LISTED_FAILURES])
    if len(names) > LISTED_FAILURES:
        listed += f" and {len(names) - LISTED_FAILURES} more"
    parts = [reason.why] if reason else []
    if listed:
        parts.append(f"({listed})")
    if reason and reason.link:
        parts.append(f"[{Path(reason.link).name}]({link_base}{reason.link})")
    return " ".join(parts) or "-"


def summary(
    records: Iterable[Mapping[str, Any]], reasons: Iterable[Reason], link_base: str = ""
) -> str:
    """The summary table; ``link_base`` leads each finding's repository path from the page
    the table is shown on (``"../../"`` from docs/results/)."""
    records = list(records)
    by_key = {(r.engine, r.model): r for r in reasons}
    lines = [HEADER, RULE]
    for (engine, model), group in grouped(records).items():
        model_controls = {r["configuration"]: r["verdict"] for r in records
                          if r["model"] == model and role(r) == "control"}  # fmt: skip
        verdict, names = verdict_of(group, model_controls)
        by_role = {name: [r for r in group if role(r) == name]
                   for name in ("speculative", "control", "must-fail", "function")}  # fmt: skip
        controls = count(by_role["control"])
        must_fail = by_role["must-fail"]
        if must_fail:
            ran = [r for r in must_fail if r["verdict"] != "REFUSED"]
            failed = sum(r["verdict"] == "FAIL" for r in ran)
            controls += f"; must-fail {failed}/{len(ran)} FAIL" if ran else "; must-fail"
            refused = len(must_fail) - len(ran)
            controls += f"{',' if ran else ''} {refused} REFUSED" if refused else ""
        why = reason_text(by_key.get((engine, model)), names, link_base)
        lines.append(
            f"| {engine} | {model} | **{verdict}** | {count(by_role['speculative'])} | "
            f"{controls} | {count(by_role['function'])} | {why} |"
        )
    return "\n".join(lines) + "\n"
