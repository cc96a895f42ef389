"""Every e2e command answers --help (exit 0) before loading anything, and writes its JSON
result as it prints it."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from specproof.e2e.arguments import write_result

COMMANDS = [
    "run",
    "training.ship",
    "training.sweep",
    "evaluation.tau",
    "evaluation.held_out",
    "evaluation.draft_time",
    "evaluation.depth_draft_time",
    "evaluation.drafter_tau",
    "evaluation.ceiling",
    "evaluation.headline",
    "evaluation.scheduler_clocks",
    "evaluation.sts_claims",
    "evaluation.walk_cost",
    "evaluation.speed_sections",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_help_exits_zero(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    module = importlib.import_module(f"specproof.e2e.{command}")
    with pytest.raises(SystemExit) as stopped:
        module.main(["--help"])
    assert stopped.value.code == 0
    assert "usage:" in capsys.readouterr().out


def test_write_result_writes_the_text_it_returns(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    text = write_result({"tau": 2.5, "rows": [1, 2]}, out)
    assert out.read_text() == text
    assert json.loads(text) == {"tau": 2.5, "rows": [1, 2]}
    assert write_result({"tau": 2.5}, None) == '{\n "tau": 2.5\n}\n'
