"""Every e2e command answers --help (exit 0) before loading anything."""

from __future__ import annotations

import importlib

import pytest

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
