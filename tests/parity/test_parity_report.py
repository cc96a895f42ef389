"""``specproof parity-report``: a passing and a failing report at both levels of subject, the
message when matplotlib is missing, the plots when it is there, and the intervals.

Runs at level quick on one case: per call false-fail rate <= rows x 1e-6, power >= 0.9 against
TV >= 0.2; the broken subjects (residual drawn from p) are off by more than 0.2 and fail in
practice always at these seeds."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from specproof.commands.parity_report import main
from specproof.parity.plots import MISSING
from specproof.parity.positions import clopper_pearson, position_tables

VERIFIER = ["verifier", "--signature", "vllm", "--level", "quick", "--cases", "small-vocab"]
ENGINE = ["engine", "--tokens", "3", "--level", "quick"]


def report(tmp_path: Path, *argv: str) -> tuple[int, list[str]]:
    code = main([*argv, "--out", str(tmp_path)])
    return code, (tmp_path / "report.md").read_text().splitlines()


@pytest.fixture
def no_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises


def test_a_lossless_verifier_gets_a_passing_report(
    tmp_path: Path, no_matplotlib: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines = report(tmp_path, *VERIFIER, "specproof.subjects.examples:rejection_sample")
    assert code == 0
    assert lines[0].startswith("# PASS: specproof.subjects.examples:rejection_sample matches")
    text = "\n".join(lines)
    assert (
        "specproof parity-report verifier --signature vllm --level quick --cases small-vocab "
        "specproof.subjects.examples:rejection_sample --out " in text
    )
    assert "| statistical rows | 5: false-fail rate of the report <= 5e-06 |" in text
    assert "| power | >= 0.9 against TV >= 0.2 in every row's law |" in text
    assert "| seed | 0 (twin: 1) |" in text
    assert "FAIL as required" in text
    assert "| small-vocab | round |" in text
    assert "Position 3 (n = " in text
    assert MISSING in text and MISSING in capsys.readouterr().out
    assert not list(tmp_path.glob("*.png"))


def test_a_biased_verifier_gets_a_failing_report(tmp_path: Path, no_matplotlib: None) -> None:
    code, lines = report(tmp_path, *VERIFIER, "specproof.subjects.examples:biased_rejection_sample")
    assert code == 1
    assert lines[0].startswith("# FAIL: specproof.subjects.examples:biased_rejection_sample: ")
    assert any(line.startswith("| small-vocab | round |") and "**FAIL**" in line for line in lines)
    assert "must-fail twin: not run" in "\n".join(lines)


def test_an_engine_gets_a_passing_report_and_its_broken_twin_a_failing_one(
    tmp_path: Path, no_matplotlib: None
) -> None:
    code, lines = report(tmp_path / "good", *ENGINE, "plugin.engines:correct_engine")
    assert code == 0 and lines[0].startswith("# PASS: tiny chain engine matches")
    code, lines = report(tmp_path / "bad", *ENGINE, "plugin.engines:residual_from_target_engine")
    assert code == 1 and lines[0].startswith("# FAIL: tiny chain engine, residual from the target")


def test_the_plots_are_written_when_matplotlib_is_there(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="plots need matplotlib (the test extra installs it)")
    code, lines = report(tmp_path, *ENGINE, "plugin.engines:correct_engine")
    assert code == 0
    names = sorted(p.name for p in tmp_path.glob("*.png"))
    assert names == [f"tiny-chain-engine-position-{j}.png" for j in (1, 2, 3)]
    assert "![tiny chain engine position 1](tiny-chain-engine-position-1.png)" in lines


def test_usage_errors_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("")
    assert main([*VERIFIER, "x:y", "--out", str(tmp_path / "file")]) == 2
    assert main([*VERIFIER, "no_such_module:fn", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].endswith("exists and is not a folder")
    assert err[1].startswith("specproof parity-report: no module named 'no_such_module'")


def test_intervals_cover_the_exact_law_and_flag_a_wrong_one() -> None:
    law = {(0,): 0.5, (1,): 0.5}
    fair = position_tables([(0,)] * 500 + [(1,)] * 500, law, 1)
    assert fair[0].outside() == []
    skewed = position_tables([(0,)] * 700 + [(1,)] * 300, law, 1)
    assert skewed[0].outside() == [0, 1]
    low, high = clopper_pearson(0, 10, 0.05)
    assert low == 0.0 and high == pytest.approx(1 - 0.025 ** (1 / 10))


def test_a_twin_that_passes_turns_the_report_into_an_error(
    tmp_path: Path, no_matplotlib: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import specproof.testing.lossless as lossless

    monkeypatch.setattr(lossless, "shifted_target_twin", lambda fn, signature: fn)
    code, lines = report(tmp_path, *VERIFIER, "specproof.subjects.examples:rejection_sample")
    assert code == 1
    assert lines[0] == (
        "# ERROR: specproof.subjects.examples:rejection_sample: its must-fail twin passed too, "
        "so this report cannot tell a wrong law apart"
    )


def test_a_report_short_of_its_power_is_inconclusive_not_a_failure() -> None:
    """A report with no failed row but a case it could not run (here marked skipped by hand)
    starts with INCONCLUSIVE, names what fell short and exits 4: not PASS, and not FAIL with
    "0 rows failed"."""
    from specproof.audit.report import AuditReport, exact_row
    from specproof.commands.command_rules import INCONCLUSIVE
    from specproof.parity.report import verdict_line
    from specproof.parity.run import exit_status
    from specproof.testing.levels import LEVELS
    from specproof.testing.lossless import Outcome

    report = AuditReport("mod:fn", "verifier")
    report.results.append(exact_row("small-vocab", "support", None, "PASS", "none impossible"))
    report.skipped.append("filters-order")
    twin = AuditReport("mod:fn (twin)", "verifier")
    twin.results.append(exact_row("small-vocab", "support", None, "FAIL", "impossible outcome"))
    outcome = Outcome(LEVELS["quick"], report, twin)
    assert verdict_line(outcome) == "# INCONCLUSIVE: mod:fn: not audited: filters-order"
    assert exit_status(outcome) == INCONCLUSIVE
