"""The learning-curve command's resume logic on a toy run: an interrupted run, rerun, ends with
the same checkpoints and the same measurements as an uninterrupted one, bit for bit (same
process, same thread count: every step draws from generators the checkpoint restores)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import specproof.runners.e2e.experiments.learning_curves as curves
from specproof.e2e.models.target import Target, TargetConfig
from specproof.e2e.plans import SUBWORD_SMOKE

VOCAB = 48
PLAN = replace(
    SUBWORD_SMOKE,
    target=TargetConfig(
        vocab=VOCAB, d_model=16, n_layers=3, n_heads=2, d_ff=32, max_len=40, feature_layers=(0, 1)
    ),
    dspark=replace(SUBWORD_SMOKE.dspark, d_ff=32, rank=4),
    dflash=replace(SUBWORD_SMOKE.dflash, d_ff=32, rank=4),
    eagle=replace(SUBWORD_SMOKE.eagle, d_ff=32),
    window=16,
    new_tokens=4,
    temperatures=(1.0,),
)
STEPS = (2, 4)
SEEDS = (0, 1)
NEWLINE = 2


def toy_data() -> curves.CurveData:
    rng = np.random.default_rng(0)
    train = {d: rng.integers(2, VOCAB, 400).astype(np.int32) for d in ("code", "math")}
    prompts = {d: [list(rng.integers(2, VOCAB, 6)) for _ in range(4)] for d in ("code", "math")}
    return curves.CurveData(
        train, {d: [[int(t) for t in p] for p in ps] for d, ps in prompts.items()}
    )


def toy_target() -> Target:
    torch.manual_seed(0)
    target = Target(PLAN.target).eval()
    with torch.no_grad():
        target.head.weight.mul_(20.0)  # laws far from uniform, so tau varies
    return target


def run(out: Path) -> dict[str, Any]:
    torch.set_num_threads(1)
    return curves.run_curves(
        toy_target(), toy_data(), PLAN, curves.DRAFTERS, SEEDS, STEPS, out, log=lambda _: None
    )


def measurements(result: dict[str, Any]) -> dict[str, Any]:
    """What must not depend on interruption: every step's tau table and the comparisons."""
    return {
        "runs": {
            key: {step: point["tau"] for step, point in run["checkpoints"].items()}
            for key, run in result["runs"].items()
        },
        "comparisons": result["comparisons"],
    }


def checkpoints(out: Path) -> dict[str, dict[str, torch.Tensor]]:
    return {
        path.name: torch.load(path, weights_only=True)["module"]
        for path in sorted((out / "checkpoints").glob("*.pt"))
    }


class Interrupt(Exception):
    pass


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("whole")
    return out, run(out)


def test_a_whole_run_records_every_checkpoint(uninterrupted: tuple[Path, dict[str, Any]]) -> None:
    out, result = uninterrupted
    assert sorted(result["runs"]) == sorted(
        curves.run_key(d, s) for d in curves.DRAFTERS for s in SEEDS
    )
    for run_ in result["runs"].values():
        assert sorted(run_["checkpoints"], key=int) == [str(s) for s in STEPS]
        for point in run_["checkpoints"].values():
            for cell in point["tau"].values():
                rows = np.array(cell["by_chunk"])
                assert rows.shape == (2, 2)  # two chunks of two prompts
                assert cell["tau"] == pytest.approx(rows[:, 0].sum() / rows[:, 1].sum())
                low, high = cell["interval_95"]
                assert low <= cell["mean_chunk_tau"] <= high
    assert len(result["comparisons"]) == 2 * len(STEPS) * 2  # pairs x steps x domains
    assert result["holm"]["family"] == curves.FAMILY
    assert (out / curves.RESULT_FILE).is_file()
    # Training moved the weights: tau is not constant over steps and drafters.
    taus = {
        c["tau"]
        for r in result["runs"].values()
        for p in r["checkpoints"].values()
        for c in p["tau"].values()
    }
    assert len(taus) > 1


@pytest.mark.parametrize("where", ["training", "measuring"])
def test_an_interrupted_run_resumes_to_the_same_result(
    uninterrupted: tuple[Path, dict[str, Any]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    where: str,
) -> None:
    """Interrupted while DFlash seed 1 trains from step 2 to 4 ("training": its step-2
    checkpoint and measurement are kept, steps 3-4 are lost), or after its step-4 checkpoint
    is written but before step 4 is measured ("measuring")."""
    whole_out, whole = uninterrupted
    calls = {"n": 0}
    original_train, original_measure = curves.train_steps, curves.measure_tau

    def train_steps(name: str, *args: Any, **kwargs: Any) -> dict[str, float]:
        if where == "training" and name == "dflash/seed1" and args[-3] == 2 and not calls["n"]:
            calls["n"] += 1
            original_train(name, *args[:-3], 2, 3, args[-1])  # a step that is then lost
            raise Interrupt
        return original_train(name, *args, **kwargs)

    def measure_tau(target: Any, drafter: Any, data: Any, plan: Any) -> dict[str, Any]:
        if where == "measuring" and not calls["n"]:
            saved = tmp_path / "checkpoints" / "dflash-seed1.pt"
            if saved.is_file() and torch.load(saved, weights_only=True)["step"] == 4:
                calls["n"] += 1
                raise Interrupt
        return original_measure(target, drafter, data, plan)

    monkeypatch.setattr(curves, "train_steps", train_steps)
    monkeypatch.setattr(curves, "measure_tau", measure_tau)
    with pytest.raises(Interrupt):
        run(tmp_path)
    assert calls["n"] == 1
    partial = curves.json.loads((tmp_path / curves.RESULT_FILE).read_text())
    assert "4" not in partial["runs"]["dflash/seed1"]["checkpoints"]
    assert "2" in partial["runs"]["dflash/seed1"]["checkpoints"]
    assert "eagle3/seed0" not in partial["runs"]
    resumed = run(tmp_path)
    assert measurements(resumed) == measurements(whole)
    ours, theirs = checkpoints(tmp_path), checkpoints(whole_out)
    assert sorted(ours) == sorted(theirs) and len(ours) == len(curves.DRAFTERS) * len(SEEDS)
    for name, tensors in theirs.items():
        assert tensors.keys() == ours[name].keys()
        for key, tensor in tensors.items():
            assert torch.equal(ours[name][key], tensor), (name, key)


def test_a_finished_run_is_not_retrained(
    uninterrupted: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    out, whole = uninterrupted

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a finished run trained again")

    monkeypatch.setattr(curves, "train_steps", refuse)
    monkeypatch.setattr(curves, "measure_tau", refuse)
    assert measurements(run(out)) == measurements(whole)


def test_other_settings_in_the_same_folder_are_refused(
    uninterrupted: tuple[Path, dict[str, Any]],
) -> None:
    out, _ = uninterrupted
    with pytest.raises(ValueError, match="other settings"):
        curves.run_curves(
            toy_target(),
            toy_data(),
            replace(PLAN, new_tokens=PLAN.new_tokens + 1),
            curves.DRAFTERS,
            SEEDS,
            STEPS,
            out,
            log=print,
        )


def test_separate_invocations_per_drafter_and_seed_make_one_result(
    uninterrupted: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """What ``nox -s train-subword`` does: one call per drafter x seed, then one for all."""
    _, whole = uninterrupted
    torch.set_num_threads(1)
    for drafter in curves.DRAFTERS:
        for seed in SEEDS:
            curves.run_curves(
                toy_target(), toy_data(), PLAN, [drafter], [seed], STEPS, tmp_path, lambda _: None
            )
    assert measurements(run(tmp_path)) == measurements(whole)
