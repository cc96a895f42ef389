"""The e2e commands check every input file and output path before the work: one line naming
the file and what is wrong, exit 2 (each of these was a traceback, some after 26-28 s of work,
or read the shipped weights instead of the folder given)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from specproof.e2e.models.loading import SHIPPED_DIR
from specproof.runners.e2e import sweep
from specproof.runners.e2e import train_target as ship
from specproof.runners.e2e.experiments import (
    draft_time,
    drafter_tau,
    headline,
    scheduler_clocks,
    sts_claims,
)
from specproof.runners.e2e.report.__main__ import main as report_main
from specproof.sections import section_markers

USAGE_ERROR = 2


def one_line_exit_2(
    main: Callable[[list[str]], object], argv: list[str], capsys: pytest.CaptureFixture[str]
) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == USAGE_ERROR
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


@pytest.mark.parametrize("main", [headline.main, scheduler_clocks.main], ids=["headline", "clocks"])
def test_a_markdown_path_in_a_missing_folder_is_refused_before_the_work(
    main: Callable[[list[str]], object], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "missing" / "BENCHMARKS.md"
    argv = ["--out", str(tmp_path / "out.json"), "--markdown", str(target)]
    line = one_line_exit_2(main, argv, capsys)
    assert "--markdown" in line and "no folder" in line


@pytest.mark.parametrize(
    ("text", "words"),
    [("{not json", "is not JSON"), ("[1, 2]", "JSON list, not an object"),
     ('{"training": 3}', "'training' is not an object")],
)  # fmt: skip
def test_drafter_tau_names_a_training_json_it_cannot_read(
    text: str, words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "drafter"
    folder.mkdir()
    (folder / "training.json").write_text(text)
    line = one_line_exit_2(drafter_tau.main, [f"mine={folder}"], capsys)
    assert "training.json" in line and words in line


@pytest.mark.parametrize(
    ("held_out", "words"),
    [
        ({}, "no '1' entry"),
        ({"1": {"blocks": 3, "by_position": [{"position": 1}]}}, "change_high"),
        (
            {
                "1": {"blocks": 3, "by_position": []},
                "0": {"blocks": 3, "by_position": [{"position": 2, "change": "x",
                                                    "change_low": 0, "change_high": 1}]},
            },
            "not a number",
        ),
    ],
)  # fmt: skip
def test_sts_claims_names_what_its_held_out_file_lacks(
    held_out: object, words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "e2e.json"
    path.write_text(json.dumps({"sts_held_out": held_out}))
    line = one_line_exit_2(sts_claims.main, ["--json", str(path)], capsys)
    assert str(path) in line and words in line
    path.write_text("{}")
    assert "sts_held_out" in one_line_exit_2(sts_claims.main, ["--json", str(path)], capsys)


def test_sweep_refuses_an_out_that_cannot_be_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    argv = ["--layers", "1", "--rank", "2", "--d-ff", "8", "--out", str(blocker / "sweep")]
    line = one_line_exit_2(sweep.main, argv, capsys)
    assert "--out" in line and "cannot be created" in line


def test_draft_time_reads_the_folder_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It loaded the shipped target whatever folder it was given (where the shipped folder
    lacks it, a traceback naming a file there); the target read is the folder's own."""
    empty = tmp_path / "empty"
    empty.mkdir()
    line = one_line_exit_2(draft_time.main, [str(empty)], capsys)
    assert str(empty / "target.safetensors") in line and str(SHIPPED_DIR) not in line


@pytest.fixture
def weights(tmp_path: Path) -> Path:
    folder = tmp_path / "weights"
    shutil.copytree(SHIPPED_DIR, folder)
    return folder


def test_ship_refuses_stages_whose_inputs_are_missing_or_corrupt(
    weights: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    line = one_line_exit_2(ship.main, ["--out", str(empty), "--stages", "dspark"], capsys)
    assert "--out" in line and "target" in line
    (weights / "pool.pt").write_bytes(b"not a pool")
    line = one_line_exit_2(ship.main, ["--out", str(weights), "--stages", "dspark"], capsys)
    assert "pool.pt" in line


def test_report_refuses_results_without_a_plan_and_misplaced_markers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "e2e.json"
    results.write_text(json.dumps({"tau": {}}))
    markdown = tmp_path / "BENCHMARKS.md"
    argv = [str(results), "--markdown", str(markdown)]
    assert "'plan'" in one_line_exit_2(report_main, argv, capsys)
    begin, end = section_markers("e2e")
    markdown.write_text(f"# Benchmarks\n\n{end}\nold\n{begin}\n")
    assert "end marker comes before" in one_line_exit_2(report_main, argv, capsys)
