"""The several-drafter tau comparison: slot acceptance counts, and the shipped pair reproduces
``specproof.runners.e2e.experiments.tau`` on the same prompts."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from specproof.e2e.decoding.rounds import DecodeResult, RoundLog
from specproof.e2e.models.loading import SHIPPED_DIR, load_models
from specproof.runners.e2e.experiments.drafter_tau import EAGLE, comparison, main, slot_acceptance
from specproof.runners.e2e.experiments.tau import tau_table


def test_slot_acceptance_counts_reached_and_passed_slots() -> None:
    # chunk 1: rounds accepting 2 of 3 and 0 of 3; chunk 2: one round accepting 3 of 3.
    first = DecodeResult([[]], [RoundLog([3], [2], None), RoundLog([3], [0], None)])
    second = DecodeResult([[]], [RoundLog([3], [3], None)])
    result = slot_acceptance([first, second], 3, resamples=200, seed=0)
    # slot 1 reached 3 times, passed 2; slot 2 reached 2, passed 2; slot 3 reached 2, passed 1
    assert result["reached"] == [3, 2, 2]
    assert result["acceptance"] == pytest.approx([2 / 3, 1.0, 0.5])
    for low, point, high in zip(result["low"], result["acceptance"], result["high"], strict=True):
        assert low <= point <= high
    # resamples of the first chunk alone give slot 1 acceptance 1/2, of the second alone 1
    assert result["low"][0] == pytest.approx(0.5) and result["high"][0] == pytest.approx(1.0)


def test_the_shipped_pair_reproduces_the_tau_command() -> None:
    torch.set_num_threads(1)
    models = load_models(SHIPPED_DIR)
    drafters = {"shipped": models.dspark, EAGLE: models.eagle}
    table = comparison(models.target, drafters, prompts=8, new_tokens=8)
    reference = tau_table(models, prompts=8, new_tokens=8)["tau"]
    assert set(table) == set(reference)
    for key, row in table.items():
        assert row["tau"]["shipped"] == reference[key]["dspark"]
        assert row["tau"][EAGLE] == reference[key]["eagle"]
        assert row["minus_eagle3"]["shipped"] == reference[key]["dspark_minus_eagle"]
        assert len(row["slot_acceptance"]["shipped"]["acceptance"]) == 7


@pytest.mark.parametrize(
    "argv",
    [
        ["shipped"],
        [f"{EAGLE}={SHIPPED_DIR}"],
        [f"a={SHIPPED_DIR}", f"a={SHIPPED_DIR}"],
        [f"a={SHIPPED_DIR}", "--prompts", "4"],
    ],
)
def test_bad_arguments_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_a_drafter_of_another_target_or_no_drafter_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "target.safetensors").write_bytes(b"not the shipped target")
    with pytest.raises(SystemExit) as exit_info:
        main([f"other={other}"])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "other" in error and "target.safetensors" in error
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SystemExit) as exit_info:
        main([f"empty={empty}"])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "empty" in error and "dspark" in error
