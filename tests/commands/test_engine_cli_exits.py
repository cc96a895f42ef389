"""``specproof audit-engine``'s exit statuses: 2 and one line naming the argument for a usage
error, before the subject is run; 1 only when a row fails (a misbehaving subject is a FAIL row,
the table printed and the JSON written); 3 for specproof's own failure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specproof.commands.audit_engine import main

USAGE_ERROR, ROW_FAILED, INTERNAL_ERROR = 2, 1, 3

SUBJECT = """
import numpy as np
import torch

TABLE = torch.tensor([[0.5, 0.3, 0.2, 0.0], [0.1, 0.6, 0.2, 0.1],
                      [0.25, 0.25, 0.25, 0.25], [0.4, 0.0, 0.3, 0.3]])
CALLS = []

def target_probs(sequences):
    return TABLE[sequences]

def generate(prompt, num_new_tokens, seed):
    CALLS.append(seed)
    rng = np.random.default_rng(seed)
    out, last = [], prompt[-1]
    for _ in range(num_new_tokens):
        row = TABLE[last].double().numpy()
        last = int(rng.choice(4, p=row / row.sum()))
        out.append(last)
    return out

def hangs(prompt, num_new_tokens, seed):
    if seed == 4:
        import time
        time.sleep(3600)
    return generate(prompt, num_new_tokens, seed)

def raises(prompt, num_new_tokens, seed):
    if seed == 4:
        raise RuntimeError("engine broke")
    return generate(prompt, num_new_tokens, seed)
"""


@pytest.fixture
def subject(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    (tmp_path / "engine_cli_subject.py").write_text(SUBJECT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    module = importlib.import_module("engine_cli_subject")
    module.CALLS.clear()
    return module


def command(*extra: str, generate: str = "generate") -> list[str]:
    return [
        "--generate",
        f"engine_cli_subject:{generate}",
        "--target-probs",
        "engine_cli_subject:target_probs",
        "--prompt",
        "0",
        "--runs",
        "30",
        "--delta",
        "0.5",
        "--quiet",
        *extra,
    ]


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize(
    ("extra", "names"),
    [
        (["--json", "."], "--json"),  # a folder: was refused only after the run, with exit 1
        (["--json", "/sys/kernel/specproof-report.json"], "--json"),  # unwritable, even for root
        (["--prompt", "0,9"], "--prompt"),  # outside V = 4: was an IndexError traceback
        (["--eos", "9"], "--eos"),
        (["--eos", "-3"], "--eos"),
        (["--seed", "-1"], "--seed"),  # was refused only after the run
        (["--max-draft", "0"], "--max-draft"),
        (["--bins", "100000000000"], "--bins"),  # never returned
        (["--tokens", "100000000000"], "--tokens"),  # never returned
        (["--timeout", "0"], "--timeout"),
    ],
)
def test_usage_errors_exit_2_with_one_line_before_any_run(
    subject: object, extra: list[str], names: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        code = main(command(*extra))
        raise SystemExit(code)
    assert exit_info.value.code == USAGE_ERROR
    captured = capsys.readouterr()
    assert names in one_line(captured.err)
    assert captured.out == ""
    assert subject.CALLS == []  # type: ignore[attr-defined]


def test_a_subject_that_raises_exits_1_with_the_table_and_the_json(
    subject: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.json"
    code = main(command("--json", str(out), generate="raises"))
    assert code == ROW_FAILED
    printed = capsys.readouterr().out
    assert "run 4 raised RuntimeError: engine broke" in printed
    report = json.loads(out.read_text())
    assert [(r["check"], r["verdict"], r["n"]) for r in report["results"]] == [
        ("generate", "FAIL", 4)
    ]


@pytest.mark.slow  # a child process: torch's import alone takes seconds
def test_a_hanging_subject_ends_the_command_at_timeout_with_the_table(
    subject: object, tmp_path: Path
) -> None:
    """The hung call cannot be stopped; the command prints, writes and exits all the same."""
    import subprocess
    import sys

    out = tmp_path / "hang.json"
    argv = command("--timeout", "3", "--json", str(out), generate="hangs")
    result = subprocess.run(
        [sys.executable, "-m", "specproof.commands.cli", "audit-engine", *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == ROW_FAILED, result.stderr
    assert "generate run 4 still running at the time limit of 3 s" in result.stdout
    assert json.loads(out.read_text())["results"][0]["check"] == "timeout"


def test_specproof_failing_itself_exits_3_not_1(
    subject: object, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("a bug in the rows")

    monkeypatch.setattr("specproof.audit.engine.audit.support_row", broken)
    assert main(command()) == INTERNAL_ERROR
    assert "internal error" in capsys.readouterr().err
