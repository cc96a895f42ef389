"""The main job: `specproof matrix` and its JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from specproof.commands.cli import main


@pytest.fixture(scope="module")
def matrix_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict]:
    """One run of the console command: (what it printed, the JSON it wrote)."""
    path = tmp_path_factory.mktemp("matrix") / "matrix.json"
    printed = subprocess.run(
        [sys.executable, "-m", "specproof.commands.cli", "matrix", "--json", str(path), "--quiet"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return printed, json.loads(path.read_text())


@pytest.fixture(scope="module")
def matrix_json(matrix_run: tuple[str, dict]) -> dict:
    return matrix_run[1]


def test_json_keys_and_appendix_a(matrix_json: dict[str, object]) -> None:
    assert {"rules", "schedulers", "cells", "appendix_a"} <= set(matrix_json)
    assert matrix_json["appendix_a"] == {
        "global_search": {"A": "17/20", "B": "3/20"},
        "with_break": {"A": "7/10", "B": "3/10"},
    }


def test_causal_cells_are_exact_and_lookahead_cells_are_not(matrix_json: dict) -> None:
    cells, causal = matrix_json["cells"], matrix_json["causal"]
    for rule in matrix_json["rules"]:
        for scheduler in matrix_json["schedulers"]:
            tv = cells[rule][scheduler]
            assert tv is None or Fraction(tv) >= 0
            if causal[scheduler]:
                assert tv == "0/1", f"{rule} x {scheduler}: TV {tv}"
    # Random drafts leak into admission under lookahead; deterministic (tree) or greedy cannot.
    for rule in ("chain", "specinfer(chains=2)", "block"):
        assert Fraction(cells[rule]["global-search"]) > 0
        assert Fraction(cells[rule]["token-gated(1/3)"]) > 0


def test_reference_imports_no_torch_or_triton() -> None:
    code = (
        "import sys, specproof.reference as r; "
        "bad = {'torch', 'triton', 'scipy'} & set(sys.modules); "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_console_command_prints_the_matrix(matrix_run: tuple[str, dict]) -> None:
    printed = matrix_run[0]
    assert "Lossless matrix" in printed and "P(A) = 17/20" in printed and "P(A) = 7/10" in printed


def test_unknown_command_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["nonsense"])
    assert exit_info.value.code == 2


def test_readme_shows_what_the_command_prints(matrix_run: tuple[str, dict]) -> None:
    """The README's matrix excerpt is the command's real output (its timing line aside)."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    excerpt = readme.split("$ specproof matrix --quiet\n", 1)[1].split("```", 1)[0]
    printed = [line for line in matrix_run[0].rstrip("\n").split("\n") if "wrote" not in line]
    assert printed[-1].startswith("computed exactly in")
    assert excerpt.rstrip("\n") == "\n".join(printed[:-1]).rstrip("\n")
