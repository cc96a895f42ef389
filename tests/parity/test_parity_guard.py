"""``specproof parity-report`` under the audit's guard: a subject or engine factory that calls
``sys.exit(0)``, raises RuntimeError or ValueError, or hangs fails a row and the report is still
written (exit 1); the must-fail twin bites on the cases the report ran, and a twin that cannot
run is an error. Runs at level quick on one case (false-fail rate <= rows x 1e-6 per report,
power >= 0.9 against TV >= 0.2)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from parity import misbehaving
from plugin import subjects

from specproof.audit.signatures import register, unregister
from specproof.commands.parity_report import main

VERIFIER = ["verifier", "--signature", "vllm", "--level", "quick", "--cases", "small-vocab"]
ENGINE = ["engine", "--tokens", "3", "--level", "quick"]
HERE = "parity.misbehaving"


@pytest.fixture(autouse=True)
def released() -> Iterator[None]:
    misbehaving.RELEASE.clear()
    misbehaving.BROKEN_AFTER_AUDIT.clear()
    yield
    misbehaving.RELEASE.set()  # the abandoned calls end


def report(tmp_path: Path, *argv: str) -> tuple[int, list[str]]:
    code = main([*argv, "--out", str(tmp_path)])
    written = tmp_path / "report.md"
    return code, written.read_text().splitlines() if written.exists() else []


@pytest.mark.parametrize(
    ("subject", "found"),
    [
        ("exits", "the subject called sys.exit(0)"),  # was exit 0, no report
        ("raises_runtime_error", "RuntimeError: the verifier's kernel failed"),  # was exit 3
        ("raises_value_error", "ValueError: the verifier refuses this batch"),  # was exit 2
    ],
)
def test_a_verifier_that_exits_or_raises_fails_a_row_of_a_written_report(
    tmp_path: Path, subject: str, found: str
) -> None:
    code, lines = report(tmp_path, *VERIFIER, f"{HERE}:{subject}")
    assert code == 1
    assert lines[0].startswith(f"# FAIL: {HERE}:{subject}: ")
    text = "\n".join(lines)
    assert found in text
    assert "no positions shown: the verifier broke case small-vocab" in text


def test_a_hanging_verifier_fails_the_timeout_row(tmp_path: Path) -> None:
    """Before: no --timeout, and the report never came."""
    code, lines = report(tmp_path, *VERIFIER, "--timeout", "0.5", f"{HERE}:hangs")
    assert code == 1
    assert any(line.startswith("| small-vocab | timeout |") for line in lines)


def test_the_redraw_of_the_positions_is_guarded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The verifier passes the audit, then raises on the redraw of the plotted positions: a
    FAIL row of its own (before: a traceback and exit 3, no report)."""
    import specproof.parity.run as run

    audited = run.verifier_outcome

    def then_break(*args: object, **kwargs: object) -> object:
        outcome = audited(*args, **kwargs)  # type: ignore[arg-type]
        misbehaving.BROKEN_AFTER_AUDIT.set()
        return outcome

    monkeypatch.setattr(run, "verifier_outcome", then_break)
    code, lines = report(tmp_path, *VERIFIER, f"{HERE}:good_then_raises")
    assert code == 1
    text = "\n".join(lines)
    assert "| small-vocab (positions) | runs |" in text
    assert "RuntimeError: broken on the redraw" in text


@pytest.mark.parametrize(
    ("factory", "check", "found"),
    [
        ("factory_exits", "factory", "raised SystemExit: the subject called sys.exit(0)"),
        ("factory_raises_runtime_error", "factory", "raised RuntimeError: no model here"),
        ("factory_raises_value_error", "factory", "raised ValueError: bad model path"),
        ("factory_returns_a_string", "factory", "returned str, not an Engine"),
    ],
)
def test_an_engine_factory_that_breaks_fails_a_row_of_a_written_report(
    tmp_path: Path, factory: str, check: str, found: str
) -> None:
    code, lines = report(tmp_path, *ENGINE, f"{HERE}:{factory}")
    assert code == 1
    assert lines[0] == f"# FAIL: {HERE}:{factory}: 1 of 1 rows failed"
    text = "\n".join(lines)
    assert f"| {HERE}:{factory} | {check} |" in text and found in text


def test_a_hanging_engine_factory_fails_the_timeout_row(tmp_path: Path) -> None:
    code, lines = report(tmp_path, *ENGINE, "--timeout", "0.5", f"{HERE}:factory_hangs")
    assert code == 1
    assert any(line.startswith(f"| {HERE}:factory_hangs | timeout |") for line in lines)


def test_a_hanging_generate_fails_the_timeout_row(tmp_path: Path) -> None:
    code, lines = report(tmp_path, *ENGINE, "--timeout", "0.5", f"{HERE}:generate_hangs")
    assert code == 1
    assert any(line.startswith("| hanging engine | timeout |") for line in lines)


def test_the_twin_runs_on_the_cases_of_the_report(tmp_path: Path) -> None:
    """A verifier blind to its target on p-equals-q: before, "# PASS" and exit 0."""
    argv = ["verifier", "--signature", "vllm", "--level", "quick", "--cases", "p-equals-q"]
    code, lines = report(tmp_path, *argv, "plugin.subjects:ignores_target")
    assert code == 1
    assert not lines[0].startswith("# PASS")


def test_a_twin_that_cannot_run_makes_the_report_an_error(tmp_path: Path) -> None:
    """Before: the twin's IndexError counted as "FAIL as required", "# PASS" and exit 0."""
    registered = register(subjects.TargetPastTheCall())
    try:
        argv = [*VERIFIER[:2], registered.name, *VERIFIER[3:]]
        code, lines = report(tmp_path, *argv, "specproof.subjects.examples:rejection_sample")
    finally:
        unregister(registered.name)
    assert code == 1
    assert lines[0].startswith(
        "# ERROR: specproof.subjects.examples:rejection_sample: its must-fail twin could not run"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([*VERIFIER, "--seed", "18446744073709551616"], "--seed must be in 0..2^62"),
        ([*VERIFIER, "--max-batch", "0"], "--max-batch must be >= 1"),
        ([*VERIFIER, "--timeout", "0"], "--timeout must be > 0"),
        ([*ENGINE, "--timeout", "nan"], "--timeout must be a finite number"),
    ],
)
def test_bad_options_are_usage_errors(
    tmp_path: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "specproof.subjects.examples:rejection_sample", "--out", str(tmp_path)])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([*VERIFIER[:-1], "p-equals-q,greedy"], "greedy"),
        ([*VERIFIER[:-1], ""], "--cases has an empty name"),
        ([*VERIFIER, "--plot-case", "no-such-case"], "unknown audit case(s): no-such-case"),
    ],
)
def test_bad_cases_are_usage_errors_before_any_call(
    tmp_path: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sig = argv.index("--signature")
    argv = [*argv[: sig + 1], "flashinfer", *argv[sig + 2 :]]
    code = main([*argv, f"{HERE}:exits", "--out", str(tmp_path / "r")])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_an_empty_out_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: --out '' wrote report.md into the current folder."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        main([*VERIFIER, "specproof.subjects.examples:rejection_sample", "--out", ""])
    assert exit_info.value.code == 2
    assert "argument --out: is empty: name a folder" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("out", ["", " "])
def test_golden_refuses_an_empty_out(
    out: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: specproof golden --out '' wrote its vectors into the current folder."""
    from specproof.commands.golden import main as golden

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        golden(["--out", out])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == "specproof golden: argument --out: is empty: name a folder (see --help)"
    assert list(tmp_path.iterdir()) == []
