"""The one Markdown table helper of the e2e renderers (specproof.runners.e2e.report.table)."""

from __future__ import annotations

from specproof.runners.e2e.report.table import fmt, interval, table


def test_table_has_a_header_a_rule_and_one_line_per_row() -> None:
    assert table(["k", "tau", "note"], [[1, 2.5, None], ["x", 0.0001, "a b"]]) == [
        "| k | tau | note |",
        "|---|---|---|",
        "| 1 | 2.500 | - |",
        "| x | 0.0001 | a b |",
    ]


def test_cells_already_formatted_pass_unchanged() -> None:
    assert fmt("1.23 [1.10, 1.31]") == "1.23 [1.10, 1.31]"
    assert fmt(7) == "7"
    assert fmt(float("nan")) == "nan"
    assert fmt(0.0) == "0.000"


def test_interval_marks_a_missing_end() -> None:
    assert interval({"interval_95": [0.951, 1.2]}) == "[0.95, 1.20]"
    assert interval({"interval_95": [None, 1.2]}, 3) == "[-, 1.200]"
