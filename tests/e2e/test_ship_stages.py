"""Training the shipped models in stages (separate calls, drafters in either order) gives the
same weights as one sequential run: each stage seeds its own initialisation."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from specproof.e2e.models.loading import SHIPPED_DIR
from specproof.e2e.models.weight_files import load_weights
from specproof.e2e.plans import SMOKE
from specproof.e2e.training.ship import POOL_FILE, train_models
from specproof.runners.e2e.train_target import main

TINY = replace(
    SMOKE,
    target_steps=2,
    target_batch=2,
    target_lr=1e-3,
    drafter_steps=2,
    drafter_batch=2,
    drafter_lr=1e-3,
    window=24,
    anchors_per_window=4,
    pool_size=4,
    pool_prefix=4,
)


def test_stages_train_the_weights_of_one_sequential_run(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    log = lambda _: None  # noqa: E731
    whole, staged = tmp_path / "whole", tmp_path / "staged"
    report = train_models(TINY, whole, seed=3, log=log)
    train_models(TINY, staged, seed=3, stages=["target", "pool"], log=log)
    train_models(TINY, staged, seed=3, stages=["eagle"], log=log)
    merged = train_models(TINY, staged, seed=3, stages=["dspark"], log=log)
    for name in ("target", "dspark", "eagle"):
        a, _ = load_weights(whole, name)
        b, _ = load_weights(staged, name)
        assert a.keys() == b.keys()
        assert all(torch.equal(a[k], b[k]) for k in a), name
    for key in ("target", "dspark", "eagle", "pool_windows"):
        assert key in report["training"] and key in merged["training"]
    assert merged["held_out_statistics"] == report["held_out_statistics"]


def test_drafter_steps_reach_the_drafter_stage(tmp_path: Path) -> None:
    for name in ("target.safetensors", POOL_FILE):
        shutil.copy(SHIPPED_DIR / name, tmp_path / name)
    args = ["--out", str(tmp_path), "--threads", "1", "--stages", "eagle", "--drafter-steps", "1"]
    report = main(args)
    assert report["training"]["eagle"]["steps"] == 1


def test_drafter_steps_reach_both_child_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    launched: list[list[str]] = []

    class Finished:
        def __init__(self, args: list[str]) -> None:
            launched.append(args)

        def wait(self) -> int:
            return 0

    monkeypatch.setattr(subprocess, "Popen", Finished)
    for name in ("target.safetensors", "pool.pt"):  # what the drafter stages read, checked first
        shutil.copy(SHIPPED_DIR / name, tmp_path / name)
    main(["--out", str(tmp_path), "--stages", "dspark", "eagle", "--drafter-steps", "7"])
    assert len(launched) == 2
    for args in launched:
        assert args[args.index("--drafter-steps") + 1] == "7"
        assert args[args.index("--out") + 1] == str(tmp_path)


def test_drafter_steps_below_one_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        main(["--drafter-steps", "0", "--stages", "eagle", "--out", str(tmp_path)])
    assert not any(tmp_path.iterdir())
