"""Every e2e command answers --help (exit 0) before loading anything, and writes its JSON
result as it prints it."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from specproof.commands.command_rules import write_result

COMMANDS = [
    "run",
    "train_target",
    "sweep",
    "train_subword_target",
    "subword_tokenizer",
    "smollm2_data",
    "experiments.tau",
    "experiments.held_out",
    "experiments.draft_time",
    "experiments.depth_draft_time",
    "experiments.drafter_tau",
    "experiments.ceiling",
    "experiments.headline",
    "experiments.scheduler_clocks",
    "experiments.scheduler_clocks_retimed",
    "experiments.sts_claims",
    "experiments.walk_cost",
    "experiments.learning_curves",
    "experiments.step_time",
    "experiments.smollm2_target",
    "experiments.smollm2_curves",
    "report.headline_and_clocks",
    "report.__main__",
]
E2E = Path(__file__).resolve().parents[2] / "specproof" / "runners" / "e2e"


def test_the_commands_are_every_e2e_module_with_a_main_guard() -> None:
    """A new e2e command (a module run as ``python -m``) joins ``COMMANDS``, so its --help is
    tested; no module of the e2e machinery (``specproof/e2e``) is a command."""
    guarded = {
        ".".join(path.relative_to(E2E).with_suffix("").parts)
        for path in E2E.rglob("*.py")
        if 'if __name__ == "__main__":' in path.read_text()
    }
    assert guarded == set(COMMANDS)
    machinery = Path(__file__).resolve().parents[2] / "specproof" / "e2e"
    assert not [path.name for path in machinery.rglob("*.py") if "__main__" in path.read_text()]


@pytest.mark.parametrize("command", COMMANDS)
def test_help_exits_zero(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    module = importlib.import_module(f"specproof.runners.e2e.{command}")
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
