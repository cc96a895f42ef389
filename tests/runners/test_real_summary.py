"""The one-line-per-engine summary of the real-engine audits: its verdict rules on made-up
records, and the committed copies (benchmarks/, README, docs/results/real_engines.md) equal to
what the committed results file renders, with a reason for every engine and model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specproof.runners import real_summary, real_table
from specproof.runners.real_summary import Reason, summary, verdict_of

ROOT = Path(__file__).resolve().parents[2]


def record(
    configuration: str,
    verdict: str,
    control: str = "",
    kind: str = "engine",
    lossy: bool = False,
    engine: str = "E",
    model: str = "m",
) -> dict[str, Any]:
    settings = {"lossy_by_design": True} if lossy else {}
    return {"engine": engine, "version": "1.0", "model": model, "configuration": configuration,
            "kind": kind, "control": control, "settings": settings, "verdict": verdict}  # fmt: skip


CONTROL = record("c", "PASS")


@pytest.mark.parametrize(
    ("records", "expected"),
    [
        ([CONTROL, record("s", "PASS", "c")], ("PASS", [])),
        ([CONTROL, record("s", "FAIL", "c")], ("FAIL", ["s"])),
        ([record("c", "FAIL"), record("s", "FAIL", "c")], ("FAIL, control too", ["s"])),
        ([record("c", "FAIL"), record("s", "PASS", "c")], ("FAIL, control only", ["c"])),
        ([CONTROL, record("x", "PASS", "c", lossy=True)], ("NO POWER", ["x"])),
        ([CONTROL, record("x", "FAIL", "c", lossy=True)], ("PASS", [])),
        ([CONTROL, record("f", "FAIL", kind="function")], ("FAIL", ["f"])),
        ([CONTROL, record("s", "REFUSED", "c")], ("PASS", [])),
        ([CONTROL, record("s", "INCONCLUSIVE", "c")], ("PASS, some underpowered", ["s"])),
    ],
)
def test_verdict_rules(records: list[dict[str, Any]], expected: tuple[str, list[str]]) -> None:
    assert verdict_of(records, {}) == expected


def test_a_variant_is_judged_against_the_shipped_engines_control() -> None:
    shipped = record("c", "PASS")
    variant = record("s", "FAIL", "c", engine="E with a new step")
    table = summary([shipped, variant], [])
    assert "| E 1.0 with a new step | m | **FAIL** |" in table


def test_counts_reasons_and_links() -> None:
    records = [CONTROL, record("s", "FAIL", "c"), record("t", "PASS", "c"),
               record("u", "REFUSED", "c"), record("x", "FAIL", "c", lossy=True)]  # fmt: skip
    reason = Reason("E 1.0", "m", "the step is wrong", "docs/findings/f.md")
    row = summary(records, [reason], "../").splitlines()[2]
    assert row == (
        "| E 1.0 | m | **FAIL** | 1/2 PASS, 1 REFUSED | 1/1 PASS; must-fail 1/1 FAIL | - | "
        "the step is wrong (s) [f.md](../docs/findings/f.md) |"
    )


def test_a_refused_must_fail_control_is_counted_apart() -> None:
    """A must-fail control the engine refuses neither passed nor failed: counted as refused,
    never as power shown."""
    records = [CONTROL, record("x", "REFUSED", "c", lossy=True),
               record("y", "FAIL", "c", lossy=True)]  # fmt: skip
    row = summary(records, []).splitlines()[2]
    assert "| 1/1 PASS; must-fail 1/1 FAIL, 1 REFUSED |" in row
    row = summary([CONTROL, record("x", "REFUSED", "c", lossy=True)], []).splitlines()[2]
    assert "| **PASS** |" in row and "| 1/1 PASS; must-fail 1 REFUSED |" in row


def test_inconclusive_runs_are_counted_apart_from_failures() -> None:
    records = [CONTROL, record("s", "INCONCLUSIVE", "c"), record("t", "FAIL", "c")]
    row = summary(records, []).splitlines()[2]
    assert "| **FAIL** | 0/2 PASS, 1 INCONCLUSIVE |" in row


def test_engines_keep_their_models_together() -> None:
    records = [record("c", "PASS", model="tiny"), record("c", "PASS", engine="F"),
               record("c", "PASS", model="big")]  # fmt: skip
    rows = summary(records, []).splitlines()[2:]
    assert [row.split(" | ")[:2] for row in rows] == [["| E 1.0", "tiny"], ["| E 1.0", "big"],
                                                      ["| F 1.0", "m"]]  # fmt: skip


def committed() -> tuple[list[dict[str, Any]], list[Reason]]:
    records = json.loads((ROOT / real_table.JSON_PATH).read_text())
    return records, real_summary.load_reasons(ROOT / real_summary.VERDICTS_PATH)


def test_every_engine_and_model_has_one_reason_and_no_reason_is_stale() -> None:
    records, reasons = committed()
    keys = [(r.engine, r.model) for r in reasons]
    assert len(keys) == len(set(keys))
    assert set(keys) == set(real_summary.grouped(records))
    for reason in reasons:
        assert not reason.link or (ROOT / reason.link).is_file(), reason.link


def test_readme_and_page_show_the_summary_the_results_file_renders() -> None:
    records, reasons = committed()
    rerun = "rewrite them with python -m specproof.runners.real_table"
    assert summary(records, reasons) in (ROOT / "README.md").read_text(), rerun
    page = (ROOT / "docs" / "results" / "real_engines.md").read_text()
    assert summary(records, reasons, "../../") in page, rerun
    assert real_table.markdown(records) in page, rerun


def test_rerender_rewrites_every_table_from_the_results_file(tmp_path: Path) -> None:
    for name in (real_table.JSON_PATH, real_table.MD_PATH, real_summary.VERDICTS_PATH,
                 Path("README.md"), Path("docs/results/real_engines.md")):  # fmt: skip
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text((ROOT / name).read_text())
    reasons = json.loads((tmp_path / real_summary.VERDICTS_PATH).read_text())
    reasons[0]["why"] = "a reason written for this test"
    (tmp_path / real_summary.VERDICTS_PATH).write_text(json.dumps(reasons))
    real_table.rerender(tmp_path)
    for page in ("README.md", "docs/results/real_engines.md", str(real_table.MD_PATH)):
        assert "a reason written for this test" in (tmp_path / page).read_text(), page
