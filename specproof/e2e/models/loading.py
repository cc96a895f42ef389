"""Loading the three models of a run from the files :mod:`specproof.e2e.training.ship` writes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .dspark import DSparkConfig, DSparkDrafter
from .eagle import EagleConfig, EagleDrafter
from .target import Target, TargetConfig
from .weight_files import WeightsError, config_from, load_into, load_weights, weight_path

SHIPPED_DIR = Path(__file__).parents[1] / "weights"


def load_target(directory: Path) -> Target:
    """The target in ``directory``; :class:`WeightsError` names the file and the problem."""
    tensors, config = load_weights(directory, "target")
    path = weight_path(directory, "target")
    target = Target(config_from(TargetConfig.from_dict, config, path))
    load_into(target, tensors, path)
    return target.eval()


def load_dspark(directory: Path, target: Target) -> DSparkDrafter:
    tensors, config = load_weights(directory, "dspark")
    path = weight_path(directory, "dspark")
    drafter = DSparkDrafter(target, config_from(DSparkConfig.from_dict, config, path))
    load_into(drafter, tensors, path)
    return drafter.eval()


def load_eagle(directory: Path, target: Target) -> EagleDrafter:
    tensors, config = load_weights(directory, "eagle")
    path = weight_path(directory, "eagle")
    drafter = EagleDrafter(target, config_from(EagleConfig.from_dict, config, path))
    load_into(drafter, tensors, path)
    return drafter.eval()


@dataclass
class Models:
    target: Target
    dspark: DSparkDrafter
    eagle: EagleDrafter
    training: dict[str, Any]
    source: str


def load_models(directory: Path, source: str | None = None) -> Models:
    """The weights :func:`specproof.e2e.training.ship.train_models` wrote (bf16 on disk, float32 in
    memory). ``source`` labels them; by default "shipped" for the shipped folder, else the
    folder's path."""
    if source is None:
        shipped = directory.resolve() == SHIPPED_DIR.resolve()
        source = "shipped" if shipped else str(directory)
    if not (directory / "training.json").exists():
        raise WeightsError(
            f"no training.json in {directory}: train weights there with "
            f"`python -m specproof.runners.e2e.train_target --out {directory}` (`nox -s "
            f"train-target` for "
            "the shipped folder)"
        )
    report = json.loads((directory / "training.json").read_text())
    stages = {"target": "target", "pool": "pool_windows", "dspark": "dspark", "eagle": "eagle"}
    missing = [stage for stage, key in stages.items() if key not in report.get("training", {})]
    if missing:
        raise WeightsError(
            f"{directory / 'training.json'} records no {' / '.join(missing)} stage: run "
            f"`python -m specproof.runners.e2e.train_target --out {directory} --stages "
            f"{' '.join(missing)}` (or copy the whole weights folder before retraining some stages)"
        )
    target = load_target(directory)
    training = {
        **report["training"],
        "pool": {
            "windows": report["training"]["pool_windows"],
            "seconds": report.get("stage_seconds", {}).get("pool", float("nan")),
        },
        "report": {k: v for k, v in report.items() if k != "training"},
    }
    return Models(
        target, load_dspark(directory, target), load_eagle(directory, target), training, source
    )
