"""Train the target and both drafters, in stages, and write them as bf16 safetensors: the one
training path of the shipped models (fixed steps) and of ``run --from-scratch`` (a time budget).

Its command: ``python -m specproof.runners.e2e.train_target``
(:mod:`specproof.runners.e2e.train_target`).

With fixed step counts, seeds and data (the standard library's source and pydoc topics of this
Python, and the generated math problems), the same command on the same torch build, thread
counts and CPU trains the same tensors bit for bit (the safetensors header's metadata order may
differ between runs). On another host rounding differences grow over training: an earlier
shipped target, retrained on a second host of the same machine type, moved its held-out bits
per byte by up to 0.002.

Stages: ``target`` (saved in bf16 and reloaded, so everything after it sees the target decoding
will use), ``pool`` (windows the target writes itself, half sampled and half greedy, saved to
``pool.pt``), then ``dspark`` and ``eagle`` on the same windows in the same order at the same
parameter budget. Each stage seeds its own initialisation and reads what earlier stages wrote to
``--out``, so stages run as separate processes train the same weights as one sequential run. By
default the two drafters train at once, one thread each, in two child processes.
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from ..data.corpora import DOMAIN_WEIGHTS, Corpus, WindowSampler, load_corpora
from ..evaluation.prediction import held_out_statistics
from ..models.dspark import DSparkDrafter
from ..models.eagle import EagleDrafter
from ..models.loading import load_target
from ..models.target import Target, parameter_count
from ..models.weight_files import save_weights
from ..plans import Plan
from .loops import (
    Log,
    MixedSource,
    TrainSettings,
    generate_pool,
    train_dspark,
    train_eagle,
    train_target,
)

STAGES = ("target", "pool", "dspark", "eagle")
DRAFTERS = ("dspark", "eagle")
POOL_FILE = "pool.pt"
COMMAND = "nox -s train-target (python -m specproof.runners.e2e.train_target)"


def merge_report(out: Path, update: dict[str, Any]) -> dict[str, Any]:
    """Merge one stage's entries into ``out/training.json`` under a file lock (stages may run
    as concurrent processes; each writes only its own keys)."""
    out.mkdir(parents=True, exist_ok=True)
    lock = os.open(out, os.O_RDONLY)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = out / "training.json"
        report: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
        for key, value in update.items():
            if isinstance(value, dict) and isinstance(report.get(key), dict):
                report[key] = {**report[key], **value}
            else:
                report[key] = value
        path.write_text(json.dumps(report, indent=1) + "\n")
    finally:
        os.close(lock)
    return report


def _settings(plan: Plan, stage: str, budget_seconds: float | None) -> TrainSettings:
    """Fixed steps from the plan, or the stage's share of a wall-clock budget."""
    if stage == "target":
        batch, lr, steps, share = (
            plan.target_batch,
            plan.target_lr,
            plan.target_steps,
            plan.target_share,
        )
    else:
        batch, lr, steps, share = (
            plan.drafter_batch,
            plan.drafter_lr,
            plan.drafter_steps,
            plan.drafter_share,
        )
    if budget_seconds is not None:
        return TrainSettings(budget_seconds * share, batch, plan.window, lr)
    if steps is None:
        raise ValueError(f"the plan gives no step count for {stage} and no budget was given")
    return TrainSettings(0.0, batch, plan.window, lr, steps=steps)


def _train_stream(corpora: dict[str, Corpus], seed: int) -> WindowSampler:
    return WindowSampler({k: c.stream("train") for k, c in corpora.items()}, DOMAIN_WEIGHTS, seed)


