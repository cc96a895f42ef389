"""``specproof audit`` against verifiers that misbehave: every count is a count of rows
returned, a verifier that raises or returns None in the repeated-call rows is a FAIL row (the
table still printed), float ids are not read as ints, exact-law work is bounded before it
starts, and the exit status follows the rule of :mod:`specproof.commands.command_rules`."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from specproof.audit.audit_settings import AuditSettings
from specproof.audit.calls import audit_calls
from specproof.audit.cases import calls_problem, verifier_problems
from specproof.audit.hunt import hunt_case, hunt_cases
from specproof.audit.run import audit_verifier
from specproof.audit.settings import ErrorRates, HuntSettings
from specproof.commands.audit import main
from specproof.subjects import examples

USAGE_ERROR, ROW_FAILED, INTERNAL_ERROR = 2, 1, 3


def half_the_rows(*args: Any, **kwargs: Any) -> torch.Tensor:
    """A correct verifier that answers only the first half of the requests."""
    out = examples.chain_speculative_sampling(*args, **kwargs)
    out = out[0] if isinstance(out, tuple | list) else out
    return out[: max(1, out.shape[0] // 2)]


def test_the_hunt_counts_rows_returned_not_rounds_asked() -> None:
    """It used to report 2,000 rounds checked (and pass) for 1,000 rows returned."""
    settings = AuditSettings.of("flashinfer", hunt=HuntSettings(2000, batch=1000))
    row = hunt_case(half_the_rows, hunt_cases()[0], settings)
    assert row.verdict == "FAIL"
    assert "returned 500 rows for 1000 requests" in row.summary
    assert row.n == 0


@pytest.mark.parametrize(
    "answer",
    [lambda out: out.float() + 0.4, lambda out: out.double()],
    ids=["float", "integral-float"],
)
def test_float_ids_are_not_read_as_ints(answer: Any) -> None:
    """2.4 used to be read as 2: a float verifier passed the hunt and the battery."""

    def floats(*args: Any, **kwargs: Any) -> torch.Tensor:
        out = examples.chain_speculative_sampling(*args, **kwargs)
        return answer(out[0] if isinstance(out, tuple | list) else out)  # type: ignore[no-any-return]

    settings = AuditSettings.of("flashinfer", hunt=HuntSettings(100, batch=100))
    hunted = hunt_case(floats, hunt_cases()[0], settings)
    assert hunted.verdict == "FAIL" and "not integer token ids" in hunted.summary
    small = [p for p in verifier_problems() if p.name == "small-vocab"]
    report = audit_verifier(floats, "flashinfer", problems=small, calls=False, delta=0.5)
    assert not report.passed
    assert "not integer token ids" in report.results[0].detail


def raising_on_call(number: int, error: Exception | None) -> Any:
    """A correct verifier until its ``number``-th call, which raises ``error`` (None: returns
    None)."""
    calls: list[int] = []

    def verifier(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == number:
            if error is None:
                return None
            raise error
        return examples.chain_speculative_sampling(*args, **kwargs)

    return verifier


@pytest.mark.parametrize(
    "error", [RuntimeError("broke"), ValueError("bad"), None], ids=["raises", "value", "none"]
)
@pytest.mark.parametrize("call", [1, 2])  # the two unseeded calls
def test_the_calls_rows_fail_a_verifier_that_raises_or_returns_none(
    call: int, error: Exception | None
) -> None:
    """These used to end the audit with a traceback (exit 1) or as a usage error (exit 2)."""
    settings = AuditSettings.of("flashinfer", rates=ErrorRates(alpha=1e-6, beta=1e-4, delta=0.5))
    verifier = raising_on_call(call, error)
    rows = audit_calls(verifier, calls_problem(settings.signature), settings)
    assert rows and rows[0].verdict == "FAIL", rows
    assert rows[0].case == "calls"


def test_a_long_vocab_between_4_and_64_is_binned_not_enumerated() -> None:
    """--long-vocab 4 enumerated 4^9 paths in Fractions (minutes); 16 never finished."""
    from specproof.audit.laws import tokens_law

    for vocab in (4, 16, 64):
        problem = verifier_problems(0, 50_257, vocab)[-1]
        assert problem.name == "large-vocab-long" and problem.vocab == vocab
        start = time.monotonic()
        law = tokens_law(problem)
        assert time.monotonic() - start < 10
        assert sum(law.values()) == pytest.approx(1.0)
        assert max(max(key) for key in law) < 3  # three hash bins


def test_exact_law_work_is_refused_before_it_starts_with_its_size() -> None:
    from specproof.audit.laws import MAX_LAW_PATHS, law_paths
    from specproof.audit.problems import TableProblem

    wide = verifier_problems(0, 50_257, 64)[0]  # small-vocab, to widen
    import numpy as np

    rows = np.full((9, 2, 40), 1 / 40)
    problem = TableProblem("wide", rows, rows[:8], description="V = 40, 9 tokens, unbinned")
    assert law_paths(problem) > MAX_LAW_PATHS
    assert law_paths(wide) <= MAX_LAW_PATHS
    from specproof.audit.laws import check_enumerable

    with pytest.raises(ValueError, match=r"40\^9"):
        check_enumerable(problem)


VERIFIER = "specproof.subjects.examples:chain_speculative_sampling"


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize(
    ("extra", "names"),
    [
        (["--json", "."], "--json"),  # a folder: refused after the run, with exit 1
        (["--json", "/sys/kernel/specproof-report.json"], "--json"),
        (["--alpha", "2"], "alpha"),
        (["--hunt", "0"], "--hunt"),
    ],
)
def test_usage_errors_exit_2_with_one_line_before_the_run(
    extra: list[str], names: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        raise SystemExit(main([VERIFIER, "--signature", "flashinfer", "--quiet", *extra]))
    assert exit_info.value.code == USAGE_ERROR
    captured = capsys.readouterr()
    assert names in one_line(captured.err) and captured.out == ""


def test_a_verifier_raising_in_the_calls_rows_exits_1_with_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The repeated-call rows come after the battery; a ValueError there was exit 2 (usage
    error) and the table of the battery was lost."""
    (tmp_path / "hostile_calls_subject.py").write_text(
        "from specproof.subjects import examples\n"
        "from specproof.audit.calls import rows_needed\n"
        "from specproof.audit.settings import ErrorRates\n"
        "BATCH = rows_needed(ErrorRates(alpha=1e-6, beta=1e-4, delta=0.5))\n"
        "def verify(*args, **kwargs):\n"
        "    if args[1].shape[0] == BATCH:\n"
        "        raise ValueError('no more')\n"
        "    return examples.chain_speculative_sampling(*args, **kwargs)\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    small = [p for p in verifier_problems() if p.name == "small-vocab"]
    monkeypatch.setattr("specproof.commands.audit.verifier_problems", lambda *a: small)
    out = tmp_path / "report.json"
    argv = ["hostile_calls_subject:verify", "--signature", "flashinfer", "--quiet", "--no-hunt"]
    code = main([*argv, "--delta", "0.5", "--json", str(out)])
    assert code == ROW_FAILED
    printed = capsys.readouterr().out
    assert "small-vocab" in printed and "ValueError: no more" in printed
    rows = json.loads(out.read_text())["results"]
    assert rows[0]["case"] == "small-vocab" and rows[0]["verdict"] == "pass"
    assert rows[-1]["case"] == "calls" and rows[-1]["verdict"] == "FAIL"


def test_the_tools_own_failure_exits_3(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("a bug in the battery")

    monkeypatch.setattr("specproof.commands.audit.audit", broken)
    code = main([VERIFIER, "--signature", "flashinfer", "--quiet", "--no-hunt"])
    assert code == INTERNAL_ERROR
    assert "internal error" in capsys.readouterr().err
