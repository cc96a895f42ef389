"""docs/results/engine_audit.md's engine-audit table lists exactly the subjects of
``python -m specproof.runners.engine_table`` with the verdict each is defined to get (PASS for an
engine, FAIL for a mutant), and the committed JSON the table came from agrees with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip(
    "transformers", reason="the HF engine audit needs the hf extra (nox -s tests installs it)"
)

from specproof.runners.engine_table import subjects

ROOT = Path(__file__).resolve().parents[2]


def page_rows() -> dict[str, str]:
    text = (ROOT / "docs" / "results" / "engine_audit.md").read_text()
    start = text.index("| engine or mutant |")
    rows = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = cells[3]
    return rows


def test_page_verdicts_are_the_defined_ones() -> None:
    expected = {name: verdict for name, verdict, _ in subjects()}
    assert page_rows() == expected


def test_committed_json_matches_the_page() -> None:
    rows = json.loads((ROOT / "benchmarks" / "engine_audit.json").read_text())
    assert {r["subject"]: r["verdict"] for r in rows} == page_rows()
