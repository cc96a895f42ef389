"""Training that survives interruption: a fixed-step loop whose whole state (weights, AdamW
moments, the step count and every random generator it draws from) is saved at chosen steps,
so a rerun continues from the last saved step.

The learning-rate schedule depends only on the step and the run's final step count, and the
batches and anchors only on the saved generators, so on the same torch build, thread count and
CPU a resumed run computes the same tensors as an uninterrupted one, bit for bit
(tests/e2e/test_learning_curves.py checks it). A checkpoint is written to a temporary file and
renamed into place: an interrupted run loses at most the steps since its last checkpoint.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .loops import Log, StepFn, TrainSettings, learning_rate

CHECKPOINT_FORMAT = 1


def make_optimizer(module: nn.Module, settings: TrainSettings) -> torch.optim.AdamW:
    """AdamW as :func:`specproof.e2e.training.loops.run_loop` builds it."""
    params = [p for p in module.parameters() if p.requires_grad]
    return torch.optim.AdamW(
        params, lr=settings.lr, betas=(0.9, 0.95), weight_decay=settings.weight_decay
    )


def save_checkpoint(
    path: Path,
    step: int,
    module: nn.Module,
    optimizer: torch.optim.Optimizer,
    generators: Mapping[str, torch.Generator],
    extra: Mapping[str, Any] | None = None,
) -> None:
    """Everything a resumed run needs, written atomically (temporary file, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {
        "format": CHECKPOINT_FORMAT,
        "step": step,
        "module": module.state_dict(),
        "optimizer": optimizer.state_dict(),
        "generators": {name: g.get_state() for name, g in generators.items()},
        "extra": dict(extra or {}),
    }
    partial = path.with_name(path.name + ".partial")
    torch.save(state, partial)
    os.replace(partial, path)


def load_checkpoint(
    path: Path,
    module: nn.Module,
    optimizer: torch.optim.Optimizer,
    generators: Mapping[str, torch.Generator],
) -> tuple[int, dict[str, Any]]:
    """Restore a :func:`save_checkpoint` file into the given objects: (step, extra)."""
    state = torch.load(path, weights_only=True)
    if state.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path}: not a checkpoint of format {CHECKPOINT_FORMAT}")
    missing = sorted(set(generators) - set(state["generators"]))
    if missing:
        raise ValueError(f"{path}: no state for the generators {missing}")
    module.load_state_dict(state["module"])
    optimizer.load_state_dict(state["optimizer"])
    for name, generator in generators.items():
        generator.set_state(state["generators"][name])
    return int(state["step"]), dict(state["extra"])


def train_steps(
    name: str,
    module: nn.Module,
    optimizer: torch.optim.Optimizer,
    settings: TrainSettings,
    step_fn: StepFn,
    start: int,
    stop: int,
    log: Log,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float]:
    """Steps ``start`` .. ``stop - 1`` of a run of ``settings.steps`` steps (which sets the
    cosine schedule); logs progress every ``settings.log_every_seconds``. Returns the last
    step's statistics and ``seconds`` and ``steps_per_second`` of this stretch."""
    if settings.steps is None:
        raise ValueError("a resumable run needs a fixed step count (settings.steps)")
    params = [p for group in optimizer.param_groups for p in group["params"]]
    began = clock()
    last_log = began
    stats: dict[str, float] = {}
    module.train()
    for step in range(start, stop):
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(settings, step, 0.0)
        loss, stats = step_fn()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        now = clock()
        if now - last_log >= settings.log_every_seconds:
            last_log = now
            done = step + 1 - start
            rate = done / (now - began)
            shown = " ".join(f"{k}={v:.3f}" for k, v in stats.items())
            left = (stop - step - 1) / rate if rate > 0 else float("nan")
            log(f"[{name}] step {step + 1}/{stop} {rate:.2f} steps/s, ~{left:.0f}s left {shown}")
    module.eval()
    seconds = clock() - began
    steps = stop - start
    return {**stats, "seconds": seconds, "steps_per_second": steps / seconds if seconds else 0.0}
