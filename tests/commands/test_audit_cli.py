"""The command's manners: options refused with a message before any run, MODULE:FN found in
the current directory, help texts, exact rows without statistical columns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specproof.commands.audit import load_callable, main, parser

SCHEDULER = "specproof.subjects.examples:algorithm1_schedule"


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--large-vocab", "0"], "--large-vocab must be > 1"),
        (["--long-vocab", "1"], "--long-vocab must be > 1"),
        (["--alpha", "1.5"], "alpha must be in (0, 1)"),
        (["--tolerance", "-1"], "tolerance must be in [0, 1)"),
        (["--hunt", "0"], "--hunt must be > 0"),
        (["--timeout", "-3"], "--timeout must be > 0"),
        # was an OverflowError traceback and exit 3, after the battery was built
        (["--seed", "18446744073709551616"], "--seed must be in 0..2^62"),
        (["--seed", "-1"], "--seed must be in 0..2^62"),
    ],
)
def test_invalid_options_are_refused_with_a_message(
    option: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["specproof.subjects.examples:rejection_sample", "--signature", "vllm", *option])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_json_path_is_checked_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no" / "such" / "report.json"
    code = main(
        [
            "specproof.subjects.examples:rejection_sample",
            "--signature",
            "vllm",
            "--json",
            str(missing),
        ]
    )
    assert code == 2
    captured = capsys.readouterr()
    assert "no folder" in captured.err and captured.out == ""


def test_module_is_found_in_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "localsched_for_audit.py").write_text(
        "def schedule(confidences, sps):\n    return [len(row) for row in confidences]\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(
        "sys.path", [p for p in __import__("sys").path if p not in ("", str(tmp_path))]
    )
    schedule = load_callable("localsched_for_audit:schedule")
    assert schedule([[1, 1], [1]], None) == [2, 1]
    assert main(["no_such_module_here:schedule", "--scheduler", "--quiet"]) == 2
    assert "PYTHONPATH" in capsys.readouterr().err


def test_help_says_where_modules_come_from_and_what_each_option_does() -> None:
    text = " ".join(parser().format_help().split())
    assert "current directory first" in text and "PYTHONPATH" in text
    for action in parser()._actions:
        assert action.help, action.dest


def test_exact_rows_print_no_statistical_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "s.json"
    lossy = "specproof.subjects.examples:global_search_schedule"
    assert main([lossy, "--scheduler", "--quiet", "--json", str(out)]) == 1
    printed = capsys.readouterr().out
    header = printed.splitlines()[0].split()
    assert header == ["case", "check", "n", "result", "verdict"]
    assert "exact TV = 3/20" in printed and "bound" not in printed
    rows = json.loads(out.read_text())["results"]
    assert all(r["alpha"] == 0 and r["n"] is None for r in rows)


def test_the_scheduler_excerpts_are_what_the_command_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every line of the scheduler-audit excerpts in README.md and
    docs/guide/auditing_a_verifier.md (between the command and the exit status, "..." elisions
    aside) is a line the command prints, seconds aside."""
    root = Path(__file__).resolve().parents[2]
    command = (
        "$ specproof audit specproof.subjects.examples:global_search_schedule --scheduler --quiet"
    )
    assert (
        main(["specproof.subjects.examples:global_search_schedule", "--scheduler", "--quiet"]) == 1
    )
    printed = capsys.readouterr().out.splitlines()

    def timeless(line: str) -> str:
        return line.split(": FAIL (")[0]

    printed_set = {timeless(line) for line in printed}
    for page in (root / "README.md", root / "docs" / "guide" / "auditing_a_verifier.md"):
        text = page.read_text()
        assert command in text, page
        excerpt = text.split(command, 1)[1].split("(exit status 1)", 1)[0].strip().splitlines()
        shown = [line for line in excerpt if line != "..."]
        assert len(shown) >= 5, page
        assert all(timeless(line) in printed_set for line in shown), (page, shown)
