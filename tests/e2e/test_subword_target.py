"""The sub-word target's trainer on a toy plan: what it writes loads as a target, and a run
interrupted after a checkpoint, rerun, writes the same weights as an uninterrupted one."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

import specproof.e2e.training.subword_target as trainer
from specproof.e2e.models.loading import load_target
from specproof.e2e.models.target import TargetConfig
from specproof.e2e.plans import SUBWORD_SMOKE

PLAN = replace(
    SUBWORD_SMOKE,
    target=TargetConfig(
        vocab=48, d_model=16, n_layers=3, n_heads=2, d_ff=32, max_len=40, feature_layers=(0, 1)
    ),
    target_steps=6,
    window=16,
)


def streams(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {d: rng.integers(2, 48, 300).astype(np.int32) for d in ("code", "prose", "math")}


def train(out: Path) -> dict[str, object]:
    torch.set_num_threads(1)
    return trainer.train_subword_target(
        PLAN, streams(0), streams(1), out, seed=0, checkpoint_every=2, log=lambda _: None
    )


class Interrupt(Exception):
    pass


def test_an_interrupted_target_run_resumes_to_the_same_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = tmp_path / "whole"
    report = train(whole)
    target = load_target(whole)
    assert target.config == PLAN.target
    recorded = json.loads((whole / "training.json").read_text())
    assert recorded["target"]["steps"] == 6 and recorded == json.loads(json.dumps(report))
    assert set(recorded["target"]["held_out_bits_per_token"]) == {"code", "prose", "math"}

    interrupted = tmp_path / "interrupted"
    original = trainer.train_steps

    def stop_at_four(name: str, *args: object) -> dict[str, float]:
        if args[-3] == 4:  # start of the third stretch: steps 0-3 are checkpointed
            raise Interrupt
        return original(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(trainer, "train_steps", stop_at_four)
    with pytest.raises(Interrupt):
        train(interrupted)
    assert not (interrupted / "target.safetensors").exists()
    monkeypatch.setattr(trainer, "train_steps", original)
    train(interrupted)
    resumed = load_target(interrupted)
    for (name, tensor), (_, other) in zip(
        target.state_dict().items(), resumed.state_dict().items(), strict=True
    ):
        assert torch.equal(tensor, other), name