def _target_stage(
    plan: Plan, out: Path, corpora: dict[str, Corpus], seed: int, budget: float | None, log: Log
) -> dict[str, Any]:
    torch.manual_seed(seed)
    target = Target(plan.target)
    log(f"target: {parameter_count(target):,} parameters")
    report = train_target(
        target, _train_stream(corpora, seed), _settings(plan, "target", budget), log
    )
    save_weights(target, plan.target.as_dict(), out, "target", torch.bfloat16)
    target = load_target(out)
    statistics = held_out_statistics(target, corpora, plan.target_batch, plan.window, seed)
    log(f"held-out statistics: {statistics}")
    return {
        "training": {"target": asdict(report)},
        "parameters": {"target": parameter_count(target)},
        "held_out_statistics": statistics,
    }


def _pool_stage(
    plan: Plan, out: Path, corpora: dict[str, Corpus], seed: int, log: Log
) -> dict[str, Any]:
    pool = generate_pool(
        load_target(out),
        _train_stream(corpora, seed + 2),
        plan.pool_size,
        plan.pool_prefix,
        plan.window,
        (1.0, 0.0),
        seed,
    )
    torch.save(pool.to(torch.uint8), out / POOL_FILE)
    log(f"pool: {len(pool)} target-written windows")
    return {"training": {"pool_windows": len(pool)}}


def _drafter_stage(
    name: str,
    plan: Plan,
    out: Path,
    corpora: dict[str, Corpus],
    seed: int,
    budget: float | None,
    log: Log,
) -> dict[str, Any]:
    target = load_target(out)
    pool = torch.load(out / POOL_FILE, weights_only=True).to(torch.int64)
    # A fresh, identically seeded source: both drafters see the same windows in the same order.
    source = MixedSource(_train_stream(corpora, seed + 3), pool, seed)
    settings = _settings(plan, name, budget)
    torch.manual_seed(seed + (4 if name == "dspark" else 5))
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
    return {"training": {name: asdict(report)}, "parameters": {name: parameter_count(drafter)}}


def train_models(
    plan: Plan,
    out: Path,
    seed: int,
    stages: Sequence[str] = STAGES,
    budget_seconds: float | None = None,
    log: Log = print,
) -> dict[str, Any]:
    """Run ``stages`` in order in this process, each merging its entries into
    ``out/training.json``; returns the merged report. With ``budget_seconds`` each training
    stage runs for its share of it instead of the plan's step counts."""
    unknown = sorted(set(stages) - set(STAGES))
    if unknown:
        raise ValueError(f"unknown stages {unknown}; the stages are {list(STAGES)}")
    corpora = load_corpora()
    report: dict[str, Any] = {}
    for stage in [s for s in STAGES if s in stages]:
        started = time.perf_counter()
        if stage == "target":
            update = _target_stage(plan, out, corpora, seed, budget_seconds, log)
        elif stage == "pool":
            update = _pool_stage(plan, out, corpora, seed, log)
        else:
            update = _drafter_stage(stage, plan, out, corpora, seed, budget_seconds, log)
        update.update(
            command=COMMAND,
            seed=seed,
            torch=torch.__version__,
            platform=platform.platform(),
            storage="bfloat16 safetensors, loaded as float32",
            plan=json.loads(json.dumps(asdict(plan), default=str)),
            stage_seconds={stage: time.perf_counter() - started},
            stage_threads={stage: torch.get_num_threads()},
        )
        report = merge_report(out, update)
        log(f"stage {stage} done in {time.perf_counter() - started:.0f}s")
    return report


def saved_pool(out: Path) -> torch.Tensor:
    """The pool the pool stage saved in ``out``; ValueError names the file and the problem."""
    path = out / POOL_FILE
    try:
        pool = torch.load(path, weights_only=True)
    except FileNotFoundError:
        raise ValueError(f"{path} does not exist (run the pool stage first)") from None
    except Exception as error:  # a truncated or foreign file: torch's errors vary by kind
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise ValueError(f"{path} is not a saved pool ({type(error).__name__}: {first})") from None
    if not isinstance(pool, torch.Tensor) or pool.dim() != 2 or pool.is_floating_point():
        raise ValueError(f"{path} does not hold a 2-D tensor of token windows")
    return pool
