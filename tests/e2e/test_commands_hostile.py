"""The e2e commands against hostile arguments and files: usage errors are one line naming the
argument, exit 2, before the work; bad or truncated weights name the file and what is missing;
no message advises an option the command does not have; the sweep records what it scored."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from specproof.e2e.models.loading import SHIPPED_DIR, load_dspark, load_models, load_target
from specproof.e2e.models.weight_files import WeightsError, load_weights
from specproof.runners.e2e import run, sweep
from specproof.runners.e2e.experiments import draft_time, held_out, tau

USAGE_ERROR = 2


def exits_2_with_one_line(
    main: Callable[[list[str]], object], argv: list[str], capsys: pytest.CaptureFixture[str]
) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == USAGE_ERROR
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1, captured.err
    assert captured.out == ""
    return lines[0]


@pytest.mark.parametrize(
    ("main", "argv", "names"),
    [
        (held_out.main, ["--window", "0"], "--window"),  # printed NaN and exited 0
        (held_out.main, ["--window", "-3"], "--window"),
        (held_out.main, ["--batch", "0"], "--batch"),  # a torch traceback
        (held_out.main, ["--window", "100000"], "--window"),  # a shape traceback
        (run.main, ["--smoke", "--lossless-delta", "5"], "--lossless-delta"),  # after the run
        (run.main, ["--smoke", "--lossless-delta", "nan"], "--lossless-delta"),
        (run.main, ["--smoke", "--threads", "0"], "--threads"),
        (sweep.main, ["--layers", "0", "--rank", "1", "--d-ff", "8", "--out", "x"], "--layers"),
        (tau.main, ["--prompts", "8", "--out", "."], "--out"),  # failed after the whole table
    ],
)
def test_usage_errors_are_one_line_before_the_work(
    main: Callable[[list[str]], object],
    argv: list[str],
    names: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert names in exits_2_with_one_line(main, argv, capsys)


@pytest.fixture
def weights(tmp_path: Path) -> Path:
    folder = tmp_path / "weights"
    shutil.copytree(SHIPPED_DIR, folder)
    return folder


def test_a_truncated_file_is_named(weights: Path) -> None:
    path = weights / "dspark.safetensors"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(WeightsError, match=r"dspark\.safetensors: unreadable or truncated"):
        load_weights(weights, "dspark")


def test_a_missing_tensor_is_named_with_its_file(weights: Path) -> None:
    from safetensors.torch import load_file, safe_open, save_file

    path = weights / "eagle.safetensors"
    tensors = load_file(str(path))
    with safe_open(str(path), framework="pt") as handle:
        metadata = handle.metadata()
    dropped = sorted(tensors)[0]
    del tensors[dropped]
    save_file(tensors, str(path), metadata=metadata)
    with pytest.raises(WeightsError, match=rf"eagle\.safetensors: missing tensors {dropped}"):
        load_models(weights)


def test_a_file_without_its_config_is_named(weights: Path) -> None:
    from safetensors.torch import load_file, save_file

    path = weights / "target.safetensors"
    save_file(load_file(str(path)), str(path))
    with pytest.raises(WeightsError, match=r"target\.safetensors: no 'config'"):
        load_target(weights)


def test_no_message_advises_an_option_the_command_lacks(
    weights: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """tau said 'or pass --from-scratch', an option only the run command has."""
    (weights / "training.json").unlink()
    line = exits_2_with_one_line(tau.main, ["--weights", str(weights), "--prompts", "8"], capsys)
    assert "training.json" in line and "--from-scratch" not in line
    line = exits_2_with_one_line(run.main, ["--weights", str(weights)], capsys)
    assert "--from-scratch" in line


def test_bad_weights_are_a_usage_error_naming_the_file(
    weights: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = weights / "dspark.safetensors"
    path.write_bytes(path.read_bytes()[:100])
    line = exits_2_with_one_line(draft_time.main, [str(weights)], capsys)
    assert "dspark.safetensors" in line


def test_the_sweep_scores_only_the_drafter_it_was_asked_for(
    weights: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--score-only used to score whatever drafter --out held and record the command line's
    configuration as its own."""
    shipped = load_dspark(weights, load_target(weights)).config
    wrong = shipped.n_layers + 1
    argv = ["--score-only", "--out", str(weights), "--rank", str(shipped.rank)]
    argv += ["--layers", str(wrong), "--d-ff", str(shipped.d_ff)]
    line = exits_2_with_one_line(sweep.main, argv, capsys)
    assert "--score-only" in line and f"'n_layers': {shipped.n_layers}" in line
