"""Train the shipped target and drafters once, reproducibly, and write them as bf16 safetensors.

    python -m specproof.e2e.ship [--out DIR] [--threads N] [--seed S]
                                 [--stages target dspark eagle]      (nox -s train-target)

Fixed step counts, seeds and data (the standard library's source and pydoc topics of this
Python), so the same command on the same torch build, thread count and CPU trains the same
tensors bit for bit (the safetensors header's metadata order may differ between runs). On
another host rounding differences grow over training: an earlier shipped target, retrained on
a second host of the same machine type, moved its held-out bits per byte by up to 0.002.
The target is saved in bf16 and reloaded before the drafters train, so the drafters learn the
target that decoding will use (bf16 values, float32 arithmetic). Both drafters train on the
same windows in the same order (same seed, batch size, window and step count), at the same
parameter budget. The stages may run as separate processes (both drafters at once on two
cores): each seeds its own initialisation.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from .data import DOMAIN_WEIGHTS, WindowSampler, load_corpora
from .drafters import DSparkConfig, DSparkDrafter, EagleConfig, EagleDrafter
from .models import load_target
from .target import Target, TargetConfig, parameter_count
from .train import (
    MixedSource,
    TrainSettings,
    bits_per_byte,
    generate_pool,
    train_dspark,
    train_eagle,
    train_target,
)
from .weights import save_weights

SHIPPED_DIR = Path(__file__).parent / "weights"


@dataclass(frozen=True)
class ShipPlan:
    target: TargetConfig
    dspark: DSparkConfig
    eagle: EagleConfig
    target_steps: int
    target_batch: int
    target_lr: float
    drafter_steps: int
    drafter_batch: int
    drafter_lr: float
    window: int
    anchors_per_window: int
    pool_size: int
    pool_prefix: int


SHIP = ShipPlan(
    # Deep and narrow: at batch 1 a step costs mostly per-layer fixed work (weight reads and
    # operator dispatch), so verifying 8 tokens costs little more than decoding 1.
    target=TargetConfig(
        d_model=256, n_layers=8, n_heads=4, d_ff=1024, max_len=192, feature_layers=(1, 4, 6)
    ),
    dspark=DSparkConfig(gamma=7, n_layers=2, n_heads=4, d_ff=416, rank=256),
    # d_ff chosen so the EAGLE-3 drafter has DSpark's parameter count within 0.1%.
    eagle=EagleConfig(gamma=7, n_heads=4, d_ff=1222),
    target_steps=120,
    target_batch=16,
    target_lr=3e-3,
    drafter_steps=800,
    drafter_batch=8,
    drafter_lr=2e-3,
    window=128,
    anchors_per_window=64,
    pool_size=2048,
    pool_prefix=16,
)


STAGES = ("target", "dspark", "eagle")


def _merge_report(out: Path, update: dict[str, Any]) -> dict[str, Any]:
    """Merge one stage's entries into ``out/training.json`` (stages may run as separate
    processes; each writes only its own keys)."""
    path = out / "training.json"
    report: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(report.get(key), dict):
            report[key] = {**report[key], **value}
        else:
            report[key] = value
    path.write_text(json.dumps(report, indent=1) + "\n")
    return report


def train_shipped(
    plan: ShipPlan, out: Path, seed: int, stages: Sequence[str] = STAGES, log: Any = print
) -> dict[str, Any]:
    """Run the given stages in order. A drafter stage reads the target an earlier target
    stage wrote to ``out``; every stage seeds its own initialisation, so running the stages as
    separate processes (e.g. both drafters at once on two cores) trains the same weights as
    one sequential run."""
    started = time.perf_counter()
    corpora = load_corpora()
    train_streams = {k: c.stream("train") for k, c in corpora.items()}
    update: dict[str, Any] = {
        "command": "nox -s train-target (python -m specproof.e2e.ship)",
        "seed": seed,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "platform": platform.platform(),
        "storage": "bfloat16 safetensors, loaded as float32",
        "plan": json.loads(json.dumps(asdict(plan), default=str)),
        "training": {},
        "parameters": {},
        "stage_seconds": {},
    }
    if "target" in stages:
        stage_started = time.perf_counter()
        torch.manual_seed(seed)
        target = Target(plan.target)
        log(f"target: {parameter_count(target):,} parameters")
        report = train_target(
            target,
            WindowSampler(train_streams, DOMAIN_WEIGHTS, seed),
            TrainSettings(
                0.0, plan.target_batch, plan.window, plan.target_lr, steps=plan.target_steps
            ),
            log,
        )
        save_weights(target, plan.target.as_dict(), out, "target", torch.bfloat16)
        update["training"]["target"] = asdict(report)
        update["parameters"]["target"] = parameter_count(target)
        target = load_target(out)
        held_out = {
            k: WindowSampler({k: c.stream("evaluation")}, {k: 1.0}, seed + 1)
            for k, c in corpora.items()
        }
        bits = {
            k: bits_per_byte(target, s, 4, plan.target_batch, plan.window)
            for k, s in held_out.items()
        }
        log(f"held-out bits per byte: {bits}")
        update["held_out_bits_per_byte"] = bits
        update["stage_seconds"]["target"] = time.perf_counter() - stage_started
    drafters = [s for s in stages if s != "target"]
    if drafters:
        stage_started = time.perf_counter()
        target = load_target(out)
        pool = generate_pool(
            target,
            WindowSampler(train_streams, DOMAIN_WEIGHTS, seed + 2),
            plan.pool_size,
            plan.pool_prefix,
            plan.window,
            (1.0, 0.0),
            seed,
        )
        update["training"]["pool_windows"] = len(pool)
        settings = TrainSettings(
            0.0, plan.drafter_batch, plan.window, plan.drafter_lr, steps=plan.drafter_steps
        )
        for offset, name in enumerate(STAGES[1:], start=4):
            if name not in drafters:
                continue
            # A fresh, identically seeded source: both drafters see the same windows.
            source = MixedSource(WindowSampler(train_streams, DOMAIN_WEIGHTS, seed + 3), pool, seed)
            torch.manual_seed(seed + offset)
            drafter: DSparkDrafter | EagleDrafter
            if name == "dspark":
                drafter = DSparkDrafter(target, plan.dspark)
                report = train_dspark(
                    drafter, source, settings, plan.anchors_per_window, log=log, seed=seed
                )
                config = plan.dspark.as_dict()
            else:
                drafter = EagleDrafter(target, plan.eagle)
                report = train_eagle(drafter, source, settings, log=log)
                config = plan.eagle.as_dict()
            save_weights(drafter, config, out, name, torch.bfloat16)
            update["training"][name] = asdict(report)
            update["parameters"][name] = parameter_count(drafter)
        update["stage_seconds"]["+".join(drafters)] = time.perf_counter() - stage_started
    merged = _merge_report(out, update)
    log(f"stages {list(stages)} done in {time.perf_counter() - started:.0f}s; weights in {out}")
    return merged


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=SHIPPED_DIR)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--stages",
        nargs="+",
        choices=STAGES,
        default=list(STAGES),
        help="run only these stages (drafter stages read the target already in --out)",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    return train_shipped(SHIP, args.out, args.seed, args.stages)


if __name__ == "__main__":
    main()
