"""Train the shipped target and drafters once, reproducibly, and write them as bf16 safetensors.

    python -m specproof.e2e.ship [--out DIR] [--threads N] [--seed S]   (nox -s train-target)

Fixed step counts, seeds and data (the standard library's source and pydoc topics of this
Python), so the same command on the same torch build, thread count and CPU trains the same
models bit for bit. On another host, rounding differences grow over training: the shipped
models, retrained on a second host of the same machine type, gave a target whose held-out
bits per byte moved by up to 0.002.
The target is saved in bf16 and reloaded before the drafters train, so the drafters learn the
target that decoding will use (bf16 values, float32 arithmetic). Both drafters train on the
same windows in the same order (same seed, batch size, window and step count), at the same
parameter budget.
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

from .data import WindowSampler, load_corpora
from .drafters import DSparkConfig, DSparkDrafter, EagleConfig, EagleDrafter
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
from .weights import load_weights, save_weights

SHIPPED_DIR = Path(__file__).parent / "weights"
DOMAIN_WEIGHTS = {"code": 0.7, "prose": 0.3}


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
        d_model=256, n_layers=8, n_heads=4, d_ff=1024, max_len=192, feature_layers=(1, 4, 7)
    ),
    dspark=DSparkConfig(gamma=7, n_layers=1, n_heads=4, d_ff=1024, rank=32),
    # d_ff chosen so the EAGLE-style drafter has DSpark's parameter count within 0.1%.
    eagle=EagleConfig(gamma=7, n_heads=4, d_ff=1440),
    target_steps=120,
    target_batch=16,
    target_lr=3e-3,
    drafter_steps=1600,
    drafter_batch=8,
    drafter_lr=2e-3,
    window=128,
    anchors_per_window=16,
    pool_size=2048,
    pool_prefix=16,
)


def load_shipped_target(directory: Path = SHIPPED_DIR) -> Target:
    tensors, config = load_weights(directory, "target")
    target = Target(TargetConfig.from_dict(config))
    target.load_state_dict(tensors)
    return target.eval()


def train_shipped(plan: ShipPlan, out: Path, seed: int, log: Any = print) -> dict[str, Any]:
    started = time.perf_counter()
    torch.manual_seed(seed)
    corpora = load_corpora()
    train_streams = {k: c.stream("train") for k, c in corpora.items()}
    target = Target(plan.target)
    log(f"target: {parameter_count(target):,} parameters")
    target_report = train_target(
        target,
        WindowSampler(train_streams, DOMAIN_WEIGHTS, seed),
        TrainSettings(0.0, plan.target_batch, plan.window, plan.target_lr, steps=plan.target_steps),
        log,
    )
    save_weights(target, plan.target.as_dict(), out, "target", torch.bfloat16)
    target = load_shipped_target(out)
    held_out = {
        k: WindowSampler({k: c.stream("evaluation")}, {k: 1.0}, seed + 1)
        for k, c in corpora.items()
    }
    bits = {
        k: bits_per_byte(target, s, 4, plan.target_batch, plan.window) for k, s in held_out.items()
    }
    log(f"held-out bits per byte: {bits}")
    pool = generate_pool(
        target,
        WindowSampler(train_streams, DOMAIN_WEIGHTS, seed + 2),
        plan.pool_size,
        plan.pool_prefix,
        plan.window,
        (1.0, 0.0),
        seed,
    )

    def source() -> MixedSource:
        """A fresh, identically seeded source: both drafters see the same windows."""
        return MixedSource(WindowSampler(train_streams, DOMAIN_WEIGHTS, seed + 3), pool, seed)

    settings = TrainSettings(
        0.0, plan.drafter_batch, plan.window, plan.drafter_lr, steps=plan.drafter_steps
    )
    dspark = DSparkDrafter(target, plan.dspark)
    dspark_report = train_dspark(
        dspark, source(), settings, plan.anchors_per_window, log=log, seed=seed
    )
    save_weights(dspark, plan.dspark.as_dict(), out, "dspark", torch.bfloat16)
    eagle = EagleDrafter(target, plan.eagle)
    eagle_report = train_eagle(eagle, source(), settings, log=log)
    save_weights(eagle, plan.eagle.as_dict(), out, "eagle", torch.bfloat16)
    report = {
        "command": "nox -s train-target (python -m specproof.e2e.ship)",
        "seed": seed,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "platform": platform.platform(),
        "storage": "bfloat16 safetensors, loaded as float32",
        "plan": json.loads(json.dumps(asdict(plan), default=str)),
        "parameters": {
            "target": parameter_count(target),
            "dspark": parameter_count(dspark),
            "eagle": parameter_count(eagle),
        },
        "training": {
            "target": asdict(target_report),
            "dspark": asdict(dspark_report),
            "eagle": asdict(eagle_report),
            "pool_windows": len(pool),
        },
        "held_out_bits_per_byte": bits,
        "seconds": time.perf_counter() - started,
    }
    (out / "training.json").write_text(json.dumps(report, indent=1) + "\n")
    log(f"done in {report['seconds']:.0f}s; weights in {out}")
    return report


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=SHIPPED_DIR)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    return train_shipped(SHIP, args.out, args.seed)


if __name__ == "__main__":
    main()
