"""The three models of a run: trained from scratch within a budget, or the shipped weights."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .data import DOMAIN_WEIGHTS, Corpus, WindowSampler
from .drafters import DSparkConfig, DSparkDrafter, EagleConfig, EagleDrafter
from .target import Target, TargetConfig, parameter_count
from .train import (
    MixedSource,
    TrainSettings,
    generate_pool,
    train_dspark,
    train_eagle,
    train_target,
)
from .weights import load_weights, save_weights

if TYPE_CHECKING:
    from .plans import Plan


def load_target(directory: Path) -> Target:
    tensors, config = load_weights(directory, "target")
    target = Target(TargetConfig.from_dict(config))
    target.load_state_dict(tensors)
    return target.eval()


def load_dspark(directory: Path, target: Target) -> DSparkDrafter:
    tensors, config = load_weights(directory, "dspark")
    drafter = DSparkDrafter(target, DSparkConfig.from_dict(config))
    drafter.load_state_dict(tensors)
    return drafter.eval()


def load_eagle(directory: Path, target: Target) -> EagleDrafter:
    tensors, config = load_weights(directory, "eagle")
    drafter = EagleDrafter(target, EagleConfig.from_dict(config))
    drafter.load_state_dict(tensors)
    return drafter.eval()


@dataclass
class Models:
    target: Target
    dspark: DSparkDrafter
    eagle: EagleDrafter
    training: dict[str, Any]
    source: str


def train_from_scratch(
    plan: Plan, budget: float, artifacts: Path, corpora: dict[str, Corpus], seed: int
) -> Models:
    """Train all three models within the budget's shares, save them and load them back."""
    train_sampler = WindowSampler(
        {k: c.stream("train") for k, c in corpora.items()}, DOMAIN_WEIGHTS, seed
    )
    target = Target(plan.target)
    print(f"target: {parameter_count(target)} parameters")
    target_report = train_target(
        target,
        train_sampler,
        TrainSettings(budget * plan.target_share, plan.target_batch, plan.window, plan.target_lr),
    )
    save_weights(target, plan.target.as_dict(), artifacts, "target")
    target = load_target(artifacts)
    pool_started = time.perf_counter()
    pool = generate_pool(
        target, train_sampler, plan.pool_size, plan.pool_prefix, plan.window, (1.0, 0.0), seed
    )
    pool_seconds = time.perf_counter() - pool_started
    print(f"{len(pool)} target-written windows in {pool_seconds:.0f}s")
    drafter_seconds = budget * plan.drafter_share

    def source() -> MixedSource:
        return MixedSource(
            WindowSampler({k: c.stream("train") for k, c in corpora.items()}, DOMAIN_WEIGHTS, seed),
            pool,
            seed,
        )

    settings = TrainSettings(drafter_seconds, plan.drafter_batch, plan.window, plan.drafter_lr)
    dspark = DSparkDrafter(target, plan.dspark)
    dspark_report = train_dspark(dspark, source(), settings, plan.anchors_per_window, seed=seed)
    save_weights(dspark, plan.dspark.as_dict(), artifacts, "dspark")
    eagle = EagleDrafter(target, plan.eagle)
    eagle_report = train_eagle(eagle, source(), settings)
    save_weights(eagle, plan.eagle.as_dict(), artifacts, "eagle")
    training = {
        "target": asdict(target_report),
        "dspark": asdict(dspark_report),
        "eagle": asdict(eagle_report),
        "pool": {"windows": len(pool), "seconds": pool_seconds},
    }
    return Models(
        target, load_dspark(artifacts, target), load_eagle(artifacts, target), training, "scratch"
    )


def load_shipped(directory: Path) -> Models:
    """The weights ``nox -s train-target`` wrote (bf16 on disk, float32 in memory)."""
    if not (directory / "training.json").exists():
        raise FileNotFoundError(
            f"no shipped weights in {directory}: run `nox -s train-target`, or pass --from-scratch"
        )
    report = json.loads((directory / "training.json").read_text())
    target = load_target(directory)
    training = {
        **report["training"],
        "pool": {"windows": report["training"]["pool_windows"], "seconds": float("nan")},
        "shipped": {k: v for k, v in report.items() if k != "training"},
    }
    return Models(
        target, load_dspark(directory, target), load_eagle(directory, target), training, "shipped"
    )
